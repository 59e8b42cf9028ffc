/**
 * The vmmkit command line (src/cli/main.ts runs it).
 *
 *   vmmkit demo [--flavor cuda|hip|acl] [--json]   the seeds' sequences with their call trees
 *   vmmkit trace [--layers generic|vendor] [--break NAME ...] <script.mjs> [--json]
 *                                                  run a script with tracing on, print its tree
 *   vmmkit inspect <script.mjs> [--json]           each process's state in its vendor's objects (inspect.ts)
 *   vmmkit replay <snapshot.pickle[.gz]> ...       a PyTorch memory trace through our allocators (replay.ts)
 *   vmmkit report <snapshot.pickle[.gz]> ...       the same as an HTML report with charts and maps (report.ts)
 *   vmmkit map <script.mjs> ...                    a script's address spaces as a picture (map.ts)
 *
 * A traced script is an ES module whose default export receives the
 * factories (createCuda, createHip, createAcl, createMachine), already
 * bound to the tracer: `export default ({ createHip }) => { ... }`.
 */

import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMachine } from '../compose/create-runtime.js';
import { formatTrace, Tracer, traceToJson } from '../core/trace.js';
import { createAcl } from '../flavors/acl/acl.js';
import type { FlavorOptions } from '../flavors/common/process.js';
import { createCuda } from '../flavors/cuda/cuda.js';
import { createHip } from '../flavors/hip/hip.js';
import { ADVISE_USAGE, adviseCommand } from './advise.js';
import { flag, option } from './arguments.js';
import { aclDemo } from './demos/acl.js';
import { cudaDemo } from './demos/cuda.js';
import { hipDemo } from './demos/hip.js';
import { formatBreak, INSPECT_USAGE, inspectCommand } from './inspect.js';
import { MAP_USAGE, mapCommand } from './map.js';
import { packageVersion } from './package-files.js';
import { REPLAY_USAGE, replayCommand } from './replay.js';
import { REPORT_USAGE, reportCommand } from './report.js';

const DEMOS = {
  cuda: { title: 'CUDA driver API on a simulated H200 (seed 1, section 6)', run: cudaDemo },
  hip: { title: 'HIP on a simulated MI300X (seed 1, section 6)', run: hipDemo },
  acl: { title: "Ascend ACL on a simulated Ascend 910B (seed 2's seven steps)", run: aclDemo },
} as const;
type Flavor = keyof typeof DEMOS;

const DEMO_USAGE = 'vmmkit demo [--flavor cuda|hip|acl] [--layers vendor|generic] [--json]';
const TRACE_USAGE = 'vmmkit trace [--layers generic|vendor] [--break NAME ...] <script.mjs> [--json]';

/** Each subcommand's usage line, for `vmmkit COMMAND --help` and the overall usage. */
const USAGES: Readonly<Record<string, string>> = {
  demo: DEMO_USAGE,
  trace: TRACE_USAGE,
  inspect: INSPECT_USAGE,
  replay: REPLAY_USAGE,
  advise: ADVISE_USAGE,
  report: REPORT_USAGE,
  map: MAP_USAGE,
};

const USAGE = `usage: ${Object.values(USAGES).join('\n       ')}`;

/** Where the command line writes: lines to standard output and to standard error. */
export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
  /** A progress bar on standard error, where it is a terminal: a fraction done, or -1 to clear it. */
  progress?(fraction: number): void;
}

const CONSOLE: CliOutput = {
  out: (l) => console.log(l),
  err: (l) => console.error(l),
  progress: process.stderr.isTTY ? progressBar : undefined,
};

function progressBar(fraction: number): void {
  if (fraction < 0) {
    process.stderr.write('\r\x1b[K');
    return;
  }
  const width = 30;
  const filled = Math.round(fraction * width);
  process.stderr.write(
    `\r[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${Math.floor(fraction * 100)}%`,
  );
}

function printTree(io: CliOutput, tracer: Tracer, json: boolean): void {
  io.out(json ? JSON.stringify(traceToJson(tracer.roots), null, 2) : formatTrace(tracer.roots).trimEnd());
}

function demo(io: CliOutput, args: string[]): number {
  const json = flag(args, '--json');
  const only = option(args, '--flavor');
  const layers = option(args, '--layers') ?? 'vendor';
  if (only !== undefined && !(only in DEMOS)) {
    io.err(`unknown flavor '${only}'\n${USAGE}`);
    return 2;
  }
  if (layers !== 'generic' && layers !== 'vendor') {
    io.err(`--layers is generic or vendor, not '${layers}'\n${USAGE}`);
    return 2;
  }
  const flavors = only === undefined ? (Object.keys(DEMOS) as Flavor[]) : [only as Flavor];
  let ok = true;
  // With --json: one document, each demo's printed lines and its call tree.
  const documents: { flavor: Flavor; title: string; lines: string[]; trace: unknown }[] = [];
  for (const f of flavors) {
    const { title, run } = DEMOS[f];
    const tracer = new Tracer({ layers });
    if (json) {
      const lines: string[] = [];
      ok = run((line) => lines.push(line), tracer) && ok;
      documents.push({ flavor: f, title, lines, trace: traceToJson(tracer.roots) });
      continue;
    }
    io.out(`\n=== ${title} ===\n`);
    ok = run((line) => io.out(line), tracer) && ok;
    io.out(
      layers === 'vendor'
        ? `\n--- call tree through the vendor's own layers (--layers generic: vmmkit's) ---\n`
        : `\n--- call tree: flavour -> core -> backend -> device ---\n`,
    );
    printTree(io, tracer, false);
  }
  if (json) io.out(JSON.stringify({ layers, demos: documents }, null, 2));
  return ok ? 0 : 1;
}

async function trace(io: CliOutput, args: string[]): Promise<number> {
  const json = flag(args, '--json');
  const asked = option(args, '--layers');
  const breaks: string[] = [];
  while (args.includes('--break')) {
    const name = option(args, '--break');
    if (name === undefined) break;
    breaks.push(name);
  }
  // Vendor layers by default: breakpoints are named as the vendors name their functions.
  const layers = asked ?? 'vendor';
  const script = args[0];
  if (script === undefined || (layers !== 'generic' && layers !== 'vendor')) {
    io.err(script === undefined ? USAGE : `--layers is generic or vendor, not '${layers}'\n${USAGE}`);
    return 2;
  }
  const tracer = new Tracer({ layers });
  // Each break prints where it stopped and the process state there, as the script runs.
  const hits = new Map(breaks.map((name) => [name, 0]));
  for (const name of breaks)
    tracer.on(name, (context) => {
      hits.set(name, (hits.get(name) ?? 0) + 1);
      io.out(formatBreak(context));
    });
  const bind =
    <T>(create: (options?: FlavorOptions) => T) =>
    (options: FlavorOptions = {}) =>
      create({ ...options, tracer });
  const factories = {
    createCuda: bind(createCuda),
    createHip: bind(createHip),
    createAcl: bind(createAcl),
    createMachine,
    tracer,
  };
  // A script that cannot be loaded is one line, not a module loader's stack.
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(resolve(script)).href)) as { default?: unknown };
  } catch (e) {
    const code = (e as { code?: unknown } | null)?.code;
    io.err(
      code === 'ERR_MODULE_NOT_FOUND' && !existsSync(resolve(script))
        ? `vmmkit trace: no such script: ${script}`
        : `vmmkit trace: cannot load ${script}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
    );
    return 2;
  }
  if (typeof mod.default !== 'function') {
    io.err(
      `${script} must export a default function taking { createCuda, createHip, createAcl, createMachine }`,
    );
    return 2;
  }
  await (mod.default as (f: typeof factories) => unknown)(factories);
  printTree(io, tracer, json);
  for (const [name, n] of hits) if (n === 0) io.err(`breakpoint ${name} was never reached`);
  return 0;
}

/** Run the command line with `argv` (without node and the script); returns the exit code. */
export async function runCli(argv: readonly string[], io: CliOutput = CONSOLE): Promise<number> {
  const [command, ...args] = argv;
  // --help and --version mean the same to every subcommand: an answer on stdout, exit 0.
  if (command === '--version' || args.includes('--version')) {
    io.out(`vmmkit ${packageVersion()}`);
    return 0;
  }
  if (command === undefined || command === '--help' || command === '-h') {
    io.out(USAGE);
    return 0;
  }
  if (Object.hasOwn(USAGES, command) && (args.includes('--help') || args.includes('-h'))) {
    io.out(`usage: ${USAGES[command]}`);
    return 0;
  }
  if (command === 'demo') return demo(io, args);
  if (command === 'trace') return trace(io, args);
  if (command === 'replay') return replayCommand(io, args);
  if (command === 'report') return reportCommand(io, args);
  if (command === 'map') return mapCommand(io, args);
  if (command === 'inspect') return inspectCommand(io, args);
  if (command === 'advise') return adviseCommand(io, args);
  io.err(`unknown command '${command}'\n${USAGE}`);
  return 2;
}
