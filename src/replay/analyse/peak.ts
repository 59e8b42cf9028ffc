/**
 * What holds memory at the peak, per device: the peak the as-recorded
 * reproduction reports (Note [The moment of the peak]), split into the
 * categories of its live blocks (Note [Memory categories]) and the
 * allocator's own slack by cause, then the stacks with the most bytes live.
 * Given another setting or a limit, the same snapshot is replayed under it
 * (answerWhatIf) and its peak read the same way, so the answer says where
 * the extra reserved memory goes (Note [Reserved bytes by stack]).
 */
import { PytorchCachingAllocator } from '../../alloc/pytorch/caching-allocator.js';
import { ALLOCATOR_REGISTRY, type AllocatorFactory } from '../engine/allocators.js';
import { type AsRecorded, planUnder, reproduceRecording } from '../engine/as-recorded.js';
import type { StartProcess } from '../engine/process-start.js';
import { type ReplayStep, replay } from '../engine/replay.js';
import type { TracePlan } from '../engine/trace-plan.js';
import { answerWhatIf, type Verdict, type WhatIfAnswer } from '../engine/what-if.js';
import { ReplayError } from '../errors.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import {
  type Annotation,
  CATEGORY_LABELS,
  MEMORY_CATEGORIES,
  type MemoryCategory,
  StackCategories,
  stackLines,
  stackSummary,
} from './categories.js';
import {
  blockStacks,
  blockTimes,
  type HeldState,
  liveBlocks,
  modelHeld,
  peakMoment,
  recordedHeld,
  type Slack,
  slackOf,
} from './held.js';

export type { Slack } from './held.js';

export interface AnalyseOptions {
  /** The snapshot's plan (planReplay), made once by the caller. */
  readonly plan: TracePlan;
  /** Starts each replay's process (process-start.ts): the caller's, such as a simulated H200. */
  readonly startProcess: StartProcess;
  /** The recording reproduced (reproduceRecording), when already done with this plan. */
  readonly asRecorded?: AsRecorded;
  /**
   * answerWhatIf already made with this plan, allocConf and memoryLimit: its run of PyTorch's model
   * ('pytorch') is used instead of replaying again (where it has none, the what-if is answered here).
   */
  readonly whatIf?: WhatIfAnswer;
  /** A PYTORCH_CUDA_ALLOC_CONF to replay the snapshot under (the what-if). */
  readonly allocConf?: string;
  /** A cap in bytes to replay the snapshot under (the what-if). */
  readonly memoryLimit?: number;
  /** How many stacks to list (default 10). */
  readonly topStacks?: number;
  /**
   * The snapshot's `external_annotations` markers (default: those the reader kept, `snapshot.annotations`):
   * they decide the category of a block whose stack says nothing (Note [Memory categories], rule 4).
   */
  readonly annotations?: readonly Annotation[];
}

export interface CategoryBytes {
  readonly category: MemoryCategory;
  readonly label: string;
  /** Requested bytes of the live blocks in it. */
  readonly bytes: number;
  readonly blocks: number;
}

export interface StackBytes {
  /** A one-line name for the stack (its innermost frames of the program's own code). */
  readonly summary: string;
  /** Its frames, innermost first, `name (file:line)`; empty when none was recorded. */
  readonly frames: readonly string[];
  readonly category: MemoryCategory;
  readonly bytes: number;
  readonly blocks: number;
}

export interface DevicePeak {
  readonly device: number;
  /** The as-recorded peak reserved bytes (AsRecordedDevice.recordedPeakBytes). */
  readonly reservedBytes: number;
  /** Whether the trace shows reserved memory at all (else reservedBytes is 0 and slack is null). */
  readonly reservedKnown: boolean;
  /** Whether the replay as recorded reproduced this device. */
  readonly reproduced: boolean;
  /** The event of the peak's fullest moment (-1: before the first event; Note [The moment of the peak]). */
  readonly event: number;
  /** Its time_us, or null. */
  readonly timeUs: number | null;
  /** Requested bytes live then. */
  readonly allocatedBytes: number;
  readonly liveBlocks: number;
  readonly segments: number;
  /** Every category, in MEMORY_CATEGORIES' order (zeros included). */
  readonly categories: readonly CategoryBytes[];
  readonly slack: Slack | null;
  /** The stacks with the most bytes live, most first. */
  readonly topStacks: readonly StackBytes[];
}

/** Segments of one size class at a peak, in the recording and under the setting. */
export interface SegmentSizeRow {
  readonly label: string;
  readonly recordedSegments: number;
  readonly recordedBytes: number;
  readonly whatIfSegments: number;
  readonly whatIfBytes: number;
  readonly differenceBytes: number;
}

/** One stack's share of reserved memory (Note [Reserved bytes by stack]) in the recording and under the setting. */
export interface StackDifference {
  readonly summary: string;
  readonly frames: readonly string[];
  readonly category: MemoryCategory | 'cached';
  readonly recordedBytes: number;
  readonly whatIfBytes: number;
  readonly differenceBytes: number;
}

export interface WhatIfDevicePeak {
  readonly device: number;
  readonly recordedPeakBytes: number;
  readonly peakBytes: number;
  readonly differenceBytes: number;
  /** The event of the setting's own peak (its fullest moment). */
  readonly event: number;
  readonly recordedSlack: Slack;
  readonly slack: Slack;
  readonly bySegmentSize: readonly SegmentSizeRow[];
  /** The stacks whose share moved most, largest change first; the cached segments' row among them. */
  readonly byStack: readonly StackDifference[];
  /** The first request the setting could not serve on this device, or null. */
  readonly firstOom: { readonly event: number; readonly bytes: number } | null;
}

export interface WhatIfPeak {
  readonly allocConf: string | null;
  readonly memoryLimit: number | null;
  readonly verdict: Verdict;
  /** Why the model could not replay it under the setting (then `devices` is empty), or null. */
  readonly error: string | null;
  readonly devices: readonly WhatIfDevicePeak[];
}

export interface PeakBreakdown {
  /** Whether the replay as recorded reproduced the recording (every device). */
  readonly reproduced: boolean;
  readonly settingsSource: string;
  /** Whether any live block at any peak has a stack (else categories come from pools and annotations alone). */
  readonly stacksRecorded: boolean;
  readonly devices: readonly DevicePeak[];
  readonly whatIf: WhatIfPeak | null;
}

const PYTORCH = ALLOCATOR_REGISTRY.find((a) => a.name === 'pytorch') as AllocatorFactory;

/** PyTorch's model under a setting or a limit: the what-if every analysis sets beside the recording. */
export function pytorchUnder(
  snapshot: MemorySnapshot,
  plan: TracePlan,
  setting: {
    readonly allocConf?: string;
    readonly memoryLimit?: number;
    readonly startProcess: StartProcess;
  },
): WhatIfAnswer {
  return answerWhatIf(snapshot, {
    plan,
    allocators: [PYTORCH],
    allocConf: setting.allocConf,
    memoryLimit: setting.memoryLimit,
    startProcess: setting.startProcess,
    keepEvents: false,
  });
}

/** What holds memory at the peak of `snapshot`, and under a setting where one is given. */
export function analysePeak(snapshot: MemorySnapshot, options: AnalyseOptions): PeakBreakdown {
  return analyseWithStates(snapshot, options).breakdown;
}

/** The breakdown and the states it was read from (compare.ts reads both). */
export interface PeakAnalysis {
  readonly breakdown: PeakBreakdown;
  readonly recorded: readonly HeldState[];
  readonly whatIf: readonly HeldState[] | null;
  readonly categories: StackCategories;
  readonly stacks: readonly Int32Array[];
  readonly plan: TracePlan;
}

export function analyseWithStates(snapshot: MemorySnapshot, options: AnalyseOptions): PeakAnalysis {
  if (snapshot.traces.length === 0)
    throw new ReplayError(
      'the snapshot has no history (a segment list): its peak is not known, only the one moment it shows',
    );
  const plan = options.plan;
  const top = Math.max(0, options.topStacks ?? 10);
  const asked = options.allocConf !== undefined || options.memoryLimit !== undefined;
  // A what-if already answered with PyTorch's model among its allocators is used, not answered again.
  const given = options.whatIf?.result.allocators.findIndex((a) => a.name === PYTORCH.name) ?? -1;
  const answer = !asked
    ? undefined
    : options.whatIf !== undefined && given >= 0
      ? options.whatIf
      : pytorchUnder(snapshot, plan, options);
  const index = answer === options.whatIf ? given : 0;
  const asRecorded =
    answer?.asRecorded ??
    options.asRecorded ??
    reproduceRecording(snapshot, { plan, startProcess: options.startProcess });
  const categories = new StackCategories(snapshot, options.annotations ?? snapshot.annotations);
  const stacks = plan.devices.map((d) => blockStacks(snapshot, d));
  const times = plan.devices.map((d) => blockTimes(d));
  const recorded: HeldState[] = [];
  const devices: DevicePeak[] = [];
  for (const r of asRecorded.devices) {
    const d = plan.devices[r.device];
    const event = peakMoment(d, r.recordedPeakBytes);
    const state = recordedHeld(d, event, asRecorded.settings, stacks[r.device], times[r.device]);
    recorded.push(state);
    devices.push(devicePeak(snapshot, state, r.checked, r.reproduced, categories, top));
  }
  const stacksRecorded = recorded.some((s) => liveBlocks(s).some((b) => b.stack >= 0));
  let whatIf: WhatIfPeak | null = null;
  let whatIfStates: HeldState[] | null = null;
  if (answer !== undefined && answer.result.allocators[index].error !== undefined) {
    // The model could not replay it (a setting it refuses at run time): said, with no breakdown.
    whatIf = {
      allocConf: options.allocConf ?? null,
      memoryLimit: options.memoryLimit ?? null,
      verdict: answer.answers[index].verdict,
      error: answer.result.allocators[index].error ?? null,
      devices: [],
    };
  } else if (answer !== undefined) {
    const run = answer.result.allocators[index];
    whatIfStates = modelPeaks(snapshot, stacks, times, {
      allocConf: options.allocConf,
      limits: answer.limits,
      caps: asRecorded.devices.map((x) => x.cap),
      base: plan,
      startProcess: options.startProcess,
    });
    whatIf = {
      allocConf: options.allocConf ?? null,
      memoryLimit: options.memoryLimit ?? null,
      verdict: answer.answers[index].verdict,
      error: null,
      devices: recorded.map((rec) => {
        const mine = (whatIfStates as HeldState[]).find((s) => s.device === rec.device) as HeldState;
        const dr = run.devices.find((x) => x.device === rec.device);
        return whatIfDevice(snapshot, rec, mine, categories, top, dr?.firstOom ?? null);
      }),
    };
  }
  return {
    breakdown: {
      reproduced: asRecorded.reproduced,
      settingsSource: asRecorded.settingsSource,
      stacksRecorded,
      devices,
      whatIf,
    },
    recorded,
    whatIf: whatIfStates,
    categories,
    stacks,
    plan,
  };
}

function devicePeak(
  snapshot: MemorySnapshot,
  state: HeldState,
  reservedKnown: boolean,
  reproduced: boolean,
  categories: StackCategories,
  top: number,
): DevicePeak {
  const blocks = liveBlocks(state);
  const byCategory = new Map<MemoryCategory, { bytes: number; blocks: number }>(
    MEMORY_CATEGORIES.map((c) => [c, { bytes: 0, blocks: 0 }]),
  );
  // By stack and category: a stack's blocks in a private pool, or told apart by annotations, are rows of their own.
  const byStack = new Map<
    string,
    { stack: number; bytes: number; blocks: number; category: MemoryCategory }
  >();
  let allocated = 0;
  for (const b of blocks) {
    const category = categories.ofBlock(b, state.device);
    const c = byCategory.get(category) as { bytes: number; blocks: number };
    c.bytes += b.requestedBytes;
    c.blocks++;
    allocated += b.requestedBytes;
    const key = `${b.stack}|${category}`;
    const s = byStack.get(key) ?? { stack: b.stack, bytes: 0, blocks: 0, category };
    s.bytes += b.requestedBytes;
    s.blocks++;
    byStack.set(key, s);
  }
  const trace = snapshot.traces.find((t) => t.device === state.device);
  const time = state.event >= 0 && trace !== undefined ? trace.timeUs[state.event] : Number.NaN;
  return {
    device: state.device,
    reservedBytes: state.reservedBytes,
    reservedKnown,
    reproduced,
    event: state.event,
    timeUs: Number.isFinite(time) ? time : null,
    allocatedBytes: allocated,
    liveBlocks: blocks.length,
    segments: state.segments.length,
    categories: MEMORY_CATEGORIES.map((category) => ({
      category,
      label: CATEGORY_LABELS[category],
      ...(byCategory.get(category) as { bytes: number; blocks: number }),
    })),
    slack: reservedKnown ? slackOf(state) : null,
    topStacks: [...byStack.values()]
      .sort((x, y) => y.bytes - x.bytes || x.stack - y.stack || x.category.localeCompare(y.category))
      .slice(0, top)
      .map((s) => ({
        summary: stackSummary(snapshot, s.stack),
        frames: stackLines(snapshot, s.stack),
        category: s.category,
        bytes: s.bytes,
        blocks: s.blocks,
      })),
  };
}

interface ModelRun {
  readonly allocConf: string | undefined;
  readonly limits: readonly (number | undefined)[];
  readonly caps: Parameters<typeof planUnder>[2];
  readonly base: TracePlan;
  readonly startProcess: StartProcess;
}

/**
 * Each device's state at the setting's peak (Note [The moment of the
 * peak]). The first replay finds the step of the fullest peak moment per
 * device; the second, the same replay again (replay is deterministic),
 * takes the model's segments at that step. Taking them at every new peak
 * in one replay would cost a walk of every block per step of growth.
 */
function modelPeaks(
  snapshot: MemorySnapshot,
  stacks: readonly Int32Array[],
  times: readonly Float64Array[],
  m: ModelRun,
): HeldState[] {
  const plan = planUnder(snapshot, m.base, m.caps, m.limits);
  const once = (onStep: (s: ReplayStep) => void) =>
    replay(snapshot, {
      allocators: [PYTORCH],
      plan,
      allocConf: m.allocConf,
      deviceMemoryLimits: m.limits,
      start: 'recorded',
      startProcess: m.startProcess,
      keepEvents: false,
      onStep,
    });
  // First pass: per device, the step count, reserved and requested bytes at the fullest peak moment.
  const best = new Map<number, { step: number; reserved: number; requested: number }>();
  const steps = new Map<number, number>();
  once((s) => {
    const n = (steps.get(s.device) ?? 0) + 1;
    steps.set(s.device, n);
    const { reservedBytes, requestedBytes } = s.allocator.stats;
    const b = best.get(s.device);
    if (
      b === undefined ||
      reservedBytes > b.reserved ||
      (reservedBytes === b.reserved && requestedBytes > b.requested)
    )
      best.set(s.device, { step: n, reserved: reservedBytes, requested: requestedBytes });
  });
  // Second pass: the state at that step, blocks named by the plan's ids.
  const states = new Map<number, HeldState>();
  const blockAt = new Map<number, Map<number, number>>();
  steps.clear();
  once((s) => {
    const n = (steps.get(s.device) ?? 0) + 1;
    steps.set(s.device, n);
    let at = blockAt.get(s.device);
    if (at === undefined) blockAt.set(s.device, (at = new Map()));
    if ((s.kind === 'alloc' || s.kind === 'start') && !s.failed && s.block >= 0) at.set(s.address, s.block);
    else if (s.kind === 'free') at.delete(s.address);
    const b = best.get(s.device);
    if (b === undefined || b.step !== n || !(s.allocator instanceof PytorchCachingAllocator)) return;
    states.set(
      s.device,
      modelHeld(
        s.device,
        s.event,
        s.allocator.stats.reservedBytes,
        s.allocator.snapshot(),
        at,
        stacks[s.device],
        times[s.device],
      ),
    );
  });
  return plan.devices.map(
    (d) =>
      states.get(d.device) ?? {
        device: d.device,
        event: -1,
        reservedBytes: 0,
        segments: [],
        loose: [],
      },
  );
}

/** Size classes of segments: PyTorch's small-pool segment, its large sizes, and expandable runs. */
const SIZE_CLASSES: readonly { readonly label: string; readonly upTo: number }[] = [
  { label: 'up to 2 MiB (small pool)', upTo: 2 * 2 ** 20 },
  { label: '2-20 MiB', upTo: 20 * 2 ** 20 },
  { label: '20-64 MiB', upTo: 64 * 2 ** 20 },
  { label: '64-256 MiB', upTo: 256 * 2 ** 20 },
  { label: '256 MiB-1 GiB', upTo: 2 ** 30 },
  { label: 'over 1 GiB', upTo: Number.POSITIVE_INFINITY },
];

function sizeRows(recorded: HeldState, mine: HeldState): SegmentSizeRow[] {
  const count = (s: HeldState, expandable: boolean, low: number, high: number) => {
    let n = 0;
    let bytes = 0;
    for (const g of s.segments)
      if (g.expandable === expandable && g.sizeBytes > low && g.sizeBytes <= high) {
        n++;
        bytes += g.sizeBytes;
      }
    return { n, bytes };
  };
  const rows: SegmentSizeRow[] = [];
  for (const expandable of [false, true]) {
    let low = 0;
    for (const c of SIZE_CLASSES) {
      const a = count(recorded, expandable, low, c.upTo);
      const b = count(mine, expandable, low, c.upTo);
      low = c.upTo;
      if (a.n === 0 && b.n === 0) continue;
      rows.push({
        label: expandable ? `expandable, mapped runs ${c.label}` : `segments ${c.label}`,
        recordedSegments: a.n,
        recordedBytes: a.bytes,
        whatIfSegments: b.n,
        whatIfBytes: b.bytes,
        differenceBytes: b.bytes - a.bytes,
      });
    }
  }
  return rows;
}

/**
 * Note [Reserved bytes by stack]: to say which stacks a setting's extra
 * reserved memory goes to, every reserved byte at a peak is given to a
 * stack: a segment's bytes (its blocks' rounding and its free pieces
 * included) go to the stacks of the live blocks in it, in proportion to
 * their requested bytes, since those blocks are what keeps the segment
 * held; a segment with no live block goes to "cached segments". So each
 * side's shares add up to its peak, and a stack whose share grows under the
 * setting is one whose blocks sit in segments that hold more around them.
 * Loose blocks (outside any segment the trace shows) count their own bytes.
 */
export function reservedByStack(state: HeldState): Map<number, number> {
  const out = new Map<number, number>();
  const add = (k: number, v: number) => out.set(k, (out.get(k) ?? 0) + v);
  for (const s of state.segments) {
    if (s.blocks.length === 0) {
      add(CACHED, s.sizeBytes);
      continue;
    }
    let requested = 0;
    for (const b of s.blocks) requested += b.requestedBytes;
    for (const b of s.blocks) {
      const share =
        requested > 0 ? (s.sizeBytes * b.requestedBytes) / requested : s.sizeBytes / s.blocks.length;
      add(b.stack, share);
    }
  }
  for (const b of state.loose) add(b.stack, b.requestedBytes);
  return out;
}

/** The key of the cached segments' row (no stack is numbered below -1). */
export const CACHED = -3;

function whatIfDevice(
  snapshot: MemorySnapshot,
  recorded: HeldState,
  mine: HeldState,
  categories: StackCategories,
  top: number,
  firstOom: { event: number; bytes: number } | null,
): WhatIfDevicePeak {
  const a = reservedByStack(recorded);
  const b = reservedByStack(mine);
  const keys = new Set([...a.keys(), ...b.keys()]);
  const categoryOf = new Map<number, MemoryCategory>();
  for (const s of [recorded, mine])
    for (const x of liveBlocks(s)) categoryOf.set(x.stack, categories.ofBlock(x, s.device));
  const rows: StackDifference[] = [...keys].map((k) => {
    const ra = Math.round(a.get(k) ?? 0);
    const rb = Math.round(b.get(k) ?? 0);
    return {
      summary: k === CACHED ? 'cached segments (no live block)' : stackSummary(snapshot, k),
      frames: k === CACHED ? [] : stackLines(snapshot, k),
      category: k === CACHED ? 'cached' : (categoryOf.get(k) ?? 'unknown'),
      recordedBytes: ra,
      whatIfBytes: rb,
      differenceBytes: rb - ra,
    };
  });
  rows.sort(
    (x, y) => Math.abs(y.differenceBytes) - Math.abs(x.differenceBytes) || y.whatIfBytes - x.whatIfBytes,
  );
  return {
    device: recorded.device,
    recordedPeakBytes: recorded.reservedBytes,
    peakBytes: mine.reservedBytes,
    differenceBytes: mine.reservedBytes - recorded.reservedBytes,
    event: mine.event,
    recordedSlack: slackOf(recorded),
    slack: slackOf(mine),
    bySegmentSize: sizeRows(recorded, mine),
    byStack: rows.slice(0, top),
    firstOom: firstOom === null ? null : { event: firstOom.event, bytes: firstOom.bytes },
  };
}
