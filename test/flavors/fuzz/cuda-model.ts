/** The CUDA flavor's call table for the fuzzer (Note [Fuzzer checks], episode.ts). */
import type { Machine } from '../../../src/backends/sim/machine.js';
import { createCuda } from '../../../src/entry/processes.js';
import { toInt } from '../../../src/flavors/common/args.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import { contextHandle } from '../../../src/flavors/cuda/contexts.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import type { CallSpec, Episode, FlavorModel } from './episode.js';
import { corrupt } from './garbage.js';
import { currentFaulted, settleCudaCalls } from './settle-calls.js';
import {
  asNumber,
  crossDeviceWait,
  hostAccessCalls,
  mirroredEventCalls,
  mirroredFdCalls,
  mirroredSetCalls,
  mirroredVmmCalls,
  smallCount,
  teardownRuns,
  widePattern,
} from './shared.js';

/** A small device: allocations of a few 64 KiB granules, and out of memory within reach. */
export const FUZZ_GRANULE = 64 * 1024;
const G = FUZZ_GRANULE;
const GPU = { name: 'FuzzGPU', totalMemory: 24 * G, minimumGranularity: G, recommendedGranularity: 2 * G };
/** Two devices: events, waits and contexts are drawn across them (issue 17). */
const DEVICES = [GPU, GPU];

type E = Episode<CudaFlavor>;
const pid = (p: CudaFlavor) => p.runtime.pid;

function size(ep: E): bigint | number {
  const n = ep.rng.pick([G, G, 2 * G, 3 * G, 4 * G]);
  return ep.rng.chance(0.5) ? BigInt(n) : n;
}

function prop(ep: E): object {
  const valid = {
    type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
    requestedHandleTypes: ep.rng.pick([
      C.CU_MEM_HANDLE_TYPE_NONE,
      C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    ]),
    location: ep.rng.chance(0.9)
      ? { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }
      : { type: C.CU_MEM_LOCATION_TYPE_HOST_NUMA, id: 0 },
  };
  return ep.rng.chance(ep.garbageRate) ? corrupt(ep.rng, valid) : valid;
}

function descs(ep: E): unknown {
  const valid = [
    { location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }, flags: ep.rng.pick([1, 3, 3, 3, 0]) },
  ];
  if (!ep.rng.chance(ep.garbageRate)) return valid;
  return ep.rng.chance(0.5) ? [corrupt(ep.rng, valid[0] as never)] : ep.arg(() => valid);
}

const ptr = (ep: E, p: CudaFlavor) => ep.arg(() => ep.pointer(pid(p), G));
/** A pointer into mapped memory, most of the time (copies and sets). */
const mem = (ep: E, p: CudaFlavor) => ep.arg(() => ep.mappedPointer(p, G));
const handle = (ep: E, p: CudaFlavor) => ep.arg(() => ep.handle(pid(p)));
const stream = (ep: E, p: CudaFlavor) =>
  ep.arg(() =>
    ep.rng.chance(0.1) ? ep.rng.pick([C.CU_STREAM_LEGACY, C.CU_STREAM_PER_THREAD]) : ep.stream(pid(p)),
  );
const zero = (ep: E) => ep.arg(() => 0);
const event = (ep: E, p: CudaFlavor) => ep.arg(() => ep.event(pid(p)));
/** After a context went: forget the streams and events it took with it (their calls now refuse them). */
function pruneGone(ep: E, p: CudaFlavor): void {
  const status = { value: 0 };
  // An unknown stream is INVALID_CONTEXT to cuStreamIsCapturing, as on the H200 (capture.isCapturingDestroyedStream).
  ep.prune(ep.streams, pid(p), (s) => p.cuStreamIsCapturing(s, status) !== C.CUDA_ERROR_INVALID_CONTEXT);
  // A destroyed event is CONTEXT_IS_DESTROYED to cuEventQuery, as on the H200 (event.destroyedHandle), one
  // that went with its context INVALID_CONTEXT (primaryDestroy.resetOldEventQuery).
  ep.prune(ep.events, pid(p), (e) => {
    const code = p.cuEventQuery(e);
    return code !== C.CUDA_ERROR_CONTEXT_IS_DESTROYED && code !== C.CUDA_ERROR_INVALID_CONTEXT;
  });
}
const count = (ep: E) => ep.arg(() => smallCount(ep.rng));

/**
 * The context each stream, event and cuMemAlloc pointer was made in, per
 * process, for rules context and pointer (Note [Fuzzer checks]); only
 * what a plain box read back.
 */
interface Made {
  readonly streams: Map<bigint, bigint>;
  readonly events: Map<bigint, bigint>;
  readonly mallocs: Map<bigint, bigint>;
}
const madeIn = new WeakMap<CudaFlavor, Made>();
function made(p: CudaFlavor): Made {
  let m = madeIn.get(p);
  if (m === undefined) madeIn.set(p, (m = { streams: new Map(), events: new Map(), mallocs: new Map() }));
  return m;
}
function current(p: CudaFlavor): bigint {
  const b = { value: 0n };
  p.cuCtxGetCurrent(b);
  return b.value;
}
/** Remember `value` (what a box read back) as made in the current context. */
function note(map: Map<bigint, bigint>, p: CudaFlavor, value: unknown): void {
  if (typeof value === 'bigint' && value !== 0n) map.set(value, current(p));
}
/** Rule owned: cuMemAlloc memory made in context `ctx`, which was just destroyed, still in core. */
function keptMemory(p: CudaFlavor, ctx: unknown): { rule: 'owned'; detail: string } | undefined {
  const live = new Set(p.runtime.describe().reservations.map((r) => BigInt(r.base)));
  const kept = [...made(p).mallocs].filter(([va, c]) => c === ctx && live.has(va));
  return kept.length === 0
    ? undefined
    : { rule: 'owned', detail: `${kept.length} cuMemAlloc allocation(s) left` };
}
/**
 * The device a call was given, read as the flavor reads a C int (a number,
 * or a bigint such as the fuzzer's hostile 1n), or undefined if it names none.
 */
function deviceGiven(dev: unknown): number | undefined {
  const d = toInt(dev);
  return DEVICES[d] === undefined ? undefined : d;
}
/**
 * After a reset or a release: if the primary context of the device `given`
 * names went (Note [Destroying a primary context]), forget its cuMemAlloc
 * memory, and its streams and events, asked with it made anew and pushed
 * current for the asking; a reset one stays made anew (as a program retains
 * it again), a released one is released again.
 */
function forgetPrimary(ep: E, p: CudaFlavor, given: unknown): void {
  const active = { value: -1 };
  const dev = deviceGiven(given);
  if (dev === undefined) return;
  if (p.cuDevicePrimaryCtxGetState(dev, { value: 0 }, active) !== 0 || active.value !== 0) return;
  const ctx = contextHandle(dev);
  for (const [va, c] of made(p).mallocs) if (c === ctx) made(p).mallocs.delete(va);
  const b = { value: 0n };
  if (p.cuDevicePrimaryCtxRetain(b, dev) !== 0) return;
  if (p.cuCtxPushCurrent(b.value) === 0) {
    pruneGone(ep, p);
    p.cuCtxPopCurrent(null);
  }
  p.cuDevicePrimaryCtxRelease(dev);
}
/** A primary context of either device, or a context cuCtxCreate made, made current. */
function switchContext(ep: E, p: CudaFlavor): void {
  const created = ep.contexts.get(pid(p)) ?? [];
  if (created.length > 0 && ep.rng.chance(0.3)) {
    p.cuCtxSetCurrent(ep.rng.pick(created));
    return;
  }
  const b = { value: 0n };
  if (p.cuDevicePrimaryCtxRetain(b, ep.rng.below(DEVICES.length)) === 0) p.cuCtxSetCurrent(b.value);
}
/** The context a record's stream belongs to: the NULL and special streams are the current context's. */
function streamContext(p: CudaFlavor, s: unknown): bigint | undefined {
  if (s === 0n || s === 0 || s === C.CU_STREAM_LEGACY || s === C.CU_STREAM_PER_THREAD || s === 1 || s === 2)
    return current(p);
  return typeof s === 'bigint' ? made(p).streams.get(s) : undefined;
}
/** Rule context: a record that succeeded had its event and stream of one context. */
function recorded(p: CudaFlavor, e: unknown, s: unknown, result: number) {
  const mine = typeof e === 'bigint' ? made(p).events.get(e) : undefined;
  const theirs = streamContext(p, s);
  if (result !== 0 || mine === undefined || theirs === undefined || mine === theirs) return undefined;
  const detail = `recorded an event of context ${mine} on a stream of context ${theirs}`;
  return { rule: 'context' as const, detail };
}

/**
 * Rule faulted (Note [Faulted devices]): a process that has answered
 * CUDA_ERROR_LAUNCH_FAILED has a device whose primary context answers it
 * still, to cuMemGetInfo or to the retain that would make it anew; and a VMM
 * call, which uses no context, answers as ever. A process that never faulted
 * has nothing to show.
 */
const stillFaulted: CallSpec<CudaFlavor> = {
  name: 'cuMemGetInfo on each device (after a fault)',
  weight: 0.3,
  partialOnFailure: true,
  run: (ep, p) => {
    if (ep.answered.get(p.runtime.pid)?.has(C.CUDA_ERROR_LAUNCH_FAILED) !== true)
      return { result: C.CUDA_SUCCESS };
    const faulted: number[] = [];
    for (let d = 0; d < DEVICES.length; d++) {
      const b = { value: 0n };
      const retained = p.cuDevicePrimaryCtxRetain(b, d);
      if (retained === C.CUDA_ERROR_LAUNCH_FAILED) faulted.push(d);
      if (retained !== C.CUDA_SUCCESS) continue;
      // Pushed and popped: the thread's context stack is as it was.
      if (p.cuCtxPushCurrent(b.value) === C.CUDA_SUCCESS) {
        if (currentFaulted(p)) faulted.push(d);
        p.cuCtxPopCurrent(null);
      }
      p.cuDevicePrimaryCtxRelease(d);
    }
    const granularity = { value: 0 };
    const vmm = p.cuMemGetAllocationGranularity(
      granularity,
      {
        type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: C.CU_MEM_HANDLE_TYPE_NONE,
        location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
      },
      0,
    );
    const broken =
      faulted.length === 0
        ? 'answered 719 earlier, and now no device answers it'
        : vmm !== C.CUDA_SUCCESS
          ? `cuMemGetAllocationGranularity answered ${vmm} on a faulted device`
          : undefined;
    return {
      result: C.CUDA_SUCCESS,
      broken: broken === undefined ? undefined : { rule: 'faulted', detail: broken },
    };
  },
};

/**
 * Fault device 1 on purpose, now and then, so that rule faulted has a fault
 * to check: a set queued on a stream of device 1 into memory whose access
 * is taken away before the stream runs it (Note [Queued work and access
 * changes]). Device 0 stays usable for the rest of the episode.
 */
const faultDevice1: CallSpec<CudaFlavor> = {
  name: 'cuMemsetD8Async+cuMemSetAccess(none)+cuStreamSynchronize(device 1)',
  weight: 0.02,
  partialOnFailure: true,
  run: (_ep, p) => {
    const b = { value: 0n };
    const retained = p.cuDevicePrimaryCtxRetain(b, 1);
    if (retained !== C.CUDA_SUCCESS) return { result: retained };
    const at = (flags: number) => [{ location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 1 }, flags }];
    const va = { value: 0n };
    const h = { value: 0n };
    const s = { value: 0n };
    let result: number = C.CUDA_SUCCESS;
    // Pushed and popped: the thread's context stack is as it was.
    const pushed = p.cuCtxPushCurrent(b.value) === C.CUDA_SUCCESS;
    try {
      if (!pushed) return { result: C.CUDA_SUCCESS };
      const prop = {
        type: 1,
        requestedHandleTypes: 0,
        location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 1 },
      };
      result =
        p.cuMemAddressReserve(va, G, 0, 0n, 0) ||
        p.cuMemCreate(h, G, prop, 0) ||
        p.cuMemMap(va.value, G, 0, h.value, 0) ||
        p.cuMemSetAccess(va.value, G, at(3), 1) ||
        p.cuStreamCreate(s, 0) ||
        p.cuMemsetD8Async(va.value, 1, 64, s.value) ||
        p.cuMemSetAccess(va.value, G, at(1), 1) ||
        p.cuStreamSynchronize(s.value);
      return { result };
    } finally {
      // The VMM calls still answer on a faulted device; the stream stays, as the driver's does (719).
      if (va.value !== 0n) p.cuMemUnmap(va.value, G);
      if (h.value !== 0n) p.cuMemRelease(h.value);
      if (va.value !== 0n) p.cuMemAddressFree(va.value, G);
      if (s.value !== 0n) p.cuStreamDestroy(s.value);
      if (pushed) p.cuCtxPopCurrent(null);
      p.cuDevicePrimaryCtxRelease(1);
    }
  },
};

const calls: CallSpec<CudaFlavor>[] = [
  { name: 'cuInit', weight: 0.2, run: (ep, p) => ({ result: p.cuInit(zero(ep)) }) },
  { name: 'cuDriverGetVersion', weight: 0.2, run: (ep, p) => ({ result: p.cuDriverGetVersion(ep.box(0)) }) },
  { name: 'cuDeviceGet', weight: 0.2, run: (ep, p) => ({ result: p.cuDeviceGet(ep.box(0), zero(ep)) }) },
  { name: 'cuDeviceGetCount', weight: 0.2, run: (ep, p) => ({ result: p.cuDeviceGetCount(ep.box(0)) }) },
  {
    name: 'cuDeviceGetName',
    weight: 0.2,
    run: (ep, p) => ({
      result: p.cuDeviceGetName(
        ep.box(''),
        ep.arg(() => 64),
        zero(ep),
      ),
    }),
  },
  {
    name: 'cuDeviceGetAttribute',
    weight: 0.2,
    run: (ep, p) => ({
      result: p.cuDeviceGetAttribute(
        ep.box(0),
        ep.arg(() => ep.rng.pick([16, 75, 102, 103, 128, 999])),
        zero(ep),
      ),
    }),
  },
  {
    name: 'cuCtxEnablePeerAccess',
    weight: 0.2,
    run: (ep, p) => {
      const current = { value: 0n };
      p.cuCtxGetCurrent(current);
      return {
        result: p.cuCtxEnablePeerAccess(
          ep.arg(() => current.value),
          zero(ep),
        ),
      };
    },
  },
  {
    name: 'cuCtxDisablePeerAccess',
    weight: 0.2,
    run: (ep, p) => {
      const current = { value: 0n };
      p.cuCtxGetCurrent(current);
      return { result: p.cuCtxDisablePeerAccess(ep.arg(() => current.value)) };
    },
  },
  {
    name: 'cuDeviceCanAccessPeer',
    weight: 0.2,
    run: (ep, p) => ({ result: p.cuDeviceCanAccessPeer(ep.box(0), zero(ep), zero(ep)) }),
  },
  {
    name: 'cuStreamIsCapturing',
    weight: 0.2,
    run: (ep, p) => ({ result: p.cuStreamIsCapturing(stream(ep, p), ep.box(0)) }),
  },
  {
    name: 'cuThreadExchangeStreamCaptureMode',
    weight: 0.2,
    run: (ep, p) => ({ result: p.cuThreadExchangeStreamCaptureMode(ep.box(ep.rng.below(4))) }),
  },
  {
    name: 'cuDeviceTotalMem',
    weight: 0.2,
    run: (ep, p) => ({ result: p.cuDeviceTotalMem(ep.box(0), zero(ep)) }),
  },
  {
    name: 'cuDevicePrimaryCtxRetain',
    weight: 0.2,
    run: (ep, p) => ({ result: p.cuDevicePrimaryCtxRetain(ep.box(0n), zero(ep)) }),
  },
  {
    name: 'cuDevicePrimaryCtxRelease',
    weight: 0.05,
    run: (ep, p) => {
      const dev = zero(ep);
      // The last release destroys the primary context, as a reset does.
      return { result: p.cuDevicePrimaryCtxRelease(dev), onSuccess: () => forgetPrimary(ep, p, dev) };
    },
  },
  {
    // Destroys the primary context with what it owns (Note [Destroying a primary context]).
    name: 'cuDevicePrimaryCtxReset',
    weight: 0.03,
    run: (ep, p) => {
      const dev = ep.arg(() => ep.rng.below(DEVICES.length));
      const result = p.cuDevicePrimaryCtxReset(dev);
      const d = deviceGiven(dev);
      const ctx = d === undefined ? -1n : contextHandle(d);
      return {
        result,
        broken: result === 0 ? keptMemory(p, ctx) : undefined,
        onSuccess: () => forgetPrimary(ep, p, dev),
      };
    },
  },
  {
    name: 'cuCtxSetCurrent',
    weight: 0.2,
    run: (ep, p) => {
      const b = { value: 0n };
      p.cuCtxGetCurrent(b);
      return { result: p.cuCtxSetCurrent(ep.arg(() => (b.value === 0n ? 0xc0_0000n : b.value))) };
    },
  },
  { name: 'cuCtxGetCurrent', weight: 0.2, run: (ep, p) => ({ result: p.cuCtxGetCurrent(ep.box(0n)) }) },
  { name: 'cuCtxGetDevice', weight: 0.2, run: (ep, p) => ({ result: p.cuCtxGetDevice(ep.box(0)) }) },
  { name: 'cuCtxSynchronize', weight: 0.3, run: (_ep, p) => ({ result: p.cuCtxSynchronize() }) },
  {
    name: 'cuMemGetAllocationGranularity',
    weight: 0.3,
    run: (ep, p) => ({
      result: p.cuMemGetAllocationGranularity(
        ep.box(0),
        prop(ep) as never,
        ep.arg(() => ep.rng.below(2)),
      ),
    }),
  },
  {
    name: 'cuMemAddressReserve',
    weight: 2,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.cuMemAddressReserve(
          b,
          ep.arg(() => size(ep)),
          ep.arg(() => 0),
          ep.arg(() => (ep.rng.chance(0.2) ? ep.pointer(pid(p), G) : 0n)),
          zero(ep),
        ),
        onSuccess: () => ep.remember(ep.pointers, pid(p), b.value),
      };
    },
  },
  ...mirroredVmmCalls<CudaFlavor>('cu', { size, prop, ptr, handle, zero, pid }),
  {
    name: 'cuMemSetAccess',
    weight: 3,
    run: (ep, p) => {
      const [at, n] = ep.accessRange(
        p,
        () => ptr(ep, p),
        () => size(ep),
      );
      return {
        result: p.cuMemSetAccess(
          at,
          n,
          descs(ep) as never,
          ep.arg(() => 1),
        ),
      };
    },
  },
  {
    name: 'cuMemGetAccess',
    run: (ep, p) => ({
      result: p.cuMemGetAccess(
        ep.box(0),
        ep.arg(() => ({ type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 })),
        ptr(ep, p),
      ),
    }),
  },
  {
    name: 'cuMemAllocHost',
    weight: 0.2,
    run: (ep, p) => {
      const b = ep.box<Uint8Array | null>(null);
      const result = p.cuMemAllocHost(b, count(ep));
      // Free what was allocated at once: the fuzzer keeps no host buffers; a second free is refused.
      if (result === 0 && b.value !== null) p.cuMemFreeHost(b.value);
      return { result };
    },
  },
  {
    name: 'cuMemHostAlloc+cuMemHostGetFlags',
    weight: 0.2,
    run: (ep, p) => {
      const b = ep.box<Uint8Array | null>(null);
      const result = p.cuMemHostAlloc(
        b,
        count(ep),
        ep.arg(() => ep.rng.pick([0, 1, 2, 4, 7, 8])),
      );
      // Asked of what the box holds (hostile boxes too), then freed at once: the fuzzer keeps no host buffers.
      if (result === 0) p.cuMemHostGetFlags(ep.box(0), b.value as never);
      if (result === 0 && b.value instanceof Uint8Array) p.cuMemFreeHost(b.value);
      return { result };
    },
  },
  {
    // Note [Host device pointers]: the pointer is the one DEVICE_POINTER answers, and copies through it reach the bytes.
    name: 'cuMemHostAlloc+cuMemHostGetDevicePointer',
    weight: 0.2,
    run: (ep, p) => {
      const b = { value: null as Uint8Array | null };
      if (p.cuMemHostAlloc(b, 64, 0) !== 0 || b.value === null) return { result: C.CUDA_SUCCESS };
      const host = b.value;
      const offset = ep.rng.pick([0, 0, 8]);
      const d = ep.box(0n);
      const flags = ep.arg(() => ep.rng.pick([0, 0, 0, 1]));
      const result = p.cuMemHostGetDevicePointer(
        d,
        ep.arg(() => host.subarray(offset)),
        flags,
      );
      let broken: { rule: 'pointer'; detail: string } | undefined;
      if (result === 0 && typeof d.value === 'bigint') {
        const seen = { value: 0n as bigint | number };
        p.cuPointerGetAttribute(seen, C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, host.subarray(offset));
        // On a stream of its own: a synchronous copy first runs every stream's queued work, and answers
        // a fault of it (seed 4006) instead of copying (Note [Queued work and access changes]).
        const s = { value: 0n };
        let reached = true;
        if (p.cuStreamCreate(s, 0) === 0) {
          p.cuMemcpyHtoDAsync(d.value, Uint8Array.of(0xa5), 1, s.value);
          p.cuStreamSynchronize(s.value);
          p.cuStreamDestroy(s.value);
          reached = host[offset] === 0xa5;
        }
        if (seen.value !== d.value)
          broken = {
            rule: 'pointer',
            detail: `device pointer ${d.value} is not the host buffer's (${seen.value})`,
          };
        else if (!reached)
          broken = {
            rule: 'pointer',
            detail: `a copy through device pointer ${d.value} missed the host buffer`,
          };
      }
      p.cuMemFreeHost(host);
      return { result, broken };
    },
  },
  {
    name: 'cuMemcpy',
    weight: 1,
    run: (ep, p) => {
      const n = count(ep);
      const way = ep.rng.below(4);
      if (way === 0) {
        const src = ep.host(64);
        const dst = mem(ep, p);
        return {
          result: p.cuMemcpy(dst, src, n),
          effects: ep.isPlain(src)
            ? { write: { va: asNumber(dst), bytes: src.slice(0, asNumber(n)) } }
            : { unknown: { va: asNumber(dst), size: asNumber(n) } },
        };
      }
      if (way === 1) {
        const dst = ep.host(64);
        const src = mem(ep, p);
        return {
          result: p.cuMemcpy(dst, src, n),
          effects: ep.isPlain(dst)
            ? { read: { va: asNumber(src), into: dst, size: asNumber(n) } }
            : undefined,
        };
      }
      if (way === 2) return { result: p.cuMemcpy(ep.host(64), ep.host(64), n) };
      const dst = mem(ep, p);
      const src = mem(ep, p);
      return {
        result: p.cuMemcpy(dst, src, n),
        effects: { copy: { dst: asNumber(dst), src: asNumber(src), size: asNumber(n) } },
      };
    },
  },
  {
    name: 'cuMemcpyAsync',
    weight: 0.5,
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      return {
        result: p.cuMemcpyAsync(dst, ep.rng.chance(0.5) ? ep.host(64) : mem(ep, p), n, stream(ep, p)),
        effects: { unknown: { va: asNumber(dst), size: asNumber(n) } },
      };
    },
  },
  {
    name: 'cuMemFreeHost',
    weight: 0.2,
    run: (ep, p) => ({ result: p.cuMemFreeHost(ep.arg(() => new Uint8Array(8)) as never) }),
  },
  {
    name: 'cuMemGetAddressRange',
    weight: 0.3,
    run: (ep, p) => ({ result: p.cuMemGetAddressRange(ep.box(0n), ep.box(0), mem(ep, p)) }),
  },
  {
    name: 'cuPointerGetAttribute',
    weight: 0.3,
    run: (ep, p) => ({
      result: p.cuPointerGetAttribute(
        ep.box(0),
        ep.arg(() => ep.rng.pick([2, 8, 9, 11, 12, 13, 99])),
        mem(ep, p),
      ),
    }),
  },
  {
    name: 'cuPointerGetAttributes',
    weight: 0.3,
    run: (ep, p) => ({
      result: p.cuPointerGetAttributes(
        ep.arg(() => 2),
        ep.arg(() => [C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, C.CU_POINTER_ATTRIBUTE_RANGE_SIZE]),
        ep.arg(() => [ep.box(0), ep.box(0)]),
        mem(ep, p),
      ),
    }),
  },
  {
    name: 'cuMemRetainAllocationHandle',
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.cuMemRetainAllocationHandle(b, ptr(ep, p)),
        onSuccess: () => ep.remember(ep.handles, pid(p), b.value),
      };
    },
  },
  {
    name: 'cuMemGetAllocationPropertiesFromHandle',
    weight: 0.5,
    run: (ep, p) => ({
      result: p.cuMemGetAllocationPropertiesFromHandle(ep.box(undefined as never), handle(ep, p)),
    }),
  },
  ...mirroredFdCalls<CudaFlavor>('cu', C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, { handle, zero, pid }),
  {
    name: 'cuMemAlloc',
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.cuMemAlloc(
          b,
          ep.arg(() => ep.rng.pick([1, 100, G, 2 * G])),
        ),
        onSuccess: () => {
          ep.remember(ep.pointers, pid(p), b.value);
          note(made(p).mallocs, p, b.value);
        },
      };
    },
  },
  {
    name: 'cuMemFree',
    run: (ep, p) => {
      const at = ptr(ep, p);
      return {
        result: p.cuMemFree(at),
        onSuccess: () => {
          ep.forget(ep.pointers, pid(p), at);
          if (typeof at === 'bigint') made(p).mallocs.delete(at);
        },
      };
    },
  },
  { name: 'cuMemGetInfo', weight: 0.3, run: (ep, p) => ({ result: p.cuMemGetInfo(ep.box(0), ep.box(0)) }) },
  {
    name: 'cuMemcpyHtoD',
    weight: 3,
    run: (ep, p) => {
      const n = count(ep);
      const src = ep.host(64);
      const dst = mem(ep, p);
      const plain = ep.isPlain(src);
      return {
        result: p.cuMemcpyHtoD(dst, src, n),
        effects: plain
          ? { write: { va: asNumber(dst), bytes: src.slice(0, asNumber(n)) } }
          : { unknown: { va: asNumber(dst), size: asNumber(n) } },
      };
    },
  },
  {
    name: 'cuMemcpyDtoH',
    weight: 3,
    run: (ep, p) => {
      const n = count(ep);
      const dst = ep.host(64);
      const src = mem(ep, p);
      return {
        result: p.cuMemcpyDtoH(dst, src, n),
        effects: ep.isPlain(dst) ? { read: { va: asNumber(src), into: dst, size: asNumber(n) } } : undefined,
      };
    },
  },
  {
    name: 'cuMemcpyDtoD',
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      const src = mem(ep, p);
      return {
        result: p.cuMemcpyDtoD(dst, src, n),
        effects: { copy: { dst: asNumber(dst), src: asNumber(src), size: asNumber(n) } },
      };
    },
  },
  {
    name: 'cuMemcpyPeer',
    weight: 0.5,
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      const src = mem(ep, p);
      const current = { value: 0n };
      p.cuCtxGetCurrent(current);
      const ctx = ep.arg(() => current.value);
      return {
        result: p.cuMemcpyPeer(dst, ctx, src, ctx, n),
        // A 0-byte peer copy touches nothing, so it does not run the queued work a synchronous copy runs.
        effects:
          asNumber(n) > 0
            ? { copy: { dst: asNumber(dst), src: asNumber(src), size: asNumber(n) } }
            : undefined,
      };
    },
  },
  {
    name: 'cuMemcpyHtoDAsync',
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      return {
        result: p.cuMemcpyHtoDAsync(dst, ep.host(64), n, stream(ep, p)),
        effects: { unknown: { va: asNumber(dst), size: asNumber(n) } },
      };
    },
  },
  {
    name: 'cuMemcpyDtoHAsync',
    run: (ep, p) => ({ result: p.cuMemcpyDtoHAsync(ep.host(64), mem(ep, p), count(ep), stream(ep, p)) }),
  },
  {
    name: 'cuMemcpyDtoDAsync',
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      return {
        result: p.cuMemcpyDtoDAsync(dst, mem(ep, p), n, stream(ep, p)),
        effects: { unknown: { va: asNumber(dst), size: asNumber(n) } },
      };
    },
  },
  ...mirroredSetCalls<CudaFlavor>(
    { sync: 'cuMemsetD8', async: 'cuMemsetD8Async', asyncValue: 7 },
    { mem, count, stream },
  ),
  ...([2, 4] as const).map((width) => ({
    name: width === 2 ? 'cuMemsetD16' : 'cuMemsetD32',
    weight: 0.7,
    run: (ep: E, p: CudaFlavor) => {
      const n = ep.arg(() => ep.rng.pick([0, 1, 4, 16]));
      const dst = mem(ep, p);
      const value = ep.arg(() => ep.rng.below(2 ** 32));
      const result = width === 2 ? p.cuMemsetD16(dst, value, n) : p.cuMemsetD32(dst, value, n);
      const bytes = widePattern(value, n, width);
      return { result, effects: bytes ? { write: { va: asNumber(dst), bytes } } : undefined };
    },
  })),
  {
    name: 'cuStreamCreate',
    weight: 0.5,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.cuStreamCreate(
          b,
          ep.arg(() => ep.rng.below(2)),
        ),
        onSuccess: () => {
          ep.remember(ep.streams, pid(p), b.value);
          note(made(p).streams, p, b.value);
        },
      };
    },
  },
  {
    name: 'cuStreamSynchronize',
    weight: 0.5,
    run: (ep, p) => ({ result: p.cuStreamSynchronize(stream(ep, p)) }),
  },
  {
    name: 'cuStreamDestroy',
    weight: 0.3,
    run: (ep, p) => {
      const s = stream(ep, p);
      return { result: p.cuStreamDestroy(s), onSuccess: () => ep.forget(ep.streams, pid(p), s) };
    },
  },
  {
    name: 'cuEventCreate',
    weight: 0.4,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.cuEventCreate(
          b,
          ep.arg(() => ep.rng.pick([0, 1, 2, 2, 6, 4, 8])),
        ),
        onSuccess: () => {
          ep.remember(ep.events, pid(p), b.value);
          note(made(p).events, p, b.value);
        },
      };
    },
  },
  {
    name: 'cuEventRecord',
    weight: 0.5,
    run: (ep, p) => {
      const e = event(ep, p);
      const s = stream(ep, p);
      const result = p.cuEventRecord(e, s);
      return { result, broken: recorded(p, e, s, result) };
    },
  },
  {
    name: 'cuEventRecordWithFlags',
    weight: 0.2,
    run: (ep, p) => {
      const e = event(ep, p);
      const s = stream(ep, p);
      const result = p.cuEventRecordWithFlags(
        e,
        s,
        ep.arg(() => ep.rng.below(3)),
      );
      return { result, broken: recorded(p, e, s, result) };
    },
  },
  crossDeviceWait<CudaFlavor>('cuEventRecord+cuStreamWaitEvent+cuStreamSynchronize', {
    success: C.CUDA_SUCCESS,
    defaultStream: 0n,
    event,
    stream,
    mem,
    switchDevice: switchContext,
    pieces: {
      makeStream: (p, b) => {
        const code = p.cuStreamCreate(b, 0);
        note(made(p).streams, p, b.value);
        return code;
      },
      makeEvent: (p, b) => {
        const code = p.cuEventCreate(b, C.CU_EVENT_DISABLE_TIMING);
        note(made(p).events, p, b.value);
        return code;
      },
      makeMemory: (p, b) => p.cuMemAlloc(b, 64),
      free: (p, { stream, event, memory }) => {
        p.cuMemFree(memory);
        p.cuEventDestroy(event);
        p.cuStreamDestroy(stream);
      },
    },
    queue: (p, m, s) => void p.cuMemcpyDtoHAsync(new Uint8Array(64), m as never, 64, s as never),
    record: (p, e, s) => p.cuEventRecord(e as never, s as never),
    wait: (p, s, e) => p.cuStreamWaitEvent(s as never, e as never, 0),
    synchronize: (p, s) => p.cuStreamSynchronize(s as never),
    complete: (p, e) => p.cuEventQuery(e as never) === C.CUDA_SUCCESS,
  }),
  {
    name: 'cuCtxSetCurrent(any device)',
    weight: 0.3,
    run: (ep, p) => {
      switchContext(ep, p);
      return { result: C.CUDA_SUCCESS };
    },
  },
  {
    name: 'cuPointerGetAttribute(CONTEXT)',
    weight: 0.4,
    run: (ep, p) => {
      const mallocs = [...made(p).mallocs];
      if (mallocs.length === 0) return { result: C.CUDA_SUCCESS };
      const [base, ctx] = ep.rng.pick(mallocs);
      const at = base + BigInt(ep.rng.pick([0, 0, 1, 64]));
      const seen = { value: 0n as bigint | number };
      const result = ep.rng.chance(0.5)
        ? p.cuPointerGetAttribute(seen, C.CU_POINTER_ATTRIBUTE_CONTEXT, at)
        : p.cuPointerGetAttributes(1, [C.CU_POINTER_ATTRIBUTE_CONTEXT], [seen], at);
      const detail = `answered context ${seen.value} for memory allocated in context ${ctx}`;
      return { result, broken: result === 0 && seen.value !== ctx ? { rule: 'pointer', detail } : undefined };
    },
  },
  ...mirroredEventCalls<CudaFlavor>('cu', { event, stream, pid }),
  {
    name: 'cuCtxCreate',
    weight: 0.1,
    run: (ep, p) => {
      const b = ep.box(0n);
      const flags = ep.arg(() => ep.rng.pick([0, 0, 4, 3]));
      const dev = ep.arg(() => ep.rng.below(DEVICES.length));
      // Both headers' forms (Note [Context creation parameters]), the struct valid or not.
      const params = ep.arg(() =>
        ep.rng.pick([
          null,
          {},
          { numExecAffinityParams: 1 },
          { execAffinityParams: [{ type: 0, param: { smCount: { val: 8 } } }], numExecAffinityParams: 1 },
          { cigParams: { sharedDataType: 2, sharedData: null } },
        ]),
      );
      const form = ep.rng.below(4);
      const result =
        form === 0
          ? p.cuCtxCreate(b, flags, dev)
          : form === 1
            ? p.cuCtxCreate(b, params as never, flags, dev)
            : form === 2
              ? p.cuCtxCreate_v2(b, flags, dev)
              : p.cuCtxCreate_v4(b, params as never, flags, dev);
      return { result, onSuccess: () => ep.remember(ep.contexts, pid(p), b.value) };
    },
  },
  {
    name: 'cuCtxDestroy',
    weight: 0.1,
    run: (ep, p) => {
      const now = current(p);
      const ctx = ep.arg(() => now);
      const result = p.cuCtxDestroy(ctx);
      return {
        result,
        broken: result === 0 ? keptMemory(p, ctx) : undefined,
        onSuccess: () => {
          // Its cuMemAlloc memory went with it.
          for (const [va, c] of made(p).mallocs) if (c === ctx) made(p).mallocs.delete(va);
          // The primary context, when nothing live is current any more (none, or a primary context
          // reset and popped to: Note [Destroying a primary context]), as a program would set it again,
          // so that the queries below answer for the handles rather than for a missing context.
          const b = { value: 0n };
          p.cuCtxGetCurrent(b);
          const live = b.value !== 0n && p.cuCtxGetDevice({ value: 0 }) === 0;
          if (!live && p.cuDevicePrimaryCtxRetain(b, 0) === 0) p.cuCtxSetCurrent(b.value);
          pruneGone(ep, p);
        },
      };
    },
  },
  {
    name: 'cuGetErrorName',
    weight: 0.2,
    run: (ep, p) => ({
      result: p.cuGetErrorName(
        ep.arg(() => 1),
        ep.box(null),
      ),
    }),
  },
  {
    name: 'cuGetErrorString',
    weight: 0.2,
    run: (ep, p) => ({
      result: p.cuGetErrorString(
        ep.arg(() => 2),
        ep.box(null),
      ),
    }),
  },
  ...hostAccessCalls<CudaFlavor>({ mem }),
  ...settleCudaCalls(DEVICES.length),
  faultDevice1,
  stillFaulted,
];

export const CUDA_MODEL: FlavorModel<CudaFlavor> = {
  vendor: 'CUDA',
  devices: DEVICES,
  codes: new Set(C.CUDA_RESULTS.keys()),
  success: C.CUDA_SUCCESS,
  make: (machine: Machine, report) => createCuda({ machine, report }),
  prepare(p) {
    const b = { value: 0n };
    p.cuInit(0);
    p.cuDevicePrimaryCtxRetain(b, 0);
    p.cuCtxSetCurrent(b.value);
  },
  calls,
  teardown(ep, p) {
    const failed: string[] = [];
    const b = { value: 0n };
    // The fuzzer may have released the primary context or made none current.
    p.cuDevicePrimaryCtxRetain(b, 0);
    p.cuCtxSetCurrent(b.value);
    // Work queued on streams may fail when it runs; the second synchronize is clean, unless work
    // faulted the device (Note [Faulted devices]). Then what its contexts own cannot be given back
    // through the API (719), and the process ends once the rest is, as a real one must; the baseline
    // still asks that its end gave back everything.
    const faulted: number[] = [];
    for (const d of [1, 0]) {
      // A retain that must make the context anew on a faulted device answers the fault itself.
      const retained = p.cuDevicePrimaryCtxRetain(b, d);
      if (retained === 0) p.cuCtxSetCurrent(b.value);
      p.cuCtxSynchronize();
      const code = retained === 0 ? p.cuCtxSynchronize() : retained;
      if (code === C.CUDA_ERROR_LAUNCH_FAILED) faulted.push(d);
      else if (code !== 0) failed.push('cuCtxSynchronize');
    }
    // On a faulted device no context may be had to destroy them in (its retain answers 719): the end takes them.
    if (faulted.length === 0) {
      for (const s of ep.streams.get(pid(p)) ?? []) {
        const code = p.cuStreamDestroy(s);
        if (code !== 0) failed.push(`cuStreamDestroy: ${code}`);
      }
      for (const e of ep.events.get(pid(p)) ?? []) {
        const code = p.cuEventDestroy(e);
        if (code !== 0) failed.push(`cuEventDestroy: ${code}`);
      }
    }
    const runs = teardownRuns(p.runtime.describe(), {
      unmap: (va, n) => p.cuMemUnmap(BigInt(va), n),
      freeReservation: (base, n) => p.cuMemAddressFree(BigInt(base), n),
      freeMalloc: (base) => p.cuMemFree(BigInt(base)),
      release: (h) => p.cuMemRelease(BigInt(h)),
      describe: () => p.runtime.describe(),
    });
    // The VMM calls use no context: only cuMemAlloc memory may stay behind on a faulted device.
    failed.push(...runs.filter((f) => !(faulted.length > 0 && f.startsWith('free malloc '))));
    if (faulted.length > 0) p.dispose();
    return failed;
  },
};
