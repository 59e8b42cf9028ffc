/**
 * CUDA 13.0's cuCtxGetDevice_v2 and cuCtxSynchronize_v2 (Note [Context-taking
 * calls of CUDA 13.0]): NULL, primary, created and destroyed contexts, as the
 * H200 answered them (ctxV2.*), and handles that never named a context.
 */
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import { cudaWithContext } from './helpers.js';

const box = <T>(value: T) => ({ value });

function deviceOf(cu: CudaFlavor, ctx: bigint): number | string {
  const d = box(-1);
  const code = cu.cuCtxGetDevice_v2(d, ctx);
  return code === 0 ? d.value : `error ${code}`;
}

describe('cuCtxGetDevice_v2 and cuCtxSynchronize_v2', () => {
  it('take NULL as the current context, and device 0 when none is current', () => {
    const cu = cudaWithContext({ devices: ['H200', 'H200'] });
    const one = box(0n);
    expect(cu.cuDevicePrimaryCtxRetain(one, 1)).toBe(0);
    expect(cu.cuCtxSetCurrent(one.value)).toBe(0);
    expect(deviceOf(cu, 0n)).toBe(1);
    expect(cu.cuCtxSynchronize_v2(0n)).toBe(0);
    expect(cu.cuCtxSetCurrent(0n)).toBe(0);
    expect(cu.cuCtxSetCurrent(0n)).toBe(0);
    // The plain call needs a current context; the _v2 one answers device 0.
    expect(cu.cuCtxGetDevice(box(-1))).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(deviceOf(cu, 0n)).toBe(0);
    expect(cu.cuCtxSynchronize_v2(0n)).toBe(0);
    cu.dispose();
  });

  it('take NULL as a reset primary context current, answering its device as cuCtxGetDevice does', () => {
    const cu = cudaWithContext({ devices: ['H200', 'H200'] });
    const one = box(0n);
    expect(cu.cuDevicePrimaryCtxRetain(one, 1)).toBe(0);
    expect(cu.cuCtxSetCurrent(one.value)).toBe(0);
    expect(cu.cuDevicePrimaryCtxReset(1)).toBe(0);
    const plain = box(-1);
    expect(cu.cuCtxGetDevice(plain)).toBe(0);
    expect(plain.value).toBe(1);
    expect(deviceOf(cu, 0n)).toBe(1);
    expect(deviceOf(cu, one.value)).toBe(1);
    expect(cu.cuCtxSynchronize_v2(0n)).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cu.dispose();
  });

  it('answer a context that is not current, and a destroyed created one by its device', () => {
    const cu = cudaWithContext({ devices: ['H200', 'H200'] });
    const primary = box(0n);
    expect(cu.cuCtxGetCurrent(primary)).toBe(0);
    const created = box(0n);
    expect(cu.cuCtxCreate(created, 0, 1)).toBe(0);
    expect(cu.cuCtxSetCurrent(primary.value)).toBe(0);
    expect(deviceOf(cu, created.value)).toBe(1);
    expect(cu.cuCtxSynchronize_v2(created.value)).toBe(0);
    expect(cu.cuCtxDestroy(created.value)).toBe(0);
    expect(deviceOf(cu, created.value)).toBe(1);
    expect(cu.cuCtxSynchronize_v2(created.value)).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    expect(cu.cuCtxGetDevice_v2(null as never, primary.value)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
  });

  it('refuse a handle that never named a context, and answer before cuInit as every call does', () => {
    const cu = cudaWithContext();
    expect(deviceOf(cu, 0x5_1234n)).toBe(`error ${C.CUDA_ERROR_INVALID_CONTEXT}`);
    expect(cu.cuCtxSynchronize_v2(0x5_1234n)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    cu.dispose();
    expect(cu.cuCtxSynchronize_v2(0n)).toBe(C.CUDA_ERROR_DEINITIALIZED);
  });
});
