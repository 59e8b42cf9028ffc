/** cuMemAllocHost / cuMemFreeHost and hipHostMalloc / hipHostFree (Note [Host buffers]). */
import { describe, expect, it } from 'vitest';
import { createCuda, createHip } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import * as H from '../../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;

describe('cuMemAllocHost and cuMemFreeHost', () => {
  it('a host buffer the copies use, freed once; bad sizes, boxes and buffers refused', () => {
    const cu = createCuda({ devices: ['H200'], report: () => {} });
    const box = { value: null as Uint8Array | null };
    expect(cu.cuMemAllocHost(box, 16)).toBe(C.CUDA_ERROR_NOT_INITIALIZED);
    expect(cu.cuInit(0)).toBe(0);
    expect(cu.cuMemAllocHost(box, 16)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    const ctx = { value: 0n };
    expect(cu.cuDevicePrimaryCtxRetain(ctx, 0)).toBe(0);
    expect(cu.cuCtxSetCurrent(ctx.value)).toBe(0);
    expect(cu.cuMemAllocHost(box, 16)).toBe(0);
    const host = box.value as Uint8Array;
    expect(host.byteLength).toBe(16);
    host.set([1, 2, 3, 4]);
    const d = { value: 0n };
    expect(cu.cuMemAlloc(d, G)).toBe(0);
    expect(cu.cuMemcpyHtoD(d.value, host, 4)).toBe(0);
    const back = { value: null as Uint8Array | null };
    expect(cu.cuMemAllocHost(back, 4)).toBe(0);
    expect(cu.cuMemcpyDtoH(back.value as Uint8Array, d.value, 4)).toBe(0);
    expect([...(back.value as Uint8Array)]).toEqual([1, 2, 3, 4]);
    expect(cu.cuMemFreeHost(host)).toBe(0);
    expect(cu.cuMemFreeHost(host)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    for (const bad of [new Uint8Array(4), null, 0n, 'x', {}])
      expect(cu.cuMemFreeHost(bad as never)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    const untouched = { value: null };
    for (const size of [-1, 1.5, Number.NaN, 'x'])
      expect(cu.cuMemAllocHost(untouched, size as never), String(size)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemAllocHost(Object.freeze({ value: null }), 4)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(untouched.value).toBe(null);
    // Size 0 succeeds with a buffer of no bytes, freed once (host.allocSize0AndNullBox on the H200).
    const empty = { value: null as Uint8Array | null };
    expect(cu.cuMemAllocHost(empty, 0)).toBe(0);
    expect(empty.value?.byteLength).toBe(0);
    expect(cu.cuMemFreeHost(empty.value as Uint8Array)).toBe(0);
    expect(cu.cuMemFreeHost(empty.value as Uint8Array)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
    expect(cu.cuMemFreeHost(back.value as Uint8Array)).toBe(C.CUDA_ERROR_DEINITIALIZED);
  });
});

describe('hipHostMalloc and hipHostFree', () => {
  it('flags HIP defines, size 0 gives NULL, a buffer frees once', () => {
    const hip = createHip({ devices: ['MI300X'], report: () => {} });
    const box = { value: null as Uint8Array | null };
    for (const f of [
      H.hipHostMallocDefault,
      H.hipHostMallocMapped | H.hipHostMallocPortable,
      H.hipHostMallocCoherent,
      H.hipHostMallocNonCoherent,
      H.hipHostMallocWriteCombined | H.hipHostMallocNumaUser,
    ]) {
      expect(hip.hipHostMalloc(box, 64, f), String(f)).toBe(0);
      expect(box.value?.byteLength).toBe(64);
      expect(hip.hipHostFree(box.value)).toBe(0);
      expect(hip.hipHostFree(box.value)).toBe(H.hipErrorInvalidValue);
    }
    expect(hip.hipHostMalloc(box, 0, 0)).toBe(0);
    expect(box.value).toBe(null);
    expect(hip.hipHostFree(null)).toBe(0);
    const untouched = { value: 'untouched' };
    for (const f of [0x8, H.hipHostMallocCoherent | H.hipHostMallocNonCoherent, 2 ** 32, -1, 1.5])
      expect(hip.hipHostMalloc(untouched as never, 64, f), String(f)).toBe(H.hipErrorInvalidValue);
    for (const size of [-1, Number.NaN, 'x'])
      expect(hip.hipHostMalloc(untouched as never, size as never, 0)).toBe(H.hipErrorInvalidValue);
    expect(untouched.value).toBe('untouched');
    expect(hip.hipHostFree(new Uint8Array(4))).toBe(H.hipErrorInvalidValue);
    expect(hip.hipHostFree({} as never)).toBe(H.hipErrorInvalidValue);
    hip.dispose();
    expect(hip.hipHostMalloc(box, 64, 0)).toBe(H.hipErrorDeinitialized);
  });
});
