/**
 * Replay: a recorded trace's allocations and frees, streamed through
 * allocators of our own, each on a fresh process (a simulated machine with
 * as many devices as the trace has, by default, or the real GPUs).
 *
 * What each event does (research note T2):
 *   alloc           -> malloc(size, stream) on the event's device
 *   free_completed  -> free (the block is reusable only now)
 *   free_requested  -> nothing (the recorded allocator still holds the block)
 *   segment_*       -> nothing: the recorded allocator's own actions, kept for
 *                      comparison (fidelity.ts)
 *   snapshot, oom   -> nothing; oom is counted in the trace's numbers
 * Blocks live before the trace began are allocated first (trace-plan.ts,
 * Note [Started mid-run]), and empty_cache() is called where the recorded
 * allocator's segment frees show the program called it (Note [Inferred
 * empty_cache]).
 *
 * An allocator that runs out of memory (AllocatorOutOfMemoryError) is
 * treated as PyTorch's caller would see it: the OOM is counted, that block
 * does not exist (its later free is skipped), and the run goes on, unless
 * `stopAtOom` asks to end it there. Any other error ends that allocator's
 * run; the result carries the message and the other allocators still run.
 */
import { AllocatorOutOfMemoryError, type CachingAllocator, type SegmentEvent } from '../alloc/allocator.js';
import {
  createProcess,
  DEVICE_PRESETS,
  type DevicePreset,
  type DeviceSpec,
  type ProcessOptions,
} from '../compose/create-runtime.js';
import type { Runtime } from '../core/runtime.js';
import type { AllocatorFactory } from './allocators.js';
import { type CostTable, CostTableError, type DriverCall } from './cost-table.js';
import { DriverMeter, type DriverUse } from './driver-meter.js';
import { placeAtRecordedAddresses } from './placement.js';
import { Action, type MemorySnapshot } from './snapshot.js';
import { type DevicePlan, planReplay, type TracePlan } from './trace-plan.js';

export interface ReplayOptions {
  readonly allocators: readonly AllocatorFactory[];
  /** 'sim' (default): a fresh simulated machine per allocator. 'cuda': the real GPUs. */
  readonly backend?: 'sim' | 'cuda';
  /** With backend 'cuda': the driver to use or the libcuda paths to try (a stand-in driver rehearses a GPU run). */
  readonly cuda?: ProcessOptions['cuda'];
  /** The simulated device model (default: H200). */
  readonly device?: DevicePreset | DeviceSpec;
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
  /** A plan already made for this snapshot (planReplay), to skip making it again. */
  readonly plan?: TracePlan;
  /** When making the plan here: infer empty_cache() calls (default true; Note [Inferred empty_cache]). */
  readonly inferEmptyCache?: boolean;
  /**
   * On the simulator, serve one-step allocations at the recorded segment
   * addresses (default true; placement.ts, Note [Recorded placement]).
   */
  readonly recordedAddresses?: boolean;
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
}

const PROGRESS_EVERY = 1 << 16;

/** Replay `snapshot` through each allocator in turn. */
export function replay(snapshot: MemorySnapshot, options: ReplayOptions): ReplayResult {
  const plan =
    options.plan ??
    planReplay(snapshot, {
      inferEmptyCache: options.inferEmptyCache,
      deviceMemory: deviceMemory(options.device ?? 'H200'),
    });
  const total = plan.events * options.allocators.length;
  const progress = { done: 0, total, report: options.onProgress };
  const allocators = options.allocators.map((f) => runOne(snapshot, plan, f, options, progress));
  options.onProgress?.(total, total);
  return { plan, allocators };
}

function deviceMemory(d: DevicePreset | DeviceSpec): number {
  return typeof d === 'string' ? DEVICE_PRESETS[d].totalMemory : d.totalMemory;
}

interface Progress {
  done: number;
  readonly total: number;
  readonly report: ((done: number, total: number) => void) | undefined;
}

function runOne(
  snapshot: MemorySnapshot,
  plan: TracePlan,
  factory: AllocatorFactory,
  options: ReplayOptions,
  progress: Progress,
): AllocatorRun {
  const backend = options.backend ?? 'sim';
  const warnings: string[] = [];
  const report = (message: string, error?: unknown) =>
    warnings.push(error instanceof Error ? `${message}: ${error.message}` : message);
  const deviceCount = Math.max(1, plan.devices.length);
  const start = performance.now();
  const proc =
    backend === 'cuda'
      ? createProcess({ backend: 'cuda', cuda: options.cuda, report })
      : createProcess({ devices: Array(deviceCount).fill(options.device ?? 'H200'), report });
  const runtime = proc.runtime;
  // Placement first, so that the meter, wrapping it, counts a placed malloc as one cuMemAlloc.
  const placement =
    backend === 'sim' && (options.recordedAddresses ?? true)
      ? placeAtRecordedAddresses(runtime, plan)
      : undefined;
  const meter = new DriverMeter(runtime, options.costs, backend === 'cuda');
  const made: CachingAllocator[] = [];
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
      const run = runDevice(runtime, d, factory, snapshot, options, progress, made);
      devices.push(run.result);
      if (run.error !== undefined) {
        error = run.error;
        break;
      }
      if (run.stoppedAtOom) {
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
  meter.detach();
  const placedSegments = placement?.placed ?? 0;
  placement?.restore();
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
    stoppedAtOom,
    error,
    warnings,
    placedSegments,
    devices,
  };
}

/** A replay that cannot go on for a reason of its own (not the allocator's). */
export class ReplayError extends Error {
  override readonly name = 'ReplayError';
}

function message(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

function runDevice(
  runtime: Runtime,
  d: DevicePlan,
  factory: AllocatorFactory,
  snapshot: MemorySnapshot,
  options: ReplayOptions,
  progress: Progress,
  made: CachingAllocator[],
): { result: DeviceRun; error: string | undefined; stoppedAtOom: boolean } {
  const keep = options.keepEvents ?? true;
  const segmentEvents: ReplaySegmentEvent[] = [];
  let cursor = -1;
  // What the allocator does after the last event (its teardown) is not part of the run.
  let recording = keep;
  const allocator = factory.create(
    {
      runtime,
      device: d.device,
      onSegmentEvent: keep
        ? (e) => {
            if (recording)
              segmentEvents.push({
                action: e.action,
                address: e.address,
                size: e.size,
                stream: e.stream,
                eventIndex: cursor,
              });
          }
        : undefined,
    },
    snapshot.allocatorSettings,
  );
  made.push(allocator);
  const ours = new Float64Array(keep ? d.blockCount : 0).fill(Number.NaN);
  const live = new Float64Array(d.blockCount);
  const state = new Uint8Array(d.blockCount);
  let ooms = 0;
  let firstOomEvent = -1;
  let error: string | undefined;
  let stoppedAtOom = false;
  const stopAtOom = options.stopAtOom ?? false;
  // Note [Device memory at the peak]: the model's reserved bytes are its own
  // books; the driver's used memory is the ground truth. Sampling memoryInfo
  // at each new reserved peak (rare: only when the allocator takes memory)
  // shows whether the two agree, up to the driver's own overhead (page-table
  // and bookkeeping pages it may count as used).
  const measure = options.measureDeviceMemory ?? options.backend === 'cuda';
  const usedBefore = measure ? usedBytes(runtime, d.device) : 0;
  let lastPeak = 0;
  let deviceUsedAtPeak: number | null = measure ? 0 : null;
  const samplePeak = (): void => {
    const reserved = allocator.stats.reservedBytes;
    if (reserved <= lastPeak) return;
    lastPeak = reserved;
    deviceUsedAtPeak = usedBytes(runtime, d.device) - usedBefore;
  };

  /** malloc for block `id`; false when the run must end (stopAtOom). */
  const allocate = (id: number, size: number, stream: number): boolean => {
    try {
      const a = allocator.malloc(size, stream);
      if (measure) samplePeak();
      live[id] = a;
      if (keep) ours[id] = a;
      state[id] = BlockState.live;
      return true;
    } catch (e) {
      if (!(e instanceof AllocatorOutOfMemoryError)) throw e;
      state[id] = BlockState.failed;
      ooms++;
      if (firstOomEvent < 0 && cursor >= 0) firstOomEvent = cursor;
      return !stopAtOom;
    }
  };

  try {
    for (let k = 0; k < d.initialBlocks.length && !stoppedAtOom; k++) {
      const id = d.initialBlocks[k];
      stoppedAtOom = !allocate(id, d.blockSize[id], d.blockStream[id]);
    }
    const { action, size, stream } = d.trace;
    const blockOf = d.blockOf;
    const n = d.trace.length;
    const emptyCache = d.emptyCacheBefore;
    let nextEmpty = emptyCache.length > 0 ? emptyCache[0] : -1;
    let e = 0;
    for (let i = 0; i < n && !stoppedAtOom; i++) {
      cursor = i;
      if (i === nextEmpty) {
        allocator.emptyCache();
        nextEmpty = ++e < emptyCache.length ? emptyCache[e] : -1;
      }
      const a = action[i];
      if (a === Action.alloc) {
        stoppedAtOom = !allocate(blockOf[i], size[i], stream[i]);
      } else if (a === Action.free_completed) {
        const id = blockOf[i];
        if (id >= 0 && state[id] === BlockState.live) {
          allocator.free(live[id]);
          state[id] = BlockState.freed;
        }
      }
      if ((i & (PROGRESS_EVERY - 1)) === PROGRESS_EVERY - 1 && progress.report !== undefined) {
        progress.report(progress.done + i + 1, progress.total);
      }
    }
  } catch (e) {
    error = `${message(e)} (at event ${cursor} of device ${d.device})`;
  }
  recording = false;
  progress.done += d.trace.length;
  const stats = allocator.stats;
  const peakReservedBytes = stats.peakReservedBytes;
  const peakAllocatedBytes = stats.peakAllocatedBytes;
  return {
    result: {
      device: d.device,
      peakReservedBytes,
      peakAllocatedBytes,
      peakRequestedBytes: d.peakRequestedBytes,
      ratio: d.peakRequestedBytes > 0 ? peakReservedBytes / d.peakRequestedBytes : null,
      utilization: peakReservedBytes > 0 ? peakAllocatedBytes / peakReservedBytes : null,
      ooms,
      firstOomEvent,
      segmentEvents,
      blockAddress: ours,
      blockState: state,
      deviceUsedAtPeakBytes: deviceUsedAtPeak,
    },
    error,
    stoppedAtOom,
  };
}

function usedBytes(runtime: Runtime, device: number): number {
  const info = runtime.memoryInfo(device);
  return info.total - info.free;
}
