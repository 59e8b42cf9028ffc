/**
 * The inspection view: a process's state in its vendor's object model (HIP:
 * parent virtual buffers, sub-buffers cross-linked to GenericAllocations and
 * their reference counts; CUDA and ACL in their own words), printed by
 * `vmmkit inspect <script.mjs>` for every process a script made, and by
 * `vmmkit trace --break NAME` at each breakpoint.
 *
 *   vmmkit inspect <script.mjs> [--at NAME] [--json]
 *
 * The script is the one `vmmkit trace` runs, with the same helpers (Note
 * [Script helpers] in script.ts). Each process is shown as it was just
 * before it was disposed, or when the script returned; with --at NAME,
 * every process live at the script's mark(NAME).
 */
import type { Runtime, RuntimeDescription } from '../core/runtime.js';
import { type BreakContext, Tracer } from '../core/trace.js';
import { ACL_VIEW } from '../flavors/acl/layers.js';
import { devicesOf, hex, placeOf, renderState, type VendorView } from '../flavors/common/layers.js';
import { CUDA_VIEW } from '../flavors/cuda/layers.js';
import { HIP_VIEW } from '../flavors/hip/layers.js';
import { parseOptions, UsageError, usageLine } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runScript, ScriptError } from './script.js';

export const INSPECT_USAGE = 'vmmkit inspect <script.mjs> [--at NAME] [--json]';

/** Each vendor's view, by the name its layer table gives. */
const VIEWS: Readonly<Record<string, VendorView>> = { HIP: HIP_VIEW, CUDA: CUDA_VIEW, ACL: ACL_VIEW };

/** The state of a process no front end made (createRuntime), in vmmkit's own words. */
export function formatCoreState(d: RuntimeDescription): string {
  return renderState(d, {
    process: (x) => `process ${x.pid} (${devicesOf(x)})`,
    reservation: (r) => `reservation ${hex(r.base)} +${hex(r.size)}`,
    mapping: (m, access) =>
      `mapping ${hex(m.va)} +${hex(m.size)} -> handle ${hex(m.handle)} (offset ${hex(m.offset)}); ${access}`,
    oneStep: (r, access) => `malloc ${hex(r.base)} +${hex(r.size)}; ${access}`,
    allocation: (a, at) =>
      `handle ${hex(a.handle)}: ${hex(a.size)} on ${placeOf(a.location)} (${a.origin}); handle references ` +
      `${a.handleRefs}, mappings ${a.mapRefs}${at.length > 0 ? `; mapped at ${at.map(hex).join(', ')}` : ''}`,
    access: (a) => (a === 3 ? 'read-write' : a === 1 ? 'read' : 'none'),
  });
}

/** A state in the words of `vendor` ('HIP', 'CUDA', 'ACL'; anything else: vmmkit's own). */
export function formatState(d: RuntimeDescription, vendor?: string): string {
  const view = vendor === undefined ? undefined : VIEWS[vendor];
  return view === undefined ? formatCoreState(d) : view.formatState(d);
}

/** What a process is, for the inspection view: a front end (its vendor's words) or a bare runtime. */
export function inspect(process: Runtime | { readonly runtime: Runtime }, vendor?: string): string {
  const rt = 'runtime' in process ? process.runtime : process;
  return formatState(rt.describe(), vendor ?? vendorOf(process));
}

function vendorOf(process: object): string | undefined {
  const name = process.constructor?.name;
  return name === 'HipFlavor'
    ? 'HIP'
    : name === 'CudaFlavor'
      ? 'CUDA'
      : name === 'AclFlavor'
        ? 'ACL'
        : undefined;
}

/** What `vmmkit trace --break` prints when a breakpoint fires: where, then the state there. */
export function formatBreak(context: BreakContext): string {
  const where = context.path.map((s) => `[${s.layer}] ${s.name}`).join(' > ');
  const d = context.describe();
  const state =
    d === undefined
      ? '  (no process state: the call runs outside a runtime)'
      : formatState(d, context.vendor);
  return `--- break at ${context.span.name}: ${where}\n${state}`;
}

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
  try {
    const { values, positionals } = parseOptions(argv, {
      json: { type: 'boolean' },
      at: { type: 'string' },
    });
    if (positionals.length !== 1)
      throw new UsageError(positionals.length === 0 ? 'no script given' : 'give one script');
    json = values.json === true;
    at = values.at;
    script = positionals[0];
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(usageLine('inspect', e.message, INSPECT_USAGE));
    return 2;
  }
  let seen: Inspection[];
  try {
    seen = await inspectScript(script, at);
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
export async function inspectScript(script: string, at?: string): Promise<Inspection[]> {
  const states = await runScript(script, new Tracer({ keep: false }), at);
  return states.map((s) => ({
    label: `${s.vendor ?? 'core'} process ${s.pid} ${s.when}`,
    vendor: s.vendor,
    description: s.description,
  }));
}
