/**
 * cuCtxDestroy of a primary context (refused, as on the H200),
 * cuDevicePrimaryCtxReset (which does destroy it), cuDevicePrimaryCtxGetState
 * and cuStreamQuery (Note [Destroying a primary context]): what a reset primary
 * context owned is released through core, VMM memory stays, and the handle
 * answers as a destroyed context until a retain.
 */
import { describe, expect, it } from 'vitest';
import { createCuda } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import { cudaWithContext, DEVICE_PROP, RW0 } from './helpers.js';

const G = 2 * 1024 * 1024;
const box = <T>(value: T) => ({ value });

function current(cu: CudaFlavor): bigint {
  const b = box(-1n);
  expect(cu.cuCtxGetCurrent(b)).toBe(0);
  return b.value;
}
function freeBytes(cu: CudaFlavor): number {
  const free = box(0);
  expect(cu.cuMemGetInfo(free, box(0))).toBe(0);
  return free.value;
}
function state(cu: CudaFlavor, dev = 0): { flags: number; active: number } {
  const flags = box(-1);
  const active = box(-1);
  expect(cu.cuDevicePrimaryCtxGetState(dev, flags, active)).toBe(0);
  return { flags: flags.value, active: active.value };
}
/** The primary context of device 0 retained again and made current; its handle. */
function retainAgain(cu: CudaFlavor): bigint {
  const b = box(0n);
  expect(cu.cuDevicePrimaryCtxRetain(b, 0)).toBe(0);
  expect(cu.cuCtxSetCurrent(b.value)).toBe(0);
  return b.value;
}

describe('cuCtxDestroy of a primary context', () => {
  it('is refused, CUDA_ERROR_INVALID_CONTEXT, and changes nothing (the H200, primaryDestroy.*)', () => {
    const cu = cudaWithContext();
    const primary = current(cu);
    const p = box(0n);
    expect(cu.cuMemAlloc(p, G)).toBe(0);
    const s = box(0n);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    const before = JSON.stringify([cu.runtime.describe(), cu.runtime.stats(), cu.runtime.eventCount]);
    const free = freeBytes(cu);
    expect(cu.cuCtxDestroy(primary)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(JSON.stringify([cu.runtime.describe(), cu.runtime.stats(), cu.runtime.eventCount])).toBe(before);
    expect(current(cu)).toBe(primary);
    expect(state(cu)).toEqual({ flags: 0, active: 1 });
    expect(cu.cuCtxSynchronize()).toBe(0);
    expect(freeBytes(cu)).toBe(free);
    expect(cu.cuStreamQuery(s.value)).toBe(0);
    // Below a created context, too.
    const created = box(0n);
    expect(cu.cuCtxCreate(created, 0, 0)).toBe(0);
    expect(cu.cuCtxDestroy(primary)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuCtxDestroy(created.value)).toBe(0);
    expect(current(cu)).toBe(primary);
    expect(cu.cuStreamDestroy(s.value)).toBe(0);
    expect(cu.cuMemFree(p.value)).toBe(0);
    cu.dispose();
  });
});

describe('cuDevicePrimaryCtxReset and cuDevicePrimaryCtxGetState', () => {
  it('reset releases the primary context’s cuMemAlloc memory, streams, events and host memory through core; VMM memory stays', () => {
    const cu = cudaWithContext();
    const primary = current(cu);
    const before = freeBytes(cu);
    const p = box(0n);
    expect(cu.cuMemAlloc(p, 8 * G)).toBe(0);
    const s = box(0n);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    expect(cu.cuMemsetD8Async(p.value, 7, G, s.value)).toBe(0);
    const e = box(0n);
    expect(cu.cuEventCreate(e, 0)).toBe(0);
    expect(cu.cuEventRecord(e.value, s.value)).toBe(0);
    const host = box<Uint8Array | null>(null);
    expect(cu.cuMemHostAlloc(host, 4096, 0)).toBe(0);
    expect(cu.cuMemHostGetFlags(box(-1), host.value!)).toBe(0);
    const va = box(0n);
    const h = box(0n);
    expect(cu.cuMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
    expect(cu.cuMemCreate(h, G, DEVICE_PROP, 0)).toBe(0);
    expect(cu.cuMemMap(va.value, G, 0, h.value, 0)).toBe(0);
    expect(cu.cuMemSetAccess(va.value, G, RW0, 1)).toBe(0);
    const data = Uint8Array.from({ length: 256 }, (_, i) => (i * 13) & 255);
    expect(cu.cuMemcpyHtoD(va.value, data, data.length)).toBe(0);
    const held = freeBytes(cu);
    expect(cu.runtime.stats().streams).toBe(1);

    expect(cu.cuDevicePrimaryCtxReset(0)).toBe(0);
    // The cuMemAlloc memory and the stream are core's no more; the VMM mapping is.
    const stats = cu.runtime.stats();
    expect(stats.streams).toBe(0);
    expect(stats.mappings).toBe(1);
    expect(stats.handles).toBe(1);
    expect(cu.runtime.describe().reservations.map((r) => r.origin)).toEqual(['vmm']);

    expect(retainAgain(cu)).toBe(primary);
    expect(freeBytes(cu)).toBe(held + 8 * G);
    expect(freeBytes(cu)).toBe(before - G);
    expect(cu.cuMemFree(p.value)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuStreamDestroy(s.value)).toBe(C.CUDA_ERROR_INVALID_HANDLE);
    // An event that went with its context (primaryDestroy.resetOldEventQuery).
    expect(cu.cuEventQuery(e.value)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuEventDestroy(e.value)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuMemHostGetFlags(box(-1), host.value!)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemFreeHost(host.value!)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    const back = new Uint8Array(data.length);
    expect(cu.cuMemcpyDtoH(back, va.value, back.length)).toBe(0);
    expect(back).toEqual(data);
    expect(cu.cuMemUnmap(va.value, G)).toBe(0);
    expect(cu.cuMemRelease(h.value)).toBe(0);
    expect(cu.cuMemAddressFree(va.value, G)).toBe(0);
    expect(freeBytes(cu)).toBe(before);
    cu.dispose();
  });

  it('after a reset the context is inactive and still current, answering 709 until a retain; the retain count stays', () => {
    const cu = cudaWithContext();
    const primary = current(cu);
    expect(state(cu)).toEqual({ flags: 0, active: 1 });
    expect(cu.cuDevicePrimaryCtxReset(0)).toBe(0);
    expect(state(cu)).toEqual({ flags: 0, active: 0 });
    expect(current(cu)).toBe(primary);
    expect(cu.cuCtxSynchronize()).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    expect(cu.cuMemGetInfo(box(0), box(0))).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    expect(cu.cuMemAlloc(box(0n), G)).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    // It still names its device (primaryDestroy.resetReleases).
    const dev = box(-1);
    expect(cu.cuCtxGetDevice(dev)).toBe(0);
    expect(dev.value).toBe(0);
    expect(cu.cuCtxSetCurrent(0n)).toBe(0);
    expect(cu.cuCtxSynchronize()).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuCtxSetCurrent(primary)).toBe(0);
    expect(cu.cuCtxSynchronize()).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    // CUDA 13.0's form naming it answers the same (Note [Context-taking calls of CUDA 13.0]).
    expect(cu.cuCtxSynchronize_v2(primary)).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    // A retain makes it anew, with the same handle, live where it is current.
    const b = box(0n);
    expect(cu.cuDevicePrimaryCtxRetain(b, 0)).toBe(0);
    expect(b.value).toBe(primary);
    expect(cu.cuCtxSynchronize()).toBe(0);
    expect(state(cu)).toEqual({ flags: 0, active: 1 });
    // Two retains now (the helper's and this one): the reset kept the first.
    expect(cu.cuDevicePrimaryCtxRelease(0)).toBe(0);
    expect(cu.cuDevicePrimaryCtxRelease(0)).toBe(0);
    expect(state(cu)).toEqual({ flags: 0, active: 0 });
    expect(cu.cuDevicePrimaryCtxRelease(0)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    cu.dispose();
  });

  it('the last release destroys it as a reset does: its memory goes, and with it current calls answer 709', () => {
    const cu = cudaWithContext();
    const primary = current(cu);
    const p = box(0n);
    expect(cu.cuMemAlloc(p, G)).toBe(0);
    const s = box(0n);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    expect(cu.cuDevicePrimaryCtxRelease(0)).toBe(0);
    expect(cu.runtime.describe().reservations).toEqual([]);
    expect(cu.runtime.stats().streams).toBe(0);
    expect(current(cu)).toBe(primary);
    expect(cu.cuCtxSynchronize()).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    // Released, its handle is no context to make current.
    expect(cu.cuCtxSetCurrent(primary)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(retainAgain(cu)).toBe(primary);
    expect(cu.cuCtxSynchronize()).toBe(0);
    expect(cu.cuMemFree(p.value)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
  });

  it('another device’s primary context stays as it was, and a created context’s memory is its own', () => {
    const cu = cudaWithContext({ devices: ['H200', 'H200'] });
    const other = box(0n);
    expect(cu.cuDevicePrimaryCtxRetain(other, 1)).toBe(0);
    expect(cu.cuCtxSetCurrent(other.value)).toBe(0);
    const p = box(0n);
    expect(cu.cuMemAlloc(p, G)).toBe(0);
    const created = box(0n);
    expect(cu.cuCtxCreate(created, 0, 0)).toBe(0);
    const q = box(0n);
    expect(cu.cuMemAlloc(q, G)).toBe(0);
    expect(cu.cuDevicePrimaryCtxReset(0)).toBe(0);
    expect(cu.cuDevicePrimaryCtxReset(1)).toBe(0);
    expect(current(cu)).toBe(created.value);
    expect(cu.cuCtxSynchronize()).toBe(0);
    expect(state(cu, 1)).toEqual({ flags: 0, active: 0 });
    expect(cu.cuMemFree(p.value)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemFree(q.value)).toBe(0);
    expect(cu.cuCtxDestroy(created.value)).toBe(0);
    // Popped to device 1's reset primary context: destroyed until retained.
    expect(current(cu)).toBe(other.value);
    expect(cu.cuCtxSynchronize()).toBe(C.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cu.dispose();
  });

  it('answers the driver’s codes for a bad device, NULL boxes and before cuInit', () => {
    const cu = cudaWithContext();
    expect(cu.cuDevicePrimaryCtxGetState(7, box(0), box(0))).toBe(C.CUDA_ERROR_INVALID_DEVICE);
    expect(cu.cuDevicePrimaryCtxGetState(0, null as never, box(0))).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuDevicePrimaryCtxGetState(0, box(0), null as never)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuDevicePrimaryCtxReset(-1)).toBe(C.CUDA_ERROR_INVALID_DEVICE);
    cu.dispose();
    const fresh = createCuda();
    expect(fresh.cuDevicePrimaryCtxGetState(0, box(0), box(0))).toBe(C.CUDA_ERROR_NOT_INITIALIZED);
    expect(fresh.cuDevicePrimaryCtxReset(0)).toBe(C.CUDA_ERROR_NOT_INITIALIZED);
    fresh.dispose();
  });
});

describe('cuStreamQuery', () => {
  it('answers for a live stream, INVALID_HANDLE for a destroyed one, and creates nothing', () => {
    const cu = cudaWithContext();
    const s = box(0n);
    const p = box(0n);
    expect(cu.cuMemAlloc(p, G)).toBe(0);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    expect(cu.cuMemsetD8Async(p.value, 1, G, s.value)).toBe(0);
    const events = cu.runtime.eventCount;
    const queued = cu.cuStreamQuery(s.value);
    expect([C.CUDA_SUCCESS, C.CUDA_ERROR_NOT_READY]).toContain(queued);
    expect(cu.runtime.eventCount).toBe(events);
    expect(cu.cuStreamSynchronize(s.value)).toBe(0);
    expect(cu.cuStreamQuery(s.value)).toBe(0);
    expect(cu.cuStreamQuery(0n)).toBe(0);
    expect(cu.cuStreamDestroy(s.value)).toBe(0);
    expect(cu.cuStreamQuery(s.value)).toBe(C.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuMemFree(p.value)).toBe(0);
    cu.dispose();
  });
});
