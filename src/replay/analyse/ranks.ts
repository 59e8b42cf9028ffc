/**
 * A job's ranks side by side: one snapshot per rank (or one snapshot with a
 * trace per device), each reproduced as recorded, then which rank peaks,
 * which runs out first under a limit or a setting, and the one setting that
 * fits every rank (advise's several-snapshot mode, which ranks each setting
 * by its worst snapshot).
 *
 * Note [Which rank runs out first]: ranks of one job run at once, so the
 * rank whose first failed request comes earliest in time runs out first,
 * where every rank that runs out dates its events (time_us is wall-clock
 * microseconds on every rank of one host; ranks on other hosts agree only as
 * far as their clocks do). Where a trace has no times, ranks are ordered by
 * how far through its own trace each failed (the event's index over the
 * trace's length), and the answer says it is by progress, not by time.
 */
import { type Advice, advise } from '../advise/advise.js';
import type { AdviseProcesses } from '../advise/pool.js';
import { type AsRecorded, reproduceRecording } from '../engine/as-recorded.js';
import type { StartProcess } from '../engine/process-start.js';
import type { TracePlan } from '../engine/trace-plan.js';
import type { Verdict } from '../engine/what-if.js';
import { ReplayError } from '../errors.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import type { MemoryCategory } from './categories.js';
import { analysePeak, pytorchUnder } from './peak.js';

export interface RanksOptions {
  /** A name per snapshot (its file), in order; default "rank k". */
  readonly names?: readonly string[];
  readonly allocConf?: string;
  readonly memoryLimit?: number;
  /** Starts each replay's process (process-start.ts): the caller's, such as a simulated H200. */
  readonly startProcess: StartProcess;
  /** Ask advise for the one setting that fits every rank (default true). */
  readonly advise?: boolean;
  /** advise's worker threads (its default where not given). */
  readonly workers?: number;
  /** advise's processes (AdviseProcesses), where advise runs here (neither `advise: false` nor `advice`). */
  readonly adviseProcesses?: AdviseProcesses;
  /** The snapshots' plans (planReplay, under memoryLimit), made once by the caller. */
  readonly plans: readonly TracePlan[];
  /** The recordings reproduced, when already done with those plans (used where no setting or limit is given). */
  readonly asRecorded?: readonly AsRecorded[];
  /** advise's answer for these snapshots, when already made: used instead of searching again. */
  readonly advice?: Advice;
}

/** One rank: a snapshot's device. */
export interface RankRow {
  readonly rank: number;
  readonly name: string;
  /** Which snapshot (index) and which of its devices. */
  readonly snapshot: number;
  readonly device: number;
  readonly reproduced: boolean;
  /** The as-recorded peak reserved bytes. */
  readonly peakReservedBytes: number;
  /** Requested bytes live at the peak's fullest moment. */
  readonly allocatedAtPeakBytes: number;
  /** The category holding most at the peak, or null when nothing was live. */
  readonly largestCategory: {
    readonly category: MemoryCategory;
    readonly label: string;
    readonly bytes: number;
  } | null;
  /** Under the setting or limit: its peak and first failed request (null when none is given). */
  readonly underSetting: {
    readonly peakBytes: number;
    readonly fits: boolean;
    readonly firstOom: {
      readonly event: number;
      readonly bytes: number;
      readonly timeUs: number | null;
      /** The event's index over the trace's length. */
      readonly progress: number;
    } | null;
  } | null;
}

export interface RankSummary {
  readonly ranks: readonly RankRow[];
  /** Index in `ranks` of the rank with the highest peak. */
  readonly peakRank: number;
  /** Highest peak less the lowest. */
  readonly spreadBytes: number;
  readonly setting: { readonly allocConf: string | null; readonly memoryLimit: number | null } | null;
  /** Each snapshot's verdict under the setting (answerWhatIf's, over its devices), in order; none for a segment list. */
  readonly verdicts: readonly Verdict[] | null;
  /** The rank that runs out first (Note [Which rank runs out first]), or null when none does or none was asked. */
  readonly firstToRunOut: { readonly rank: number; readonly by: 'time' | 'progress' } | null;
  /** advise over every snapshot at once (null when not asked). */
  readonly advice: RankAdvice | null;
}

export interface RankAdvice {
  /** The line to paste, or null when no setting fits every rank. */
  readonly allocConf: string | null;
  readonly verdict: string;
  /** The recommended setting's worst peak over the ranks. */
  readonly peakReservedBytes: number | null;
  readonly headroomBytes: number | null;
  /** Its peak on each snapshot, in order. */
  readonly perSnapshot: readonly { readonly peakReservedBytes: number; readonly fits: boolean }[];
}

/** The processes advise runs on here; a ReplayError where the caller gave none. */
function adviseProcessesOf(options: RanksOptions): AdviseProcesses {
  if (options.adviseProcesses === undefined)
    throw new ReplayError(
      'summariseRanks runs advise: give adviseProcesses, or advise: false, or its advice',
    );
  return options.adviseProcesses;
}

/** Summarise a job's per-rank snapshots (Note [Which rank runs out first]). */
export async function summariseRanks(
  snapshots: readonly MemorySnapshot[],
  options: RanksOptions,
): Promise<RankSummary> {
  if (snapshots.length === 0) throw new ReplayError('ranks need at least one snapshot');
  if (options.names !== undefined && options.names.length !== snapshots.length)
    throw new ReplayError(`${options.names.length} names for ${snapshots.length} snapshots`);
  const asked = options.allocConf !== undefined || options.memoryLimit !== undefined;
  const plans = options.plans;
  if (plans.length !== snapshots.length)
    throw new ReplayError(`${plans.length} plans for ${snapshots.length} snapshots`);
  const ranks: RankRow[] = [];
  const verdicts: Verdict[] = [];
  snapshots.forEach((s, k) => {
    // A segment list (one moment, no history) has no peak to set beside the others: it gives no row.
    if (s.traces.length === 0) return;
    const plan = plans[k];
    const answer = asked ? pytorchUnder(s, plan, options) : undefined;
    if (answer !== undefined) verdicts.push(answer.answers[0].verdict);
    const asRecorded =
      answer?.asRecorded ??
      options.asRecorded?.[k] ??
      reproduceRecording(s, { plan, startProcess: options.startProcess });
    const peak = analysePeak(s, { plan, asRecorded, startProcess: options.startProcess, topStacks: 0 });
    const several = peak.devices.length > 1;
    for (const d of peak.devices) {
      const largest = [...d.categories].sort((x, y) => y.bytes - x.bytes)[0];
      const run = answer?.result.allocators[0].devices.find((r) => r.device === d.device);
      const trace = s.traces.find((t) => t.device === d.device);
      const oom = run?.firstOom ?? null;
      const base = options.names?.[k] ?? `rank ${k}`;
      ranks.push({
        rank: ranks.length,
        name: several ? `${base} device ${d.device}` : base,
        snapshot: k,
        device: d.device,
        reproduced: d.reproduced,
        peakReservedBytes: d.reservedBytes,
        allocatedAtPeakBytes: d.allocatedBytes,
        largestCategory:
          largest === undefined || largest.bytes === 0
            ? null
            : { category: largest.category, label: largest.label, bytes: largest.bytes },
        underSetting:
          run === undefined
            ? null
            : {
                peakBytes: run.peakReservedBytes,
                fits: run.firstOom === null,
                firstOom:
                  oom === null
                    ? null
                    : {
                        event: oom.event,
                        bytes: oom.bytes,
                        timeUs: Number.isFinite(oom.timeUs) ? oom.timeUs : null,
                        progress:
                          trace === undefined || trace.length === 0
                            ? 0
                            : Math.max(0, oom.event) / trace.length,
                      },
              },
      });
    }
  });
  let peakRank = 0;
  for (const r of ranks) if (r.peakReservedBytes > ranks[peakRank].peakReservedBytes) peakRank = r.rank;
  const peaks = ranks.map((r) => r.peakReservedBytes);
  const advice =
    options.advice !== undefined
      ? rankAdviceOf(options.advice)
      : options.advise === false
        ? null
        : rankAdviceOf(
            await advise(snapshots, {
              memoryLimit: options.memoryLimit,
              plans,
              workers: options.workers,
              processes: adviseProcessesOf(options),
            }),
          );
  return {
    ranks,
    peakRank,
    spreadBytes: ranks.length === 0 ? 0 : Math.max(...peaks) - Math.min(...peaks),
    setting: asked
      ? { allocConf: options.allocConf ?? null, memoryLimit: options.memoryLimit ?? null }
      : null,
    verdicts: asked ? verdicts : null,
    firstToRunOut: firstToRunOut(ranks),
    advice,
  };
}

/** Note [Which rank runs out first] */
function firstToRunOut(ranks: readonly RankRow[]): RankSummary['firstToRunOut'] {
  const out = ranks.filter((r) => r.underSetting?.firstOom != null);
  if (out.length === 0) return null;
  const oom = (r: RankRow) =>
    r.underSetting?.firstOom as NonNullable<NonNullable<RankRow['underSetting']>['firstOom']>;
  const timed = out.every((r) => oom(r).timeUs !== null);
  const key = (r: RankRow) => (timed ? (oom(r).timeUs as number) : oom(r).progress);
  let first = out[0];
  for (const r of out) if (key(r) < key(first)) first = r;
  return { rank: first.rank, by: timed ? 'time' : 'progress' };
}

/** The part of advise's answer a ranks summary shows. */
export function rankAdviceOf(advice: Advice): RankAdvice {
  const r = advice.recommended;
  return {
    allocConf: r?.allocConf ?? null,
    verdict: advice.verdict,
    peakReservedBytes: r?.peakReservedBytes ?? null,
    headroomBytes: r?.headroomBytes ?? null,
    perSnapshot: (r?.perSnapshot ?? []).map((f) => ({
      peakReservedBytes: f.peakReservedBytes,
      fits: f.fits,
    })),
  };
}
