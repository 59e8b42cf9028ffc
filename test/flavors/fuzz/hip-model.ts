/** The HIP flavor's call table for the fuzzer (Note [Fuzzer checks], episode.ts). */
import type { Machine } from '../../../src/backends/sim/machine.js';
import { createHip } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';
import { FUZZ_GRANULE as G } from './cuda-model.js';
import type { CallSpec, Episode, FlavorModel } from './episode.js';
import { corrupt } from './garbage.js';
import { settleHipCalls } from './settle-calls.js';
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

const GPU = { name: 'FuzzGPU', totalMemory: 24 * G, minimumGranularity: G, recommendedGranularity: 2 * G };
/** Two devices: events and waits are drawn across them (issue 17). */
const DEVICES = [GPU, GPU];

type E = Episode<HipFlavor>;
const pid = (p: HipFlavor) => p.runtime.pid;

function size(ep: E): bigint | number {
  const n = ep.rng.pick([G, G, 2 * G, 3 * G, 4 * G]);
  return ep.rng.chance(0.5) ? BigInt(n) : n;
}

function prop(ep: E): object {
  const valid = {
    type: C.hipMemAllocationTypePinned,
    requestedHandleTypes: ep.rng.pick([C.hipMemHandleTypeNone, C.hipMemHandleTypePosixFileDescriptor]),
    location: ep.rng.chance(0.9)
      ? { type: C.hipMemLocationTypeDevice, id: 0 }
      : { type: C.hipMemLocationTypeHostNuma, id: 0 },
  };
  return ep.rng.chance(ep.garbageRate) ? corrupt(ep.rng, valid) : valid;
}

function descs(ep: E): unknown {
  const one = { location: { type: C.hipMemLocationTypeDevice, id: 0 }, flags: ep.rng.pick([1, 3, 3, 3, 0]) };
  if (!ep.rng.chance(ep.garbageRate)) return ep.rng.chance(0.2) ? one : [one];
  return ep.rng.chance(0.5) ? [corrupt(ep.rng, one)] : ep.arg(() => [one]);
}

const ptr = (ep: E, p: HipFlavor) => ep.arg(() => ep.pointer(pid(p), G));
const mem = (ep: E, p: HipFlavor) => ep.arg(() => ep.mappedPointer(p, G));
const handle = (ep: E, p: HipFlavor) => ep.arg(() => ep.handle(pid(p)));
const stream = (ep: E, p: HipFlavor) =>
  ep.arg(() => (ep.rng.chance(0.1) ? C.hipStreamPerThread : ep.stream(pid(p))));
const zero = (ep: E) => ep.arg(() => 0);
const event = (ep: E, p: HipFlavor) => ep.arg(() => ep.event(pid(p)));
const count = (ep: E) => ep.arg(() => smallCount(ep.rng));

/** hipMemcpy in one of its directions, sync or on a stream. */
function memcpy(ep: E, p: HipFlavor, async: boolean) {
  const n = count(ep);
  const s = async ? stream(ep, p) : 0n;
  switch (ep.rng.below(4)) {
    case 0: {
      const src = ep.host(64);
      const dst = mem(ep, p);
      const result = p.hipMemcpyAsync(
        dst,
        src,
        n,
        ep.arg(() => C.hipMemcpyHostToDevice),
        s,
      );
      const write = !async && ep.isPlain(src) && { va: asNumber(dst), bytes: src.slice(0, asNumber(n)) };
      return { result, effects: write ? { write } : { unknown: { va: asNumber(dst), size: asNumber(n) } } };
    }
    case 1: {
      const dst = ep.host(64);
      const src = mem(ep, p);
      const result = p.hipMemcpyAsync(
        dst,
        src,
        n,
        ep.arg(() => C.hipMemcpyDeviceToHost),
        s,
      );
      return {
        result,
        effects:
          !async && ep.isPlain(dst)
            ? { read: { va: asNumber(src), into: dst, size: asNumber(n) } }
            : undefined,
      };
    }
    case 2: {
      const dst = mem(ep, p);
      const src = mem(ep, p);
      const result = p.hipMemcpyAsync(
        dst,
        src,
        n,
        ep.arg(() => ep.rng.pick([C.hipMemcpyDeviceToDevice, C.hipMemcpyDefault])),
        s,
      );
      const effects = async
        ? { unknown: { va: asNumber(dst), size: asNumber(n) } }
        : { copy: { dst: asNumber(dst), src: asNumber(src), size: asNumber(n) } };
      return { result, effects };
    }
    default:
      return {
        result: p.hipMemcpy(
          ep.host(64),
          ep.host(64),
          n,
          ep.arg(() => C.hipMemcpyHostToHost),
        ),
      };
  }
}

const calls: CallSpec<HipFlavor>[] = [
  { name: 'hipInit', weight: 0.2, run: (ep, p) => ({ result: p.hipInit(zero(ep)) }) },
  { name: 'hipGetDeviceCount', weight: 0.2, run: (ep, p) => ({ result: p.hipGetDeviceCount(ep.box(0)) }) },
  { name: 'hipSetDevice', weight: 0.2, run: (ep, p) => ({ result: p.hipSetDevice(zero(ep)) }) },
  { name: 'hipDeviceGet', weight: 0.2, run: (ep, p) => ({ result: p.hipDeviceGet(ep.box(0), zero(ep)) }) },
  {
    name: 'hipDeviceGetAttribute',
    weight: 0.2,
    run: (ep, p) => ({
      result: p.hipDeviceGetAttribute(
        ep.box(0),
        ep.arg(() => ep.rng.pick([6, 23, 61, 63, 89, 84, 10_000])),
        zero(ep),
      ),
    }),
  },
  {
    name: 'hipGetDeviceProperties',
    weight: 0.2,
    run: (ep, p) => ({ result: p.hipGetDeviceProperties(ep.box(undefined as never), zero(ep)) }),
  },
  {
    name: 'hipDeviceEnablePeerAccess',
    weight: 0.2,
    run: (ep, p) => ({ result: p.hipDeviceEnablePeerAccess(zero(ep), zero(ep)) }),
  },
  {
    name: 'hipDeviceDisablePeerAccess',
    weight: 0.2,
    run: (ep, p) => ({ result: p.hipDeviceDisablePeerAccess(zero(ep)) }),
  },
  {
    name: 'hipDeviceCanAccessPeer',
    weight: 0.2,
    run: (ep, p) => ({ result: p.hipDeviceCanAccessPeer(ep.box(0), zero(ep), zero(ep)) }),
  },
  {
    name: 'hipRuntimeGetVersion',
    weight: 0.2,
    run: (ep, p) => ({ result: p.hipRuntimeGetVersion(ep.box(0)) }),
  },
  { name: 'hipGetDevice', weight: 0.2, run: (ep, p) => ({ result: p.hipGetDevice(ep.box(0)) }) },
  { name: 'hipDeviceSynchronize', weight: 0.3, run: (_ep, p) => ({ result: p.hipDeviceSynchronize() }) },
  {
    name: 'hipMemGetAllocationGranularity',
    weight: 0.3,
    run: (ep, p) => ({
      result: p.hipMemGetAllocationGranularity(
        ep.box(0),
        prop(ep) as never,
        ep.arg(() => ep.rng.below(2)),
      ),
    }),
  },
  {
    name: 'hipMemAddressReserve',
    weight: 2,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.hipMemAddressReserve(
          b,
          ep.arg(() => size(ep)),
          ep.arg(() => 0),
          ep.arg(() => 0n),
          zero(ep),
        ),
        onSuccess: () => ep.remember(ep.pointers, pid(p), b.value),
      };
    },
  },
  ...mirroredVmmCalls<HipFlavor>('hip', { size, prop, ptr, handle, zero, pid }),
  {
    name: 'hipMemSetAccess',
    weight: 3,
    run: (ep, p) => {
      const [at, n] = ep.accessRange(
        p,
        () => ptr(ep, p),
        () => size(ep),
      );
      const c = ep.arg(() => 1);
      // hip_vm.cpp applies descriptors one by one: a bad later one fails the call after the earlier took effect.
      return { result: p.hipMemSetAccess(at, n, descs(ep) as never, c), partial: asNumber(c) !== 1 };
    },
  },
  {
    name: 'hipMemGetAccess',
    run: (ep, p) => ({
      result: p.hipMemGetAccess(
        ep.box(0),
        ep.arg(() => ({ type: C.hipMemLocationTypeDevice, id: 0 })),
        ptr(ep, p),
      ),
    }),
  },
  {
    name: 'hipHostMalloc',
    weight: 0.2,
    run: (ep, p) => {
      const b = ep.box<Uint8Array | null>(null);
      const result = p.hipHostMalloc(b, count(ep), zero(ep));
      // Free what was allocated at once: the fuzzer keeps no host buffers; a second free is refused.
      if (result === 0 && b.value !== null) p.hipHostFree(b.value);
      return { result };
    },
  },
  {
    name: 'hipHostFree',
    weight: 0.2,
    run: (ep, p) => ({ result: p.hipHostFree(ep.arg(() => new Uint8Array(8)) as never) }),
  },
  {
    name: 'hipMemGetAddressRange',
    weight: 0.3,
    run: (ep, p) => ({ result: p.hipMemGetAddressRange(ep.box(0n), ep.box(0), mem(ep, p)) }),
  },
  {
    name: 'hipPointerGetAttributes',
    weight: 0.3,
    run: (ep, p) => ({ result: p.hipPointerGetAttributes(ep.box(undefined as never), mem(ep, p)) }),
  },
  {
    name: 'hipMemRetainAllocationHandle',
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.hipMemRetainAllocationHandle(b, mem(ep, p)),
        onSuccess: () => ep.remember(ep.handles, pid(p), b.value),
      };
    },
  },
  {
    name: 'hipMemGetAllocationPropertiesFromHandle',
    weight: 0.5,
    run: (ep, p) => ({
      result: p.hipMemGetAllocationPropertiesFromHandle(ep.box(undefined as never), handle(ep, p)),
    }),
  },
  ...mirroredFdCalls<HipFlavor>('hip', C.hipMemHandleTypePosixFileDescriptor, { handle, zero, pid }),
  {
    name: 'hipMalloc',
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.hipMalloc(
          b,
          ep.arg(() => ep.rng.pick([0, 1, 100, G, 2 * G])),
        ),
        onSuccess: () => ep.remember(ep.pointers, pid(p), b.value),
      };
    },
  },
  {
    name: 'hipFree',
    run: (ep, p) => {
      const at = ptr(ep, p);
      return { result: p.hipFree(at), onSuccess: () => ep.forget(ep.pointers, pid(p), at) };
    },
  },
  { name: 'hipMemGetInfo', weight: 0.3, run: (ep, p) => ({ result: p.hipMemGetInfo(ep.box(0), ep.box(0)) }) },
  { name: 'hipMemcpy', weight: 6, run: (ep, p) => memcpy(ep, p, false) },
  { name: 'hipMemcpyAsync', weight: 1, run: (ep, p) => memcpy(ep, p, true) },
  ...mirroredSetCalls<HipFlavor>(
    { sync: 'hipMemset', async: 'hipMemsetAsync', asyncValue: 9 },
    { mem, count, stream },
  ),
  {
    name: 'hipMemsetD32',
    weight: 0.7,
    run: (ep, p) => {
      const n = ep.arg(() => ep.rng.pick([0, 1, 4, 16]));
      const dst = mem(ep, p);
      const value = ep.arg(() => ep.rng.below(2 ** 32));
      const bytes = widePattern(value, n, 4);
      return {
        result: p.hipMemsetD32(dst, value, n),
        effects: bytes ? { write: { va: asNumber(dst), bytes } } : undefined,
      };
    },
  },
  {
    name: 'hipMemcpyHtoD',
    run: (ep, p) => {
      const n = count(ep);
      const src = ep.host(64);
      const dst = mem(ep, p);
      const effects = ep.isPlain(src)
        ? { write: { va: asNumber(dst), bytes: src.slice(0, asNumber(n)) } }
        : { unknown: { va: asNumber(dst), size: asNumber(n) } };
      return { result: p.hipMemcpyHtoD(dst, src, n), effects };
    },
  },
  {
    name: 'hipMemcpyDtoH',
    run: (ep, p) => {
      const n = count(ep);
      const dst = ep.host(64);
      const src = mem(ep, p);
      return {
        result: p.hipMemcpyDtoH(dst, src, n),
        effects: ep.isPlain(dst) ? { read: { va: asNumber(src), into: dst, size: asNumber(n) } } : undefined,
      };
    },
  },
  {
    name: 'hipMemcpyPeer',
    weight: 0.5,
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      const src = mem(ep, p);
      return {
        result: p.hipMemcpyPeer(dst, zero(ep), src, zero(ep), n),
        // A 0-byte peer copy touches nothing, so it does not run the queued work a synchronous copy runs.
        effects:
          asNumber(n) > 0
            ? { copy: { dst: asNumber(dst), src: asNumber(src), size: asNumber(n) } }
            : undefined,
      };
    },
  },
  {
    name: 'hipMemcpyDtoD',
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      const src = mem(ep, p);
      return {
        result: p.hipMemcpyDtoD(dst, src, n),
        effects: { copy: { dst: asNumber(dst), src: asNumber(src), size: asNumber(n) } },
      };
    },
  },
  { name: 'hipGetLastError', weight: 0.2, run: (_ep, p) => ({ result: p.hipGetLastError() }) },
  { name: 'hipPeekAtLastError', weight: 0.2, run: (_ep, p) => ({ result: p.hipPeekAtLastError() }) },
  {
    name: 'hipStreamCreateWithFlags',
    weight: 0.3,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.hipStreamCreateWithFlags(
          b,
          ep.arg(() => ep.rng.below(2)),
        ),
        onSuccess: () => ep.remember(ep.streams, pid(p), b.value),
      };
    },
  },
  {
    name: 'hipStreamCreate',
    weight: 0.5,
    run: (ep, p) => {
      const b = ep.box(0n);
      return { result: p.hipStreamCreate(b), onSuccess: () => ep.remember(ep.streams, pid(p), b.value) };
    },
  },
  {
    name: 'hipStreamSynchronize',
    weight: 0.5,
    run: (ep, p) => ({ result: p.hipStreamSynchronize(stream(ep, p)) }),
  },
  {
    name: 'hipStreamDestroy',
    weight: 0.3,
    run: (ep, p) => {
      const s = stream(ep, p);
      return { result: p.hipStreamDestroy(s), onSuccess: () => ep.forget(ep.streams, pid(p), s) };
    },
  },
  {
    name: 'hipEventCreateWithFlags',
    weight: 0.4,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.hipEventCreateWithFlags(
          b,
          ep.arg(() => ep.rng.pick([0, 1, 2, 2, 6, 4, 0x4000_0000, 0xc000_0000])),
        ),
        onSuccess: () => ep.remember(ep.events, pid(p), b.value),
      };
    },
  },
  {
    name: 'hipEventCreate',
    weight: 0.1,
    run: (ep, p) => {
      const b = ep.box(0n);
      return { result: p.hipEventCreate(b), onSuccess: () => ep.remember(ep.events, pid(p), b.value) };
    },
  },
  {
    name: 'hipEventRecord',
    weight: 0.5,
    run: (ep, p) => ({ result: p.hipEventRecord(event(ep, p), stream(ep, p)) }),
  },
  ...mirroredEventCalls<HipFlavor>('hip', { event, stream, pid }),
  {
    name: 'hipDeviceReset',
    weight: 0.02,
    run: (ep, p) => ({
      result: p.hipDeviceReset(),
      // Every stream and event of the device went with it.
      onSuccess: () => {
        ep.prune(ep.streams, pid(p), () => false);
        ep.prune(ep.events, pid(p), () => false);
      },
    }),
  },
  { name: 'hipGetErrorName', weight: 0.2, run: (ep, p) => ({ result: p.hipGetErrorName(ep.arg(() => 1)) }) },
  {
    name: 'hipGetErrorString',
    weight: 0.2,
    run: (ep, p) => ({ result: p.hipGetErrorString(ep.arg(() => 2)) }),
  },
  ...hostAccessCalls<HipFlavor>({ mem }),
  crossDeviceWait<HipFlavor>('hipEventRecord+hipStreamWaitEvent+hipStreamSynchronize', {
    success: C.hipSuccess,
    defaultStream: null,
    event,
    stream,
    mem,
    switchDevice: (ep, p) => void p.hipSetDevice(ep.rng.below(DEVICES.length)),
    pieces: {
      makeStream: (p, b) => p.hipStreamCreate(b),
      makeEvent: (p, b) => p.hipEventCreateWithFlags(b, C.hipEventDisableTiming),
      makeMemory: (p, b) => p.hipMalloc(b, 64),
      free: (p, { stream, event, memory }) => {
        p.hipFree(memory);
        p.hipEventDestroy(event);
        p.hipStreamDestroy(stream);
      },
    },
    queue: (p, m, s) =>
      void p.hipMemcpyAsync(new Uint8Array(64), m as never, 64, C.hipMemcpyDeviceToHost, s as never),
    record: (p, e, s) => p.hipEventRecord(e as never, s as never),
    wait: (p, s, e) => p.hipStreamWaitEvent(s as never, e as never, 0),
    synchronize: (p, s) => p.hipStreamSynchronize(s as never),
    complete: (p, e) => p.hipEventQuery(e as never) === C.hipSuccess,
  }),
  ...settleHipCalls(DEVICES.length),
];

export const HIP_MODEL: FlavorModel<HipFlavor> = {
  vendor: 'HIP',
  devices: DEVICES,
  codes: new Set(C.HIP_ERRORS.keys()),
  success: C.hipSuccess,
  make: (machine: Machine, report) => createHip({ machine, report }),
  prepare: (p) => void p.hipSetDevice(0),
  calls,
  teardown(ep, p) {
    const failed: string[] = [];
    for (const d of [1, 0]) {
      p.hipSetDevice(d);
      p.hipDeviceSynchronize();
      if (p.hipDeviceSynchronize() !== 0) failed.push('hipDeviceSynchronize');
    }
    for (const s of ep.streams.get(pid(p)) ?? [])
      if (p.hipStreamDestroy(s) !== 0) failed.push('hipStreamDestroy');
    for (const e of ep.events.get(pid(p)) ?? [])
      if (p.hipEventDestroy(e) !== 0) failed.push('hipEventDestroy');
    failed.push(
      ...teardownRuns(
        p.runtime.describe(),
        {
          unmap: (va, n) => p.hipMemUnmap(BigInt(va), n),
          freeReservation: (base, n) => p.hipMemAddressFree(BigInt(base), n),
          freeMalloc: (base) => p.hipFree(BigInt(base)),
          release: (h) => p.hipMemRelease(BigInt(h)),
          describe: () => p.runtime.describe(),
        },
        false,
      ),
    );
    return failed;
  },
};
