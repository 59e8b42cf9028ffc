/**
 * `vmmkit advise <snapshot.pickle[.gz]> [--memory-limit SIZE] [--workers N] [--json]`
 *
 * Which PYTORCH_CUDA_ALLOC_CONF should this recorded workload run with? The
 * snapshot's trace is replayed through the exact model of PyTorch 2.11's
 * allocator under a search of its settings (src/replay/advise/advise.ts), on
 * worker threads (--workers, default one per core), and the command prints
 * the ranked settings beside the recorded run's real peak, PyTorch under
 * the recorded settings, vmmkit's own allocator and the page bound no
 * allocator can go below; then the one line to use, with its predicted peak
 * and verdict; then warnings for combinations that blow up. With
 * --memory-limit every run is capped as set_per_process_memory_fraction
 * would cap it, a setting must fit to rank first, and
 * garbage_collection_threshold joins the search. With --json: exactly one
 * object on stdout.
 *
 * A usage mistake is one line with the usage, exit 2; bad input (a missing
 * or corrupt file, a pickle that is not a snapshot, one with no history)
 * one line, exit 1.
 */
import {
  type Advice,
  type AdviceBaseline,
  type AdviceCandidate,
  advise,
  measuredTrapText,
  NEAR_PEAK,
} from '../replay/advise/advise.js';
import { planReplay, type TracePlan } from '../replay/engine/trace-plan.js';
import { loadSnapshotFile } from '../replay/read/load.js';
import { formatBytes } from '../util/format.js';
import { flag, onlyArgument, option, UsageError } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runCommand } from './command.js';
import { checkHistory, devicesUsed, loadProgress, whatIf } from './replay.js';

export const ADVISE_USAGE =
  'vmmkit advise <snapshot.pickle[.gz]> [--memory-limit SIZE] [--workers N] [--json]';

/** Rows of the ranked table (the rest are in --json). */
const TOP = 10;

/** Run `vmmkit advise` with its arguments; returns the exit code. */
export function adviseCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  return runCommand(io, 'advise', ADVISE_USAGE, () => run(io, [...argv]));
}

async function run(io: CliOutput, args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    io.out(`usage: ${ADVISE_USAGE}`);
    return 0;
  }
  const json = flag(args, '--json');
  const limitText = option(args, '--memory-limit');
  const workersText = option(args, '--workers');
  onlyArgument(args, 'snapshot file');
  const { memoryLimit } = whatIf(['pytorch'], undefined, limitText);
  let workers: number | undefined;
  if (workersText !== undefined) {
    if (!/^\d+$/.test(workersText) || Number(workersText) > 256)
      throw new UsageError(`--workers: '${workersText}' is not a number of threads (0 to 256)`);
    workers = Number(workersText);
  }
  const snapshot = await loadSnapshotFile(args[0], { onProgress: loadProgress(io) });
  const plan = planReplay(snapshot, { memoryLimit });
  checkHistory(args[0], plan);
  const advice = await advise(snapshot, {
    plan,
    memoryLimit,
    workers,
    onProgress: io.progress === undefined ? undefined : (done, total) => io.progress!(done / total),
  });
  io.progress?.(-1);
  for (const line of notes(plan, advice)) io.err(`note: ${line}`);
  if (json) io.out(JSON.stringify(toJson(advice)));
  else for (const line of text(plan, advice)) io.out(line);
  return 0;
}

function notes(plan: TracePlan, a: Advice): string[] {
  const out: string[] = [];
  if (plan.startedMidRun)
    out.push(
      `the trace started mid-run: ${plan.reconstructedBlocks} block(s) live before its first event were allocated first`,
    );
  const failed = a.candidates.filter((c) => c.error !== null);
  if (failed.length > 0)
    out.push(
      `${failed.length} setting(s) could not be replayed, the first: ${failed[0].allocConf}: ${failed[0].error}`,
    );
  return out;
}

/** JSON has no Infinity or undefined; the document is Advice as it is. */
function toJson(a: Advice): unknown {
  return {
    recommended: a.recommended,
    candidates: a.candidates,
    bound: a.bound,
    recorded: a.recorded,
    vmmkit: a.vmmkit,
    memoryLimit: a.memoryLimit,
    peakRequestedBytes: a.peakRequestedBytes,
    simplest: a.simplest,
    traps: a.traps,
    knownTrap: a.knownTrap,
    search: a.search,
  };
}

function text(plan: TracePlan, a: Advice): string[] {
  const lines = [
    `trace: ${plan.events.toLocaleString('en-US')} events (${plan.allocs.toLocaleString('en-US')} allocs) on ${devicesUsed(plan)} device(s); peak requested ${formatBytes(a.peakRequestedBytes)}`,
  ];
  const recordedConf = a.recorded.allocConf;
  if (a.recorded.peakReservedBytes !== null)
    lines.push(
      `recorded: PyTorch reserved ${formatBytes(a.recorded.peakReservedBytes)} at its peak, ${recordedConf ? `PYTORCH_CUDA_ALLOC_CONF=${recordedConf}` : 'PYTORCH_CUDA_ALLOC_CONF unset'}`,
    );
  if (a.memoryLimit !== null) lines.push(`memory limit: ${formatBytes(a.memoryLimit)} per device`);
  const s = a.search;
  lines.push(
    `searched ${s.proposed} settings in ${s.replays} replays (${s.workers === 0 ? 'in one thread' : `${s.workers} worker threads`}, ${(s.wallMs / 1000).toFixed(1)} s)`,
  );

  const head = ['', 'PYTORCH_CUDA_ALLOC_CONF', 'peak reserved', 'vs recorded', 'OOMs', 'driver calls'];
  const top = distinctTop(a.candidates, TOP);
  const rows = top.map(({ c, same, rank }) => [
    String(rank),
    display(c.allocConf) + (same > 0 ? `  (+${same} the same)` : ''),
    ...figures(c),
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
    `PyTorch with the recorded settings (${a.recorded.replayed.allocConf === '' ? 'defaults' : a.recorded.replayed.allocConf})`,
    ...figures(a.recorded.replayed),
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
  lines.push(
    '',
    `PYTORCH_CUDA_ALLOC_CONF=${r.allocConf}${r.allocConf === '' ? "   (empty: PyTorch's defaults)" : ''}`,
  );
  const vs =
    a.recorded.peakReservedBytes !== null && r.ratioToRecorded !== null
      ? `, ${r.ratioToRecorded.toFixed(3)}x the recorded run's ${formatBytes(a.recorded.peakReservedBytes)}`
      : '';
  lines.push(`  predicted peak ${formatBytes(r.peakReservedBytes)}${vs}; ${r.verdict}`);
  lines.push(
    `  room left: ${formatBytes(r.peakReservedBytes - a.bound.peakBytes)} above the bound ${formatBytes(a.bound.peakBytes)}; vmmkit's own allocator reserves ${formatBytes(a.vmmkit.peakReservedBytes)}`,
  );
  if (a.simplest !== null) {
    const more = (a.simplest.peakReservedBytes / r.peakReservedBytes - 1) * 100;
    lines.push(
      `  simpler, within ${NEAR_PEAK * 100}%: PYTORCH_CUDA_ALLOC_CONF=${a.simplest.allocConf}, ${formatBytes(a.simplest.peakReservedBytes)} (+${more.toFixed(1)}%; a tuned list of divisions fits this trace's shapes, a simpler setting the next run's too)`,
    );
  }
  // Expandable segments do not work with some features (NCCL buffer registration, MemPools): the best without them.
  const native = a.candidates.find((c) => !c.expandableSegments);
  if (r.expandableSegments && native !== undefined)
    lines.push(
      `  without expandable segments: PYTORCH_CUDA_ALLOC_CONF=${native.allocConf}${native.allocConf === '' ? "   (empty: PyTorch's defaults)" : ''}; ${native.verdict}`,
    );
  if (a.memoryLimit !== null && !r.fits) {
    lines.push(
      a.bound.peakBytes > a.memoryLimit
        ? `  no allocator on 2 MiB pages fits under ${formatBytes(a.memoryLimit)}: the live blocks alone need ${formatBytes(a.bound.peakBytes)}`
        : `  no setting fits under ${formatBytes(a.memoryLimit)}; the bound (${formatBytes(a.bound.peakBytes)}) does not rule it out`,
    );
  }
  for (const t of a.traps) lines.push('', `warning: ${t.message}`);
  const k = a.knownTrap;
  if (k !== null && !a.traps.some((t) => t.allocConf === k.allocConf)) {
    const es = k.parts.find((p) => p.allocConf === 'expandable_segments:True');
    const vs =
      es === undefined
        ? ''
        : `, ${(k.peakReservedBytes / es.peakReservedBytes).toFixed(2)}x expandable segments alone`;
    lines.push(
      '',
      `note: the known trap ${k.allocConf} (${k.issue}) reserves ${formatBytes(k.peakReservedBytes)} on this trace${vs}; ${measuredTrapText()}`,
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

function figures(c: AdviceBaseline): string[] {
  if (c.error !== null) return ['failed', '-', '-', '-'];
  return [
    formatBytes(c.peakReservedBytes),
    c.ratioToRecorded === null ? '-' : c.ratioToRecorded.toFixed(3),
    String(c.ooms),
    c.driverCalls.toLocaleString('en-US'),
  ];
}

function display(conf: string): string {
  return conf === '' ? "(empty: PyTorch's defaults)" : conf;
}
