/**
 * `vmmkit map <script.mjs> [--out map.html|map.svg] [--at NAME]`
 *
 * Runs a script as `vmmkit trace` does and draws the address space of every
 * process it made (src/report/address-map.ts): reservations, mappings,
 * handles and each device's access. Without --at, each process is drawn as
 * it was at its end: just before it was disposed, or when the script
 * returned. A script may call `mark(NAME)` (one of the helpers of Note
 * [Script helpers] in script.ts) at points of its own; --at NAME draws
 * every live process at that mark.
 *
 *   export default ({ createCuda, mark }) => { ...; mark('grown'); ... }
 *
 * --out names the file: .svg gives the maps alone, .html (or no extension)
 * the page with its tables; another extension is a usage mistake.
 */
import { Tracer } from '../core/trace.js';
import { type MapCapture, renderMapPage, renderMapSvg } from '../report/map-page.js';
import { parseCommand, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runCommand } from './command.js';
import { MAP_SPEC } from './command-specs.js';
import { checkOutName, checkWritable, writeOut } from './output-files.js';
import { runScript } from './script.js';

export const MAP_USAGE = usageOf(MAP_SPEC);

/** Run `vmmkit map`; returns the exit code. */
export function mapCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  return runCommand(io, 'map', MAP_USAGE, () => run(io, argv));
}

async function run(io: CliOutput, argv: readonly string[]): Promise<number> {
  const { values, operands: args } = parseCommand(MAP_SPEC, argv);
  const out = values.out ?? 'map.html';
  const at = values.at;
  const svg =
    checkOutName(out, ['.html', '.htm', '.svg'], 'a map is an HTML page or an SVG picture') === '.svg';
  checkWritable(out);
  const script = args[0];
  const captures = await captureScript(script, at);
  writeOut(out, svg ? renderMapSvg(captures) : renderMapPage(captures, `vmmkit map: ${script}`));
  io.out(`wrote ${out} (${captures.length} process${captures.length === 1 ? '' : 'es'})`);
  return 0;
}

/** Run `script` and describe its processes at their end (or at mark `at`), as the map draws them. */
export async function captureScript(script: string, at?: string): Promise<MapCapture[]> {
  const states = await runScript(script, new Tracer({ keep: false }), at);
  return states.map((s) => ({ label: `process ${s.pid} ${s.when}`, description: s.description }));
}
