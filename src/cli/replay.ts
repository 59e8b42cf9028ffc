/**
 * `vmmkit replay <snapshot.pickle[.gz]> [--allocator NAME ...] [--alloc-conf CONF] [--memory-limit SIZE]
 *                [--backend sim|cuda] [--json] [--costs FILE] [--fidelity] [--stop-at-oom]
 *                [--no-empty-cache] [--sim-addresses] [--export DIR]`
 *
 * --alloc-conf replays as if PYTORCH_CUDA_ALLOC_CONF had held CONF (parsed
 * as PyTorch 2.11 parses it; a string PyTorch refuses is one line and exit
 * 2), and adds the `pytorch` allocator (PyTorch exactly as CONF configures
 * it) to the default list. --memory-limit caps every allocator's reserved
 * bytes per device, as set_per_process_memory_fraction would; each run then
 * says in words whether and where it ran out of memory.
 *
 * What would this recorded workload's memory look like under each allocator?
 * Reads a PyTorch memory snapshot, replays its trace through each allocator
 * named (all registered ones by default) and prints peak reserved bytes, the
 * ratio to the trace's peak requested bytes, utilization, driver calls and
 * their estimated time. With --json: exactly one object on stdout. With
 * --export DIR, each allocator's run is also written as a snapshot of its
 * own (export.ts), DIR/<snapshot>-<allocator>.pickle, for memory_viz; DIR
 * must exist, as report's --out folder must (output-files.ts).
 *
 * Bad input (a missing, truncated or corrupt file, a pickle that is not a
 * snapshot, an unknown action, a bad field) is one line on stderr and exit
 * 1; a usage mistake exits 2. What a trace may hold and replay handles by
 * counting (frees with no alloc: a trace that started mid-run; double frees;
 * recorded OOMs; OOMs of an allocator) is reported as counts, with a note on
 * stderr, and exits 0. An allocator whose run failed for another reason
 * makes the exit 1, after the others have run.
 */

import { basename, join } from 'node:path';
import { recordedConfProblem } from '../alloc/pytorch/settings.js';
import { startOnGpus, startOnSimulator } from '../entry/replay-processes.js';
import { peakLines } from '../replay/analyse/lines.js';
import { analysePeak } from '../replay/analyse/peak.js';
import type { AllocatorRegistry } from '../replay/engine/allocators.js';
import type { AsRecorded } from '../replay/engine/as-recorded.js';
import type { CostTable } from '../replay/engine/cost-table.js';
import { exportRun } from '../replay/engine/export.js';
import { compareWithTrace, type FidelityReport } from '../replay/engine/fidelity.js';
import { recordedReserved } from '../replay/engine/recorded.js';
import type { AllocatorRun, ReplayResult } from '../replay/engine/replay.js';
import { nothingToReplay, planReplay, type TracePlan } from '../replay/engine/trace-plan.js';
import {
  ambiguousRunLines,
  answerLines,
  asRecordedLines,
  capLines,
  graphLines,
  recordedOomLines,
} from '../replay/engine/verdict.js';
import { answerWhatIf, type WhatIfAnswer } from '../replay/engine/what-if.js';
import { loadSnapshotFile } from '../replay/read/load.js';
import { pickle } from '../replay/read/pickle/writer.js';
import {
  allocConfName,
  type VendorGuess,
  vendorGuessOf,
  vendorLines,
  withVendor,
} from '../replay/read/vendor.js';
import { formatBytes } from '../util/format.js';
import { parseCommand, UsageError, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runCommand } from './command.js';
import { REPLAY_SPEC } from './command-specs.js';
import { CommandError } from './errors.js';
import { checkWritableFolder, writeOut } from './output-files.js';
import { costsFor, findCosts } from './package-files.js';
import { deviceFor, whatIfOf } from './what-if-options.js';

export const REPLAY_USAGE = usageOf(REPLAY_SPEC);

export interface ReplayCliOptions {
  /** The allocators by name (default: DEFAULT_ALLOCATORS). */
  readonly registry?: AllocatorRegistry;
  /** The cost table to use without --costs; null: none. Default: the package's DEFAULT_COSTS if present. */
  readonly defaultCosts?: string | null;
}

/** Run `vmmkit replay` with its arguments; returns the exit code. */
export function replayCommand(
  io: CliOutput,
  argv: readonly string[],
  options: ReplayCliOptions = {},
): Promise<number> {
  return runCommand(io, 'replay', REPLAY_USAGE, () => run(io, argv, options));
}

async function run(io: CliOutput, argv: readonly string[], options: ReplayCliOptions): Promise<number> {
  const { values, operands: args } = parseCommand(REPLAY_SPEC, argv);
  const json = values.json === true;
  const fidelity = values.fidelity === true;
  const stopAtOom = values['stop-at-oom'] === true;
  const inferEmptyCache = values['no-empty-cache'] !== true;
  const recordedAddresses = values['sim-addresses'] !== true;
  const backend = values.backend ?? 'sim';
  if (backend !== 'sim' && backend !== 'cuda')
    throw new UsageError(`unknown backend '${backend}' (sim or cuda)`);
  const costsPath = values.costs;
  const exportDir = values.export;
  const { allocators, allocConf, memoryLimit, device: named, vendor } = whatIfOf(values, options.registry);

  if (exportDir !== undefined) checkWritableFolder(exportDir);
  // A table given is read before the snapshot, so a bad one fails at once.
  const givenCosts = costsPath === undefined ? undefined : findCosts(costsPath, null);
  const snapshot = withVendor(await loadSnapshotFile(args[0], { onProgress: loadProgress(io) }), vendor);
  const guess = vendorGuessOf(snapshot);
  const costs = costsFor(givenCosts, guess.vendor, options.defaultCosts);
  const device = deviceFor(named, snapshot);
  const plan = planReplay(snapshot, { inferEmptyCache, memoryLimit, deviceMemory: device?.totalMemory });
  checkHistory(args[0], plan);
  // Every model replay on a simulated machine of the device; the allocators' runs on the real GPUs with --backend cuda.
  const simulated = startOnSimulator(device);
  const answer = answerWhatIf(snapshot, {
    allocators,
    startProcess: backend === 'cuda' ? startOnGpus() : simulated,
    startReproduction: simulated,
    backend,
    costs,
    plan,
    stopAtOom,
    recordedAddresses,
    keepEvents: fidelity || exportDir !== undefined,
    allocConf,
    memoryLimit,
    onProgress: io.progress === undefined ? undefined : (done, total) => io.progress!(done / total),
  });
  const result = answer.result;
  io.progress?.(-1);
  if (costs === undefined && !json)
    io.err(
      `note: no driver cost table${guess.vendor === 'cuda' ? '' : ` for ${guess.vendor === 'npu' ? 'an Ascend NPU' : 'an AMD GPU'}`}; driver time is not estimated (see --costs)`,
    );
  const fidelityReports = fidelity
    ? result.allocators.map((a) => a.devices.map((d) => compareWithTrace(result.plan.devices[d.device], d)))
    : undefined;
  // What holds memory at the peak (analyse/peak.ts); under --alloc-conf, where its reserved bytes go.
  const peak =
    snapshot.traces.length === 0
      ? null
      : analysePeak(snapshot, {
          plan,
          asRecorded: answer.asRecorded,
          startProcess: simulated,
          ...(allocConf !== undefined && backend === 'sim' ? { allocConf, memoryLimit, whatIf: answer } : {}),
        });
  // The answer first (its first line says whether the recording was reproduced), the notes after it.
  if (json) io.out(JSON.stringify({ ...(toJson(answer, costs, fidelityReports, guess) as object), peak }));
  else
    for (const line of [
      ...table(answer, costs, fidelityReports, guess),
      ...(peak === null ? [] : ['', ...peakLines(peak)]),
    ])
      io.out(line);
  const confProblem = allocConf === undefined ? recordedConfProblem(snapshot.allocatorSettings) : undefined;
  if (confProblem !== undefined) io.err(`note: ${confProblem}`);
  if (snapshot.form === 'segment-list')
    io.err(
      "note: this is torch.cuda.memory_snapshot()'s segment list: one moment's state and no history, so the answers are what each allocator needs to hold its live blocks",
    );
  for (const line of [...notes(result), ...ambiguousRunLines(answer), ...graphLines(result.plan, snapshot)])
    io.err(`note: ${line}`);
  if (exportDir !== undefined) {
    const stem = basename(args[0]).replace(/(\.pickle)?(\.gz)?$/, '');
    for (const a of result.allocators) {
      const path = join(exportDir, `${stem}-${a.name}.pickle`);
      writeOut(path, pickle(exportRun(snapshot, plan, a)));
      io.err(`note: wrote ${path}`);
    }
  }
  return result.allocators.some((a) => a.error !== undefined) ? 1 : 0;
}

/** The progress bar while a snapshot streams in (the file's bytes read), cleared when it is read. */
export function loadProgress(io: CliOutput): ((read: number, total: number) => void) | undefined {
  const bar = io.progress;
  if (bar === undefined) return undefined;
  return (read, total) => (read >= total ? bar(-1) : bar(total > 0 ? read / total : 0));
}

function notes(r: ReplayResult): string[] {
  const p = r.plan;
  const out: string[] = [];
  const c = (f: (d: (typeof p.devices)[number]['counts']) => number) =>
    p.devices.reduce((s, d) => s + f(d.counts), 0);
  if (p.startedMidRun) out.push(...midRunNotes(r));
  if (c((x) => x.unmatchedFrees) > 0)
    out.push(`${c((x) => x.unmatchedFrees)} free(s) of an address not live (double frees) were skipped`);
  if (c((x) => x.duplicateAllocs) > 0)
    out.push(
      `${c((x) => x.duplicateAllocs)} alloc(s) at an address already live; the older block stays allocated`,
    );
  if (c((x) => x.inconsistentBlocks) > 0)
    out.push(
      `${c((x) => x.inconsistentBlocks)} block(s) active in 'segments' were freed by the trace and not allocated again`,
    );
  if (c((x) => x.ooms) > 0)
    out.push(`the trace records ${c((x) => x.ooms)} OOM(s) of the recorded allocator`);
  if (c((x) => x.inferredEmptyCaches) > 0)
    out.push(
      `${c((x) => x.inferredEmptyCaches)} empty_cache() call(s) inferred from the recorded segment frees were replayed (--no-empty-cache leaves them out)`,
    );
  for (const a of r.allocators) {
    if (a.ooms > 0)
      out.push(
        `${a.name}: ${a.ooms} malloc(s) ran out of memory${a.stoppedAtOom ? '; stopped at the first' : '; those blocks were skipped'}`,
      );
    if (a.error !== undefined) out.push(`${a.name}: the run failed: ${a.error}`);
    for (const w of a.warnings) out.push(`${a.name}: ${w}`);
  }
  return out;
}

/** What a trace that started mid-run began with, and how sure that is (Note [Started mid-run]). */
function midRunNotes(r: ReplayResult): string[] {
  return r.plan.devices
    .filter((d) => d.startState.segments.length > 0 || d.initialBlocks.length > 0)
    .map((d) => {
      const s = d.startState;
      const where = r.plan.devices.length > 1 ? ` on device ${d.device}` : '';
      const began = `the trace started mid-run${where}: ${d.initialBlocks.length} block(s) live before its first event, in ${s.segments.length} segment(s) (${formatBytes(s.reservedBytes)}) the recorded allocator held then, rebuilt from the snapshot's segments`;
      return s.exact
        ? `${began} exactly`
        : `${began}; that start may be off by up to ${formatBytes(s.uncertainBytes)} (${s.reasons.join('; ')})`;
    });
}

/** Devices the trace uses: those with events, or with blocks live before its first. */
export function devicesUsed(plan: TracePlan): number {
  return plan.devices.filter((d) => d.trace.length > 0 || d.initialBlocks.length > 0).length;
}

function toJson(
  answer: WhatIfAnswer,
  costs: CostTable | undefined,
  fidelity: FidelityReport[][] | undefined,
  guess: VendorGuess,
): unknown {
  const r = answer.result;
  const p = r.plan;
  const c = (f: (d: (typeof p.devices)[number]['counts']) => number) =>
    p.devices.reduce((s, d) => s + f(d.counts), 0);
  return {
    vendor: guess.vendor,
    vendorEvidence: guess.evidence,
    trace: {
      events: p.events,
      allocs: p.allocs,
      peakRequestedBytes: p.peakRequestedBytes,
      durationUs: p.durationUs,
      devices: devicesUsed(r.plan),
      startedMidRun: p.startedMidRun,
      reconstructedBlocks: p.reconstructedBlocks,
      startState: p.devices.map((d) => ({
        device: d.device,
        reservedBytes: d.startState.reservedBytes,
        segments: d.startState.segments.length,
        exact: d.startState.exact,
        uncertainBytes: d.startState.uncertainBytes,
        reasons: d.startState.reasons,
      })),
      unmatchedFrees: c((x) => x.unmatchedFrees),
      duplicateAllocs: c((x) => x.duplicateAllocs),
      recordedOoms: c((x) => x.ooms),
      inferredEmptyCaches: c((x) => x.inferredEmptyCaches),
      recordedSegmentEvents: c((x) => x.segmentAlloc + x.segmentFree + x.segmentMap + x.segmentUnmap),
      recordedPeakReservedBytes: recordedPeak(r),
    },
    asRecorded: asRecordedJson(answer.asRecorded),
    cap: {
      kind: answer.cap.kind,
      devices: answer.cap.devices.map((d) => ({
        device: d.device,
        lowBytes: finite(d.lowBytes),
        highBytes: finite(d.highBytes),
      })),
    },
    allocConf: r.allocConf ?? null,
    memoryLimit: r.memoryLimit ?? null,
    settings: { ...r.settings, maxSplitSize: finite(r.settings.maxSplitSize) },
    costTable: costs === undefined ? null : { ...costs.info },
    allocators: r.allocators.map((a, i) => ({
      name: a.name,
      verdict: answer.answers[i].verdict,
      thresholdBytes: answer.answers[i].thresholdBytes,
      peakRangeBytes: [answer.answers[i].peakLowBytes, answer.answers[i].peakHighBytes],
      peakExact: answer.answers[i].exact,
      peakReservedBytes: a.peakReservedBytes,
      peakAllocatedBytes: a.peakAllocatedBytes,
      ratio: a.ratio,
      utilization: a.utilization,
      driverCalls: a.driverCalls,
      driverTimeUs: a.driverTimeUs,
      driverTimeMeasured: a.driverTimeMeasured,
      measuredDriverTimeUs: a.measuredDriverTimeUs,
      replayMs: a.replayMs,
      ooms: a.ooms,
      firstOom: a.firstOom,
      stoppedAtOom: a.stoppedAtOom,
      placedSegments: a.placedSegments,
      error: a.error ?? null,
      devices: a.devices.map((d) => ({
        device: d.device,
        peakReservedBytes: d.peakReservedBytes,
        peakAllocatedBytes: d.peakAllocatedBytes,
        peakRequestedBytes: d.peakRequestedBytes,
        ratio: d.ratio,
        utilization: d.utilization,
        ooms: d.ooms,
        firstOomEvent: d.firstOomEvent,
        firstOom: d.firstOom,
        recordedOoms: d.recordedOoms,
        deviceUsedAtPeakBytes: d.deviceUsedAtPeakBytes,
      })),
      ...(fidelity === undefined ? {} : { fidelity: fidelity[i] }),
    })),
  };
}

const GiB = 1024 ** 3;

function bytes(n: number): string {
  return n >= GiB / 10 ? `${(n / GiB).toFixed(2)} GiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`;
}

/** A snapshot with nothing to replay is bad input (nothingToReplay says why), the same in every command. */
export function checkHistory(file: string, plan: TracePlan): void {
  const why = nothingToReplay(file, plan);
  if (why !== undefined) throw new CommandError(why);
}

/** JSON has no Infinity: PyTorch's "no limit" (SIZE_MAX) as null. */
function finite(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}

/** What the recorded allocator reserved at its peak, from its own segment events (null: the trace has none). */
export function recordedPeak(r: ReplayResult): number | null {
  const runs = r.plan.devices.map((d) => recordedReserved(d, d.startState.reservedBytes));
  if (!runs.some((x) => x.hasSegmentEvents)) return null;
  return runs.reduce((s, x) => s + x.peakBytes, 0);
}

function table(
  answer: WhatIfAnswer,
  costs: CostTable | undefined,
  fidelity: FidelityReport[][] | undefined,
  guess: VendorGuess,
): string[] {
  const r = answer.result;
  const p = r.plan;
  const lines = [
    ...asRecordedLines(answer.asRecorded),
    ...vendorLines(guess),
    ...capLines(answer.cap, answer.asRecorded),
    `trace: ${p.events.toLocaleString('en-US')} events (${p.allocs.toLocaleString('en-US')} allocs) on ${devicesUsed(r.plan)} device(s)${p.durationUs > 0 ? ` over ${(p.durationUs / 1e6).toFixed(1)} s` : ''}; peak requested ${bytes(p.peakRequestedBytes)}`,
  ];
  if (r.allocConf !== undefined) lines.push(`settings: ${allocConfName(guess.vendor)}=${r.allocConf}`);
  if (costs !== undefined)
    lines.push(`driver costs: ${costs.info.source}${costs.info.gpu ? ` (${costs.info.gpu})` : ''}`);
  const head = [
    'allocator',
    'peak reserved',
    'ratio',
    'utilization',
    'OOMs',
    'driver calls',
    'driver time',
    'replay',
  ];
  const rows = r.allocators.map((a) => row(a));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((x) => x[i].length)));
  const fmt = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  lines.push('', fmt(head), ...rows.map(fmt));
  lines.push('', ...answerLines(answer), ...recordedOomLines(r));
  if (fidelity !== undefined) {
    lines.push('');
    r.allocators.forEach((a, i) => {
      for (const f of fidelity[i]) {
        lines.push(
          `fidelity ${a.name} device ${f.device}: segment events ${f.segmentEventsMatched}/${f.segmentEventsRecorded} recorded matched (${f.segmentEventsReplayed} replayed); alloc offsets ${f.allocsMatched}/${f.allocsCompared} matched${f.allocsSkipped > 0 ? `, ${f.allocsSkipped} not compared` : ''}`,
        );
        if (f.firstDifference !== undefined) lines.push(`  first difference: ${f.firstDifference.message}`);
      }
    });
  }
  return lines;
}

function row(a: AllocatorRun): string[] {
  const calls = Object.values(a.driverCalls).reduce((s, x) => s + x, 0);
  const time =
    a.driverTimeUs === null
      ? '-'
      : `${(a.driverTimeUs / 1000).toFixed(1)} ms${a.measuredDriverTimeUs !== null ? ` (measured ${(a.measuredDriverTimeUs / 1000).toFixed(1)} ms)` : ''}`;
  if (a.error !== undefined && a.devices.length === 0)
    return [a.name, 'failed', '-', '-', '-', String(calls), time, '-'];
  return [
    a.error === undefined ? a.name : `${a.name} (failed)`,
    bytes(a.peakReservedBytes),
    a.ratio === null ? '-' : a.ratio.toFixed(3),
    a.utilization === null ? '-' : a.utilization.toFixed(3),
    String(a.ooms),
    calls.toLocaleString('en-US'),
    time,
    `${(a.replayMs / 1000).toFixed(2)} s`,
  ];
}

/** The recording reproduced, per device, as the JSON carries it (Note [As recorded]). */
export function asRecordedJson(ar: AsRecorded): unknown {
  return {
    reproduced: ar.reproduced,
    settingsSource: ar.settingsSource,
    devices: ar.devices.map((d) => ({
      device: d.device,
      reproduced: d.reproduced,
      recordedPeakBytes: d.recordedPeakBytes,
      replayedPeakBytes: d.replayedPeakBytes,
      cap: {
        lowBytes: d.cap.lowBytes,
        highBytes: finite(d.cap.highBytes),
        deviceFull: d.cap.deviceFull,
        ooms: d.cap.ooms,
      },
      recordedOoms: d.recordedOoms,
      unexpectedOom: d.unexpectedOom,
      segmentEvents: d.segmentEvents,
      differences: d.differences,
    })),
  };
}
