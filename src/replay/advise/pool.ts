/**
 * The replays of `advise`, run on worker threads or in this thread.
 *
 * Note [Worker threads]: the snapshot is read and planned once, here; its
 * compact trace arrays and the plan's (Note [Compact traces]) are copied
 * once into SharedArrayBuffers and given to every worker at its start (its
 * frames and stacks, which replay never reads, are left out), so a
 * worker neither parses nor plans, and a million-event trace costs its
 * ~40 MB once, not once per worker. This thread replays jobs too, beside
 * the workers (it is warm: it has just replayed the recording), in turns
 * between which the workers' outcomes come in (Turns); each lane, this
 * thread or a worker, replays up to OPEN_JOBS side by side (Note [Best
 * first]), and a worker answers with each run (its per-block arrays left
 * out) as it ends. The worker's module comes from the top with the way to
 * start a process (AdviseProcesses): it is src/entry/advise-worker.ts,
 * which serves the jobs (worker.ts) with its own starter, as a thread
 * cannot be handed one. In the compiled package (dist/) it is there; run
 * from the TypeScript sources (vitest) it is not, and every job runs in
 * this thread, in the same order with the same results (replays are
 * deterministic; only the wall time differs). A trace too small to repay
 * starting workers runs in this thread alone (MIN_EVENTS_FOR_WORKERS),
 * unless workers are asked for: a worker takes about a quarter of a second
 * to load and to serve its first job, and its first jobs run at half speed
 * or less while its JIT warms up. Several snapshots (the ranks of one job)
 * are shared alike; a job names the one it replays.
 *
 * Note [Stopping a replay]: a job that may be pruned watches its own run
 * through replay's onGrowth hook, told only at the requests that fail or
 * raise the peak (onStep would make a step for every event): its OOMs so
 * far and its running peak (the finished devices' peaks plus the current
 * device's peak so far) only grow, so once they pass the bar the search set
 * for that job (`bars`, shared by every thread: [OOMs, bytes] at 2 * job
 * id), its final figures would too, and it stops there by throwing from the
 * hook (replay ends that run with the error; the outcome says `stoppedAt`
 * instead). A bar can also fall below a run while it waits for its next
 * slice (Note [Best first]); it is checked before each slice, and the run is
 * ended where it stands by throwing the same error into it. The search
 * raises no bar a job could still pass to matter (Note [Pruning], advise.ts).
 *
 * Note [Best first]: a bar comes from settings that finished, so the sooner
 * the best settings finish, the sooner the others stop. Which are best is
 * not known beforehand, but a replay's running peak only grows: so each
 * thread keeps up to OPEN_JOBS replays under way at once (replayInSlices)
 * and always runs a slice of the one with the fewest OOMs and the lowest
 * running peak so far. The lowest ones run ahead and finish first, and a
 * setting that ends past the bar they set stops about where its running
 * peak crosses it, not wherever it had got to when the bar fell. The order
 * changes which replays stop and where, never a figure the answer gives
 * (Note [Pruning]); a job's wall time is the time its own slices took. A
 * baseline, which runs to its end whatever its peak, goes first, unwatched.
 */

import { Worker } from 'node:worker_threads';
import type { CachingAllocator } from '../../alloc/allocator.js';
import { PytorchCachingAllocator } from '../../alloc/pytorch/caching-allocator.js';
import { selectAllocators } from '../engine/allocators.js';
import type { StartProcess } from '../engine/process-start.js';
import { type AllocatorRun, type ReplayGrowth, type ReplayResult, replayInSlices } from '../engine/replay.js';
import type { TracePlan } from '../engine/trace-plan.js';
import { PastTheBar } from '../errors.js';
import type { MemorySnapshot } from '../read/snapshot.js';

/** One replay: an allocator of the registry, and the configuration string (null: the snapshot's own settings). */
export interface ReplayJob {
  readonly id: number;
  /** Which of the advice's snapshots it replays. */
  readonly trace: number;
  readonly allocator: 'pytorch' | 'vmmkit';
  readonly allocConf: string | null;
  /** It may stop once past the bar (Note [Stopping a replay]); a baseline never does. */
  readonly prunable: boolean;
}

export interface JobOutcome {
  readonly id: number;
  /** The run (devices without their per-block arrays); null when replay itself refused. */
  readonly run: AllocatorRun | null;
  readonly error: string | null;
  /** Wall time of the replay, in the thread that ran it. */
  readonly wallMs: number;
  /** The event it stopped at, past the bar (its figures are then lower bounds); -1: it ran to the end. */
  readonly stoppedAt: number;
  /**
   * The least max_split_size (bytes) that would have decided every request
   * of this run alike (Note [Neutral max_split_size]); Infinity: none.
   */
  readonly neutralMaxSplitFrom: number;
}

/**
 * What to do with a job when its turn comes (Note [Effective settings]):
 * run it (undefined), take this outcome instead of replaying it, or 'wait'
 * until another job's outcome is in.
 */
export type JobChoice = JobOutcome | 'wait' | undefined;

/** What every replay of one advice shares. */
export interface ReplayInput {
  readonly snapshots: readonly MemorySnapshot[];
  readonly plans: readonly TracePlan[];
  readonly memoryLimit: number | undefined;
  /**
   * Per job, at 2 * id: [OOMs, bytes]; a prunable job whose OOMs pass the
   * first, or equal it with a peak past the second, stops (a job past the
   * end of the array never does).
   */
  readonly bars: Float64Array;
}

/**
 * How advise's replays get their processes, from the top: `startProcess` in
 * this thread, and `workerModule`, the module of a worker thread that serves
 * the jobs starting its processes alike (undefined: every replay in this thread).
 */
export interface AdviseProcesses {
  readonly startProcess: StartProcess;
  readonly workerModule: URL | undefined;
}

/** Bars no run passes (the unpruned search keeps them), for job ids below `jobs`. */
export function openBars(jobs: number): Float64Array {
  const bars = new Float64Array(new SharedArrayBuffer(16 * jobs));
  bars.fill(Number.POSITIVE_INFINITY);
  return bars;
}

/**
 * A job's OOMs and running peak so far (the finished devices' peaks plus the
 * current device's peak so far), as its replay's onGrowth hook tells them; a
 * prunable job stops past its bar (Note [Stopping a replay]): at the request
 * that takes it past, or, where the bar fell below it while it waited, before
 * its next slice.
 */
class Watch {
  ooms = 0;
  peak = 0;
  /** The event it stopped at, past the bar; -1 while it has not. */
  stoppedAt = -1;
  #device = -1;
  #before = 0;
  readonly #at: number;

  constructor(
    readonly bars: Float64Array,
    id: number,
    prunable: boolean,
  ) {
    // A job past the end of the bars never stops.
    this.#at = prunable && 2 * id + 1 < bars.length ? 2 * id : -1;
  }

  readonly hook = (growth: ReplayGrowth): void => {
    if (growth.failed) this.ooms++;
    if (growth.device !== this.#device) {
      this.#before = this.peak;
      this.#device = growth.device;
    }
    this.peak = this.#before + growth.peakReservedBytes;
    // A stop among the blocks live before the trace (event -1) is a stop before its first event.
    if (this.past()) throw this.stopAt(Math.max(0, growth.event));
  };

  /** Whether its OOMs, or its peak with as many, are past its bar. */
  past(): boolean {
    const at = this.#at;
    if (at < 0) return false;
    const bars = this.bars;
    return this.ooms > bars[at] || (this.ooms === bars[at] && this.peak > bars[at + 1]);
  }

  /** The run stops at `event` (the last it served): the error that ends it. */
  stopAt(event: number): PastTheBar {
    this.stoppedAt = event;
    return new PastTheBar();
  }
}

/** Trace events per slice of a replay run side by side with others (Note [Best first]). */
function sliceOf(events: number): number {
  return Math.max(MIN_SLICE, Math.ceil(events / SLICES_PER_REPLAY));
}
const MIN_SLICE = 256;
const SLICES_PER_REPLAY = 16;

/**
 * Replays under way at once in one thread (Note [Best first]): each holds
 * its allocator's state. More side by side is closer to replaying every one
 * lowest first: counted in replayed events on the committed traces, 8 with
 * 16 slices each replayed 3 to 7% fewer than 4 with 8, and any number at
 * all with finer slices about 1% fewer again.
 */
const OPEN_JOBS = 8;

/** One job's replay under way, a slice at a time (Note [Best first]). */
export class OpenJob {
  readonly #watch: Watch;
  readonly #steps: Generator<number, ReplayResult, void> | undefined;
  /** The event its replay has reached (the next to serve); 0 before its first slice. */
  #reached = 0;
  /** The allocators the replay made (one per device), read once it is over. */
  readonly #made: CachingAllocator[] = [];
  #ms = 0;
  /** Set once the replay is over. */
  outcome: JobOutcome | undefined;

  constructor(
    readonly input: ReplayInput,
    readonly job: ReplayJob,
    startProcess: StartProcess,
    onEvents?: (done: number) => void,
  ) {
    this.#watch = new Watch(input.bars, job.id, job.prunable);
    const plan = input.plans[job.trace];
    try {
      this.#steps = replayInSlices(
        input.snapshots[job.trace],
        {
          allocators: selectAllocators([job.allocator]).map((f) => ({
            ...f,
            create: (context, settings) => {
              const a = f.create(context, settings);
              this.#made.push(a);
              return a;
            },
          })),
          allocConf: job.allocConf ?? undefined,
          memoryLimit: input.memoryLimit,
          plan,
          startProcess,
          keepEvents: false,
          onProgress: onEvents,
          // A baseline runs to its end whatever its peak: nothing to watch.
          onGrowth: job.prunable ? this.#watch.hook : undefined,
        },
        sliceOf(plan.events),
      );
    } catch (e) {
      this.#fail(e);
    }
  }

  /** A baseline (never stopped): it runs before the others, to its end (Note [Best first]). */
  get first(): boolean {
    return !this.job.prunable;
  }

  /** OOMs so far: the first key of which job runs next. */
  get ooms(): number {
    return this.#watch.ooms;
  }

  /** The running peak: the second key. */
  get peak(): number {
    return this.#watch.peak;
  }

  /** Replay one more slice; true once the replay is over (`outcome` is set). */
  advance(): boolean {
    if (this.outcome !== undefined) return true;
    const start = performance.now();
    try {
      const next = this.#stepOrStop();
      this.#ms += performance.now() - start;
      if (next.done === true) this.#finish(next.value.allocators[0]);
      else this.#reached = next.value;
    } catch (e) {
      this.#ms += performance.now() - start;
      this.#fail(e);
    }
    return this.outcome !== undefined;
  }

  /** The next slice, or, where the bar fell below the run while it waited, its end there (Note [Stopping a replay]). */
  #stepOrStop(): IteratorResult<number, ReplayResult> {
    const steps = this.#steps!;
    // Thrown in at the slice's end, the error ends the run there, as a hook's throw would.
    if (this.#reached > 0 && this.#watch.past()) return steps.throw(this.#watch.stopAt(this.#reached - 1));
    return steps.next();
  }

  #finish(result: AllocatorRun): void {
    const stoppedAt = this.#watch.stoppedAt;
    // A stop is no failure: the run's figures so far stand, as lower bounds.
    const run = stoppedAt >= 0 ? { ...result, error: undefined } : result;
    // The per-block arrays are what a caller of advise never reads, and most of a run's bytes.
    const devices = run.devices.map((d) => ({
      ...d,
      segmentEvents: [],
      blockAddress: new Float64Array(0),
      blockState: new Uint8Array(0),
    }));
    this.outcome = {
      id: this.job.id,
      run: { ...run, devices },
      error: null,
      wallMs: this.#ms,
      stoppedAt,
      neutralMaxSplitFrom: Math.max(
        0,
        ...this.#made.map((a) =>
          a instanceof PytorchCachingAllocator ? a.neutralMaxSplitFrom : Number.POSITIVE_INFINITY,
        ),
      ),
    };
  }

  #fail(e: unknown): void {
    this.outcome = {
      id: this.job.id,
      run: null,
      error: e instanceof Error ? e.message : String(e),
      wallMs: this.#ms,
      stoppedAt: -1,
      neutralMaxSplitFrom: Number.POSITIVE_INFINITY,
    };
  }
}

/**
 * Replays side by side (Note [Best first]): `add` opens a job, `step` runs a
 * slice of the open job with the fewest OOMs and the lowest running peak
 * (the earliest opened among equals) and gives its outcome once it is over.
 */
class BestFirst {
  readonly #open: OpenJob[] = [];

  get size(): number {
    return this.#open.length;
  }

  add(job: OpenJob): void {
    this.#open.push(job);
  }

  step(): JobOutcome | undefined {
    const open = this.#open;
    if (open.length === 0) return undefined;
    let k = open.findIndex((j) => j.first);
    if (k < 0) {
      k = 0;
      for (let j = 1; j < open.length; j++)
        if (open[j].ooms < open[k].ooms || (open[j].ooms === open[k].ooms && open[j].peak < open[k].peak))
          k = j;
    }
    const job = open[k];
    if (!job.advance()) return undefined;
    open.splice(k, 1);
    return job.outcome;
  }
}

/** Replays jobs; `run` resolves with one outcome per job, in the jobs' order. */
export interface ReplayPool {
  /** Worker threads (0: this thread). */
  readonly workers: number;
  /**
   * `onOutcome` hears of each job as it ends (the search raises the bar
   * there); `choose` says, as each job's turn comes, whether it runs, waits
   * or has its outcome already (Note [Effective settings]).
   */
  run(
    jobs: readonly ReplayJob[],
    onEvents: (delta: number) => void,
    onOutcome?: (outcome: JobOutcome) => void,
    choose?: (job: ReplayJob) => JobChoice,
  ): Promise<JobOutcome[]>;
  close(): Promise<void>;
}

/**
 * Below this many events a trace replays in this thread alone unless
 * workers are asked for: each worker loads and warms up its own JIT, which
 * the search of a smaller trace does not win back on two cores. Measured on
 * the 2-core machine: with one worker beside this thread, the search of
 * every committed trace (up to 158,022 events) took 1.5 to 3 times as long
 * as in this thread alone, and, once replays stop early (Note [Pruning],
 * advise.ts), alone each finished replay sets the bar before the next starts.
 */
export const MIN_EVENTS_FOR_WORKERS = 500_000;

/**
 * This thread and `workers` worker threads beside it (Note [Worker
 * threads]); this thread alone when 0 or the worker's module is absent.
 */
export function openPool(input: ReplayInput, workers: number, processes: AdviseProcesses): ReplayPool {
  const module = processes.workerModule;
  if (workers <= 0 || module === undefined)
    return new ThreadPool(input, processes.startProcess, undefined, undefined, 0);
  // Replay never reads the stacks; a snapshot with frames holds hundreds of thousands of them.
  const snapshots = input.snapshots.map((s) => ({ ...s, frames: [], stacks: [] }));
  // The bars are shared as they are: shareArrays would copy them, and the workers would not see them move.
  const shared = shareArrays({ ...input, snapshots, bars: new Float64Array(0) });
  return new ThreadPool(input, processes.startProcess, module, { ...shared, bars: input.bars }, workers);
}

/**
 * A run's jobs in their order, as `choose` deals them (Note [Effective
 * settings]): `take` gives the next one to replay, hands those whose outcome
 * is given to `given` on the way, and holds back those that wait, which
 * later calls offer again first.
 */
class JobQueue {
  #next = 0;
  readonly #waiting: number[] = [];

  constructor(
    readonly jobs: readonly ReplayJob[],
    readonly choose: ((job: ReplayJob) => JobChoice) | undefined,
    readonly given: (k: number, outcome: JobOutcome) => void,
  ) {}

  /** The index of the next job to replay; undefined when none may run now. */
  take(): number | undefined {
    for (let w = 0; w < this.#waiting.length; w++) {
      const k = this.#waiting[w];
      const c = this.choose?.(this.jobs[k]);
      if (c === 'wait') continue;
      this.#waiting.splice(w--, 1);
      if (c === undefined) return k;
      this.given(k, c);
    }
    while (this.#next < this.jobs.length) {
      const k = this.#next++;
      const c = this.choose?.(this.jobs[k]);
      if (c === 'wait') this.#waiting.push(k);
      else if (c === undefined) return k;
      else this.given(k, c);
    }
    return undefined;
  }

  /** The first job that waits, to replay anyway (nothing else runs, so what it waits for never comes). */
  force(): number | undefined {
    return this.#waiting.shift();
  }
}

/** Messages a worker sends: progress of the job it runs, or the job's outcome. */
export type WorkerMessage =
  | { readonly kind: 'progress'; readonly id: number; readonly done: number }
  | { readonly kind: 'done'; readonly outcome: JobOutcome };

/** How long a thread runs slices before it takes its messages (this thread: the workers' outcomes). */
const TURN_MS = 10;

/** Where a run's jobs replay, up to OPEN_JOBS at once: this thread, or one worker thread. */
interface Lane {
  inFlight: number;
  /** Start job `k` of the run. */
  send(k: number): void;
}

/** What a lane tells the run of its jobs. */
interface RunTold {
  progress(id: number, done: number): void;
  done(outcome: JobOutcome): void;
}

/**
 * Open jobs replayed side by side (Note [Best first]) in turns of TURN_MS,
 * between which the thread takes its messages (a worker the jobs it is
 * sent, this thread the workers' outcomes, which raise the bars), each turn
 * set off by `defer`. Without `defer` nothing comes in between: the owner
 * runs the turns itself (untilDone), with no timer, which the page's worker
 * (no setImmediate there) and a pool without workers want.
 */
export class Turns {
  readonly #running = new BestFirst();
  #scheduled = false;
  #stopped = false;

  constructor(
    readonly onOutcome: (outcome: JobOutcome) => void,
    readonly defer?: (turn: () => void) => void,
  ) {}

  add(job: OpenJob): void {
    this.#running.add(job);
    this.#schedule();
  }

  /** No more turns (the run is over, or failed). */
  stop(): void {
    this.#stopped = true;
  }

  /** Run turns here until no job is open (or stop): jobs added meanwhile run too. */
  untilDone(): void {
    while (!this.#stopped && this.#running.size > 0) this.#turn();
  }

  #schedule(): void {
    if (this.defer === undefined || this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    this.defer(() => {
      this.#scheduled = false;
      this.#turn();
      if (this.#running.size > 0) this.#schedule();
    });
  }

  #turn(): void {
    const until = performance.now() + TURN_MS;
    while (!this.#stopped && this.#running.size > 0 && performance.now() < until) {
      const outcome = this.#running.step();
      if (outcome !== undefined) this.onOutcome(outcome);
    }
  }
}

/** This thread's lane (Note [Worker threads]). */
class LocalLane implements Lane {
  inFlight = 0;
  readonly turns: Turns;

  constructor(
    readonly input: ReplayInput,
    readonly jobs: readonly ReplayJob[],
    readonly startProcess: StartProcess,
    readonly told: RunTold,
    defer: ((turn: () => void) => void) | undefined,
  ) {
    this.turns = new Turns((outcome) => {
      this.inFlight--;
      told.done(outcome);
    }, defer);
  }

  send(k: number): void {
    const job = this.jobs[k];
    this.inFlight++;
    this.turns.add(new OpenJob(this.input, job, this.startProcess, (n) => this.told.progress(job.id, n)));
  }
}

/** A worker thread's lane: the jobs are posted to it, and it answers with their progress and outcomes. */
class WorkerLane implements Lane {
  inFlight = 0;

  constructor(
    readonly worker: Worker,
    readonly jobs: readonly ReplayJob[],
  ) {}

  send(k: number): void {
    this.inFlight++;
    this.worker.postMessage(this.jobs[k]);
  }
}

/**
 * The pool (Note [Worker threads]): this thread replays jobs, and so does
 * each worker thread beside it; jobs are dealt to whichever lane has room,
 * in the order the queue gives them.
 */
class ThreadPool implements ReplayPool {
  readonly #threads: Worker[];
  /** Why a worker is gone, once one is (a later run is refused rather than left waiting). */
  #broken: Error | undefined;
  #closing = false;

  constructor(
    readonly input: ReplayInput,
    readonly startProcess: StartProcess,
    module: URL | undefined,
    shared: ReplayInput | undefined,
    readonly workers: number,
  ) {
    this.#threads = Array.from({ length: module === undefined ? 0 : workers }, () => {
      const w = new Worker(module!, { workerData: shared });
      w.on('error', (e) => {
        this.#broken ??= e instanceof Error ? e : new Error(String(e));
      });
      w.on('exit', (code) => {
        if (!this.#closing) this.#broken ??= new Error(`an advise worker stopped (exit ${code})`);
      });
      return w;
    });
  }

  run(
    jobs: readonly ReplayJob[],
    onEvents: (delta: number) => void,
    onOutcome?: (outcome: JobOutcome) => void,
    choose?: (job: ReplayJob) => JobChoice,
  ): Promise<JobOutcome[]> {
    return new Promise((resolve, reject) => {
      if (this.#broken !== undefined) {
        reject(this.#broken);
        return;
      }
      const plans = this.input.plans;
      const outcomes = new Array<JobOutcome>(jobs.length);
      const index = new Map(jobs.map((j, k) => [j.id, k]));
      const reported = new Map<number, number>();
      let finished = 0;
      let settled = false;
      const cleanups: (() => void)[] = [];
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        for (const c of cleanups) c();
        if (error !== undefined) reject(error);
        else resolve(outcomes);
      };
      const progress = (id: number, done: number) => {
        onEvents(done - (reported.get(id) ?? 0));
        reported.set(id, done);
      };
      const done = (k: number, o: JobOutcome) => {
        progress(o.id, plans[jobs[k].trace].events);
        outcomes[k] = o;
        onOutcome?.(o);
        finished++;
      };
      const queue = new JobQueue(jobs, choose, done);
      const told: RunTold = {
        progress: (id, n) => {
          if (!settled) progress(id, n);
        },
        done: (o) => {
          if (settled) return;
          done(index.get(o.id)!, o);
          pump();
        },
      };
      // With workers, this thread's turns let their outcomes in (a turn that throws fails the run, as a
      // worker's error does); alone, it runs its jobs straight through, and what throws rejects the run.
      const alone = this.#threads.length === 0;
      const defer = (turn: () => void) =>
        setImmediate(() => {
          try {
            turn();
          } catch (e) {
            settle(e);
          }
        });
      const local = new LocalLane(this.input, jobs, this.startProcess, told, alone ? undefined : defer);
      cleanups.push(() => local.turns.stop());
      const lanes: Lane[] = [local];
      for (const w of this.#threads) {
        const lane = new WorkerLane(w, jobs);
        lanes.push(lane);
        const onMessage = (m: WorkerMessage) => {
          if (m.kind === 'progress') told.progress(m.id, m.done);
          else {
            lane.inFlight--;
            told.done(m.outcome);
          }
        };
        const onError = (e: unknown) => settle(e instanceof Error ? e : new Error(String(e)));
        const onExit = (code: number) => {
          if (!this.#closing) onError(new Error(`an advise worker stopped (exit ${code})`));
        };
        w.on('message', onMessage);
        w.on('error', onError);
        w.on('exit', onExit);
        cleanups.push(() => {
          w.off('message', onMessage);
          w.off('error', onError);
          w.off('exit', onExit);
        });
      }
      // Each lane runs up to OPEN_JOBS side by side (Note [Best first]), dealt in turn.
      const pump = () => {
        for (;;) {
          let sent = false;
          for (const lane of lanes) {
            if (lane.inFlight >= OPEN_JOBS) continue;
            const k = queue.take();
            if (k === undefined) break;
            lane.send(k);
            sent = true;
          }
          if (sent) continue;
          // Nothing runs and jobs wait: their wait cannot end, so the first runs.
          const k = lanes.every((l) => l.inFlight === 0) ? queue.force() : undefined;
          if (k === undefined) break;
          local.send(k);
        }
        if (finished === jobs.length) settle();
      };
      pump();
      if (alone) local.turns.untilDone();
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(this.#threads.map((w) => w.terminate()));
  }
}

/**
 * A copy of `value` whose typed arrays live in SharedArrayBuffers, so that
 * posting it to a worker shares their bytes instead of copying them. Arrays
 * and plain objects are copied (an object reached twice stays one object);
 * anything else is left for the structured clone.
 */
function shareArrays<T>(value: T): T {
  const seen = new Map<object, unknown>();
  const copy = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    const prior = seen.get(v);
    if (prior !== undefined) return prior;
    let out: unknown;
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
      const Ctor = v.constructor as new (
        buffer: SharedArrayBuffer,
      ) => ArrayBufferView & { set(a: unknown): void };
      const shared = new Ctor(new SharedArrayBuffer(v.byteLength));
      shared.set(v);
      out = shared;
    } else if (Array.isArray(v)) {
      const a: unknown[] = [];
      seen.set(v, a);
      for (const x of v) a.push(copy(x));
      return a;
    } else if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null) {
      const o: Record<string, unknown> = {};
      seen.set(v, o);
      for (const [k, x] of Object.entries(v)) o[k] = copy(x);
      return o;
    } else out = v;
    seen.set(v, out);
    return out;
  };
  return copy(value) as T;
}
