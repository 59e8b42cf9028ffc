/**
 * The inspection view: a process's state in its vendor's object model (HIP:
 * parent virtual buffers, sub-buffers cross-linked to GenericAllocations and
 * their reference counts; CUDA and ACL in their own words), printed by
 * `vmmkit inspect <script.mjs>` for every process a script made, and by
 * `vmmkit trace --break NAME` at each breakpoint.
 *
 *   vmmkit inspect <script.mjs> [--json]
 *
 * The script is the one `vmmkit trace` runs (its default export receives
 * createCuda, createHip, createAcl, createRuntime, createMachine). Each
 * process is shown as it was just before it was disposed, or when the
 * script returned.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createMachine, createRuntime } from '../compose/create-runtime.js';
import type { Runtime, RuntimeDescription } from '../core/runtime.js';
import type { BreakContext } from '../core/trace.js';
import { createAcl } from '../flavors/acl/acl.js';
import { ACL_VIEW } from '../flavors/acl/layers.js';
import { devicesOf, hex, placeOf, renderState, type VendorView } from '../flavors/common/layers.js';
import type { FlavorOptions } from '../flavors/common/process.js';
import { createCuda } from '../flavors/cuda/cuda.js';
import { CUDA_VIEW } from '../flavors/cuda/layers.js';
import { createHip } from '../flavors/hip/hip.js';
import { HIP_VIEW } from '../flavors/hip/layers.js';
import type { CliOutput } from './cli.js';

export const INSPECT_USAGE = 'vmmkit inspect <script.mjs> [--json]';

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
  let json = false;
  let script: string;
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1)
      throw new Error(positionals.length === 0 ? 'no script given' : 'give one script');
    json = values.json === true;
    script = positionals[0];
  } catch (e) {
    io.err(`vmmkit inspect: ${e instanceof Error ? e.message : String(e)} (usage: ${INSPECT_USAGE})`);
    return 2;
  }
  let seen: Inspection[];
  try {
    seen = await inspectScript(script);
  } catch (e) {
    io.err(`vmmkit inspect: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  if (json) {
    io.out(JSON.stringify(seen, (_, v) => (typeof v === 'bigint' ? hex(v) : v), 2));
    return 0;
  }
  if (seen.length === 0) io.out('(the script made no process)');
  for (const s of seen) io.out(`=== ${s.label}\n${formatState(s.description, s.vendor)}`);
  return 0;
}

/** Run `script` and describe each process it made, just before its dispose or when the script returned. */
export async function inspectScript(script: string): Promise<Inspection[]> {
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(resolve(script)).href)) as { default?: unknown };
  } catch (e) {
    throw new Error(`cannot load ${script}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
  if (typeof mod.default !== 'function') {
    throw new Error(
      `${script} must export a default function taking { createCuda, createHip, createAcl, createRuntime, createMachine }`,
    );
  }
  const live: { rt: Runtime; vendor: string | undefined }[] = [];
  const ended: Inspection[] = [];
  const watch = (rt: Runtime, vendor: string | undefined) => {
    const entry = { rt, vendor };
    live.push(entry);
    const dispose = rt.dispose.bind(rt);
    rt.dispose = () => {
      const i = live.indexOf(entry);
      if (i >= 0) {
        live.splice(i, 1);
        ended.push({
          label: `${vendor ?? 'core'} process ${rt.pid} just before it was disposed`,
          vendor,
          description: rt.describe(),
        });
      }
      dispose();
    };
  };
  const bind =
    <T extends { runtime: Runtime }>(create: (options?: FlavorOptions) => T, vendor: string) =>
    (options: FlavorOptions = {}) => {
      const p = create(options);
      watch(p.runtime, vendor);
      return p;
    };
  const factories = {
    createCuda: bind(createCuda, 'CUDA'),
    createHip: bind(createHip, 'HIP'),
    createAcl: bind(createAcl, 'ACL'),
    createRuntime: (options: FlavorOptions = {}) => {
      const rt = createRuntime(options);
      watch(rt, undefined);
      return rt;
    },
    createMachine,
  };
  await (mod.default as (f: typeof factories) => unknown)(factories);
  return [
    ...ended,
    ...live.map(({ rt, vendor }) => ({
      label: `${vendor ?? 'core'} process ${rt.pid} when the script returned`,
      vendor,
      description: rt.describe(),
    })),
  ];
}
