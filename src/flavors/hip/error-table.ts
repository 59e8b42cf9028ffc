import type { ErrorTable } from '../common/error-table.js';
import { vendorErrors } from '../common/process.js';
import * as C from './constants.js';

/**
 * hipError_t for each core error kind, as ROCm's hip_vm.cpp answers: it
 * reports almost every failed VMM step (bad handle, failed map, failed
 * import or export) as hipErrorInvalidValue.
 *
 * Note [HIP in-use is Unknown]: the only "still in use" failure HIP reports
 * is hipMemAddressFree over a range with mappings inside: virtualFree fails
 * and the call answers hipErrorUnknown (999).
 *
 * Note [HIP access faults]: ROCm does not check page permissions before a
 * copy; the GPU faults and the error surfaces as hipErrorIllegalAddress.
 * The simulator checks at the call, and answers with that code. ROCm's docs
 * and its code disagree here: the return lists of the calls that reach
 * memory (hipMemcpy: hipSuccess, hipErrorInvalidValue, hipErrorUnknown;
 * hipMemcpyHtoD and the other directions, hipMemset, hipMemsetD32,
 * hipMemcpyPeer and their Async forms, the synchronisations that run their
 * work) do not name hipErrorIllegalAddress, but clr answers it: rocdevice.cpp
 * turns an HSA memory fault or aperture violation into CL_INVALID_MEM_OBJECT
 * as the device's error, and every API entry after that (HIP_INIT_API)
 * returns ConvertCLErrorIntoHIPError of it, which is hipErrorIllegalAddress
 * (hip_internal.hpp). Two differences remain: clr aborts the process on the
 * fault unless HIP_SKIP_ABORT_ON_GPU_ERROR is set, and its error is the
 * device's for good (every later call answers it), where vmmkit refuses the
 * one call and changes nothing.
 */
export const HIP_ERROR_TABLE: ErrorTable = {
  'invalid-value': C.hipErrorInvalidValue,
  'invalid-device': C.hipErrorInvalidDevice,
  'invalid-handle': C.hipErrorInvalidValue,
  'out-of-memory': C.hipErrorOutOfMemory,
  'not-supported': C.hipErrorNotSupported,
  'not-reserved': C.hipErrorInvalidValue,
  'not-mapped': C.hipErrorInvalidValue,
  overlap: C.hipErrorInvalidValue,
  'in-use': C.hipErrorUnknown,
  'access-denied': C.hipErrorIllegalAddress,
  // The same GPU memory fault, met by queued work when it ran (Note [HIP access faults]).
  'device-fault': C.hipErrorIllegalAddress,
  'permission-denied': C.hipErrorInvalidValue,
  'invalid-fd': C.hipErrorInvalidValue,
  'invalid-stream': C.hipErrorInvalidHandle,
  // Core says so only of a disposed Runtime (Note [HIP after dispose]).
  'invalid-event': C.hipErrorInvalidHandle,
  'not-initialized': C.hipErrorDeinitialized,
  'invalid-context': C.hipErrorInvalidContext,
  'already-exported': C.hipErrorInvalidValue,
  // Stream capture (Note [Stream capture] in src/core/graphs.ts): hip_runtime_api.h's codes for each.
  'capture-state': C.hipErrorIllegalState,
  'capture-invalidated': C.hipErrorStreamCaptureInvalidated,
  'capture-unjoined': C.hipErrorStreamCaptureUnjoined,
  'capture-unmatched': C.hipErrorStreamCaptureUnmatched,
  'capture-merge': C.hipErrorStreamCaptureMerge,
  'capture-isolation': C.hipErrorStreamCaptureIsolation,
};

/** The HIP front end's errors: hipError_t codes and this table. */
export const HIP_ERRORS = vendorErrors('HIP', HIP_ERROR_TABLE, C.hipSuccess, C.hipErrorUnknown);
