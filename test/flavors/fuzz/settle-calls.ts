/**
 * The fuzzer's calls for issue 17, item 4's settled rules (Note [Fuzzer
 * checks], rules destroyed, stack, crossStream, reset and version): each is
 * a short sequence that makes what it needs, checks the rule against what
 * the sequence itself knows, and gives back what it made.
 */
import type { AclFlavor } from '../../../src/flavors/acl/acl.js';
import * as A from '../../../src/flavors/acl/constants.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import * as H from '../../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';
import type { CallSpec } from './episode.js';

/** The rules these calls check (Note [Fuzzer checks]). */
export type SettleRule = 'destroyed' | 'stack' | 'crossStream' | 'reset' | 'version';
type Broken = { rule: SettleRule; detail: string };

function current(p: CudaFlavor): bigint {
  const b = { value: 0n };
  return p.cuCtxGetCurrent(b) === C.CUDA_SUCCESS ? b.value : -1n;
}

function primary(p: CudaFlavor, device: number): bigint {
  const b = { value: 0n };
  return p.cuDevicePrimaryCtxRetain(b, device) === C.CUDA_SUCCESS ? b.value : 0n;
}

/**
 * Whether the current context's device faulted (Note [Faulted devices]):
 * cuMemGetInfo, which changes nothing and runs no queued work, answers 719.
 */
export function currentFaulted(p: CudaFlavor): boolean {
  return p.cuMemGetInfo({ value: 0 }, { value: 0 }) === C.CUDA_ERROR_LAUNCH_FAILED;
}

/** Whether `ctx`'s device faulted. Leaves `ctx` current. */
function faulted(p: CudaFlavor, ctx: bigint): boolean {
  return p.cuCtxSetCurrent(ctx) === C.CUDA_SUCCESS && currentFaulted(p);
}

/** A created context on `device`, not left on the thread's stack (cuCtxCreate pushes it; the pop takes it off). */
function detachedContext(p: CudaFlavor, device: number): bigint {
  const b = { value: 0n };
  if (p.cuCtxCreate(b, 0, device) !== C.CUDA_SUCCESS) return 0n;
  p.cuCtxPopCurrent({ value: 0n });
  return b.value;
}

/**
 * What each event-taking call answers for an event this process destroyed
 * (settle.destroyedEvent.*: all 709 on the H200): `dead` is the destroyed
 * event, `live` a completed timing event, `s` a live stream.
 */
export const ON_DESTROYED_EVENT: Readonly<
  Record<string, { code: number; call: (p: CudaFlavor, dead: bigint, live: bigint, s: bigint) => number }>
> = {
  cuEventRecord: { code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED, call: (p, e, _l, s) => p.cuEventRecord(e, s) },
  cuEventRecordWithFlags: {
    code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED,
    call: (p, e, _l, s) => p.cuEventRecordWithFlags(e, s, 0),
  },
  cuEventSynchronize: { code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED, call: (p, e) => p.cuEventSynchronize(e) },
  cuEventQuery: { code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED, call: (p, e) => p.cuEventQuery(e) },
  cuEventDestroy: { code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED, call: (p, e) => p.cuEventDestroy(e) },
  'cuEventElapsedTime(start)': {
    code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED,
    call: (p, e, l) => p.cuEventElapsedTime({ value: 0 }, e, l),
  },
  'cuEventElapsedTime(end)': {
    code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED,
    call: (p, e, l) => p.cuEventElapsedTime({ value: 0 }, l, e),
  },
  'cuEventElapsedTime_v2(start)': {
    code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED,
    call: (p, e, l) => p.cuEventElapsedTime_v2({ value: 0 }, e, l),
  },
  'cuEventElapsedTime_v2(end)': {
    code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED,
    call: (p, e, l) => p.cuEventElapsedTime_v2({ value: 0 }, l, e),
  },
  cuStreamWaitEvent: {
    code: C.CUDA_ERROR_CONTEXT_IS_DESTROYED,
    call: (p, e, _l, s) => p.cuStreamWaitEvent(s, e, 0),
  },
};

/** Rule destroyed: a destroyed event, recorded first or not, gets its answer from every call that takes one. */
function destroyedEvent(): CallSpec<CudaFlavor> {
  return {
    name: 'cuEventDestroy+(event calls on it)',
    weight: 0.2,
    partialOnFailure: true,
    run: (ep, p) => {
      const dead = { value: 0n };
      const live = { value: 0n };
      const made = p.cuEventCreate(dead, ep.rng.pick([0, C.CU_EVENT_DISABLE_TIMING]));
      if (made !== C.CUDA_SUCCESS) return { result: made };
      let s = ep.rng.chance(0.5) ? 0n : ep.stream(p.runtime.pid);
      // The rule is about the event: a pool's stream that is gone, or of a faulted device (Note
      // [Faulted devices]), would answer for itself first, so the NULL stream takes its place.
      const q = p.cuStreamQuery(s);
      if (q !== C.CUDA_SUCCESS && q !== C.CUDA_ERROR_NOT_READY) s = 0n;
      if (ep.rng.chance(0.5)) p.cuEventRecord(dead.value, s);
      p.cuEventDestroy(dead.value);
      p.cuEventCreate(live, 0);
      p.cuEventRecord(live.value, 0n);
      p.cuEventSynchronize(live.value);
      try {
        const [name, { code, call }] = ep.rng.pick(Object.entries(ON_DESTROYED_EVENT));
        const got = call(p, dead.value, live.value, s);
        // The synchronisation above may have met queued work that faulted the current device or the
        // stream's (Note [Faulted devices]): then the fault is the answer, before the event is looked at.
        if (got === C.CUDA_ERROR_LAUNCH_FAILED && (currentFaulted(p) || p.cuStreamQuery(s) === got))
          return { result: C.CUDA_SUCCESS };
        const detail = `${name} of a destroyed event answered ${got}, not ${code}`;
        return { result: C.CUDA_SUCCESS, broken: got === code ? undefined : rule('destroyed', detail) };
      } finally {
        p.cuEventDestroy(live.value);
      }
    },
  };
}

/**
 * Rule stack: cuCtxPushCurrent, cuCtxPopCurrent and cuCtxSetCurrent
 * (NULL pops, a context replaces the top) keep the thread's context stack
 * (Note [The context stack]). The sequence pushes a few contexts over
 * whatever is current, mixes the four operations above its own floor, and
 * pops back down to it; after each step the current context must be its
 * shadow's top, and each pop must hand back that top.
 */
function contextStack(devices: number): CallSpec<CudaFlavor> {
  return {
    name: 'cuCtxPushCurrent/cuCtxPopCurrent/cuCtxSetCurrent(NULL)',
    weight: 0.2,
    partialOnFailure: true,
    run: (ep, p) => {
      const floor = current(p);
      const created = [detachedContext(p, ep.rng.below(devices))].filter((c) => c !== 0n);
      // 0n where no context could be had (a retain refused on a faulted device): that step is skipped.
      const pick = () =>
        created.length > 0 && ep.rng.chance(0.4) ? ep.rng.pick(created) : primary(p, ep.rng.below(devices));
      const shadow: bigint[] = [];
      const check = (what: string): Broken | undefined => {
        const want = shadow.at(-1) ?? floor;
        const got = current(p);
        return got === want ? undefined : rule('stack', `after ${what} ${got} is current, not ${want}`);
      };
      let broken: Broken | undefined;
      try {
        for (let i = 0, n = 1 + ep.rng.below(6); i < n && broken === undefined; i++) {
          const op = shadow.length === 0 ? 0 : ep.rng.below(4);
          if (op === 0) {
            const c = pick();
            if (c !== 0n && p.cuCtxPushCurrent(c) === C.CUDA_SUCCESS) shadow.push(c);
            broken = check('a push');
          } else if (op === 1) {
            const c = pick();
            if (c !== 0n && p.cuCtxSetCurrent(c) === C.CUDA_SUCCESS) shadow[shadow.length - 1] = c;
            broken = check('cuCtxSetCurrent of a context');
          } else if (op === 2) {
            if (p.cuCtxSetCurrent(0n) === C.CUDA_SUCCESS) shadow.pop();
            broken = check('cuCtxSetCurrent(NULL)');
          } else {
            broken = pop(p, shadow) ?? check('a pop');
          }
        }
        while (broken === undefined && shadow.length > 0) broken = pop(p, shadow) ?? check('a pop');
      } finally {
        // Back to where the sequence began, whatever it found.
        for (; shadow.length > 0; shadow.pop()) p.cuCtxPopCurrent({ value: 0n });
        for (const c of created) p.cuCtxDestroy(c);
      }
      return { result: C.CUDA_SUCCESS, broken };
    },
  };
}

function pop(p: CudaFlavor, shadow: bigint[]): Broken | undefined {
  const b = { value: 0n };
  const code = p.cuCtxPopCurrent(b);
  const want = shadow.pop();
  if (code !== C.CUDA_SUCCESS) return rule('stack', `cuCtxPopCurrent answered ${code} over a pushed context`);
  return b.value === want ? undefined : rule('stack', `cuCtxPopCurrent handed back ${b.value}, not ${want}`);
}

/**
 * Rule crossStream: an asynchronous set or copy on a stream of another
 * context (another device's primary, or a created one on either) succeeds,
 * and after the stream's synchronisation the bytes are there (Note [Copies
 * on another device's stream]). Its memory is the stream context's own
 * cuMemAlloc memory, which the stream's device may write. The bytes are
 * read back on the same stream: a synchronous read is a legacy-stream call,
 * which first runs every stream's queued work and answers the first failure
 * of it, and the episode's other calls may have left work there that fails
 * when it runs (a copy queued before its access was taken away; seed 303).
 */
function crossStream(devices: number): CallSpec<CudaFlavor> {
  return {
    name: 'cuMemsetD8Async/cuMemcpyHtoDAsync(another context stream)',
    weight: 0.3,
    partialOnFailure: true,
    run: (ep, p) => {
      const start = current(p);
      const dx = ep.rng.below(devices);
      const created = ep.rng.chance(0.5);
      const x = created ? detachedContext(p, dx) : primary(p, dx);
      const y = primary(p, ep.rng.below(devices));
      const s = { value: 0n };
      const m = { value: 0n };
      try {
        if (x === 0n || y === 0n || y === x || p.cuCtxSetCurrent(x) !== C.CUDA_SUCCESS)
          return { result: C.CUDA_SUCCESS };
        if (p.cuStreamCreate(s, 0) !== C.CUDA_SUCCESS || p.cuMemAlloc(m, 64) !== C.CUDA_SUCCESS)
          return { result: C.CUDA_SUCCESS };
        p.cuCtxSetCurrent(y);
        const bytes = new Uint8Array(64).map(() => ep.rng.below(256));
        const set = ep.rng.chance(0.5);
        const queued = set
          ? p.cuMemsetD8Async(m.value, bytes[0] ?? 0, 64, s.value)
          : p.cuMemcpyHtoDAsync(m.value, bytes, 64, s.value);
        const synced = queued === C.CUDA_SUCCESS ? p.cuStreamSynchronize(s.value) : queued;
        p.cuCtxSetCurrent(x);
        const back = new Uint8Array(64);
        const read = p.cuMemcpyDtoHAsync(back, m.value, 64, s.value) || p.cuStreamSynchronize(s.value);
        const want = set ? new Uint8Array(64).fill(bytes[0] ?? 0) : bytes;
        const what = `${set ? 'a set' : 'a copy'} on a stream of context ${x} with ${y} current`;
        // Either context's device faulted earlier in the episode: there every call answers 719 and
        // nothing lands (Note [Faulted devices]; rule faulted checks that on its own).
        if ([queued, synced, read].includes(C.CUDA_ERROR_LAUNCH_FAILED) && (faulted(p, x) || faulted(p, y)))
          return { result: C.CUDA_SUCCESS };
        if (queued !== C.CUDA_SUCCESS || synced !== C.CUDA_SUCCESS)
          return {
            result: C.CUDA_SUCCESS,
            broken: rule('crossStream', `${what} answered ${queued}, ${synced}`),
          };
        const landed = read === C.CUDA_SUCCESS && back.every((b, i) => b === want[i]);
        return {
          result: C.CUDA_SUCCESS,
          broken: landed ? undefined : rule('crossStream', `${what} did not land`),
        };
      } finally {
        if (x !== 0n) p.cuCtxSetCurrent(x);
        if (m.value !== 0n) p.cuMemFree(m.value);
        if (s.value !== 0n) p.cuStreamDestroy(s.value);
        p.cuCtxSetCurrent(start === -1n ? 0n : start);
        if (created && x !== 0n) p.cuCtxDestroy(x);
      }
    },
  };
}

/** The CUDA flavor's settle calls, for a machine of `devices` devices. */
export function settleCudaCalls(devices: number): CallSpec<CudaFlavor>[] {
  return [destroyedEvent(), contextStack(devices), crossStream(devices), versionAfterDispose('cu')];
}

/**
 * Rule reset: aclrtResetDevice and aclrtResetDeviceForce of a device whose
 * aclrtSetDevice count is 0 answer ACL_ERROR_RT_CONTEXT_RELEASE_ERROR
 * (Note [Resetting a reset device]). A forced reset takes the count to 0
 * (or finds it there); the device current before is set again after.
 */
export function aclResetCalls(devices: number): CallSpec<AclFlavor>[] {
  return [
    {
      name: 'aclrtResetDeviceForce+aclrtResetDevice(count 0)',
      weight: 0.05,
      partialOnFailure: true,
      run: (ep, p) => {
        const d = ep.rng.below(devices);
        const before = { value: -1 };
        const had = p.aclrtGetDevice(before) === A.ACL_SUCCESS;
        p.aclrtResetDeviceForce(d);
        const again = ep.rng.chance(0.5) ? p.aclrtResetDevice(d) : p.aclrtResetDeviceForce(d);
        if (had) p.aclrtSetDevice(before.value);
        const detail = `a reset of device ${d} at count 0 answered ${again}`;
        const ok = again === A.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR || again === A.ACL_ERROR_UNINITIALIZE;
        return { result: A.ACL_SUCCESS, broken: ok ? undefined : rule('reset', detail) };
      },
    },
  ];
}

/** Rule version: the version query answers after dispose what it answers live (Notes [CUDA after dispose], [HIP after dispose]). */
function versionAfterDispose<P extends CudaFlavor | HipFlavor>(prefix: 'cu' | 'hip'): CallSpec<P> {
  const ask = (p: P) => {
    const b = { value: -1 };
    const code =
      prefix === 'cu' ? (p as CudaFlavor).cuDriverGetVersion(b) : (p as HipFlavor).hipRuntimeGetVersion(b);
    return `${code}:${b.value}`;
  };
  return {
    name: `${prefix === 'cu' ? 'cuDriverGetVersion' : 'hipRuntimeGetVersion'}(disposed and live)`,
    weight: 0.1,
    run: (ep, p) => {
      const gone = ask(ep.ghost);
      const live = ask(p);
      const detail = `answered ${gone} after dispose, ${live} live`;
      return {
        result: prefix === 'cu' ? C.CUDA_SUCCESS : H.hipSuccess,
        broken: gone === live ? undefined : rule('version', detail),
      };
    },
  };
}

/**
 * Rule crossStream for HIP: a set or copy on another device's stream, with
 * this device current, lands; read back on that stream, as CUDA's is.
 */
function hipCrossStream(devices: number): CallSpec<HipFlavor> {
  return {
    name: 'hipMemsetAsync/hipMemcpyAsync(another device stream)',
    weight: 0.3,
    partialOnFailure: true,
    run: (ep, p) => {
      const start = { value: -1 };
      p.hipGetDevice(start);
      const dx = ep.rng.below(devices);
      const dy = (dx + 1 + ep.rng.below(devices - 1)) % devices;
      const s = { value: 0n };
      const m = { value: 0n };
      try {
        if (p.hipSetDevice(dx) !== H.hipSuccess) return { result: H.hipSuccess };
        if (p.hipStreamCreate(s) !== H.hipSuccess || p.hipMalloc(m, 64) !== H.hipSuccess)
          return { result: H.hipSuccess };
        p.hipSetDevice(dy);
        const bytes = new Uint8Array(64).map(() => ep.rng.below(256));
        const set = ep.rng.chance(0.5);
        const queued = set
          ? p.hipMemsetAsync(m.value, bytes[0] ?? 0, 64, s.value)
          : p.hipMemcpyAsync(m.value, bytes, 64, H.hipMemcpyHostToDevice, s.value);
        const synced = queued === H.hipSuccess ? p.hipStreamSynchronize(s.value) : queued;
        p.hipSetDevice(dx);
        const back = new Uint8Array(64);
        const read =
          p.hipMemcpyAsync(back, m.value, 64, H.hipMemcpyDeviceToHost, s.value) ||
          p.hipStreamSynchronize(s.value);
        const want = set ? new Uint8Array(64).fill(bytes[0] ?? 0) : bytes;
        const what = `${set ? 'a set' : 'a copy'} on device ${dx}'s stream with device ${dy} current`;
        if (queued !== H.hipSuccess || synced !== H.hipSuccess)
          return {
            result: H.hipSuccess,
            broken: rule('crossStream', `${what} answered ${queued}, ${synced}`),
          };
        const landed = read === H.hipSuccess && back.every((b, i) => b === want[i]);
        return {
          result: H.hipSuccess,
          broken: landed ? undefined : rule('crossStream', `${what} did not land`),
        };
      } finally {
        p.hipSetDevice(dx);
        if (m.value !== 0n) p.hipFree(m.value);
        if (s.value !== 0n) p.hipStreamDestroy(s.value);
        if (start.value >= 0) p.hipSetDevice(start.value);
      }
    },
  };
}

/** The HIP flavor's settle calls, for a machine of `devices` devices (at least two). */
export function settleHipCalls(devices: number): CallSpec<HipFlavor>[] {
  return [versionAfterDispose('hip'), hipCrossStream(devices)];
}

function rule(name: Broken['rule'], detail: string): Broken {
  return { rule: name, detail };
}
