import type { ErrorTable } from '../common/error-table.js';
import { vendorErrors } from '../common/process.js';
import { AclCodes } from './codes.js';
import * as C from './constants.js';

/**
 * aclError for each core error kind. Core's failures happen below ACL's own
 * argument checks (null pointers, zero sizes, reserved flags: those answer
 * ACL_ERROR_INVALID_PARAM in the flavor), so they come back as the runtime
 * codes that ACL_GET_ERRCODE_RTS passes up. CANN documents no code for most
 * of these cases; the choices are the closest runtime code by meaning.
 */
export const ACL_ERROR_TABLE: ErrorTable = {
  'invalid-value': C.ACL_ERROR_RT_PARAM_INVALID,
  'invalid-device': C.ACL_ERROR_RT_INVALID_DEVICEID,
  'invalid-handle': C.ACL_ERROR_RT_INVALID_HANDLE,
  'out-of-memory': C.ACL_ERROR_RT_MEMORY_ALLOCATION,
  'not-supported': C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
  'not-reserved': C.ACL_ERROR_RT_PARAM_INVALID,
  'not-mapped': C.ACL_ERROR_RT_PARAM_INVALID,
  overlap: C.ACL_ERROR_RT_PARAM_INVALID,
  'in-use': C.ACL_ERROR_RT_PARAM_INVALID,
  'access-denied': C.ACL_ERROR_RT_NO_PERMISSION,
  // Queued work's fault: the code an access refused at the call gets, as before (CANN's own is not modelled).
  'device-fault': C.ACL_ERROR_RT_NO_PERMISSION,
  'permission-denied': C.ACL_ERROR_RT_NO_PERMISSION,
  'invalid-fd': C.ACL_ERROR_RT_PARAM_INVALID,
  'invalid-stream': C.ACL_ERROR_RT_PARAM_INVALID,
  'invalid-event': C.ACL_ERROR_RT_PARAM_INVALID,
  'not-initialized': C.ACL_ERROR_UNINITIALIZE,
  'invalid-context': C.ACL_ERROR_RT_CONTEXT_NULL,
  'already-exported': C.ACL_ERROR_RT_PARAM_INVALID,
  // Stream capture: the ACL flavor has no capture calls, so these never reach it.
  'capture-state': C.ACL_ERROR_RT_PARAM_INVALID,
  'capture-invalidated': C.ACL_ERROR_RT_PARAM_INVALID,
  'capture-unjoined': C.ACL_ERROR_RT_PARAM_INVALID,
  'capture-unmatched': C.ACL_ERROR_RT_PARAM_INVALID,
  'capture-merge': C.ACL_ERROR_RT_PARAM_INVALID,
  'capture-isolation': C.ACL_ERROR_RT_PARAM_INVALID,
};

/** The code a call answers when vmmkit itself failed (a bug, reported). */
export const ACL_UNKNOWN_ERROR = C.ACL_ERROR_INTERNAL_ERROR;

/** The ACL front end's errors: aclError codes, this table, and AclCodes's messages for aclGetRecentErrMsg. */
export const ACL_ERRORS = vendorErrors('ACL', ACL_ERROR_TABLE, C.ACL_SUCCESS, ACL_UNKNOWN_ERROR, AclCodes);
