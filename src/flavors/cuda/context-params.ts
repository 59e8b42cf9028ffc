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
 * their explicit names. The struct's rules, as the H200 answered them (the
 * ctx.createV4* cases, driver 580): NULL ctxCreateParams, or both
 * execAffinityParams and cigParams NULL, is a regular context, and so is a
 * count of 0 or below with no list (a positive count without one is
 * CUDA_ERROR_INVALID_VALUE); both set is CUDA_ERROR_NOT_SUPPORTED (the
 * documentation calls it undefined); a list of one or more entries is
 * CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY whatever their types, since execution
 * affinity needs Volta+ MPS, which neither the H200 run nor any simulated
 * machine has (an empty list with count 0 is a regular context); CIG mode
 * with a D3D12 command queue is CUDA_ERROR_NOT_SUPPORTED (a Linux
 * datacenter part has no D3D12 client), with an NV blob whose data is NULL
 * CUDA_ERROR_INVALID_VALUE (an NV blob with data is unrecorded: taken as the
 * D3D12 queue is), and with another data type CUDA_ERROR_INVALID_VALUE.
 */
export function checkContextParams(params: unknown): number {
  if (isNull(params)) return C.CUDA_SUCCESS;
  const f = readFields(params, ['execAffinityParams', 'numExecAffinityParams', 'cigParams'] as const);
  if (f === undefined) return C.CUDA_ERROR_INVALID_VALUE;
  const count = f.numExecAffinityParams === undefined ? 0 : toInt(f.numExecAffinityParams);
  if (Number.isNaN(count)) return C.CUDA_ERROR_INVALID_VALUE;
  const affinity = !isNull(f.execAffinityParams);
  const cig = !isNull(f.cigParams);
  if (!affinity && count > 0) return C.CUDA_ERROR_INVALID_VALUE;
  if (affinity && cig) return C.CUDA_ERROR_NOT_SUPPORTED;
  if (cig) {
    const c = readFields(f.cigParams, ['sharedDataType', 'sharedData'] as const);
    const type = c === undefined ? Number.NaN : toInt(c.sharedDataType);
    if (type === C.CIG_DATA_TYPE_D3D12_COMMAND_QUEUE) return C.CUDA_ERROR_NOT_SUPPORTED;
    if (type === C.CIG_DATA_TYPE_NV_BLOB && c !== undefined && !isNull(c.sharedData))
      return C.CUDA_ERROR_NOT_SUPPORTED;
    return C.CUDA_ERROR_INVALID_VALUE;
  }
  if (!affinity || count <= 0) return C.CUDA_SUCCESS;
  const entries = readList(f.execAffinityParams, count);
  if (entries === 'not-array' || entries.length < count) return C.CUDA_ERROR_INVALID_VALUE;
  return C.CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
}
