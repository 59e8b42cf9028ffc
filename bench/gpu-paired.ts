/**
 * The 2 MiB VMM cycle (reserve, create, map, setAccess, unmap, release, free)
 * three ways in the same process, one cycle of each after the other: from C
 * (bench/native/vmm_bench.c, timed in C), through the raw koffi functions
 * with reused typed arrays (the FFI alone: what any JavaScript caller of
 * libcuda pays), and through vmmkit's CUDA flavour (createCuda({ backend:
 * 'cuda' })). Each of several fresh processes does this by itself, with
 * nothing else of vmmkit alive in it, as a user's program would:
 *
 *   node dist/bench/gpu-paired.js --native path/to/libvmm_bench.so --out DIR [--processes 8] [--commit SHA]
 *   node dist/bench/gpu-paired.js --fake --out DIR   (the stand-in driver, a rehearsal; no native side)
 *   node dist/bench/gpu-paired.js --stand-in DIR [--thrash KiB] --out DIR2
 *
 * `--stand-in DIR` builds the C libcuda stand-in (conformance/gpu/libcuda-
 * stand-in.c) into DIR and measures over it, with no GPU: the native side is
 * its own C cycle, and the layers run their real FFI paths (koffi, the fast
 * calls) over a driver that costs nothing, so what is left is vmmkit's own
 * work. `--thrash KiB` makes each of its calls touch that much memory, as a
 * real driver leaves the caches cold. The file is then stand-in-paired*.json.
 *
 * `--layer core` or `--layer backend` puts core's Runtime (no flavour) or the
 * CUDA backend alone (no core) in the flavour's place: what each layer costs
 * beside the driver. The file is then h200-paired-<layer>.json.
 *
 * Where the fast-call addon is built (Note [Fast cycle calls]), a fourth side
 * runs the cycle through its seven functions bare (the new FFI floor), and
 * the measured layer uses them; `--fast-calls off` keeps the layer on koffi
 * (the file is then h200-paired[-<layer>]-koffi.json). The two never share a
 * process: a call site that has seen both forms is made a fast call by
 * neither.
 *
 * Note [Process states]: on the H200 machine a fresh process draws, for its
 * whole life, how fast the driver's path runs: the native cycle takes about
 * 51 to 60 us in some processes and 63 to 110 us in others, the same CPU
 * giving either (each row records the CPU it ended on), and the
 * JavaScript's share grows in the slow ones. One process is one draw, so the
 * figure is the median over processes, each process's own ratios paired
 * cycle by cycle, with the rows kept; `by_state` splits them at the line
 * bench/gpu-states.ts found between the two clusters of its draws, when it
 * found one (byProcessState). The state belongs to the process, not the CPU
 * or anything in it: a C process with no JavaScript, pinned to one CPU,
 * draws either; and it follows the process's memory, its loads from memory
 * slower in the slow state (gpu-states' chases).
 *
 * `--pairs N` sets the rounds per process (default 4,000). Writes
 * DIR/h200-paired.json (DIR: $OUT or the current folder).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import koffi from 'koffi';
import { createFakeDriver } from '../conformance/gpu/fake-driver.js';
import { buildStandInLibcuda, standInControls } from '../conformance/gpu/stand-in-libcuda.js';
import { CYCLE_SYMBOLS } from '../src/backends/cuda/cycle-calls.js';
import { type CudaDriver, loadCudaDriver } from '../src/backends/cuda/driver.js';

import {
  correlation,
  flavourCycleOf,
  LAYERS,
  type Layer,
  layerCycle,
  median,
  NATIVE_SPEED_TARGET,
  ok,
  optionOf,
  processState,
  rawFastCycle,
  rawTypedCycle,
  runHeader,
  simulatedFlavour,
} from './gpu-run.js';
import { measureInChild } from './measure-in-child.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => optionOf(args, name);
const fake = args.includes('--fake');
const standInDir = opt('--stand-in');
const standInPath = standInDir === undefined ? undefined : join(standInDir, 'libcuda.so.1');
const layer = (opt('--layer') ?? 'flavour') as Layer;
if (!LAYERS.includes(layer)) throw new Error(`--layer ${layer}: flavour, core or backend`);
const fastCalls = opt('--fast-calls') !== 'off';
const SIZE = 2 * 1024 * 1024;
/** Driver calls in one cycle. */
const CALLS = CYCLE_SYMBOLS.length;

/** Microseconds of one cycle from C; under --fake, the raw cycle over the stand-in, timed here. */
function nativeCycle(driver: CudaDriver): () => number {
  if (fake) {
    const raw = rawTypedCycle(driver, SIZE);
    return () => {
      const t0 = performance.now();
      raw();
      return (performance.now() - t0) * 1000;
    };
  }
  const lib = koffi.load(standInPath ?? opt('--native') ?? '');
  ok(lib.func('int vb_init(int device)')(0) as number, 'vb_init');
  const cycle = lib.func('double vb_cycle(size_t size, int iters)');
  return () => {
    const us = cycle(SIZE, 1) as number;
    if (us < 0) throw new Error(`vb_cycle failed: CUresult ${-Math.round(us)}`);
    return us;
  };
}

const r4 = (x: number): number => Math.round(x * 10000) / 10000;
const r2 = (x: number): number => Math.round(x * 100) / 100;

/** Every order of n sides, taken in turn, so none always follows the same one. */
function orders(n: number): number[][] {
  if (n === 1) return [[0]];
  return orders(n - 1).flatMap((o) =>
    Array.from({ length: n }, (_, at) => [...o.slice(0, at), n - 1, ...o.slice(at)]),
  );
}

/** A child process's measurement, printed as one JSON line. */
function child(): void {
  const driver = fake ? createFakeDriver() : loadCudaDriver(standInPath ? [standInPath] : undefined);
  if (standInPath) standInControls(standInPath).setThrash(Number(opt('--thrash') ?? 0));
  const native = nativeCycle(driver);
  const raw = rawTypedCycle(driver, SIZE);
  // The fast floor only where the layer uses fast calls too: the two forms never share a process.
  const rawFast = fastCalls ? rawFastCycle(driver, SIZE) : undefined;
  const measured = layerCycle(layer, driver, SIZE, fastCalls);
  const flavour = measured.cycle;
  const timed = (cycle: () => void) => (): number => {
    const t0 = performance.now();
    cycle();
    return (performance.now() - t0) * 1000;
  };
  const sides = [native, timed(raw), timed(flavour), ...(rawFast ? [timed(rawFast)] : [])];
  const warm = fake ? 2000 : 20000;
  for (let i = 0; i < warm; i++) for (const side of sides) side();
  const settle = measured.checked.cycleCalls === 'fast' ? settleFastCalls(flavour, measured.checked) : 0;
  const pairs = Number(opt('--pairs') ?? (fake ? 2000 : 4000));
  const fastBeforeRounds = measured.checked.fastCallCount;
  const t = sides.map(() => new Float64Array(pairs));
  const turns = orders(sides.length);
  for (let i = 0; i < pairs; i++) for (const k of turns[i % turns.length]) t[k][i] = sides[k]();
  const ratio = (a: Float64Array, b: Float64Array) => median(a.map((x, i) => x / b[i]));
  const fastFloor = t[3];
  // Measured last, so nothing of it runs beside the rounds above (Note [A warm reference]).
  const simCycleUs = warmSimulatorCycle();
  const stat = readFileSync('/proc/self/stat', 'utf8');
  console.log(
    JSON.stringify({
      cpu: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[36]),
      native_p50_us: r2(median(t[0])),
      raw_p50_us: r2(median(t[1])),
      flavour_p50_us: r2(median(t[2])),
      flavour_ratio: r4(ratio(t[2], t[0])),
      raw_ratio: r4(ratio(t[1], t[0])),
      flavour_over_raw: r4(ratio(t[2], t[1])),
      flavour_extra_us: r2(median(t[2].map((x, i) => x - t[0][i]))),
      sim_cycle_us: r4(simCycleUs),
      ...(fastFloor
        ? {
            raw_fast_p50_us: r2(median(fastFloor)),
            raw_fast_ratio: r4(ratio(fastFloor, t[0])),
            flavour_over_raw_fast: r4(ratio(t[2], fastFloor)),
          }
        : {}),
      pairs,
      // The form of the measured layer's cycle calls, and the share of them V8 made as fast calls
      // (the rest ran the addon's slow callbacks, or koffi).
      cycle_calls: {
        form: measured.checked.cycleCalls,
        ...(measured.checked.cycleCallsWhy ? { why: measured.checked.cycleCallsWhy } : {}),
      },
      fast_call_share: r4(measured.checked.fastCallCount / (CALLS * (warm + settle + pairs))),
      settle_cycles: settle,
      measured_fast_share: r4((measured.checked.fastCallCount - fastBeforeRounds) / (CALLS * pairs)),
    }),
  );
}

/**
 * Note [Settling the fast calls]: V8 makes a cycle call a fast call only
 * once TurboFan has optimised the code around it, and when depends on the
 * V8: Node 20's has all seven calls of the flavour's cycle fast within the
 * 20,000 warm-up rounds, Node 24's took 21,000 to over 40,000 cycles of the
 * flavour alone over the stand-in (scratch runs), and Node 22's never makes
 * two of them fast (Note [Fast calls in try blocks] in
 * src/backends/cuda/cycle-calls.ts). So after the warm-up the measured layer
 * runs alone, in batches of 1,000 cycles, until a batch makes every call a
 * fast call or 60 batches have run; the row records how many cycles that
 * took (settle_cycles) and the share of fast calls in the measured rounds
 * (measured_fast_share). A steady state is what a long-running program sees.
 */
function settleFastCalls(cycle: () => void, checked: { readonly fastCallCount: number }): number {
  const batch = 1000;
  for (let b = 0; b < 60; b++) {
    const before = checked.fastCallCount;
    for (let i = 0; i < batch; i++) cycle();
    if (checked.fastCallCount - before === CALLS * batch) return (b + 1) * batch;
  }
  return 60 * batch;
}

/**
 * Note [A warm reference]: the layer's JavaScript costs more in a slow
 * process (Note [Process states]). To tell whether that is the process
 * running all code slower or only the code that follows a driver call, each
 * process ends by timing the same flavour's 2 MiB cycle over the simulated
 * machine, which calls no driver and so runs warm: the median of 40 batches
 * of 500 cycles, after 20,000 to warm it. It runs after the measured rounds,
 * because it shares core's code with the measured layer and would make that
 * code polymorphic.
 */
function warmSimulatorCycle(): number {
  const cu = simulatedFlavour();
  const cycle = flavourCycleOf(cu, SIZE);
  for (let i = 0; i < 20000; i++) cycle();
  const batches = new Float64Array(40);
  for (let b = 0; b < batches.length; b++) {
    const t0 = performance.now();
    for (let i = 0; i < 500; i++) cycle();
    batches[b] = ((performance.now() - t0) * 1000) / 500;
  }
  cu.dispose();
  return median(batches);
}

interface Row {
  native_p50_us: number;
  flavour_extra_us: number;
  sim_cycle_us: number;
  flavour_ratio: number;
  raw_ratio: number;
  flavour_over_raw: number;
  raw_fast_ratio?: number;
  flavour_over_raw_fast?: number;
  measured_fast_share: number;
  cycle_calls: { form: string; why?: string };
}

function parent(): void {
  const processes = Number(opt('--processes') ?? (fake ? 2 : 8));
  if (standInDir !== undefined) buildStandInLibcuda(standInDir);
  const rows: Row[] = [];
  for (let p = 0; p < processes; p++)
    rows.push(measureInChild<Row>(import.meta.url, args, `process ${p + 1}`));
  const over = (key: Exclude<keyof Row, 'cycle_calls'>) => {
    const values = rows.map((r) => r[key]).filter((v) => v !== undefined);
    if (values.length === 0) return null;
    return { median: r4(median(values)), min: r4(Math.min(...values)), max: r4(Math.max(...values)) };
  };
  const rOf = (x: Exclude<keyof Row, 'cycle_calls'>, y: Exclude<keyof Row, 'cycle_calls'>) =>
    r2(
      correlation(
        rows.map((r) => r[x] ?? Number.NaN),
        rows.map((r) => r[y] ?? Number.NaN),
      ),
    );
  // Every process takes the same form in one setting; a run where they differ says so.
  const forms = new Set(rows.map((r) => JSON.stringify(r.cycle_calls)));
  const cycleCalls = forms.size === 1 ? rows[0].cycle_calls : { form: 'mixed', why: [...forms].join('; ') };
  const flavour = over('flavour_ratio') ?? { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const byState = byProcessState(rows);
  const result = {
    ...runHeader('gpu-paired', args),
    fake,
    stand_in: standInPath ? { thrash_kib: Number(opt('--thrash') ?? 0) } : null,
    layer,
    cycle_calls: cycleCalls,
    node: process.version,
    target_ratio: NATIVE_SPEED_TARGET,
    met: flavour.median <= NATIVE_SPEED_TARGET,
    flavour_ratio: flavour,
    raw_ratio: over('raw_ratio'),
    flavour_over_raw: over('flavour_over_raw'),
    raw_fast_ratio: over('raw_fast_ratio'),
    flavour_over_raw_fast: over('flavour_over_raw_fast'),
    native_p50_us: over('native_p50_us'),
    flavour_extra_us: over('flavour_extra_us'),
    sim_cycle_us: over('sim_cycle_us'),
    measured_fast_share: over('measured_fast_share'),
    // Note [A warm reference]: how the layer's extra microseconds follow the process's driver path and its warm JavaScript.
    correlation: {
      extra_with_native: rOf('native_p50_us', 'flavour_extra_us'),
      extra_with_sim: rOf('sim_cycle_us', 'flavour_extra_us'),
      sim_with_native: rOf('native_p50_us', 'sim_cycle_us'),
    },
    by_state: byState,
    processes: rows,
    method:
      "Each row is a fresh process (Note [Process states] in bench/gpu-paired.ts): 20,000 warm-up rounds, then rounds of one cycle from C (timed in C), one through the raw koffi functions with typed arrays, one through the CUDA flavour (or the layer named: flavour_* figures are then that layer's) and, where the layer uses fast calls, one through the fast-call addon's functions bare (raw_fast_*) (each timed with performance.now, its timer included), the order rotating over every permutation; each ratio is the median over rounds of that round's ratio, flavour_extra_us the median over rounds of the layer's cycle less the C cycle. sim_cycle_us is the CUDA flavour's cycle over the simulated machine in the same process, warm, timed after the rounds (Note [A warm reference]); correlation is Pearson's r over processes. cycle_calls is the form the measured layer's cycle calls took (Note [Fast cycle calls]); settle_cycles the cycles of the measured layer alone run after the warm-up until a batch of 1,000 made every call a fast call (at most 60,000; Note [Settling the fast calls]), measured_fast_share the share of fast calls in the measured rounds. The figures above the rows are the median, least and greatest over processes.",
  };
  const outDir = opt('--out') ?? process.env.OUT ?? '.';
  const name = `${standInPath ? 'stand-in' : 'h200'}-paired${layer === 'flavour' ? '' : `-${layer}`}${fastCalls ? '' : '-koffi'}.json`;
  writeFileSync(join(outDir, name), `${JSON.stringify(result, null, 1)}\n`);
  console.log(
    JSON.stringify({
      flavour_ratio: flavour,
      raw_ratio: result.raw_ratio,
      raw_fast_ratio: result.raw_fast_ratio,
      cycle_calls: cycleCalls,
      by_state: byState,
      met: result.met,
    }),
  );
}

/**
 * The rows split by process state (Note [Process states]) at the line
 * bench/gpu-states.ts found between the states (its file, `--states PATH`,
 * by default bench/results/h200-process-states.json): each state's count
 * and the median, least and greatest of its processes' native cycles and
 * ratios. Null without that file, and over the stand-in or the fake driver
 * unless a file is named. The headline stays the median over every process.
 */
function byProcessState(rows: readonly Row[]) {
  // The committed line is the H200's: a stand-in or fake run has no states of that machine.
  if (opt('--states') === undefined && (fake || standInPath !== undefined)) return null;
  const file =
    opt('--states') ??
    fileURLToPath(new URL('../../bench/results/h200-process-states.json', import.meta.url));
  if (!existsSync(file)) return null;
  const split = (JSON.parse(readFileSync(file, 'utf8')) as { split_us: number | null }).split_us;
  if (split === null) return null;
  const summary = (state: 'fast' | 'slow') => {
    const inState = rows.filter((r) => processState(r.native_p50_us, split) === state);
    if (inState.length === 0) return null;
    const ratios = inState.map((r) => r.flavour_ratio);
    const natives = inState.map((r) => r.native_p50_us);
    return {
      processes: inState.length,
      native_p50_us: { median: r2(median(natives)), min: Math.min(...natives), max: Math.max(...natives) },
      flavour_ratio: { median: r4(median(ratios)), min: Math.min(...ratios), max: Math.max(...ratios) },
    };
  };
  return {
    split_us: split,
    from: file.split('/').slice(-2).join('/'),
    fast: summary('fast'),
    slow: summary('slow'),
  };
}

if (args.includes('--measure')) child();
else parent();
