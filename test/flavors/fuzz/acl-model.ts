/** The ACL flavor's call table for the fuzzer (Note [Fuzzer checks], episode.ts). */
import type { Machine } from '../../../src/backends/sim/machine.js';
import { createAcl } from '../../../src/entry/processes.js';
import type { AclFlavor } from '../../../src/flavors/acl/acl.js';
import * as C from '../../../src/flavors/acl/constants.js';
import { FUZZ_GRANULE as G } from './cuda-model.js';
import type { CallSpec, Episode, FlavorModel } from './episode.js';
import { corrupt } from './garbage.js';
import { aclResetCalls } from './settle-calls.js';
import { asNumber, crossDeviceWait, hostAccessCalls, smallCount, teardownRuns } from './shared.js';

const NPU = { name: 'FuzzNPU', totalMemory: 24 * G, minimumGranularity: G, recommendedGranularity: 2 * G };
/** Two devices: events and waits are drawn across them (issue 17). */
const DEVICES = [NPU, NPU];

type E = Episode<AclFlavor>;
const pid = (p: AclFlavor) => p.runtime.pid;

function size(ep: E): bigint | number {
  const n = ep.rng.pick([G, G, 2 * G, 3 * G, 4 * G]);
  return ep.rng.chance(0.5) ? BigInt(n) : n;
}

function prop(ep: E): object {
  const valid = {
    handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
    allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
    memAttr: ep.rng.pick([C.ACL_HBM_MEM_HUGE, C.ACL_HBM_MEM_NORMAL, C.ACL_MEM_HUGE]),
    location: { type: C.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
  };
  return ep.rng.chance(ep.garbageRate) ? corrupt(ep.rng, valid) : valid;
}

function descs(ep: E): unknown {
  const one = {
    location: { type: C.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    flags: ep.rng.pick([1, 3, 3, 3, 0]),
  };
  if (!ep.rng.chance(ep.garbageRate)) return [one];
  return ep.rng.chance(0.5) ? [corrupt(ep.rng, one)] : ep.arg(() => [one]);
}

const ptr = (ep: E, p: AclFlavor) => ep.arg(() => ep.pointer(pid(p), G));
const mem = (ep: E, p: AclFlavor) => ep.arg(() => ep.mappedPointer(p, G));
const handle = (ep: E, p: AclFlavor) => ep.arg(() => ep.handle(pid(p)));
const stream = (ep: E, p: AclFlavor) => ep.arg(() => ep.stream(pid(p)));
const zero = (ep: E) => ep.arg(() => 0);
const event = (ep: E, p: AclFlavor) => ep.arg(() => ep.event(pid(p)));
const count = (ep: E) => ep.arg(() => smallCount(ep.rng));

function memcpy(ep: E, p: AclFlavor, async: boolean) {
  const n = count(ep);
  const max = ep.arg(() => 64);
  const s = async ? stream(ep, p) : undefined;
  const call = (dst: unknown, src: unknown, kind: unknown) =>
    async
      ? p.aclrtMemcpyAsync(dst as never, max, src as never, n, kind as never, s as never)
      : p.aclrtMemcpy(dst as never, max, src as never, n, kind as never);
  switch (ep.rng.below(4)) {
    case 0: {
      const src = ep.host(64);
      const dst = mem(ep, p);
      const result = call(
        dst,
        src,
        ep.arg(() => C.ACL_MEMCPY_HOST_TO_DEVICE),
      );
      const write = !async && ep.isPlain(src) && { va: asNumber(dst), bytes: src.slice(0, asNumber(n)) };
      return { result, effects: write ? { write } : { unknown: { va: asNumber(dst), size: asNumber(n) } } };
    }
    case 1: {
      const dst = ep.host(64);
      const src = mem(ep, p);
      const result = call(
        dst,
        src,
        ep.arg(() => C.ACL_MEMCPY_DEVICE_TO_HOST),
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
      const result = call(
        dst,
        src,
        ep.arg(() => C.ACL_MEMCPY_DEVICE_TO_DEVICE),
      );
      const effects = async
        ? { unknown: { va: asNumber(dst), size: asNumber(n) } }
        : { copy: { dst: asNumber(dst), src: asNumber(src), size: asNumber(n) } };
      return { result, effects };
    }
    default:
      return {
        result: call(
          ep.host(64),
          ep.host(64),
          ep.arg(() => C.ACL_MEMCPY_HOST_TO_HOST),
        ),
      };
  }
}

const calls: CallSpec<AclFlavor>[] = [
  { name: 'aclInit', weight: 0.1, run: (ep, p) => ({ result: p.aclInit(ep.arg(() => null)) }) },
  { name: 'aclFinalize', weight: 0.02, run: (_ep, p) => ({ result: p.aclFinalize() }) },
  { name: 'aclrtSetDevice', weight: 0.3, run: (ep, p) => ({ result: p.aclrtSetDevice(zero(ep)) }) },
  {
    name: 'aclrtGetDeviceCount',
    weight: 0.2,
    run: (ep, p) => ({ result: p.aclrtGetDeviceCount(ep.box(0)) }),
  },
  { name: 'aclrtResetDevice', weight: 0.05, run: (ep, p) => ({ result: p.aclrtResetDevice(zero(ep)) }) },
  {
    name: 'aclrtReserveMemAddress',
    weight: 2,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.aclrtReserveMemAddress(
          b,
          ep.arg(() => size(ep)),
          zero(ep),
          ep.arg(() => 0n),
          zero(ep),
        ),
        onSuccess: () => ep.remember(ep.pointers, pid(p), b.value),
      };
    },
  },
  {
    name: 'aclrtReleaseMemAddress',
    run: (ep, p) => {
      const at = ptr(ep, p);
      return { result: p.aclrtReleaseMemAddress(at), onSuccess: () => ep.forget(ep.pointers, pid(p), at) };
    },
  },
  {
    name: 'aclrtMallocPhysical',
    weight: 2,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.aclrtMallocPhysical(
          b,
          ep.arg(() => size(ep)),
          prop(ep) as never,
          zero(ep),
        ),
        onSuccess: () => ep.remember(ep.handles, pid(p), b.value),
      };
    },
  },
  {
    name: 'aclrtFreePhysical',
    run: (ep, p) => {
      const h = handle(ep, p);
      return { result: p.aclrtFreePhysical(h), onSuccess: () => ep.forget(ep.handles, pid(p), h) };
    },
  },
  {
    name: 'aclrtMapMem',
    weight: 3,
    run: (ep, p) => {
      const t = ep.rng.chance(0.7) ? ep.mapTarget(p) : undefined;
      if (t === undefined)
        return {
          result: p.aclrtMapMem(
            ptr(ep, p),
            ep.arg(() => size(ep)),
            zero(ep),
            handle(ep, p),
            zero(ep),
          ),
        };
      return {
        result: p.aclrtMapMem(
          ep.arg(() => t[0]),
          ep.arg(() => t[1]),
          zero(ep),
          ep.arg(() => t[2]),
          zero(ep),
        ),
      };
    },
  },
  {
    // aclrtMapMem grants the memory's own device read-write; this one maps with no access at all.
    name: 'aclrtMemMapNoAccess',
    run: (ep, p) => {
      const t = ep.mapTarget(p);
      if (t === undefined)
        return {
          result: p.aclrtMemMapNoAccess(
            ptr(ep, p),
            ep.arg(() => size(ep)),
            zero(ep),
            handle(ep, p),
            zero(ep),
          ),
        };
      return {
        result: p.aclrtMemMapNoAccess(
          ep.arg(() => t[0]),
          ep.arg(() => t[1]),
          zero(ep),
          ep.arg(() => t[2]),
          zero(ep),
        ),
      };
    },
  },
  {
    name: 'aclrtUnmapMem',
    weight: 1.5,
    run: (ep, p) => {
      const m = ep.rng.chance(0.5) ? ep.mapping(p) : undefined;
      return { result: p.aclrtUnmapMem(m === undefined ? ptr(ep, p) : ep.arg(() => BigInt(m[0]))) };
    },
  },
  {
    name: 'aclrtMemSetAccess',
    weight: 3,
    run: (ep, p) => {
      const [at, n] = ep.accessRange(
        p,
        () => ptr(ep, p),
        () => size(ep),
      );
      return {
        result: p.aclrtMemSetAccess(
          at,
          n,
          descs(ep) as never,
          ep.arg(() => 1),
        ),
      };
    },
  },
  {
    name: 'aclrtMemGetAccess',
    run: (ep, p) => ({
      result: p.aclrtMemGetAccess(
        ptr(ep, p),
        ep.arg(() => ({ type: C.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 })),
        ep.box(0),
      ),
    }),
  },
  {
    name: 'aclrtMemRetainAllocationHandle',
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.aclrtMemRetainAllocationHandle(mem(ep, p), b),
        onSuccess: () => ep.remember(ep.handles, pid(p), b.value),
      };
    },
  },
  {
    name: 'aclrtMemGetAllocationGranularity',
    weight: 0.3,
    run: (ep, p) => ({
      result: p.aclrtMemGetAllocationGranularity(
        prop(ep) as never,
        ep.arg(() => ep.rng.below(2)),
        ep.box(0),
      ),
    }),
  },
  {
    name: 'aclrtMemGetAllocationPropertiesFromHandle',
    weight: 0.5,
    run: (ep, p) => ({
      result: p.aclrtMemGetAllocationPropertiesFromHandle(handle(ep, p), ep.box(undefined as never)),
    }),
  },
  {
    name: 'aclrtMemExportToShareableHandle',
    run: (ep, p, peer) => {
      const b = ep.box(0n);
      const h = handle(ep, p);
      const flags = ep.arg(() =>
        ep.rng.pick([C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT, C.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION]),
      );
      return {
        result: p.aclrtMemExportToShareableHandle(h, zero(ep), flags, b),
        onSuccess: () => {
          // Tokens are machine-wide: the peer imports the same number.
          if (typeof b.value !== 'bigint') return;
          const token = Number(b.value);
          const key = ep.shadowKey(pid(p), BigInt(asNumber(h)));
          ep.exported.set(`${pid(peer)}:${token}`, key);
          ep.fds.get(pid(p))?.push(token);
          ep.fds.get(pid(peer))?.push(token);
        },
      };
    },
  },
  {
    name: 'aclrtMemSetPidToShareableHandle',
    run: (ep, p, peer) => ({
      result: p.aclrtMemSetPidToShareableHandle(
        ep.arg(() => ep.fd(pid(p))),
        ep.arg(() => [pid(peer)]),
        ep.arg(() => 1),
      ),
    }),
  },
  {
    name: 'aclrtMemImportFromShareableHandle',
    run: (ep, p) => {
      const b = ep.box(0n);
      const token = ep.arg(() => ep.fd(pid(p)));
      const held = ep.handleValues(p);
      return {
        result: p.aclrtMemImportFromShareableHandle(token, zero(ep), b),
        onSuccess: () => {
          ep.remember(ep.handles, pid(p), b.value);
          // The new handle as the process holds it (Note [What a box reads back], episode.ts).
          ep.alias(pid(p), ep.newHandle(p, held) ?? b.value, `${pid(p)}:${asNumber(token)}`);
        },
      };
    },
  },
  {
    name: 'aclrtDeviceGetBareTgid',
    weight: 0.2,
    run: (ep, p) => ({ result: p.aclrtDeviceGetBareTgid(ep.box(0)) }),
  },
  {
    name: 'aclrtMalloc',
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.aclrtMalloc(
          b,
          ep.arg(() => ep.rng.pick([1, 100, G, 2 * G])),
          ep.arg(() => 0),
        ),
        onSuccess: () => ep.remember(ep.pointers, pid(p), b.value),
      };
    },
  },
  {
    name: 'aclrtFree',
    run: (ep, p) => {
      const at = ptr(ep, p);
      return { result: p.aclrtFree(at), onSuccess: () => ep.forget(ep.pointers, pid(p), at) };
    },
  },
  {
    name: 'aclrtGetMemInfo',
    weight: 0.3,
    run: (ep, p) => ({
      result: p.aclrtGetMemInfo(
        ep.arg(() => C.ACL_HBM_MEM),
        ep.box(0),
        ep.box(0),
      ),
    }),
  },
  { name: 'aclrtMemcpy', weight: 6, run: (ep, p) => memcpy(ep, p, false) },
  { name: 'aclrtMemcpyAsync', weight: 1, run: (ep, p) => memcpy(ep, p, true) },
  {
    name: 'aclrtMemset',
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      const value = ep.arg(() => ep.rng.below(256));
      return {
        result: p.aclrtMemset(
          dst,
          ep.arg(() => 64),
          value,
          n,
        ),
        effects: { fill: { va: asNumber(dst), value: asNumber(value), size: asNumber(n) } },
      };
    },
  },
  {
    name: 'aclrtMemsetAsync',
    run: (ep, p) => {
      const n = count(ep);
      const dst = mem(ep, p);
      return {
        result: p.aclrtMemsetAsync(
          dst,
          ep.arg(() => 64),
          ep.arg(() => 5),
          n,
          stream(ep, p),
        ),
        effects: { unknown: { va: asNumber(dst), size: asNumber(n) } },
      };
    },
  },
  { name: 'aclrtGetDevice', weight: 0.2, run: (ep, p) => ({ result: p.aclrtGetDevice(ep.box(0)) }) },
  {
    name: 'aclrtCreateStream',
    weight: 0.5,
    run: (ep, p) => {
      const b = ep.box(0n);
      return { result: p.aclrtCreateStream(b), onSuccess: () => ep.remember(ep.streams, pid(p), b.value) };
    },
  },
  {
    name: 'aclrtSynchronizeStream',
    weight: 0.5,
    run: (ep, p) => ({ result: p.aclrtSynchronizeStream(stream(ep, p)) }),
  },
  {
    name: 'aclrtDestroyStream',
    weight: 0.3,
    run: (ep, p) => {
      const s = stream(ep, p);
      return { result: p.aclrtDestroyStream(s), onSuccess: () => ep.forget(ep.streams, pid(p), s) };
    },
  },
  { name: 'aclrtSynchronizeDevice', weight: 0.3, run: (_ep, p) => ({ result: p.aclrtSynchronizeDevice() }) },
  {
    // Drops the stream's queued work: those bytes were unknown to the shadow already.
    name: 'aclrtDestroyStreamForce',
    weight: 0.2,
    run: (ep, p) => {
      const s = stream(ep, p);
      return { result: p.aclrtDestroyStreamForce(s), onSuccess: () => ep.forget(ep.streams, pid(p), s) };
    },
  },
  {
    // Note [ACL IPC keys]: a key names a token, so the token joins both pools and the peer's
    // import of it aliases the exporter's memory.
    name: 'aclrtIpcMemGetExportKey',
    weight: 0.5,
    run: (ep, p, peer) => {
      const at = ptr(ep, p);
      const key = ep.box('');
      const flags = ep.arg(() =>
        ep.rng.pick([
          C.ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT,
          C.ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
        ]),
      );
      const layout = p.runtime.describe();
      return {
        result: p.aclrtIpcMemGetExportKey(
          at,
          ep.arg(() => ep.rng.pick([1, 4096, G])),
          key,
          ep.arg(() => C.ACL_IPC_KEY_LEN),
          flags,
        ),
        onSuccess: () => {
          const token = ipcToken(key.value);
          if (token === undefined) return;
          const r = layout.reservations.find((x) => x.base === asNumber(at) && x.origin === 'malloc');
          const handle = r?.mappings[0]?.handle;
          if (handle !== undefined) ep.exported.set(`${pid(peer)}:${token}`, ep.shadowKey(pid(p), handle));
          ep.fds.get(pid(p))?.push(token);
          ep.fds.get(pid(peer))?.push(token);
        },
      };
    },
  },
  {
    name: 'aclrtIpcMemSetImportPid',
    weight: 0.3,
    run: (ep, p, peer) => ({
      result: p.aclrtIpcMemSetImportPid(
        ep.arg(() => ipcKey(ep.fd(pid(p)))),
        ep.arg(() => [pid(peer)]),
        ep.arg(() => 1),
      ),
    }),
  },
  {
    name: 'aclrtIpcMemImportByKey',
    weight: 0.5,
    run: (ep, p) => {
      const b = ep.box(0n);
      const token = ep.fd(pid(p));
      const key = ep.arg(() => ipcKey(token));
      const held = ep.handleValues(p);
      const bases = new Set(p.runtime.describe().reservations.map((r) => r.base));
      return {
        result: p.aclrtIpcMemImportByKey(
          b,
          key,
          ep.arg(() => ep.rng.pick([0, 1])),
        ),
        onSuccess: () => {
          // The new memory as the process holds it (Note [What a box reads back], episode.ts).
          const made = ep.newHandle(p, held);
          if (made !== undefined && key === ipcKey(token)) ep.alias(pid(p), made, `${pid(p)}:${token}`);
          const r = p.runtime.describe().reservations.find((x) => !bases.has(x.base));
          if (r !== undefined) ep.remember(ep.pointers, pid(p), BigInt(r.base));
        },
      };
    },
  },
  {
    name: 'aclrtIpcMemClose',
    weight: 0.4,
    run: (ep, p) => ({ result: p.aclrtIpcMemClose(ep.arg(() => ipcKey(ep.fd(pid(p))))) }),
  },
  {
    name: 'aclrtCreateEvent',
    weight: 0.3,
    run: (ep, p) => {
      const b = ep.box(0n);
      return { result: p.aclrtCreateEvent(b), onSuccess: () => ep.remember(ep.events, pid(p), b.value) };
    },
  },
  {
    name: 'aclrtCreateEventWithFlag',
    weight: 0.2,
    run: (ep, p) => {
      const b = ep.box(0n);
      return {
        result: p.aclrtCreateEventWithFlag(
          b,
          ep.arg(() => ep.rng.pick([1, 8, 9, 2, 0, 4])),
        ),
        onSuccess: () => ep.remember(ep.events, pid(p), b.value),
      };
    },
  },
  {
    name: 'aclrtRecordEvent',
    weight: 0.5,
    run: (ep, p) => ({ result: p.aclrtRecordEvent(event(ep, p), stream(ep, p)) }),
  },
  {
    name: 'aclrtQueryEventStatus',
    weight: 0.4,
    run: (ep, p) => ({ result: p.aclrtQueryEventStatus(event(ep, p), ep.box(0)) }),
  },
  {
    name: 'aclrtSynchronizeEvent',
    weight: 0.3,
    run: (ep, p) => ({ result: p.aclrtSynchronizeEvent(event(ep, p)) }),
  },
  {
    name: 'aclrtStreamWaitEvent',
    weight: 0.4,
    run: (ep, p) => ({ result: p.aclrtStreamWaitEvent(stream(ep, p), event(ep, p)) }),
  },
  {
    name: 'aclrtResetEvent',
    weight: 0.2,
    run: (ep, p) => ({ result: p.aclrtResetEvent(event(ep, p), stream(ep, p)) }),
  },
  {
    name: 'aclrtDestroyEvent',
    weight: 0.2,
    run: (ep, p) => {
      const e = event(ep, p);
      return { result: p.aclrtDestroyEvent(e), onSuccess: () => ep.forget(ep.events, pid(p), e) };
    },
  },
  { name: 'aclGetRecentErrMsg', weight: 0.3, run: (_ep, p) => ({ result: p.aclGetRecentErrMsg() }) },
  ...hostAccessCalls<AclFlavor>({ mem }),
  crossDeviceWait<AclFlavor>('aclrtRecordEvent+aclrtStreamWaitEvent+aclrtSynchronizeStream', {
    success: C.ACL_SUCCESS,
    defaultStream: null,
    event,
    stream,
    mem,
    switchDevice: (ep, p) => void p.aclrtSetDevice(ep.rng.below(DEVICES.length)),
    pieces: {
      makeStream: (p, b) => p.aclrtCreateStream(b),
      makeEvent: (p, b) => p.aclrtCreateEvent(b),
      makeMemory: (p, b) => p.aclrtMalloc(b, 64, C.ACL_MEM_MALLOC_HUGE_FIRST),
      free: (p, { stream, event, memory }) => {
        p.aclrtFree(memory);
        p.aclrtDestroyEvent(event);
        p.aclrtDestroyStream(stream);
      },
    },
    queue: (p, m, s) =>
      void p.aclrtMemcpyAsync(
        new Uint8Array(64),
        64,
        m as never,
        64,
        C.ACL_MEMCPY_DEVICE_TO_HOST,
        s as never,
      ),
    record: (p, e, s) => p.aclrtRecordEvent(e as never, s as never),
    wait: (p, s, e) => p.aclrtStreamWaitEvent(s as never, e as never),
    synchronize: (p, s) => p.aclrtSynchronizeStream(s as never),
    complete: (p, e) => {
      const status = { value: -1 };
      return (
        p.aclrtQueryEventStatus(e as never, status) === C.ACL_SUCCESS &&
        status.value === C.ACL_EVENT_RECORDED_STATUS_COMPLETE
      );
    },
  }),
  ...aclResetCalls(DEVICES.length),
];

/** An IPC key as aclrtIpcMemGetExportKey writes it: its token in hex (Note [ACL IPC keys], src/flavors/acl/sharing.ts). */
function ipcKey(token: number): string {
  return `ipc-${token.toString(16).padStart(16, '0')}`;
}

function ipcToken(key: unknown): number | undefined {
  return typeof key === 'string' && /^ipc-[0-9a-f]{16}$/.test(key)
    ? Number.parseInt(key.slice(4), 16)
    : undefined;
}

export const ACL_MODEL: FlavorModel<AclFlavor> = {
  vendor: 'ACL',
  devices: DEVICES,
  codes: new Set([C.ACL_SUCCESS, ...C.ACL_ERROR_NAMES.keys()]),
  success: C.ACL_SUCCESS,
  make: (machine: Machine, report) => createAcl({ machine, report }),
  prepare(p) {
    p.aclInit(null);
    p.aclrtSetDevice(0);
  },
  calls,
  teardown(ep, p) {
    const failed: string[] = [];
    // aclFinalize or aclrtResetDevice may have run: initialise again (a repeat is refused, harmlessly).
    p.aclInit(null);
    for (const d of [1, 0]) {
      if (p.aclrtSetDevice(d) !== 0) failed.push('aclrtSetDevice');
      p.aclrtSynchronizeDevice();
      if (p.aclrtSynchronizeDevice() !== 0) failed.push('aclrtSynchronizeDevice');
    }
    // A device reset (or aclFinalize) took its events with it: those answer ACL_ERROR_RT_PARAM_INVALID.
    for (const e of ep.events.get(pid(p)) ?? []) {
      const r = p.aclrtDestroyEvent(e);
      if (r !== 0 && r !== C.ACL_ERROR_RT_PARAM_INVALID) failed.push('aclrtDestroyEvent');
    }
    // Memory imported by key is closed by key, each import once (aclrtFree refuses it); a failing close
    // just means no import of that key is left. In the exporter a close withdraws the key.
    for (const token of new Set(ep.fds.get(pid(p)) ?? []))
      for (let n = 0; n < 64 && p.aclrtIpcMemClose(ipcKey(token)) === 0; n++);
    failed.push(
      ...teardownRuns(
        p.runtime.describe(),
        {
          unmap: (va) => p.aclrtUnmapMem(BigInt(va)),
          freeReservation: (base) => p.aclrtReleaseMemAddress(BigInt(base)),
          freeMalloc: (base) => p.aclrtFree(BigInt(base)),
          release: (h) => p.aclrtFreePhysical(BigInt(h)),
          describe: () => p.runtime.describe(),
        },
        false,
      ),
    );
    return failed;
  },
};
