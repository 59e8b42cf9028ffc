/**
 * cuCtxCreate in both headers' forms (Note [Context creation parameters]):
 * CUDA 13.0's (pctx, ctxCreateParams, flags, dev), the three-argument form of
 * earlier headers, and the explicit _v2 / _v4 names, with the parameter
 * struct's rules.
 */
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/cuda/constants.js';
import { cudaWithContext } from './helpers.js';

const box = <T>(value: T) => ({ value });

function cuda() {
  const cu = cudaWithContext();
  const current = () => {
    const b = box(0n);
    cu.cuCtxGetCurrent(b);
    return b.value;
  };
  return { cu, primary: current(), current };
}

const smCount = (val: number) => ({ type: C.CU_EXEC_AFFINITY_TYPE_SM_COUNT, param: { smCount: { val } } });

describe('cuCtxCreate, both forms', () => {
  it('the CUDA 13 samples’ call (a zeroed CUctxCreateParams), NULL params, the three-argument form and the explicit names make a context', () => {
    const { cu, primary, current } = cuda();
    const made: bigint[] = [];
    for (const create of [
      (b: { value: bigint }) => cu.cuCtxCreate(b, {}, 0, 0),
      (b: { value: bigint }) => cu.cuCtxCreate(b, null, C.CU_CTX_SCHED_BLOCKING_SYNC, 0),
      (b: { value: bigint }) =>
        cu.cuCtxCreate(b, { execAffinityParams: null, numExecAffinityParams: 0, cigParams: null }, 0, 0),
      (b: { value: bigint }) => cu.cuCtxCreate(b, 0, 0),
      (b: { value: bigint }) => cu.cuCtxCreate_v2(b, C.CU_CTX_SCHED_SPIN, 0),
      (b: { value: bigint }) => cu.cuCtxCreate_v4(b, null, 0, 0),
    ]) {
      const b = box(0n);
      expect(create(b)).toBe(0);
      expect(current()).toBe(b.value);
      made.push(b.value);
    }
    expect(new Set(made).size).toBe(made.length);
    for (const c of made.reverse()) expect(cu.cuCtxDestroy(c)).toBe(0);
    expect(current()).toBe(primary);
    cu.dispose();
  });

  it('the struct’s rules: count without array, both kinds, CIG, execution affinity without MPS; nothing made on a refusal', () => {
    const { cu, primary, current } = cuda();
    const cases: [unknown, number][] = [
      [{ numExecAffinityParams: 1 }, C.CUDA_ERROR_INVALID_VALUE],
      // The H200 makes a regular context for a count of 0 or below without a list (ctx.createV4Params).
      [{ numExecAffinityParams: -1 }, C.CUDA_SUCCESS],
      [
        {
          execAffinityParams: [smCount(8)],
          numExecAffinityParams: 1,
          cigParams: { sharedDataType: 1, sharedData: 0n },
        },
        // Both set: the H200 answers NOT_SUPPORTED (ctx.createV4AffinityAndCig).
        C.CUDA_ERROR_NOT_SUPPORTED,
      ],
      [
        // An NV blob with NULL data: INVALID_VALUE on the H200 (cigVulkanBlobNull).
        { cigParams: { sharedDataType: C.CIG_DATA_TYPE_NV_BLOB, sharedData: 0n } },
        C.CUDA_ERROR_INVALID_VALUE,
      ],
      [
        { cigParams: { sharedDataType: C.CIG_DATA_TYPE_D3D12_COMMAND_QUEUE, sharedData: 1n } },
        C.CUDA_ERROR_NOT_SUPPORTED,
      ],
      [{ cigParams: { sharedDataType: 7, sharedData: 0n } }, C.CUDA_ERROR_INVALID_VALUE],
      [
        { execAffinityParams: [smCount(8)], numExecAffinityParams: 1 },
        C.CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
      ],
      [
        { execAffinityParams: [smCount(8), smCount(16)], numExecAffinityParams: 2 },
        C.CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
      ],
      [
        // Another type is not checked before the MPS refusal on the H200 (affinityTypeMax).
        { execAffinityParams: [{ type: 1, param: { smCount: { val: 8 } } }], numExecAffinityParams: 1 },
        C.CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
      ],
      [{ execAffinityParams: [smCount(8)], numExecAffinityParams: 2 }, C.CUDA_ERROR_INVALID_VALUE],
      [{ execAffinityParams: [], numExecAffinityParams: 0 }, C.CUDA_SUCCESS],
      [
        new Proxy(
          {},
          {
            get: () => {
              throw new Error('hostile');
            },
          },
        ),
        C.CUDA_ERROR_INVALID_VALUE,
      ],
      [7, C.CUDA_ERROR_INVALID_VALUE],
    ];
    cases.forEach(([params, code], i) => {
      const b = box(0n);
      expect(cu.cuCtxCreate(b, params as never, 0, 0), `case ${i}`).toBe(code);
      if (code === 0) expect(cu.cuCtxDestroy(b.value)).toBe(0);
      else expect([b.value, current()]).toEqual([0n, primary]);
    });
    // Flags first, then the struct, then the device.
    expect(cu.cuCtxCreate(box(0n), { numExecAffinityParams: 1 }, 3, 0)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuCtxCreate(box(0n), { numExecAffinityParams: 1 }, 0, 9)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuCtxCreate(box(0n), {}, 0, 9)).toBe(C.CUDA_ERROR_INVALID_DEVICE);
    expect(cu.cuCtxCreate_v4(null as never, {}, 0, 0)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuGetErrorName(C.CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, box<string | null>(null))).toBe(0);
    cu.dispose();
  });
});
