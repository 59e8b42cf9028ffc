import type { ErrorTable } from '../common/error-table.js';
import { vendorErrors } from '../common/process.js';
import { CudaCodes } from './codes.js';
import * as C from './constants.js';

/**
 * CUresult for each core error kind: the code the H200 gave for that kind of
 * failure (conformance/results/h200-driver.json; case names in comments).
 * Kinds the CUDA calls never meet keep the closest documented code.
 */
export const CUDA_ERROR_TABLE: ErrorTable = {
  'invalid-value': C.CUDA_ERROR_INVALID_VALUE,
  'invalid-device': C.CUDA_ERROR_INVALID_DEVICE, // create.deviceIdOutOfRange, getAccess.otherDevice
  // The driver crashes on bogus handles (release.bogusHandles); the simulator answers instead.
  'invalid-handle': C.CUDA_ERROR_INVALID_VALUE, // release.twice
  'out-of-memory': C.CUDA_ERROR_OUT_OF_MEMORY, // create.outOfMemory2x, reserve.enormous2pow62
  'not-supported': C.CUDA_ERROR_NOT_SUPPORTED, // map.sizeSmallerThanHandle
  'not-reserved': C.CUDA_ERROR_INVALID_VALUE, // map.outsideAnyReservation, addressFree.neverReserved
  'not-mapped': C.CUDA_ERROR_INVALID_VALUE, // copy.reservedUnmapped.HtoD, retain.reservedUnmapped
  overlap: C.CUDA_ERROR_INVALID_VALUE, // map.overlapSameRange, map.overlapPartial
  'in-use': C.CUDA_ERROR_INVALID_VALUE, // addressFree.withMappingInside
  'access-denied': C.CUDA_ERROR_INVALID_VALUE, // copy.noAccess.*, copy.readOnly.HtoD: refused at the call
  // A queued copy whose access went before it ran (h200-queued-work-probe.json: readOnly, unmap);
  // every later call of the device's contexts answers it too (Note [Faulted devices]).
  'device-fault': C.CUDA_ERROR_LAUNCH_FAILED,
  'permission-denied': C.CUDA_ERROR_NOT_PERMITTED,
  'invalid-fd': C.CUDA_ERROR_UNKNOWN, // import.bogusFd, import.afterFdClosed
  'invalid-stream': C.CUDA_ERROR_INVALID_HANDLE,
  // Core says so only of a disposed Runtime: the driver has shut down (Note [CUDA after dispose]).
  'invalid-event': C.CUDA_ERROR_INVALID_HANDLE,
  'not-initialized': C.CUDA_ERROR_DEINITIALIZED,
  'invalid-context': C.CUDA_ERROR_INVALID_CONTEXT,
  'already-exported': C.CUDA_ERROR_INVALID_VALUE,
  // Stream capture (Note [Stream capture] in src/core/graphs.ts): cuda.h's codes for each.
  'capture-state': C.CUDA_ERROR_ILLEGAL_STATE,
  'capture-invalidated': C.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
  'capture-unjoined': C.CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
  'capture-unmatched': C.CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
  'capture-merge': C.CUDA_ERROR_STREAM_CAPTURE_MERGE,
  'capture-isolation': C.CUDA_ERROR_STREAM_CAPTURE_ISOLATION, // capture.event.waitInCapture
};

/**
 * The CUDA front end's errors: CUresult codes, this table, the driver's own
 * codes as they are (Note [Driver codes]), and CudaCodes telling the flavour
 * of each device fault (Note [Faulted devices]).
 */
export const CUDA_ERRORS = vendorErrors(
  'CUDA',
  CUDA_ERROR_TABLE,
  C.CUDA_SUCCESS,
  C.CUDA_ERROR_UNKNOWN,
  CudaCodes,
);
