/** cuDeviceCanAccessPeer and hipDeviceCanAccessPeer (Note [Peer access]): the answer agrees with what access does. */
import { describe, expect, it } from 'vitest';
import { createCuda, createHip } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import * as H from '../../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;

describe('cuDeviceCanAccessPeer', () => {
  it('1 between two devices, 0 for a device itself, and a peer granted access reads the memory', () => {
    const cu = createCuda({ devices: ['H200', 'H200'], report: () => {} });
    const can = { value: -1 };
    expect(cu.cuDeviceCanAccessPeer(can, 0, 1)).toBe(C.CUDA_ERROR_NOT_INITIALIZED);
    expect(can.value).toBe(-1);
    expect(cu.cuInit(0)).toBe(0);
    expect(cu.cuDeviceCanAccessPeer(can, 0, 1)).toBe(0);
    expect(can.value).toBe(1);
    expect(cu.cuDeviceCanAccessPeer(can, 1, 1)).toBe(0);
    expect(can.value).toBe(0);
    // What the 1 promises: device 1 granted access to device 0's memory copies out of it.
    const ctx = [{ value: 0n }, { value: 0n }];
    expect(cu.cuDevicePrimaryCtxRetain(ctx[0], 0)).toBe(0);
    expect(cu.cuDevicePrimaryCtxRetain(ctx[1], 1)).toBe(0);
    expect(cu.cuCtxSetCurrent(ctx[0].value)).toBe(0);
    const va = { value: 0n };
    const h = { value: 0n };
    const prop = {
      type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: C.CU_MEM_HANDLE_TYPE_NONE,
      location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    expect(cu.cuMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
    expect(cu.cuMemCreate(h, G, prop, 0)).toBe(0);
    expect(cu.cuMemMap(va.value, G, 0, h.value, 0)).toBe(0);
    const rw = (id: number) => ({ location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id }, flags: 3 });
    expect(cu.cuMemSetAccess(va.value, G, [rw(0)], 1)).toBe(0);
    expect(cu.cuMemcpyHtoD(va.value, Uint8Array.of(7, 8, 9), 3)).toBe(0);
    const out = new Uint8Array(3);
    expect(cu.cuCtxSetCurrent(ctx[1].value)).toBe(0);
    expect(cu.cuMemcpyDtoH(out, va.value, 3)).not.toBe(0);
    expect(cu.cuMemSetAccess(va.value, G, [rw(0), rw(1)], 2)).toBe(0);
    expect(cu.cuMemcpyDtoH(out, va.value, 3)).toBe(0);
    expect([...out]).toEqual([7, 8, 9]);
    for (const [a, b] of [
      [0, 2],
      [-1, 0],
      [0, Number.NaN],
    ])
      expect(cu.cuDeviceCanAccessPeer(can, a, b)).toBe(C.CUDA_ERROR_INVALID_DEVICE);
    expect(cu.cuDeviceCanAccessPeer(Object.freeze({ value: 0 }), 0, 1)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuDeviceCanAccessPeer(null as never, 0, 1)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
    expect(cu.cuDeviceCanAccessPeer(can, 0, 1)).toBe(C.CUDA_ERROR_DEINITIALIZED);
  });
});

describe('hipDeviceCanAccessPeer', () => {
  it('1 between two devices, 0 for a device itself; bad devices and boxes refused', () => {
    const hip = createHip({ devices: ['MI300X', 'MI300X'], report: () => {} });
    const can = { value: -1 };
    expect(hip.hipDeviceCanAccessPeer(can, 1, 0)).toBe(0);
    expect(can.value).toBe(1);
    expect(hip.hipDeviceCanAccessPeer(can, 0, 0)).toBe(0);
    expect(can.value).toBe(0);
    expect(hip.hipDeviceCanAccessPeer(can, 0, 5)).toBe(H.hipErrorInvalidDevice);
    expect(hip.hipDeviceCanAccessPeer(Object.freeze({ value: 0 }), 0, 1)).toBe(H.hipErrorInvalidValue);
    expect(can.value).toBe(0);
    hip.dispose();
    expect(hip.hipDeviceCanAccessPeer(can, 0, 1)).toBe(H.hipErrorDeinitialized);
  });
});

describe('cuMemcpyPeer and hipMemcpyPeer', () => {
  const MiB = 1024 * 1024;

  function twoContexts() {
    const cu = createCuda({ devices: ['H200', 'H200'], report: () => {} });
    expect(cu.cuInit(0)).toBe(0);
    const ctx = [{ value: 0n }, { value: 0n }];
    expect(cu.cuDevicePrimaryCtxRetain(ctx[0], 0)).toBe(0);
    expect(cu.cuDevicePrimaryCtxRetain(ctx[1], 1)).toBe(0);
    /** cuMemAlloc memory of `dev`: only that device has access. */
    const alloc = (dev: number, size: number) => {
      const d = { value: 0n };
      expect(cu.cuCtxSetCurrent(ctx[dev].value)).toBe(0);
      expect(cu.cuMemAlloc(d, size)).toBe(0);
      return d.value;
    };
    return { cu, c0: ctx[0].value, c1: ctx[1].value, alloc };
  }

  it("copies between two devices' memory that neither can reach from the other, small and past 64 MiB", () => {
    const { cu, c0, c1, alloc } = twoContexts();
    for (const size of [3, 65 * MiB + 17]) {
      const src = alloc(0, size);
      const dst = alloc(1, size);
      expect(cu.cuCtxSetCurrent(c0)).toBe(0);
      const pattern = Uint8Array.of(5, 6, 7);
      expect(cu.cuMemcpyHtoD(src, pattern, 3)).toBe(0);
      expect(cu.cuMemcpyHtoD(src + BigInt(size - 3), pattern, 3)).toBe(0);
      // Device 0 cannot read device 1's cuMemAlloc memory directly.
      expect(cu.cuMemcpyDtoD(dst, src, 3)).not.toBe(0);
      expect(cu.cuMemcpyPeer(dst, c1, src, c0, size)).toBe(0);
      expect(cu.cuCtxSetCurrent(c1)).toBe(0);
      const out = new Uint8Array(3);
      expect(cu.cuMemcpyDtoH(out, dst, 3)).toBe(0);
      expect([...out]).toEqual([5, 6, 7]);
      expect(cu.cuMemcpyDtoH(out, dst + BigInt(size - 3), 3)).toBe(0);
      expect([...out]).toEqual([5, 6, 7]);
    }
    cu.dispose();
  });

  it('a refused copy writes nothing; bad contexts and sizes are refused', () => {
    const { cu, c0, c1, alloc } = twoContexts();
    for (const size of [2 * MiB, 66 * MiB]) {
      const src = alloc(0, size);
      const dst = alloc(1, 2 * size);
      // The source runs past its allocation: nothing is written.
      expect(cu.cuMemcpyPeer(dst, c1, src + 4096n, c0, size)).not.toBe(0);
      // Read through the wrong device: device 1 cannot read device 0's memory.
      expect(cu.cuMemcpyPeer(dst, c1, src, c1, size)).not.toBe(0);
      expect(cu.cuCtxSetCurrent(c1)).toBe(0);
      const out = Uint8Array.of(9, 9, 9, 9);
      expect(cu.cuMemcpyDtoH(out, dst, 4)).toBe(0);
      expect([...out]).toEqual([0, 0, 0, 0]);
    }
    const src = alloc(0, MiB);
    const dst = alloc(1, MiB);
    // NULL (0n, 0, null) is the current context (peer.memcpyPeerNullContext); see the NULL row below.
    for (const bad of [1n, -1, 'x', c0 + 5n])
      expect(cu.cuMemcpyPeer(dst, bad as never, src, c0, 4), String(bad)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    // The current context is c1, device 1's: a NULL destination context names it.
    for (const nul of [0n, 0, null])
      expect(cu.cuMemcpyPeer(dst, nul as never, src, c0, 4), String(nul)).toBe(0);
    expect(cu.cuMemcpyPeer(dst, c1, src, c0, -1)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemcpyPeer(dst, c1, src, c0, 0)).toBe(0);
    cu.dispose();
    expect(cu.cuMemcpyPeer(dst, c1, src, c0, 4)).toBe(C.CUDA_ERROR_DEINITIALIZED);
  });

  it('hipMemcpyPeer: the same copy by device ordinals', () => {
    const hip = createHip({ devices: ['MI300X', 'MI300X'], report: () => {} });
    const src = { value: 0n };
    const dst = { value: 0n };
    expect(hip.hipMalloc(src, 4096)).toBe(0);
    expect(hip.hipMemcpyHtoD(src.value, Uint8Array.of(1, 2), 2)).toBe(0);
    expect(hip.hipSetDevice(1)).toBe(0);
    expect(hip.hipMalloc(dst, 4096)).toBe(0);
    expect(hip.hipMemcpyPeer(dst.value, 1, src.value, 0, 2)).toBe(0);
    const out = new Uint8Array(2);
    expect(hip.hipMemcpyDtoH(out, dst.value, 2)).toBe(0);
    expect([...out]).toEqual([1, 2]);
    expect(hip.hipMemcpyPeer(dst.value, 2, src.value, 0, 2)).toBe(H.hipErrorInvalidDevice);
    expect(hip.hipMemcpyPeer(dst.value, 1, src.value, 0, -1)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipMemcpyPeer(dst.value, 1, src.value + 4095n, 0, 2)).not.toBe(0);
    hip.dispose();
  });
});

describe('cuCtxEnablePeerAccess / cuCtxDisablePeerAccess and the HIP pair', () => {
  it("the drivers' rules: flags 0, a valid other device, once, disable only what was enabled", () => {
    const cu = createCuda({ devices: ['H200', 'H200'], report: () => {} });
    expect(cu.cuInit(0)).toBe(0);
    const ctx = [{ value: 0n }, { value: 0n }];
    expect(cu.cuDevicePrimaryCtxRetain(ctx[0], 0)).toBe(0);
    expect(cu.cuCtxEnablePeerAccess(ctx[0].value, 0)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuCtxSetCurrent(ctx[0].value)).toBe(0);
    // Device 1's context is not retained yet.
    expect(cu.cuCtxEnablePeerAccess(0xc0_0001n, 0)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuDevicePrimaryCtxRetain(ctx[1], 1)).toBe(0);
    expect(cu.cuCtxEnablePeerAccess(ctx[1].value, 1)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuCtxEnablePeerAccess(ctx[0].value, 0)).toBe(C.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    expect(cu.cuCtxDisablePeerAccess(ctx[1].value)).toBe(C.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    expect(cu.cuCtxEnablePeerAccess(ctx[1].value, 0)).toBe(0);
    expect(cu.cuCtxEnablePeerAccess(ctx[1].value, 0)).toBe(C.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    // Per direction: device 1 has not enabled access to device 0.
    expect(cu.cuCtxSetCurrent(ctx[1].value)).toBe(0);
    expect(cu.cuCtxDisablePeerAccess(ctx[0].value)).toBe(C.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    expect(cu.cuCtxSetCurrent(ctx[0].value)).toBe(0);
    expect(cu.cuCtxDisablePeerAccess(ctx[1].value)).toBe(0);
    expect(cu.cuCtxDisablePeerAccess(ctx[1].value)).toBe(C.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    const name = { value: null as string | null };
    expect(cu.cuGetErrorName(C.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, name)).toBe(0);
    expect(name.value).toBe('CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED');
    cu.dispose();
    expect(cu.cuCtxEnablePeerAccess(ctx[1].value, 0)).toBe(C.CUDA_ERROR_DEINITIALIZED);

    const hip = createHip({ devices: ['MI300X', 'MI300X'], report: () => {} });
    expect(hip.hipDeviceEnablePeerAccess(0, 0)).toBe(H.hipErrorInvalidDevice);
    expect(hip.hipDeviceEnablePeerAccess(2, 0)).toBe(H.hipErrorInvalidDevice);
    expect(hip.hipDeviceEnablePeerAccess(1, 4)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipDeviceDisablePeerAccess(1)).toBe(H.hipErrorPeerAccessNotEnabled);
    expect(hip.hipDeviceEnablePeerAccess(1, 0)).toBe(0);
    expect(hip.hipDeviceEnablePeerAccess(1, 0)).toBe(H.hipErrorPeerAccessAlreadyEnabled);
    expect(hip.hipDeviceDisablePeerAccess(1)).toBe(0);
    expect(hip.hipDeviceDisablePeerAccess(1)).toBe(H.hipErrorPeerAccessNotEnabled);
    expect(hip.hipGetErrorName(H.hipErrorPeerAccessNotEnabled)).toBe('hipErrorPeerAccessNotEnabled');
    hip.dispose();
  });
});
