/**
 * `vmmkit report <snapshot.pickle[.gz]> [--allocator NAME ...] [--out report.html] [--costs FILE]
 *                [--title TEXT] [--export-snapshot PATH] [--advise]`
 *
 * The replay's answers as pictures: the page `vmmkit open` serves (src/web),
 * written as one self-contained HTML file with the answer embedded (Note
 * [One page]): the answer first (advise's setting in it with --advise: Note
 * [The answer, then the advice]), then per allocator memory over time, the
 * reserved memory a request could not use, driver calls and the address
 * space at its peak. With --export-snapshot, each allocator's
 * run is also written as a PyTorch snapshot pickle that memory_viz opens
 * (one allocator: PATH itself; several: PATH with -NAME before the
 * extension).
 *
 * Bad input (a missing or corrupt snapshot, an unknown allocator, an
 * unwritable output) is one line on stderr and a nonzero exit, checked
 * before the replay runs where it can be.
 */
import { basename, dirname, extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { adviseProcesses, startOnSimulator } from '../entry/replay-processes.js';
import type { AllocatorRegistry } from '../replay/engine/allocators.js';
import { exportRun } from '../replay/engine/export.js';
import { planReplay } from '../replay/engine/trace-plan.js';
import { loadSnapshotFile } from '../replay/read/load.js';
import { pickle } from '../replay/read/pickle/writer.js';
import { vendorOf, withVendor } from '../replay/read/vendor.js';
import { pageHtml, renderReportHtml } from '../report/html.js';
import { pageData } from '../report/page-data.js';
import { parseCommand, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runCommand } from './command.js';
import { REPORT_SPEC } from './command-specs.js';
import { checkOutName, checkWritable, writeOut } from './output-files.js';
import { costsFor, findCosts } from './package-files.js';
import { checkHistory, loadProgress } from './replay.js';
import { deviceFor, whatIfOf } from './what-if-options.js';

export const REPORT_USAGE = usageOf(REPORT_SPEC);

export interface ReportCliOptions {
  readonly registry?: AllocatorRegistry;
  /** The cost table to use without --costs; null: none. Default: the package's, if present. */
  readonly defaultCosts?: string | null;
}

/** Run `vmmkit report`; returns the exit code. */
export function reportCommand(
  io: CliOutput,
  argv: readonly string[],
  options: ReportCliOptions = {},
): Promise<number> {
  return runCommand(io, 'report', REPORT_USAGE, () => run(io, argv, options));
}

async function run(io: CliOutput, argv: readonly string[], options: ReportCliOptions): Promise<number> {
  const { values, operands: args } = parseCommand(REPORT_SPEC, argv);
  const out = values.out ?? 'report.html';
  const costsPath = values.costs;
  const title = values.title;
  const exportPath = values['export-snapshot'];
  const { allocators, allocConf, memoryLimit, device: named, vendor } = whatIfOf(values, options.registry);
  const exports =
    exportPath === undefined
      ? []
      : allocators.map((a) => ({
          name: a.name,
          path: allocators.length === 1 ? exportPath : withSuffix(exportPath, a.name),
        }));
  checkOutName(out, ['.html', '.htm'], 'the report is one HTML page');
  for (const path of [out, ...exports.map((e) => e.path)]) checkWritable(path);
  const givenCosts = costsPath === undefined ? undefined : findCosts(costsPath, null);

  // The page first: a report cannot be written without it, and that is known before the replay.
  const page = pageHtml();
  const snapshot = withVendor(await loadSnapshotFile(args[0], { onProgress: loadProgress(io) }), vendor);
  const device = deviceFor(named, snapshot);
  const costs = costsFor(givenCosts, vendorOf(snapshot), options.defaultCosts);
  const plan = planReplay(snapshot, { memoryLimit, deviceMemory: device?.totalMemory });
  checkHistory(args[0], plan);
  const { data, recorded } = await pageData(snapshot, args[0], {
    title: title ?? `vmmkit report: ${basename(args[0])}`,
    plan,
    allocators,
    allocConf,
    memoryLimit,
    startProcess: startOnSimulator(device),
    adviseProcesses: adviseProcesses(),
    costs,
    keepEvents: exports.length > 0,
    advise: values.advise === true,
    onProgress: io.progress,
  });
  io.progress?.(-1);
  writeOut(out, renderReportHtml(data, page));
  io.out(`wrote ${out}`);
  for (const [i, e] of exports.entries()) {
    const value = exportRun(recorded.snapshot, recorded.plan, recorded.result.allocators[i]);
    const bytes = pickle(value);
    writeOut(e.path, e.path.endsWith('.gz') ? gzipSync(bytes) : bytes);
    io.out(`wrote ${e.path} (${e.name})`);
  }
  for (const a of recorded.result.allocators) {
    if (a.error !== undefined) io.err(`note: ${a.name}: the run failed: ${a.error}`);
    else if (a.ooms > 0)
      io.err(`note: ${a.name}: ${a.ooms} malloc(s) ran out of memory; those blocks were skipped`);
  }
  return recorded.result.allocators.some((a) => a.error !== undefined) ? 1 : 0;
}

/** report.pickle.gz + vmmkit -> report-vmmkit.pickle.gz */
function withSuffix(path: string, name: string): string {
  const dir = dirname(path);
  const base = basename(path);
  const dot = base.indexOf('.');
  const stem = dot <= 0 ? base : base.slice(0, dot);
  const ext = dot <= 0 ? extname(base) : base.slice(dot);
  return join(dir, `${stem}-${name}${ext}`);
}
