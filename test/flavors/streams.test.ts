/**
 * Issue 10: the special stream handles are streams wherever a stream is
 * taken (Note [Special streams], src/flavors/common/streams.ts), and stream and context handles
 * may be passed as numbers, as their types say.
 */
import { describe, expect, it } from 'vitest';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;

function cudaWithMemory() {
  const cu = createCuda();
  const b = { value: 0n };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  const ctx = b.value;
  cu.cuCtxSetCurrent(ctx);
  cu.cuMemAlloc(b, G);
  return { cu, ctx, p: b.value };
}

describe('CUDA: CU_STREAM_LEGACY and CU_STREAM_PER_THREAD', () => {
  for (const [name, s] of [
    ['CU_STREAM_LEGACY', CU.CU_STREAM_LEGACY],
    ['CU_STREAM_PER_THREAD', CU.CU_STREAM_PER_THREAD],
    ['CU_STREAM_LEGACY as a number', 1],
    ['CU_STREAM_PER_THREAD as a number', 2],
  ] as const) {
    it(`${name} is accepted by every call that takes a stream, in order with the default stream`, () => {
      const { cu, p } = cudaWithMemory();
      const src = new Uint8Array(64).map((_, i) => i + 1);
      expect(cu.cuMemcpyHtoDAsync(p, src, 64, s)).toBe(0);
      expect(cu.cuMemcpyDtoDAsync(p + 64n, p, 64, s)).toBe(0);
      expect(cu.cuMemsetD8Async(p + 128n, 9, 16, s)).toBe(0);
      const back = new Uint8Array(64);
      expect(cu.cuMemcpyDtoHAsync(back, p + 64n, 64, s)).toBe(0);
      expect(cu.cuStreamSynchronize(s)).toBe(0);
      expect([...back]).toEqual([...src]);
      const set = new Uint8Array(16);
      expect(cu.cuMemcpyDtoH(set, p + 128n, 16)).toBe(0);
      expect([...set]).toEqual(new Array(16).fill(9));
      // Like the NULL stream, a special stream cannot be destroyed.
      expect(cu.cuStreamDestroy(s)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
      // A client that synchronises the legacy stream at every free.
      expect(cu.cuMemFree(p)).toBe(0);
      expect(cu.cuStreamSynchronize(s)).toBe(0);
      cu.dispose();
    });
  }

  it('created streams and contexts are accepted as numbers; other handles stay refused', () => {
    const { cu, ctx, p } = cudaWithMemory();
    const b = { value: 0n };
    expect(cu.cuStreamCreate(b, 0)).toBe(0);
    const n = Number(b.value);
    expect(cu.cuMemsetD8Async(p, 1, 16, n)).toBe(0);
    expect(cu.cuStreamSynchronize(n)).toBe(0);
    expect(cu.cuStreamDestroy(n)).toBe(0);
    expect(cu.cuStreamSynchronize(n)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuStreamSynchronize(3)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuCtxSetCurrent(0)).toBe(0);
    expect(cu.cuCtxSetCurrent(Number(ctx))).toBe(0);
    const current = { value: 0n };
    expect(cu.cuCtxGetCurrent(current)).toBe(0);
    expect(current.value).toBe(ctx);
    expect(cu.cuCtxSetCurrent(Number(ctx) + 7)).toBe(CU.CUDA_ERROR_INVALID_CONTEXT);
    cu.dispose();
  });
});

describe('HIP: hipStreamPerThread', () => {
  for (const s of [H.hipStreamPerThread, 2] as const) {
    it(`${typeof s} ${s} is accepted wherever a stream is taken`, () => {
      const hip = createHip();
      const b = { value: 0n };
      expect(hip.hipMalloc(b, G)).toBe(0);
      const p = b.value;
      const src = new Uint8Array(32).fill(4);
      expect(hip.hipMemcpyAsync(p, src, 32, H.hipMemcpyHostToDevice, s)).toBe(0);
      expect(hip.hipMemsetAsync(p + 32n, 5, 32, s)).toBe(0);
      const back = new Uint8Array(64);
      expect(hip.hipMemcpyAsync(back, p, 64, H.hipMemcpyDeviceToHost, s)).toBe(0);
      expect(hip.hipStreamSynchronize(s)).toBe(0);
      expect([...back]).toEqual([...new Array(32).fill(4), ...new Array(32).fill(5)]);
      expect(hip.hipStreamDestroy(s)).toBe(H.hipErrorInvalidHandle);
      expect(hip.hipStreamCreate(b)).toBe(0);
      expect(hip.hipStreamSynchronize(Number(b.value))).toBe(0);
      expect(hip.hipStreamDestroy(Number(b.value))).toBe(0);
      hip.dispose();
    });
  }
  it('a handle that names no stream is refused', () => {
    const hip = createHip();
    expect(hip.hipStreamSynchronize(1n)).toBe(H.hipErrorInvalidHandle);
    expect(hip.hipStreamSynchronize(3)).toBe(H.hipErrorInvalidHandle);
    hip.dispose();
  });
});

describe("ACL: the default stream's forms", () => {
  for (const s of [null, undefined, 0, 0n] as const) {
    it(`${String(s)} is the default stream for copies and synchronisation`, () => {
      const acl = createAcl();
      acl.aclInit(null);
      acl.aclrtSetDevice(0);
      const b = { value: 0n };
      expect(acl.aclrtMalloc(b, G, 0)).toBe(0);
      const p = b.value;
      expect(
        acl.aclrtMemcpyAsync(p, 16, new Uint8Array(16).fill(6), 16, A.ACL_MEMCPY_HOST_TO_DEVICE, s),
      ).toBe(0);
      const back = new Uint8Array(16);
      expect(acl.aclrtMemcpyAsync(back, 16, p, 16, A.ACL_MEMCPY_DEVICE_TO_HOST, s)).toBe(0);
      expect(acl.aclrtSynchronizeStream(s)).toBe(0);
      expect([...back]).toEqual(new Array(16).fill(6));
      expect(acl.aclrtDestroyStream(s)).toBe(A.ACL_ERROR_INVALID_PARAM);
      acl.dispose();
    });
  }
});

/** A CUDA flavor with device 0's primary context current and 2 MiB of read-write VMM memory at `p`. */
function cudaWithVmm() {
  const cu = createCuda();
  const b = { value: 0n };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  cu.cuCtxSetCurrent(b.value);
  cu.cuMemAddressReserve(b, G, 0, 0, 0);
  const p = b.value;
  cu.cuMemCreate(b, G, { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } }, 0);
  cu.cuMemMap(p, G, 0, b.value, 0);
  cu.cuMemSetAccess(p, G, [{ location: { type: 1, id: 0 }, flags: 3 }], 1);
  return { cu, p };
}

/**
 * A new stream with a 64-byte set of `value` at `p` queued on it, then `p`'s
 * access taken down to `flags` (0 or read-only), so the set fails when it runs.
 */
function queueFailingSet(cu: ReturnType<typeof createCuda>, p: bigint, value: number, flags: number): bigint {
  const s = { value: 0n };
  expect(cu.cuStreamCreate(s, 0)).toBe(0);
  expect(cu.cuMemsetD8Async(p, value, 64, s.value)).toBe(0);
  expect(cu.cuMemSetAccess(p, G, [{ location: { type: 1, id: 0 }, flags }], 1)).toBe(0);
  return s.value;
}

describe('destroying a stream whose queued work fails', () => {
  it('CUDA: the stream goes and the destroy succeeds; nothing else changes', () => {
    const { cu, p } = cudaWithVmm();
    // No access left for the queued set: it fails when the stream runs it.
    const s = queueFailingSet(cu, p, 1, 0);
    const streams = cu.runtime.stats().streams;
    expect(streams).toBe(1);
    const before = JSON.stringify(cu.runtime.describe());
    const code = cu.cuStreamDestroy(s);
    expect(JSON.stringify(cu.runtime.describe())).toBe(before);
    expect(code).toBe(0);
    expect(cu.runtime.stats().streams).toBe(0);
    expect(cu.cuStreamSynchronize(s)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    cu.dispose();
  });
});

describe('a synchronous call after queued work that fails when it runs', () => {
  it('CUDA: answers that failure without doing its own work, and the device stays faulted', () => {
    // As the H200 answers (Note [Faulted devices]): 719 here and to every later call of the device's contexts.
    const { cu, p } = cudaWithVmm();
    // Read-only now: the queued set fails when it runs.
    const s = queueFailingSet(cu, p, 7, 1);
    // A synchronous read runs every stream's queued work first (the legacy default stream), answers the
    // set's failure and reads nothing.
    const back = new Uint8Array(64).fill(0xaa);
    expect(cu.cuMemcpyDtoH(back, p, 64)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    expect([...back]).toEqual(new Array(64).fill(0xaa));
    // Not once: every later call that uses the context answers it, and does nothing.
    expect(cu.cuMemcpyDtoH(back, p, 64)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    expect([...back]).toEqual(new Array(64).fill(0xaa));
    expect(cu.cuStreamSynchronize(s)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuMemAlloc({ value: 0n }, 1 << 20)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    const before = cu.runtime.stats();
    expect(cu.cuStreamDestroy(s)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.runtime.stats()).toEqual(before);
    // The VMM calls use no context: they still answer, and the set never landed.
    expect(cu.cuMemSetAccess(p, G, [{ location: { type: 1, id: 0 }, flags: 3 }], 1)).toBe(0);
    expect(cu.cuMemGetAccess({ value: 0 }, { type: 1, id: 0 }, p)).toBe(0);
    // Nothing ends it: not a reset, after which the context cannot be made anew.
    expect(cu.cuDevicePrimaryCtxReset(0)).toBe(0);
    expect(cu.cuDevicePrimaryCtxRetain({ value: 0n }, 0)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuCtxCreate({ value: 0n }, 0, 0)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    cu.dispose();
  });
});

describe('an unmap after queued work that faults when it runs', () => {
  it("CUDA: answers 0 and unmaps, as the H200 does; the fault is the device's from then on", () => {
    const { cu, p } = cudaWithVmm();
    // No access left for the queued set: core's unmap finishes it first, and it faults.
    queueFailingSet(cu, p, 7, 0);
    expect(cu.cuMemUnmap(p, G)).toBe(0);
    expect(cu.runtime.mappingAt(Number(p))).toBeUndefined();
    expect(cu.cuCtxSynchronize()).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    cu.dispose();
  });
});

describe("a host-side copy on a created stream after another stream's failed work", () => {
  it("CUDA: runs after its own stream's work only, and leaves the other stream's fault to that stream", () => {
    const { cu, p } = cudaWithVmm();
    const faulting = queueFailingSet(cu, p, 7, 1);
    const other = { value: 0n };
    cu.cuStreamCreate(other, 0);
    // Page-locked host memory through its device pointer (Note [Host device pointers]): a host-side copy.
    const host = { value: null as Uint8Array | null };
    expect(cu.cuMemHostAlloc(host, 64, 0)).toBe(0);
    const d = { value: 0n };
    expect(cu.cuMemHostGetDevicePointer(d, host.value as Uint8Array, 0)).toBe(0);
    expect(cu.cuMemcpyHtoDAsync(d.value, Uint8Array.of(5), 1, other.value)).toBe(0);
    expect(host.value?.[0]).toBe(5);
    expect(cu.cuStreamSynchronize(faulting)).toBe(CU.CUDA_ERROR_LAUNCH_FAILED);
    cu.dispose();
  });
});

describe('aclrtResetDevice with a stream whose queued work fails', () => {
  it("destroys every one of the device's streams and succeeds", () => {
    const acl = createAcl();
    acl.aclInit(null);
    acl.aclrtSetDevice(0);
    const b = { value: 0n };
    acl.aclrtReserveMemAddress(b, G, 0, 0, 0);
    const p = b.value;
    const prop = {
      handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: A.ACL_HBM_MEM_HUGE,
      location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    acl.aclrtMallocPhysical(b, G, prop, 0);
    acl.aclrtMapMem(p, G, 0, b.value, 0);
    const rw = [{ location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 }, flags: 3 }];
    expect(acl.aclrtMemSetAccess(p, G, rw, 1)).toBe(0);
    const streams = [{ value: 0n }, { value: 0n }, { value: 0n }];
    for (const s of streams) expect(acl.aclrtCreateStream(s)).toBe(0);
    // The first stream's set fails when it runs: its access is gone by then.
    expect(acl.aclrtMemsetAsync(p, 16, 1, 16, streams[0]?.value ?? 0n)).toBe(0);
    // ACL documents READWRITE as the only access flag, so the revoke goes through core.
    acl.runtime.setAccess(Number(p), G, [{ device: 0, access: 0 }]);
    expect(acl.runtime.stats().streams).toBe(3);
    expect(acl.aclrtResetDevice(0)).toBe(0);
    expect(acl.runtime.stats().streams).toBe(0);
    acl.dispose();
  });
});
