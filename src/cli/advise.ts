/**
 * `vmmkit advise <snapshot.pickle[.gz]>... [--memory-limit SIZE] [--tolerance PCT,SIZE] [--workers N] [--json]`
 *
 * Which PYTORCH_CUDA_ALLOC_CONF should this recorded workload run with? The
 * snapshot's trace is replayed through the exact model of PyTorch 2.11's
 * allocator under a search of its settings (src/replay/advise/advise.ts), on
 * worker threads beside this one (--workers, Note [Worker threads]), and the command prints
 * the ranked settings beside the recorded run's real peak, PyTorch under
 * the recorded settings, vmmkit's own allocator and the page bound no
 * allocator can go below; then the one line to use (the simplest of the
 * settings within --tolerance of the best, Note [Ranking]), with its
 * predicted peak and its margin to the limit; then warnings for
 * combinations that blow up on this snapshot. Several snapshots (the ranks
 * of one job, or several runs of it) are advised together: every setting is
 * replayed on each and ranked by its worst. With --memory-limit every run is
 * capped as set_per_process_memory_fraction would cap it, a setting must fit
 * to rank first, and garbage_collection_threshold joins the search. With
 * --json: exactly one object on stdout.
 *
 * Exit codes: 0 advice given; 1 bad input (a missing or corrupt file, a
 * pickle that is not a snapshot, one with no history), one line; 2 a usage
 * mistake, one line with the usage; 3 no setting fits under the limit: the
 * verdict first, no line to paste, `recommended` null in the JSON.
 */

import { adviseProcesses, startOnSimulator } from '../entry/replay-processes.js';
import {
  type Advice,
  type AdviceBaseline,
  type AdviceCandidate,
  advise,
  type Tolerance,
} from '../replay/advise/advise.js';
import { splitKeys } from '../replay/advise/search.js';
import { rankLines } from '../replay/analyse/lines.js';
import { summariseRanks } from '../replay/analyse/ranks.js';
import { ALLOCATOR_REGISTRY } from '../replay/engine/allocators.js';
import { type AsRecorded, planUnder, reproduceRecording } from '../replay/engine/as-recorded.js';
import { replay } from '../replay/engine/replay.js';
import { planReplay, type TracePlan } from '../replay/engine/trace-plan.js';
import { asRecordedLines, capLines, graphLines } from '../replay/engine/verdict.js';
import { capInForce, leastRecordedCap } from '../replay/engine/what-if.js';
import { loadSnapshotFile } from '../replay/read/load.js';
import type { MemorySnapshot } from '../replay/read/snapshot.js';
import {
  allocatorOwner,
  allocConfName,
  type SnapshotVendor,
  vendorGuessOf,
  vendorLines,
  vendorOf,
  withVendor,
} from '../replay/read/vendor.js';
import { ByteSizeError, parseByteSize } from '../util/byte-size.js';
import { formatBytes } from '../util/format.js';
import { parseCommand, UsageError, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runCommand } from './command.js';
import { ADVISE_SPEC } from './command-specs.js';
import { asRecordedJson, checkHistory, devicesUsed, loadProgress } from './replay.js';
import { deviceFor, readWhatIf } from './what-if-options.js';

export const ADVISE_USAGE = usageOf(ADVISE_SPEC);

/** What each exit code means, for --help and the README. */
export const ADVISE_EXIT_CODES = ADVISE_SPEC.exitCodes;

/** Exit code when nothing fits (Note [Ranking]): a script must not paste a line that runs out. */
export const NOTHING_FITS = 3;

/** Rows of the ranked table (the rest are in --json). */
const TOP = 10;

/** Run `vmmkit advise` with its arguments; returns the exit code. */
export function adviseCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  return runCommand(io, 'advise', ADVISE_USAGE, () => run(io, argv));
}

async function run(io: CliOutput, argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(`usage: ${ADVISE_USAGE}`);
    io.out(ADVISE_EXIT_CODES);
    return 0;
  }
  // One snapshot file or several (the ranks of one job, or several runs of it).
  const { values, operands: args } = parseCommand(ADVISE_SPEC, argv);
  const json = values.json === true;
  const workersText = values.workers;
  const toleranceText = values.tolerance;
  const {
    memoryLimit: given,
    device: named,
    vendor,
  } = readWhatIf({
    allocators: ['pytorch'],
    memoryLimit: values['memory-limit'],
    device: values.device,
    deviceMemory: values['device-memory'],
    vendor: values.vendor,
  });
  const tolerance = toleranceText === undefined ? undefined : parseTolerance(toleranceText);
  let workers: number | undefined;
  if (workersText !== undefined) {
    if (!/^\d+$/.test(workersText) || Number(workersText) > 256)
      throw new UsageError(`--workers: '${workersText}' is not a number of threads (0 to 256)`);
    workers = Number(workersText);
  }
  const snapshots: MemorySnapshot[] = [];
  const recorded: AsRecorded[] = [];
  for (const file of args) {
    const snapshot = withVendor(await loadSnapshotFile(file, { onProgress: loadProgress(io) }), vendor);
    const device = deviceFor(named, snapshot);
    const plan = planReplay(snapshot, { memoryLimit: given, deviceMemory: device?.totalMemory });
    checkHistory(file, plan);
    snapshots.push(snapshot);
    // Every answer starts with the recording reproduced (Note [As recorded]).
    recorded.push(reproduceRecording(snapshot, { plan, startProcess: startOnSimulator(device) }));
  }
  // No cap given: advice must hold under any cap the recordings allow, so it is for the least of them.
  const memoryLimit = given ?? leastRecordedCap(recorded);
  const plans = snapshots.map((snapshot, k) => {
    const ar = recorded[k];
    const limits = ar.devices.map(() => memoryLimit);
    return planUnder(
      snapshot,
      ar.plan,
      ar.devices.map((d) => d.cap),
      limits,
    );
  });
  const advice = await advise(snapshots, {
    plans,
    memoryLimit,
    tolerance,
    workers,
    processes: adviseProcesses(),
    onProgress: io.progress === undefined ? undefined : (done, total) => io.progress!(done / total),
  });
  io.progress?.(-1);
  // Several ranks (files, or devices of one): which peaks, which runs out first, advise's one setting (analyse/ranks.ts).
  const ranks =
    args.length > 1 || recorded.some((ar) => ar.devices.length > 1)
      ? await summariseRanks(snapshots, {
          names: args,
          plans: recorded.map((ar) => ar.plan),
          asRecorded: recorded,
          memoryLimit: given,
          startProcess: startOnSimulator(deviceFor(named, snapshots[0])),
          advice,
        })
      : null;
  if (json)
    io.out(
      JSON.stringify({
        vendor: vendorGuessOf(snapshots[0]).vendor,
        vendorEvidence: vendorGuessOf(snapshots[0]).evidence,
        asRecorded: recorded.map(asRecordedJson),
        ...(toJson(advice, args) as object),
        ranks,
        // Note [Answers from a late start]: other settings' figures from a mid-run window are estimates.
        exact: !plans.some((p) => p.startedMidRun),
      }),
    );
  else {
    for (const [k, ar] of recorded.entries())
      for (const line of asRecordedLines(ar)) io.out(args.length > 1 ? `${args[k]}: ${line}` : line);
    for (const line of vendorLines(vendorGuessOf(snapshots[0]))) io.out(line);
    if (given === undefined && memoryLimit !== undefined)
      for (const [k, ar] of recorded.entries())
        for (const line of capLines(capInForce(ar, undefined), ar))
          io.out(
            `${args.length > 1 ? `${args[k]}: ` : ''}${line.replace(/; every answer below.*$/, '')}; the advice holds for the least of it`,
          );
    for (const line of text(plans, args, advice, vendorOf(snapshots[0]))) io.out(line);
    if (ranks !== null) for (const line of ['', ...rankLines(ranks)]) io.out(line);
  }
  // The notes after the answer, whose first line is the recording reproduced.
  for (const line of notes(plans, args, advice)) io.err(`note: ${line}`);
  // Note [Recording CUDA graphs]: what the recording and a snapshot's pools leave open, as replay says it.
  plans.forEach((plan, k) => {
    for (const line of graphLines(plan, snapshots[k]))
      io.err(`note: ${args.length > 1 ? `${args[k]}: ` : ''}${line}`);
  });
  for (const line of lateStartLines(snapshots, plans, args, advice, memoryLimit)) io.err(`note: ${line}`);
  return advice.recommended === null ? NOTHING_FITS : 0;
}

/**
 * A snapshot that starts mid-run says what the recorded settings inherited
 * from the unrecorded past, not what the advised ones would have (Note
 * [Answers from a late start]): the advice's peak is from the recorded
 * start, an estimate, so the note says so beside the compacted start's
 * estimate and the bound that holds.
 */
function lateStartLines(
  snapshots: readonly MemorySnapshot[],
  plans: readonly TracePlan[],
  files: readonly string[],
  a: Advice,
  memoryLimit: number | undefined,
): string[] {
  const r = a.recommended;
  if (r === null) return [];
  const out: string[] = [];
  snapshots.forEach((snapshot, k) => {
    if (!plans[k].startedMidRun) return;
    const pytorch = ALLOCATOR_REGISTRY.filter((f) => f.name === 'pytorch');
    const at = (start: 'recorded' | 'compacted') =>
      replay(snapshot, {
        allocators: pytorch,
        allocConf: r.allocConf,
        plan: plans[k],
        memoryLimit,
        start,
        keepEvents: false,
        // advise's own processes: its peaks are a simulated H200's (adviseProcesses).
        startProcess: startOnSimulator(),
      }).allocators[0].peakReservedBytes;
    const [recorded, compacted] = [at('recorded'), at('compacted')];
    const estimates =
      recorded === compacted
        ? `${formatBytes(recorded)} from both the recorded and a compacted start`
        : `${formatBytes(recorded)} from the recorded start and ${formatBytes(compacted)} from a compacted one`;
    out.push(
      `${files.length > 1 ? `${files[k]}: ` : ''}the snapshot starts mid-run, so the figures for ${r.allocConf || 'the defaults'} are estimates (${estimates}): what it would have made of the unrecorded past can raise them; no allocator needs less than ${formatBytes(a.bound.peakBytes)}`,
    );
  });
  return out;
}

/**
 * `--tolerance 2%`, `--tolerance 128MiB`, or both (`2%,128MiB`: the larger
 * of the two on the best peak); a part left out is 0 (Note [Ranking]).
 */
export function parseTolerance(text: string): Tolerance {
  let fraction: number | undefined;
  let bytes: number | undefined;
  for (const part of text.split(',').map((p) => p.trim())) {
    const pct = /^(\d+(?:\.\d+)?)%$/.exec(part);
    if (pct !== null && fraction === undefined) {
      fraction = Number(pct[1]) / 100;
      if (!(fraction < 1))
        throw new UsageError(`--tolerance: ${part} is all of the peak or more; give less than 100%`);
      continue;
    }
    if (pct === null && bytes === undefined && part !== '') {
      try {
        bytes = parseByteSize(part);
        continue;
      } catch (e) {
        if (!(e instanceof ByteSizeError)) throw e;
      }
    }
    throw new UsageError(
      `--tolerance: '${text}' is not a percentage, a size or both (write 2%, 128MiB or 2%,128MiB)`,
    );
  }
  return { fraction: fraction ?? 0, bytes: bytes ?? 0 };
}

function notes(plans: readonly TracePlan[], files: readonly string[], a: Advice): string[] {
  const out: string[] = [];
  plans.forEach((plan, k) => {
    if (plan.startedMidRun)
      out.push(
        `${files.length > 1 ? `${files[k]}: ` : ''}the trace started mid-run: ${plan.reconstructedBlocks} block(s) live before its first event were allocated first`,
      );
  });
  const failed = a.candidates.filter((c) => c.error !== null);
  if (failed.length > 0)
    out.push(
      `${failed.length} setting(s) could not be replayed, the first: ${failed[0].allocConf}: ${failed[0].error}`,
    );
  return out;
}

/** JSON has no Infinity or undefined; the document is Advice as it is, with the files in their order. */
function toJson(a: Advice, files: readonly string[]): unknown {
  return {
    verdict: a.verdict,
    recommended: a.recommended,
    equals: a.equals,
    lowest: a.lowest,
    withoutExpandableSegments: a.withoutExpandableSegments,
    tolerance: a.tolerance,
    candidates: a.candidates,
    bound: a.bound,
    boundSnapshot: a.boundSnapshot,
    recorded: a.recorded,
    vmmkit: a.vmmkit,
    memoryLimit: a.memoryLimit,
    peakRequestedBytes: a.peakRequestedBytes,
    snapshots: files,
    traps: a.traps,
    knownTrap: a.knownTrap,
    search: a.search,
  };
}

function text(
  plans: readonly TracePlan[],
  files: readonly string[],
  a: Advice,
  vendor: SnapshotVendor,
): string[] {
  const name = allocConfName(vendor);
  const whose = allocatorOwner(vendor);
  const display = (conf: string) => (conf === '' ? `(empty: ${whose}'s defaults)` : conf);
  // A window that starts mid-run gives estimates for other settings, never a figure that holds
  // (Note [Answers from a late start]): each is marked '~', and the notes give the bound that holds.
  const estimated = plans.some((p) => p.startedMidRun);
  const approx = estimated ? '~' : '';
  const figures = (c: Parameters<typeof figuresOf>[0], exact = false) => figuresOf(c, exact ? '' : approx);
  // The verdict first: what to set and by how much it fits, or that nothing does.
  const lines = [
    a.recommended === null
      ? a.verdict
      : `${estimated ? 'advice, estimated from a window that starts mid-run' : 'advice'}: ${a.verdict}`,
    '',
  ];
  plans.forEach((plan, k) => {
    lines.push(
      `${files.length > 1 ? `${files[k]}: ` : 'trace: '}${plan.events.toLocaleString('en-US')} events (${plan.allocs.toLocaleString('en-US')} allocs) on ${devicesUsed(plan)} device(s); peak requested ${formatBytes(plan.peakRequestedBytes)}`,
    );
  });
  if (files.length > 1)
    lines.push(`${files.length} snapshots: each setting replayed on every one and ranked by its worst`);
  const recordedConf = a.recorded.allocConf;
  // null: the snapshot records no settings at all (an older PyTorch's), '' that the variable was unset.
  const recordedSettings =
    recordedConf === null
      ? `${name} not recorded`
      : recordedConf
        ? `${name}=${recordedConf}`
        : `${name} unset`;
  // With no segment events the recorded run has no peak of its own (only the state it was dumped in).
  lines.push(
    a.recorded.peakReservedBytes !== null
      ? `recorded: ${whose} reserved ${formatBytes(a.recorded.peakReservedBytes)} at its peak, ${recordedSettings}`
      : `recorded: ${recordedSettings} (no segment events: the run's own peak is not in the snapshot)`,
  );
  if (a.memoryLimit !== null) lines.push(`memory limit: ${formatBytes(a.memoryLimit)} per device`);
  const s = a.search;
  lines.push(
    `searched ${s.proposed} settings in ${s.replays} replays (${s.workers === 0 ? 'in one thread' : `in this thread and ${s.workers} worker thread${s.workers === 1 ? '' : 's'}`}, ${(s.wallMs / 1000).toFixed(1)} s)`,
  );

  const head = ['', name, 'peak reserved', 'vs recorded', 'OOMs', 'driver calls'];
  const top = distinctTop(a.candidates, TOP);
  const rows = top.map(({ c, same, rank }) => [
    String(rank),
    display(c.allocConf) + (same > 0 ? `  (+${same} the same)` : ''),
    // The recorded settings' own row is the recording reproduced, exact from any start.
    ...figures(c, c.allocConf === a.recorded.replayed.allocConf),
  ]);
  const rest = a.candidates.length - top.reduce((n, r) => n + 1 + r.same, 0);
  const baselines: string[][] = [];
  if (a.recorded.peakReservedBytes !== null)
    baselines.push([
      '',
      "the recorded run (PyTorch's own segment events)",
      formatBytes(a.recorded.peakReservedBytes),
      '1.000',
      '',
      '',
    ]);
  baselines.push([
    '',
    `${whose} with the recorded settings (${recordedLabel(recordedConf, a.recorded.replayed.allocConf)})`,
    // The recording reproduced: exact from any start.
    ...figures(a.recorded.replayed, true),
  ]);
  baselines.push(['', "vmmkit's own allocator", ...figures(a.vmmkit)]);
  const ratio = a.recorded.peakReservedBytes
    ? (a.bound.peakBytes / a.recorded.peakReservedBytes).toFixed(3)
    : '-';
  baselines.push([
    '',
    'lower bound: any allocator on 2 MiB pages',
    formatBytes(a.bound.peakBytes),
    ratio,
    '',
    '',
  ]);
  const all = [head, ...rows, ...baselines];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i === 1 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  lines.push('', fmt(head), ...rows.map(fmt));
  if (rest > 0) lines.push(`${' '.repeat(widths[0] + 2)}(${rest} more in --json)`);
  lines.push('', ...baselines.map(fmt));

  const r = a.recommended;
  const tol = formatBytes(a.tolerance.toleranceBytes);
  if (r === null) {
    // Nothing to paste: the verdict heads the output, and here is why again under the table.
    lines.push('', `no line to use: ${a.verdict}`);
  } else {
    lines.push('', `${name}=${r.allocConf}${r.allocConf === '' ? `   ${display('')}` : ''}`);
    const vs =
      a.recorded.peakReservedBytes !== null && r.ratioToRecorded !== null
        ? `, ${r.ratioToRecorded.toFixed(3)}x the recorded run's ${formatBytes(a.recorded.peakReservedBytes)}`
        : '';
    lines.push(`  predicted peak ${approx}${formatBytes(r.peakReservedBytes)}${vs}; ${r.verdict}`);
    if (a.memoryLimit !== null && r.headroomBytes !== null)
      lines.push(
        r.tight
          ? `  margin: only ${formatBytes(r.headroomBytes)} under the limit ${formatBytes(a.memoryLimit)}, less than the tolerance ${tol}; no setting fits with more room, and a run with other shapes may not fit`
          : `  margin: ${formatBytes(r.headroomBytes)} under the limit ${formatBytes(a.memoryLimit)} (${((r.headroomBytes / a.memoryLimit) * 100).toFixed(1)}%)`,
      );
    const equal = a.equals.length - 1;
    if (!r.tight)
      lines.push(
        `  the simplest of ${equal + 1} setting(s) within the tolerance ${tol} of the best${a.lowest === null ? '' : `; the lowest, ${a.lowest.allocConf}, reserves ${formatBytes(a.lowest.peakReservedBytes)} (${formatBytes(r.peakReservedBytes - a.lowest.peakReservedBytes)} less, within the tolerance: a setting fitted to this run's shapes)`}`,
      );
    lines.push(
      `  room left: ${formatBytes(r.peakReservedBytes - a.bound.peakBytes)} above the bound ${formatBytes(a.bound.peakBytes)}; vmmkit's own allocator reserves ${formatBytes(a.vmmkit.peakReservedBytes)}`,
    );
    // Expandable segments do not work with some features (NCCL buffer registration, MemPools): the best without them.
    const native = a.withoutExpandableSegments ?? undefined;
    if (r.expandableSegments && native !== undefined)
      lines.push(
        `  without expandable segments: ${name}=${native.allocConf}${native.allocConf === '' ? `   ${display('')}` : ''}; ${native.verdict}`,
      );
  }
  for (const t of a.traps) lines.push('', `warning: ${t.message}`);
  const k = a.knownTrap;
  if (k !== null && !a.traps.some((t) => t.allocConf === k.allocConf)) {
    const es = k.parts.find((p) => p.allocConf === 'expandable_segments:True');
    const vs =
      es === undefined
        ? ''
        : `, ${(k.peakReservedBytes / es.peakReservedBytes).toFixed(2)}x what expandable segments alone would (${formatBytes(es.peakReservedBytes)})`;
    lines.push(
      '',
      `note: the known trap ${k.allocConf} (${k.issue}) would reserve ${formatBytes(k.peakReservedBytes)} on this snapshot${vs}`,
    );
  }
  return lines;
}

/** The top rows, a run of candidates with the same figures shown once (the simplest, which ranks first). */
function distinctTop(
  candidates: readonly AdviceCandidate[],
  n: number,
): { c: AdviceCandidate; same: number; rank: number }[] {
  const out: { c: AdviceCandidate; same: number; rank: number }[] = [];
  candidates.forEach((c, k) => {
    const last = out.at(-1);
    if (last !== undefined && sameFigures(last.c, c)) last.same++;
    else if (out.length < n) out.push({ c, same: 0, rank: k + 1 });
  });
  return out;
}

function sameFigures(a: AdviceCandidate, b: AdviceCandidate): boolean {
  return (
    a.peakReservedBytes === b.peakReservedBytes &&
    a.ooms === b.ooms &&
    a.driverCalls === b.driverCalls &&
    a.error === b.error
  );
}

/** A table row's figures; `approx` marks an estimate ('~', Note [Answers from a late start]). */
function figuresOf(c: AdviceBaseline & { stoppedAt?: number; tight?: boolean }, approx: string): string[] {
  if (c.error !== null) return ['failed', '-', '-', '-'];
  const stopped = c.stoppedAt !== undefined && c.stoppedAt >= 0;
  return [
    // A stopped replay's peak is a lower bound (Note [Pruning]); a tight one fits by less than the tolerance.
    `${stopped ? '> ' : approx}${formatBytes(c.peakReservedBytes)}${c.tight ? ' (tight)' : ''}`,
    c.ratioToRecorded === null ? '-' : c.ratioToRecorded.toFixed(3),
    String(c.ooms),
    c.driverCalls.toLocaleString('en-US'),
  ];
}

/**
 * The recorded settings as the baseline row names them: the string the
 * snapshot records, and, where the search replayed them as another string
 * (one that decides every request of this trace alike: Note [Effective
 * settings]), that string too, so a recorded max_split_size_mb:512 that no
 * block reaches is not shown as the defaults.
 */
function recordedLabel(recorded: string | null, replayed: string): string {
  const keys = (c: string) =>
    splitKeys(c)
      .filter((k) => k !== '')
      .sort()
      .join(',');
  const name = (c: string) => (c === '' ? 'defaults' : c);
  if (recorded === null || keys(recorded) === keys(replayed)) return name(replayed);
  return `${name(recorded)}, replayed as ${replayed === '' ? 'the defaults' : replayed}`;
}
