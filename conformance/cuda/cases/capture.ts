/**
 * Stream capture of memory work (issue 17): what is captured, how a launch
 * replays it, and what the driver answers during a capture, per mode.
 * Kernels are out of scope. Every case ends the captures it begins, and
 * destroys its graphs and executable graphs (recorded as cleanup steps).
 *
 * Numbers from cuda.h (CUDA 13.0): CUstreamCaptureStatus NONE 0, ACTIVE 1,
 * INVALIDATED 2; CUstreamCaptureMode GLOBAL 0, THREAD_LOCAL 1, RELAXED 2.
 */
import { CU_MEM_ACCESS_FLAGS_PROT_READWRITE as RW } from '../api.js';
import { type Define, hex, pattern, type Trace } from './trace.js';

const MODES = { global: 0, threadLocal: 1, relaxed: 2 } as const;
type ModeName = keyof typeof MODES;
const CU_STREAM_NON_BLOCKING = 1;
const CU_EVENT_DISABLE_TIMING = 2;
const CU_EVENT_RECORD_EXTERNAL = 1;
const CU_EVENT_WAIT_EXTERNAL = 1;
/** The legacy NULL stream and the per-thread default stream (cuda.h's CU_STREAM_LEGACY, CU_STREAM_PER_THREAD). */
const LEGACY = 1n;
const PER_THREAD = 2n;
/** Bytes each replay case copies and sets. */
const N = 4096;

/** cuStreamIsCapturing of `s`, recorded with the status. */
function status(t: Trace, s: bigint, label: string): number {
  const box = { value: -1 };
  const code = t.cu.cuStreamIsCapturing(s, box);
  t.call(label, code, code === 0 ? box.value : undefined);
  return code === 0 ? box.value : -1;
}

function begin(t: Trace, s: bigint, mode: number, label = 'begin'): number {
  return t.call(label, t.cu.cuStreamBeginCapture(s, mode));
}

/** cuStreamEndCapture of `s`: the graph (0n if none), destroyed at cleanup unless `keep` is false. */
function end(t: Trace, s: bigint, label = 'end', cleanup = true): bigint {
  const box = { value: 0n };
  const code = t.cu.cuStreamEndCapture(s, box);
  t.call(label, code, code === 0 ? box.value !== 0n : undefined);
  if (code !== 0 || box.value === 0n) return 0n;
  const g = box.value;
  if (cleanup) t.later('cuGraphDestroy', () => t.cu.cuGraphDestroy(g));
  return g;
}

/** The number of nodes of graph `g`. */
function nodes(t: Trace, g: bigint, label = 'nodes'): number {
  const box = { value: -1 };
  const code = t.cu.cuGraphGetNodes(g, null, box);
  return t.call(label, code, code === 0 ? box.value : undefined);
}

/** cuGraphInstantiate of `g`: the executable graph (0n on failure), destroyed at cleanup unless `cleanup` is false. */
function instantiate(t: Trace, g: bigint, label = 'instantiate', flags = 0, cleanup = true): bigint {
  const box = { value: 0n };
  const code = t.cu.cuGraphInstantiate(box, g, flags);
  t.call(label, code, code === 0 ? box.value !== 0n : undefined);
  if (code !== 0 || box.value === 0n) return 0n;
  const e = box.value;
  if (cleanup) t.later('cuGraphExecDestroy', () => t.cu.cuGraphExecDestroy(e));
  return e;
}

function launch(t: Trace, exec: bigint, s: bigint, label = 'launch'): number {
  return t.call(label, t.cu.cuGraphLaunch(exec, s));
}

/** A created stream (flags as given), destroyed at cleanup. */
function streamWith(t: Trace, flags: number, label = 'cuStreamCreate'): bigint {
  const box = { value: 0n };
  if (t.call(label, t.cu.cuStreamCreate(box, flags)) !== 0) return 0n;
  const s = box.value;
  t.later('cuStreamDestroy', () => t.cu.cuStreamDestroy(s));
  return s;
}

/** A created event without timing, destroyed at cleanup. */
function event(t: Trace, label = 'cuEventCreate'): bigint {
  const box = { value: 0n };
  if (t.call(label, t.cu.cuEventCreate(box, CU_EVENT_DISABLE_TIMING)) !== 0) return 0n;
  const e = box.value;
  t.later('cuEventDestroy', () => t.cu.cuEventDestroy(e));
  return e;
}

/** cuMemAllocHost of n bytes (page-locked host memory), freed at cleanup. */
function pinned(t: Trace, n: number, label = 'cuMemAllocHost'): Uint8Array | null {
  const box: { value: Uint8Array | null } = { value: null };
  if (t.call(label, t.cu.cuMemAllocHost(box, n)) !== 0 || box.value === null) return null;
  const p = box.value;
  t.later('cuMemFreeHost', () => t.cu.cuMemFreeHost(p));
  return p;
}

/** cuMemAlloc of n bytes; freed at cleanup unless the case frees it itself (`owned.freed`). */
function allocation(t: Trace, n: number): { ptr: bigint; freed: boolean } {
  const box = { value: 0n };
  const a = { ptr: 0n, freed: false };
  if (t.call('cuMemAlloc', t.cu.cuMemAlloc(box, n)) !== 0) return a;
  a.ptr = box.value;
  t.later('cuMemFree', () => (a.freed ? 0 : t.cu.cuMemFree(a.ptr)));
  return a;
}

/** Bytes equal to `expected`, read back synchronously. */
function sees(t: Trace, ptr: bigint, expected: Uint8Array, label: string): void {
  t.readEquals(ptr, expected, label);
}

const filled = (n: number, byte: number): Uint8Array => new Uint8Array(n).fill(byte);

// ---------------------------------------------------------------- what the driver answers during a capture

/**
 * One question about a call made while a stream captures: `before` makes
 * what the call needs (outside the capture), `during` makes the call and
 * records it. The case then records the capture's status and its end.
 */
interface DuringCapture<X> {
  before?(t: Trace): X | null;
  during(t: Trace, s: bigint, x: X): void;
}

function duringCapture<X>(q: DuringCapture<X>, mode: number): (t: Trace) => void {
  return (t) => {
    const s = t.stream();
    if (!s) return;
    const x = q.before ? q.before(t) : null;
    if (q.before && x === null) return;
    if (begin(t, s, mode) !== 0) return;
    q.during(t, s, x as X);
    status(t, s, 'statusAfter');
    end(t, s);
  };
}

const mappedBase = (t: Trace): bigint | null => {
  const { base, h } = t.mapped(t.G);
  return base && h ? base : null;
};

/** Event record on the capturing stream, then `op` on that event. */
const onCapturedEvent = (op: 'query' | 'synchronize'): DuringCapture<bigint> => ({
  before: (t) => event(t) || null,
  during: (t, s, e) => {
    t.call('record', t.cu.cuEventRecord(e, s));
    t.call(op, op === 'query' ? t.cu.cuEventQuery(e) : t.cu.cuEventSynchronize(e));
  },
});

/** A question, its `before` value's type kept for its `during`. */
const question = <X>(q: DuringCapture<X>): DuringCapture<unknown> => q as DuringCapture<unknown>;

const DURING: Record<string, DuringCapture<unknown>> = {
  reserve: question({ during: (t) => void t.reserve(t.G) }),
  addressFree: question({
    before: (t) => t.reserve(t.G) || null,
    during: (t, _s, base: bigint) => void t.free(base, t.G),
  }),
  create: question({ during: (t) => void t.create(t.G) }),
  release: question({
    before: (t) => t.create(t.G) || null,
    during: (t, _s, h: bigint) => void t.release(h),
  }),
  map: question({
    before: (t) => {
      const base = t.reserve(t.G);
      const h = t.create(t.G);
      return base && h ? { base, h } : null;
    },
    during: (t, _s, x: { base: bigint; h: bigint }) => void t.map(x.base, t.G, x.h),
  }),
  setAccess: question({
    before: (t) => {
      const { base, h } = t.mapped(t.G, null);
      return base && h ? base : null;
    },
    during: (t, _s, base: bigint) => void t.access(base, t.G, RW),
  }),
  unmap: question({ before: mappedBase, during: (t, _s, base: bigint) => void t.unmap(base, t.G) }),
  memAlloc: question({ during: (t) => void allocation(t, 1 << 20) }),
  memFree: question({
    before: (t) => {
      const a = allocation(t, 1 << 20);
      return a.ptr ? a : null;
    },
    during: (t, _s, a: { ptr: bigint; freed: boolean }) => {
      if (t.call('cuMemFree', t.cu.cuMemFree(a.ptr)) === 0) a.freed = true;
    },
  }),
  syncHtoD: question({
    before: mappedBase,
    during: (t, _s, base: bigint) => void t.write(base, pattern(256, 1)),
  }),
  syncDtoH: question({
    before: (t) => {
      const base = mappedBase(t);
      if (base) t.write(base, pattern(256, 2), 'fill');
      return base;
    },
    during: (t, _s, base: bigint) => sees(t, base, pattern(256, 2), 'DtoH'),
  }),
  syncMemset: question({
    before: mappedBase,
    during: (t, _s, base: bigint) => void t.call('memsetD8', t.cu.cuMemsetD8(base, 7, 256)),
  }),
  streamSynchronize: question({
    during: (t, s) => void t.call('streamSynchronize', t.cu.cuStreamSynchronize(s)),
  }),
  streamQuery: question({ during: (t, s) => void t.call('streamQuery', t.cu.cuStreamQuery(s)) }),
  ctxSynchronize: question({ during: (t) => void t.call('ctxSynchronize', t.cu.cuCtxSynchronize()) }),
  eventQuery: question(onCapturedEvent('query')),
  eventSynchronize: question(onCapturedEvent('synchronize')),
  legacyStreamAsync: question({
    before: mappedBase,
    during: (t, _s, base: bigint) => void t.call('memsetOnLegacy', t.cu.cuMemsetD8Async(base, 9, 256, 0n)),
  }),
  legacyStreamIsCapturing: question({ during: (t) => void status(t, 0n, 'legacyStatus') }),
  /** Work on a stream the capture never joined runs at once: its bytes land. */
  otherStreamAsync: question({
    before: (t) => {
      const base = mappedBase(t);
      const other = base ? t.stream('otherStream') : 0n;
      return base && other ? { base, other } : null;
    },
    during: (t, _s, x: { base: bigint; other: bigint }) => {
      t.call('memsetOnOther', t.cu.cuMemsetD8Async(x.base, 0x3c, 256, x.other));
      t.call('syncOther', t.cu.cuStreamSynchronize(x.other));
      sees(t, x.base, filled(256, 0x3c), 'landed');
    },
  }),
  /** A caching allocator's guard: the thread's mode relaxed around an allocation (c10's CUDAStreamCaptureModeGuard). */
  relaxedThreadAlloc: question({
    during: (t) => {
      const box: { value: number } = { value: MODES.relaxed };
      const code = t.cu.cuThreadExchangeStreamCaptureMode(box);
      t.call('toRelaxed', code, code === 0 ? box.value : undefined);
      allocation(t, 1 << 20);
      const back = { value: code === 0 ? box.value : MODES.global };
      const c2 = t.cu.cuThreadExchangeStreamCaptureMode(back);
      t.call('back', c2, c2 === 0 ? back.value : undefined);
    },
  }),
};

// ---------------------------------------------------------------- the cases

export function captureCases(def: Define): void {
  for (const [name, q] of Object.entries(DURING)) {
    for (const [modeName, mode] of Object.entries(MODES) as [ModeName, number][]) {
      def(`capture.during.${name}.${modeName}`, duringCapture(q as DuringCapture<unknown>, mode));
    }
  }

  // The names and strings of capture's codes, for the flavor's table.
  def('capture.errorNames', (t) => t.errorTexts(Array.from({ length: 11 }, (_, k) => 900 + k)));

  // Begin and end.
  def('capture.begin.emptyGraph', (t) => {
    const s = t.stream();
    if (!s || begin(t, s, MODES.global) !== 0) return;
    status(t, s, 'statusDuring');
    const g = end(t, s);
    status(t, s, 'statusAfter');
    if (!g) return;
    nodes(t, g);
    const exec = instantiate(t, g);
    if (!exec) return;
    launch(t, exec, s);
    t.call('synchronize', t.cu.cuStreamSynchronize(s));
  });
  def('capture.begin.specialStreams', (t) => {
    for (const [label, h] of [
      ['null', 0n],
      ['legacy', LEGACY],
      ['perThread', PER_THREAD],
    ] as const) {
      if (begin(t, h, MODES.global, `begin.${label}`) === 0) {
        status(t, h, `status.${label}`);
        end(t, h, `end.${label}`);
      }
    }
  });
  def('capture.begin.twice', (t) => {
    const s = t.stream();
    const s2 = t.stream('cuStreamCreate2');
    if (!s || !s2 || begin(t, s, MODES.global) !== 0) return;
    begin(t, s, MODES.global, 'beginAgain');
    begin(t, s, MODES.relaxed, 'beginAgainRelaxed');
    status(t, s, 'status');
    // A second capture on another stream, beside the first.
    if (begin(t, s2, MODES.global, 'beginOther') === 0) end(t, s2, 'endOther');
    end(t, s);
  });
  def('capture.begin.badModes', (t) => {
    const s = t.stream();
    if (!s) return;
    for (const mode of [3, -1, 99]) if (begin(t, s, mode, `mode${mode}`) === 0) end(t, s, `end${mode}`);
    status(t, s, 'statusAfter');
  });
  def('capture.begin.v2Name', (t) => {
    const s = t.stream();
    if (!s || t.call('beginV2', t.cu.cuStreamBeginCapture_v2(s, MODES.threadLocal)) !== 0) return;
    status(t, s, 'status');
    end(t, s);
  });
  def(
    'capture.begin.destroyedStream',
    (t) => {
      const box = { value: 0n };
      if (t.call('create', t.cu.cuStreamCreate(box, 0)) !== 0) return;
      t.call('destroy', t.cu.cuStreamDestroy(box.value));
      if (begin(t, box.value, MODES.global) === 0) end(t, box.value);
    },
    true,
  );
  def('capture.end.notCapturing', (t) => {
    const s = t.stream();
    if (!s) return;
    end(t, s, 'endCreated');
    end(t, 0n, 'endNull');
    end(t, PER_THREAD, 'endPerThread');
  });
  def('capture.end.nullGraphBox', (t) => {
    const s = t.stream();
    if (!s || begin(t, s, MODES.global) !== 0) return;
    t.call('endNullBox', t.cu.cuStreamEndCapture(s, null));
    status(t, s, 'statusAfterNullBox');
    end(t, s);
  });
  def('capture.end.invalidated', (t) => {
    const base = mappedBase(t);
    const s = t.stream();
    if (!base || !s || begin(t, s, MODES.global) !== 0) return;
    // The legacy stream during a global capture on a blocking stream invalidates it (an implicit dependency).
    t.call('memsetOnLegacy', t.cu.cuMemsetD8Async(base, 1, 256, 0n));
    status(t, s, 'statusInvalidated');
    t.call('memsetAfterInvalidated', t.cu.cuMemsetD8Async(base, 2, 256, s));
    end(t, s, 'endInvalidated');
    status(t, s, 'statusAfterEnd');
    end(t, s, 'endAgain');
  });
  def('capture.legacyStream.nonBlocking', (t) => {
    const base = mappedBase(t);
    const s = streamWith(t, CU_STREAM_NON_BLOCKING);
    if (!base || !s || begin(t, s, MODES.global) !== 0) return;
    t.call('memsetOnLegacy', t.cu.cuMemsetD8Async(base, 4, 256, 0n));
    t.call('syncMemset', t.cu.cuMemsetD8(base, 5, 256));
    status(t, 0n, 'legacyStatus');
    status(t, s, 'status');
    end(t, s);
  });
  def('capture.info', (t) => {
    const base = mappedBase(t);
    const s = t.stream();
    const s2 = t.stream('cuStreamCreate2');
    if (!base || !s || !s2) return;
    const info = (label: string, h: bigint): { id: bigint; graph: bigint } => {
      const st = { value: -1 };
      const id = { value: 0n };
      const graph = { value: 0n };
      const deps = { value: -1 };
      const code = t.cu.cuStreamGetCaptureInfo(h, st, id, graph, null, null, deps);
      t.call(
        label,
        code,
        code === 0
          ? { status: st.value, id: id.value !== 0n, graph: graph.value !== 0n, dependencies: deps.value }
          : undefined,
      );
      return { id: id.value, graph: graph.value };
    };
    info('notCapturing', s);
    if (begin(t, s, MODES.global) !== 0) return;
    const first = info('begun', s);
    t.call('memset', t.cu.cuMemsetD8Async(base, 1, 256, s));
    info('afterOneNode', s);
    t.call('allNull', t.cu.cuStreamGetCaptureInfo(s, null, null, null, null, null, null));
    if (begin(t, s2, MODES.global, 'beginOther') === 0) {
      const second = info('other', s2);
      t.see('idsDiffer', first.id !== second.id);
      end(t, s2, 'endOther');
    }
    const g = end(t, s);
    t.see('infoGraphIsEndGraph', g !== 0n && g === first.graph);
  });

  // Replay: what a launch does with what was captured.
  def('capture.replay.deviceWork', (t) => {
    const { base } = t.mapped(2 * t.G);
    const s = t.stream();
    if (!base || !s) return;
    const a = base;
    const b = base + t.g;
    t.write(a, pattern(N, 1), 'fillA');
    t.call('zeroB', t.cu.cuMemsetD8(b, 0, 2 * N));
    if (begin(t, s, MODES.global) !== 0) return;
    t.call('dtod', t.cu.cuMemcpyDtoDAsync(b, a, N, s));
    t.call('memsetD8', t.cu.cuMemsetD8Async(b + BigInt(N), 0x5a, 256, s));
    t.call('memsetD16', t.cu.cuMemsetD16Async(b + BigInt(N + 256), 0x1234, 128, s));
    t.call('memsetD32', t.cu.cuMemsetD32Async(b + BigInt(N + 512), 0xdeadbeef, 64, s));
    t.call('unified', t.cu.cuMemcpyAsync(b + BigInt(N + 768), a + 16n, 256, s));
    const g = end(t, s);
    if (!g) return;
    nodes(t, g);
    // Capturing ran nothing.
    sees(t, b, filled(2 * N, 0), 'beforeLaunch');
    const exec = instantiate(t, g);
    if (!exec) return;
    const expected = (src: Uint8Array): Uint8Array => {
      const e = new Uint8Array(2 * N);
      e.set(src);
      e.fill(0x5a, N, N + 256);
      for (let i = N + 256; i < N + 512; i += 2) e.set([0x34, 0x12], i);
      for (let i = N + 512; i < N + 768; i += 4) e.set([0xef, 0xbe, 0xad, 0xde], i);
      e.set(src.subarray(16, 16 + 256), N + 768);
      return e;
    };
    launch(t, exec, s);
    t.call('synchronize', t.cu.cuStreamSynchronize(s));
    sees(t, b, expected(pattern(N, 1)), 'afterLaunch');
    // A second launch reads the source as it is then.
    t.write(a, pattern(N, 2), 'refillA');
    launch(t, exec, s, 'launchAgain');
    t.call('synchronizeAgain', t.cu.cuStreamSynchronize(s));
    sees(t, b, expected(pattern(N, 2)), 'afterSecondLaunch');
  });
  def('capture.replay.pinnedHost', (t) => {
    const { base } = t.mapped(2 * t.G);
    const s = t.stream();
    const src = pinned(t, N, 'allocSrc');
    const dst = pinned(t, N, 'allocDst');
    if (!base || !s || !src || !dst) return;
    src.set(pattern(N, 3));
    dst.fill(0);
    if (begin(t, s, MODES.global) !== 0) return;
    t.call('htod', t.cu.cuMemcpyHtoDAsync(base, src, N, s));
    t.call('dtod', t.cu.cuMemcpyDtoDAsync(base + t.g, base, N, s));
    t.call('dtoh', t.cu.cuMemcpyDtoHAsync(dst, base + t.g, N, s));
    const g = end(t, s);
    if (!g) return;
    nodes(t, g);
    t.see('dstUntouchedByCapture', hex(dst) === hex(filled(N, 0)));
    const exec = instantiate(t, g);
    if (!exec) return;
    // The host source is read at launch time.
    src.set(pattern(N, 4));
    launch(t, exec, s);
    t.call('synchronize', t.cu.cuStreamSynchronize(s));
    t.see('dstAfterLaunch', hex(dst) === hex(pattern(N, 4)));
    sees(t, base, pattern(N, 4), 'deviceAfterLaunch');
  });
  def('capture.replay.pageableHtoD', (t) => {
    const base = mappedBase(t);
    const s = t.stream();
    if (!base || !s) return;
    const src = pattern(N, 5);
    if (begin(t, s, MODES.global) !== 0) return;
    t.call('htod', t.cu.cuMemcpyHtoDAsync(base, src, N, s));
    status(t, s, 'status');
    const g = end(t, s);
    if (!g) return;
    nodes(t, g);
    const exec = instantiate(t, g);
    if (!exec) return;
    src.set(pattern(N, 6));
    launch(t, exec, s);
    t.call('synchronize', t.cu.cuStreamSynchronize(s));
    t.readEquals(base, pattern(N, 6), 'afterLaunch');
  });
  def('capture.replay.pageableDtoH', (t) => {
    const base = mappedBase(t);
    const s = t.stream();
    if (!base || !s) return;
    t.write(base, pattern(N, 7), 'fill');
    const dst = new Uint8Array(N);
    if (begin(t, s, MODES.global) !== 0) return;
    t.call('dtoh', t.cu.cuMemcpyDtoHAsync(dst, base, N, s));
    status(t, s, 'status');
    t.see('dstDuringCapture', hex(dst) === hex(pattern(N, 7)));
    const g = end(t, s);
    if (!g) return;
    nodes(t, g);
    const exec = instantiate(t, g);
    if (!exec) return;
    dst.fill(0);
    launch(t, exec, s);
    t.call('synchronize', t.cu.cuStreamSynchronize(s));
    t.see('dstAfterLaunch', hex(dst) === hex(pattern(N, 7)));
  });
  def('capture.replay.outlivesStream', (t) => {
    const base = mappedBase(t);
    const box = { value: 0n };
    if (!base || t.call('create', t.cu.cuStreamCreate(box, 0)) !== 0) return;
    const s = box.value;
    t.call('zero', t.cu.cuMemsetD8(base, 0, N));
    if (begin(t, s, MODES.global) !== 0) {
      t.call('destroy', t.cu.cuStreamDestroy(s));
      return;
    }
    t.call('memset', t.cu.cuMemsetD8Async(base, 0x42, N, s));
    const g = end(t, s);
    t.call('destroyStream', t.cu.cuStreamDestroy(s));
    if (!g) return;
    const exec = instantiate(t, g);
    const s2 = t.stream('cuStreamCreate2');
    if (!exec || !s2) return;
    launch(t, exec, s2, 'launchOnOther');
    t.call('synchronize', t.cu.cuStreamSynchronize(s2));
    sees(t, base, filled(N, 0x42), 'afterLaunch');
    t.call('zeroAgain', t.cu.cuMemsetD8(base, 0, N));
    launch(t, exec, 0n, 'launchOnNull');
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
    sees(t, base, filled(N, 0x42), 'afterLaunchOnNull');
  });
  def('capture.replay.graphDestroyedFirst', (t) => {
    const base = mappedBase(t);
    const s = t.stream();
    if (!base || !s || begin(t, s, MODES.global) !== 0) return;
    t.call('memset', t.cu.cuMemsetD8Async(base, 0x24, N, s));
    const g = end(t, s, 'end', false);
    if (!g) return;
    const e1 = instantiate(t, g, 'instantiate1');
    const e2 = instantiate(t, g, 'instantiate2');
    t.call('destroyGraph', t.cu.cuGraphDestroy(g));
    if (!e1 || !e2) return;
    t.call('zero', t.cu.cuMemsetD8(base, 0, N));
    launch(t, e1, s, 'launch1');
    t.call('synchronize1', t.cu.cuStreamSynchronize(s));
    sees(t, base, filled(N, 0x24), 'afterLaunch1');
    t.call('zeroAgain', t.cu.cuMemsetD8(base, 0, N));
    launch(t, e2, s, 'launch2');
    t.call('synchronize2', t.cu.cuStreamSynchronize(s));
    sees(t, base, filled(N, 0x24), 'afterLaunch2');
  });
  // vLLM's sleep mode: unmap, map other memory at the same addresses, replay the graphs.
  def('capture.replay.remappedAtSameAddress', (t) => {
    const base = t.reserve(t.G);
    const h1 = t.create(t.G, t.prop(), 0, 'create1');
    const s = t.stream();
    if (!base || !h1 || !s) return;
    t.map(base, t.G, h1, 'map1');
    t.access(base, t.G, RW, 'access1');
    if (begin(t, s, MODES.global) !== 0) return;
    t.call('memset', t.cu.cuMemsetD8Async(base, 0x77, N, s));
    const g = end(t, s);
    if (!g) return;
    const exec = instantiate(t, g);
    if (!exec) return;
    t.unmap(base, t.G, 'unmap1');
    t.release(h1, 'release1');
    const h2 = t.create(t.G, t.prop(), 0, 'create2');
    if (!h2) return;
    t.map(base, t.G, h2, 'map2');
    t.access(base, t.G, RW, 'access2');
    t.call('zero', t.cu.cuMemsetD8(base, 0, N));
    launch(t, exec, s);
    t.call('synchronize', t.cu.cuStreamSynchronize(s));
    sees(t, base, filled(N, 0x77), 'landedInNewMemory');
  });
  def(
    'capture.replay.afterUnmap',
    (t) => {
      const base = mappedBase(t);
      const s = t.stream();
      if (!base || !s || begin(t, s, MODES.global) !== 0) return;
      t.call('memset', t.cu.cuMemsetD8Async(base, 0x11, N, s));
      const g = end(t, s);
      const exec = g ? instantiate(t, g) : 0n;
      if (!exec) return;
      t.unmap(base, t.G);
      launch(t, exec, s);
      t.call('synchronize', t.cu.cuStreamSynchronize(s));
      t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
    },
    true,
  );
  def(
    'capture.replay.afterMemFree',
    (t) => {
      const a = allocation(t, 1 << 20);
      const s = t.stream();
      if (!a.ptr || !s || begin(t, s, MODES.global) !== 0) return;
      t.call('memset', t.cu.cuMemsetD8Async(a.ptr, 0x11, N, s));
      const g = end(t, s);
      const exec = g ? instantiate(t, g) : 0n;
      if (!exec) return;
      if (t.call('free', t.cu.cuMemFree(a.ptr)) === 0) a.freed = true;
      launch(t, exec, s);
      t.call('synchronize', t.cu.cuStreamSynchronize(s));
      t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
    },
    true,
  );

  // Events and cross-stream capture.
  def('capture.event.recordInCapture', (t) => {
    const base = mappedBase(t);
    const s = t.stream();
    const e = event(t);
    if (!base || !s || !e || begin(t, s, MODES.global) !== 0) return;
    t.call('memset', t.cu.cuMemsetD8Async(base, 0x66, N, s));
    t.call('record', t.cu.cuEventRecord(e, s));
    t.call('recordExternal', t.cu.cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL));
    const g = end(t, s);
    if (!g) return;
    nodes(t, g);
    const exec = instantiate(t, g);
    if (!exec) return;
    t.call('zero', t.cu.cuMemsetD8(base, 0, N));
    launch(t, exec, s);
    t.call('eventSynchronize', t.cu.cuEventSynchronize(e));
    t.call('eventQuery', t.cu.cuEventQuery(e));
    sees(t, base, filled(N, 0x66), 'afterLaunch');
  });
  def('capture.event.waitInCapture', (t) => {
    const s = t.stream();
    const other = t.stream('otherStream');
    const outside = event(t, 'createOutside');
    const inside = event(t, 'createInside');
    if (!s || !other || !outside || !inside) return;
    t.call('recordOutside', t.cu.cuEventRecord(outside, other));
    if (begin(t, s, MODES.global) !== 0) return;
    t.call('waitOutside', t.cu.cuStreamWaitEvent(s, outside, 0));
    status(t, s, 'statusAfterOutside');
    t.call('recordInside', t.cu.cuEventRecord(inside, s));
    t.call('waitInsideSame', t.cu.cuStreamWaitEvent(s, inside, 0));
    t.call('waitExternal', t.cu.cuStreamWaitEvent(s, outside, CU_EVENT_WAIT_EXTERNAL));
    status(t, s, 'status');
    const g = end(t, s);
    if (g) nodes(t, g);
  });
  def('capture.fork.join', (t) => {
    const { base } = t.mapped(2 * t.G);
    const s1 = t.stream();
    const s2 = t.stream('cuStreamCreate2');
    const fork = event(t, 'createFork');
    const join = event(t, 'createJoin');
    if (!base || !s1 || !s2 || !fork || !join) return;
    const b = base + t.g;
    if (begin(t, s1, MODES.global) !== 0) return;
    t.call('memset1', t.cu.cuMemsetD8Async(base, 0x01, N, s1));
    t.call('recordFork', t.cu.cuEventRecord(fork, s1));
    t.call('waitFork', t.cu.cuStreamWaitEvent(s2, fork, 0));
    status(t, s2, 'forkedStatus');
    t.call('memset2', t.cu.cuMemsetD8Async(b, 0x02, N, s2));
    t.call('recordJoin', t.cu.cuEventRecord(join, s2));
    t.call('waitJoin', t.cu.cuStreamWaitEvent(s1, join, 0));
    const g = end(t, s1);
    status(t, s2, 'forkedStatusAfter');
    if (!g) return;
    nodes(t, g);
    const exec = instantiate(t, g);
    if (!exec) return;
    t.call('zero', t.cu.cuMemsetD8(base, 0, N));
    t.call('zeroB', t.cu.cuMemsetD8(b, 0, N));
    launch(t, exec, s1);
    t.call('synchronize', t.cu.cuStreamSynchronize(s1));
    sees(t, base, filled(N, 0x01), 'firstBranch');
    sees(t, b, filled(N, 0x02), 'secondBranch');
  });
  def('capture.fork.unjoined', (t) => {
    const base = mappedBase(t);
    const s1 = t.stream();
    const s2 = t.stream('cuStreamCreate2');
    const fork = event(t, 'createFork');
    if (!base || !s1 || !s2 || !fork || begin(t, s1, MODES.global) !== 0) return;
    t.call('recordFork', t.cu.cuEventRecord(fork, s1));
    t.call('waitFork', t.cu.cuStreamWaitEvent(s2, fork, 0));
    t.call('memset2', t.cu.cuMemsetD8Async(base, 0x02, N, s2));
    end(t, s2, 'endOnForked');
    end(t, s1, 'endUnjoined');
    status(t, s1, 'statusAfter');
    status(t, s2, 'forkedStatusAfter');
    end(t, s2, 'endForkedAfter');
  });

  // The thread's mode made relaxed before a global capture begins: does the thread's mode or the capture's decide?
  def('capture.mode.threadRelaxedBeforeBegin', (t) => {
    const s = t.stream();
    if (!s) return;
    const box: { value: number } = { value: MODES.relaxed };
    const code = t.cu.cuThreadExchangeStreamCaptureMode(box);
    t.call('toRelaxed', code, code === 0 ? box.value : undefined);
    if (code !== 0) return;
    const before = box.value;
    t.later('cuThreadExchangeStreamCaptureMode', () =>
      t.cu.cuThreadExchangeStreamCaptureMode({ value: before }),
    );
    if (begin(t, s, MODES.global) !== 0) return;
    allocation(t, 1 << 20);
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
    status(t, s, 'statusAfter');
    end(t, s);
  });
  // Work given to a capture is checked when it is captured, or only at launch?
  def('capture.validate.badAddressesInCapture', (t) => {
    const s = t.stream();
    const nowhere = t.unreserved(t.G);
    const base = t.reserve(t.G);
    if (!s || !nowhere || !base || begin(t, s, MODES.global) !== 0) return;
    t.call('memsetUnreserved', t.cu.cuMemsetD8Async(nowhere, 1, 256, s));
    status(t, s, 'statusAfterUnreserved');
    t.call('memsetReservedUnmapped', t.cu.cuMemsetD8Async(base, 1, 256, s));
    t.call('htodUnmapped', t.cu.cuMemcpyHtoDAsync(base, pattern(256, 1), 256, s));
    status(t, s, 'status');
    const g = end(t, s);
    if (g) nodes(t, g);
  });
  // An event whose last record was in a capture, after the capture ended (never launched).
  def('capture.event.afterCaptureEnded', (t) => {
    const s = t.stream();
    const other = t.stream('otherStream');
    const e = event(t);
    if (!s || !other || !e || begin(t, s, MODES.global) !== 0) return;
    t.call('record', t.cu.cuEventRecord(e, s));
    end(t, s);
    t.call('query', t.cu.cuEventQuery(e));
    t.call('synchronize', t.cu.cuEventSynchronize(e));
    t.call('waitOnOther', t.cu.cuStreamWaitEvent(other, e, 0));
    t.call('recordAgain', t.cu.cuEventRecord(e, other));
    t.call('queryAfterRecord', t.cu.cuEventSynchronize(e));
  });
  // A graph launched into a capturing stream (a child graph node).
  def('capture.replay.launchIntoCapture', (t) => {
    const base = mappedBase(t);
    const s = t.stream();
    const s2 = t.stream('cuStreamCreate2');
    if (!base || !s || !s2 || begin(t, s, MODES.global) !== 0) return;
    t.call('memset', t.cu.cuMemsetD8Async(base, 0x31, N, s));
    const inner = end(t, s, 'endInner');
    const innerExec = inner ? instantiate(t, inner, 'instantiateInner') : 0n;
    if (!innerExec || begin(t, s2, MODES.global, 'beginOuter') !== 0) return;
    launch(t, innerExec, s2, 'launchIntoCapture');
    t.call('memsetOuter', t.cu.cuMemsetD8Async(base + BigInt(N), 0x32, N, s2));
    const outer = end(t, s2, 'endOuter');
    if (!outer) return;
    nodes(t, outer, 'outerNodes');
    const exec = instantiate(t, outer, 'instantiateOuter');
    if (!exec) return;
    t.call('zero', t.cu.cuMemsetD8(base, 0, 2 * N));
    launch(t, exec, s2);
    t.call('synchronize', t.cu.cuStreamSynchronize(s2));
    const expected = new Uint8Array(2 * N);
    expected.fill(0x31, 0, N).fill(0x32, N);
    sees(t, base, expected, 'afterLaunch');
  });

  // Graph and executable-graph handles.
  def('capture.graph.badHandles', (t) => {
    const s = t.stream();
    if (!s) return;
    t.call('instantiateNullGraph', t.cu.cuGraphInstantiate({ value: 0n }, 0n, 0));
    t.call('launchNullExec', t.cu.cuGraphLaunch(0n, s));
    t.call('destroyNullGraph', t.cu.cuGraphDestroy(0n));
    t.call('destroyNullExec', t.cu.cuGraphExecDestroy(0n));
    t.call('nodesNullGraph', t.cu.cuGraphGetNodes(0n, null, { value: -1 }));
    if (begin(t, s, MODES.global) !== 0) return;
    const g = end(t, s);
    if (!g) return;
    t.call('instantiateNullBox', t.cu.cuGraphInstantiate(null, g, 0));
    t.call('nodesNullCount', t.cu.cuGraphGetNodes(g, null, null));
    for (const flags of [1, 2, 8, 0x10, 0x100]) {
      const exec = instantiate(t, g, `flags${flags}`, flags);
      if (exec) t.call(`launchFlags${flags}`, t.cu.cuGraphLaunch(exec, s));
    }
    t.call('synchronize', t.cu.cuStreamSynchronize(s));
    const box = { value: 0n };
    const code = t.cu.cuGraphInstantiateWithFlags(box, g, 0);
    t.call('withFlagsName', code, code === 0 ? box.value !== 0n : undefined);
    if (code === 0) t.call('destroyWithFlagsExec', t.cu.cuGraphExecDestroy(box.value));
  });
  def(
    'capture.graph.destroyedHandles',
    (t) => {
      const s = t.stream();
      if (!s || begin(t, s, MODES.global) !== 0) return;
      const g = end(t, s, 'end', false);
      if (!g) return;
      const exec = instantiate(t, g, 'instantiate', 0, false);
      t.call('destroyGraph', t.cu.cuGraphDestroy(g));
      t.call('instantiateDestroyed', t.cu.cuGraphInstantiate({ value: 0n }, g, 0));
      t.call('destroyGraphAgain', t.cu.cuGraphDestroy(g));
      if (!exec) return;
      t.call('destroyExec', t.cu.cuGraphExecDestroy(exec));
      t.call('launchDestroyed', t.cu.cuGraphLaunch(exec, s));
      t.call('destroyExecAgain', t.cu.cuGraphExecDestroy(exec));
    },
    true,
  );
  def(
    'capture.stream.destroyWhileCapturing',
    (t) => {
      const base = mappedBase(t);
      const box = { value: 0n };
      if (!base || t.call('create', t.cu.cuStreamCreate(box, 0)) !== 0) return;
      const s = box.value;
      if (begin(t, s, MODES.global) !== 0) {
        t.call('destroy', t.cu.cuStreamDestroy(s));
        return;
      }
      t.call('memset', t.cu.cuMemsetD8Async(base, 1, 256, s));
      if (t.call('destroyCapturing', t.cu.cuStreamDestroy(s)) !== 0) {
        end(t, s, 'endAfterRefusal');
        t.call('destroy', t.cu.cuStreamDestroy(s));
      }
      t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
    },
    true,
  );
}
