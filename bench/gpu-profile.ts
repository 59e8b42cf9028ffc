/**
 * Where the 2 MiB VMM cycle's time goes when vmmkit's CUDA flavour drives
 * the real driver: V8's sampling profiler over the cycle, each sample put
 * down to the driver (the checked layer's calls into libcuda, koffi's
 * marshalling included), to vmmkit's own JavaScript (by file), or to the
 * rest (the loop, the collector). Then one question about the host: does the
 * same JavaScript run slower right after a real driver call (its kernel work
 * leaving caches and predictors cold)? The flavour's cycle over the stand-in
 * driver is timed alone, the raw cycle over libcuda alone, and the two
 * interleaved call by call; `besideDriver` is the interleaved time less the
 * raw one, `slowdown` that over the flavour alone (1: no effect).
 *
 *   node dist/bench/gpu-profile.js --out DIR      (on the GPU machine; writes DIR/h200-cycle-profile.json)
 *   node dist/bench/gpu-profile.js --fake --out DIR  (the stand-in driver on both sides, a rehearsal)
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { createFakeDriver } from '../conformance/gpu/fake-driver.js';
import { type CudaDriver, loadCudaDriver } from '../src/backends/cuda/driver.js';
import type { CudaFlavor } from '../src/index.js';
import { encodedStructs, flavourOver, median, ok, optionOf, runHeader } from './gpu-run.js';

const args = process.argv.slice(2);
const fake = args.includes('--fake');
const outDir = optionOf(args, '--out') ?? process.env.OUT ?? '.';

const SIZE = 2 * 1024 * 1024;
const PROP = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
const RW = [{ location: { type: 1, id: 0 }, flags: 3 }];

/** The cycle's seven calls through the flavour, one function each. */
function flavourSteps(cu: CudaFlavor): (() => void)[] {
  const ptr = { value: 0n };
  const h = { value: 0n };
  return [
    () => ok(cu.cuMemAddressReserve(ptr, SIZE, 0, 0, 0), 'reserve'),
    () => ok(cu.cuMemCreate(h, SIZE, PROP, 0), 'create'),
    () => ok(cu.cuMemMap(ptr.value, SIZE, 0, h.value, 0), 'map'),
    () => ok(cu.cuMemSetAccess(ptr.value, SIZE, RW, 1), 'setAccess'),
    () => ok(cu.cuMemUnmap(ptr.value, SIZE), 'unmap'),
    () => ok(cu.cuMemRelease(h.value), 'release'),
    () => ok(cu.cuMemAddressFree(ptr.value, SIZE), 'free'),
  ];
}

/** The same calls through the raw koffi functions with reused typed arrays (the FFI floor). */
function rawSteps(driver: CudaDriver): (() => void)[] {
  const out = new BigUint64Array(2);
  const words = new Uint32Array(out.buffer);
  const { prop, desc } = encodedStructs();
  let va = 0;
  let handle = 0;
  return [
    () => {
      ok(driver.cuMemAddressReserve(out, SIZE, 0, 0, 0), 'reserve');
      va = words[1] * 4294967296 + words[0];
    },
    () => {
      ok(driver.cuMemCreate(out, SIZE, prop, 0), 'create');
      handle = words[1] * 4294967296 + words[0];
    },
    () => ok(driver.cuMemMap(va, SIZE, 0, handle, 0), 'map'),
    () => ok(driver.cuMemSetAccess(va, SIZE, desc, 1), 'setAccess'),
    () => ok(driver.cuMemUnmap(va, SIZE), 'unmap'),
    () => ok(driver.cuMemRelease(handle), 'release'),
    () => ok(driver.cuMemAddressFree(va, SIZE), 'free'),
  ];
}

/** Microseconds per run of `fn`, over `n` runs. */
function time(fn: () => void, n: number): number {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  return ((performance.now() - t0) * 1000) / n;
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  samples: number[];
}

/** V8's CPU profile of `fn`, sampled every `intervalUs`. */
function profile(fn: () => void, intervalUs: number): CpuProfile {
  const session = new Session();
  session.connect();
  let result: CpuProfile | undefined;
  // An in-thread session answers synchronously: each callback has run when post returns.
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  session.post('Profiler.start');
  fn();
  session.post('Profiler.stop', (error, answer) => {
    if (error) throw error;
    result = answer.profile as unknown as CpuProfile;
  });
  session.disconnect();
  if (result === undefined) throw new Error('the profiler gave no profile');
  return result;
}

/** Files of the stand-in driver (conformance/gpu/fake-driver.ts and the simulator under it). */
const isStandIn = (file: string): boolean =>
  file.startsWith('src/backends/sim/') ||
  file === 'src/backends/cuda/driver-api.js' ||
  file.startsWith('conformance/');

/** vmmkit's files whose frames are each one driver call (Note [Fast cycle calls]). */
const DRIVER_CALLS: ReadonlySet<string> = new Set([
  'src/backends/cuda/checked.js',
  'src/backends/cuda/cycle-calls.js',
]);

/** The dist-relative file of a frame ('' for native code, the collector, the idle and program nodes). */
const fileOf = (url: string): string =>
  url.includes('/dist/') ? url.slice(url.lastIndexOf('/dist/') + 6) : '';

/**
 * The share of samples in the driver calls, in each of vmmkit's files, and
 * elsewhere. A sample in native code (a fast call or koffi's call into
 * libcuda, a builtin) belongs to the nearest JavaScript frame above it: the
 * checked layer's methods and the cycle calls' koffi form are one driver call
 * each, so what lies under them is libcuda's (and koffi's) time.
 */
function shares(p: CpuProfile): {
  driver: number;
  vmmkit: number;
  other: number;
  byFile: Record<string, number>;
} {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owner = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const file = fileOf(byId.get(at)!.callFrame.url);
      if (file !== '') return file;
    }
    return '';
  };
  const byFile = new Map<string, number>();
  let driver = 0;
  let vmmkit = 0;
  let other = 0;
  for (const id of p.samples) {
    const file = owner(id);
    // Under --fake the stand-in driver's own files (the simulator it runs on, its struct decoding) are the driver's.
    if (DRIVER_CALLS.has(file) || (fake && isStandIn(file))) driver++;
    else if (file.startsWith('src/')) {
      vmmkit++;
      byFile.set(file, (byFile.get(file) ?? 0) + 1);
    } else other++;
  }
  const n = p.samples.length;
  const top = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 12);
  return {
    driver: r3(driver / n),
    vmmkit: r3(vmmkit / n),
    other: r3(other / n),
    byFile: Object.fromEntries(top.map(([file, c]) => [file, r3(c / n)])),
  };
}

function main(): void {
  const driver = fake ? createFakeDriver() : loadCudaDriver();
  const cu = flavourOver(driver);
  const steps = flavourSteps(cu);
  const cycle = (): void => {
    for (const step of steps) step();
  };
  time(cycle, 20000);
  const cycles = fake ? 50000 : 40000;
  let cycleUs = 0;
  const prof = profile(() => {
    cycleUs = time(cycle, cycles);
  }, 20);
  const split = shares(prof);

  // The host question: a second flavour over the stand-in driver, beside the first one's real driver.
  const stand = flavourOver(createFakeDriver());
  const alone = flavourSteps(stand);
  const raw = rawSteps(driver);
  const a = (): void => {
    for (const step of alone) step();
  };
  const c = (): void => {
    for (const step of raw) step();
  };
  const b = (): void => {
    for (let k = 0; k < 7; k++) {
      raw[k]();
      alone[k]();
    }
  };
  for (const f of [a, b, c]) time(f, 5000);
  const rows = { a: [] as number[], b: [] as number[], c: [] as number[] };
  for (let round = 0; round < 9; round++) {
    rows.a.push(time(a, 3000));
    rows.c.push(time(c, 3000));
    rows.b.push(time(b, 3000));
  }
  const standAlone = median(rows.a);
  const rawAlone = median(rows.c);
  const interleaved = median(rows.b);
  stand.dispose();
  cu.dispose();

  const result = {
    ...runHeader('gpu-profile', args),
    fake,
    profiled: {
      cycles,
      cycle_us_under_profiler: r3(cycleUs),
      samples: prof.samples.length,
      share: split,
      note: 'Self-time shares of V8 samples (every 20 us) over the 2 MiB cycle through createCuda({ backend: "cuda" }): driver = the checked layer\'s calls and the cycle calls (libcuda, and the fast calls or koffi into it), vmmkit = every other vmmkit file, other = the loop, the collector and the rest.',
    },
    besideTheDriver: {
      standInFlavourAlone_us: r3(standAlone),
      rawCycleAlone_us: r3(rawAlone),
      interleaved_us: r3(interleaved),
      besideDriver_us: r3(interleaved - rawAlone),
      slowdown: r3((interleaved - rawAlone) / standAlone),
      note: 'Medians of 9 rounds of 3,000 cycles: the flavour over the stand-in driver alone; the raw typed cycle over the real driver alone; the two interleaved call by call. slowdown 1 means the JavaScript runs as fast beside the driver as alone.',
    },
  };
  writeFileSync(join(outDir, 'h200-cycle-profile.json'), `${JSON.stringify(result, null, 1)}\n`);
  console.log(JSON.stringify({ share: split, besideTheDriver: result.besideTheDriver }));
}

main();
