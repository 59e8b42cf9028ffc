import type { ErrorTable } from '../common/error-table.js';
import * as C from './constants.js';

/**
 * CUresult for each core error kind. Where the documentation is silent the
 * H200 decided (conformance/results/h200-driver.json).
 */
export const CUDA_ERROR_TABLE: ErrorTable = {
  'invalid-value': C.CUDA_ERROR_INVALID_VALUE,
  'invalid-device': C.CUDA_ERROR_INVALID_DEVICE,
  'invalid-handle': C.CUDA_ERROR_INVALID_VALUE,
  'out-of-memory': C.CUDA_ERROR_OUT_OF_MEMORY,
  'not-supported': C.CUDA_ERROR_NOT_SUPPORTED,
  'not-reserved': C.CUDA_ERROR_INVALID_VALUE,
  'not-mapped': C.CUDA_ERROR_INVALID_VALUE,
  overlap: C.CUDA_ERROR_INVALID_VALUE,
  'in-use': C.CUDA_ERROR_INVALID_VALUE,
  'access-denied': C.CUDA_ERROR_INVALID_VALUE,
  'permission-denied': C.CUDA_ERROR_NOT_PERMITTED,
  'invalid-fd': C.CUDA_ERROR_INVALID_VALUE,
  'invalid-stream': C.CUDA_ERROR_INVALID_HANDLE,
  'not-initialized': C.CUDA_ERROR_NOT_INITIALIZED,
  'invalid-context': C.CUDA_ERROR_INVALID_CONTEXT,
  'already-exported': C.CUDA_ERROR_INVALID_VALUE,
};
