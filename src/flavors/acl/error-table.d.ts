import type { ErrorTable } from '../common/error-table.js';
/**
 * aclError for each core error kind. Core's failures happen below ACL's own
 * argument checks (null pointers, zero sizes, reserved flags: those answer
 * ACL_ERROR_INVALID_PARAM in the flavour), so they come back as the runtime
 * codes that ACL_GET_ERRCODE_RTS passes up. CANN documents no code for most
 * of these cases; the choices are the closest runtime code by meaning.
 */
export declare const ACL_ERROR_TABLE: ErrorTable;
/** The code a call answers when vmmkit itself failed (a bug, reported). */
export declare const ACL_UNKNOWN_ERROR = 500000;
