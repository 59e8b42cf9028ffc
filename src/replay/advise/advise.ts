/**
 * advise: which PYTORCH_CUDA_ALLOC_CONF a recorded workload should run
 * with. The snapshot's trace is replayed through the exact model of
 * PyTorch 2.11's allocator under a search of settings (Note [Advice
 * search], advise-search.ts), in parallel (Note [Worker threads],
 * advise-pool.ts), and the settings are ranked (Note [Ranking]). Beside
 * them: the recorded run's own peak, PyTorch under the recorded settings,
 * vmmkit's own allocator, and the page bound no allocator can beat (Note
 * [Page bound], bound.ts); and warnings for combinations that reserve far
 * more than their parts (Note [Traps]).
 */
import { availableParallelism } from 'node:os';
import { parseAllocConf } from '../../alloc/pytorch/alloc-conf.js';
import { settingsFromSnapshot } from '../../alloc/pytorch/settings.js';
import { formatBytes } from '../../util/format.js';
import { type MemoryBound, memoryBound } from '../engine/bound.js';
import { recordedReserved } from '../engine/recorded.js';
import type { AllocatorRun, OomVerdict } from '../engine/replay.js';
import { ReplayError } from '../engine/replay.js';
import { planReplay, type TracePlan } from '../engine/trace-plan.js';
import { verdictOf } from '../engine/verdict.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import {
  type JobOutcome,
  MIN_EVENTS_FOR_WORKERS,
  openPool,
  type ReplayJob,
  type ReplayPool,
} from './pool.js';
import {
  type AxisBests,
  confText,
  divisionsOf,
  effectiveKey,
  firstRound,
  KNOWN_TRAP,
  keyCount,
  partsOf,
  type Setting,
  secondRound,
  settingsConf,
  type TraceSizes,
  thirdRound,
  traceSizes,
} from './search.js';

export interface AdviseOptions {
  /** Bytes each device may reserve (set_per_process_memory_fraction's cap); none by default. */
  readonly memoryLimit?: number;
  /** Told how far the whole search is: replayed events so far, and the search's estimate of all it will replay. */
  readonly onProgress?: (done: number, total: number) => void;
  /** Worker threads (default: os.availableParallelism(), or none for a small trace; 0 or 1: this thread). */
  readonly workers?: number;
  /** A plan already made for the snapshot. */
  readonly plan?: TracePlan;
}

/** One run's figures: a setting's, or vmmkit's own allocator's. */
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
}

/** A combination that reserves far more than each of its parts alone (Note [Traps]). */
export interface AdviceTrap {
  readonly allocConf: string;
  readonly peakReservedBytes: number;
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
  /** The first of the ranking. */
  readonly recommended: AdviceCandidate;
  /**
   * The fewest keys that come within NEAR_PEAK of the recommended peak and
   * fit as it does (a finely tuned list of divisions fits this trace; a
   * simpler setting is safer on the next run's shapes); null when that is
   * the recommended setting itself.
   */
  readonly simplest: AdviceCandidate | null;
  /** Every setting replayed, one per effective setting, ranked (Note [Ranking]). */
  readonly candidates: readonly AdviceCandidate[];
  readonly bound: MemoryBound;
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
  /** Combinations that reserve TRAP_RATIO times their parts or more, the worst first (Note [Traps]). */
  readonly traps: readonly AdviceTrap[];
  /** KNOWN_TRAP's figures on this trace (null only when its replay failed). */
  readonly knownTrap: KnownTrap | null;
  readonly search: {
    /** Strings proposed, and the replays they needed (Note [Effective settings]). */
    readonly proposed: number;
    readonly replays: number;
    readonly workers: number;
    readonly wallMs: number;
  };
}

/** Advice.simplest: how much more peak a simpler setting may reserve and still be named. */
export const NEAR_PEAK = 0.02;

/** A combination is a trap when it reserves this many times the largest of its parts (Note [Traps]). */
const TRAP_RATIO = 1.5;

/** Note [Traps] */
const TRAP_ISSUE = 'pytorch/pytorch#123548';

/** One workload's measured figures for KNOWN_TRAP (max_memory_reserved, bytes). */
export interface TrapMeasurement {
  readonly workload: string;
  readonly trapBytes: number;
  readonly expandableBytes: number;
}

/**
 * What PyTorch 2.11 itself reserved on the H200 under KNOWN_TRAP and under
 * expandable_segments:True alone, one fresh process per run
 * (traces/h200-whatif/results.json, max_memory_reserved; the test checks
 * these figures against the file). The exact model predicted both to the
 * byte on gpt_train, kv_decode and streams_pipeline (test/replay/h200-whatif.test.ts);
 * graphs_serve's CUDA-graph pools are not modelled.
 */
export const MEASURED_TRAP: { readonly source: string; readonly runs: readonly TrapMeasurement[] } = {
  source: 'traces/h200-whatif/results.json (H200, torch 2.11.0+cu130, 2026-12-01)',
  runs: [
    { workload: 'gpt_train', trapBytes: 7_434_403_840, expandableBytes: 5_630_853_120 },
    { workload: 'graphs_serve', trapBytes: 7_402_946_560, expandableBytes: 4_928_307_200 },
    { workload: 'streams_pipeline', trapBytes: 2_518_679_552, expandableBytes: 2_287_992_832 },
    { workload: 'kv_decode', trapBytes: 589_299_712, expandableBytes: 589_299_712 },
  ],
};

/** The measurement in words, for the warning and the known trap's line. */
export function measuredTrapText(): string {
  const g = MEASURED_TRAP.runs[0];
  const worst = Math.max(...MEASURED_TRAP.runs.map((r) => r.trapBytes / r.expandableBytes));
  const best = Math.min(...MEASURED_TRAP.runs.map((r) => r.trapBytes / r.expandableBytes));
  return `on the H200, PyTorch 2.11 itself reserved ${formatBytes(g.trapBytes)} with it on a GPT training run against ${formatBytes(g.expandableBytes)} with expandable segments alone (${(g.trapBytes / g.expandableBytes).toFixed(2)}x; ${best.toFixed(2)}x to ${worst.toFixed(2)}x on four workloads, traces/h200-whatif), and the model predicted it to the byte`;
}

/** Search PyTorch's settings for `snapshot`'s workload (see the module's comment). */
export async function advise(snapshot: MemorySnapshot, options: AdviseOptions = {}): Promise<Advice> {
  const start = performance.now();
  const limit = options.memoryLimit;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0))
    throw new ReplayError(`the memory limit must be a positive whole number of bytes, not ${limit}`);
  // Planned as replay plans under a limit (Note [Inferred empty_cache]), so advise and replay agree.
  const plan = options.plan ?? planReplay(snapshot, { memoryLimit: limit });
  const sizes = traceSizes(snapshot, plan);
  // Unasked, a trace too small to repay starting workers runs here (Note [Worker threads]).
  const workers = options.workers ?? (plan.events < MIN_EVENTS_FOR_WORKERS ? 0 : availableParallelism());
  const pool = openPool({ snapshot, plan, memoryLimit: limit }, workers);
  try {
    const search = new Search(snapshot, plan, sizes, limit, pool, options.onProgress);
    await search.run();
    return search.advice(performance.now() - start);
  } finally {
    await pool.close();
  }
}

/** One effective setting: its simplest string, the others, and its outcome once replayed. */
interface Entry {
  conf: string;
  readonly key: string;
  /** The setting of `conf`; undefined for the recorded settings when the search has no such point. */
  setting: Setting | undefined;
  readonly others: Set<string>;
  outcome: JobOutcome | undefined;
}

/** Replays per round beyond the first, at most (for the progress estimate). */
const LATER_ROUNDS_BOUND = [2 * (2 + 3 * 4 + 2), 2 * 8 * 4];

class Search {
  readonly #entries = new Map<string, Entry>();
  readonly #byConf = new Map<string, Entry>();
  readonly #limited: boolean;
  #nextId = 0;
  #done = 0;
  #proposed = 0;
  #recorded: JobOutcome | undefined;
  #recordedEntry: Entry | undefined;
  #vmmkit: JobOutcome | undefined;

  constructor(
    readonly snapshot: MemorySnapshot,
    readonly plan: TracePlan,
    readonly sizes: TraceSizes,
    readonly limit: number | undefined,
    readonly pool: ReplayPool,
    readonly onProgress: ((done: number, total: number) => void) | undefined,
  ) {
    this.#limited = limit !== undefined;
  }

  async run(): Promise<void> {
    const first = this.#propose(firstRound(this.sizes, this.#limited));
    // The recorded settings are a candidate too; replayed from the snapshot's own dict when no string says them.
    const recordedSettings = settingsFromSnapshot(this.snapshot.allocatorSettings);
    const recordedKey = effectiveKey(recordedSettings, this.sizes, this.limit);
    const extra: ReplayJob[] = [{ id: this.#nextId++, allocator: 'vmmkit', allocConf: null }];
    const conf = settingsConf(recordedSettings);
    if (this.#entries.has(recordedKey)) this.#recordedEntry = this.#entries.get(recordedKey);
    else if (conf !== undefined) {
      this.#recordedEntry = {
        conf,
        key: recordedKey,
        setting: undefined,
        others: new Set(),
        outcome: undefined,
      };
      this.#entries.set(recordedKey, this.#recordedEntry);
      this.#byConf.set(conf, this.#recordedEntry);
      first.push(this.#recordedEntry);
    } else extra.push({ id: this.#nextId++, allocator: 'pytorch', allocConf: null });
    const [vmmkit, recorded] = await this.#round(extra, first, LATER_ROUNDS_BOUND);
    this.#vmmkit = vmmkit;
    this.#recorded = recorded ?? this.#recordedEntry?.outcome;
    const second = this.#propose(
      [false, true].flatMap((e) => secondRound(this.#bests(e), this.sizes, this.#limited)),
    );
    await this.#round([], second, [LATER_ROUNDS_BOUND[1]]);
    const third = this.#propose(
      [false, true].flatMap((e) => {
        const top = this.#topTwo(e);
        return thirdRound(e, top.maxSplit, top.divisions, top.gc);
      }),
    );
    await this.#round([], third, []);
  }

  /** Entries for settings not yet replayed (Note [Effective settings]); a simpler string takes over an entry. */
  #propose(settings: readonly Setting[]): Entry[] {
    const fresh: Entry[] = [];
    for (const setting of settings) {
      const conf = confText(setting);
      this.#proposed++;
      if (this.#byConf.has(conf)) continue;
      const key = effectiveKey(parseAllocConf(conf).settings, this.sizes, this.limit);
      let e = this.#entries.get(key);
      if (e === undefined) {
        e = { conf, key, setting, others: new Set(), outcome: undefined };
        this.#entries.set(key, e);
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

  /** Run extra jobs and the entries' replays; returns the extra jobs' outcomes. */
  async #round(
    extra: ReplayJob[],
    entries: readonly Entry[],
    later: readonly number[],
  ): Promise<JobOutcome[]> {
    const jobs = [...extra];
    const of = new Map<number, Entry>();
    for (const e of entries) {
      const id = this.#nextId++;
      of.set(id, e);
      jobs.push({ id, allocator: 'pytorch', allocConf: e.conf });
    }
    const events = this.plan.events;
    const total = this.#done + (jobs.length + later.reduce((s, n) => s + n, 0)) * events;
    let done = this.#done;
    const outcomes = await this.pool.run(jobs, (delta) => {
      done += delta;
      this.onProgress?.(done, Math.max(total, done));
    });
    this.#done += jobs.length * events;
    const out: JobOutcome[] = [];
    for (const o of outcomes) {
      const e = of.get(o.id);
      if (e === undefined) out.push(o);
      else e.outcome = o;
    }
    return out;
  }

  /** Entries replayed so far, ranked. */
  #ranked(filter: (e: Entry) => boolean = () => true): Entry[] {
    return [...this.#entries.values()]
      .filter((e) => e.outcome !== undefined && filter(e))
      .sort((a, b) => compareEntries(a, b));
  }

  /** The best value of each axis alone in one mode (for round 2). */
  #bests(expandable: boolean): AxisBests {
    const single = (pick: (s: Setting) => boolean) =>
      this.#ranked(
        (e) => e.setting !== undefined && e.setting.expandable === expandable && pick(e.setting),
      )[0]?.setting;
    const plain = (s: Setting) =>
      s.maxSplitMb === undefined && s.divisions === undefined && s.gc === undefined;
    const mss = single((s) => plain({ ...s, maxSplitMb: undefined }));
    const div = single((s) => plain({ ...s, divisions: undefined }));
    const gc = single((s) => plain({ ...s, gc: undefined }));
    return {
      expandable,
      maxSplitMb: mss?.maxSplitMb,
      divisions: div === undefined ? undefined : divisionsOf(div),
      gc: gc?.gc,
    };
  }

  /** The two best values of each axis alone (unset among them) in one mode, for round 3. */
  #topTwo(expandable: boolean): {
    maxSplit: (number | undefined)[];
    divisions: (readonly number[] | undefined)[];
    gc: (number | undefined)[];
  } {
    const top = <T>(axis: (s: Setting) => T, others: (s: Setting) => boolean): T[] => {
      const seen: T[] = [];
      for (const e of this.#ranked(
        (x) => x.setting !== undefined && x.setting.expandable === expandable && others(x.setting),
      )) {
        const v = axis(e.setting!);
        if (!seen.some((w) => JSON.stringify(w) === JSON.stringify(v))) seen.push(v);
        if (seen.length === 2) break;
      }
      return seen;
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
    const recordedPeak = recordedPeakBytes(this.plan);
    const limit = this.limit;
    const candidates = this.#ranked().map((e) => toCandidate(e, recordedPeak, limit));
    const conf = this.snapshot.allocatorSettings?.PYTORCH_CUDA_ALLOC_CONF;
    const recordedSettings = settingsFromSnapshot(this.snapshot.allocatorSettings);
    const recordedCandidate =
      this.#recordedEntry !== undefined
        ? toCandidate(this.#recordedEntry, recordedPeak, limit)
        : toCandidate(
            { conf: typeof conf === 'string' ? conf : '', outcome: this.#recorded!, others: new Set() },
            recordedPeak,
            limit,
            recordedSettings.expandableSegments,
          );
    const rec = candidates[0];
    const near = candidates.filter(
      (c) =>
        c.fits === rec.fits &&
        c.ooms === rec.ooms &&
        c.peakReservedBytes <= rec.peakReservedBytes * (1 + NEAR_PEAK),
    );
    const simplest = near.reduce((best, c) => (c.keys < best.keys ? c : best), rec);
    return {
      recommended: rec,
      simplest: simplest === rec ? null : simplest,
      candidates,
      bound: memoryBound(this.plan),
      recorded: {
        allocConf: typeof conf === 'string' ? conf : null,
        peakReservedBytes: recordedPeak,
        replayed: recordedCandidate,
      },
      vmmkit: baselineOf(this.#vmmkit!, recordedPeak, limit),
      memoryLimit: limit ?? null,
      peakRequestedBytes: this.plan.peakRequestedBytes,
      traps: this.#traps(),
      knownTrap: this.knownTrap(),
      search: {
        proposed: this.#proposed,
        replays: this.#entries.size + (this.#recordedEntry === undefined ? 2 : 1),
        workers: this.pool.workers,
        wallMs,
      },
    };
  }

  /**
   * Note [Traps]: a combination of keys can reserve far more than any of
   * its keys alone. The known one is expandable segments with
   * max_split_size_mb (pytorch/pytorch#123548): PyTorch 2.11 still applies
   * max_split_size's rule "no block of max_split_size or more for a smaller
   * request" (N5) to expandable segments, whose free blocks merge across
   * pages into ever larger ones; once the free block is past the limit,
   * smaller requests cannot use it and new pages are mapped beside it. The
   * figure is not guessed: it is the exact model's replay of this trace
   * under the combination (the search always replays it, and every part of
   * every combination alone), and the model follows PyTorch 2.11's rules,
   * as measured on the H200 (traces/h200-whatif). A combination whose peak
   * is TRAP_RATIO times the largest of its parts' peaks is reported; one
   * that only contains a reported one is not reported again.
   */
  #traps(): AdviceTrap[] {
    const blown: Blowup[] = [];
    for (const e of this.#ranked((x) => x.setting !== undefined && partsOf(x.setting).length > 1)) {
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
        x.allocConf === KNOWN_TRAP ? -1 : y.allocConf === KNOWN_TRAP ? 1 : y.ratio - x.ratio,
      );
      const [lead, ...rest] = group;
      const known = lead.expandable && lead.maxSplit;
      const partText = lead.parts.map((p) => `${p.allocConf} ${formatBytes(p.peakReservedBytes)}`).join(', ');
      const also =
        rest.length === 0
          ? ''
          : `; so do ${rest.map((r) => `${r.allocConf} (${r.ratio.toFixed(1)}x)`).join(', ')}`;
      out.push({
        allocConf: lead.allocConf,
        peakReservedBytes: lead.peakReservedBytes,
        ratio: lead.ratio,
        parts: lead.parts,
        alsoAt: rest.map((r) => ({
          allocConf: r.allocConf,
          peakReservedBytes: r.peakReservedBytes,
          ratio: r.ratio,
        })),
        issue: known ? TRAP_ISSUE : null,
        message:
          `${lead.allocConf} reserves ${formatBytes(lead.peakReservedBytes)}, ${lead.ratio.toFixed(1)}x the most of its parts alone (${partText})${also}` +
          (known ? `. ${KNOWN_TRAP_CAUSE}; ${measuredTrapText()}` : ''),
      });
    }
    return out.sort((x, y) => y.ratio - x.ratio);
  }

  /** A combination's peak against its parts' (undefined when it or a part has no run). */
  #blowup(e: Entry): Blowup | undefined {
    const run = e.outcome?.run;
    const setting = e.setting;
    if (run == null || setting === undefined) return undefined;
    const parts: { allocConf: string; peakReservedBytes: number }[] = [];
    for (const p of partsOf(setting)) {
      const r = this.#byConf.get(confText(p))?.outcome?.run;
      if (r == null) return undefined;
      parts.push({ allocConf: confText(p), peakReservedBytes: r.peakReservedBytes });
    }
    const most = Math.max(...parts.map((p) => p.peakReservedBytes));
    if (!(most > 0)) return undefined;
    return {
      allocConf: e.conf,
      keys: keyCount(e.conf),
      expandable: setting.expandable,
      maxSplit: setting.maxSplitMb !== undefined,
      peakReservedBytes: run.peakReservedBytes,
      ratio: run.peakReservedBytes / most,
      parts,
    };
  }

  /** The known trap's figures on this trace, whether or not it blows up here. */
  knownTrap(): KnownTrap | null {
    const e = this.#byConf.get(KNOWN_TRAP);
    const b = e === undefined ? undefined : this.#blowup({ ...e, conf: KNOWN_TRAP });
    return b === undefined
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
  readonly ratio: number;
  readonly parts: readonly { readonly allocConf: string; readonly peakReservedBytes: number }[];
}

/** Why the known trap blows up, for the warning (Note [Traps]). */
const KNOWN_TRAP_CAUSE = `PyTorch 2.11 applies max_split_size to expandable segments (${TRAP_ISSUE}): their free blocks merge past the limit, and a smaller request may not split one, so new pages are mapped beside it`;

/** The trap combination the search always replays (Note [Traps]). */
export { KNOWN_TRAP };

/** "a,b:[1:2,>:4]" -> ["a", "b:[1:2,>:4]"] */
function splitKeys(conf: string): string[] {
  return conf === '' ? [] : conf.split(/,(?![^[]*\])/);
}

function simpler(a: string, b: string): boolean {
  const k = keyCount(a) - keyCount(b);
  return k !== 0 ? k < 0 : a.length !== b.length ? a.length < b.length : a < b;
}

/**
 * Note [Ranking]: a setting that fits (no OOM under the limit; no failed
 * replay) comes before one that does not; then fewer OOMs, then the lower
 * peak reserved, then fewer driver calls (time spent in the driver, and what
 * the H200 charges per call, Note [Per-handle prices]); a tie goes to the
 * simpler string (fewer keys, then shorter).
 */
function compareEntries(a: Entry, b: Entry): number {
  return (
    compareRuns(a.outcome!, b.outcome!) || (simpler(a.conf, b.conf) ? -1 : simpler(b.conf, a.conf) ? 1 : 0)
  );
}

function compareRuns(a: JobOutcome, b: JobOutcome): number {
  const ra = a.run;
  const rb = b.run;
  const failedA = ra === null || ra.error !== undefined;
  const failedB = rb === null || rb.error !== undefined;
  if (failedA !== failedB) return failedA ? 1 : -1;
  if (ra === null || rb === null) return 0;
  if (ra.ooms !== rb.ooms) return ra.ooms - rb.ooms;
  if (ra.peakReservedBytes !== rb.peakReservedBytes) return ra.peakReservedBytes - rb.peakReservedBytes;
  return totalCalls(ra) - totalCalls(rb);
}

function totalCalls(r: AllocatorRun): number {
  let n = 0;
  for (const v of Object.values(r.driverCalls)) n += v;
  return n;
}

function recordedPeakBytes(plan: TracePlan): number | null {
  const runs = plan.devices.map((d) => recordedReserved(d));
  if (!runs.some((x) => x.hasSegmentEvents)) return null;
  return runs.reduce((s, x) => s + x.peakBytes, 0);
}

/** What a baseline and a candidate share: one run, in numbers and in words. */
function runFigures(o: JobOutcome, recordedPeak: number | null, limit: number | undefined): AdviceBaseline {
  const r = o.run;
  const error = r === null ? o.error : (r.error ?? null);
  const peak = r?.peakReservedBytes ?? 0;
  return {
    peakReservedBytes: peak,
    peakAllocatedBytes: r?.peakAllocatedBytes ?? 0,
    ooms: r?.ooms ?? 0,
    fits: error === null && r !== null && r.ooms === 0,
    firstOom: r?.firstOom ?? null,
    driverCalls: r === null ? 0 : totalCalls(r),
    wallMs: o.wallMs,
    ratioToRecorded: recordedPeak !== null && recordedPeak > 0 && r !== null ? peak / recordedPeak : null,
    // The sentence without the allocator's name: "fits, peak 4.34 GiB of 8.00 GiB".
    verdict:
      r === null ? `could not be replayed: ${o.error}` : verdictOf({ ...r, name: '' }, limit).trimStart(),
    error,
  };
}

function baselineOf(o: JobOutcome, recordedPeak: number | null, limit: number | undefined): AdviceBaseline {
  return runFigures(o, recordedPeak, limit);
}

function toCandidate(
  e: { readonly conf: string; readonly outcome: JobOutcome | undefined; readonly others: Set<string> },
  recordedPeak: number | null,
  limit: number | undefined,
  expandable?: boolean,
): AdviceCandidate {
  return {
    allocConf: e.conf,
    keys: keyCount(e.conf),
    expandableSegments: expandable ?? parseAllocConf(e.conf).settings.expandableSegments,
    ...runFigures(e.outcome!, recordedPeak, limit),
    equivalent: [...e.others].sort(),
  };
}
