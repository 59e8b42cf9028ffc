/**
 * What the GPU benchmarks share: the commit a run measured, a CUDA flavour
 * ready for the cycle, the cycle through each layer, and the cycle through
 * the raw koffi functions as the checked layer passes them (the FFI floor).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CudaBackend } from '../src/backends/cuda/backend.js';
import type { CheckedCuda } from '../src/backends/cuda/checked.js';
import { chooseCycleCalls, SCRATCH } from '../src/backends/cuda/cycle-calls.js';
import type { CudaDriver } from '../src/backends/cuda/driver.js';
import { createProcess } from '../src/compose/create-runtime.js';
import type { AllocationProperties } from '../src/core/types.js';
import { type CudaFlavor, createCuda } from '../src/index.js';
import { gpuInfo } from './gpu-info.js';

/** The value after `--name` in a command line's arguments, if the name is there. */
export function optionOf(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** Issue 17's target for the 2 MiB cycle through the CUDA flavour: this ratio to native C or less. */
export const NATIVE_SPEED_TARGET = 1.05;

/** The upper of the two middle values for an even count. */
export const median = (xs: ArrayLike<number>): number => Float64Array.from(xs).sort()[xs.length >> 1];

/**
 * Note [Process states] (bench/gpu-paired.ts): the host's two states are two
 * clusters of native cycle times (about 54 and 74 us). bench/gpu-states.ts
 * finds the line between them in its many draws, the middle of the widest
 * gap between sorted times, when that gap is a ratio of STATE_GAP or more;
 * gpu-paired reads the line from that file, since its own few processes may
 * all lie in one state.
 */
export const STATE_GAP = 1.15;

/** The middle of the widest ratio gap between the sorted values, or null if no gap reaches STATE_GAP. */
export function stateSplit(values: readonly number[]): number | null {
  const v = [...values].sort((a, b) => a - b);
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i] / v[i - 1] > v[best + 1] / v[best]) best = i - 1;
  return v.length > 1 && v[best + 1] / v[best] >= STATE_GAP ? (v[best] + v[best + 1]) / 2 : null;
}

export function processState(nativeUs: number, splitUs: number): 'fast' | 'slow' {
  return nativeUs < splitUs ? 'fast' : 'slow';
}

export function ok(code: number, what: string): void {
  if (code !== 0) throw new Error(`${what} returned ${code}`);
}

/** A CUDA flavour over `driver` with device 0's primary context current (fastCalls: CudaBackendOptions'). */
export function flavourOver(driver: CudaDriver, fastCalls = true): CudaFlavor {
  return withContext(createCuda({ backend: 'cuda', cuda: { driver, fastCalls } }));
}

/** A CUDA flavour over the simulated machine with device 0's primary context current. */
export function simulatedFlavour(): CudaFlavor {
  return withContext(createCuda());
}

/** `cu` initialised, with device 0's primary context retained and made current. */
function withContext(cu: CudaFlavor): CudaFlavor {
  const ctx = { value: 0n };
  ok(cu.cuInit(0), 'cuInit');
  ok(cu.cuDevicePrimaryCtxRetain(ctx, 0), 'cuDevicePrimaryCtxRetain');
  ok(cu.cuCtxSetCurrent(ctx.value), 'cuCtxSetCurrent');
  return cu;
}

/**
 * The commit measured: the one given (--commit); else the one `run-all.sh
 * --prepare` wrote beside the build it made (dist/commit.txt), since the GPU
 * machine's copy of the tree may carry a stale .git (a run there without
 * --commit once recorded the session's first commit); else git's HEAD where
 * the tree is a checkout; else null.
 */
export function commitMeasured(given: string | undefined): string | null {
  if (given) return given;
  try {
    return readFileSync(new URL('../commit.txt', import.meta.url), 'utf8').trim();
  } catch {
    // no prepared build: ask git
  }
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/** CUmemAllocationProp (PINNED on device 0) and CUmemAccessDesc (device 0, read-write), encoded as the checked layer does. */
export function encodedStructs(): { prop: Uint8Array; desc: Uint8Array } {
  const prop = new Uint8Array(32);
  const p = new Int32Array(prop.buffer);
  p[0] = 1; // type PINNED
  p[2] = 1; // location.type DEVICE, id 0
  const desc = new Uint8Array(12);
  const q = new Int32Array(desc.buffer);
  q[0] = 1; // location.type DEVICE, id 0
  q[2] = 3; // flags READWRITE
  return { prop, desc };
}

/** One reserve/create/map/setAccess/unmap/release/free cycle of `size` bytes through the raw koffi functions, reused typed arrays and encoded structs. */
export function rawTypedCycle(d: CudaDriver, size: number): () => void {
  const out = new BigUint64Array(2);
  const words = new Uint32Array(out.buffer);
  const { prop, desc } = encodedStructs();
  return () => {
    ok(d.cuMemAddressReserve(out, size, 0, 0, 0), 'cuMemAddressReserve');
    const va = words[1] * 4294967296 + words[0];
    ok(d.cuMemCreate(out, size, prop, 0), 'cuMemCreate');
    const h = words[1] * 4294967296 + words[0];
    ok(d.cuMemMap(va, size, 0, h, 0), 'cuMemMap');
    ok(d.cuMemSetAccess(va, size, desc, 1), 'cuMemSetAccess');
    ok(d.cuMemUnmap(va, size), 'cuMemUnmap');
    ok(d.cuMemRelease(h), 'cuMemRelease');
    ok(d.cuMemAddressFree(va, size), 'cuMemAddressFree');
  };
}

/**
 * The same cycle through the fast-call addon's seven functions (Note [Fast
 * cycle calls]): the FFI floor where the addon is built; undefined where it
 * is not (or the driver is a stand-in with no library). A function of its
 * own, not rawTypedCycle over the koffi form: V8 makes a call a fast call
 * only where the call site knows its one target, and closures of one
 * function share their call sites' feedback.
 */
export function rawFastCycle(d: CudaDriver, size: number): (() => void) | undefined {
  const chosen = chooseCycleCalls(d);
  if (chosen.form !== 'fast') return undefined;
  const c = chosen.calls;
  const { prop, desc } = encodedStructs();
  new Uint8Array(c.scratch, SCRATCH.prop, 32).set(prop);
  new Uint8Array(c.scratch, SCRATCH.desc, 12).set(desc);
  const words = new Uint32Array(c.scratch, SCRATCH.out, 2);
  return () => {
    ok(c.cuMemAddressReserve(size, 0, 0, 0), 'cuMemAddressReserve');
    const va = words[1] * 4294967296 + words[0];
    ok(c.cuMemCreate(size, 0), 'cuMemCreate');
    const h = words[1] * 4294967296 + words[0];
    ok(c.cuMemMap(va, size, 0, h, 0), 'cuMemMap');
    ok(c.cuMemSetAccess(va, size), 'cuMemSetAccess');
    ok(c.cuMemUnmap(va, size), 'cuMemUnmap');
    ok(c.cuMemRelease(h), 'cuMemRelease');
    ok(c.cuMemAddressFree(va, size), 'cuMemAddressFree');
  };
}

/** One cycle of `size` bytes through a CUDA flavour, as a program writes it: each call's code checked. */
export function flavourCycleOf(cu: CudaFlavor, size: number): () => void {
  const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
  const rw = [{ location: { type: 1, id: 0 }, flags: 3 }];
  const ptr = { value: 0n };
  const h = { value: 0n };
  return () => {
    ok(cu.cuMemAddressReserve(ptr, size, 0, 0, 0), 'cuMemAddressReserve');
    ok(cu.cuMemCreate(h, size, prop, 0), 'cuMemCreate');
    ok(cu.cuMemMap(ptr.value, size, 0, h.value, 0), 'cuMemMap');
    ok(cu.cuMemSetAccess(ptr.value, size, rw, 1), 'cuMemSetAccess');
    ok(cu.cuMemUnmap(ptr.value, size), 'cuMemUnmap');
    ok(cu.cuMemRelease(h.value), 'cuMemRelease');
    ok(cu.cuMemAddressFree(ptr.value, size), 'cuMemAddressFree');
  };
}

/**
 * What every GPU result file starts with: the GPU and driver, when, the
 * commit measured (commitMeasured) and the command that wrote it.
 */
export function runHeader(script: string, args: readonly string[]) {
  const { gpu, driver } = gpuInfo();
  return {
    gpu,
    driver,
    date: new Date().toISOString(),
    commit: commitMeasured(optionOf(args, '--commit')),
    command: `node dist/bench/${script}.js ${args.join(' ')}`.trim(),
  };
}

/** The layers a cycle can be measured through: the CUDA flavour, core's Runtime (no flavour), the backend alone. */
export const LAYERS = ['flavour', 'core', 'backend'] as const;
export type Layer = (typeof LAYERS)[number];

/** A layer's cycle, and the checked layer under it (its count of fast calls). */
export interface LayerCycle {
  readonly cycle: () => void;
  readonly checked: CheckedCuda;
}

const DEVICE_0: AllocationProperties = {
  location: { type: 'device', id: 0 },
  handleTypes: 0,
  uncached: false,
};

/**
 * The cycle of `size` bytes through `layer` over `driver`, as a program of
 * that layer writes it (the flavour's with its primary context current).
 */
export function layerCycle(layer: Layer, driver: CudaDriver, size: number, fastCalls: boolean): LayerCycle {
  if (layer === 'flavour') {
    const cu = flavourOver(driver, fastCalls);
    return { cycle: flavourCycleOf(cu, size), checked: (cu.runtime.backend as CudaBackend).cu };
  }
  const backend = new CudaBackend({ driver, fastCalls });
  if (layer === 'core') {
    const rt = createProcess({ backend }).runtime;
    const rw = [{ device: 0, access: 3 as const }];
    const cycle = () => {
      const r = rt.reserve(size);
      const a = rt.create(size, DEVICE_0);
      rt.map(r.base, size, a, 0);
      rt.setAccess(r.base, size, rw);
      rt.unmap(r.base, size);
      rt.release(a);
      rt.free(r);
    };
    return { cycle, checked: backend.cu };
  }
  return { cycle: backendCycleOf(backend, size), checked: backend.cu };
}

/** One cycle of `size` bytes through a CUDA backend alone (no core, no flavour), device 0's memory. */
export function backendCycleOf(backend: CudaBackend, size: number): () => void {
  return () => {
    const va = backend.reserve(size, size, 0);
    const h = backend.create(size, DEVICE_0);
    backend.map(va, size, h, 0);
    backend.setAccess(va, size, 0, 3);
    backend.unmap(va, size);
    backend.release(h);
    backend.free(va, size);
  };
}

/** Pearson's correlation of two equally long series; NaN when either is constant or there are fewer than 2. */
export function correlation(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  if (n < 2 || ys.length !== n) return Number.NaN;
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
    syy += (ys[i] - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
}
