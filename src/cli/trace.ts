/**
 * `vmmkit trace [--layers vendor|generic] [--break NAME ...] <script.mjs> [--json]`
 *
 * Runs a script (script.ts, Note [Script helpers]) with tracing on and
 * prints its call tree, in the vendors' own layers by default. Each
 * `--break NAME` prints where it stopped and the process state there, as the
 * script runs.
 */
import { formatTrace, Tracer, traceToJson } from '../core/trace.js';
import { formatBreak } from '../flavors/inspect.js';
import type { SnapshotVendor } from '../replay/read/vendor.js';
import { parseCommand, UsageError, usageLine, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { TRACE_SPEC } from './command-specs.js';
import { readVendor, runScript, ScriptError } from './script.js';

export const TRACE_USAGE = usageOf(TRACE_SPEC);

/** Print a tree of spans, as text or as JSON. */
export function printTree(io: CliOutput, tracer: Tracer, json: boolean): void {
  io.out(json ? JSON.stringify(traceToJson(tracer.roots), null, 2) : formatTrace(tracer.roots).trimEnd());
}

/** Run `vmmkit trace`; returns the exit code. */
export async function traceCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  let layers: 'vendor' | 'generic';
  let breaks: string[];
  let json: boolean;
  let script: string;
  let vendor: SnapshotVendor | undefined;
  try {
    const { values, operands } = parseCommand(TRACE_SPEC, argv);
    // Vendor layers by default: breakpoints are named as the vendors name their functions.
    const asked = values.layers ?? 'vendor';
    if (asked !== 'generic' && asked !== 'vendor')
      throw new UsageError(`--layers is generic or vendor, not '${asked}'`);
    layers = asked;
    breaks = values.break ?? [];
    json = values.json === true;
    script = operands[0];
    vendor = readVendor(values.vendor);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(usageLine('trace', e.message, TRACE_USAGE));
    return 2;
  }
  const tracer = new Tracer({ layers });
  const hits = new Map(breaks.map((name) => [name, 0]));
  for (const name of breaks)
    tracer.on(name, (context) => {
      hits.set(name, (hits.get(name) ?? 0) + 1);
      io.out(formatBreak(context));
    });
  try {
    await runScript(script, tracer, undefined, vendor);
  } catch (e) {
    if (!(e instanceof ScriptError)) throw e;
    // What ran before a throw is what its tree is for; a script that never loaded has none.
    if (tracer.roots.length > 0) printTree(io, tracer, json);
    io.err(`vmmkit trace: ${e.message}`);
    return 1;
  }
  printTree(io, tracer, json);
  for (const [name, n] of hits) if (n === 0) io.err(`breakpoint ${name} was never reached`);
  return 0;
}
