/**
 * `vmmkit map <script.mjs> [--out map.html|map.svg] [--at NAME]`
 *
 * Runs a script as `vmmkit trace` does and draws the address space of every
 * process it made (src/report/address-map.ts): reservations, mappings,
 * handles and each device's access. Without --at, each process is drawn as
 * it was at its end: just before it was disposed, or when the script
 * returned. A script may call `mark(NAME)` (passed with the factories) at
 * points of its own; --at NAME draws every live process at that mark.
 *
 *   export default ({ createCuda, mark }) => { ...; mark('grown'); ... }
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMachine, createRuntime } from '../compose/create-runtime.js';
import type { Runtime } from '../core/runtime.js';
import { createAcl } from '../flavors/acl/acl.js';
import type { FlavorOptions } from '../flavors/common/process.js';
import { createCuda } from '../flavors/cuda/cuda.js';
import { createHip } from '../flavors/hip/hip.js';
import { type MapCapture, renderMapPage, renderMapSvg } from '../report/map-page.js';
import { parseOptions, UsageError } from './arguments.js';
import type { CliOutput } from './cli.js';
import { checkWritable } from './report.js';

export const MAP_USAGE = 'vmmkit map <script.mjs> [--out map.html|map.svg] [--at NAME]';

/** Run `vmmkit map`; returns the exit code. */
export async function mapCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  try {
    return await run(io, [...argv]);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`vmmkit map: ${e.message} (usage: ${MAP_USAGE})`);
      return 2;
    }
    io.err(`vmmkit map: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

async function run(io: CliOutput, argv: string[]): Promise<number> {
  const { values, positionals: args } = parseOptions(argv, {
    out: { type: 'string' },
    at: { type: 'string' },
  });
  const out = values.out ?? 'map.html';
  const at = values.at;
  if (args.length !== 1) throw new UsageError(args.length === 0 ? 'no script given' : 'give one script');
  checkWritable(out);
  const script = args[0];
  const captures = await captureScript(script, at);
  if (at !== undefined && captures.length === 0) throw new Error(`the script never called mark('${at}')`);
  const text = out.endsWith('.svg')
    ? renderMapSvg(captures)
    : renderMapPage(captures, `vmmkit map: ${script}`);
  try {
    writeFileSync(out, text);
  } catch (e) {
    throw new Error(`cannot write ${out}: ${e instanceof Error ? e.message : String(e)}`);
  }
  io.out(`wrote ${out} (${captures.length} process${captures.length === 1 ? '' : 'es'})`);
  return 0;
}

/** Run `script` and describe its processes at its end (or at mark `at`). */
export async function captureScript(script: string, at?: string): Promise<MapCapture[]> {
  let url: string;
  try {
    url = pathToFileURL(resolve(script)).href;
  } catch (e) {
    throw new Error(`cannot load ${script}: ${e instanceof Error ? e.message : String(e)}`);
  }
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (e) {
    throw new Error(`cannot load ${script}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
  if (typeof mod.default !== 'function') {
    throw new Error(
      `${script} must export a default function taking { createCuda, createHip, createAcl, createRuntime, mark }`,
    );
  }
  const live: Runtime[] = [];
  const ended: MapCapture[] = [];
  const marked: MapCapture[] = [];
  const label = (rt: Runtime, when: string) => `process ${rt.pid} ${when}`;
  const watch = (rt: Runtime) => {
    live.push(rt);
    const dispose = rt.dispose.bind(rt);
    // The state just before the process ends is what "at its end" means for a process the script disposes.
    rt.dispose = () => {
      const i = live.indexOf(rt);
      if (i >= 0) {
        live.splice(i, 1);
        ended.push({ label: label(rt, 'just before it was disposed'), description: rt.describe() });
      }
      dispose();
    };
  };
  const bind =
    <T extends { runtime: Runtime }>(create: (options?: FlavorOptions) => T) =>
    (options: FlavorOptions = {}) => {
      const p = create(options);
      watch(p.runtime);
      return p;
    };
  const factories = {
    createCuda: bind(createCuda),
    createHip: bind(createHip),
    createAcl: bind(createAcl),
    createRuntime: (options: FlavorOptions = {}) => {
      const rt = createRuntime(options);
      watch(rt);
      return rt;
    },
    createMachine,
    mark: (name: string) => {
      if (name === at)
        for (const rt of live)
          marked.push({ label: label(rt, `at mark '${name}'`), description: rt.describe() });
    },
  };
  await (mod.default as (f: typeof factories) => unknown)(factories);
  if (at !== undefined) return marked;
  return [
    ...ended,
    ...live.map((rt) => ({ label: label(rt, 'when the script returned'), description: rt.describe() })),
  ];
}
