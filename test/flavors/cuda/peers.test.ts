/** cuDeviceCanAccessPeer and hipDeviceCanAccessPeer (Note [Peer access]): the answer agrees with what access does. */
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/cuda/constants.js';
import { createCuda } from '../../../src/flavors/cuda/cuda.js';
import * as H from '../../../src/flavors/hip/constants.js';
import { createHip } from '../../../src/flavors/hip/hip.js';

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
