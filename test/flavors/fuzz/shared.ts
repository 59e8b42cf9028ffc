/** Helpers the fuzzer's call tables share. */
import type { RuntimeDescription } from '../../../src/core/runtime.js';
import type { CallSpec, Episode, FuzzedProcess } from './episode.js';
import type { Random } from './random.js';

/** A C integer argument as the number a front end would see, or NaN. */
export function asNumber(x: unknown): number {
  if (typeof x === 'bigint') return Number(x);
  if (typeof x === 'number') return x;
  return Number.NaN;
}

/** A byte count for copies and sets: small, sometimes zero, sometimes past a 64-byte buffer. */
export function smallCount(rng: Random): number | bigint {
  const n = rng.pick([0, 1, 8, 16, 33, 64, 64, 65]);
  return rng.chance(0.3) ? BigInt(n) : n;
}

/** The vendor calls a teardown makes. */
export interface TeardownCalls {
  unmap(va: number, size: number): number;
  freeReservation(base: number, size: number): number;
  freeMalloc(base: number): number;
  release(handle: number): number;
  describe(): RuntimeDescription;
}

/**
 * Release everything a process holds, through its vendor calls: unmap runs
 * of adjacent VMM mappings, free every reservation and one-step buffer,
 * release every handle reference. The names of the calls that failed.
 */
export function teardownRuns(layout: RuntimeDescription, calls: TeardownCalls, runs = true): string[] {
  const failed: string[] = [];
  const mappings = layout.reservations
    .filter((r) => r.origin === 'vmm')
    .flatMap((r) => r.mappings)
    .sort((x, y) => x.va - y.va);
  for (let i = 0; i < mappings.length; ) {
    const start = mappings[i]?.va ?? 0;
    let end = (mappings[i]?.va ?? 0) + (mappings[i]?.size ?? 0);
    i++;
    if (runs) {
      for (; i < mappings.length && mappings[i]?.va === end; i++) end += mappings[i]?.size ?? 0;
    }
    const code = calls.unmap(start, end - start);
    if (code !== 0) failed.push(`unmap 0x${start.toString(16)}+${end - start}: ${code}`);
  }
  const after = calls.describe();
  for (const r of after.reservations) {
    const code = r.origin === 'vmm' ? calls.freeReservation(r.base, r.size) : calls.freeMalloc(r.base);
    if (code !== 0) failed.push(`free ${r.origin} 0x${r.base.toString(16)}: ${code}`);
  }
  for (const a of calls.describe().allocations) {
    for (let k = 0; k < a.handleRefs; k++) {
      const code = calls.release(a.handle);
      if (code !== 0) failed.push(`release ${a.handle}: ${code}`);
    }
  }
  return failed;
}

/** The bytes a successful cuMemsetD16/D32 or hipMemsetD32 writes, little-endian, or undefined when not worth shadowing. */
export function widePattern(value: unknown, count: unknown, width: 2 | 4): Uint8Array | undefined {
  const n = asNumber(count);
  if (typeof value !== 'number' || !Number.isSafeInteger(n) || n < 0 || n * width > 1 << 16) return undefined;
  const v = width === 2 ? value & 0xffff : value >>> 0;
  const out = new Uint8Array(n * width);
  for (let i = 0; i < out.length; i++) out[i] = (v >>> (8 * (i % width))) & 0xff;
  return out;
}

/** What the calls mirrored between CUDA and HIP draw their arguments from (each model's own constants). */
export interface MirroredHelpers<P extends FuzzedProcess> {
  size(ep: Episode<P>): bigint | number;
  prop(ep: Episode<P>): object;
  ptr(ep: Episode<P>, p: P): unknown;
  handle(ep: Episode<P>, p: P): unknown;
  zero(ep: Episode<P>): unknown;
  pid(p: P): number;
}

/** Call a front-end function by name (the mirrored calls differ only in their prefix). */
function call(p: object, name: string, ...args: unknown[]): unknown {
  return (p as Record<string, (...a: unknown[]) => unknown>)[name](...args);
}

/**
 * The VMM calls whose C signatures HIP copies from CUDA, names apart
 * (hipMemMap is cuMemMap with another prefix): one table for both models,
 * each placing it at the same point of its own list, so the draws per call
 * are the same as the model's own entries were.
 */
export function mirroredVmmCalls<P extends FuzzedProcess>(
  prefix: 'cu' | 'hip',
  use: MirroredHelpers<P>,
): CallSpec<P>[] {
  return [
    {
      name: `${prefix}MemAddressFree`,
      run: (ep, p) => {
        const at = use.ptr(ep, p);
        return {
          result: call(
            p,
            `${prefix}MemAddressFree`,
            at,
            ep.arg(() => use.size(ep)),
          ),
          onSuccess: () => ep.forget(ep.pointers, use.pid(p), at),
        };
      },
    },
    {
      name: `${prefix}MemCreate`,
      weight: 2,
      run: (ep, p) => {
        const b = ep.box(0n);
        return {
          result: call(
            p,
            `${prefix}MemCreate`,
            b,
            ep.arg(() => use.size(ep)),
            use.prop(ep) as never,
            use.zero(ep),
          ),
          onSuccess: () => ep.remember(ep.handles, use.pid(p), b.value),
        };
      },
    },
    {
      name: `${prefix}MemRelease`,
      run: (ep, p) => {
        const h = use.handle(ep, p);
        return {
          result: call(p, `${prefix}MemRelease`, h),
          onSuccess: () => ep.forget(ep.handles, use.pid(p), h),
        };
      },
    },
    {
      name: `${prefix}MemMap`,
      weight: 3,
      run: (ep, p) => {
        const t = ep.rng.chance(0.7) ? ep.mapTarget(p) : undefined;
        if (t === undefined)
          return {
            result: call(
              p,
              `${prefix}MemMap`,
              use.ptr(ep, p),
              ep.arg(() => use.size(ep)),
              use.zero(ep),
              use.handle(ep, p),
              use.zero(ep),
            ),
          };
        return {
          result: call(
            p,
            `${prefix}MemMap`,
            ep.arg(() => t[0]),
            ep.arg(() => t[1]),
            use.zero(ep),
            ep.arg(() => t[2]),
            use.zero(ep),
          ),
        };
      },
    },
    {
      name: `${prefix}MemUnmap`,
      weight: 1.5,
      run: (ep, p) => {
        const m = ep.rng.chance(0.5) ? ep.mapping(p) : undefined;
        if (m === undefined)
          return {
            result: call(
              p,
              `${prefix}MemUnmap`,
              use.ptr(ep, p),
              ep.arg(() => use.size(ep)),
            ),
          };
        return {
          result: call(
            p,
            `${prefix}MemUnmap`,
            ep.arg(() => BigInt(m[0])),
            ep.arg(() => m[1]),
          ),
        };
      },
    },
  ];
}

/**
 * cuMemExportToShareableHandle / cuMemImportFromShareableHandle and their
 * hip twins, which take the same arguments in the same order: one table for
 * both models, placed where each had its own pair, so the draws are the
 * same. The exporter keeps its fd and a copy goes to the peer, as over a
 * Unix socket; the shadow follows the memory by the process's own state,
 * not by what a hostile box reads back (Note [What a box reads back],
 * episode.ts).
 */
export function mirroredFdCalls<P extends FuzzedProcess>(
  prefix: 'cu' | 'hip',
  posixFd: number,
  use: Pick<MirroredHelpers<P>, 'handle' | 'zero' | 'pid'>,
): CallSpec<P>[] {
  return [
    {
      name: `${prefix}MemExportToShareableHandle`,
      run: (ep, p, peer) => {
        const b = ep.box(0);
        const h = use.handle(ep, p);
        const open = ep.fdsOf(p);
        return {
          result: call(
            p,
            `${prefix}MemExportToShareableHandle`,
            b,
            h,
            ep.arg(() => posixFd),
            use.zero(ep),
          ),
          onSuccess: () => {
            const key = ep.shadowKey(use.pid(p), BigInt(asNumber(h)));
            const made = ep.newFd(p, open);
            if (made !== undefined) ep.exported.set(`${use.pid(p)}:${made}`, key);
            // Only an fd the box reads back is the caller's to use and pass on.
            const fd = b.value;
            if (typeof fd !== 'number') return;
            ep.exported.set(`${use.pid(p)}:${fd}`, key);
            ep.fds.get(use.pid(p))?.push(fd);
            const theirs = ep.machine.passFd(use.pid(p), fd, use.pid(peer));
            ep.exported.set(`${use.pid(peer)}:${theirs}`, key);
            ep.fds.get(use.pid(peer))?.push(theirs);
          },
        };
      },
    },
    {
      name: `${prefix}MemImportFromShareableHandle`,
      run: (ep, p) => {
        const b = ep.box(0n);
        const fd = ep.arg(() => ep.fd(use.pid(p)));
        const held = ep.handleValues(p);
        return {
          result: call(
            p,
            `${prefix}MemImportFromShareableHandle`,
            b,
            fd,
            ep.arg(() => posixFd),
          ),
          onSuccess: () => {
            ep.remember(ep.handles, use.pid(p), b.value);
            ep.alias(use.pid(p), ep.newHandle(p, held) ?? b.value, `${use.pid(p)}:${asNumber(fd)}`);
          },
        };
      },
    },
  ];
}

/**
 * The event calls HIP copies from CUDA after creation and record (query,
 * synchronize, stream wait, elapsed time, destroy), names apart: one table
 * for both models, placed where each had its own entries, so the draws are
 * the same.
 */
export function mirroredEventCalls<P extends FuzzedProcess>(
  prefix: 'cu' | 'hip',
  use: {
    event(ep: Episode<P>, p: P): unknown;
    stream(ep: Episode<P>, p: P): unknown;
    pid(p: P): number;
  },
): CallSpec<P>[] {
  return [
    {
      name: `${prefix}EventQuery`,
      weight: 0.4,
      run: (ep, p) => ({ result: call(p, `${prefix}EventQuery`, use.event(ep, p)) }),
    },
    {
      name: `${prefix}EventSynchronize`,
      weight: 0.3,
      run: (ep, p) => ({ result: call(p, `${prefix}EventSynchronize`, use.event(ep, p)) }),
    },
    {
      name: `${prefix}StreamWaitEvent`,
      weight: 0.4,
      run: (ep, p) => ({
        result: call(
          p,
          `${prefix}StreamWaitEvent`,
          use.stream(ep, p),
          use.event(ep, p),
          ep.arg(() => ep.rng.pick([0, 0, 1, 2])),
        ),
      }),
    },
    {
      name: `${prefix}EventElapsedTime`,
      weight: 0.2,
      run: (ep, p) => ({
        result: call(p, `${prefix}EventElapsedTime`, ep.box(0), use.event(ep, p), use.event(ep, p)),
      }),
    },
    {
      name: `${prefix}EventDestroy`,
      weight: 0.2,
      run: (ep, p) => {
        const e = use.event(ep, p);
        return {
          result: call(p, `${prefix}EventDestroy`, e),
          onSuccess: () => ep.forget(ep.events, use.pid(p), e),
        };
      },
    },
  ];
}

/**
 * The CPU's load and store (hostRead / hostWrite, Note [Host access] in
 * src/backend/backend.ts), the same on every front end: a store of a plain
 * buffer writes its bytes into the shadow; one of a hostile buffer makes the
 * range unknown.
 */
export function hostAccessCalls<P extends FuzzedProcess & HostAccess>(use: {
  mem(ep: Episode<P>, p: P): unknown;
}): CallSpec<P>[] {
  return [
    {
      name: 'hostWrite',
      weight: 0.5,
      run: (ep, p) => {
        const src = ep.host(64);
        const at = use.mem(ep, p);
        return {
          result: p.hostWrite(at, src),
          effects: ep.isPlain(src)
            ? { write: { va: asNumber(at), bytes: src.slice() } }
            : { unknown: { va: asNumber(at), size: 64 } },
        };
      },
    },
    {
      name: 'hostRead',
      weight: 0.5,
      run: (ep, p) => {
        const dst = ep.host(64);
        const at = use.mem(ep, p);
        return {
          result: p.hostRead(at, dst),
          effects: ep.isPlain(dst) ? { read: { va: asNumber(at), into: dst, size: dst.length } } : undefined,
        };
      },
    },
  ];
}

/** The CPU's load and store every front end has. */
interface HostAccess {
  hostRead(ptr: unknown, dst: unknown): number;
  hostWrite(ptr: unknown, src: unknown): number;
}

/**
 * The byte sets whose C signatures HIP copies from CUDA (cuMemsetD8 /
 * hipMemset, and their Async forms with a stream), names apart: one table
 * for both models, placed where each had its own pair, so the draws are the
 * same. A set run now fills the shadow; one queued on a stream makes the
 * range unknown until the model's sync.
 */
export function mirroredSetCalls<P extends FuzzedProcess>(
  names: { readonly sync: string; readonly async: string; readonly asyncValue: number },
  use: {
    mem(ep: Episode<P>, p: P): unknown;
    count(ep: Episode<P>): unknown;
    stream(ep: Episode<P>, p: P): unknown;
  },
): CallSpec<P>[] {
  return [
    {
      name: names.sync,
      run: (ep, p) => {
        const n = use.count(ep);
        const dst = use.mem(ep, p);
        const value = ep.arg(() => ep.rng.below(256));
        return {
          result: call(p, names.sync, dst, value, n),
          effects: { fill: { va: asNumber(dst), value: asNumber(value), size: asNumber(n) } },
        };
      },
    },
    {
      name: names.async,
      run: (ep, p) => {
        const n = use.count(ep);
        const dst = use.mem(ep, p);
        return {
          result: call(
            p,
            names.async,
            dst,
            ep.arg(() => names.asyncValue),
            n,
            use.stream(ep, p),
          ),
          effects: { unknown: { va: asNumber(dst), size: asNumber(n) } },
        };
      },
    },
  ];
}

/** How a flavor makes (into a box, its code) and frees a stream, an event and 64 bytes of one-step memory. */
export interface PieceCalls<P> {
  makeStream(p: P, box: { value: bigint }): number;
  makeEvent(p: P, box: { value: bigint }): number;
  makeMemory(p: P, box: { value: bigint }): number;
  free(p: P, pieces: { stream: bigint; event: bigint; memory: bigint }): void;
}

/** The current device's own stream, event and memory, valid ones, and how to give them back; undefined without a stream. */
function makePieces<P>(p: P, calls: PieceCalls<P>) {
  const s = { value: 0n };
  const e = { value: 0n };
  const m = { value: 0n };
  if (calls.makeStream(p, s) !== 0) return undefined;
  calls.makeEvent(p, e);
  calls.makeMemory(p, m);
  const pieces = { stream: s.value, event: e.value, memory: m.value };
  return { ...pieces, release: () => calls.free(p, pieces) };
}

/** What crossDeviceWait needs of a flavor: its calls in the vendor's argument order. */
export interface WaitCalls<P> {
  readonly success: number;
  /** The default stream's handle (NULL). */
  readonly defaultStream: unknown;
  event(ep: Episode<P & FuzzedProcess>, p: P): unknown;
  stream(ep: Episode<P & FuzzedProcess>, p: P): unknown;
  mem(ep: Episode<P & FuzzedProcess>, p: P): unknown;
  /** Make a random device (or context) of the process current. */
  switchDevice(ep: Episode<P & FuzzedProcess>, p: P): void;
  /** The current device's own pieces (makePieces). */
  readonly pieces: PieceCalls<P>;
  /** Queue a 64-byte read of `memory` into a host buffer on the stream; its answer is not checked. */
  queue(p: P, memory: unknown, stream: unknown): void;
  record(p: P, event: unknown, stream: unknown): number;
  wait(p: P, stream: unknown, event: unknown): number;
  synchronize(p: P, stream: unknown): number;
  /** Whether the event's recorded work has run, by the vendor's query. */
  complete(p: P, event: unknown): boolean;
}

/**
 * The sequence of issue 17's first contract break, with the devices and
 * streams drawn at random: queue a read on a stream and record an event
 * behind it (half the time on pieces made for it, on a device drawn at
 * random; else on whatever the pools give), make a device (or context)
 * drawn at random current, wait on the event from a stream (often the
 * default one), synchronise that stream; then the event must be complete
 * (rule wait, Note [Fuzzer checks]). The current device stays as drawn, so
 * later calls run across devices too.
 */
export function crossDeviceWait<P extends FuzzedProcess>(name: string, use: WaitCalls<P>): CallSpec<P> {
  return {
    name,
    weight: 0.6,
    // A record that succeeded stays made when the wait or the synchronisation after it fails.
    partialOnFailure: true,
    run: (ep, p) => {
      use.switchDevice(ep, p);
      const own = ep.rng.chance(0.5) ? makePieces(p, use.pieces) : undefined;
      try {
        const e = own?.event ?? use.event(ep, p);
        const first = own?.stream ?? use.stream(ep, p);
        use.queue(p, own?.memory ?? use.mem(ep, p), first);
        const recorded = use.record(p, e, first);
        if (recorded !== use.success) return { result: recorded };
        use.switchDevice(ep, p);
        const s = ep.rng.chance(0.6) ? use.defaultStream : use.stream(ep, p);
        const waited = use.wait(p, s, e);
        if (waited !== use.success) return { result: waited };
        const synchronized = use.synchronize(p, s);
        if (synchronized !== use.success) return { result: synchronized };
        const detail = `the event waited on by ${String(s)} is not complete after its synchronisation`;
        return { result: use.success, broken: use.complete(p, e) ? undefined : { rule: 'wait', detail } };
      } finally {
        own?.release();
      }
    },
  };
}
