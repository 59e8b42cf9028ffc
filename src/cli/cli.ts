/**
 * The vmmkit command line (src/cli/main.ts runs it).
 *
 *   vmmkit demo       a committed OOM-ended snapshot answered, then the seeds' sequences with their call trees (demos/demo.ts)
 *   vmmkit trace      run a script with tracing on, print its tree (trace.ts)
 *   vmmkit inspect    each process's state in its vendor's objects (inspect.ts)
 *   vmmkit map        a script's address spaces as a picture (map.ts)
 *   vmmkit replay     a PyTorch memory snapshot through exact models of its allocator (replay.ts)
 *   vmmkit advise     the PYTORCH_CUDA_ALLOC_CONF to run it with (advise.ts)
 *   vmmkit report     the replay as an HTML page with charts and maps (report.ts)
 *   vmmkit open       the page in a browser, served on 127.0.0.1 (open.ts)
 *   vmmkit compare    two snapshots at their peaks, as recorded and under a setting (compare.ts)
 *
 * Each command is described once (command-specs.ts): its options with a
 * line of help each, an example, its exit codes. The one parser
 * (arguments.ts), the usage lines and `vmmkit COMMAND --help` read that,
 * and runCli dispatches through one table, COMMANDS.
 *
 * trace, inspect and map run a script: an ES module whose default export
 * receives one set of helpers, `export default ({ createHip }) => { ... }`
 * (Note [Script helpers] in script.ts). A usage mistake is one line and
 * exit 2 in every command (usageLine); bad input one line and exit 1.
 */

import { type CommandSpec, helpOf, usageOf } from './arguments.js';
import {
  ADVISE_SPEC,
  COMPARE_SPEC,
  DEMO_SPEC,
  INSPECT_SPEC,
  MAP_SPEC,
  OPEN_SPEC,
  REPLAY_SPEC,
  REPORT_SPEC,
  TRACE_SPEC,
} from './command-specs.js';
import { packageVersion } from './package-files.js';

type Run = (io: CliOutput, argv: readonly string[]) => number | Promise<number>;

/** A command: its description (options, help, usage) and what runs it. */
interface Command {
  readonly spec: CommandSpec;
  /**
   * The command's module, loaded when the command runs: usage, --help and
   * --version need none of them, and a command needs only its own (most of
   * the package, for the snapshot commands, but not the others' or the page's).
   * It is called with the command line alone (replay, report and open take
   * options of their own only from tests).
   */
  readonly load: () => Promise<Run>;
}

/** Every command by name: the one table runCli dispatches through, and the usage and --help come from. */
const COMMANDS: Readonly<Record<string, Command>> = Object.freeze({
  demo: { spec: DEMO_SPEC, load: async () => (await import('./demos/demo.js')).demoCommand },
  trace: { spec: TRACE_SPEC, load: async () => (await import('./trace.js')).traceCommand },
  inspect: { spec: INSPECT_SPEC, load: async () => (await import('./inspect.js')).inspectCommand },
  replay: { spec: REPLAY_SPEC, load: async () => (await import('./replay.js')).replayCommand },
  advise: { spec: ADVISE_SPEC, load: async () => (await import('./advise.js')).adviseCommand },
  report: { spec: REPORT_SPEC, load: async () => (await import('./report.js')).reportCommand },
  open: { spec: OPEN_SPEC, load: async () => (await import('./open.js')).openCommand },
  compare: { spec: COMPARE_SPEC, load: async () => (await import('./compare.js')).compareCommand },
  map: { spec: MAP_SPEC, load: async () => (await import('./map.js')).mapCommand },
});

const USAGE = `usage: ${Object.values(COMMANDS)
  .map((c) => usageOf(c.spec))
  .join('\n       ')}`;

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
  const found = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (found === undefined) {
    io.err(
      `vmmkit: unknown command '${command}' (usage: vmmkit ${Object.keys(COMMANDS).join('|')} ..., and vmmkit COMMAND --help)`,
    );
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    for (const line of helpOf(found.spec)) io.out(line);
    return 0;
  }
  return (await found.load())(io, args);
}
