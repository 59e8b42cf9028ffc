/**
 * What each layer of the 2 MiB VMM cycle costs, counted rather than timed:
 * the instructions it runs and the cache lines of code and data it finds
 * cold, per cycle, under valgrind's callgrind, over the libcuda stand-in
 * (conformance/gpu/libcuda-stand-in.c) with its thrash knob on, as a real
 * driver call leaves the caches (Note [Cold lines] in src/core/runtime.ts).
 * Timings on a shared machine wander by a percent or more from run to run;
 * these counts repeat to within a few lines, so a change's effect on the
 * cycle shows here first.
 *
 *   node dist/bench/cycle-footprint.js [--cycles 100] [--thrash 256] [--functions] [--out DIR]
 *
 * Each layer runs in a process of its own: the fast-call floor (the seven
 * calls bare), the backend, core's Runtime and the CUDA flavour
 * (bench/gpu-run.ts layerCycle). 20,000 cycles warm it without thrash,
 * then collection is switched on for the measured cycles only
 * (bench/native/callgrind_toggle.c). The simulated caches are small L1s
 * (4 KiB, so a call's every line reaches the last level, as a real driver
 * call leaves L1 cold) and a 1 MiB last level the thrash empties between
 * calls: `code_lines` and `data_lines` are the lines read from beyond it.
 * The stand-in's own thrash writes are the same in every layer and left
 * out (reads only). Beside them, `simulator` counts `npm run bench`'s 2 MiB
 * cycle (the flavour over the simulated machine, warm) in instructions, which
 * no machine's speed moves, and `bookkeeping_floor` the least any simulator of
 * the cycle must do (Note [The bookkeeping floor]), in the same run: the
 * simulator's figure is `simulator_over_floor`, their ratio. Needs valgrind
 * with its headers and a C compiler; says so and writes nothing without them.
 * Writes DIR/cycle-footprint.json.
 *
 * `--functions` also names where each side's counts went: node runs with
 * --perf-basic-prof, which names V8's compiled code for callgrind
 * (bench/callgrind-functions.ts), and the file gains each side's 25 costliest
 * functions, self cost per cycle (V8 inlines freely, so a function's figure
 * includes what it inlined).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import koffi from 'koffi';
import { buildStandInLibcuda, standInControls } from '../conformance/gpu/stand-in-libcuda.js';
import { loadCudaDriver } from '../src/backends/cuda/driver.js';
import { packagePath } from '../src/util/package-path.js';
import { type FunctionCost, functionCosts, perfMapNames } from './callgrind-functions.js';
import {
  commitMeasured,
  flavourCycleOf,
  LAYERS,
  type Layer,
  layerCycle,
  optionOf,
  rawFastCycle,
  simulatedFlavour,
} from './gpu-run.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => optionOf(args, name);
const SIZE = 2 * 1024 * 1024;
const WARM = 20000;
const cycles = Number(opt('--cycles') ?? 100);
const thrashKib = Number(opt('--thrash') ?? 256);
const byFunction = args.includes('--functions');
/** The measured sides, each over the one before it. */
const SIDES = ['fast', ...[...LAYERS].reverse()] as const;
type Side = (typeof SIDES)[number];
const CACHES = ['--I1=4096,4,64', '--D1=4096,4,64', '--LL=1048576,16,64'];

/**
 * Note [The bookkeeping floor]
 * A simulator of the 2 MiB cycle has at least to remember what each call made
 * and forget it again: a reserved range, a handle, the mapping between them
 * and its access, each one entry of a Map keyed by an integer (beside one
 * resident entry, so no table shrinks and grows each cycle), with no check
 * of an argument, no address placement, no pages and no device. That is the
 * floor: no simulator that answers the cycle's calls does less. How long a
 * cycle takes on a given day measures the machine; the simulator's
 * instructions over the floor's, counted in one run, measure what its checks,
 * placement and books cost on top, and no machine's speed moves that ratio.
 */
function bookkeepingFloorCycle(size: number): () => void {
  // One resident entry each, as a simulator's books always hold something: an empty table would
  // shrink on every cycle's last delete and grow again on its first set, costs no simulator pays.
  const resident = 0x10000;
  const ranges = new Map<number, number>([[resident, size]]);
  const handles = new Map<number, number>([[resident, size]]);
  const mappings = new Map<number, { handle: number; access: number }>([
    [resident, { handle: resident, access: 3 }],
  ]);
  let next = 0;
  return () => {
    next = (next + 2) & 0xffff;
    const va = next;
    const handle = next + 1;
    ranges.set(va, size);
    handles.set(handle, size);
    mappings.set(va, { handle, access: 0 });
    mappings.get(va)!.access = 3;
    mappings.delete(va);
    handles.delete(handle);
    ranges.delete(va);
  };
}

/** The warm sides: no driver under them, so no thrash. */
const WARM_SIDES = ['simulator', 'floor'] as const;
type WarmSide = (typeof WARM_SIDES)[number];

/**
 * A child: warm the side's cycle, turn the thrash on, count `cycles` cycles.
 * The simulator's side is the flavour over the simulated machine, counted
 * warm (it calls no driver): `npm run bench`'s 2 MiB cycle, in instructions;
 * the floor's, the least bookkeeping of that cycle (Note [The bookkeeping floor]).
 */
function child(side: Side | WarmSide, standIn: string, toggleLib: string): void {
  const toggle = koffi.load(toggleLib).func('void footprint_toggle(void)') as () => void;
  if (side === 'simulator' || side === 'floor') {
    const cycle =
      side === 'simulator' ? flavourCycleOf(simulatedFlavour(), SIZE) : bookkeepingFloorCycle(SIZE);
    for (let i = 0; i < WARM; i++) cycle();
    collectGarbage();
    toggle();
    for (let i = 0; i < cycles; i++) cycle();
    toggle();
    return;
  }
  const driver = loadCudaDriver([standIn]);
  const controls = standInControls(standIn);
  const cycle =
    side === 'fast' ? rawFastCycle(driver, SIZE) : layerCycle(side as Layer, driver, SIZE, true).cycle;
  if (cycle === undefined) throw new Error('the fast-call addon is not built (npm install builds it)');
  for (let i = 0; i < WARM; i++) cycle();
  controls.setThrash(thrashKib);
  for (let i = 0; i < 20; i++) cycle();
  collectGarbage();
  toggle();
  for (let i = 0; i < cycles; i++) cycle();
  toggle();
}

/**
 * A young-generation collection just before the counted cycles, so that
 * none falls in them: they allocate about a kilobyte each, far from filling
 * it, and a collection in the window would add as many instructions as
 * many cycles. (A full one is worse: V8 recompiles afterwards.)
 */
function collectGarbage(): void {
  (globalThis as { gc?: (options: { type: 'minor' }) => void }).gc?.({ type: 'minor' });
}

interface Counts {
  ir: number;
  code_lines: number;
  data_lines: number;
}

/** Run valgrind with these arguments to its end; the process id it ran as (node's, under it). */
function runValgrind(valgrindArgs: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = execFile('valgrind', valgrindArgs, { maxBuffer: 64 << 20 }, (error) => {
      if (error) reject(error);
      else resolve(child.pid ?? -1);
    });
  });
}

/** The per-cycle counts in a callgrind output file: its events line names the columns of its totals. */
function countsOf(file: string): Counts {
  const text = readFileSync(file, 'utf8');
  const events = /^events: (.*)$/m.exec(text)?.[1].split(' ');
  const totals = /^(?:summary|totals): (.*)$/m.exec(text)?.[1].split(' ').map(Number);
  if (events === undefined || totals === undefined) throw new Error(`${file}: no events or totals`);
  const of = (event: string) => (totals[events.indexOf(event)] ?? Number.NaN) / cycles;
  return { ir: Math.round(of('Ir')), code_lines: Math.round(of('ILmr')), data_lines: Math.round(of('DLmr')) };
}

async function parent(): Promise<void> {
  const missing = ['valgrind', process.env.CC || 'cc'].filter(
    (tool) => spawnSync(tool, ['--version']).status !== 0,
  );
  if (missing.length > 0) {
    console.log(`cycle-footprint: needs ${missing.join(' and ')}; nothing measured`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'vmmkit-footprint-'));
  try {
    const standIn = buildStandInLibcuda(dir);
    const toggleLib = join(dir, 'libcallgrind_toggle.so');
    const source = packagePath('bench/native/callgrind_toggle.c') ?? 'bench/native/callgrind_toggle.c';
    try {
      execFileSync(process.env.CC || 'cc', ['-O2', '-shared', '-fPIC', source, '-o', toggleLib]);
    } catch {
      console.log("cycle-footprint: valgrind's headers (valgrind/callgrind.h) are missing; nothing measured");
      return;
    }
    const functions: Partial<Record<Side | WarmSide, FunctionCost[]>> = {};
    const measure = async (side: Side | WarmSide): Promise<Counts> => {
      const out = join(dir, `${side}.callgrind`);
      const pid = await runValgrind([
        '--tool=callgrind',
        '--collect-atstart=no',
        '--cache-sim=yes',
        ...CACHES,
        `--callgrind-out-file=${out}`,
        process.execPath,
        // One compiler thread: the code measured is then the same code every run.
        '--no-concurrent-recompilation',
        '--no-concurrent-sparkplug',
        '--expose-gc',
        ...(byFunction ? ['--perf-basic-prof'] : []),
        fileURLToPath(import.meta.url),
        '--measure',
        side,
        standIn,
        toggleLib,
        ...args,
      ]);
      if (byFunction) {
        // valgrind runs node in its own process: node's pid is the one spawned.
        const map = `/tmp/perf-${pid}.map`;
        const names = perfMapNames(existsSync(map) ? readFileSync(map, 'utf8') : '');
        functions[side] = functionCosts(readFileSync(out, 'utf8'), names, cycles, 25);
        rmSync(map, { force: true });
      }
      return countsOf(out);
    };
    // Two at a time: callgrind runs one thread per process.
    const counts: Partial<Record<Side, Counts>> = {};
    for (let i = 0; i < SIDES.length; i += 2) {
      const pair = SIDES.slice(i, i + 2);
      const got = await Promise.all(pair.map(measure));
      pair.forEach((side, k) => {
        counts[side] = got[k];
      });
    }
    const [simulator, floor] = await Promise.all(WARM_SIDES.map(measure));
    const rows = SIDES.map((side, i) => {
      const c = counts[side]!;
      const below = i === 0 ? undefined : counts[SIDES[i - 1]]!;
      return {
        side,
        ...c,
        ...(below
          ? {
              over_below: {
                ir: c.ir - below.ir,
                code_lines: c.code_lines - below.code_lines,
                data_lines: c.data_lines - below.data_lines,
              },
            }
          : {}),
      };
    });
    const valgrind = execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim();
    const result = {
      date: new Date().toISOString(),
      commit: commitMeasured(opt('--commit')),
      command: `node dist/bench/cycle-footprint.js ${args.join(' ')}`.trim(),
      node: process.version,
      valgrind,
      cycles,
      thrash_kib: thrashKib,
      caches: CACHES.join(' '),
      sides: rows,
      simulator,
      bookkeeping_floor: floor,
      simulator_over_floor: Math.round((simulator.ir / floor.ir) * 100) / 100,
      ...(byFunction ? { functions } : {}),
      method:
        'Per cycle, each side in a process of its own under callgrind: ir is every instruction (the stand-in thrash included, the same on every side), code_lines and data_lines the instruction and data lines read from beyond the last-level cache (the thrash empties it at every driver call). over_below is the difference from the side before: the fast-call floor, then the backend, core and the flavour, each built on the one before. simulator is the cycle through the CUDA flavour over the simulated machine (the 2 MiB cycle of npm run bench), counted warm: no driver call, no thrash. bookkeeping_floor is the least any simulator of that cycle must do (a Map entry made and dropped for the range, the handle and the mapping, its access set: Note [The bookkeeping floor] in bench/cycle-footprint.ts), counted the same way in the same run; simulator_over_floor is simulator.ir over its ir, a figure the speed of the machine does not move.' +
        (byFunction
          ? " functions: each side's 25 costliest functions, their self cost per cycle (what V8 inlined counts in its caller), V8's compiled code named through node's --perf-basic-prof map."
          : ''),
    };
    const outDir = opt('--out') ?? 'bench/results';
    writeFileSync(join(outDir, 'cycle-footprint.json'), `${JSON.stringify(result, null, 1)}\n`);
    console.log(JSON.stringify({ sides: rows, simulator, bookkeeping_floor: floor }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (args[0] === '--measure') child(args[1] as Side | WarmSide, args[2], args[3]);
else await parent();
