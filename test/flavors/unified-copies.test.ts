/**
 * The calls of issue 17, item 1's second bullet: cuMemcpy / cuMemcpyAsync
 * (the direction from the operands), cuMemHostAlloc's flags and
 * cuMemHostGetFlags, and HIP's hipHostGetFlags beside hipMemcpyDefault.
 */
import { describe, expect, it } from 'vitest';
import { createHip } from '../../src/entry/processes.js';
import * as C from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';
import { cudaWithContext as cuda } from './cuda/helpers.js';

const G = 2 * 1024 * 1024;
const box = <T>(value: T) => ({ value });

describe('cuMemcpy and cuMemcpyAsync: the direction from the operands', () => {
  it('host to device, device to device, device to host and host to host', () => {
    const cu = cuda();
    const a = box(0n);
    const b = box(0n);
    expect(cu.cuMemAlloc(a, G)).toBe(0);
    expect(cu.cuMemAlloc(b, G)).toBe(0);
    const data = Uint8Array.from({ length: 256 }, (_, i) => (i * 13) & 0xff);
    expect(cu.cuMemcpy(a.value, data, 256)).toBe(0);
    expect(cu.cuMemcpy(b.value, a.value, 256)).toBe(0);
    const back = new Uint8Array(256);
    expect(cu.cuMemcpy(back, b.value, 256)).toBe(0);
    expect(back).toEqual(data);
    const copy = new Uint8Array(256);
    expect(cu.cuMemcpy(copy, back, 256)).toBe(0);
    expect(copy).toEqual(data);
    // Past a host buffer's end, or a count that is no size: refused, nothing written.
    expect(cu.cuMemcpy(new Uint8Array(8), b.value, 16)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemcpy(copy, new Uint8Array(8), 16)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemcpy(a.value, b.value, -1)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
  });

  it('on a stream, in the stream’s order; a host-to-host copy after the stream’s earlier work', () => {
    const cu = cuda();
    const a = box(0n);
    const s = box(0n);
    expect(cu.cuMemAlloc(a, G)).toBe(0);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    const staged = new Uint8Array(64);
    expect(cu.cuMemsetD8Async(a.value, 0x33, 64, s.value)).toBe(0);
    expect(cu.cuMemcpyAsync(staged, a.value, 64, s.value)).toBe(0);
    const out = new Uint8Array(64);
    expect(cu.cuMemcpyAsync(out, staged, 64, s.value)).toBe(0);
    expect(cu.cuStreamSynchronize(s.value)).toBe(0);
    expect([staged[0], out[63]]).toEqual([0x33, 0x33]);
    expect(cu.cuMemcpyAsync(out, staged, 64, 0x5_9999n)).toBe(C.CUDA_ERROR_INVALID_HANDLE);
    cu.dispose();
  });
});

describe('host buffers with flags', () => {
  it('cuMemHostAlloc takes PORTABLE, DEVICEMAP and WRITECOMBINED, and cuMemHostGetFlags answers them', () => {
    const cu = cuda();
    const flags = C.CU_MEMHOSTALLOC_PORTABLE | C.CU_MEMHOSTALLOC_DEVICEMAP | C.CU_MEMHOSTALLOC_WRITECOMBINED;
    const p = box<Uint8Array | null>(null);
    expect(cu.cuMemHostAlloc(p, 4096, flags)).toBe(0);
    expect(p.value?.length).toBe(4096);
    const seen = box(-1);
    expect(cu.cuMemHostGetFlags(seen, p.value!)).toBe(0);
    expect(seen.value).toBe(flags);
    const plain = box<Uint8Array | null>(null);
    expect(cu.cuMemAllocHost(plain, 64)).toBe(0);
    expect(cu.cuMemHostGetFlags(seen, plain.value!)).toBe(0);
    // DEVICEMAP always, as the H200 answers (host.hostAllocFlags): every page-locked buffer is mapped.
    expect(seen.value).toBe(C.CU_MEMHOSTALLOC_DEVICEMAP);
    // An unknown bit, pageable memory, a freed buffer: CUDA_ERROR_INVALID_VALUE.
    expect(cu.cuMemHostAlloc(box(null), 64, 8)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemHostGetFlags(seen, new Uint8Array(64))).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemFreeHost(p.value!)).toBe(0);
    expect(cu.cuMemHostGetFlags(seen, p.value!)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemHostGetFlags(null as never, plain.value!)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    // A cuMemHostAlloc buffer is a host side of the copies like any other.
    const d = box(0n);
    expect(cu.cuMemAlloc(d, G)).toBe(0);
    expect(cu.cuMemcpy(d.value, plain.value!.fill(9), 64)).toBe(0);
    cu.dispose();
  });

  it('hipHostGetFlags answers hipHostMalloc’s flags; hipMemcpyDefault reads the direction', () => {
    const hip = createHip();
    expect(hip.hipSetDevice(0)).toBe(0);
    const p = box<Uint8Array | null>(null);
    expect(hip.hipHostMalloc(p, 64, H.hipHostMallocMapped | H.hipHostMallocPortable)).toBe(0);
    const seen = box(-1);
    expect(hip.hipHostGetFlags(seen, p.value!)).toBe(0);
    expect(seen.value).toBe(H.hipHostMallocMapped | H.hipHostMallocPortable);
    expect(hip.hipHostGetFlags(seen, new Uint8Array(4))).toBe(H.hipErrorInvalidValue);
    const d = box(0n);
    expect(hip.hipMalloc(d, G)).toBe(0);
    expect(hip.hipMemcpy(d.value, p.value!.fill(5), 64, H.hipMemcpyDefault)).toBe(0);
    const back = new Uint8Array(64);
    expect(hip.hipMemcpy(back, d.value, 64, H.hipMemcpyDefault)).toBe(0);
    expect(back[63]).toBe(5);
    expect(hip.hipHostFree(p.value)).toBe(0);
    expect(hip.hipHostGetFlags(seen, p.value!)).toBe(H.hipErrorInvalidValue);
    hip.dispose();
  });
});
