#!/usr/bin/env node
// Builds build/cycle-calls.node, the seven driver calls of the VMM cycle as V8
// fast API calls (Note [Fast cycle calls] in src/backends/cuda/cycle-calls.ts).
// Run by npm at install. The addon is optional: where there is no C++
// compiler, no Node headers or no Linux, this says why and exits 0, and the
// CUDA backend makes those calls through koffi. `--require` makes any of
// those an error (the test suite's check that the addon is built here).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src/backends/cuda/native/cycle-calls.cc');
// `--out PATH` builds elsewhere: an addon for another Node, against that Node's headers (conformance/gpu/prepare-node.sh).
const outAt = process.argv.indexOf('--out');
const target = outAt >= 0 ? process.argv[outAt + 1] : join(root, 'build/cycle-calls.node');
const required = process.argv.includes('--require');

function skip(why) {
  const message = `vmmkit: ${target} not built (${why}); the CUDA backend's cycle calls go through koffi`;
  if (required) {
    console.error(message);
    process.exit(1);
  }
  console.warn(message);
  process.exit(0);
}

if (process.platform !== 'linux') skip(`${process.platform}: the CUDA backend is Linux only`);
if (!existsSync(source)) skip(`${source} is not in this copy`);
// Node's headers: npm's nodedir where it is set, else beside the running node (its install prefix); only
// headers of the running Node's ABI (NODE_MODULE_VERSION), since it is this Node that will load the addon
// (a nodedir left in an .npmrc can name another Node's headers).
const includeDirs = [process.env.npm_config_nodedir, join(dirname(process.execPath), '..')]
  .filter(Boolean)
  .map((dir) => join(dir, 'include', 'node'));
/** A header directory's `#define NAME value`, or undefined. */
function defined(dir, name) {
  const header = join(dir, 'node_version.h');
  if (!existsSync(header)) return undefined;
  return new RegExp(`#define ${name} (\\d+)`).exec(readFileSync(header, 'utf8'))?.[1];
}
const include = includeDirs.find(
  (dir) => existsSync(join(dir, 'node.h')) && defined(dir, 'NODE_MODULE_VERSION') === process.versions.modules,
);
if (!include) skip(`no headers of Node ${process.version} in ${includeDirs.join(' or ')}`);

// Node 24's headers need C++20; older ones build as C++17, which older compilers also know.
const standard = Number(defined(include, 'NODE_MAJOR_VERSION')) >= 24 ? 'c++20' : 'c++17';
const compiler = process.env.CXX || 'g++';
mkdirSync(dirname(target), { recursive: true });
try {
  execFileSync(
    compiler,
    [
      '-O2',
      `-std=${standard}`,
      '-shared',
      '-fPIC',
      '-fno-exceptions',
      '-fno-rtti',
      '-fvisibility=hidden',
      '-Wall',
      '-Werror',
      // node.h's NODE_MODULE_INIT casts its init function to the registration type.
      '-Wno-cast-function-type',
      `-I${include}`,
      source,
      '-o',
      target,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
} catch (e) {
  skip(`${compiler} failed: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
}
console.log(`vmmkit: built ${target}`);
