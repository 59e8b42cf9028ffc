/**
 * A what-if answered on the snapshot people have: first the recording
 * reproduced (as-recorded.ts), then each allocator replayed under the cap
 * the user gave or, where none is given, over the interval of caps the
 * recording allows, and from both ends of what a late start leaves unknown.
 *
 * Note [Answers over an interval]: with no cap given and a recording that
 * shows one (an oom), the true cap lies in [low, high] (Note [The recorded
 * cap]). A larger cap only lets more through, so an allocator that fits at
 * `low` fits under every cap in the interval, one that runs out at `high`
 * runs out under every one, and otherwise the least cap at which it fits is
 * found by halving, to the page: "fits if the cap is at least X". Each
 * replay places empty_cache() for its own cap (planUnder).
 *
 * Note [Answers from a late start]: a trace that starts mid-run (a ring
 * buffer that wrapped, history switched on late) does not say what other
 * settings would have made of the unrecorded past. The answer is exact
 * only for PyTorch's model under the recorded settings, whose start the
 * snapshot gives. For any other, two starts are replayed: the recorded
 * allocator's own state at the first event (what these settings inherit if
 * the past left them the same segments), and a compacted one (only the
 * live blocks, packed as the allocator places them). They are estimates,
 * not bounds: on the H200's wrapped ring of gpt_train, expandable segments
 * with max_split_size_mb:128 came out at 6.20 and 6.22 GiB where PyTorch
 * reserved 6.92 GiB over the whole run, the past's own fragmentation being
 * what the window cannot see. The one bound that holds is from below: no
 * allocator holds the window's live blocks on 2 MiB pages in less than
 * memoryBound's figure (bound.ts). So such an answer is never one figure.
 */
import type { PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import type { AllocatorFactory } from './allocators.js';
import { type AsRecorded, planUnder, reproduceRecording, retriesKey, sameRunUnder } from './as-recorded.js';
import { memoryBound } from './bound.js';
import type { StartProcess } from './process-start.js';
import type { AllocatorRun, ReplayOptions, ReplayResult, ReplayStep } from './replay.js';
import { replay, replaySettings } from './replay.js';
import type { TracePlan } from './trace-plan.js';

const PAGE = 2 * 1024 * 1024;

/** The cap each device replays under, and where it comes from. */
export interface CapInForce {
  /** given: the user's; inferred: the recording's interval; none: no cap given and none shown. */
  readonly kind: 'given' | 'inferred' | 'none';
  readonly devices: readonly {
    readonly device: number;
    readonly lowBytes: number;
    readonly highBytes: number;
  }[];
}

export type Verdict = 'fits' | 'runs-out' | 'fits-above';

export interface AllocatorAnswer {
  readonly name: string;
  /**
   * fits: under the cap (every cap of the interval); runs-out: under it
   * (every one); fits-above: only from thresholdBytes up (Note [Answers over an interval]).
   */
  readonly verdict: Verdict;
  /** For fits-above: the least cap, per device, under which it fits. */
  readonly thresholdBytes: readonly { readonly device: number; readonly bytes: number }[] | null;
  /** Peak reserved bytes (sums over devices) from the start that gives the least and the most. */
  readonly peakLowBytes: number;
  readonly peakHighBytes: number;
  /** Whether the peak is one figure that holds (false: a late start under other settings; Note [Answers from a late start]). */
  readonly exact: boolean;
  /** Where not exact: what no allocator can reserve less than (the window's live blocks on 2 MiB pages). */
  readonly atLeastBytes: number | null;
}

export interface WhatIfAnswer {
  readonly asRecorded: AsRecorded;
  readonly cap: CapInForce;
  /** The allocators' runs at the top of the cap (or under the given one), from the recorded start. */
  readonly result: ReplayResult;
  readonly answers: readonly AllocatorAnswer[];
  /** Replays made, the recording's own included. */
  readonly replays: number;
  /** The caps `result` ran under, by device (undefined: none), to replay it again the same way. */
  readonly limits: readonly (number | undefined)[];
  /**
   * Where each allocator's run in `result` came from: its own replay (`run`: its number among that call's
   * allocators, as onStep's steps name it) or the recording's (`replay`: the number `watchRecording` was
   * told; Note [The recording's run, taken again]).
   */
  readonly sources: readonly RunSource[];
}

export type RunSource =
  | { readonly kind: 'replayed'; readonly run: number }
  | { readonly kind: 'recording'; readonly replay: number };

export type WhatIfOptions = Omit<ReplayOptions, 'plan' | 'deviceMemoryLimits' | 'start' | 'settings'> & {
  /** The snapshot's plan (planReplay). */
  readonly plan: TracePlan;
  /**
   * Starts the processes that reproduce the recording (default: startProcess);
   * a what-if on the real GPUs reproduces the recording on the simulator.
   */
  readonly startReproduction?: StartProcess;
  /** Told of the steps of each replay of the recording (reproduceRecording's watch). */
  readonly watchRecording?: (replay: number) => ((step: ReplayStep) => void) | undefined;
};

/** Answer a what-if on `snapshot`, the recording reproduced first. */
export function answerWhatIf(snapshot: MemorySnapshot, options: WhatIfOptions): WhatIfAnswer {
  const asRecorded = reproduceRecording(snapshot, {
    plan: options.plan,
    startProcess: options.startReproduction ?? options.startProcess,
    costs: options.costs,
    watch: options.watchRecording,
  });
  let replays = asRecorded.replays;
  const caps = asRecorded.devices.map((d) => d.cap);
  const cap = capInForce(asRecorded, options.memoryLimit);
  const limitsAt = (pick: (c: { lowBytes: number; highBytes: number }) => number) => {
    const out: (number | undefined)[] = [];
    for (const d of cap.devices) out[d.device] = Number.isFinite(pick(d)) ? pick(d) : undefined;
    return out;
  };
  const run = (
    allocators: readonly AllocatorFactory[],
    limits: readonly (number | undefined)[],
    start: 'recorded' | 'compacted',
    extra: Partial<ReplayOptions> = {},
  ): ReplayResult => {
    replays++;
    const {
      memoryLimit: _given,
      plan: base,
      startReproduction: _reproduction,
      watchRecording: _w,
      ...rest
    } = options;
    return replay(snapshot, {
      ...rest,
      ...extra,
      allocators,
      plan: limits === high ? highPlan : planUnder(snapshot, base, caps, limits),
      deviceMemoryLimits: limits,
      start,
    });
  };

  // The runs beyond the first are watched by no one: no events kept, no steps or progress told.
  const unwatched: Partial<ReplayOptions> = { keepEvents: false, onStep: undefined, onProgress: undefined };
  const high = limitsAt((d) => d.highBytes);
  // The plan under the top of the cap, placed once: the models' runs from both starts and the check below share it.
  const highPlan = planUnder(snapshot, options.plan, caps, high);
  /**
   * Each allocator's run at the bottom of the interval: its run at the top where the cap never touched
   * it (Note [A run the cap never touched]: the same plan, and every check fit both ends), else replayed.
   */
  const lowEnd = (low: readonly (number | undefined)[]): readonly AllocatorRun[] => {
    const samePlan = retriesKey(caps, low) === retriesKey(caps, high);
    const collects = result.settings.garbageCollectionThreshold > 0;
    const kept = result.allocators.map((a) => samePlan && sameRunUnder(a, high, low, collects));
    const others = options.allocators.filter((_, i) => !kept[i]);
    const replayed = others.length === 0 ? [] : run(others, low, 'recorded', unwatched).allocators;
    let k = 0;
    return result.allocators.map((a, i) => (kept[i] ? a : replayed[k++]));
  };
  // Note [The recording's run, taken again]: a model that would replay exactly the recording's run takes it.
  const settings = replaySettings(snapshot, options.allocConf);
  const taken = options.allocators.map((f) =>
    takesRecordedRun(f, settings, asRecorded, high, highPlan, options),
  );
  const others = options.allocators.filter((_, i) => !taken[i]);
  const replayed: ReplayResult =
    others.length > 0
      ? run(others, high, 'recorded')
      : {
          plan: highPlan,
          allocators: [],
          settings,
          allocConf: options.allocConf,
          memoryLimit: options.memoryLimit,
        };
  const sources: RunSource[] = [];
  let next = 0;
  const runs = options.allocators.map((f, i): AllocatorRun => {
    if (!taken[i]) {
      sources.push({ kind: 'replayed', run: next });
      return replayed.allocators[next++];
    }
    sources.push({ kind: 'recording', replay: asRecorded.final.replay });
    return { ...asRecorded.final.run, name: f.name };
  });
  const result = { ...replayed, allocators: runs, memoryLimit: options.memoryLimit };
  const late = options.plan.startedMidRun;
  const compacted = late ? run(options.allocators, high, 'compacted', unwatched) : undefined;
  const interval = cap.kind === 'inferred';
  const fitsAtHigh = result.allocators.map(fits);
  const atLow = interval ? lowEnd(limitsAt((d) => d.lowBytes)) : undefined;

  let bound: number | undefined;
  const answers = options.allocators.map((factory, i): AllocatorAnswer => {
    const a = result.allocators[i];
    const peaks = [a.peakReservedBytes, compacted?.allocators[i].peakReservedBytes ?? a.peakReservedBytes];
    const exact = !late || recordedStartIsExact(factory, asRecorded, options.allocConf, snapshot);
    const base = {
      name: a.name,
      peakLowBytes: exact ? a.peakReservedBytes : Math.min(...peaks),
      peakHighBytes: exact ? a.peakReservedBytes : Math.max(...peaks),
      exact,
      atLeastBytes: exact ? null : (bound ??= memoryBound(result.plan).peakBytes),
    };
    if (!fitsAtHigh[i]) return { ...base, verdict: 'runs-out', thresholdBytes: null };
    if (atLow === undefined || fits(atLow[i])) return { ...base, verdict: 'fits', thresholdBytes: null };
    // Between the ends: the least cap it fits under, to the page, all devices moved together.
    let bad = 0;
    let good = 1;
    const at = (t: number) =>
      limitsAt((d) => d.lowBytes + Math.floor(((d.highBytes - d.lowBytes) * t) / PAGE) * PAGE);
    const bounded = cap.devices.filter((d) => Number.isFinite(d.highBytes));
    const pages = Math.max(...bounded.map((d) => (d.highBytes - d.lowBytes) / PAGE));
    while ((good - bad) * pages > 1) {
      const t = (bad + good) / 2;
      if (fits(run([factory], at(t), 'recorded', unwatched).allocators[0])) good = t;
      else bad = t;
    }
    const limits = at(good);
    const thresholdBytes = bounded.map((d) => ({ device: d.device, bytes: limits[d.device] ?? d.highBytes }));
    return { ...base, verdict: 'fits-above', thresholdBytes };
  });
  return { asRecorded, cap, result, answers, replays, limits: high, sources };
}

/**
 * Note [The recording's run, taken again]: every answer starts by replaying
 * the recording (as-recorded.ts), and the models then replay it again under
 * the cap in force. Where a model is PyTorch's allocator in the recorded
 * mode with the recorded settings, under the same caps (or caps that never
 * touched that run: Note [A run the cap never touched]), with the same
 * empty_cache() placement, on the same kind of process and with nothing
 * measured on a device, its replay would make every call the recording's
 * did: it takes that run (and a caller watching the recording's replays,
 * its steps) instead of replaying it again. The report then costs one
 * replay less on most snapshots, whose settings are the defaults.
 */
function takesRecordedRun(
  factory: AllocatorFactory,
  settings: PytorchAllocatorSettings,
  asRecorded: AsRecorded,
  limits: readonly (number | undefined)[],
  plan: TracePlan,
  options: WhatIfOptions,
): boolean {
  const final = asRecorded.final;
  const sameModel =
    factory.name === 'pytorch' ||
    (factory.name === 'pytorch-native' && !settings.expandableSegments) ||
    (factory.name === 'pytorch-expandable' && settings.expandableSegments);
  if (!sameModel || !final.oneMode || final.run.error !== undefined) return false;
  // A caller watching the recording's replays needs the steps of the one taken.
  if (options.watchRecording !== undefined && !final.watched) return false;
  if (options.startReproduction !== undefined || options.backend === 'cuda' || options.measureDeviceMemory)
    return false;
  if (JSON.stringify(settings) !== JSON.stringify(asRecorded.settings)) return false;
  const collects = settings.garbageCollectionThreshold > 0;
  const sameCaps =
    final.limits.every((l, d) => l === limits[d]) && limits.every((l, d) => l === final.limits[d]);
  if (!sameCaps && !sameRunUnder(final.run, final.limits, limits, collects)) return false;
  return samePlacement(plan, final.plan);
}

/** Whether two plans of one snapshot place empty_cache() alike (all they can differ in: withRetries). */
function samePlacement(a: TracePlan, b: TracePlan): boolean {
  return (
    a.devices.length === b.devices.length &&
    a.devices.every((d, i) => {
      const x = d.emptyCacheBefore;
      const y = b.devices[i].emptyCacheBefore;
      return x.length === y.length && x.every((v, k) => v === y[k]);
    })
  );
}

/** Whether a run served every request (the recorded oom's included). */
function fits(a: AllocatorRun): boolean {
  return a.error === undefined && a.ooms === 0;
}

/** The cap a what-if replays under (Note [Answers over an interval]). */
export function capInForce(asRecorded: AsRecorded, given: number | undefined): CapInForce {
  if (given !== undefined)
    return {
      kind: 'given',
      devices: asRecorded.devices.map((d) => ({ device: d.device, lowBytes: given, highBytes: given })),
    };
  const bounded = asRecorded.devices.filter((d) => Number.isFinite(d.cap.highBytes));
  if (bounded.length === 0)
    return {
      kind: 'none',
      devices: asRecorded.devices.map((d) => ({
        device: d.device,
        lowBytes: Number.POSITIVE_INFINITY,
        highBytes: Number.POSITIVE_INFINITY,
      })),
    };
  return {
    kind: 'inferred',
    devices: asRecorded.devices.map((d) => ({
      device: d.device,
      lowBytes: Number.isFinite(d.cap.highBytes) ? d.cap.lowBytes : Number.POSITIVE_INFINITY,
      highBytes: d.cap.highBytes,
    })),
  };
}

/**
 * The least cap the recordings' events allow on any device that shows one
 * (undefined: none shows one). Advice must hold under every cap a
 * recording allows, so it is sought under this one.
 */
export function leastRecordedCap(recorded: readonly AsRecorded[]): number | undefined {
  const lows = recorded.flatMap((ar) =>
    ar.devices.filter((d) => Number.isFinite(d.cap.highBytes)).map((d) => d.cap.lowBytes),
  );
  return lows.length === 0 ? undefined : Math.min(...lows);
}

/**
 * Whether the recorded start is exactly this allocator's start: PyTorch's
 * model (or its native or expandable one, when that is what the recording
 * ran) under the recorded settings.
 */
function recordedStartIsExact(
  factory: AllocatorFactory,
  asRecorded: AsRecorded,
  allocConf: string | undefined,
  snapshot: MemorySnapshot,
): boolean {
  // JSON.stringify writes the settings' Infinity (no max_split_size) as null on both sides alike.
  if (
    allocConf !== undefined &&
    JSON.stringify(replaySettings(snapshot, allocConf)) !== JSON.stringify(asRecorded.settings)
  )
    return false;
  const expandable = asRecorded.settings.expandableSegments;
  return (
    factory.name === 'pytorch' ||
    (factory.name === 'pytorch-native' && !expandable) ||
    (factory.name === 'pytorch-expandable' && expandable)
  );
}
