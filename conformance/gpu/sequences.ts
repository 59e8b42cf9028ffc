/**
 * Short, fixed call sequences through the HIP, ACL and CUDA flavours, each
 * recording every call's code and what the bytes read back. The proof script
 * (prove.ts) runs them over the real CUDA backend and over the simulator and
 * compares; the tests run them on the simulator.
 */
import { closeSync } from 'node:fs';
import type { AclFlavor } from '../../src/flavors/acl/acl.js';
import * as A from '../../src/flavors/acl/constants.js';
import type { CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import * as H from '../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../src/flavors/hip/hip.js';

export interface SeqStep {
  op: string;
  code: number;
  value?: string | number | boolean;
}
export interface SeqResult {
  steps: SeqStep[];
  /** Every call gave the code the sequence expects (0 unless stated) and every read matched. */
  pass: boolean;
  threw?: string;
}

type Flavor = {
  machine?: { process(ref: { pid: number }): { closeFd(fd: number): void } } | undefined;
  pid: number;
};

/** close(2) on a real descriptor, or the simulated process's close. */
export function closeFdOf(f: Flavor, fd: number): void {
  if (f.machine) f.machine.process(f).closeFd(fd);
  else closeSync(fd);
}

export function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + seed * 17 + 7) & 255;
  return b;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return (
    Buffer.compare(
      Buffer.from(a.buffer, a.byteOffset, a.length),
      Buffer.from(b.buffer, b.byteOffset, b.length),
    ) === 0
  );
}

class Recorder {
  readonly steps: SeqStep[] = [];
  pass = true;
  call(op: string, code: number, expect = 0): number {
    this.steps.push({ op, code });
    if (code !== expect) this.pass = false;
    return code;
  }
  check(op: string, ok: boolean): void {
    this.steps.push({ op, code: 0, value: ok });
    if (!ok) this.pass = false;
  }
  result(): SeqResult {
    return { steps: this.steps, pass: this.pass };
  }
}

function guard(run: (r: Recorder) => void): SeqResult {
  const r = new Recorder();
  try {
    run(r);
    return r.result();
  } catch (e) {
    return { steps: r.steps, pass: false, threw: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
}

/** HIP: reserve two chunks, create, map, grant, copy in and out, grow in place, copy across, share by fd, undo. */
export function hipSequence(hip: HipFlavor): SeqResult {
  return guard((r) => {
    r.call('hipInit', hip.hipInit(0));
    const count = { value: 0 };
    r.call('hipGetDeviceCount', hip.hipGetDeviceCount(count));
    r.call('hipSetDevice', hip.hipSetDevice(0));
    const prop = {
      type: H.hipMemAllocationTypePinned,
      requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor,
      location: { type: H.hipMemLocationTypeDevice, id: 0 },
    };
    const gran = { value: 0 };
    r.call('hipMemGetAllocationGranularity', hip.hipMemGetAllocationGranularity(gran, prop, 1));
    const g = gran.value;
    const ptr = { value: 0n };
    r.call('hipMemAddressReserve', hip.hipMemAddressReserve(ptr, 2 * g, 0, null, 0));
    const h1 = { value: 0n };
    const h2 = { value: 0n };
    r.call('hipMemCreate', hip.hipMemCreate(h1, g, prop, 0));
    r.call('hipMemMap', hip.hipMemMap(ptr.value, g, 0, h1.value, 0));
    const rw = [
      { location: { type: H.hipMemLocationTypeDevice, id: 0 }, flags: H.hipMemAccessFlagsProtReadWrite },
    ];
    r.call('hipMemSetAccess', hip.hipMemSetAccess(ptr.value, g, rw, 1));
    const data = bytes(g, 1);
    r.call('hipMemcpy HtoD', hip.hipMemcpy(ptr.value, data, g, H.hipMemcpyHostToDevice));
    const back = new Uint8Array(g);
    r.call('hipMemcpy DtoH', hip.hipMemcpy(back, ptr.value, g, H.hipMemcpyDeviceToHost));
    r.check('bytes read back', same(back, data));
    // Grow in place: a second chunk right after the first, same pointer.
    r.call('hipMemCreate (grow)', hip.hipMemCreate(h2, g, prop, 0));
    const second = ptr.value + BigInt(g);
    r.call('hipMemMap (grow)', hip.hipMemMap(second, g, 0, h2.value, 0));
    r.call('hipMemSetAccess (grow)', hip.hipMemSetAccess(second, g, rw, 1));
    const half = BigInt(g / 2);
    r.call(
      'hipMemcpy DtoD across chunks',
      hip.hipMemcpy(ptr.value + half + BigInt(g / 4), ptr.value, g, H.hipMemcpyDeviceToDevice),
    );
    const across = new Uint8Array(g);
    r.call(
      'hipMemcpy DtoH across chunks',
      hip.hipMemcpy(across, ptr.value + half + BigInt(g / 4), g, H.hipMemcpyDeviceToHost),
    );
    r.check('bytes across the chunk boundary', same(across, data));
    r.call('hipMemset', hip.hipMemset(ptr.value + BigInt(g - 16), 0x5a, 32));
    const mid = new Uint8Array(32);
    r.call(
      'hipMemcpy DtoH boundary',
      hip.hipMemcpy(mid, ptr.value + BigInt(g - 16), 32, H.hipMemcpyDeviceToHost),
    );
    r.check(
      'memset across the boundary',
      mid.every((b) => b === 0x5a),
    );
    // Share the first chunk by fd and map the import at a second range.
    const fd = { value: -1 };
    r.call(
      'hipMemExportToShareableHandle',
      hip.hipMemExportToShareableHandle(fd, h1.value, H.hipMemHandleTypePosixFileDescriptor, 0),
    );
    const imported = { value: 0n };
    r.call(
      'hipMemImportFromShareableHandle',
      hip.hipMemImportFromShareableHandle(imported, BigInt(fd.value), H.hipMemHandleTypePosixFileDescriptor),
    );
    closeFdOf(hip as unknown as Flavor, fd.value);
    const other = { value: 0n };
    r.call('hipMemAddressReserve (import)', hip.hipMemAddressReserve(other, g, 0, null, 0));
    r.call('hipMemMap (import)', hip.hipMemMap(other.value, g, 0, imported.value, 0));
    r.call('hipMemSetAccess (import)', hip.hipMemSetAccess(other.value, g, rw, 1));
    const viaImport = new Uint8Array(64);
    r.call(
      'hipMemcpy DtoH (import)',
      hip.hipMemcpy(viaImport, other.value + 64n, 64, H.hipMemcpyDeviceToHost),
    );
    r.check('imported memory shows the same bytes', same(viaImport, data.subarray(64, 128)));
    const stream = { value: 0n };
    r.call('hipStreamCreate', hip.hipStreamCreate(stream));
    const small = bytes(4096, 9);
    r.call(
      'hipMemcpyAsync HtoD',
      hip.hipMemcpyAsync(other.value, small, 4096, H.hipMemcpyHostToDevice, stream.value),
    );
    const smallBack = new Uint8Array(4096);
    r.call(
      'hipMemcpyAsync DtoH',
      hip.hipMemcpyAsync(smallBack, ptr.value, 4096, H.hipMemcpyDeviceToHost, stream.value),
    );
    r.call('hipStreamSynchronize', hip.hipStreamSynchronize(stream.value));
    r.check('stream copies in order through the alias', same(smallBack, small));
    r.call('hipStreamDestroy', hip.hipStreamDestroy(stream.value));
    r.call('hipMemUnmap (import)', hip.hipMemUnmap(other.value, g));
    r.call('hipMemRelease (import)', hip.hipMemRelease(imported.value));
    r.call('hipMemAddressFree (import)', hip.hipMemAddressFree(other.value, g));
    r.call('hipMemUnmap (both chunks)', hip.hipMemUnmap(ptr.value, 2 * g));
    r.call('hipMemRelease', hip.hipMemRelease(h1.value));
    r.call('hipMemRelease (grow)', hip.hipMemRelease(h2.value));
    r.call('hipMemAddressFree', hip.hipMemAddressFree(ptr.value, 2 * g));
    r.call(
      'hipMemAddressFree again (unknown pointer)',
      hip.hipMemAddressFree(ptr.value, 2 * g),
      H.hipErrorInvalidValue,
    );
  });
}

/** ACL: seed 2's seven steps with a task in the middle, plus a stream copy and a refused same-process import. */
export function aclSequence(acl: AclFlavor): SeqResult {
  return guard((r) => {
    r.call('aclInit', acl.aclInit(null));
    r.call('aclrtSetDevice', acl.aclrtSetDevice(0));
    const prop = {
      handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: A.ACL_HBM_MEM_HUGE,
      location: { id: 0, type: A.ACL_MEM_LOCATION_TYPE_DEVICE },
      reserve: 0,
    };
    const gran = { value: 0 };
    r.call(
      'aclrtMemGetAllocationGranularity',
      acl.aclrtMemGetAllocationGranularity(prop, A.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, gran),
    );
    const size = 2 * gran.value;
    const va = { value: 0n };
    r.call('1. aclrtReserveMemAddress', acl.aclrtReserveMemAddress(va, size, 0, null, 0));
    const h = { value: 0n };
    r.call('2. aclrtMallocPhysical', acl.aclrtMallocPhysical(h, size, prop, 0));
    r.call('3. aclrtMapMem', acl.aclrtMapMem(va.value, size, 0, h.value, 0));
    const rw = [
      {
        flags: A.ACL_RT_MEM_ACCESS_FLAGS_READWRITE,
        location: { id: 0, type: A.ACL_MEM_LOCATION_TYPE_DEVICE },
      },
    ];
    r.call('aclrtMemSetAccess', acl.aclrtMemSetAccess(va.value, size, rw, 1));
    const data = bytes(1 << 20, 3);
    r.call(
      '4. aclrtMemcpy HtoD',
      acl.aclrtMemcpy(va.value, size, data, data.length, A.ACL_MEMCPY_HOST_TO_DEVICE),
    );
    r.call(
      '4. aclrtMemcpy DtoD',
      acl.aclrtMemcpy(
        va.value + BigInt(size / 2),
        size / 2,
        va.value,
        data.length,
        A.ACL_MEMCPY_DEVICE_TO_DEVICE,
      ),
    );
    const back = new Uint8Array(data.length);
    r.call(
      '4. aclrtMemcpy DtoH',
      acl.aclrtMemcpy(
        back,
        back.length,
        va.value + BigInt(size / 2),
        back.length,
        A.ACL_MEMCPY_DEVICE_TO_HOST,
      ),
    );
    r.check('bytes read back', same(back, data));
    r.call('4. aclrtMemset', acl.aclrtMemset(va.value, size, 0x11, 4096));
    const stream = { value: 0n };
    r.call('aclrtCreateStream', acl.aclrtCreateStream(stream));
    const four = new Uint8Array(4096);
    r.call(
      'aclrtMemcpyAsync DtoH',
      acl.aclrtMemcpyAsync(four, 4096, va.value, 4096, A.ACL_MEMCPY_DEVICE_TO_HOST, stream.value),
    );
    r.call('aclrtSynchronizeStream', acl.aclrtSynchronizeStream(stream.value));
    r.check(
      'memset seen through the stream',
      four.every((b) => b === 0x11),
    );
    r.call('aclrtDestroyStream', acl.aclrtDestroyStream(stream.value));
    const flags = { value: -1 };
    r.call(
      'aclrtMemGetAccess',
      acl.aclrtMemGetAccess(va.value, { id: 0, type: A.ACL_MEM_LOCATION_TYPE_DEVICE }, flags),
    );
    r.check('access reads back READWRITE', flags.value === A.ACL_RT_MEM_ACCESS_FLAGS_READWRITE);
    r.call('5. aclrtUnmapMem', acl.aclrtUnmapMem(va.value));
    r.call('6. aclrtFreePhysical', acl.aclrtFreePhysical(h.value));
    r.call('7. aclrtReleaseMemAddress', acl.aclrtReleaseMemAddress(va.value));
    const m = { value: 0n };
    r.call('aclrtMalloc', acl.aclrtMalloc(m, 1000, 0));
    r.call('aclrtFree', acl.aclrtFree(m.value));
    r.call('aclrtResetDevice', acl.aclrtResetDevice(0));
    r.call('aclFinalize', acl.aclFinalize());
  });
}

/**
 * Two GPUs through the CUDA flavour: (a) memory created on GPU 0, mapped,
 * access granted to GPU 1 (and 0), written by GPU 0 and copied through by
 * GPU 1; (b) one reservation holding a chunk of each GPU, written and copied
 * across the boundary by each GPU in turn.
 */
export function twoGpuSequence(cu: CudaFlavor, chunk = 0): SeqResult {
  return guard((r) => {
    r.call('cuInit', cu.cuInit(0));
    const n = { value: 0 };
    r.call('cuDeviceGetCount', cu.cuDeviceGetCount(n));
    r.check('two devices', n.value >= 2);
    const ctx0 = { value: 0n };
    const ctx1 = { value: 0n };
    r.call('cuDevicePrimaryCtxRetain(0)', cu.cuDevicePrimaryCtxRetain(ctx0, 0));
    r.call('cuDevicePrimaryCtxRetain(1)', cu.cuDevicePrimaryCtxRetain(ctx1, 1));
    r.call('cuCtxSetCurrent(ctx0)', cu.cuCtxSetCurrent(ctx0.value));
    const p0 = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
    const p1 = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 1 } };
    const gran = { value: 0 };
    r.call('cuMemGetAllocationGranularity', cu.cuMemGetAllocationGranularity(gran, p0, 0));
    const g = chunk || gran.value;
    const both = [
      { location: { type: 1, id: 0 }, flags: 3 },
      { location: { type: 1, id: 1 }, flags: 3 },
    ];
    const only1 = [{ location: { type: 1, id: 1 }, flags: 3 }];

    // (a) GPU 0's memory, GPU 1 granted access, GPU 1 copies through it.
    const va = { value: 0n };
    r.call('a: cuMemAddressReserve', cu.cuMemAddressReserve(va, 2 * g, 0, 0, 0));
    const h0 = { value: 0n };
    r.call('a: cuMemCreate on GPU 0', cu.cuMemCreate(h0, g, p0, 0));
    r.call('a: cuMemMap', cu.cuMemMap(va.value, g, 0, h0.value, 0));
    r.call('a: cuMemSetAccess GPU 1 only', cu.cuMemSetAccess(va.value, g, only1, 1));
    const data = bytes(g, 5);
    r.call('a: GPU 0 writes without access (refused)', cu.cuMemcpyHtoD(va.value, data, g), 1);
    r.call('a: cuCtxSetCurrent(ctx1)', cu.cuCtxSetCurrent(ctx1.value));
    r.call('a: GPU 1 writes GPU 0 memory', cu.cuMemcpyHtoD(va.value, data, g));
    r.call('a: GPU 1 copies within GPU 0 memory', cu.cuMemcpyDtoD(va.value + BigInt(g / 2), va.value, g / 2));
    const back = new Uint8Array(g);
    r.call('a: GPU 1 reads', cu.cuMemcpyDtoH(back, va.value, g));
    const expect = new Uint8Array(g);
    expect.set(data.subarray(0, g / 2), 0);
    expect.set(data.subarray(0, g / 2), g / 2);
    r.check('a: bytes through GPU 1', same(back, expect));
    const flags = { value: -1 };
    r.call('a: cuMemGetAccess GPU 0', cu.cuMemGetAccess(flags, { type: 1, id: 0 }, va.value));
    r.check('a: GPU 0 has no access', flags.value === 0);
    r.call('a: cuMemGetAccess GPU 1', cu.cuMemGetAccess(flags, { type: 1, id: 1 }, va.value));
    r.check('a: GPU 1 has read-write', flags.value === 3);

    // (b) The second chunk of the same reservation on GPU 1; both GPUs granted.
    const h1 = { value: 0n };
    r.call('b: cuMemCreate on GPU 1', cu.cuMemCreate(h1, g, p1, 0));
    r.call('b: cuMemMap at +chunk', cu.cuMemMap(va.value + BigInt(g), g, 0, h1.value, 0));
    r.call('b: cuMemSetAccess both GPUs, both chunks', cu.cuMemSetAccess(va.value, 2 * g, both, 2));
    const span = bytes(g, 6);
    const at = va.value + BigInt(g / 2);
    r.call('b: GPU 1 writes across the boundary', cu.cuMemcpyHtoD(at, span, g));
    r.call('b: cuCtxSetCurrent(ctx0)', cu.cuCtxSetCurrent(ctx0.value));
    const got0 = new Uint8Array(g);
    r.call('b: GPU 0 reads across the boundary', cu.cuMemcpyDtoH(got0, at, g));
    r.check('b: GPU 0 sees the bytes', same(got0, span));
    r.call(
      'b: GPU 0 copies chunk 1 -> chunk 0 (DtoD across devices)',
      cu.cuMemcpyDtoD(va.value, va.value + BigInt(g), g),
    );
    r.call('b: cuCtxSetCurrent(ctx1)', cu.cuCtxSetCurrent(ctx1.value));
    const got1 = new Uint8Array(g);
    r.call('b: GPU 1 reads chunk 0', cu.cuMemcpyDtoH(got1, va.value, g));
    const want = new Uint8Array(g);
    want.set(span.subarray(g / 2), 0);
    r.call('b: cuMemsetD8 by GPU 1 across the boundary', cu.cuMemsetD8(va.value + BigInt(g - 8), 0xee, 16));
    const mid = new Uint8Array(16);
    r.call('b: GPU 1 reads the boundary', cu.cuMemcpyDtoH(mid, va.value + BigInt(g - 8), 16));
    r.check(
      'b: chunk 0 holds chunk 1 copied by GPU 0',
      same(got1.subarray(0, g / 2), want.subarray(0, g / 2)),
    );
    r.check(
      'b: memset across the boundary',
      mid.every((b) => b === 0xee),
    );
    const stream = { value: 0n };
    r.call('b: cuStreamCreate on GPU 1', cu.cuStreamCreate(stream, 0));
    const s = bytes(4096, 8);
    r.call(
      'b: async HtoD at the boundary',
      cu.cuMemcpyHtoDAsync(va.value + BigInt(g - 2048), s, 4096, stream.value),
    );
    const sb = new Uint8Array(4096);
    r.call('b: async DtoH', cu.cuMemcpyDtoHAsync(sb, va.value + BigInt(g - 2048), 4096, stream.value));
    r.call('b: cuStreamSynchronize', cu.cuStreamSynchronize(stream.value));
    r.check('b: stream bytes', same(sb, s));

    // (c) Copies and a set on GPU 1's stream while GPU 0's context is current: CUDA's programming
    // guide says a copy on a stream of another device succeeds (Note [Copies on another device's
    // stream] in src/flavors/cuda/streams.ts); the stream's device does the work.
    r.call('c: cuCtxSetCurrent(ctx0)', cu.cuCtxSetCurrent(ctx0.value));
    const c = bytes(4096, 9);
    r.call(
      "c: async HtoD on GPU 1's stream, GPU 0 current",
      cu.cuMemcpyHtoDAsync(va.value + BigInt(g), c, 4096, stream.value),
    );
    r.call(
      "c: async memset on GPU 1's stream, GPU 0 current",
      cu.cuMemsetD8Async(va.value + BigInt(g + 1024), 0x5a, 1024, stream.value),
    );
    const cb = new Uint8Array(4096);
    r.call(
      "c: async DtoH on GPU 1's stream, GPU 0 current",
      cu.cuMemcpyDtoHAsync(cb, va.value + BigInt(g), 4096, stream.value),
    );
    r.call("c: cuStreamSynchronize(GPU 1's stream), GPU 0 current", cu.cuStreamSynchronize(stream.value));
    const cwant = c.slice();
    cwant.fill(0x5a, 1024, 2048);
    r.check("c: the bytes landed through GPU 1's stream", same(cb, cwant));
    r.call('c: cuCtxSetCurrent(ctx1)', cu.cuCtxSetCurrent(ctx1.value));
    r.call('b: cuStreamDestroy', cu.cuStreamDestroy(stream.value));
    const free0 = { value: 0 };
    const total0 = { value: 0 };
    r.call('cuMemGetInfo (GPU 1)', cu.cuMemGetInfo(free0, total0));
    r.call('cuMemUnmap both chunks', cu.cuMemUnmap(va.value, 2 * g));
    r.call('cuMemRelease GPU 0 memory', cu.cuMemRelease(h0.value));
    r.call('cuMemRelease GPU 1 memory', cu.cuMemRelease(h1.value));
    r.call('cuMemAddressFree', cu.cuMemAddressFree(va.value, 2 * g));
    r.call('cuDevicePrimaryCtxRelease(1)', cu.cuDevicePrimaryCtxRelease(1));
    r.call('cuDevicePrimaryCtxRelease(0)', cu.cuDevicePrimaryCtxRelease(0));
  });
}
