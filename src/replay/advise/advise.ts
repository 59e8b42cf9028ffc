/**
 * advise: which PYTORCH_CUDA_ALLOC_CONF a recorded workload should run
 * with. The snapshot's trace (or several: the ranks of one job, or several
 * runs of it, each setting judged by its worst) is replayed through the
 * exact model of PyTorch 2.11's allocator under a search of settings (Note
 * [Advice search], search.ts), in parallel (Note [Worker threads],
 * pool.ts), replays that can no longer change the answer stopped (Note
 * [Pruning]), the most promising run first (Note [Best first], pool.ts),
 * and the settings are ranked (Note [Ranking]): the simplest
 * among those within a tolerance of the best, with room under the limit.
 * When none fits, the answer says so first and recommends nothing. Beside
 * them: the recorded run's own peak, PyTorch under the recorded settings,
 * vmmkit's own allocator, and the page bound no allocator can beat (Note
 * [Page bound], bound.ts); and warnings for combinations that reserve far
 * more than their parts on this snapshot (Note [Traps]).
 *
 * Note [Pruning]: each replay has a bar of its own (Note [Stopping a
 * replay], pool.ts), set from the settings finished so far; its OOMs and
 * running peak only grow, so once they pass the bar its final figures do
 * too, and it stops. A finished setting B bounds the best from above, so
 * past B's OOMs, or past B's peak by more than both the tolerance and
 * REFINE_MARGIN (the ceiling), a setting is neither among the equals at
 * the head of the ranking (Note [Ranking]: within the tolerance of the
 * best) nor a contender that rounds 2 and 3 refine (finished settings with
 * the best's OOMs and a peak under the ceiling). Below the ceiling a
 * setting also stops once it is past the best peak, so cannot be the
 * lowest, and cannot be recommended either: it ranks after the setting
 * recommended among those finished by its keys and tuning, or by its peak;
 * and it is past the second best of every axis it is alone on, the only
 * figures of the others rounds 2 and 3 read. Every bar is at or above
 * what the unpruned search's answer needs, since the best and the second
 * bests only fall as settings finish; a recommended setting can change when
 * the best falls, so at the end every stopped setting that could now be
 * among the equals and before the recommended one is replayed again to its
 * end (settle), until none is. So the pruned and unpruned searches propose
 * the same settings and give the same head: the verdict, the recommended
 * setting, the lowest of its equals; below it, a stopped replay's figures
 * are lower bounds, and an equal setting of more keys may have stopped.
 * The best setting without expandable segments is an answer too: one
 * without them stops only past the best such setting finished.
 * The known trap and its parts, the
 * recorded settings and vmmkit's allocator are baselines the answer quotes
 * and always run to the end. Under a memory limit nothing stops: a setting
 * that runs out alone (more OOMs than the best) can be the part of a
 * combination that fits with room (gpt_train under its expandable peak:
 * max_split_size_mb:32 with a division list and a collection threshold),
 * so rounds 2 and 3 refine every setting, as they did before pruning, and
 * reserved memory under a cap seldom passes the best by the margin anyway.
 */
import { availableParallelism } from 'node:os';
import { parseAllocConf } from '../../alloc/pytorch/alloc-conf.js';
import { parseNpuAllocConf } from '../../alloc/pytorch/npu-alloc-conf.js';
import type { PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import { formatBytes } from '../../util/format.js';
import { type MemoryBound, memoryBound } from '../engine/bound.js';
import { recordedReserved } from '../engine/recorded.js';
import type { AllocatorRun, OomVerdict } from '../engine/replay.js';
import { ReplayError } from '../engine/replay.js';
import type { TracePlan } from '../engine/trace-plan.js';
import { verdictOf } from '../engine/verdict.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import { allocatorOwner, settingsOfSnapshot, vendorOf, withVendor } from '../read/vendor.js';
import {
  type AdviseProcesses,
  type JobChoice,
  type JobOutcome,
  MIN_EVENTS_FOR_WORKERS,
  openBars,
  openPool,
  type ReplayJob,
  type ReplayPool,
} from './pool.js';
import { compareConf, compareFigures, comparePrefix, type Figures, rank, simpler } from './ranking.js';
import {
  type AxisBests,
  confText,
  divisionsOf,
  effectiveKey,
  firstRound,
  KNOWN_TRAP,
  keyCount,
  mergeSizes,
  partsOf,
  type Setting,
  secondRound,
  settingsConf,
  splitKeys,
  type TraceSizes,
  thirdRound,
  traceSizes,
} from './search.js';

export interface AdviseOptions {
  /** Bytes each device may reserve (set_per_process_memory_fraction's cap); none by default. */
  readonly memoryLimit?: number;
  /**
   * Peaks this close to the best are equal (Note [Ranking]): the larger of
   * `fraction` of the best peak and `bytes`. Default 1% or 64 MiB; a part
   * left out of a given tolerance is 0.
   */
  readonly tolerance?: Tolerance;
  /** Told how far the whole search is: replayed events so far, and the search's estimate of all it will replay. */
  readonly onProgress?: (done: number, total: number) => void;
  /**
   * Worker threads beside this one, which replays too (default: one per
   * core but this thread's, or none for a small trace; 0: this thread alone).
   */
  readonly workers?: number;
  /**
   * The snapshots' plans (planReplay, under the limit: Note [Inferred
   * empty_cache]), one per snapshot in their order, made once by the caller.
   */
  readonly plans: readonly TracePlan[];
  /** How the replays start their processes, in this thread and in the workers (pool.ts). */
  readonly processes: AdviseProcesses;
  /**
   * Stop a replay once it cannot change the answer (Note [Pruning]); default
   * true. The answer is the same either way; false runs every replay to its end.
   */
  readonly prune?: boolean;
}

export interface Tolerance {
  /** Of the best peak (0.01 is 1%). */
  readonly fraction?: number;
  readonly bytes?: number;
}

/** Note [Ranking]: 1% of the best peak or 64 MiB, whichever is larger. */
export const DEFAULT_TOLERANCE: Required<Tolerance> = { fraction: 0.01, bytes: 64 * 1024 * 1024 };

/** One run's figures: a setting's, or vmmkit's own allocator's (the worst snapshot's, of several). */
export interface AdviceBaseline {
  readonly peakReservedBytes: number;
  readonly peakAllocatedBytes: number;
  readonly ooms: number;
  /** No OOM and no failure: it fits (under the limit, when there is one). */
  readonly fits: boolean;
  readonly firstOom: OomVerdict | null;
  /** Outermost driver calls (cuMemAlloc, cuMemCreate, cuMemMap, ...), all kinds added up. */
  readonly driverCalls: number;
  /** Wall time of the replay. */
  readonly wallMs: number;
  /** peakReservedBytes / the recorded run's real peak; null when the trace has no segment events. */
  readonly ratioToRecorded: number | null;
  /** In words (verdict.ts): "fits, peak 4.34 GiB of 8.00 GiB", "runs out of memory at event 3,021: ...". */
  readonly verdict: string;
  /** Why the replay failed, if it did. */
  readonly error: string | null;
}

/** One setting as replayed. */
export interface AdviceCandidate extends AdviceBaseline {
  /** The configuration string ('' is PyTorch's defaults). */
  readonly allocConf: string;
  /** Keys it sets. */
  readonly keys: number;
  readonly expandableSegments: boolean;
  /** Other strings tried that are the same replay (Note [Effective settings]). */
  readonly equivalent: readonly string[];
  /** The limit less the most any device reserved; null without a limit. */
  readonly headroomBytes: number | null;
  /** It fits, by less than the tolerance (Note [Ranking]): not recommended over one with room. */
  readonly tight: boolean;
  /** Within the tolerance of the best of its tier (Note [Ranking]): equal to it. */
  readonly equal: boolean;
  /**
   * The event its replay stopped at, once it could no longer change the
   * answer (Note [Pruning]): its figures are then lower bounds. -1: replayed to the end.
   */
  readonly stoppedAt: number;
  /** Each snapshot's own figures, in the order given (one entry for one snapshot). */
  readonly perSnapshot: readonly SnapshotFigures[];
}

export interface SnapshotFigures {
  readonly peakReservedBytes: number;
  readonly ooms: number;
  readonly fits: boolean;
  readonly stoppedAt: number;
}

/** A combination that reserves far more than each of its parts alone (Note [Traps]). */
export interface AdviceTrap {
  readonly allocConf: string;
  /** What it reserves on this snapshot (at least this, when its replay stopped early). */
  readonly peakReservedBytes: number;
  /** Its replay stopped past the best (Note [Pruning]): the peak and ratio are lower bounds. */
  readonly atLeast: boolean;
  /** Its peak over the largest of its parts' peaks. */
  readonly ratio: number;
  readonly parts: readonly { readonly allocConf: string; readonly peakReservedBytes: number }[];
  /** Other values of the same keys that blow up too (max_split_size_mb 64 and 256 beside 128), each with its ratio. */
  readonly alsoAt: readonly {
    readonly allocConf: string;
    readonly peakReservedBytes: number;
    readonly ratio: number;
  }[];
  /** PyTorch's issue for it, when it is a known one. */
  readonly issue: string | null;
  /** One sentence for a person. */
  readonly message: string;
}

/** KNOWN_TRAP on this trace, against its parts, whether it blows up here or not. */
export interface KnownTrap {
  readonly allocConf: string;
  readonly peakReservedBytes: number;
  readonly ratio: number;
  readonly parts: readonly { readonly allocConf: string; readonly peakReservedBytes: number }[];
  readonly issue: string;
}

export interface Advice {
  /**
   * The first of the ranking when it fits; null when no setting fits (then
   * `verdict` says why, and there is no line to paste).
   */
  readonly recommended: AdviceCandidate | null;
  /** The answer in one line, first: what fits and by how much, or why nothing does. */
  readonly verdict: string;
  /** The settings equal to the best of the first tier (within the tolerance), ranked: the recommended one first. */
  readonly equals: readonly AdviceCandidate[];
  /** The lowest peak among `equals` when that is not the recommended setting (a tuned one, say); else null. */
  readonly lowest: AdviceCandidate | null;
  /**
   * The first setting of the ranking without expandable segments that fits
   * (some features refuse them: NCCL buffer registration, MemPools); null
   * when none fits. Exact, pruned or not (Note [Pruning]).
   */
  readonly withoutExpandableSegments: AdviceCandidate | null;
  /** The tolerance as asked, and in bytes on this trace. */
  readonly tolerance: { readonly fraction: number; readonly bytes: number; readonly toleranceBytes: number };
  /** Every setting replayed, one per effective setting, ranked (Note [Ranking]). */
  readonly candidates: readonly AdviceCandidate[];
  /** The page bound (of the snapshot whose bound is highest, of several). */
  readonly bound: MemoryBound;
  /** Which snapshot `bound` is of (0 for one). */
  readonly boundSnapshot: number;
  readonly recorded: {
    /** The PYTORCH_CUDA_ALLOC_CONF the snapshot records (null: none). */
    readonly allocConf: string | null;
    /** What the recorded allocator really reserved at its peak (its own segment events); null: no segment events. */
    readonly peakReservedBytes: number | null;
    /** PyTorch replayed with the recorded settings (allocConf: the recorded string, or one that says them). */
    readonly replayed: AdviceCandidate;
  };
  /** vmmkit's own allocator on the same trace. */
  readonly vmmkit: AdviceBaseline;
  readonly memoryLimit: number | null;
  readonly peakRequestedBytes: number;
  /** How many snapshots the advice is for (every candidate is ranked by its worst). */
  readonly snapshots: number;
  /** Combinations that reserve TRAP_RATIO times their parts or more, the worst first (Note [Traps]). */
  readonly traps: readonly AdviceTrap[];
  /** KNOWN_TRAP's figures on this trace (null only when its replay failed). */
  readonly knownTrap: KnownTrap | null;
  readonly search: {
    /** Strings proposed, and the replays they needed (Note [Effective settings]). */
    readonly proposed: number;
    readonly replays: number;
    /** Replays stopped early (Note [Pruning]). */
    readonly stopped: number;
    /** Stopped settings replayed again to their end, once they could matter (Note [Pruning]). */
    readonly reruns: number;
    /** Replayed events, over what the same replays would have replayed to their ends. */
    readonly eventsReplayed: number;
    readonly eventsInFull: number;
    readonly workers: number;
    readonly wallMs: number;
  };
}

/** A combination is a trap when it reserves this many times the largest of its parts (Note [Traps]). */
const TRAP_RATIO = 1.5;

/** Note [Traps] */
const TRAP_ISSUE = 'pytorch/pytorch#123548';

/**
 * Note [Pruning]: how far above the best a setting may be and still be
 * refined in the next round (its axis value crossed and varied): a round-1
 * value more than this far behind is not made a winner by a neighbouring
 * value. Above it a replay is of no use to the search, and stops.
 */
export const REFINE_MARGIN = 0.05;

/** Search PyTorch's settings for the workload of `snapshots` (one, or several runs or ranks of one job). */
export async function advise(
  snapshots: MemorySnapshot | readonly MemorySnapshot[],
  options: AdviseOptions,
): Promise<Advice> {
  const start = performance.now();
  // Each snapshot's vendor fixed now: worker threads get them without their frames (Note [Snapshot vendor]).
  const all = (
    Array.isArray(snapshots) ? (snapshots as readonly MemorySnapshot[]) : [snapshots as MemorySnapshot]
  ).map((s) => withVendor(s, vendorOf(s)));
  if (all.length === 0) throw new ReplayError('advise needs at least one snapshot');
  const limit = options.memoryLimit;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0))
    throw new ReplayError(`the memory limit must be a positive whole number of bytes, not ${limit}`);
  const tolerance = toleranceOf(options.tolerance);
  const plans = options.plans;
  if (plans.length !== all.length) throw new ReplayError(`${plans.length} plans for ${all.length} snapshots`);
  const sizes = mergeSizes(all.map((s, k) => traceSizes(s, plans[k])));
  const events = plans.reduce((n, p) => n + p.events, 0);
  // Unasked, a trace too small to repay starting workers runs here (Note [Worker threads]).
  const workers = options.workers ?? (events < MIN_EVENTS_FOR_WORKERS ? 0 : availableParallelism() - 1);
  const bars = openBars(MAX_JOBS);
  const pool = openPool({ snapshots: all, plans, memoryLimit: limit, bars }, workers, options.processes);
  try {
    const search = new Search(
      all,
      plans,
      sizes,
      limit,
      tolerance,
      options.prune ?? true,
      bars,
      pool,
      options.onProgress,
    );
    await search.run();
    return search.advice(performance.now() - start);
  } finally {
    await pool.close();
  }
}

function toleranceOf(t: Tolerance | undefined): Required<Tolerance> {
  if (t === undefined) return DEFAULT_TOLERANCE;
  const fraction = t.fraction ?? 0;
  const bytes = t.bytes ?? 0;
  if (
    !(Number.isFinite(fraction) && fraction >= 0 && fraction < 1) ||
    !(Number.isSafeInteger(bytes) && bytes >= 0)
  )
    throw new ReplayError(
      `the tolerance must be a fraction in [0, 1) and a whole number of bytes, not ${JSON.stringify(t)}`,
    );
  return { fraction, bytes };
}

/** The tolerance in bytes next to a peak (Note [Ranking]). */
function toleranceAt(t: Required<Tolerance>, peak: number): number {
  return Math.max(Math.ceil(t.fraction * peak), t.bytes);
}

/** One effective setting: its simplest string, the others, and its outcome once replayed. */
interface Entry {
  conf: string;
  readonly key: string;
  /** The setting of `conf`; undefined for the recorded settings when the search has no such point. */
  setting: Setting | undefined;
  readonly others: Set<string>;
  /** One per snapshot, once replayed. */
  outcomes: (JobOutcome | undefined)[];
  /** Replayed to the end whatever the bar (a baseline, the known trap and its parts). */
  pinned: boolean;
  /** Its max_split_size in bytes (Infinity: none). */
  readonly maxSplitBytes: number;
  /** The effective key of its settings without max_split_size, when it sets one (#choose). */
  readonly unsplitKey: string | undefined;
  /** Its figures, once every snapshot's replay is back. */
  figures: Figures | undefined;
}

/** Job ids with a bar of their own (Note [Stopping a replay]); later ones run to the end. */
const MAX_JOBS = 8192;

/** Replays per round beyond the first, at most (for the progress estimate). */
const LATER_ROUNDS_BOUND = [2 * (2 + 3 * 4 + 2), 2 * 8 * 4];

class Search {
  readonly #entries = new Map<string, Entry>();
  readonly #byConf = new Map<string, Entry>();
  readonly #limited: boolean;
  readonly #traces: number;
  #nextId = 0;
  #done = 0;
  #proposed = 0;
  #jobs = 0;
  #stopped = 0;
  #reruns = 0;
  #eventsReplayed = 0;
  /** The entries of the round in flight (a job may wait for one of them: #choose). */
  #inRound = new Set<Entry>();
  /** The prunable jobs of the round in flight, not yet back: the bars to keep raised. */
  readonly #pending = new Map<number, Entry>();
  #eventsInFull = 0;
  /** The recorded settings' replays, one per snapshot, when no entry is them. */
  #recorded: JobOutcome[] | undefined;
  #recordedEntry: Entry | undefined;
  #vmmkit: JobOutcome[] = [];
  /** The best finished figures so far (Note [Pruning]). */
  #best: Figures | undefined;
  /** The snapshots are torch_npu's: settings are PYTORCH_NPU_ALLOC_CONF strings. */
  readonly #npu: boolean;

  constructor(
    readonly snapshots: readonly MemorySnapshot[],
    readonly plans: readonly TracePlan[],
    readonly sizes: TraceSizes,
    readonly limit: number | undefined,
    readonly tolerance: Required<Tolerance>,
    readonly prune: boolean,
    readonly bars: Float64Array,
    readonly pool: ReplayPool,
    readonly onProgress: ((done: number, total: number) => void) | undefined,
  ) {
    this.#limited = limit !== undefined;
    this.#traces = snapshots.length;
    this.#npu = vendorOf(snapshots[0]) === 'npu';
  }

  async run(): Promise<void> {
    const first = this.#propose(firstRound(this.sizes, this.#limited));
    // The known trap and its parts are replayed whole: the warning gives their figures (Note [Traps]).
    for (const conf of [KNOWN_TRAP, ...partsOf(parseSetting(KNOWN_TRAP)).map(confText)]) {
      const e = this.#byConf.get(conf);
      if (e !== undefined) e.pinned = true;
    }
    // The recorded settings are a candidate too; replayed from the snapshot's own dict when no string says them.
    const recordedSettings = settingsOfSnapshot(this.snapshots[0]);
    const recordedKey = effectiveKey(recordedSettings, this.sizes, this.limit);
    const extra: ReplayJob[] = this.snapshots.map((_, t) => this.#job(t, 'vmmkit', null, false));
    const conf = settingsConf(recordedSettings);
    if (this.#entries.has(recordedKey)) this.#recordedEntry = this.#entries.get(recordedKey);
    else if (conf !== undefined) {
      this.#recordedEntry = this.#entry(conf, recordedKey, undefined);
      this.#byConf.set(conf, this.#recordedEntry);
      first.push(this.#recordedEntry);
    } else extra.push(...this.snapshots.map((_, t) => this.#job(t, 'pytorch', null, false)));
    if (this.#recordedEntry !== undefined) this.#recordedEntry.pinned = true;
    const done = await this.#round(extra, first, LATER_ROUNDS_BOUND);
    this.#vmmkit = done.slice(0, this.#traces);
    this.#recorded = done.length > this.#traces ? done.slice(this.#traces) : undefined;
    const second = this.#propose(
      [false, true].flatMap((e) => {
        const b = this.#bests(e);
        return b === undefined ? [] : secondRound(b, this.sizes, this.#limited);
      }),
    );
    await this.#round([], second, [LATER_ROUNDS_BOUND[1]]);
    const third = this.#propose(
      [false, true].flatMap((e) => {
        const top = this.#topTwo(e);
        return top === undefined ? [] : thirdRound(e, top.maxSplit, top.divisions, top.gc);
      }),
    );
    await this.#round([], third, []);
    await this.#settle();
  }

  /**
   * Note [Pruning]: a replay that stopped as one that could not be
   * recommended may matter after all once the best has moved (a new best
   * can leave the setting that was recommended outside the tolerance): each
   * stopped setting that could now be among the equals and come before the
   * recommended one is replayed again to its end, until none is left.
   */
  async #settle(): Promise<void> {
    if (!this.#pruning) return;
    for (;;) {
      const done = [...this.#entries.values()].filter((e) => e.figures !== undefined);
      const tol = this.#toleranceBytes(done);
      const head = rank(done, tol, this.limit)[0]?.entry;
      const best = this.#best;
      if (head === undefined || best === undefined || head.figures!.stopped || head.figures!.failed) return;
      const again = done.filter((e) => {
        const f = e.figures!;
        if (!f.stopped || f.ooms > best.ooms || f.peak > best.peak + tol) return false;
        const c = comparePrefix(e.conf, head.conf);
        return c < 0 || (c === 0 && f.peak <= head.figures!.peak);
      });
      if (again.length === 0) return;
      for (const e of again) {
        e.pinned = true;
        e.figures = undefined;
        e.outcomes = new Array(this.#traces).fill(undefined);
      }
      this.#reruns += again.length;
      await this.#round([], again, []);
    }
  }

  #entry(
    conf: string,
    key: string,
    setting: Setting | undefined,
    settings?: PytorchAllocatorSettings,
  ): Entry {
    const split = settings?.maxSplitSize ?? Number.POSITIVE_INFINITY;
    const unsplit =
      settings === undefined || split === Number.POSITIVE_INFINITY
        ? undefined
        : effectiveKey({ ...settings, maxSplitSize: Number.POSITIVE_INFINITY }, this.sizes, this.limit);
    const e: Entry = {
      conf,
      key,
      setting,
      others: new Set(),
      outcomes: new Array(this.#traces).fill(undefined),
      pinned: false,
      maxSplitBytes: split,
      unsplitKey: unsplit === key ? undefined : unsplit,
      figures: undefined,
    };
    this.#entries.set(key, e);
    return e;
  }

  #job(
    trace: number,
    allocator: 'pytorch' | 'vmmkit',
    allocConf: string | null,
    prunable: boolean,
  ): ReplayJob {
    return { id: this.#nextId++, trace, allocator, allocConf, prunable: prunable && this.#pruning };
  }

  /** Replays stop past the bar only without a limit (Note [Pruning]). */
  get #pruning(): boolean {
    return this.prune && !this.#limited;
  }

  /** Entries for settings not yet replayed (Note [Effective settings]); a simpler string takes over an entry. */
  #propose(settings: readonly Setting[]): Entry[] {
    const fresh: Entry[] = [];
    for (const setting of settings) {
      const conf = confText(setting);
      this.#proposed++;
      if (this.#byConf.has(conf)) continue;
      // On torch_npu only what PYTORCH_NPU_ALLOC_CONF reads (Note [PYTORCH_NPU_ALLOC_CONF]): no divisions, no traps it refuses.
      const settings = this.#npu ? npuSettings(conf) : parseAllocConf(conf).settings;
      if (settings === undefined) continue;
      const key = effectiveKey(settings, this.sizes, this.limit);
      let e = this.#entries.get(key);
      if (e === undefined) {
        e = this.#entry(conf, key, setting, settings);
        fresh.push(e);
      } else if (simpler(conf, e.conf)) {
        e.others.add(e.conf);
        e.conf = conf;
        e.setting = setting;
      } else e.others.add(conf);
      this.#byConf.set(conf, e);
    }
    return fresh;
  }

  /**
   * Run extra jobs and the entries' replays; returns the extra jobs'
   * outcomes. The plain settings go first, so that the bar is low early
   * (Note [Pruning]); the order changes no figure.
   */
  async #round(
    extra: ReplayJob[],
    entries: readonly Entry[],
    later: readonly number[],
  ): Promise<JobOutcome[]> {
    const order = [...entries].sort((a, b) => firstness(a) - firstness(b));
    this.#inRound = new Set(order);
    const jobs: ReplayJob[] = [];
    const of = new Map<number, { entry: Entry; trace: number }>();
    for (const e of order)
      for (let t = 0; t < this.#traces; t++) {
        const job = this.#job(t, 'pytorch', e.conf, !e.pinned);
        of.set(job.id, { entry: e, trace: t });
        if (job.prunable) this.#pending.set(job.id, e);
        jobs.push(job);
      }
    this.#raiseBars();
    jobs.push(...extra);
    const eventsOf = (j: ReplayJob) => this.plans[j.trace].events;
    const total =
      this.#done +
      jobs.reduce((n, j) => n + eventsOf(j), 0) +
      later.reduce((s, n) => s + n, 0) * this.plans.reduce((n, p) => n + p.events, 0);
    let done = this.#done;
    const taken = new Set<number>();
    const outcomes = await this.pool.run(
      jobs,
      (delta) => {
        done += delta;
        this.onProgress?.(done, Math.max(total, done));
      },
      (o) => {
        const at = of.get(o.id);
        if (at === undefined) return;
        this.#pending.delete(o.id);
        at.entry.outcomes[at.trace] = o;
        if (at.entry.outcomes.every((x) => x !== undefined)) this.#finished(at.entry);
      },
      (job) => {
        const at = of.get(job.id);
        const c = at === undefined ? undefined : this.#choose(at.entry, at.trace, job.id);
        if (c !== undefined && c !== 'wait') taken.add(job.id);
        return c;
      },
    );
    // Jobs whose outcome came from another replay (Note [Effective settings]) replayed nothing.
    const replayed = jobs.filter((j) => !taken.has(j.id));
    for (const j of jobs) this.#done += eventsOf(j);
    for (const j of replayed) this.#eventsInFull += eventsOf(j);
    this.#jobs += replayed.length;
    const out: JobOutcome[] = [];
    for (const o of outcomes) {
      if (taken.has(o.id)) continue;
      this.#eventsReplayed +=
        o.stoppedAt >= 0 ? o.stoppedAt + 1 : this.plans[jobs.find((j) => j.id === o.id)!.trace].events;
      if (o.stoppedAt >= 0) this.#stopped++;
      if (!of.has(o.id)) out.push(o);
    }
    return out;
  }

  /**
   * Note [Effective settings] (search.ts), learnt from a replay: a setting
   * whose max_split_size is at or above what its setting without one found
   * neutral on a trace (Note [Neutral max_split_size]) decides every request
   * of that trace as that one did, so it takes that replay's outcome, once
   * it has run to its end, and is not replayed. While that replay is still
   * under way the job waits for it; where it stopped or failed, the job runs.
   */
  #choose(e: Entry, trace: number, id: number): JobChoice {
    if (e.unsplitKey === undefined) return undefined;
    const base = this.#entries.get(e.unsplitKey);
    if (base === undefined || base === e) return undefined;
    const o = base.outcomes[trace];
    if (o === undefined) return this.#inRound.has(base) ? 'wait' : undefined;
    if (
      o.run === null ||
      o.run.error !== undefined ||
      o.stoppedAt >= 0 ||
      o.neutralMaxSplitFrom > e.maxSplitBytes
    )
      return undefined;
    return { ...o, id, wallMs: 0 };
  }

  /** An entry's last replay is back: its figures, and the bar they set (Note [Pruning]). */
  #finished(e: Entry): void {
    const f = figuresOf(e.outcomes as JobOutcome[]);
    e.figures = f;
    if (f.failed || f.stopped) return;
    if (
      this.#best === undefined ||
      f.ooms < this.#best.ooms ||
      (f.ooms === this.#best.ooms && f.peak < this.#best.peak)
    )
      this.#best = f;
    this.#raiseBars();
  }

  /**
   * Each pending job's bar (Note [Pruning]): the lowest running peak past
   * which its setting can be neither a contender of rounds 2 and 3 (past the
   * ceiling, or past the second best of every axis it is alone on) nor the
   * recommended one or the lowest (past the best, and ranked after the
   * recommended one among equals by its keys and tuning, or by its peak).
   */
  #raiseBars(): void {
    const b = this.#best;
    if (!this.#pruning || b === undefined || this.#pending.size === 0) return;
    const done = [...this.#entries.values()].filter((e) => e.figures !== undefined);
    const head = rank(done, this.#toleranceBytes(done), this.limit)[0]?.entry;
    const ceiling = this.#contenderCeiling(b.peak);
    // The two lowest peaks of the contenders of each axis group, in one pass (what #ranked's top two hold).
    const lowest = new Map<string, [number, number]>();
    for (const e of done) {
      if (e.setting === undefined || !this.#contender(e)) continue;
      const p = e.figures!.peak;
      for (const g of groupsOf(e.setting)) {
        const two = lowest.get(g) ?? [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
        if (p < two[0]) lowest.set(g, [p, two[0]]);
        else if (p < two[1]) lowest.set(g, [two[0], p]);
        else lowest.set(g, two);
      }
    }
    const secondBest = (group: string): number => lowest.get(group)?.[1] ?? Number.POSITIVE_INFINITY;
    // The best setting without expandable segments is an answer too (some features refuse them).
    let native = Number.POSITIVE_INFINITY;
    for (const e of done) {
      const f = e.figures!;
      if (!f.failed && !f.stopped && f.ooms === b.ooms && !expandableOf(e)) native = Math.min(native, f.peak);
    }
    for (const [id, e] of this.#pending) {
      let bar = ceiling;
      if (head !== undefined && !head.figures!.stopped && !head.figures!.failed) {
        const c = comparePrefix(e.conf, head.conf);
        const headBar = c < 0 ? Number.POSITIVE_INFINITY : c === 0 ? head.figures!.peak : b.peak;
        const groups = e.setting === undefined ? [] : groupsOf(e.setting);
        const groupBar = Math.max(Number.NEGATIVE_INFINITY, ...groups.map(secondBest));
        bar = Math.min(bar, Math.max(headBar, groupBar));
      }
      if (!expandableOf(e)) bar = Math.max(bar, native);
      if (2 * id + 1 >= this.bars.length) continue;
      this.bars[2 * id] = b.ooms;
      this.bars[2 * id + 1] = bar;
    }
  }

  /** The highest peak that is still refined (Note [Pruning]): REFINE_MARGIN above the best, or the tolerance. */
  #contenderCeiling(best: number): number {
    return Math.max(best * (1 + REFINE_MARGIN), best + toleranceAt(this.tolerance, best));
  }

  /**
   * Finished, and close enough to the best to be refined (Note [Pruning]):
   * the same with or without pruning. Under a limit every finished setting
   * is (a setting that runs out alone may fit in a combination).
   */
  #contender(e: Entry): boolean {
    const f = e.figures;
    if (f === undefined) return false;
    if (this.#limited) return true;
    const b = this.#best;
    if (f.failed || f.stopped || b === undefined) return false;
    return f.ooms === b.ooms && f.peak <= this.#contenderCeiling(b.peak);
  }

  /** Contenders, ranked by their figures. */
  #ranked(filter: (e: Entry) => boolean): Entry[] {
    return [...this.#entries.values()]
      .filter((e) => this.#contender(e) && filter(e))
      .sort((a, b) => compareFigures(a.figures!, b.figures!) || compareConf(a.conf, b.conf));
  }

  /** The best value of each axis alone in one mode (for round 2); undefined when the mode has no contender. */
  #bests(expandable: boolean): AxisBests | undefined {
    const inMode = (s: Setting) => s.expandable === expandable;
    const plain = (s: Setting) =>
      s.maxSplitMb === undefined && s.divisions === undefined && s.gc === undefined;
    const group = (pick: (s: Setting) => boolean) =>
      this.#ranked((e) => e.setting !== undefined && inMode(e.setting) && pick(e.setting));
    if (group(() => true).length === 0) return undefined;
    const mss = group((s) => plain({ ...s, maxSplitMb: undefined }))[0]?.setting;
    const div = group((s) => plain({ ...s, divisions: undefined }))[0]?.setting;
    const gc = group((s) => plain({ ...s, gc: undefined }))[0]?.setting;
    return {
      expandable,
      maxSplitMb: mss?.maxSplitMb,
      // No contender on this axis: refine nothing (divisions undefined would refine from no rounding).
      divisions: div === undefined ? undefined : divisionsOf(div),
      refineDivisions: div !== undefined,
      gc: gc?.gc,
    };
  }

  /** The two best values of each axis alone (unset among them) in one mode, for round 3; undefined: no contender. */
  #topTwo(expandable: boolean):
    | {
        maxSplit: (number | undefined)[];
        divisions: (readonly number[] | undefined)[];
        gc: (number | undefined)[];
      }
    | undefined {
    const inMode = (x: Entry) => x.setting !== undefined && x.setting.expandable === expandable;
    if (this.#ranked(inMode).length === 0) return undefined;
    const top = <T>(axis: (s: Setting) => T, others: (s: Setting) => boolean): T[] => {
      const seen: T[] = [];
      for (const e of this.#ranked((x) => inMode(x) && others(x.setting!))) {
        const v = axis(e.setting!);
        if (!seen.some((w) => JSON.stringify(w) === JSON.stringify(v))) seen.push(v);
        if (seen.length === 2) break;
      }
      // No contender on this axis: it stays unset in the combinations.
      return seen.length === 0 ? [undefined as T] : seen;
    };
    return {
      maxSplit: top(
        (s) => s.maxSplitMb,
        (s) => s.divisions === undefined && s.gc === undefined,
      ),
      divisions: top(
        (s) => (s.divisions === undefined ? undefined : divisionsOf(s)),
        (s) => s.maxSplitMb === undefined && s.gc === undefined,
      ),
      gc: top(
        (s) => s.gc,
        (s) => s.maxSplitMb === undefined && s.divisions === undefined,
      ),
    };
  }

  advice(wallMs: number): Advice {
    const recordedPeak = recordedPeakBytes(this.plans);
    const limit = this.limit;
    const entries = [...this.#entries.values()].filter((e) => e.figures !== undefined);
    const tol = this.#toleranceBytes(entries);
    const ranked = rank(entries, tol, limit);
    const candidates = ranked.map((r) => toCandidate(r.entry, recordedPeak, limit, r.tight, r.equal));
    const head = candidates[0];
    const fits = head?.fits === true && head.stoppedAt < 0;
    // A tight head has no equals: it is there for its room alone.
    const equals = !fits
      ? []
      : ranked[0].equal
        ? candidates.filter((_, k) => ranked[k].equal && ranked[k].tier === ranked[0].tier)
        : [head];
    const lowest = equals.reduce<AdviceCandidate | null>(
      (lo, c) => (lo === null || c.peakReservedBytes < lo.peakReservedBytes ? c : lo),
      null,
    );
    const conf = this.snapshots[0].allocatorSettings?.PYTORCH_CUDA_ALLOC_CONF;
    const recordedSettings = settingsOfSnapshot(this.snapshots[0]);
    const recordedCandidate =
      this.#recordedEntry !== undefined
        ? (candidates.find((c) => c.allocConf === this.#recordedEntry!.conf) ??
          toCandidate(this.#recordedEntry, recordedPeak, limit, false, false))
        : toCandidate(
            {
              conf: typeof conf === 'string' ? conf : '',
              outcomes: this.#recorded!,
              others: new Set(),
            },
            recordedPeak,
            limit,
            false,
            false,
            recordedSettings.expandableSegments,
          );
    const bounds = this.plans.map((p) => memoryBound(p));
    const boundSnapshot = bounds.reduce((k, b, i) => (b.peakBytes > bounds[k].peakBytes ? i : k), 0);
    const recommended = fits ? head : null;
    return {
      recommended,
      verdict: verdictLine(
        recommended,
        candidates,
        bounds,
        limit,
        tol,
        this.#traces,
        allocatorOwner(this.#npu ? 'npu' : 'cuda'),
      ),
      equals,
      lowest: lowest === null || lowest === recommended ? null : lowest,
      withoutExpandableSegments:
        candidates.find((c) => !c.expandableSegments && c.fits && c.stoppedAt < 0) ?? null,
      tolerance: { ...this.tolerance, toleranceBytes: tol },
      candidates,
      bound: bounds[boundSnapshot],
      boundSnapshot,
      recorded: {
        allocConf: typeof conf === 'string' ? conf : null,
        peakReservedBytes: recordedPeak,
        replayed: recordedCandidate,
      },
      vmmkit: baselineOf(this.#vmmkit, recordedPeak, limit),
      memoryLimit: limit ?? null,
      peakRequestedBytes: Math.max(...this.plans.map((p) => p.peakRequestedBytes)),
      snapshots: this.#traces,
      traps: this.#traps(),
      knownTrap: this.knownTrap(),
      search: {
        proposed: this.#proposed,
        replays: this.#jobs,
        stopped: this.#stopped,
        reruns: this.#reruns,
        eventsReplayed: this.#eventsReplayed,
        eventsInFull: this.#eventsInFull,
        workers: this.pool.workers,
        wallMs,
      },
    };
  }

  /** The tolerance in bytes: next to the lowest peak of the fewest OOMs among finished replays. */
  #toleranceBytes(entries: readonly Entry[]): number {
    let best: Figures | undefined;
    for (const e of entries) {
      const f = e.figures!;
      if (f.failed || f.stopped) continue;
      if (best === undefined || f.ooms < best.ooms || (f.ooms === best.ooms && f.peak < best.peak)) best = f;
    }
    return toleranceAt(this.tolerance, best?.peak ?? 0);
  }

  /**
   * Note [Traps]: a combination of keys can reserve far more than any of
   * its keys alone. The known one is expandable segments with
   * max_split_size_mb (pytorch/pytorch#123548): PyTorch 2.11 still applies
   * max_split_size's rule "no block of max_split_size or more for a smaller
   * request" (N5) to expandable segments, whose free blocks merge across
   * pages into ever larger ones; once the free block is past the limit,
   * smaller requests cannot use it and new pages are mapped beside it. The
   * figures are this snapshot's own: the exact model's replay of it under
   * the combination and under each of its parts (the search replays the
   * known trap and its parts to the end whatever the bar, Note [Pruning]);
   * no figure of another workload is quoted. A combination whose peak is
   * TRAP_RATIO times the largest of its parts' peaks is reported (one whose
   * replay stopped early, with "at least"); one that only contains a
   * reported one is not reported again.
   */
  #traps(): AdviceTrap[] {
    const blown: Blowup[] = [];
    for (const e of this.#entries.values()) {
      if (e.figures === undefined || e.setting === undefined || partsOf(e.setting).length <= 1) continue;
      const b = this.#blowup(e);
      if (b !== undefined && b.ratio >= TRAP_RATIO) blown.push(b);
    }
    // A combination holding a smaller one that blows up is that one's doing.
    const keysOf = (b: Blowup) => new Set(splitKeys(b.allocConf));
    const minimal = blown.filter((b) => {
      const mine = keysOf(b);
      return !blown.some((o) => o !== b && o.keys < b.keys && [...keysOf(o)].every((k) => mine.has(k)));
    });
    // One warning per set of key names: max_split_size_mb 64, 128 and 256 with expandable segments are one trap.
    const groups = new Map<string, Blowup[]>();
    for (const b of minimal) {
      const names = splitKeys(b.allocConf)
        .map((k) => k.split(':')[0])
        .join(',');
      groups.set(names, [...(groups.get(names) ?? []), b]);
    }
    const out: AdviceTrap[] = [];
    for (const group of groups.values()) {
      group.sort((x, y) =>
        x.allocConf === KNOWN_TRAP
          ? -1
          : y.allocConf === KNOWN_TRAP
            ? 1
            : y.ratio - x.ratio || compareConf(x.allocConf, y.allocConf),
      );
      const [lead, ...rest] = group;
      const known = lead.expandable && lead.maxSplit;
      const partText = lead.parts.map((p) => `${p.allocConf} ${formatBytes(p.peakReservedBytes)}`).join(', ');
      const atLeast = (b: Blowup) => (b.atLeast ? 'at least ' : '');
      const also =
        rest.length === 0
          ? ''
          : `; so do ${rest.map((r) => `${r.allocConf} (${atLeast(r)}${r.ratio.toFixed(1)}x)`).join(', ')}`;
      out.push({
        allocConf: lead.allocConf,
        peakReservedBytes: lead.peakReservedBytes,
        atLeast: lead.atLeast,
        ratio: lead.ratio,
        parts: lead.parts,
        alsoAt: rest.map((r) => ({
          allocConf: r.allocConf,
          peakReservedBytes: r.peakReservedBytes,
          ratio: r.ratio,
        })),
        issue: known ? TRAP_ISSUE : null,
        message:
          `${lead.allocConf} would reserve ${atLeast(lead)}${formatBytes(lead.peakReservedBytes)} on this snapshot, ${atLeast(lead)}${lead.ratio.toFixed(1)}x the most of its parts alone (${partText})${also}` +
          (known ? `. ${KNOWN_TRAP_CAUSE}` : ''),
      });
    }
    return out.sort((x, y) => y.ratio - x.ratio || compareConf(x.allocConf, y.allocConf));
  }

  /** A combination's peak against its parts' (undefined when it or a part has no whole run). */
  #blowup(e: Entry): Blowup | undefined {
    const f = e.figures;
    const setting = e.setting;
    if (f === undefined || f.failed || setting === undefined) return undefined;
    const parts: { allocConf: string; peakReservedBytes: number }[] = [];
    for (const p of partsOf(setting)) {
      const pf = this.#byConf.get(confText(p))?.figures;
      // A part's figure must be whole: the ratio is over it.
      if (pf === undefined || pf.failed || pf.stopped) return undefined;
      parts.push({ allocConf: confText(p), peakReservedBytes: pf.peak });
    }
    const most = Math.max(...parts.map((p) => p.peakReservedBytes));
    if (!(most > 0)) return undefined;
    return {
      allocConf: e.conf,
      keys: keyCount(e.conf),
      expandable: setting.expandable,
      maxSplit: setting.maxSplitMb !== undefined,
      peakReservedBytes: f.peak,
      atLeast: f.stopped,
      ratio: f.peak / most,
      parts,
    };
  }

  /** The known trap's figures on this trace, whether or not it blows up here. */
  knownTrap(): KnownTrap | null {
    const e = this.#byConf.get(KNOWN_TRAP);
    const b = e === undefined ? undefined : this.#blowup({ ...e, conf: KNOWN_TRAP });
    return b === undefined || b.atLeast
      ? null
      : {
          allocConf: KNOWN_TRAP,
          peakReservedBytes: b.peakReservedBytes,
          ratio: b.ratio,
          parts: b.parts,
          issue: TRAP_ISSUE,
        };
  }
}

interface Blowup {
  readonly allocConf: string;
  readonly keys: number;
  readonly expandable: boolean;
  readonly maxSplit: boolean;
  readonly peakReservedBytes: number;
  readonly atLeast: boolean;
  readonly ratio: number;
  readonly parts: readonly { readonly allocConf: string; readonly peakReservedBytes: number }[];
}

/** Why the known trap blows up, for the warning (Note [Traps]). */
const KNOWN_TRAP_CAUSE = `PyTorch 2.11 applies max_split_size to expandable segments (${TRAP_ISSUE}): their free blocks merge past the limit, and a smaller request may not split one, so new pages are mapped beside it`;

/** The trap combination the search always replays (Note [Traps]). */
export { KNOWN_TRAP };

function parseSetting(conf: string): Setting {
  const s = parseAllocConf(conf).settings;
  return {
    expandable: s.expandableSegments,
    maxSplitMb: s.maxSplitSize === Number.POSITIVE_INFINITY ? undefined : s.maxSplitSize / (1024 * 1024),
  };
}

/** The axis groups of rounds 2 and 3 a setting belongs to: its mode, and each axis it is alone on (or plain). */
function groupsOf(s: Setting): string[] {
  const m = s.expandable ? 'E' : 'N';
  const out: string[] = [];
  if (s.divisions === undefined && s.gc === undefined) out.push(`${m}.mss`);
  if (s.maxSplitMb === undefined && s.gc === undefined) out.push(`${m}.div`);
  if (s.maxSplitMb === undefined && s.divisions === undefined) out.push(`${m}.gc`);
  return out;
}

function expandableOf(e: Entry): boolean {
  return e.setting?.expandable ?? parseAllocConf(e.conf).settings.expandableSegments;
}

/** Which entries a round starts first: PyTorch's defaults and expandable segments alone set the bar soonest. */
function firstness(e: Entry): number {
  return e.conf === 'expandable_segments:True' ? 0 : e.conf === '' ? 1 : 2 + keyCount(e.conf);
}

/** An entry's figures over its snapshots: each the worst (OOMs added up). */
function figuresOf(outcomes: readonly JobOutcome[]): Figures {
  let failed = false;
  let stopped = false;
  let ooms = 0;
  let peak = 0;
  let devicePeak = 0;
  let calls = 0;
  for (const o of outcomes) {
    const r = o.run;
    if (r === null || r.error !== undefined) failed = true;
    if (o.stoppedAt >= 0) stopped = true;
    if (r === null) continue;
    ooms += r.ooms;
    peak = Math.max(peak, r.peakReservedBytes);
    for (const d of r.devices) devicePeak = Math.max(devicePeak, d.peakReservedBytes);
    calls += totalCalls(r);
  }
  return { failed, stopped, ooms, peak, devicePeak, calls };
}

function totalCalls(r: AllocatorRun): number {
  let n = 0;
  for (const v of Object.values(r.driverCalls)) n += v;
  return n;
}

/** The recorded run's real peak: the worst snapshot's (null when none has segment events). */
function recordedPeakBytes(plans: readonly TracePlan[]): number | null {
  let worst: number | null = null;
  for (const plan of plans) {
    const runs = plan.devices.map((d) => recordedReserved(d, d.startState.reservedBytes));
    if (!runs.some((x) => x.hasSegmentEvents)) continue;
    worst = Math.max(
      worst ?? 0,
      runs.reduce((s, x) => s + x.peakBytes, 0),
    );
  }
  return worst;
}

/** The answer's first line (Advice.verdict). */
function verdictLine(
  recommended: AdviceCandidate | null,
  candidates: readonly AdviceCandidate[],
  bounds: readonly MemoryBound[],
  limit: number | undefined,
  tol: number,
  traces: number,
  whose: 'torch_npu' | 'PyTorch',
): string {
  const of = (k: number) => (traces > 1 ? ` in snapshot ${k + 1}` : '');
  // Whose settings they are: torch_npu's on an NPU snapshot (PYTORCH_NPU_ALLOC_CONF).
  const display = (conf: string) => (conf === '' ? `${whose}'s defaults` : conf);
  if (recommended !== null) {
    const name = display(recommended.allocConf);
    if (limit === undefined || recommended.headroomBytes === null)
      return `${name} fits, peak ${formatBytes(recommended.peakReservedBytes)} (no memory limit given)`;
    const room = recommended.headroomBytes;
    const pct = ((room / limit) * 100).toFixed(1);
    return recommended.tight
      ? `${name} fits under ${formatBytes(limit)}, but by only ${formatBytes(room)} (${pct}%), less than the tolerance ${formatBytes(tol)}: no setting leaves more room`
      : `${name} fits under ${formatBytes(limit)} with ${formatBytes(room)} (${pct}%) to spare, peak ${formatBytes(recommended.peakReservedBytes)}`;
  }
  const ran = candidates.filter((c) => c.error === null);
  if (ran.length === 0)
    return `no ${whose} setting could be replayed: ${candidates[0]?.error ?? 'no setting was tried'}`;
  if (limit === undefined)
    return `no ${whose} setting fits: the closest, ${display(ran[0].allocConf)}, ${ran[0].verdict}`;
  // The page bound, per device, against the per-device limit: past it, no allocator fits at all.
  for (let k = 0; k < bounds.length; k++)
    for (const d of bounds[k].devices)
      if (d.peakBytes > limit) {
        const at = d.event < 0 ? 'before the first event' : `at event ${d.event.toLocaleString('en-US')}`;
        const dev = bounds[k].devices.length > 1 || d.device !== 0 ? ` of device ${d.device}` : '';
        return `no ${whose} setting fits under ${formatBytes(limit)}: the live blocks alone need ${formatBytes(d.peakBytes)} ${at}${dev}${of(k)}`;
      }
  const closest = ran[0];
  return `no ${whose} setting tried fits under ${formatBytes(limit)}: the closest, ${display(closest.allocConf)}, ${closest.verdict}; the live blocks alone need ${formatBytes(Math.max(...bounds.map((b) => Math.max(0, ...b.devices.map((d) => d.peakBytes)))))}, so some allocator might`;
}

/** What a baseline and a candidate share: the worst snapshot's run, in numbers and in words. */
function runFigures(
  outcomes: readonly JobOutcome[],
  recordedPeak: number | null,
  limit: number | undefined,
): AdviceBaseline {
  // The worst: a failed run, else the most OOMs, else the highest peak.
  const worst = outcomes.reduce((w, o) => {
    const bad = (x: JobOutcome) => [
      x.run === null || x.run.error !== undefined ? 1 : 0,
      x.run?.ooms ?? 0,
      x.run?.peakReservedBytes ?? 0,
    ];
    const a = bad(o);
    const b = bad(w);
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i] ? o : w;
    return w;
  });
  const r = worst.run;
  const error = r === null ? worst.error : (r.error ?? null);
  const peak = r?.peakReservedBytes ?? 0;
  const stopped = outcomes.some((o) => o.stoppedAt >= 0);
  const ooms = outcomes.reduce((n, o) => n + (o.run?.ooms ?? 0), 0);
  return {
    peakReservedBytes: peak,
    peakAllocatedBytes: Math.max(...outcomes.map((o) => o.run?.peakAllocatedBytes ?? 0)),
    ooms,
    fits: !stopped && outcomes.every((o) => o.run !== null && o.run.error === undefined && o.run.ooms === 0),
    firstOom: r?.firstOom ?? null,
    driverCalls: outcomes.reduce((n, o) => n + (o.run === null ? 0 : totalCalls(o.run)), 0),
    wallMs: outcomes.reduce((n, o) => n + o.wallMs, 0),
    ratioToRecorded: recordedPeak !== null && recordedPeak > 0 && r !== null ? peak / recordedPeak : null,
    // The sentence without the allocator's name: "fits, peak 4.34 GiB of 8.00 GiB".
    verdict:
      r === null
        ? `could not be replayed: ${worst.error}`
        : stopped
          ? `stopped past the best at event ${Math.max(...outcomes.map((o) => o.stoppedAt)).toLocaleString('en-US')}, peak above ${formatBytes(peak)}`
          : verdictOf({ ...r, name: '' }, limit).trimStart(),
    error,
  };
}

function baselineOf(
  o: readonly JobOutcome[],
  recordedPeak: number | null,
  limit: number | undefined,
): AdviceBaseline {
  return runFigures(o, recordedPeak, limit);
}

function toCandidate(
  e: {
    readonly conf: string;
    readonly outcomes: readonly (JobOutcome | undefined)[];
    readonly others: Set<string>;
  },
  recordedPeak: number | null,
  limit: number | undefined,
  tight: boolean,
  equal: boolean,
  expandable?: boolean,
): AdviceCandidate {
  const outcomes = e.outcomes as JobOutcome[];
  const devicePeak = Math.max(
    0,
    ...outcomes.flatMap((o) => o.run?.devices.map((d) => d.peakReservedBytes) ?? []),
  );
  return {
    allocConf: e.conf,
    keys: keyCount(e.conf),
    expandableSegments: expandable ?? parseAllocConf(e.conf).settings.expandableSegments,
    ...runFigures(outcomes, recordedPeak, limit),
    equivalent: [...e.others].sort(),
    headroomBytes: limit === undefined ? null : limit - devicePeak,
    tight,
    equal,
    stoppedAt: Math.max(-1, ...outcomes.map((o) => o.stoppedAt)),
    perSnapshot: outcomes.map((o) => ({
      peakReservedBytes: o.run?.peakReservedBytes ?? 0,
      ooms: o.run?.ooms ?? 0,
      fits: o.stoppedAt < 0 && o.run !== null && o.run.error === undefined && o.run.ooms === 0,
      stoppedAt: o.stoppedAt,
    })),
  };
}

/** torch_npu's reading of a configuration string; undefined where torch_npu refuses it. */
function npuSettings(conf: string): ReturnType<typeof parseNpuAllocConf>['settings'] | undefined {
  try {
    return parseNpuAllocConf(conf).settings;
  } catch {
    return undefined;
  }
}
