/**
 * Device pointers of page-locked host memory (Note [Host device pointers]):
 * cuMemHostGetDevicePointer / _v2 and hipHostGetDevicePointer, the pointer
 * attributes of the same memory, and copies and sets through the pointer, on
 * the simulator and over the CUDA backend (the fake driver).
 */
import { describe, expect, it } from 'vitest';
import { createFakeDriver } from '../../conformance/gpu/fake-driver.js';
import { createHip } from '../../src/entry/processes.js';
import * as C from '../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import * as H from '../../src/flavors/hip/constants.js';
import { cudaWithContext } from './cuda/helpers.js';

const G = 2 * 1024 * 1024;
const box = <T>(value: T) => ({ value });

function pinned(cu: CudaFlavor, size: number, flags: number | null = 0): Uint8Array {
  const p = box<Uint8Array | null>(null);
  const code = flags === null ? cu.cuMemAllocHost(p, size) : cu.cuMemHostAlloc(p, size, flags);
  expect(code).toBe(0);
  return p.value!;
}

function devicePointer(cu: CudaFlavor, p: Uint8Array | bigint, flags = 0): bigint | number {
  const d = box(0n);
  const code = cu.cuMemHostGetDevicePointer(d, p, flags);
  return code === 0 ? d.value : code;
}

function attribute(cu: CudaFlavor, a: number, ptr: Uint8Array | bigint): number | bigint | string {
  const b = box<number | bigint>(-1);
  const code = cu.cuPointerGetAttribute(b, a, ptr);
  return code === 0 ? b.value : `error ${code}`;
}

const backends = [
  ['the simulator', () => cudaWithContext()],
  ['the CUDA backend', () => cudaWithContext({ backend: 'cuda', cuda: { driver: createFakeDriver() } })],
] as const;

describe.each(backends)('cuMemHostGetDevicePointer on %s', (_name, make) => {
  it('answers one address per buffer, which DEVICE_POINTER and HOST_POINTER answer too', () => {
    const cu = make();
    for (const flags of [0, C.CU_MEMHOSTALLOC_DEVICEMAP, C.CU_MEMHOSTALLOC_PORTABLE | 4, null]) {
      const host = pinned(cu, 8192, flags);
      const d = devicePointer(cu, host) as bigint;
      expect(typeof d).toBe('bigint');
      const v2 = box(0n);
      expect(cu.cuMemHostGetDevicePointer_v2(v2, host, 0)).toBe(0);
      expect(v2.value).toBe(d);
      expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, host)).toBe(d);
      expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_HOST_POINTER, d)).toBe(d);
      expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100n)).toBe(C.CU_MEMORYTYPE_HOST);
      expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100n)).toBe(d);
      expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100n)).toBe(8192);
      // An interior pointer, as a view or as an address, is the interior device pointer.
      expect(devicePointer(cu, host.subarray(4104))).toBe(d + 4104n);
      expect(devicePointer(cu, d + 16n)).toBe(d + 16n);
      expect(cu.cuMemFreeHost(host)).toBe(0);
    }
    cu.dispose();
  });

  it('sets through the device pointer fill the buffer, and a bad stream refuses every width alike', () => {
    const cu = make();
    const host = pinned(cu, 64, C.CU_MEMHOSTALLOC_DEVICEMAP);
    const d = devicePointer(cu, host) as bigint;
    expect(cu.cuMemsetD32Async(d, 0x04030201, 4, 0n)).toBe(0);
    expect(cu.cuStreamSynchronize(0n)).toBe(0);
    expect([...host.subarray(0, 8)]).toEqual([1, 2, 3, 4, 1, 2, 3, 4]);
    const bogus = 0x7777n;
    expect(cu.cuMemsetD8Async(d, 9, 4, bogus)).toBe(C.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuMemsetD16Async(d, 9, 2, bogus)).toBe(C.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuMemsetD32Async(d, 9, 1, bogus)).toBe(C.CUDA_ERROR_INVALID_HANDLE);
    expect(host[0]).toBe(1);
    cu.dispose();
  });

  it('gives two buffers disjoint ranges, none reused after a free, none a device address', () => {
    const cu = make();
    const a = pinned(cu, 5000);
    const b = pinned(cu, 1);
    const da = devicePointer(cu, a) as bigint;
    const db = devicePointer(cu, b) as bigint;
    expect(db >= da + 5000n || da >= db + 1n).toBe(true);
    const dev = box(0n);
    expect(cu.cuMemAlloc(dev, G)).toBe(0);
    expect(dev.value < da && dev.value < db).toBe(true);
    expect(cu.cuMemFreeHost(a)).toBe(0);
    const c = pinned(cu, 5000);
    expect(devicePointer(cu, c)).not.toBe(da);
    cu.dispose();
  });

  it('refuses flags, a NULL box, and memory that is no live page-locked buffer', () => {
    const cu = make();
    const host = pinned(cu, 4096, C.CU_MEMHOSTALLOC_DEVICEMAP);
    const d = devicePointer(cu, host) as bigint;
    const INVALID = C.CUDA_ERROR_INVALID_VALUE;
    expect(devicePointer(cu, host, 1)).toBe(INVALID);
    expect(devicePointer(cu, host, 2)).toBe(INVALID);
    expect(cu.cuMemHostGetDevicePointer(null as never, host, 0)).toBe(INVALID);
    expect(devicePointer(cu, new Uint8Array(4096))).toBe(INVALID);
    expect(devicePointer(cu, 0n)).toBe(INVALID);
    expect(devicePointer(cu, d + 4096n)).toBe(INVALID);
    expect(devicePointer(cu, host.subarray(4096))).toBe(INVALID);
    const dev = box(0n);
    expect(cu.cuMemAlloc(dev, G)).toBe(0);
    expect(devicePointer(cu, dev.value)).toBe(INVALID);
    // A buffer of no bytes has none (hostPtr.size0 on the H200).
    const empty = pinned(cu, 0, null);
    expect(devicePointer(cu, empty)).toBe(INVALID);
    expect(cu.cuMemFreeHost(empty)).toBe(0);
    expect(cu.cuMemFreeHost(host)).toBe(0);
    expect(devicePointer(cu, host)).toBe(INVALID);
    expect(devicePointer(cu, d)).toBe(INVALID);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d)).toBe(`error ${INVALID}`);
    // Device memory has no host pointer.
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_HOST_POINTER, dev.value)).toBe(`error ${INVALID}`);
    cu.dispose();
  });

  it('answers VMM memory some device may access with its address, as the H200 does (hostPtr.badArguments)', () => {
    const cu = make();
    const prop = {
      type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: 0,
      location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    const va = box(0n);
    const h = box(0n);
    expect(cu.cuMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
    expect(cu.cuMemCreate(h, G, prop, 0)).toBe(0);
    expect(cu.cuMemMap(va.value, G, 0, h.value, 0)).toBe(0);
    // Mapped, but no device may access it yet: refused, as DEVICE_POINTER is.
    expect(devicePointer(cu, va.value + 64n)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    const rw = [{ location: prop.location, flags: C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE }];
    expect(cu.cuMemSetAccess(va.value, G, rw, 1)).toBe(0);
    expect(devicePointer(cu, va.value + 64n)).toBe(va.value + 64n);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, va.value + 64n)).toBe(va.value + 64n);
    cu.dispose();
  });

  it('needs a current context', () => {
    const cu = make();
    const host = pinned(cu, 64);
    expect(cu.cuCtxSetCurrent(0n)).toBe(0);
    expect(devicePointer(cu, host)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    cu.dispose();
  });

  it('copies and sets reach the host bytes through the device pointer, within the buffer', () => {
    const cu = make();
    const host = pinned(cu, 8192);
    const d = devicePointer(cu, host) as bigint;
    const dev = box(0n);
    expect(cu.cuMemAlloc(dev, G)).toBe(0);
    const data = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7 + 3) & 0xff);
    expect(cu.cuMemcpyHtoD(d + 8n, data, 4096)).toBe(0);
    expect(host.subarray(8, 4104)).toEqual(data);
    const back = new Uint8Array(4096);
    expect(cu.cuMemcpyDtoH(back, d + 8n, 4096)).toBe(0);
    expect(back).toEqual(data);
    expect(cu.cuMemcpyDtoD(dev.value, d + 8n, 4096)).toBe(0);
    host.fill(0);
    expect(cu.cuMemcpyDtoD(d + 4096n, dev.value, 4096)).toBe(0);
    expect(host.subarray(4096)).toEqual(data);
    const out = new Uint8Array(16);
    expect(cu.cuMemcpy(out, d + 4096n, 16)).toBe(0);
    expect(out).toEqual(data.subarray(0, 16));
    expect(cu.cuMemsetD8(d, 0x5a, 4)).toBe(0);
    expect(cu.cuMemsetD16(d + 4n, 0x1234, 1)).toBe(0);
    expect(cu.cuMemsetD32(d + 8n, 0x01020304, 1)).toBe(0);
    expect([...host.subarray(0, 12)]).toEqual([0x5a, 0x5a, 0x5a, 0x5a, 0x34, 0x12, 0, 0, 4, 3, 2, 1]);
    // Past the buffer's end: refused, nothing written.
    const before = Uint8Array.from(host);
    expect(cu.cuMemcpyDtoD(dev.value, d + 4096n, 8192)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemcpyHtoD(d + 8190n, data, 4)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemsetD32(d + 8188n, 7, 2)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(host).toEqual(before);
    cu.dispose();
  });
});

describe('hipHostGetDevicePointer', () => {
  it('answers the buffer’s address, which hipMemcpy and hipPointerGetAttributes take', () => {
    const hip = createHip({ devices: ['H200'] });
    const p = box<Uint8Array | null>(null);
    expect(hip.hipHostMalloc(p, 8192, H.hipHostMallocMapped)).toBe(0);
    const host = p.value!;
    const d = box(0n);
    expect(hip.hipHostGetDevicePointer(d, host, 0)).toBe(0);
    const inner = box(0n);
    expect(hip.hipHostGetDevicePointer(inner, host.subarray(100), 0)).toBe(0);
    expect(inner.value).toBe(d.value + 100n);
    const attrs = box<unknown>(null);
    expect(hip.hipPointerGetAttributes(attrs as never, d.value)).toBe(0);
    expect(attrs.value).toMatchObject({
      type: H.hipMemoryTypeHost,
      devicePointer: d.value,
      hostPointer: d.value,
    });
    const data = Uint8Array.from({ length: 64 }, (_, i) => i + 1);
    expect(hip.hipMemcpy(d.value + 8n, data, 64, H.hipMemcpyDefault)).toBe(0);
    expect(host.subarray(8, 72)).toEqual(data);
    const dev = box(0n);
    expect(hip.hipMalloc(dev, G)).toBe(0);
    expect(hip.hipMemcpy(dev.value, d.value + 8n, 64, H.hipMemcpyDeviceToDevice)).toBe(0);
    const back = new Uint8Array(64);
    expect(hip.hipMemcpy(back, dev.value, 64, H.hipMemcpyDeviceToHost)).toBe(0);
    expect(back).toEqual(data);
    expect(hip.hipMemset(d.value, 0x11, 4)).toBe(0);
    expect([...host.subarray(0, 5)]).toEqual([0x11, 0x11, 0x11, 0x11, 0]);
    // clr: a hipMalloc pointer is a memory object too, so it answers itself.
    const self = box(0n);
    expect(hip.hipHostGetDevicePointer(self, dev.value, 0)).toBe(0);
    expect(self.value).toBe(dev.value);
    // A hipMemMap'd range is one too (clr adds it at the map), before any access is set.
    const va = box(0n);
    const h = box(0n);
    const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
    expect(hip.hipMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
    expect(hip.hipMemCreate(h, G, prop as never, 0)).toBe(0);
    const unmapped = box(0n);
    expect(hip.hipHostGetDevicePointer(unmapped, va.value, 0)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipMemMap(va.value, G, 0, h.value, 0)).toBe(0);
    expect(hip.hipHostGetDevicePointer(self, va.value + 8n, 0)).toBe(0);
    expect(self.value).toBe(va.value + 8n);
    expect(hip.hipHostFree(host)).toBe(0);
    hip.dispose();
  });

  it('refuses flags, a NULL out-parameter, pageable memory and a freed buffer', () => {
    const hip = createHip({ devices: ['H200'] });
    const p = box<Uint8Array | null>(null);
    expect(hip.hipHostMalloc(p, 64, 0)).toBe(0);
    const d = box(0n);
    expect(hip.hipHostGetDevicePointer(d, p.value!, 1)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipHostGetDevicePointer(null as never, p.value!, 0)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipHostGetDevicePointer(d, new Uint8Array(64), 0)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipHostGetDevicePointer(d, 0n, 0)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipHostFree(p.value!)).toBe(0);
    expect(hip.hipHostGetDevicePointer(d, p.value!, 0)).toBe(H.hipErrorInvalidValue);
    hip.dispose();
  });
});
