/**
 * Replay: a recorded trace's allocations and frees, streamed through
 * allocators of our own, each on a fresh process that the caller's
 * startProcess starts (process-start.ts: a simulated machine with as many
 * devices as the trace has, the real GPUs, a vendor's front end), along the
 * caller's plan (trace-plan.ts). Both come from the top, the command line
 * or the package's entry (src/entry/replay.ts); the engine makes neither.
 *
 * What each event does (docs/pytorch-allocators.md T2):
 *   alloc           -> malloc(size, stream, pool) on the event's device, in
 *                      the block's pool (private-pools.ts)
 *   free_completed  -> free (the block is reusable only now)
 *   free_requested  -> nothing (the recorded allocator still holds the block)
 *   segment_*       -> nothing: the recorded allocator's own actions, kept for
 *                      comparison (fidelity.ts)
 *   oom             -> malloc(size, stream) too: the request PyTorch failed
 *                      (Note [Recorded OOMs])
 *   snapshot        -> nothing
 * Blocks live before the trace began are allocated first (trace-plan.ts,
 * Note [Started mid-run]), and empty_cache() is called where the recorded
 * allocator's segment frees show the program called it (Note [Inferred
 * empty_cache]).
 *
 * What-if replay: `allocConf` replaces the snapshot's recorded allocator
 * settings with a PYTORCH_CUDA_ALLOC_CONF string, parsed as PyTorch parses
 * it, for every PyTorch model; `memoryLimit` caps each allocator's reserved
 * bytes on each device as set_per_process_memory_fraction would, and each
 * allocator meets the cap where its own rules do (retries, releases). The
 * first OOM of each run is reported with the state it met.
 *
 * Note [Recorded OOMs]: a trace that ended in torch.OutOfMemoryError holds
 * the failed request only as an `oom` action (its size is the rounded
 * request, which rounds to itself again). Replay asks each allocator for it,
 * so a run under other settings says whether it would have succeeded. The
 * program never had that block, so a block that was served is freed at
 * once: what the program would have done with it is not in the trace.
 *
 * Watching: `onStep` is told of every allocator call replay makes, with the
 * event it serves (the report's recorder draws from it); `onGrowth` only of
 * those after which a run's figures grew (advise's pruning watch); and the
 * runtime is watched only through core's observers (Note [Runtime observers]).
 *
 * An allocator that runs out of memory (AllocatorOutOfMemoryError) is
 * treated as PyTorch's caller would see it: the OOM is counted, that block
 * does not exist (its later free is skipped), and the run goes on, unless
 * `stopAtOom` asks to end it there. Any other error ends that allocator's
 * run; the result carries the message and the other allocators still run.
 */
import {
  AllocatorOutOfMemoryError,
  type CachingAllocator,
  type SegmentEvent,
} from '../../alloc/allocator.js';
import { parseAllocConf } from '../../alloc/pytorch/alloc-conf.js';
import type { PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import type { Runtime } from '../../core/runtime.js';
import { ReplayError } from '../errors.js';
import { Action, type MemorySnapshot } from '../read/snapshot.js';
import { settingsOfConf, settingsOfSnapshot } from '../read/vendor.js';
import type { AllocatorFactory } from './allocators.js';
import { type CostTable, CostTableError, type DriverCall } from './cost-table.js';
import { DriverMeter, type DriverUse } from './driver-meter.js';
import { RecordedPlacement } from './placement.js';
import type { StartProcess } from './process-start.js';
import type { DevicePlan, TracePlan } from './trace-plan.js';

export interface ReplayOptions {
  readonly allocators: readonly AllocatorFactory[];
  /** The snapshot's plan (planReplay), made once by the caller: the command, the package's entry. */
  readonly plan: TracePlan;
  /**
   * Starts each allocator run's process (process-start.ts), given from the
   * top: the command line's or the entry's (a simulated machine, the real
   * GPUs, a vendor's front end: Note [A runtime through a front end]).
   */
  readonly startProcess: StartProcess;
  /**
   * What startProcess starts: 'sim' (default), simulated machines; 'cuda',
   * the real GPUs (their driver time measured, their used memory read at
   * each peak, no recorded placement).
   */
  readonly backend?: 'sim' | 'cuda';
  /** Prices driver calls (driverTimeUs); without one driverTimeUs is null. */
  readonly costs?: CostTable;
  /** Keep each run's segment events and block addresses for fidelity.ts (default true). */
  readonly keepEvents?: boolean;
  /** End an allocator's run at its first OOM (default: count it and go on). */
  readonly stopAtOom?: boolean;
  /** Told every 65536 events (and at the end) how far the whole replay is. */
  readonly onProgress?: (done: number, total: number) => void;
  /**
   * Read the device's used memory (cuMemGetInfo through memoryInfo) each time
   * the allocator's reserved bytes reach a new peak, so the run reports what
   * the device itself held at that moment (Note [Device memory at the peak]).
   * Default: on with the real backend, off on the simulator.
   */
  readonly measureDeviceMemory?: boolean;
  /**
   * On the simulator, serve one-step allocations at the recorded segment
   * addresses (default true; placement.ts, Note [Recorded placement]).
   */
  readonly recordedAddresses?: boolean;
  /**
   * A PYTORCH_CUDA_ALLOC_CONF string that replaces the snapshot's recorded
   * settings for the PyTorch models (parsed as PyTorch 2.11 does; an
   * AllocConfError when PyTorch would refuse it).
   */
  readonly allocConf?: string;
  /** The PyTorch settings themselves, over allocConf (as-recorded.ts gives those the recording shows). */
  readonly settings?: PytorchAllocatorSettings;
  /** Bytes each allocator may reserve on each device (set_per_process_memory_fraction's cap); none by default. */
  readonly memoryLimit?: number;
  /**
   * A cap of each device's own, by device index, where devices had different
   * ones (cap.ts infers one per device); a device it leaves undefined takes
   * memoryLimit.
   */
  readonly deviceMemoryLimits?: readonly (number | undefined)[];
  /**
   * Where a trace that started mid-run begins (Note [Started mid-run]):
   * 'recorded' (default) gives an allocator that can restore it the recorded
   * allocator's state at the first event; 'compacted' allocates only the live
   * blocks, packed as the allocator places them. Under other settings than
   * the recorded ones the two bound what the unrecorded past could have left.
   */
  readonly start?: 'recorded' | 'compacted';
  /** Told of every allocator call replay makes, after it returns (the report's recorder). */
  readonly onStep?: (step: ReplayStep) => void;
  /**
   * Told after each request that failed, and each that raised its device's
   * peak reserved bytes (restoring the recorded start counts as one): a
   * run's OOMs and peak change only there, so this watches them at a small
   * share of onStep's calls, each of which makes a step (advise's Note
   * [Stopping a replay]). It may throw to end the run.
   */
  readonly onGrowth?: (growth: ReplayGrowth) => void;
}

/** A request after which a run's figures grew, as onGrowth is told of it. */
export interface ReplayGrowth {
  /** Index of the allocator in ReplayOptions.allocators. */
  readonly run: number;
  readonly device: number;
  /** The trace event served; -1 while rebuilding the start. */
  readonly event: number;
  /** The device's peak reserved bytes so far. */
  readonly peakReservedBytes: number;
  /** Whether the request ran out of memory (else the peak grew). */
  readonly failed: boolean;
}

/** One allocator call of a replay, as onStep is told of it. */
export interface ReplayStep {
  /** Index of the allocator in ReplayOptions.allocators. */
  readonly run: number;
  readonly device: number;
  /** The trace event served; -1 while allocating the blocks live before the trace. */
  readonly event: number;
  /** start: a block live before the trace; oom-request: a recorded oom's request (Note [Recorded OOMs]). */
  readonly kind: 'start' | 'alloc' | 'free' | 'empty-cache' | 'oom-request';
  /** The plan's block id (start, alloc, free); -1 otherwise. */
  readonly block: number;
  /** The block's address in this run (start, alloc, free); NaN when the malloc failed or there is none. */
  readonly address: number;
  /** Whether the call ran out of memory. */
  readonly failed: boolean;
  readonly allocator: CachingAllocator;
  readonly runtime: Runtime;
  /** Outermost driver calls of this run so far (Note [Outermost calls]). */
  readonly driverCalls: number;
}

/** The first request an allocator could not serve, and what it held then. */
export interface OomVerdict {
  readonly device: number;
  /** Index of the event in the device's trace (-1: while allocating the blocks live before the trace). */
  readonly event: number;
  /** Bytes asked for (the caller's request). */
  readonly bytes: number;
  /** The event's time_us (NaN when the trace has none). */
  readonly timeUs: number;
  /** Whether the request was the trace's own recorded oom (Note [Recorded OOMs]). */
  readonly recorded: boolean;
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  /** Reserved bytes no block held, in how many pieces, the largest (AllocatorOutOfMemoryError's figures). */
  readonly freeBytes: number;
  readonly freePieces: number;
  readonly largestFreeBytes: number;
}

/** A trace's recorded oom request, replayed (Note [Recorded OOMs]). */
export interface RecordedOomOutcome {
  readonly event: number;
  readonly bytes: number;
  /** Whether this allocator served it. */
  readonly served: boolean;
}

/** A segment event an allocator made, with the trace event it made it in (-1: while rebuilding the start state). */
export interface ReplaySegmentEvent extends SegmentEvent {
  readonly eventIndex: number;
}

/** State of a block in a run: see DeviceRun.blockState. */
export const BlockState = { never: 0, live: 1, freed: 2, failed: 3 } as const;

export interface DeviceRun {
  readonly device: number;
  readonly peakReservedBytes: number;
  readonly peakAllocatedBytes: number;
  /** The trace's peak requested bytes on this device. */
  readonly peakRequestedBytes: number;
  readonly ratio: number | null;
  readonly utilization: number | null;
  readonly ooms: number;
  /** Index of the first event whose malloc ran out of memory; -1 if none (or while rebuilding the start). */
  readonly firstOomEvent: number;
  /** The first request this allocator could not serve on this device, or null. */
  readonly firstOom: OomVerdict | null;
  /** The trace's own oom requests and whether this allocator served them. */
  readonly recordedOoms: readonly RecordedOomOutcome[];
  /** Empty unless keepEvents. */
  readonly segmentEvents: readonly ReplaySegmentEvent[];
  /** Our address of each block (plan's block ids); NaN for a block never allocated. Empty unless keepEvents. */
  readonly blockAddress: Float64Array;
  /** BlockState of each block at the end. */
  readonly blockState: Uint8Array;
  /**
   * Bytes the device itself held for this run when the allocator's reserved
   * bytes peaked (used memory then, less the used memory before the
   * allocator started); null unless measureDeviceMemory.
   */
  readonly deviceUsedAtPeakBytes: number | null;
  /** The allocator's peakCapDemandBytes (AllocatorStats), or null where it checks no cap. */
  readonly peakCapDemandBytes: number | null;
  /**
   * Whether the allocator took the recorded allocator's state at the first
   * event (CachingAllocator.restore; plan.devices[i].startState says how
   * exact it is); false where the live blocks were allocated instead.
   */
  readonly startRestored?: boolean;
}

export interface AllocatorRun {
  readonly name: string;
  /** Sums over devices (each device's own peak). */
  readonly peakReservedBytes: number;
  readonly peakAllocatedBytes: number;
  /** peakReservedBytes / the trace's peakRequestedBytes; null when nothing was requested. */
  readonly ratio: number | null;
  /** peak allocated / peak reserved (GMLake's utilization); null when nothing was reserved. */
  readonly utilization: number | null;
  readonly driverCalls: Record<DriverCall, number>;
  /** Estimated from the cost table; null without one. */
  readonly driverTimeUs: number | null;
  /** Whether measuredDriverTimeUs was taken (real GPU). */
  readonly driverTimeMeasured: boolean;
  readonly measuredDriverTimeUs: number | null;
  readonly replayMs: number;
  readonly ooms: number;
  /** The run's first OOM (the earliest device's, in the order devices ran), or null. */
  readonly firstOom: OomVerdict | null;
  /** True when stopAtOom ended the run. */
  readonly stoppedAtOom: boolean;
  /** Why the run ended early, if it did for any reason but stopAtOom. */
  readonly error: string | undefined;
  /** What the runtime reported while tearing down (leaks, failed steps). */
  readonly warnings: readonly string[];
  /** One-step allocations served at their recorded address (Note [Recorded placement]). */
  readonly placedSegments: number;
  readonly devices: readonly DeviceRun[];
}

export interface ReplayResult {
  readonly plan: TracePlan;
  readonly allocators: readonly AllocatorRun[];
  /** The settings the PyTorch models ran with: allocConf's when given, else the snapshot's recorded ones. */
  readonly settings: PytorchAllocatorSettings;
  readonly allocConf: string | undefined;
  readonly memoryLimit: number | undefined;
}

const PROGRESS_EVERY = 1 << 16;

/** Replay `snapshot` through each allocator in turn. */
export function replay(snapshot: MemorySnapshot, options: ReplayOptions): ReplayResult {
  const steps = replayInSlices(snapshot, options);
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
  }
}

/**
 * replay, a slice at a time: each step replays up to `slice` more trace
 * events and yields the event its device has reached (the next to serve),
 * and the generator returns replay's result (advise runs its replays side
 * by side, the most promising first: Note [Best first] in advise/pool.ts).
 * With no slice it never yields. An error thrown into it at a yield ends
 * that allocator's run there, as one thrown by a hook would.
 */
export function* replayInSlices(
  snapshot: MemorySnapshot,
  options: ReplayOptions,
  slice = Number.POSITIVE_INFINITY,
): Generator<number, ReplayResult, void> {
  const plan = options.plan;
  const settings = options.settings ?? replaySettings(snapshot, options.allocConf);
  const limit = options.memoryLimit;
  for (const l of [limit, ...(options.deviceMemoryLimits ?? [])])
    if (l !== undefined && !(Number.isSafeInteger(l) && l > 0))
      throw new ReplayError(`the memory limit must be a positive whole number of bytes, not ${l}`);
  const total = plan.events * options.allocators.length;
  const progress = { done: 0, total, report: options.onProgress };
  const allocators: AllocatorRun[] = [];
  for (let i = 0; i < options.allocators.length; i++)
    allocators.push(yield* runOne(plan, options.allocators[i], i, settings, options, progress, slice));
  options.onProgress?.(total, total);
  return { plan, allocators, settings, allocConf: options.allocConf, memoryLimit: limit };
}

/** The PyTorch settings of a replay: the given configuration string's, else the snapshot's recorded ones. */
export function replaySettings(
  snapshot: MemorySnapshot,
  allocConf: string | undefined,
): PytorchAllocatorSettings {
  return allocConf === undefined
    ? settingsOfSnapshot(snapshot)
    : settingsOfConf(snapshot, allocConf, (c) => parseAllocConf(c).settings);
}

interface Progress {
  done: number;
  readonly total: number;
  readonly report: ((done: number, total: number) => void) | undefined;
}

/** What every device's run of one allocator shares. */
interface RunContext {
  readonly runtime: Runtime;
  readonly factory: AllocatorFactory;
  readonly index: number;
  readonly settings: PytorchAllocatorSettings;
  readonly options: ReplayOptions;
  readonly progress: Progress;
  readonly meter: DriverMeter;
  readonly placement: RecordedPlacement | undefined;
  readonly made: CachingAllocator[];
}

function* runOne(
  plan: TracePlan,
  factory: AllocatorFactory,
  index: number,
  settings: PytorchAllocatorSettings,
  options: ReplayOptions,
  progress: Progress,
  slice: number,
): Generator<number, AllocatorRun, void> {
  const backend = options.backend ?? 'sim';
  const warnings: string[] = [];
  const report = (message: string, error?: unknown) =>
    warnings.push(error instanceof Error ? `${message}: ${error.message}` : message);
  const deviceCount = Math.max(1, plan.devices.length);
  const start = performance.now();
  const meter = new DriverMeter(options.costs, backend === 'cuda');
  const placement =
    backend === 'sim' && (options.recordedAddresses ?? true) ? new RecordedPlacement(plan) : undefined;
  const observers = placement === undefined ? [meter] : [meter, placement];
  const runtime = options.startProcess({ devices: deviceCount, report, observers });
  const made: CachingAllocator[] = [];
  const run: RunContext = { runtime, factory, index, settings, options, progress, meter, placement, made };
  const devices: DeviceRun[] = [];
  let error: string | undefined;
  let stoppedAtOom = false;
  try {
    for (const d of plan.devices) {
      if (d.trace.length === 0 && d.initialBlocks.length === 0) continue;
      if (!runtime.isDevice(d.device)) {
        throw new ReplayError(
          `the trace uses device ${d.device}, and this machine has ${runtime.devices.length} device(s)`,
        );
      }
      const outcome = yield* runDevice(run, d, slice);
      devices.push(outcome.result);
      if (outcome.error !== undefined) {
        error = outcome.error;
        break;
      }
      if (outcome.stoppedAtOom) {
        stoppedAtOom = true;
        break;
      }
    }
  } catch (e) {
    error = message(e);
  }
  const replayMs = performance.now() - start;
  let use: DriverUse;
  try {
    use = meter.use();
  } catch (e) {
    // A call the cost table lacks: the run's counts stand, its time cannot be estimated.
    if (!(e instanceof CostTableError)) throw e;
    error ??= e.message;
    use = { calls: meter.calls(), estimatedUs: null, measuredUs: null };
  }
  const placedSegments = placement?.placed ?? 0;
  for (const a of made) {
    try {
      a.dispose();
    } catch (e) {
      report(`${factory.name}: dispose threw (it must not)`, e);
    }
  }
  runtime.dispose();
  const sum = (f: (d: DeviceRun) => number) => devices.reduce((s, d) => s + f(d), 0);
  const peakReservedBytes = sum((d) => d.peakReservedBytes);
  const peakAllocatedBytes = sum((d) => d.peakAllocatedBytes);
  return {
    name: factory.name,
    peakReservedBytes,
    peakAllocatedBytes,
    ratio: plan.peakRequestedBytes > 0 ? peakReservedBytes / plan.peakRequestedBytes : null,
    utilization: peakReservedBytes > 0 ? peakAllocatedBytes / peakReservedBytes : null,
    driverCalls: use.calls,
    driverTimeUs: use.estimatedUs,
    driverTimeMeasured: use.measuredUs !== null,
    measuredDriverTimeUs: use.measuredUs,
    replayMs,
    ooms: sum((d) => d.ooms),
    firstOom: devices.find((d) => d.firstOom !== null)?.firstOom ?? null,
    stoppedAtOom,
    error,
    warnings,
    placedSegments,
    devices,
  };
}

// ReplayError lives in errors.ts; re-exported here, where it was.
export { ReplayError } from '../errors.js';

function message(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

function* runDevice(
  run: RunContext,
  d: DevicePlan,
  slice: number,
): Generator<number, { result: DeviceRun; error: string | undefined; stoppedAtOom: boolean }, void> {
  const replaying = new DeviceReplay(run, d);
  let error: string | undefined;
  try {
    replaying.restoreStart();
    replaying.allocateInitialBlocks();
    yield* replaying.replayEvents(slice);
  } catch (e) {
    error = `${message(e)} (at event ${replaying.cursor} of device ${d.device})`;
  }
  return { result: replaying.finish(), error, stoppedAtOom: replaying.stoppedAtOom };
}

/**
 * One allocator's replay of one device's plan, as steps: the recorded start
 * restored (restoreStart), the blocks live before the trace allocated
 * (allocateInitialBlocks), the events served (replayEvents, event by event),
 * and the run's figures (finish).
 */
class DeviceReplay {
  readonly allocator: CachingAllocator;
  /** The trace event being served; -1 while rebuilding the start. */
  cursor = -1;
  stoppedAtOom = false;
  /** What the allocator does after the last event (its teardown) is not part of the run. */
  #recording: boolean;
  readonly #keep: boolean;
  readonly #stopAtOom: boolean;
  readonly #segmentEvents: ReplaySegmentEvent[] = [];
  /** Our address of each block, kept for fidelity (keepEvents). */
  readonly #ours: Float64Array;
  /** The address each live block has in this run. */
  readonly #live: Float64Array;
  readonly #state: Uint8Array;
  readonly #recordedOoms: RecordedOomOutcome[] = [];
  #ooms = 0;
  #firstOom: OomVerdict | null = null;
  #startRestored = false;
  // Note [Device memory at the peak]: the model's reserved bytes are its own
  // books; the driver's used memory is the ground truth. Sampling memoryInfo
  // at each new reserved peak (rare: only when the allocator takes memory)
  // shows whether the two agree, up to the driver's own overhead (page-table
  // and bookkeeping pages it may count as used).
  readonly #measure: boolean;
  readonly #usedBefore: number;
  #lastPeak = 0;
  #deviceUsedAtPeak: number | null;
  readonly #onGrowth: ((growth: ReplayGrowth) => void) | undefined;
  /** The peak onGrowth was last told of. */
  #toldPeak = 0;
  readonly #trace: DevicePlan['trace'];

  constructor(
    readonly run: RunContext,
    readonly d: DevicePlan,
  ) {
    const { runtime, options } = run;
    this.#keep = options.keepEvents ?? true;
    this.#recording = this.#keep;
    this.#stopAtOom = options.stopAtOom ?? false;
    const events = this.#segmentEvents;
    this.allocator = run.factory.create(
      {
        runtime,
        device: d.device,
        onSegmentEvent: this.#keep
          ? (e) => {
              if (this.#recording)
                events.push({
                  action: e.action,
                  address: e.address,
                  size: e.size,
                  stream: e.stream,
                  eventIndex: this.cursor,
                });
            }
          : undefined,
        placement: run.placement?.forDevice(runtime, d.device),
        memoryLimit: options.deviceMemoryLimits?.[d.device] ?? options.memoryLimit,
      },
      run.settings,
    );
    run.made.push(this.allocator);
    this.#ours = new Float64Array(this.#keep ? d.blockCount : 0).fill(Number.NaN);
    this.#live = new Float64Array(d.blockCount);
    this.#state = new Uint8Array(d.blockCount);
    this.#measure = options.measureDeviceMemory ?? options.backend === 'cuda';
    this.#usedBefore = this.#measure ? usedBytes(runtime, d.device) : 0;
    this.#deviceUsedAtPeak = this.#measure ? 0 : null;
    this.#trace = d.trace;
    this.#onGrowth = options.onGrowth;
  }

  /** Tell onStep of one allocator call. */
  #step(kind: ReplayStep['kind'], block: number, address: number, failed: boolean): void {
    this.run.options.onStep?.({
      run: this.run.index,
      device: this.d.device,
      event: this.cursor,
      kind,
      block,
      address,
      failed,
      allocator: this.allocator,
      runtime: this.run.runtime,
      driverCalls: this.run.meter.total,
    });
  }

  #samplePeak(): void {
    const reserved = this.allocator.stats.reservedBytes;
    if (reserved <= this.#lastPeak) return;
    this.#lastPeak = reserved;
    this.#deviceUsedAtPeak = usedBytes(this.run.runtime, this.d.device) - this.#usedBefore;
  }

  /** Tell onGrowth, when the peak grew or `failed`. */
  #grew(failed: boolean): void {
    const peak = this.allocator.stats.peakReservedBytes;
    if (!failed && peak <= this.#toldPeak) return;
    this.#toldPeak = peak;
    this.#onGrowth!({
      run: this.run.index,
      device: this.d.device,
      event: this.cursor,
      peakReservedBytes: peak,
      failed,
    });
  }

  /** malloc(size, stream, pool); the address, or NaN when it ran out of memory (counted, the first one kept). */
  #request(size: number, stream: number, recorded: boolean, pool = 0): number {
    let a: number;
    try {
      a = this.allocator.malloc(size, stream, pool);
    } catch (e) {
      if (!(e instanceof AllocatorOutOfMemoryError)) throw e;
      this.#ooms++;
      this.#firstOom ??= oomVerdict(e, this.d, this.cursor, size, recorded);
      if (this.#onGrowth !== undefined) this.#grew(true);
      return Number.NaN;
    }
    if (this.#measure) this.#samplePeak();
    if (this.#onGrowth !== undefined) this.#grew(false);
    return a;
  }

  /** Block `id` is live at `address` in this run. */
  #placed(id: number, address: number): void {
    this.#live[id] = address;
    if (this.#keep) this.#ours[id] = address;
    this.#state[id] = BlockState.live;
  }

  /** malloc for block `id`; false when the run must end (stopAtOom). */
  #allocate(id: number, kind: 'start' | 'alloc'): boolean {
    const d = this.d;
    // The block's pool, default or private (private-pools.ts).
    const a = this.#request(d.blockSize[id], d.blockStream[id], false, d.privatePools.blockPool[id]);
    const failed = Number.isNaN(a);
    if (failed) this.#state[id] = BlockState.failed;
    else this.#placed(id, a);
    this.#step(kind, id, a, failed);
    return !(failed && this.#stopAtOom);
  }

  /**
   * The recorded allocator's state at the first event (start-state.ts), where
   * the allocator can take it; live blocks it does not hold (or all, for one
   * without restore) are allocated next.
   */
  restoreStart(): void {
    const start = this.d.startState;
    const allocator = this.allocator;
    const restored =
      start.segments.length > 0 && allocator.restore !== undefined && this.run.options.start !== 'compacted'
        ? allocator.restore(start)
        : undefined;
    if (restored === undefined) return;
    this.#startRestored = true;
    let j = 0;
    for (const seg of start.segments) {
      for (const b of seg.blocks) {
        if (b.blockId < 0) continue;
        const a = restored[j++];
        this.#placed(b.blockId, a);
        this.#step('start', b.blockId, a, false);
      }
    }
    if (this.#measure) this.#samplePeak();
    if (this.#onGrowth !== undefined) this.#grew(false);
  }

  /** The blocks live before the trace began that the restored start does not hold (Note [Started mid-run]). */
  allocateInitialBlocks(): void {
    const initial = this.d.initialBlocks;
    for (let k = 0; k < initial.length && !this.stoppedAtOom; k++) {
      if (this.#state[initial[k]] !== BlockState.live)
        this.stoppedAtOom = !this.#allocate(initial[k], 'start');
    }
  }

  /** Every event of the trace, yielding the next event to serve after each `slice` of them (replayInSlices). */
  *replayEvents(slice: number): Generator<number, void, void> {
    const n = this.d.trace.length;
    let i = 0;
    // The events themselves are served by a plain loop (#serve): a generator's own loop runs slower.
    for (;;) {
      i = this.#serve(i, Math.min(n, i + slice));
      if (i >= n || this.stoppedAtOom) return;
      yield i;
    }
  }

  /** Events [from, to) (the table at the top of this file); the index after the last served. */
  #serve(from: number, to: number): number {
    const d = this.d;
    const progress = this.run.progress;
    const emptyCache = d.emptyCacheBefore;
    const { action, size, stream } = this.#trace;
    const blockOf = d.blockOf;
    const state = this.#state;
    const live = this.#live;
    const allocator = this.allocator;
    // The first empty_cache() at or after `from`.
    let e = 0;
    while (e < emptyCache.length && emptyCache[e] < from) e++;
    let nextEmpty = e < emptyCache.length ? emptyCache[e] : -1;
    let i = from;
    for (; i < to && !this.stoppedAtOom; i++) {
      this.cursor = i;
      if (i === nextEmpty) {
        allocator.emptyCache();
        this.#step('empty-cache', -1, Number.NaN, false);
        nextEmpty = ++e < emptyCache.length ? emptyCache[e] : -1;
      }
      const a = action[i];
      if (a === Action.alloc) {
        this.stoppedAtOom = !this.#allocate(blockOf[i], 'alloc');
      } else if (a === Action.free_completed) {
        const id = blockOf[i];
        if (id >= 0 && state[id] === BlockState.live) {
          allocator.free(live[id]);
          state[id] = BlockState.freed;
          this.#step('free', id, live[id], false);
        }
      } else if (a === Action.oom) {
        const got = this.#request(size[i], stream[i], true);
        const served = !Number.isNaN(got);
        this.#recordedOoms.push({ event: i, bytes: size[i], served });
        this.#step('oom-request', -1, got, !served);
        if (served) allocator.free(got);
        else if (this.#stopAtOom) this.stoppedAtOom = true;
      }
      if ((i & (PROGRESS_EVERY - 1)) === PROGRESS_EVERY - 1 && progress.report !== undefined) {
        progress.report(progress.done + i + 1, progress.total);
      }
    }
    return i;
  }

  /** The run's figures; what the allocator does from here on is no part of it. */
  finish(): DeviceRun {
    const d = this.d;
    this.#recording = false;
    this.run.progress.done += d.trace.length;
    const { peakReservedBytes, peakAllocatedBytes } = this.allocator.stats;
    const verdict = this.#firstOom;
    return {
      device: d.device,
      peakReservedBytes,
      peakAllocatedBytes,
      peakRequestedBytes: d.peakRequestedBytes,
      ratio: d.peakRequestedBytes > 0 ? peakReservedBytes / d.peakRequestedBytes : null,
      utilization: peakReservedBytes > 0 ? peakAllocatedBytes / peakReservedBytes : null,
      ooms: this.#ooms,
      firstOomEvent: verdict === null ? -1 : verdict.event,
      firstOom: verdict,
      recordedOoms: this.#recordedOoms,
      segmentEvents: this.#segmentEvents,
      blockAddress: this.#ours,
      blockState: this.#state,
      deviceUsedAtPeakBytes: this.#deviceUsedAtPeak,
      peakCapDemandBytes: this.allocator.peakCapDemandBytes ?? null,
      startRestored: this.#startRestored,
    };
  }
}

/** The verdict of a failed request at trace event `event` of `d`. */
function oomVerdict(
  e: AllocatorOutOfMemoryError,
  d: DevicePlan,
  event: number,
  bytes: number,
  recorded: boolean,
): OomVerdict {
  return {
    device: d.device,
    event,
    bytes,
    timeUs: event >= 0 ? d.trace.timeUs[event] : Number.NaN,
    recorded,
    reservedBytes: e.reservedBytes,
    allocatedBytes: e.allocatedBytes,
    freeBytes: e.freeBytes,
    freePieces: e.freePieces,
    largestFreeBytes: e.largestFreeBytes,
  };
}

function usedBytes(runtime: Runtime, device: number): number {
  const info = runtime.memoryInfo(device);
  return info.total - info.free;
}
