/**
 * Issue 17, item 4's settled rules in the CUDA flavour: the context stack
 * under cuCtxSetCurrent(NULL), cuCtxPushCurrent and cuCtxPopCurrent (Note
 * [The context stack]); copies and sets on a stream of another device (Note
 * [Copies on another device's stream]); a destroyed event in every call
 * that takes one.
 */
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import { cudaWithContext } from './helpers.js';

const box = <T>(value: T) => ({ value });
const current = (cu: CudaFlavor) => {
  const b = box(0n);
  expect(cu.cuCtxGetCurrent(b)).toBe(C.CUDA_SUCCESS);
  return b.value;
};

describe('the context stack', () => {
  it('cuCtxSetCurrent(NULL) pops the top; pops hand back what they took; a push goes on top', () => {
    const cu = cudaWithContext({ report: () => {} });
    const primary = current(cu);
    const a = box(0n);
    const b = box(0n);
    expect(cu.cuCtxCreate(a, 0, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuCtxCreate(b, 0, 0)).toBe(C.CUDA_SUCCESS);
    expect(current(cu)).toBe(b.value);
    expect(cu.cuCtxSetCurrent(0n)).toBe(C.CUDA_SUCCESS);
    expect(current(cu)).toBe(a.value);
    const popped = box(0n);
    expect(cu.cuCtxPopCurrent(popped)).toBe(C.CUDA_SUCCESS);
    expect([popped.value, current(cu)]).toEqual([a.value, primary]);
    expect(cu.cuCtxPopCurrent(popped)).toBe(C.CUDA_SUCCESS);
    expect([popped.value, current(cu)]).toEqual([primary, 0n]);
    expect(cu.cuCtxPopCurrent(popped)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    // With an empty stack, NULL is a no-op.
    expect(cu.cuCtxSetCurrent(0n)).toBe(C.CUDA_SUCCESS);
    expect(current(cu)).toBe(0n);
    expect(cu.cuCtxPushCurrent(b.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuCtxPushCurrent(a.value)).toBe(C.CUDA_SUCCESS);
    expect(current(cu)).toBe(a.value);
    // cuCtxSetCurrent replaces the top: popping it finds b below, not a.
    expect(cu.cuCtxSetCurrent(primary)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuCtxPopCurrent(popped)).toBe(C.CUDA_SUCCESS);
    expect([popped.value, current(cu)]).toEqual([primary, b.value]);
    expect(cu.cuCtxPushCurrent(0n)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuCtxPushCurrent(0xdeadn)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(current(cu)).toBe(b.value);
    expect(cu.cuCtxDestroy(b.value)).toBe(C.CUDA_SUCCESS);
    expect(current(cu)).toBe(0n);
    expect(cu.cuCtxDestroy(a.value)).toBe(C.CUDA_SUCCESS);
    cu.dispose();
  });
});

describe('a stream of another device', () => {
  it('takes copies and sets while another device is current, done by its own device', () => {
    const cu = cudaWithContext({ devices: ['H200', 'H200'], report: () => {} });
    const p0 = current(cu);
    const p1 = box(0n);
    expect(cu.cuDevicePrimaryCtxRetain(p1, 1)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuCtxSetCurrent(p1.value)).toBe(C.CUDA_SUCCESS);
    const s1 = box(0n);
    const m = box(0n);
    expect(cu.cuStreamCreate(s1, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemAlloc(m, 4096)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuCtxSetCurrent(p0)).toBe(C.CUDA_SUCCESS);
    const data = new Uint8Array(64).map((_, i) => i * 3 + 1);
    expect(cu.cuMemcpyHtoDAsync(m.value, data, 64, s1.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemcpyDtoDAsync(m.value + 1024n, m.value, 64, s1.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemsetD8Async(m.value + 2048n, 0x5a, 64, s1.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemcpyAsync(m.value + 3072n, data, 64, s1.value)).toBe(C.CUDA_SUCCESS);
    const back = new Uint8Array(64);
    expect(cu.cuMemcpyDtoHAsync(back, m.value + 1024n, 64, s1.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamSynchronize(s1.value)).toBe(C.CUDA_SUCCESS);
    expect(back).toEqual(data);
    // A synchronous read on device 1 sees what device 1's stream wrote.
    expect(cu.cuCtxSetCurrent(p1.value)).toBe(C.CUDA_SUCCESS);
    const set = new Uint8Array(64);
    const copied = new Uint8Array(64);
    expect(cu.cuMemcpyDtoH(set, m.value + 2048n, 64)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemcpyDtoH(copied, m.value + 3072n, 64)).toBe(C.CUDA_SUCCESS);
    expect(set).toEqual(new Uint8Array(64).fill(0x5a));
    expect(copied).toEqual(data);
    expect(cu.cuMemFree(m.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamDestroy(s1.value)).toBe(C.CUDA_SUCCESS);
    cu.dispose();
  });
});

describe('a destroyed event', () => {
  it('is CUDA_ERROR_CONTEXT_IS_DESTROYED to every call that takes one; a never-made one is INVALID_HANDLE', () => {
    const cu = cudaWithContext({ report: () => {} });
    const s = box(0n);
    const live = box(0n);
    const dead = box(0n);
    expect(cu.cuStreamCreate(s, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventCreate(live, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventCreate(dead, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventRecord(live.value, 0n)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventSynchronize(live.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventDestroy(dead.value)).toBe(C.CUDA_SUCCESS);
    const calls = (e: bigint) => [
      cu.cuEventRecord(e, 0n),
      cu.cuEventRecord(e, s.value),
      cu.cuEventRecordWithFlags(e, 0n, 0),
      cu.cuEventSynchronize(e),
      cu.cuEventQuery(e),
      cu.cuEventElapsedTime(box(0), e, live.value),
      cu.cuEventElapsedTime(box(0), live.value, e),
      cu.cuEventElapsedTime_v2(box(0), e, live.value),
      cu.cuEventElapsedTime_v2(box(0), live.value, e),
      cu.cuStreamWaitEvent(0n, e, 0),
      cu.cuStreamWaitEvent(s.value, e, 0),
      cu.cuEventDestroy(e),
    ];
    expect(calls(dead.value)).toEqual(Array(12).fill(C.CUDA_ERROR_CONTEXT_IS_DESTROYED));
    expect(calls(0xe_0000_0000n + 9999n)).toEqual(Array(12).fill(C.CUDA_ERROR_INVALID_HANDLE));
    expect(cu.cuEventDestroy(live.value)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamDestroy(s.value)).toBe(C.CUDA_SUCCESS);
    cu.dispose();
  });
});
