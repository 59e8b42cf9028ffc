/**
 * The page's engine, in a Web Worker: it reads each dropped snapshot as a
 * stream (read-stream.ts), answers it by the path `vmmkit report` takes
 * (page-data.ts: replay, as recorded, the cap, verdicts, what holds the
 * peak), then searches advise's setting and sends it after (Note [The
 * answer, then the advice]), compares two or sums up a job's ranks (src/replay/
 * analyse), and
 * answers again under the settings box's values as the user types. The
 * snapshots stay here; only the page's data goes to the page. Nothing is
 * fetched: the files come from the page, the cost table is in the bundle.
 */
import costsJson from '../../../bench/results/h200-driver-costs.json' with { type: 'json' };
import { AllocConfError } from '../../alloc/errors.js';
import { readWhatIf, type WhatIf } from '../../cli/what-if-options.js';
import { startOnSimulator } from '../../entry/replay-processes.js';
import { advise } from '../../replay/advise/advise.js';
import type { AdviseProcesses } from '../../replay/advise/pool.js';
import { compareSnapshots } from '../../replay/analyse/compare.js';
import { rankAdviceOf, summariseRanks } from '../../replay/analyse/ranks.js';
import type { AsRecorded } from '../../replay/engine/as-recorded.js';
import { parseCostTable } from '../../replay/engine/cost-table.js';
import { replay } from '../../replay/engine/replay.js';
import { planReplay, type TracePlan } from '../../replay/engine/trace-plan.js';
import type { MemorySnapshot } from '../../replay/read/snapshot.js';
import { withVendor } from '../../replay/read/vendor.js';
import { layoutMap } from '../../report/address-map.js';
import { snapshotStacks } from '../../report/answer.js';
import { adviceFor, pageData } from '../../report/page-data.js';
import { ReplayRecorder } from '../../report/recorder.js';
import type {
  Answers,
  FromWorker,
  PageSettings,
  ServedFile,
  SnapshotPage,
  StateAt,
  ToWorker,
} from '../protocol.js';
import { PageBuffer } from './edges/page-buffer.js';
import { readSnapshotStream } from './read-stream.js';

interface WorkerScope {
  postMessage(message: FromWorker): void;
  onmessage: ((event: { data: ToWorker }) => void) | null;
}
const scope = globalThis as unknown as WorkerScope;

// advise's bars live in a SharedArrayBuffer (pool.ts); a page that is not cross-origin isolated (a report opened
// from a file) has none, and in this one thread a plain ArrayBuffer is the same thing (Note [Browser edges]).
// The pickle reader works on Node's Buffer; the page has its own (edges/page-buffer.ts).
const globals = globalThis as unknown as { SharedArrayBuffer?: unknown; Buffer?: unknown };
if (typeof globals.SharedArrayBuffer === 'undefined') globals.SharedArrayBuffer = ArrayBuffer;
globals.Buffer ??= PageBuffer;

/** The package's cost table, as `vmmkit replay` and `report` use it by default. */
const COSTS = parseCostTable(costsJson, 'h200-driver-costs.json');

/** advise in this one thread (the page starts no worker threads), on simulated H200s as `vmmkit advise` runs. */
const ADVISE: AdviseProcesses = { startProcess: startOnSimulator(), workerModule: undefined };

/** What the worker holds: the snapshots read, by name, in the order dropped, and how each was last answered. */
interface Loaded {
  readonly snapshots: { readonly name: string; readonly snapshot: MemorySnapshot }[];
  /** Per snapshot, what its last answer replayed with: a state at a point replays the same way. */
  runs: {
    readonly whatIf: WhatIf;
    readonly plan: TracePlan;
    readonly limits: readonly (number | undefined)[];
    readonly asRecorded: AsRecorded;
  }[];
  /** Each snapshot's plan in the last answer, as its ranks were summed up with. */
  plans: TracePlan[];
}

function post(message: FromWorker): void {
  scope.postMessage(message);
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The page's data for each snapshot under `settings` (the what-if options, read as the CLI reads them). */
async function answerAll(loaded: Loaded, settings: PageSettings | undefined): Promise<Answers> {
  const whatIf = readWhatIf({
    allocConf: blankToUndefined(settings?.allocConf),
    memoryLimit: blankToUndefined(settings?.memoryLimit),
    device: blankToUndefined(settings?.device),
  });
  const pages: SnapshotPage[] = [];
  const runs: Loaded['runs'] = [];
  // Each snapshot planned once, as `vmmkit report` plans it: its page, the comparison and the ranks take the plan.
  const plans: TracePlan[] = [];
  const startProcess = startOnSimulator(whatIf.device);
  for (const { name, snapshot } of loaded.snapshots) {
    const plan = planReplay(snapshot, {
      memoryLimit: whatIf.memoryLimit,
      deviceMemory: whatIf.device?.totalMemory,
    });
    plans.push(plan);
    const { data, recorded } = await pageData(snapshot, name, {
      title: name,
      plan,
      allocators: whatIf.allocators,
      allocConf: whatIf.allocConf,
      memoryLimit: whatIf.memoryLimit,
      startProcess,
      adviseProcesses: ADVISE,
      costs: COSTS,
      onProgress: (fraction) => post({ kind: 'progress', file: name, phase: 'replaying', fraction }),
    });
    pages.push({ name, data });
    runs.push({
      whatIf,
      plan: recorded.plan,
      limits: recorded.answer.limits,
      asRecorded: recorded.answer.asRecorded,
    });
  }
  loaded.runs = runs;
  loaded.plans = plans;
  const snapshots = loaded.snapshots.map((s) => s.snapshot);
  const names = loaded.snapshots.map((s) => s.name);
  const what = { allocConf: whatIf.allocConf, memoryLimit: whatIf.memoryLimit, startProcess };
  const compare =
    snapshots.length === 2
      ? compareSnapshots(snapshots[0], snapshots[1], { ...what, plans: [plans[0], plans[1]] })
      : null;
  const ranks =
    snapshots.length >= 3
      ? // Its one setting for every rank is searched after the page is drawn (adviseAll).
        await summariseRanks(snapshots, { ...what, names, plans, advise: false })
      : null;
  return { pages, compare, ranks };
}

/**
 * advise's setting for each snapshot of the answer just posted (Note [The answer, then the advice]), one
 * message each; it stops where a newer settings message waits, whose answer would replace this one.
 */
async function adviseAll(loaded: Loaded, id: number, stale: () => boolean): Promise<void> {
  // Ranks first: their one setting for every rank is what their panel is for.
  const snapshots = loaded.snapshots.map((s) => s.snapshot);
  if (snapshots.length >= 3 && loaded.runs.length === snapshots.length && !stale()) {
    post({ kind: 'progress', file: 'the ranks', phase: 'advising', fraction: 0 });
    const found = await advise(snapshots, {
      memoryLimit: loaded.runs[0].whatIf.memoryLimit,
      plans: loaded.plans,
      processes: ADVISE,
    });
    post({ kind: 'ranks-advised', id, advice: rankAdviceOf(found) });
  }
  for (const [page, { name, snapshot }] of loaded.snapshots.entries()) {
    const run = loaded.runs[page];
    if (stale() || run === undefined) return;
    post({ kind: 'progress', file: name, phase: 'advising', fraction: 0 });
    const advice = await adviceFor(snapshot, {
      memoryLimit: run.whatIf.memoryLimit,
      asRecorded: run.asRecorded,
      plan: run.plan,
      processes: ADVISE,
    });
    post({ kind: 'advised', id, page, advice });
  }
}

/** The bytes of a dropped file, or of one the `vmmkit open` server offers (fetched from it as a stream). */
async function streamOf(file: File | ServedFile): Promise<ReadableStream<Uint8Array>> {
  if (file instanceof File) return file.stream();
  const response = await fetch(file.url);
  if (!response.ok || response.body === null) throw new Error(`the server answered ${response.status}`);
  return response.body;
}

/** One model's allocator state right after `event`: replayed as its last answer was, captured there. */
function stateAt(
  loaded: Loaded,
  ask: { snapshot: number; device: number; allocator: string; event: number },
): StateAt {
  const source = loaded.snapshots[ask.snapshot];
  const run = loaded.runs[ask.snapshot];
  if (source === undefined || run === undefined) throw new Error('no such snapshot is loaded');
  const factory = run.whatIf.allocators.find((a) => a.name === ask.allocator);
  if (factory === undefined) throw new Error(`no allocator ${ask.allocator} in the last answer`);
  const recorder = new ReplayRecorder(run.plan, {
    buckets: 1,
    captureFirstOom: false,
    captureAtEvent: new Map([[`0:${ask.device}`, ask.event]]),
  });
  replay(source.snapshot, {
    allocators: [factory],
    allocConf: run.whatIf.allocConf,
    startProcess: startOnSimulator(run.whatIf.device),
    plan: run.plan,
    deviceMemoryLimits: run.limits,
    keepEvents: false,
    onStep: recorder.onStep,
  });
  const layout = recorder.recordings(0).find((r) => r.device === ask.device)?.layout;
  if (layout === undefined) throw new Error(`${ask.allocator} served no event from ${ask.event} on`);
  const stackOf = snapshotStacks({ snapshot: source.snapshot, plan: run.plan });
  const { svg } = layoutMap(layout.description, {
    blocks: layout.blocks,
    stackOf: (block) => stackOf(ask.device, block),
    title: `${ask.allocator}, device ${ask.device}, right after event ${layout.event.toLocaleString('en-US')}: hover over a block for its stack`,
    attributes: { allocator: ask.allocator, device: String(ask.device), event: String(layout.event) },
    idPrefix: `state-${ask.snapshot}-${ask.device}`,
    width: 1200,
  });
  return {
    ...ask,
    event: layout.event,
    reservedBytes: layout.reservedBytes,
    allocatedBytes: layout.allocatedBytes,
    svg,
  };
}

function blankToUndefined(s: string | undefined): string | undefined {
  return s === undefined || s.trim() === '' ? undefined : s;
}

/**
 * Which field a refusal of the what-if options is about, and its message
 * without the CLI's option name (the page shows it under the field).
 */
function refusal(e: unknown): { field: keyof PageSettings; message: string } | undefined {
  if (e instanceof AllocConfError) return { field: 'allocConf', message: e.message };
  if (!(e instanceof Error) || e.name !== 'UsageError') return undefined;
  const m = /^--(alloc-conf|memory-limit|device|device-memory): ?(.*)$/s.exec(e.message);
  if (m === null) return undefined;
  const field = m[1] === 'alloc-conf' ? 'allocConf' : m[1] === 'memory-limit' ? 'memoryLimit' : 'device';
  return { field, message: m[2] };
}

function startWorker(): void {
  let loaded: Loaded = { snapshots: [], runs: [], plans: [] };
  // Settings messages are answered in order; one typed while another runs waits, and only the newest is answered.
  let queue: Promise<void> = Promise.resolve();
  let newest = 0;
  scope.onmessage = ({ data: message }) => {
    if (message.kind === 'settings') newest = message.id;
    queue = queue.then(async () => {
      if (message.kind === 'load') {
        const start = performance.now();
        const snapshots: Loaded['snapshots'] = [];
        for (const file of message.files) {
          try {
            const snapshot = await readSnapshotStream(await streamOf(file), file.size, (read, total) =>
              post({
                kind: 'progress',
                file: file.name,
                phase: 'reading',
                fraction: total > 0 ? read / total : 1,
              }),
            );
            // `vmmkit open --vendor` names the machine over the snapshot's own guess.
            snapshots.push({
              name: file.name,
              snapshot: withVendor(snapshot, 'url' in file ? file.vendor : undefined),
            });
          } catch (e) {
            post({ kind: 'failed', file: file.name, message: messageOf(e) });
            return;
          }
        }
        loaded = { snapshots, runs: [], plans: [] };
        try {
          let answers: Answers;
          try {
            answers = await answerAll(loaded, message.settings);
          } catch (e) {
            // Settings the engine refuses are said under their field; the files are answered without them.
            const r = refusal(e);
            if (r === undefined) throw e;
            post({ kind: 'refused', id: message.id, ...r });
            answers = await answerAll(loaded, undefined);
          }
          post({ kind: 'loaded', id: message.id, ...answers, ms: performance.now() - start });
          await adviseAll(loaded, message.id, () => newest !== message.id);
        } catch (e) {
          post({ kind: 'failed', file: null, message: messageOf(e) });
        }
        return;
      }
      if (message.kind === 'state') {
        try {
          post({ kind: 'state', id: message.id, ...stateAt(loaded, message) });
        } catch (e) {
          post({ kind: 'failed', file: null, message: messageOf(e) });
        }
        return;
      }
      if (message.id !== newest) return;
      const start = performance.now();
      try {
        const answers = await answerAll(loaded, message.settings);
        post({ kind: 'answered', id: message.id, ...answers, ms: performance.now() - start });
        await adviseAll(loaded, message.id, () => newest !== message.id);
      } catch (e) {
        const r = refusal(e);
        if (r !== undefined) post({ kind: 'refused', id: message.id, ...r });
        else post({ kind: 'failed', file: null, message: messageOf(e) });
      }
    });
  };
}

startWorker();
