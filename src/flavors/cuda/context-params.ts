/** cuCtxCreate_v4's CUctxCreateParams, read once and checked (Note [Context creation parameters]). */
export type { CUctxCigParam, CUctxCreateParams, CUexecAffinityParam } from '../../c-api/cuda-structs.js';

import { isNull, toInt } from '../common/args.js';
import { readFields, readList } from '../common/untrusted.js';
import * as C from './constants.js';

/**
 * Note [Context creation parameters]
 * CUDA 13.0's cuda.h declares cuCtxCreate as cuCtxCreate_v4(pctx,
 * ctxCreateParams, flags, dev); earlier headers as cuCtxCreate_v2(pctx,
 * flags, dev), which libcuda still exports. The CUDA flavor takes both under
 * cuCtxCreate (four arguments are the v4 form, three the v2 form) and under
 * their explicit names. The driver documentation's rules for the struct:
 * NULL ctxCreateParams, or both execAffinityParams and cigParams NULL, is a
 * regular context; numExecAffinityParams must be 0 when execAffinityParams
 * is NULL; the two are mutually exclusive (setting both is undefined
 * behaviour in the driver: CUDA_ERROR_INVALID_VALUE here); execution
 * affinity (CU_EXEC_AFFINITY_TYPE_SM_COUNT, a later entry of a type
 * overriding an earlier one) is supported only under Volta+ MPS, which no
 * simulated machine runs: CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, the code
 * cuCtxGetExecAffinity documents; an entry of another type, or a count that
 * is negative or past the list, is CUDA_ERROR_INVALID_VALUE ("invalid
 * parameter"); a context in CIG mode needs a D3D12 or Vulkan client
 * (CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED / VULKAN_CIG_SUPPORTED), which a
 * Linux datacenter part lacks: CUDA_ERROR_NOT_SUPPORTED, as documented when
 * CIG is not supported (an unknown sharedDataType first: INVALID_VALUE).
 * Which of these the H200 answers, and in what order against a bad device,
 * the ctx.createV4* cases record.
 */
export function checkContextParams(params: unknown): number {
  if (isNull(params)) return C.CUDA_SUCCESS;
  const f = readFields(params, ['execAffinityParams', 'numExecAffinityParams', 'cigParams'] as const);
  if (f === undefined) return C.CUDA_ERROR_INVALID_VALUE;
  const count = f.numExecAffinityParams === undefined ? 0 : toInt(f.numExecAffinityParams);
  if (!(count >= 0)) return C.CUDA_ERROR_INVALID_VALUE;
  const affinity = !isNull(f.execAffinityParams);
  const cig = !isNull(f.cigParams);
  if (!affinity && count !== 0) return C.CUDA_ERROR_INVALID_VALUE;
  if (affinity && cig) return C.CUDA_ERROR_INVALID_VALUE;
  if (cig) {
    const c = readFields(f.cigParams, ['sharedDataType'] as const);
    const type = c === undefined ? Number.NaN : toInt(c.sharedDataType);
    if (type !== C.CIG_DATA_TYPE_D3D12_COMMAND_QUEUE && type !== C.CIG_DATA_TYPE_NV_BLOB)
      return C.CUDA_ERROR_INVALID_VALUE;
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }
  if (!affinity || count === 0) return C.CUDA_SUCCESS;
  const entries = readList(f.execAffinityParams, count);
  if (entries === 'not-array' || entries.length < count) return C.CUDA_ERROR_INVALID_VALUE;
  for (const e of entries) {
    const entry = readFields(e, ['type'] as const);
    if (entry === undefined || toInt(entry.type) !== C.CU_EXEC_AFFINITY_TYPE_SM_COUNT)
      return C.CUDA_ERROR_INVALID_VALUE;
  }
  return C.CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
}
