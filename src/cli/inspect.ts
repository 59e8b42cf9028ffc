/**
 * `vmmkit inspect`: every process a script made, in its vendor's object
 * model (the inspection view, src/flavors/inspect.ts).
 *
 *   vmmkit inspect <script.mjs> [--at NAME] [--json]
 *
 * The script is the one `vmmkit trace` runs, with the same helpers (Note
 * [Script helpers] in script.ts). Each process is shown as it was just
 * before it was disposed, or when the script returned; with --at NAME,
 * every process live at the script's mark(NAME).
 */
import type { RuntimeDescription } from '../core/runtime.js';
import { Tracer } from '../core/trace.js';
import { hex } from '../flavors/common/layers.js';
import { formatState } from '../flavors/inspect.js';
import type { SnapshotVendor } from '../replay/read/vendor.js';
import { parseCommand, UsageError, usageLine, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { INSPECT_SPEC } from './command-specs.js';
import { readVendor, runScript, ScriptError } from './script.js';

export const INSPECT_USAGE = usageOf(INSPECT_SPEC);

/** One process as `inspect` shows it. */
export interface Inspection {
  readonly label: string;
  readonly vendor: string | undefined;
  readonly description: RuntimeDescription;
}

/** Run `vmmkit inspect`; returns the exit code. */
export async function inspectCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  let json: boolean;
  let at: string | undefined;
  let script: string;
  let vendor: SnapshotVendor | undefined;
  try {
    const { values, operands } = parseCommand(INSPECT_SPEC, argv);
    json = values.json === true;
    at = values.at;
    script = operands[0];
    vendor = readVendor(values.vendor);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(usageLine('inspect', e.message, INSPECT_USAGE));
    return 2;
  }
  let seen: Inspection[];
  try {
    seen = await inspectScript(script, at, vendor);
  } catch (e) {
    if (!(e instanceof ScriptError)) throw e;
    io.err(`vmmkit inspect: ${e.message}`);
    return 1;
  }
  if (json) {
    io.out(JSON.stringify(seen, (_, v) => (typeof v === 'bigint' ? hex(v) : v), 2));
    return 0;
  }
  if (seen.length === 0)
    io.out(at === undefined ? '(the script made no process)' : `(no process was live at mark '${at}')`);
  for (const s of seen) io.out(`=== ${s.label}\n${formatState(s.description, s.vendor)}`);
  return 0;
}

/** Run `script` and describe each process it made at its end (or, with `at`, at each mark `at`). */
async function inspectScript(script: string, at?: string, vendor?: SnapshotVendor): Promise<Inspection[]> {
  const states = await runScript(script, new Tracer({ keep: false }), at, vendor);
  return states.map((s) => ({
    label: `${s.vendor ?? 'core'} process ${s.pid} ${s.when}`,
    vendor: s.vendor,
    description: s.description,
  }));
}
