/**
 * What the HTML report embeds: plain numbers per allocator and device, in
 * the shape the page's script draws (two points per bucket on a common x
 * axis, Note [Min-max buckets]), and the address map at each peak as SVG.
 */
import type { PeakBreakdown } from '../replay/analyse/peak.js';
import type { CostTable } from '../replay/engine/cost-table.js';
import type { DevicePlan } from '../replay/engine/trace-plan.js';
import { Action, type MemorySnapshot } from '../replay/read/snapshot.js';
import { type ActiveTimeline, activeTimeline } from './active-timeline.js';
import { layoutMap, type MapSummary } from './address-map.js';
import {
  type AnswerAdvice,
  type ReportAnswer,
  reportAnswer,
  type StackOf,
  snapshotStacks,
} from './answer.js';
import type { RecordedReplay } from './collect.js';
import type { MinMaxSeries } from './downsample.js';

/** One colour per allocator, the same in every chart and map (colour-blind-safe order). */
export const ALLOCATOR_COLORS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000'];

export interface ReportAllocator {
  readonly name: string;
  readonly color: string;
  readonly peakReservedBytes: number;
  readonly peakAllocatedBytes: number;
  readonly ratio: number | null;
  readonly utilization: number | null;
  readonly driverCalls: number;
  readonly driverTimeUs: number | null;
  readonly ooms: number;
  readonly error: string | null;
}

export interface ReportSeries {
  /** Index into ReportData.allocators. */
  readonly allocator: number;
  /** Two values per bucket (first, second), parallel to ReportDevice.x. */
  readonly requested: number[];
  readonly reserved: number[];
  readonly allocated: number[];
  /** Cached bytes a request could not use, where one made the allocator reserve more (Note [Reserved but unusable]). */
  readonly unusable: number[];
  /** Driver calls made in each bucket (both points of a bucket hold it). */
  readonly calls: number[];
  readonly peakReservedBytes: number;
  /** x of the event at which reserved bytes first reached their peak. */
  readonly peakX: number;
}

export interface ReportMap {
  readonly allocator: number;
  readonly svg: string;
  readonly summary: MapSummary;
  /** The trace event the map was taken after (-1: before the first). */
  readonly event: number;
  readonly x: number;
}

export interface ReportDevice {
  readonly device: number;
  readonly events: number;
  readonly bucketWidth: number;
  /** 'seconds' from the first event's time_us, or 'events' when the trace has no times. */
  readonly xUnit: 'seconds' | 'events';
  /** Two x values per bucket: its first and its last event. */
  readonly x: number[];
  readonly peakRequestedBytes: number;
  readonly series: ReportSeries[];
  /**
   * What the recorded allocator reserved, from its own segment events (recorded.ts), two values per
   * bucket as the series have them; null when the trace has no segment events.
   */
  readonly recorded: number[] | null;
  /** The recording's live blocks over time, memory_viz's active memory timeline (active-timeline.ts). */
  readonly timeline: ActiveTimeline;
  /** The event each optimizer step starts at, and its x (Note [Steps from the optimizer's frames]). */
  readonly steps: { readonly event: number; readonly x: number }[];
  readonly maps: ReportMap[];
}

export interface ReportData {
  readonly title: string;
  readonly trace: {
    readonly events: number;
    readonly allocs: number;
    readonly peakRequestedBytes: number;
    readonly durationUs: number;
    readonly startedMidRun: boolean;
  };
  readonly costs: string | null;
  /** What the page opens with: the recorded peak beside each model, verdicts, advice, the OOM maps. */
  readonly answer: ReportAnswer;
  readonly allocators: ReportAllocator[];
  readonly devices: ReportDevice[];
  /** What holds memory at the peak (src/replay/analyse/peak.ts); null when not asked or the snapshot has no history. */
  readonly peak: PeakBreakdown | null;
}

/** What the report adds to a recorded replay beyond its numbers. */
export interface ReportExtras {
  readonly costs?: CostTable;
  /** The advised setting (vmmkit advise), shown in the answer. */
  readonly advice?: AnswerAdvice;
  /** The allocating stack of a block, for the blocks that pin free pieces at an OOM. */
  readonly stackOf?: StackOf;
  /** What holds memory at the peak, drawn by the page's peak panel. */
  readonly peak?: PeakBreakdown | null;
}

/** The report's numbers from a recorded replay. */
export function reportData(recorded: RecordedReplay, title: string, extras: ReportExtras = {}): ReportData {
  const { plan, runs } = recorded;
  const costs = extras.costs;
  const allocators = runs.map(
    ({ run }, i): ReportAllocator => ({
      name: run.name,
      color: ALLOCATOR_COLORS[i % ALLOCATOR_COLORS.length],
      peakReservedBytes: run.peakReservedBytes,
      peakAllocatedBytes: run.peakAllocatedBytes,
      ratio: run.ratio,
      utilization: run.utilization,
      driverCalls: Object.values(run.driverCalls).reduce((s, x) => s + x, 0),
      driverTimeUs: run.driverTimeUs,
      ooms: run.ooms,
      error: run.error ?? null,
    }),
  );
  const devices: ReportDevice[] = [];
  // Hovering over a block of a map shows the frames that allocated it.
  const stackOf = extras.stackOf ?? snapshotStacks(recorded);
  for (const d of plan.devices) {
    const recs = runs.flatMap(({ recordings }, i) =>
      recordings.filter((r) => r.device === d.device).map((r) => ({ i, r })),
    );
    if (recs.length === 0) continue;
    const width = recs[0].r.bucketWidth;
    const buckets = recs[0].r.reserved.first.length;
    const time = eventTime(d);
    const x: number[] = [];
    for (let k = 0; k < buckets; k++) {
      x.push(time.at(k * width), time.at(Math.min(d.trace.length - 1, (k + 1) * width - 1)));
    }
    const series = recs.map(({ i, r }): ReportSeries => {
      const cum = r.driverCalls.second;
      const calls: number[] = [];
      for (let k = 0; k < buckets; k++) {
        const c = cum[k] - (k > 0 ? cum[k - 1] : 0);
        calls.push(c, c);
      }
      return {
        allocator: i,
        requested: interleave(r.requested),
        reserved: interleave(r.reserved),
        allocated: interleave(r.allocated),
        unusable: interleave(r.unusable),
        calls,
        peakReservedBytes: r.reserved.max,
        peakX: time.at(Math.max(0, r.reserved.maxEvent)),
      };
    });
    const maps = recs.flatMap(({ i, r }): ReportMap[] => {
      if (r.layout === undefined) return [];
      const { svg, summary } = layoutMap(r.layout.description, {
        blocks: r.layout.blocks,
        stackOf: (block) => stackOf(d.device, block),
        color: allocators[i].color,
        title: `${allocators[i].name}, device ${d.device}, after event ${r.layout.event.toLocaleString('en-US')} (the peak of reserved bytes)`,
        attributes: { allocator: allocators[i].name, device: String(d.device) },
        idPrefix: `map-${d.device}-${i}`,
        width: 1200,
      });
      return [{ allocator: i, svg, summary, event: r.layout.event, x: time.at(Math.max(0, r.layout.event)) }];
    });
    devices.push({
      device: d.device,
      events: d.trace.length,
      bucketWidth: width,
      xUnit: time.unit,
      x,
      peakRequestedBytes: d.peakRequestedBytes,
      series,
      recorded: recordedCurve(d, width, buckets),
      timeline: activeTimeline(d, (block) => stackOf(d.device, block)),
      steps: optimizerSteps(recorded.snapshot, d).map((event) => ({ event, x: time.at(event) })),
      maps,
    });
  }
  return {
    title,
    trace: {
      events: plan.events,
      allocs: plan.allocs,
      peakRequestedBytes: plan.peakRequestedBytes,
      durationUs: plan.durationUs,
      startedMidRun: plan.startedMidRun,
    },
    // The file's name only: a report is shared, the folder it was made in is nobody's business.
    costs:
      costs === undefined
        ? null
        : `${fileName(costs.info.source)}${costs.info.gpu ? ` (${costs.info.gpu})` : ''}`,
    answer: reportAnswer(recorded, {
      advice: extras.advice,
      stackOf: extras.stackOf,
      colors: ALLOCATOR_COLORS,
    }),
    allocators,
    devices,
    peak: extras.peak ?? null,
  };
}

/**
 * Note [Steps from the optimizer's frames]: a training step ends in
 * `optimizer.step()`. torch.optim marks it in `external_annotations`
 * (record_function's `Optimizer.step#AdamW.step`, START and END, with the
 * device and time), and its allocations (Adam's state on the first step,
 * the foreach kernels' temporaries after it) carry frames in torch/optim/.
 * Where the device has START markers, a step starts at the first event at
 * or after each one's time; else where a run of allocations with such a
 * frame starts, after an allocation without one. The page marks those
 * events. A snapshot with neither (no markers, no stacks, or an optimizer
 * that allocates nothing) has no marks.
 */
function optimizerSteps(snapshot: MemorySnapshot, d: DevicePlan): number[] {
  const marked = annotatedSteps(snapshot, d);
  if (marked.length > 0) return marked;
  const { stack, action } = d.trace;
  if (stack === undefined || snapshot.stacks.length === 0) return [];
  const inOptimizer = snapshot.stacks.map((frames) =>
    Array.from(frames).some((f) => /torch[\\/]optim[\\/]/.test(snapshot.frames[f]?.filename ?? '')),
  );
  const starts: number[] = [];
  let before = false;
  for (let i = 0; i < d.trace.length; i++) {
    if (action[i] !== Action.alloc || stack[i] < 0) continue;
    const now = inOptimizer[stack[i]] === true;
    if (now && !before) starts.push(i);
    before = now;
  }
  return starts;
}

/** The first event at or after each of the device's `Optimizer.step#` START markers (none without times). */
function annotatedSteps(snapshot: MemorySnapshot, d: DevicePlan): number[] {
  const times = (snapshot.annotations ?? [])
    .filter((a) => a.stage === 'START' && a.device === d.device && a.name.startsWith('Optimizer.step#'))
    .map((a) => a.timeUs)
    .sort((a, b) => a - b);
  const { timeUs } = d.trace;
  const starts: number[] = [];
  let i = 0;
  for (const t of times) {
    while (i < d.trace.length && !(timeUs[i] >= t)) i++;
    if (i === d.trace.length) break;
    if (starts.at(-1) !== i) starts.push(i);
  }
  return starts;
}

/**
 * The recorded allocator's reserved bytes after each event (its segment events from the start state's
 * bytes), as the series are bucketed: per bucket its least and greatest value, in the order they came
 * (Note [Min-max buckets]).
 */
function recordedCurve(d: DevicePlan, width: number, buckets: number): number[] | null {
  const { action, size } = d.trace;
  let held = d.startState.reservedBytes;
  let segmentEvents = 0;
  const out: number[] = [];
  for (let k = 0; k < buckets; k++) {
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    let loAt = 0;
    let hiAt = 0;
    const end = Math.min(d.trace.length, (k + 1) * width);
    for (let i = k * width; i < end; i++) {
      const a = action[i];
      if (a === Action.segment_alloc || a === Action.segment_map) {
        held += size[i];
        segmentEvents++;
      } else if (a === Action.segment_free || a === Action.segment_unmap) {
        held -= size[i];
        segmentEvents++;
      }
      if (held < lo) [lo, loAt] = [held, i];
      if (held > hi) [hi, hiAt] = [held, i];
    }
    if (lo === Number.POSITIVE_INFINITY) lo = hi = held;
    out.push(...(loAt <= hiAt ? [lo, hi] : [hi, lo]));
  }
  return segmentEvents === 0 ? null : out;
}

function interleave(s: MinMaxSeries): number[] {
  const out: number[] = [];
  for (let k = 0; k < s.first.length; k++) out.push(s.first[k], s.second[k]);
  return out;
}

/** Seconds since the device's first timed event, or the event index when the trace has no times. */
function eventTime(d: DevicePlan): { unit: 'seconds' | 'events'; at(event: number): number } {
  const t = d.trace.timeUs;
  let t0 = Number.NaN;
  for (let i = 0; i < t.length && Number.isNaN(t0); i++) t0 = t[i];
  if (Number.isNaN(t0)) return { unit: 'events', at: (e) => Math.max(0, e) };
  // An event without a time takes the last time before it.
  return {
    unit: 'seconds',
    at: (e) => {
      for (let i = Math.max(0, e); i >= 0; i--) if (!Number.isNaN(t[i])) return (t[i] - t0) / 1e6;
      return 0;
    },
  };
}

/** The last part of a path, / or \\ separated (no node:path: the page builds this too). */
function fileName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
}
