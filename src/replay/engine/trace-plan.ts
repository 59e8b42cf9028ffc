/**
 * What replay needs to know about a trace before any allocator sees it:
 * which block each event allocates or frees, which blocks were live before
 * the trace began (T3), and the trace's own numbers (peak requested bytes,
 * counts). Computed once and shared by every allocator's run.
 *
 * Note [Blocks, not addresses]: a recorded address is reused many times, so
 * the plan gives every allocation its own block id, and each free event the
 * id of the block it frees. A run then keeps our address per block in a
 * typed array: no hash lookups and no garbage per event, whatever the
 * allocator.
 *
 * Note [Started mid-run]: the trace is a ring buffer, so it may begin after
 * blocks were allocated (docs/pytorch-allocators.md T3; memory_viz calls them
 * "initially_allocated"). The first event at an address tells: if it is a
 * free, the block was live at the start. So is a block the final `segments`
 * list shows active whose address no event touches. Such blocks get ids of
 * their own. The recorded allocator's whole state at the first event (its
 * segments, cached free blocks and these live blocks) is rebuilt in
 * `startState` (start-state.ts), which replay gives an allocator that can
 * restore it; for one that cannot, these blocks are allocated before the
 * first event, in address order. A
 * free of an address whose earlier history is in the trace but that is not
 * live (a double free) cannot be explained that way: it is counted in
 * `unmatchedFrees` and skipped. An alloc at an address already live (never
 * freed in between) is counted in `duplicateAllocs`; the older block stays
 * allocated, as nothing in the trace frees it.
 *
 * Note [Inferred empty_cache]: torch.cuda.empty_cache() leaves no event of
 * its own, only the recorded allocator's reaction: a run of segment_free
 * (native) or segment_unmap (expandable segments) events. The program made
 * that call, so every allocator replayed should get it: the plan marks the
 * first event of each such run, and replay calls emptyCache() there. Two
 * other paths free segments too, and a run is not taken for empty_cache when
 * one of them may explain it: garbage collection (N10; only when the
 * recorded settings set garbage_collection_threshold, and only for
 * segment_free), and a malloc retrying after a failed cudaMalloc (N6 g/h),
 * which needs a nearly full device: a run that starts while the recorded
 * allocator held 90% or more of the device's memory (of the memory limit,
 * when replay is given one: the recorded run is taken to have had it) is
 * left alone, unless the next request is in a CUDA graph's private pool:
 * a request made under a capture releases no cached blocks on its OOM path
 * (private-pools.ts, beforePrivateRequest; P8 of Note [Private pools]), so
 * there the run is empty_cache() (torch.cuda.graph calls it before each
 * capture) however full the device was. An
 * empty_cache() that found nothing to free leaves no trace and cannot be
 * inferred.
 */

import { DEVICE_SPECS } from '../../util/device-specs.js';
import { ABSENT, IntMap } from '../../util/int-map.js';
import { Action, type DeviceTrace, type MemorySnapshot, type SnapshotBlock } from '../read/snapshot.js';
import { inSimulatedAddressSpace } from '../read/vendor.js';
import { beforePrivateRequest, type DevicePools, inferPrivatePools } from './private-pools.js';
import { type DeviceStartState, rebuildStartState } from './start-state.js';
import { TouchedAddresses } from './touched-addresses.js';

export interface DevicePlan {
  readonly device: number;
  readonly trace: DeviceTrace;
  /** Per event: the block an alloc creates or a free releases; -1 for every other event and unmatched frees. */
  readonly blockOf: Int32Array;
  readonly blockCount: number;
  /** Requested bytes and stream of each block. */
  readonly blockSize: Float64Array;
  readonly blockStream: Float64Array;
  /** Blocks live before the first event (Note [Started mid-run]), in address order. */
  readonly initialBlocks: Int32Array;
  /** Recorded address of each initial block, parallel to initialBlocks. */
  readonly initialAddress: Float64Array;
  /** The peak of the sum of live requested bytes (alloc to free_completed, initial blocks included). */
  readonly peakRequestedBytes: number;
  readonly counts: TraceCounts;
  /** Last time_us minus first time_us (0 without times). */
  readonly durationUs: number;
  /** Events before which the program called empty_cache() (Note [Inferred empty_cache]), ascending. */
  readonly emptyCacheBefore: Int32Array;
  /** The recorded allocator's segments and blocks at the first event, and how sure that is (start-state.ts). */
  readonly startState: DeviceStartState;
  /** Each block's memory pool: default or a CUDA graph's private one (private-pools.ts). */
  readonly privatePools: DevicePools;
}

export interface TraceCounts {
  readonly events: number;
  readonly allocs: number;
  readonly freeRequested: number;
  readonly freeCompleted: number;
  readonly segmentAlloc: number;
  readonly segmentFree: number;
  readonly segmentMap: number;
  readonly segmentUnmap: number;
  readonly snapshots: number;
  readonly ooms: number;
  readonly unmatchedFrees: number;
  readonly duplicateAllocs: number;
  /** Active blocks in `segments` whose address the trace freed and did not allocate again: the two disagree. */
  readonly inconsistentBlocks: number;
  /** empty_cache() calls inferred (Note [Inferred empty_cache]). */
  readonly inferredEmptyCaches: number;
}

export interface PlanOptions {
  /** Infer empty_cache() calls from the recorded segment frees (default true). */
  readonly inferEmptyCache?: boolean;
  /** Bytes of the recorded device, for telling empty_cache from an OOM retry (default: an H200's). */
  readonly deviceMemory?: number;
  /**
   * The memory limit the recorded run had, if any: under one, "nearly full"
   * (an OOM retry rather than empty_cache) means nearly at the limit.
   */
  readonly memoryLimit?: number;
}

/** The default device's memory, from the device table (the one place the figure is written). */
const H200_MEMORY = DEVICE_SPECS.H200.totalMemory;

export interface TracePlan {
  readonly devices: readonly DevicePlan[];
  /** Sums over devices. */
  readonly peakRequestedBytes: number;
  readonly events: number;
  readonly allocs: number;
  readonly durationUs: number;
  readonly startedMidRun: boolean;
  readonly reconstructedBlocks: number;
  /** Blocks allocated in private pools, and blocks whose pool the snapshot does not tell (private-pools.ts). */
  readonly privatePoolBlocks: number;
  readonly unknownPoolBlocks: number;
  /** Whether empty_cache() calls were inferred at all (PlanOptions.inferEmptyCache). */
  readonly emptyCacheInferred: boolean;
}

/** Plan the replay of every device's trace. */
export function planReplay(recorded: MemorySnapshot, options: PlanOptions = {}): TracePlan {
  const snapshot = inSimulatedAddressSpace(recorded); // Note [torch_npu's addresses]
  const devices = tracesOf(snapshot).map((t) => planDevice(snapshot, t, options));
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const t of snapshot.traces) {
    for (let i = 0; i < t.length; i++) {
      const v = t.timeUs[i];
      if (v < first) first = v;
      if (v > last) last = v;
    }
  }
  const sum = (f: (d: DevicePlan) => number) => devices.reduce((s, d) => s + f(d), 0);
  const reconstructedBlocks = sum((d) => d.initialBlocks.length);
  return {
    devices,
    peakRequestedBytes: sum((d) => d.peakRequestedBytes),
    events: sum((d) => d.counts.events),
    allocs: sum((d) => d.counts.allocs),
    durationUs: last >= first ? last - first : 0,
    // Live blocks before the first event, or segments held then (cached memory alone, e.g. after an empty_cache).
    startedMidRun: reconstructedBlocks > 0 || devices.some((d) => d.startState.segments.length > 0),
    reconstructedBlocks,
    privatePoolBlocks: sum((d) => d.privatePools.privateBlocks),
    unknownPoolBlocks: sum((d) => d.privatePools.unknownPoolBlocks),
    emptyCacheInferred: options.inferEmptyCache !== false,
  };
}

/**
 * The device traces to plan. A segment list (torch.cuda.memory_snapshot(),
 * Note [Segment lists]) has none: each device its segments name gets an
 * empty one, so its live blocks are the start and what can be answered
 * without a history (what each allocator needs to hold them) is.
 */
function tracesOf(snapshot: MemorySnapshot): readonly DeviceTrace[] {
  if (snapshot.traces.length > 0 || snapshot.segments.length === 0) return snapshot.traces;
  const count = Math.max(...snapshot.segments.map((s) => s.device)) + 1;
  return Array.from({ length: count }, (_, device) => ({
    device,
    length: 0,
    action: new Uint8Array(0),
    addr: new Float64Array(0),
    size: new Float64Array(0),
    stream: new Float64Array(0),
    timeUs: new Float64Array(0),
    stack: new Int32Array(0),
  }));
}

/** Growable parallel arrays of block sizes and streams. */
class BlockTable {
  size = new Float64Array(1024);
  stream = new Float64Array(1024);
  count = 0;
  add(size: number, stream: number): number {
    if (this.count === this.size.length) {
      const s = new Float64Array(this.count * 2);
      s.set(this.size);
      this.size = s;
      const t = new Float64Array(this.count * 2);
      t.set(this.stream);
      this.stream = t;
    }
    this.size[this.count] = size;
    this.stream[this.count] = stream;
    return this.count++;
  }
}

function planDevice(snapshot: MemorySnapshot, trace: DeviceTrace, options: PlanOptions): DevicePlan {
  const walk = matchBlocks(trace);
  addBlocksLiveThroughout(snapshot, trace, walk);
  const { blocks, blockOf, counts } = walk;
  const initial = [...walk.initial].sort((x, y) => x.address - y.address);
  const initialBlocks = Int32Array.from(initial, (b) => b.id);
  const initialAddress = Float64Array.from(initial, (b) => b.address);
  const initialInTrace = Uint8Array.from(initial, (b) => (b.inTrace ? 1 : 0));
  const privatePools = inferPrivatePools(
    snapshot,
    trace,
    blockOf,
    blocks.count,
    initialBlocks,
    initialAddress,
  );
  const emptyCacheBefore =
    options.inferEmptyCache === false
      ? new Int32Array(0)
      : inferEmptyCache(
          trace,
          snapshot,
          options.memoryLimit ?? options.deviceMemory ?? H200_MEMORY,
          beforePrivateRequest(snapshot, trace, blockOf, privatePools),
        );
  counts.inferredEmptyCaches = emptyCacheBefore.length;
  return {
    device: trace.device,
    trace,
    blockOf,
    blockCount: blocks.count,
    blockSize: blocks.size,
    blockStream: blocks.stream,
    initialBlocks,
    initialAddress,
    peakRequestedBytes: walk.initialBytes + walk.peakDelta,
    counts,
    durationUs: durationOf(trace),
    emptyCacheBefore,
    startState: rebuildStartState(
      snapshot,
      trace,
      {
        ids: initialBlocks,
        address: initialAddress,
        inTrace: initialInTrace,
        requested: blocks.size,
        stream: blocks.stream,
      },
      { deviceMemory: options.deviceMemory ?? H200_MEMORY },
    ),
    privatePools,
  };
}

/** One walk of a device's trace: its blocks matched by address, its actions counted, its requested peak. */
interface BlockWalk {
  readonly blockOf: Int32Array;
  readonly blocks: BlockTable;
  /** The block live at each address (Note [Live and touched addresses]). */
  readonly live: IntMap;
  /** Every address an alloc or free named. */
  readonly touched: TouchedAddresses;
  /**
   * Blocks live before the trace began (Note [Started mid-run]), in the
   * order found; inTrace: found by a free in the trace (else by `segments`,
   * at an address no event names).
   */
  readonly initial: { id: number; address: number; inTrace: boolean }[];
  readonly counts: { -readonly [K in keyof TraceCounts]: TraceCounts[K] };
  initialBytes: number;
  /** Peak of (trace-live bytes - initial bytes freed so far); the initial total is added by the caller. */
  peakDelta: number;
}

/**
 * Each event's block (Note [Blocks, not addresses]): an alloc makes one; a
 * free finds the block at its address, or, where none was allocated in the
 * trace, one that was live before it began.
 */
function matchBlocks(trace: DeviceTrace): BlockWalk {
  const n = trace.length;
  const { action, addr, size, stream } = trace;
  const walk: BlockWalk = {
    blockOf: new Int32Array(n).fill(-1),
    blocks: new BlockTable(),
    live: new IntMap(),
    touched: new TouchedAddresses(),
    initial: [],
    counts: {
      events: n,
      allocs: 0,
      freeRequested: 0,
      freeCompleted: 0,
      segmentAlloc: 0,
      segmentFree: 0,
      segmentMap: 0,
      segmentUnmap: 0,
      snapshots: 0,
      ooms: 0,
      unmatchedFrees: 0,
      duplicateAllocs: 0,
      inconsistentBlocks: 0,
      inferredEmptyCaches: 0,
    },
    initialBytes: 0,
    peakDelta: 0,
  };
  const { blockOf, blocks, live, touched, initial, counts: c } = walk;
  let delta = 0;
  const newInitial = (i: number) => {
    const id = blocks.add(size[i], stream[i]);
    initial.push({ id, address: addr[i], inTrace: true });
    walk.initialBytes += size[i];
    return id;
  };
  for (let i = 0; i < n; i++) {
    switch (action[i]) {
      case Action.alloc: {
        c.allocs++;
        const a = addr[i];
        if (live.get(a) !== ABSENT) c.duplicateAllocs++;
        const id = blocks.add(size[i], stream[i]);
        live.set(a, id);
        touched.add(a);
        blockOf[i] = id;
        delta += size[i];
        if (delta > walk.peakDelta) walk.peakDelta = delta;
        break;
      }
      case Action.free_requested: {
        c.freeRequested++;
        const a = addr[i];
        const prior = live.get(a);
        if (prior !== ABSENT) blockOf[i] = prior;
        else if (!touched.has(a)) {
          // Never named before: a block live before the trace began.
          const id = newInitial(i);
          live.set(a, id);
          touched.add(a);
          blockOf[i] = id;
        }
        break;
      }
      case Action.free_completed: {
        c.freeCompleted++;
        const a = addr[i];
        const prior = live.get(a);
        if (prior !== ABSENT) {
          blockOf[i] = prior;
          live.delete(a);
          delta -= blocks.size[prior];
        } else if (touched.has(a)) c.unmatchedFrees++;
        else {
          const id = newInitial(i);
          blockOf[i] = id;
          touched.add(a);
          delta -= size[i];
        }
        break;
      }
      case Action.segment_alloc:
        c.segmentAlloc++;
        break;
      case Action.segment_free:
        c.segmentFree++;
        break;
      case Action.segment_map:
        c.segmentMap++;
        break;
      case Action.segment_unmap:
        c.segmentUnmap++;
        break;
      case Action.snapshot:
        c.snapshots++;
        break;
      case Action.oom:
        c.ooms++;
        break;
    }
  }
  return walk;
}

/** Blocks active at the end that no event touched were live all along: initial blocks too. */
function addBlocksLiveThroughout(snapshot: MemorySnapshot, trace: DeviceTrace, walk: BlockWalk): void {
  const { live, touched, blocks, initial, counts } = walk;
  const active: { block: SnapshotBlock; stream: number }[] = [];
  for (const s of snapshot.segments) {
    if (s.device !== trace.device) continue;
    for (const b of s.blocks) if (b.state !== 'inactive') active.push({ block: b, stream: s.stream });
  }
  const named = touched.hasEach(active.map((a) => a.block.address));
  for (let k = 0; k < active.length; k++) {
    const { block: b, stream } = active[k];
    if (live.get(b.address) !== ABSENT) continue;
    // Named by the trace and freed there: the trace and segments disagree.
    if (named[k]) {
      counts.inconsistentBlocks++;
      continue;
    }
    const id = blocks.add(b.requestedSize, stream);
    initial.push({ id, address: b.address, inTrace: false });
    walk.initialBytes += b.requestedSize;
    live.set(b.address, id);
  }
}

/** Microseconds from the trace's first timed event to its last (0 without time_us). */
function durationOf(trace: DeviceTrace): number {
  let first = Number.NaN;
  let last = Number.NaN;
  for (let i = 0; i < trace.length; i++) {
    const t = trace.timeUs[i];
    if (Number.isNaN(t)) continue;
    if (!(t >= first)) first = t;
    if (!(t <= last)) last = t;
  }
  return Number.isNaN(first) ? 0 : last - first;
}

/** How to record a snapshot replay can use (said when one holds nothing to replay). */
const HISTORY_HINT =
  '(call torch.cuda.memory._record_memory_history() before the workload, then torch.cuda.memory._dump_snapshot(path))';

/**
 * Why the snapshot `name` planned as `plan` gives replay nothing to do (no
 * trace events, no live blocks to start from), or undefined: the one
 * refusal of replay, advise, compare, the report and the page, which asks
 * whether history was recorded, as a dict without 'device_traces' does.
 */
export function nothingToReplay(name: string, plan: TracePlan): string | undefined {
  if (plan.events > 0 || plan.reconstructedBlocks > 0) return undefined;
  return `${name} holds no trace events and no live blocks to replay: was history recorded? ${HISTORY_HINT}`;
}

/**
 * The plan with empty_cache() placed by what is known of the recorded cap
 * (cap.ts) instead of by how full the device was: every run of segment
 * frees is taken for empty_cache() except those that began at one of the
 * device's `retries` (an OOM retry, N6 g/h, or garbage collection, N10:
 * the allocator replayed makes both itself when it nears its cap). The
 * plan's other parts are shared.
 * `infer` false places none (the recording's own replay infers
 * them whatever a what-if asks: they are what the program did).
 */
export function withRetries(
  snapshot: MemorySnapshot,
  plan: TracePlan,
  retries: (device: number) => ReadonlySet<number>,
  infer = plan.emptyCacheInferred,
): TracePlan {
  if (!infer) return { ...plan, devices: plan.devices.map(withoutEmptyCache) };
  const devices = plan.devices.map((d) => {
    const isRetry = retries(d.device);
    const beforePrivate = beforePrivateRequest(snapshot, d.trace, d.blockOf, d.privatePools);
    // The cap decides which runs collection made, so none is set aside for it here.
    const all = inferEmptyCache(d.trace, snapshot, Number.POSITIVE_INFINITY, beforePrivate, false);
    // A request under a capture releases nothing on its OOM path (P8): a run before one is empty_cache().
    const emptyCacheBefore = all.filter((i) => !isRetry.has(i) || beforePrivate(i));
    const counts = { ...d.counts, inferredEmptyCaches: emptyCacheBefore.length };
    return { ...d, emptyCacheBefore, counts };
  });
  return { ...plan, devices };
}

function withoutEmptyCache(d: DevicePlan): DevicePlan {
  return { ...d, emptyCacheBefore: new Int32Array(0), counts: { ...d.counts, inferredEmptyCaches: 0 } };
}

/** The first event of each run of segment frees that empty_cache() explains (Note [Inferred empty_cache]). */
function inferEmptyCache(
  trace: DeviceTrace,
  snapshot: MemorySnapshot,
  deviceMemory: number,
  beforePrivate: (i: number) => boolean,
  mayCollect = true,
): Int32Array {
  const gc = snapshot.allocatorSettings?.garbage_collection_threshold;
  const gcOn = mayCollect && typeof gc === 'number' && gc > 0;
  const { action, size } = trace;
  const out: number[] = [];
  let held = 0;
  let inRun = false;
  for (let i = 0; i < trace.length; i++) {
    const a = action[i];
    const frees = a === Action.segment_unmap || (a === Action.segment_free && !gcOn);
    if (frees && !inRun && (held < 0.9 * deviceMemory || beforePrivate(i))) out.push(i);
    inRun = a === Action.segment_free || a === Action.segment_unmap;
    if (a === Action.segment_alloc || a === Action.segment_map) held += size[i];
    else if (inRun) held -= size[i];
  }
  return Int32Array.from(out);
}
