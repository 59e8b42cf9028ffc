/**
 * A big memory snapshot with stacks, made from a real one: its trace
 * repeated until the pickle has the size asked for, and written as
 * PyTorch's `_dump_snapshot` writes it (Note [Big snapshot]). The benchmark
 * (bench/big-snapshot-bench.ts), the streaming reader's tests and the
 * command line (bench/big-snapshot.ts) use it.
 *
 * Note [Big snapshot]: repetition r of the source trace runs r periods later
 * (the source's span in time plus 1 ms) at addresses r spans higher (the
 * source's address range rounded up to 1 GiB), so no repetition touches
 * another's blocks. Every repetition but the last is closed: the blocks
 * still live at its end are freed (free_requested, free_completed, newest
 * first) and its segments released (segment_free, or segment_unmap of each
 * mapped range of an expandable segment), so allocs and frees balance; the
 * frees in the source of blocks it never allocated (it started mid-run) are
 * kept in the first repetition only. The last repetition is left as the
 * source ends, and `segments` is the source's, moved to the last
 * repetition's addresses: the file is consistent as a snapshot of a job that
 * ran the source's work again and again. A native source's segments are
 * released in the order PyTorch's empty_cache() releases them (the large
 * pool, then the small one, each by stream, size and address), so replay
 * reproduces such a file as recorded (test/replay/big-snapshot-replay.test.ts),
 * the seams taken for empty_cache() calls. An expandable source's is not
 * reproduced: PyTorch maps a repetition's pages into the segment it keeps,
 * not a span higher.
 *
 * Stacks: a source recorded with stacks keeps its own. One without (the
 * committed traces/h200 ones) gets synthetic stacks shaped like PyTorch's
 * with `_record_memory_history()`'s defaults (C++ and Python frames,
 * innermost first, 20 to 40 deep; 300 distinct, chosen by action and size so
 * the same request has the same stack every repetition). The pickle is
 * shaped as PyTorch leaves it: one frame dict per distinct frame, memoized
 * and fetched with BINGET; one list per entry (a free_completed shares its
 * free_requested's list, an alloc the list of the segment event it caused,
 * and a live block's list is its alloc's, written first in `segments`); a new
 * 'N/A' string per entry's compile_context; FRAME opcodes from protocol 4.
 */
import { closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { SMALL_BUFFER } from '../../src/alloc/pytorch/sizes.js';
import { readPickle, readSnapshotFile } from '../../src/replay/read/load.js';
import {
  isPickleDict,
  Op,
  type PickleDict,
  PickleStreamWriter,
  PickleTuple,
  type PickleValue,
} from '../../src/replay/read/pickle/index.js';
import { ACTIONS, Action, type DeviceTrace, type MemorySnapshot } from '../../src/replay/read/snapshot.js';
import { random } from './random.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const BATCH = 1000;
const SYNTHETIC_STACKS = 300;

export interface BigSnapshotOptions {
  readonly source: string;
  /** The pickle's size to aim at, in bytes. */
  readonly bytes: number;
  readonly out: string;
  /** 2 to 5 (default 4, what `_dump_snapshot` writes on Python 3.8 to 3.13). */
  readonly protocol?: number;
}

export interface BigSnapshotInfo {
  readonly source: string;
  readonly bytes: number;
  readonly events: number;
  readonly repetitions: number;
  readonly frames: number;
  readonly stacks: number;
  /** True when the source had no stacks and synthetic ones were attached. */
  readonly syntheticStacks: boolean;
  readonly protocol: number;
}

/**
 * The generator's version: bumped when it writes something else for the
 * same source and size (2: the seams released in PyTorch's order). The
 * benchmarks key the big files they keep in the temp folder by it.
 */
export const GENERATOR_VERSION = 2;

/** Write the big snapshot (Note [Big snapshot]). */
export function writeBigSnapshot(options: BigSnapshotOptions): BigSnapshotInfo {
  const protocol = options.protocol ?? 4;
  const source = readSnapshotFile(options.source);
  const stacks = stackSource(source);
  const annotations = annotationsOf(options.source);
  const plans = source.traces.map((t) => cyclePlan(t, source));
  // One repetition's bytes, from a dry run of two (the first pays for the memo's first entries).
  const measure = new SnapshotWriter(() => {}, protocol, source, stacks, plans, annotations, 2);
  measure.header();
  const before = measure.offset;
  measure.traces(2);
  const perRepetition = Math.max(1, (measure.offset - before) / 2);
  const repetitions = Math.max(1, Math.round((options.bytes - before) / perRepetition));

  const fd = openSync(options.out, 'w');
  let events = 0;
  try {
    const w = new SnapshotWriter(
      (b) => writeSync(fd, b),
      protocol,
      source,
      stacks,
      plans,
      annotations,
      repetitions,
    );
    w.header();
    events = w.traces(repetitions);
    w.finish();
  } finally {
    closeSync(fd);
  }
  return {
    source: options.source,
    bytes: statSync(options.out).size,
    events,
    repetitions,
    frames: stacks.frames.length,
    stacks: stacks.lists.length,
    syntheticStacks: stacks.synthetic,
    protocol,
  };
}

/** The stacks events are written with: the source's, or synthetic ones (see the header). */
interface StackSource {
  readonly frames: readonly PickleDict[];
  /** Each stack's frames, innermost first. */
  readonly lists: readonly (readonly PickleDict[])[];
  readonly synthetic: boolean;
  /** The stack of event i of a device's trace; -1: the entry has no frames. */
  stackOf(trace: DeviceTrace, i: number): number;
}

function stackSource(s: MemorySnapshot): StackSource {
  const recorded = s.stacks.length > 0;
  if (recorded) {
    const frames = s.frames.map((f): PickleDict => ({ name: f.name, filename: f.filename, line: f.line }));
    return {
      frames,
      lists: s.stacks.map((st) => Array.from(st, (f) => frames[f])),
      synthetic: false,
      stackOf: (t, i) => t.stack[i],
    };
  }
  const { frames, lists } = syntheticStacks(SYNTHETIC_STACKS);
  return {
    frames,
    lists,
    synthetic: true,
    stackOf: (t, i) => {
      const a = t.action[i];
      if (a === Action.snapshot) return -1;
      // The same request from the same place: one stack per (kind of action, size).
      const kind = a === Action.alloc ? 0 : a <= Action.free_completed ? 1 : 2;
      return hash(kind, t.size[i]) % lists.length;
    },
  };
}

function hash(a: number, b: number): number {
  let h = Math.imul(0x811c9dc5 ^ a, 0x01000193);
  h = Math.imul(h ^ (b % 4294967296), 0x01000193);
  h = Math.imul(h ^ Math.floor(b / 4294967296), 0x01000193);
  h ^= h >>> 13;
  return (Math.imul(h, 0x5bd1e995) >>> 0) % 2147483647;
}

/** Stacks as `_record_memory_history()` (context 'all', stacks 'all') records them: C++ then Python frames. */
function syntheticStacks(count: number): { frames: PickleDict[]; lists: PickleDict[][] } {
  const rnd = random(11);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const frames: PickleDict[] = [];
  const frame = (filename: string, name: string, line: number): PickleDict => {
    const f = { name, filename, line };
    frames.push(f);
    return f;
  };
  const lib = '/opt/conda/lib/python3.11/site-packages/torch/lib';
  const site = '/opt/conda/lib/python3.11/site-packages';
  const capture = [
    frame('??', 'torch::unwind::unwind()', 0),
    frame('??', 'torch::CapturedTraceback::gather(bool, bool, bool)', 0),
    frame(`${lib}/libtorch_python.so`, 'torch::cuda::(anonymous namespace)::gather_with_cpp()', 0),
  ];
  const allocator = [
    frame(
      `${lib}/libc10_cuda.so`,
      'c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)',
      0,
    ),
    frame(
      `${lib}/libc10_cuda.so`,
      'c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)',
      0,
    ),
    frame(
      `${lib}/libc10_cuda.so`,
      'c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)',
      0,
    ),
  ];
  const ops = [
    'mm',
    'addmm',
    'bmm',
    'add',
    'mul',
    'softmax',
    'layer_norm',
    'gelu',
    'embedding',
    'cat',
    'empty_strided',
    'copy_',
    'convolution',
    'native_dropout',
    'sum',
    'index_select',
    'scaled_dot_product_attention',
    'zeros_like',
    'clone',
    'view_as',
  ];
  const aten = ops.map((op) => [
    frame(
      `${lib}/libtorch_cuda.so`,
      `at::native::(anonymous namespace)::structured_${op}_out_cuda::set_output_raw_strided(long, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions, c10::ArrayRef<at::Dimname>)`,
      0,
    ),
    frame(
      `${lib}/libtorch_cuda.so`,
      `at::(anonymous namespace)::wrapper_CUDA_${op}(at::Tensor const&, at::Tensor const&)`,
      0,
    ),
    frame(
      `${lib}/libtorch_cpu.so`,
      `at::_ops::${op}::redispatch(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)`,
      0,
    ),
    frame(
      `${lib}/libtorch_cpu.so`,
      `torch::autograd::VariableType::(anonymous namespace)::${op}(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)`,
      0,
    ),
    frame(`${lib}/libtorch_cpu.so`, `at::_ops::${op}::call(at::Tensor const&, at::Tensor const&)`, 0),
    frame(`${lib}/libtorch_python.so`, `torch::autograd::THPVariable_${op}(_object*, _object*, _object*)`, 0),
  ]);
  const interpreter = [
    frame('/usr/local/src/conda/python-3.11.9/Objects/call.c', '_PyObject_MakeTpCall', 214),
    frame('/usr/local/src/conda/python-3.11.9/Python/ceval.c', '_PyEval_EvalFrameDefault', 4769),
  ];
  const torchPy = [
    ['torch/nn/modules/linear.py', 'forward', 116],
    ['torch/nn/modules/normalization.py', 'forward', 201],
    ['torch/nn/modules/activation.py', 'forward', 696],
    ['torch/nn/modules/sparse.py', 'forward', 163],
    ['torch/nn/modules/dropout.py', 'forward', 59],
    ['torch/nn/functional.py', 'scaled_dot_product_attention', 5403],
    ['torch/optim/adamw.py', '_multi_tensor_adamw', 588],
    ['torch/optim/optimizer.py', 'wrapper', 391],
    ['torch/autograd/graph.py', '_engine_run_backward', 744],
    ['torch/_tensor.py', 'backward', 581],
  ].map(([f, n, l]) => frame(`${site}/${f}`, n as string, l as number));
  const callImpl = [
    frame(`${site}/torch/nn/modules/module.py`, '_call_impl', 1562),
    frame(`${site}/torch/nn/modules/module.py`, '_wrapped_call_impl', 1553),
  ];
  const model = Array.from({ length: 60 }, (_, i) =>
    frame(
      `/workspace/model/${['attention', 'mlp', 'block', 'embed', 'head'][i % 5]}.py`,
      ['forward', '_proj', '_attend', '_norm'][i % 4],
      20 + ((i * 37) % 300),
    ),
  );
  const top = [
    frame('/workspace/train.py', 'train_step', 88),
    frame('/workspace/train.py', 'main', 141),
    frame('/workspace/train.py', '<module>', 160),
    frame('/usr/local/src/conda/python-3.11.9/Python/pythonrun.c', 'PyRun_SimpleFileExFlags', 439),
    frame('/usr/local/src/conda/python-3.11.9/Modules/main.c', 'Py_RunMain', 709),
    frame('??', '__libc_start_main', 0),
    frame('??', '_start', 0),
  ];
  const lists = Array.from({ length: count }, () => {
    const stack = [...capture, ...allocator, ...pick(aten), ...interpreter, pick(torchPy)];
    const depth = 1 + Math.floor(rnd() * 4);
    for (let d = 0; d < depth; d++) stack.push(...callImpl, pick(model), ...interpreter.slice(1));
    stack.push(...top);
    return stack;
  });
  return { frames, lists };
}

/** What one repetition of a device's trace writes besides the source's events (Note [Big snapshot]). */
interface CyclePlan {
  readonly trace: DeviceTrace;
  /** Events left out of every repetition but the first: frees of blocks or segments the trace never made. */
  readonly unmatched: Uint8Array;
  /** The events that close a repetition, as [action, addr, size, stream, the event that made it] rows. */
  readonly closing: readonly (readonly [number, number, number, number, number])[];
  readonly lastUs: number;
  readonly periodUs: number;
  readonly span: number;
  /** The events that made a block or segment still there at the end. */
  readonly liveAt: ReadonlySet<number>;
}

function cyclePlan(t: DeviceTrace, s: MemorySnapshot): CyclePlan {
  const n = t.length;
  const unmatched = new Uint8Array(n);
  // Live blocks: address -> [alloc event, requested?]; segments by address (native) or mapped ranges (expandable).
  const blocks = new Map<number, { event: number; size: number; stream: number; requested: boolean }>();
  const segments = new Map<number, { event: number; size: number; stream: number }>();
  const mapped = new Map<number, { event: number; size: number; stream: number }>();
  let low = Number.POSITIVE_INFINITY;
  let high = 0;
  for (let i = 0; i < n; i++) {
    const a = t.action[i];
    const addr = t.addr[i];
    const size = t.size[i];
    if (a !== Action.oom && a !== Action.snapshot) {
      low = Math.min(low, addr);
      high = Math.max(high, addr + size);
    }
    switch (a) {
      case Action.alloc:
        blocks.set(addr, { event: i, size, stream: t.stream[i], requested: false });
        break;
      case Action.free_requested: {
        const b = blocks.get(addr);
        if (b === undefined) unmatched[i] = 1;
        else b.requested = true;
        break;
      }
      case Action.free_completed:
        if (!blocks.delete(addr)) unmatched[i] = 1;
        break;
      case Action.segment_alloc:
        segments.set(addr, { event: i, size, stream: t.stream[i] });
        break;
      case Action.segment_free:
        if (!segments.delete(addr)) unmatched[i] = 1;
        break;
      case Action.segment_map:
        mapped.set(addr, { event: i, size, stream: t.stream[i] });
        break;
      case Action.segment_unmap:
        if (!unmapRange(mapped, addr, size)) unmatched[i] = 1;
        break;
    }
  }
  for (const seg of s.segments) {
    if (seg.device !== t.device) continue;
    low = Math.min(low, seg.address);
    high = Math.max(high, seg.address + seg.totalSize);
  }
  const closing: [number, number, number, number, number][] = [];
  for (const [addr, b] of [...blocks].sort((x, y) => y[1].event - x[1].event)) {
    if (!b.requested) closing.push([Action.free_requested, addr, b.size, b.stream, b.event]);
    closing.push([Action.free_completed, addr, b.size, b.stream, b.event]);
  }
  // Released as PyTorch's empty_cache() releases them (release_cached_blocks: the large pool, then the
  // small one, each in (stream, size, address) order), so replay reproduces the seam.
  const small = (size: number) => (size <= SMALL_BUFFER ? 1 : 0);
  for (const [addr, g] of [...segments].sort(
    (x, y) =>
      small(x[1].size) - small(y[1].size) ||
      x[1].stream - y[1].stream ||
      x[1].size - y[1].size ||
      x[0] - y[0],
  ))
    closing.push([Action.segment_free, addr, g.size, g.stream, g.event]);
  for (const [addr, g] of [...mapped].sort((x, y) => y[0] - x[0]))
    closing.push([Action.segment_unmap, addr, g.size, g.stream, g.event]);
  // What the final `segments` shows, by the event that made it: blocks by their alloc, segments by segment_alloc.
  const liveAt = new Set<number>();
  for (const b of blocks.values()) liveAt.add(b.event);
  for (const g of segments.values()) liveAt.add(g.event);
  let first = Number.NaN;
  let last = Number.NaN;
  for (let i = 0; i < n; i++) {
    const time = t.timeUs[i];
    if (Number.isNaN(time)) continue;
    if (Number.isNaN(first)) first = time;
    last = time;
  }
  if (Number.isNaN(first)) first = last = 0;
  return {
    trace: t,
    unmatched,
    closing,
    lastUs: last,
    periodUs: last - first + closing.length + 1000,
    span: Number.isFinite(low) ? Math.ceil((high - low + 1) / GiB) * GiB : GiB,
    liveAt,
  };
}

/** Take [addr, addr + size) out of the mapped ranges; false when none of it was mapped. */
function unmapRange(
  mapped: Map<number, { event: number; size: number; stream: number }>,
  addr: number,
  size: number,
): boolean {
  let any = false;
  const end = addr + size;
  for (const [start, r] of [...mapped]) {
    const rEnd = start + r.size;
    if (rEnd <= addr || start >= end) continue;
    any = true;
    mapped.delete(start);
    if (start < addr) mapped.set(start, { ...r, size: addr - start });
    if (rEnd > end) mapped.set(end, { ...r, size: rEnd - end });
  }
  return any;
}

/** The raw external_annotations of a small source (they are repeated with the trace); none for a big one. */
function annotationsOf(path: string): PickleDict[] {
  if (statSync(path).size > 256 * MiB) return [];
  const raw = readPickle(readFileSync(path));
  const list = isPickleDict(raw) ? raw.external_annotations : undefined;
  return Array.isArray(list) ? list.filter(isPickleDict) : [];
}

/** Writes the snapshot's parts in PyTorch's order and shape (Note [Big snapshot]). */
class SnapshotWriter {
  readonly #w: PickleStreamWriter;
  /** Memo index of each live block's or segment's frames list, by the event that made it (last repetition). */
  readonly #liveLists: Map<number, number>[];

  constructor(
    out: (b: Uint8Array) => void,
    protocol: number,
    readonly source: MemorySnapshot,
    readonly stacks: StackSource,
    readonly plans: readonly CyclePlan[],
    readonly annotations: readonly PickleDict[],
    readonly repetitions: number,
  ) {
    this.#w = new PickleStreamWriter(out, { protocol });
    this.#liveLists = plans.map(() => new Map());
  }

  get offset(): number {
    return this.#w.offset;
  }

  /** The root dict's MARK and `segments`, at the last repetition's addresses. */
  header(): void {
    const w = this.#w;
    w.emptyDict();
    w.op(Op.MARK);
    w.string('segments');
    this.#list(this.source.segments, (seg) => this.#segment(seg));
  }

  /** `device_traces`, `repetitions` times each; the events written. */
  traces(repetitions: number): number {
    const w = this.#w;
    let events = 0;
    w.string('device_traces');
    this.#list(this.plans, (plan, d) => {
      w.emptyList();
      let batch = 0;
      // Each entry inside its batch: MARK before the first, APPENDS after the thousandth.
      const item = (write: () => void) => {
        if (batch === 0) w.op(Op.MARK);
        write();
        events++;
        if (++batch === BATCH) {
          w.op(Op.APPENDS);
          batch = 0;
        }
      };
      for (let r = 0; r < repetitions; r++) this.#repetition(plan, d, r, repetitions, item);
      if (batch > 0) w.op(Op.APPENDS);
    });
    return events;
  }

  /** allocator_settings, external_annotations, and the root's SETITEMS and STOP. */
  finish(): void {
    const w = this.#w;
    w.string('allocator_settings').value(this.source.allocatorSettings ?? {});
    w.string('external_annotations');
    const period = this.plans[0]?.periodUs ?? 0;
    const annotations = this.annotations;
    this.#list(
      Array.from({ length: this.repetitions * annotations.length }, (_, k) => k),
      (k) => {
        const a = annotations[k % annotations.length];
        const r = Math.floor(k / annotations.length);
        const copy: PickleDict = { ...a };
        if (typeof a.time_us === 'number') copy.time_us = a.time_us + r * period;
        w.value(copy);
      },
    );
    w.op(Op.SETITEMS);
    w.stop();
  }

  /** A list written as CPython writes one: EMPTY_LIST, then MARK ... APPENDS per 1000 items (APPEND for one). */
  #list<T>(items: readonly T[], write: (item: T, i: number) => void): void {
    const w = this.#w;
    w.emptyList();
    for (let from = 0; from < items.length; from += BATCH) {
      const to = Math.min(items.length, from + BATCH);
      if (to - from > 1) w.op(Op.MARK);
      for (let i = from; i < to; i++) write(items[i], i);
      w.op(to - from > 1 ? Op.APPENDS : Op.APPEND);
    }
  }

  #frames(stack: number): number {
    const w = this.#w;
    const index = w.emptyList();
    const frames = this.stacks.lists[stack];
    this.#list0(frames);
    return index;
  }

  /** The items of a list already begun. */
  #list0(items: readonly PickleValue[]): void {
    const w = this.#w;
    for (let from = 0; from < items.length; from += BATCH) {
      const to = Math.min(items.length, from + BATCH);
      if (to - from > 1) w.op(Op.MARK);
      for (let i = from; i < to; i++) w.value(items[i]);
      w.op(to - from > 1 ? Op.APPENDS : Op.APPEND);
    }
  }

  #segment(seg: MemorySnapshot['segments'][number]): void {
    const w = this.#w;
    const d = this.source.traces.findIndex((t) => t.device === seg.device);
    const plan = this.plans[d];
    const shift = plan === undefined ? 0 : (this.repetitions - 1) * plan.span;
    let allocated = 0;
    let active = 0;
    let requested = 0;
    for (const b of seg.blocks) {
      if (b.state === 'active_allocated') {
        allocated += b.size;
        requested += b.requestedSize;
      }
      if (b.state !== 'inactive') active += b.size;
    }
    w.emptyDict();
    w.op(Op.MARK);
    w.string('device').value(seg.device);
    w.string('address').value(seg.address + shift);
    w.string('total_size').value(seg.totalSize);
    w.string('allocated_size').value(allocated);
    w.string('active_size').value(active);
    w.string('requested_size').value(requested);
    w.string('stream').value(seg.stream);
    w.string('segment_type').string(seg.segmentType ?? 'large');
    w.string('segment_pool_id').value(new PickleTuple(seg.poolId ?? [0, 0]));
    w.string('is_expandable').value(seg.isExpandable);
    w.string('blocks');
    this.#list(seg.blocks, (b) => {
      w.emptyDict();
      w.op(Op.MARK);
      w.string('address').value(b.address + shift);
      w.string('size').value(b.size);
      w.string('requested_size').value(b.requestedSize);
      w.string('state').string(b.state);
      w.string('frames');
      const event =
        b.state === 'inactive' || plan === undefined
          ? undefined
          : this.#madeBy(plan, Action.alloc, b.address);
      this.#liveFrames(d, plan, event);
      w.op(Op.SETITEMS);
    });
    w.string('frames');
    const made =
      plan === undefined || seg.isExpandable
        ? undefined
        : this.#madeBy(plan, Action.segment_alloc, seg.address);
    this.#liveFrames(d, plan, made);
    w.op(Op.SETITEMS);
  }

  /** The event of the source trace that made what is live at `addr` (Note [Big snapshot]). */
  #madeBy(plan: CyclePlan, action: number, addr: number): number | undefined {
    const t = plan.trace;
    for (const event of plan.liveAt) if (t.action[event] === action && t.addr[event] === addr) return event;
    return undefined;
  }

  /** A live block's or segment's frames: its making event's stack, the list remembered for that event. */
  #liveFrames(d: number, plan: CyclePlan | undefined, event: number | undefined): void {
    const stack = plan === undefined || event === undefined ? -1 : this.stacks.stackOf(plan.trace, event);
    if (stack < 0) {
      this.#w.emptyList();
      return;
    }
    this.#liveLists[d].set(event!, this.#frames(stack));
  }

  #repetition(
    plan: CyclePlan,
    d: number,
    r: number,
    repetitions: number,
    item: (write: () => void) => void,
  ): void {
    const t = plan.trace;
    const last = r === repetitions - 1;
    const shift = r * plan.span;
    const dt = r * plan.periodUs;
    const live = last ? this.#liveLists[d] : undefined;
    // The list a segment event made, for the alloc it was made for; a free_requested's, for its free_completed.
    let segmentList = -1;
    let segmentStack = -1;
    const freeLists = new Map<number, [number, number]>();
    for (let i = 0; i < t.length; i++) {
      if (r > 0 && plan.unmatched[i] === 1) continue;
      const a = t.action[i];
      const moves = a !== Action.oom && a !== Action.snapshot;
      const addr = moves ? t.addr[i] + shift : t.addr[i];
      let stack = this.stacks.stackOf(t, i);
      let list = live?.get(i) ?? -1;
      if (a === Action.alloc && segmentList >= 0) {
        if (list < 0) {
          list = segmentList;
          stack = segmentStack;
        }
        segmentList = -1;
      } else if (a === Action.free_completed) {
        const shared = freeLists.get(addr);
        if (shared !== undefined) {
          [list, stack] = shared;
          freeLists.delete(addr);
        }
      }
      let made = -1;
      item(() => {
        made = this.#entry(a, addr, t.size[i], t.stream[i], t.timeUs[i] + dt, stack, list);
      });
      if (a === Action.segment_alloc || a === Action.segment_map) {
        segmentList = made;
        segmentStack = stack;
      } else if (a === Action.free_requested && made >= 0) freeLists.set(addr, [made, stack]);
    }
    if (last) return;
    let time = plan.lastUs + 1 + dt;
    for (const [a, addr, size, stream, event] of plan.closing) {
      item(() => this.#entry(a, addr + shift, size, stream, time++, this.stacks.stackOf(t, event), -1));
    }
  }

  /** One trace entry, keys in Module.cpp's order; its frames list (a new one, or `list` fetched); the list's memo index. */
  #entry(
    action: number,
    addr: number,
    size: number,
    stream: number,
    time: number,
    stack: number,
    list: number,
  ): number {
    const w = this.#w;
    w.emptyDict();
    w.op(Op.MARK);
    w.string('action').string(ACTIONS[action]);
    w.string(action === Action.oom ? 'device_free' : 'addr').value(addr);
    w.string('size').value(size);
    w.string('stream').value(stream);
    if (!Number.isNaN(time)) w.string('time_us').value(time);
    w.string('compile_context').string('N/A', true);
    w.string('user_metadata').string('');
    let made = -1;
    if (stack >= 0) {
      w.string('frames');
      if (list >= 0) {
        w.get(list);
        made = list;
      } else made = this.#frames(stack);
    }
    w.op(Op.SETITEMS);
    return made;
  }
}
