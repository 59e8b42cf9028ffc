/**
 * vmmkit's CUDA flavour on the real CUDA backend against the same driver calls
 * from C (bench/native/vmm_bench.c), in one process, one context, rounds
 * alternating, medians over rounds:
 *
 *   node dist/bench/gpu.js --native path/to/libvmm_bench.so --out DIR [--prove DIR/prove.json]
 *
 * Measures the full reserve/create/map/setAccess/unmap/release/free cycle at
 * 2 MiB and 1 GiB, and 64 MiB HtoD/DtoH/DtoD copies (each followed by
 * cuCtxSynchronize), plus the same cycle through the raw koffi binding with
 * no vmmkit logic (what the FFI itself costs), with koffi marshalling `_Out_`
 * arrays and struct objects (raw_koffi) and with the reused typed arrays
 * vmmkit's checked layer passes (raw_typed; Note [Out-parameters as typed
 * arrays]), and through the backend and the checked layer alone; each round
 * runs every side in a rotating order after a warm-up long enough for V8 to
 * optimise the whole path. Then each call of the cycle timed on its own
 * through every layer and from C, and each cycle timed on its own (p10 to
 * p99 and mean: where a mean departs from its median), and native and flavour
 * cycles one after the other (interleaved_2MiB, the most paired figure). Writes DIR/h200-cuda.json
 * on every run (a GPU script's output is its measurement: no --write; DIR is
 * $OUT or the current folder, never bench/results unless named);
 * every key of it comes from this run or from a file named on the command line:
 *
 *   --prove DIR/prove.json        the proof's summary (conformance/gpu/prove.ts), with its date
 *   --flavours flavors-on-gpu.txt the HIP/ACL tables' vitest transcript (conformance/gpu/run-all.sh)
 *   --merge previous.json         an earlier h200-cuda.json: its headline figures, with its date,
 *                                 GPU, driver and commit, go into `earlier` (its own `earlier` too)
 *   --commit SHA                  the commit measured (else `git rev-parse HEAD`, else null)
 *
 * `--fake` runs the vmmkit paths on the simulated stand-in for libcuda, without the native side
 * (quick round counts; `--fake --full` with the real ones).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import koffi from 'koffi';
import { createFakeDriver } from '../conformance/gpu/fake-driver.js';
import { proofFields } from '../conformance/gpu/proof-summary.js';
import type { CudaBackend } from '../src/backends/cuda/backend.js';
import { type CudaDriver, loadCudaDriver } from '../src/backends/cuda/driver.js';
import type { CudaFlavor } from '../src/index.js';
import {
  backendCycleOf,
  encodedStructs,
  flavourCycleOf,
  flavourOver,
  NATIVE_SPEED_TARGET,
  ok,
  optionOf,
  rawTypedCycle,
  runHeader,
} from './gpu-run.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => optionOf(args, name);
const fake = args.includes('--fake');
const outDir = opt('--out') ?? process.env.OUT ?? '.';
const nativePath = opt('--native');
const provePath = opt('--prove');
const flavoursPath = opt('--flavours');
const mergePath = opt('--merge');

const MiB = 1 << 20;
const GiB = 1 << 30;

interface Native {
  cycle(size: number, iters: number): number;
  /** Each of `iters` cycles timed on its own in C, microseconds. */
  cycleTimes(size: number, iters: number): Float64Array;
  /** Median microseconds of each of the cycle's seven calls, timed one by one in C. */
  perCall(size: number, iters: number): Record<string, number>;
  copySetup(size: number): number;
  copyTeardown(): number;
  copy(kind: number, host: Uint8Array, size: number, iters: number): number;
}

function loadNative(path: string): Native {
  const lib = koffi.load(path);
  const init = lib.func('int vb_init(int device)');
  const rc = init(0) as number;
  if (rc !== 0) throw new Error(`vb_init returned ${rc}`);
  const cycle = lib.func('double vb_cycle(size_t size, int iters)');
  const perCallC = lib.func('double vb_per_call(size_t size, int iters, double *out)');
  const cycleTimesC = lib.func('double vb_cycle_times(size_t size, int iters, double *out)');
  const copySetup = lib.func('int vb_copy_setup(size_t size)');
  const copyTeardown = lib.func('int vb_copy_teardown()');
  const copy = lib.func('double vb_copy(int kind, uint8_t *host, size_t size, int iters)');
  const must = (v: number, what: string) => {
    if (v < 0) throw new Error(`${what} failed: CUresult ${-Math.round(v)}`);
    return v;
  };
  return {
    cycle: (size, iters) => must(cycle(size, iters) as number, 'vb_cycle'),
    cycleTimes: (size, iters) => {
      const out = new Float64Array(iters);
      must(cycleTimesC(size, iters, out) as number, 'vb_cycle_times');
      return out;
    },
    perCall: (size, iters) => {
      const out = new Float64Array(7);
      must(perCallC(size, iters, out) as number, 'vb_per_call');
      return Object.fromEntries(STEPS.map((name, k) => [name, r2(out[k])]));
    },
    copySetup: (size) => must(copySetup(size) as number, 'vb_copy_setup'),
    copyTeardown: () => must(copyTeardown() as number, 'vb_copy_teardown'),
    copy: (kind, host, size, iters) => must(copy(kind, host, size, iters) as number, 'vb_copy'),
  };
}

const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
const rw = [{ location: { type: 1, id: 0 }, flags: 3 }];

/** The cycle through vmmkit's CUDA flavour; microseconds for the batch. */
function flavourCycle(cu: CudaFlavor, size: number, iters: number): number {
  const cycle = flavourCycleOf(cu, size);
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) cycle();
  return (performance.now() - t0) * 1000;
}

/** The cycle through the CUDA backend alone (no flavour, no core); microseconds for the batch. */
function backendCycle(b: CudaBackend, size: number, iters: number): number {
  const cycle = backendCycleOf(b, size);
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) cycle();
  return (performance.now() - t0) * 1000;
}

/** The cycle through the checked layer alone; microseconds for the batch. */
function checkedCycle(b: CudaBackend, size: number, iters: number): number {
  const c = b.cu;
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) {
    const va = c.addressReserve(size, 0, 0);
    const h = c.create(size, 1, 0, 0);
    c.map(va, size, 0, h);
    c.setAccess(va, size, 0, 3);
    c.unmap(va, size);
    c.release(h);
    c.addressFree(va, size);
  }
  return (performance.now() - t0) * 1000;
}

/** The cycle through the raw koffi functions (no vmmkit logic): the FFI's own cost. */
function rawCycle(d: CudaDriver, size: number, iters: number): number {
  const out: unknown[] = [0];
  const hOut: unknown[] = [0];
  const p = {
    type: 1,
    requestedHandleTypes: 0,
    location: { type: 1, id: 0 },
    win32HandleMetaData: 0,
    allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0, reserved: [0, 0, 0, 0] },
  };
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) {
    ok(d.cuMemAddressReserve(out, size, 0, 0, 0), 'reserve');
    const ptr = out[0];
    ok(d.cuMemCreate(hOut, size, p, 0), 'create');
    const h = hOut[0];
    ok(d.cuMemMap(ptr, size, 0, h, 0), 'map');
    ok(d.cuMemSetAccess(ptr, size, rw, 1), 'setAccess');
    ok(d.cuMemUnmap(ptr, size), 'unmap');
    ok(d.cuMemRelease(h), 'release');
    ok(d.cuMemAddressFree(ptr, size), 'free');
  }
  return (performance.now() - t0) * 1000;
}

/** The cycle through the raw koffi functions with reused typed arrays and encoded structs (the FFI floor); microseconds for the batch. */
function timedRawTypedCycle(d: CudaDriver, size: number, iters: number): number {
  const cycle = rawTypedCycle(d, size);
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) cycle();
  return (performance.now() - t0) * 1000;
}

const STEPS = ['reserve', 'create', 'map', 'setAccess', 'unmap', 'release', 'free'] as const;

/**
 * Median microseconds of each of the cycle's seven calls, timed one by one
 * over `iters` cycles (performance.now around each; `timer` is the median of
 * the same timing around a call that does nothing, included in every figure).
 */
function perCall(steps: readonly (() => void)[], iters: number): Record<string, number> {
  const t: Float64Array[] = steps.map(() => new Float64Array(iters));
  const empty = new Float64Array(iters);
  const nothing = () => {};
  for (let i = 0; i < iters; i++) {
    for (let k = 0; k < steps.length; k++) {
      const t0 = performance.now();
      steps[k]();
      t[k][i] = (performance.now() - t0) * 1000;
    }
    const t0 = performance.now();
    nothing();
    empty[i] = (performance.now() - t0) * 1000;
  }
  const out: Record<string, number> = Object.fromEntries(
    STEPS.map((name, k) => [name, r2(median(Array.from(t[k])))]),
  );
  out.timer = Math.round(median(Array.from(empty)) * 1000) / 1000;
  return out;
}

/**
 * The cycle's calls one by one through each layer: the flavour, the backend,
 * the checked layer, the raw functions with typed arrays (vmmkit's
 * convention) and with koffi-marshalled arrays and objects, and from C.
 */
function breakdown(cu: CudaFlavor, d: CudaDriver, native: Native | undefined, size: number, iters: number) {
  const ptr = { value: 0n };
  const h = { value: 0n };
  const flavour = [
    () => ok(cu.cuMemAddressReserve(ptr, size, 0, 0, 0), 'reserve'),
    () => ok(cu.cuMemCreate(h, size, prop, 0), 'create'),
    () => ok(cu.cuMemMap(ptr.value, size, 0, h.value, 0), 'map'),
    () => ok(cu.cuMemSetAccess(ptr.value, size, rw, 1), 'setAccess'),
    () => ok(cu.cuMemUnmap(ptr.value, size), 'unmap'),
    () => ok(cu.cuMemRelease(h.value), 'release'),
    () => ok(cu.cuMemAddressFree(ptr.value, size), 'free'),
  ];
  const b = cu.runtime.backend as CudaBackend;
  const props = { location: { type: 'device' as const, id: 0 }, handleTypes: 0, uncached: false };
  let va = 0;
  let bh = 0;
  const backend = [
    () => {
      va = b.reserve(size, size, 0);
    },
    () => {
      bh = b.create(size, props);
    },
    () => b.map(va, size, bh, 0),
    () => b.setAccess(va, size, 0, 3),
    () => b.unmap(va, size),
    () => b.release(bh),
    () => b.free(va, size),
  ];
  const c = b.cu;
  let cva = 0;
  let ch: number | bigint = 0;
  const checked = [
    () => {
      cva = c.addressReserve(size, 0, 0);
    },
    () => {
      ch = c.create(size, 1, 0, 0);
    },
    () => c.map(cva, size, 0, ch),
    () => c.setAccess(cva, size, 0, 3),
    () => c.unmap(cva, size),
    () => c.release(ch),
    () => c.addressFree(cva, size),
  ];
  const out = new BigUint64Array(1);
  const hOut = new BigUint64Array(1);
  const outW = new Uint32Array(out.buffer);
  const hW = new Uint32Array(hOut.buffer);
  const { prop: propBytes, desc } = encodedStructs();
  const typed = [
    () => ok(d.cuMemAddressReserve(out, size, 0, 0, 0), 'reserve'),
    () => ok(d.cuMemCreate(hOut, size, propBytes, 0), 'create'),
    () => ok(d.cuMemMap(outW[1] * 4294967296 + outW[0], size, 0, hW[1] * 4294967296 + hW[0], 0), 'map'),
    () => ok(d.cuMemSetAccess(outW[1] * 4294967296 + outW[0], size, desc, 1), 'setAccess'),
    () => ok(d.cuMemUnmap(outW[1] * 4294967296 + outW[0], size), 'unmap'),
    () => ok(d.cuMemRelease(hW[1] * 4294967296 + hW[0]), 'release'),
    () => ok(d.cuMemAddressFree(outW[1] * 4294967296 + outW[0], size), 'free'),
  ];
  const objOut: unknown[] = [0];
  const objH: unknown[] = [0];
  const p = {
    type: 1,
    requestedHandleTypes: 0,
    location: { type: 1, id: 0 },
    win32HandleMetaData: 0,
    allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0, reserved: [0, 0, 0, 0] },
  };
  const objects = [
    () => ok(d.cuMemAddressReserve(objOut, size, 0, 0, 0), 'reserve'),
    () => ok(d.cuMemCreate(objH, size, p, 0), 'create'),
    () => ok(d.cuMemMap(objOut[0], size, 0, objH[0], 0), 'map'),
    () => ok(d.cuMemSetAccess(objOut[0], size, rw, 1), 'setAccess'),
    () => ok(d.cuMemUnmap(objOut[0], size), 'unmap'),
    () => ok(d.cuMemRelease(objH[0]), 'release'),
    () => ok(d.cuMemAddressFree(objOut[0], size), 'free'),
  ];
  const layers = { flavour, backend, checked, typed, objects };
  for (const s of Object.values(layers)) perCall(s, Math.max(2, iters >> 2));
  native?.perCall(size, Math.max(2, iters >> 2));
  // Two passes, layers interleaved, each figure the lower of its two medians.
  const passes = [0, 1].map(() => ({
    native_us: native ? native.perCall(size, iters) : null,
    flavour_us: perCall(flavour, iters),
    backend_us: perCall(backend, iters),
    checked_us: perCall(checked, iters),
    raw_typed_us: perCall(typed, iters),
    raw_objects_us: perCall(objects, iters),
  }));
  const lower = (a: Record<string, number> | null, b: Record<string, number> | null) =>
    a && b ? Object.fromEntries(Object.keys(a).map((k) => [k, Math.min(a[k], b[k])])) : null;
  const result = {
    native_us: lower(passes[0].native_us, passes[1].native_us),
    flavour_us: lower(passes[0].flavour_us, passes[1].flavour_us)!,
    backend_us: lower(passes[0].backend_us, passes[1].backend_us)!,
    checked_us: lower(passes[0].checked_us, passes[1].checked_us)!,
    raw_typed_us: lower(passes[0].raw_typed_us, passes[1].raw_typed_us)!,
    raw_objects_us: lower(passes[0].raw_objects_us, passes[1].raw_objects_us)!,
  };
  const sum = (r: Record<string, number> | null) =>
    r ? r2(STEPS.reduce((acc, k) => acc + r[k] - (r.timer ?? 0), 0)) : null;
  return {
    ...result,
    sums_less_timer_us: Object.fromEntries(Object.entries(result).map(([k, v]) => [k, sum(v)])),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
const r2 = (x: number) => Math.round(x * 100) / 100;

interface Compared {
  native_us: number | null;
  vmmkit_us: number;
  backend_us?: number;
  checked_us?: number;
  raw_koffi_us?: number;
  raw_typed_us?: number;
  raw_typed_ratio?: number | null;
  backend_ratio?: number | null;
  ratio: number | null;
  /** Median over rounds of vmmkit / native within the round. */
  paired_ratio: number | null;
  rounds: number;
  iters: number;
}

/** p10, p50, p90, p99 and mean of a sample, microseconds. */
function spread(xs: ArrayLike<number>) {
  const s = Array.from(xs).sort((a, b) => a - b);
  const at = (q: number) => r2(s[Math.min(s.length - 1, Math.floor(q * s.length))]);
  return {
    p10: at(0.1),
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    mean: r2(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

function compareCycle(
  cu: CudaFlavor,
  d: CudaDriver,
  native: Native | undefined,
  size: number,
  iters: number,
  rounds: number,
): Compared {
  const b = cu.runtime.backend as CudaBackend;
  const js: Record<string, (n: number) => number> = {
    vmmkit: (n) => flavourCycle(cu, size, n),
    backend: (n) => backendCycle(b, size, n),
    checked: (n) => checkedCycle(b, size, n),
    raw_typed: (n) => timedRawTypedCycle(d, size, n),
    raw_koffi: (n) => rawCycle(d, size, n),
  };
  const sides: Record<string, (n: number) => number> = native
    ? { native: (n) => native.cycle(size, n), ...js }
    : js;
  const names = Object.keys(sides);
  // Warm up every side: long enough at 2 MiB for V8 to optimise the whole path.
  const warm = size <= 64 * 1024 * 1024 ? Math.max(iters, 2000) : Math.max(2, iters >> 2);
  for (const k of names) sides[k](warm);
  const per: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  const paired: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // Rotate the order, so no side always follows another.
    for (let i = 0; i < names.length; i++) {
      const k = names[(i + r) % names.length];
      per[k].push(sides[k](iters) / iters);
    }
    if (native) paired.push(per.vmmkit[r] / per.native[r]);
  }
  const m = (k: string) => (per[k] ? median(per[k]) : null);
  const nm = m('native');
  const vm = m('vmmkit')!;
  const ratio = (x: number | null) => (nm === null || x === null ? null : Math.round((x / nm) * 1000) / 1000);
  return {
    native_us: nm === null ? null : r2(nm),
    vmmkit_us: r2(vm),
    backend_us: r2(m('backend')!),
    checked_us: r2(m('checked')!),
    raw_koffi_us: r2(m('raw_koffi')!),
    raw_typed_us: r2(m('raw_typed')!),
    raw_typed_ratio: ratio(m('raw_typed')),
    backend_ratio: ratio(m('backend')),
    ratio: ratio(vm),
    paired_ratio: native ? Math.round(median(paired) * 1000) / 1000 : null,
    rounds,
    iters,
  };
}

/** Each of `iters` cycles timed on its own, for every side: where the time goes beyond the median. */
function cycleSpread(cu: CudaFlavor, d: CudaDriver, native: Native | undefined, size: number, iters: number) {
  const b = cu.runtime.backend as CudaBackend;
  const one = (f: (n: number) => number) => {
    const t = new Float64Array(iters);
    for (let i = 0; i < iters; i++) t[i] = f(1);
    return spread(t);
  };
  return {
    native: native ? spread(native.cycleTimes(size, iters)) : null,
    vmmkit: one((n) => flavourCycle(cu, size, n)),
    backend: one((n) => backendCycle(b, size, n)),
    checked: one((n) => checkedCycle(b, size, n)),
    raw_typed: one((n) => timedRawTypedCycle(d, size, n)),
  };
}

/**
 * The most paired form of the comparison: one native cycle (timed in C) and
 * one flavour cycle (timed in JavaScript) after the other, `iters` times,
 * the order swapped every pair, so both sides meet the same moment of the
 * machine; the ratio of the two medians, and the median of the pairs' ratios.
 */
function interleavedCycles(cu: CudaFlavor, native: Native, size: number, iters: number) {
  const n = new Float64Array(iters);
  const v = new Float64Array(iters);
  for (let i = 0; i < iters; i++) {
    if (i % 2 === 0) {
      n[i] = native.cycle(size, 1);
      v[i] = flavourCycle(cu, size, 1);
    } else {
      v[i] = flavourCycle(cu, size, 1);
      n[i] = native.cycle(size, 1);
    }
  }
  const ratios = Array.from(v, (x, i) => x / n[i]);
  const nativeP50 = median(Array.from(n));
  const vmmkitP50 = median(Array.from(v));
  return {
    native_p50_us: r2(nativeP50),
    vmmkit_p50_us: r2(vmmkitP50),
    ratio_of_medians: Math.round((vmmkitP50 / nativeP50) * 1000) / 1000,
    median_of_ratios: Math.round(median(ratios) * 1000) / 1000,
    pairs: iters,
  };
}

function compareCopies(
  cu: CudaFlavor,
  native: Native | undefined,
  size: number,
  iters: number,
  rounds: number,
) {
  const host = Buffer.alloc(size, 1);
  const ptr = { value: 0n };
  const h = { value: 0n };
  ok(cu.cuMemAddressReserve(ptr, 2 * size, 0, 0, 0), 'reserve');
  ok(cu.cuMemCreate(h, 2 * size, prop, 0), 'create');
  ok(cu.cuMemMap(ptr.value, 2 * size, 0, h.value, 0), 'map');
  ok(cu.cuMemSetAccess(ptr.value, 2 * size, rw, 1), 'setAccess');
  native?.copySetup(size);
  const kinds = ['HtoD', 'DtoH', 'DtoD'] as const;
  const one = (k: number) => {
    if (k === 0) ok(cu.cuMemcpyHtoD(ptr.value, host, size), 'HtoD');
    else if (k === 1) ok(cu.cuMemcpyDtoH(host, ptr.value, size), 'DtoH');
    else ok(cu.cuMemcpyDtoD(ptr.value + BigInt(size), ptr.value, size), 'DtoD');
    ok(cu.cuCtxSynchronize(), 'cuCtxSynchronize');
  };
  const vmm = (k: number) => {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) one(k);
    return ((performance.now() - t0) * 1000) / iters;
  };
  const out: Record<string, unknown> = {};
  for (let k = 0; k < 3; k++) {
    native?.copy(k, host, size, 2);
    vmm(k);
    const n: number[] = [];
    const v: number[] = [];
    for (let r = 0; r < rounds; r++) {
      if (native) n.push(native.copy(k, host, size, iters) / iters);
      v.push(vmm(k));
    }
    const nm = native ? median(n) : null;
    const vm = median(v);
    out[kinds[k]] = {
      bytes: size,
      native_us: nm === null ? null : r2(nm),
      vmmkit_us: r2(vm),
      ratio: nm === null ? null : Math.round((vm / nm) * 1000) / 1000,
      vmmkit_GBps: r2(size / vm / 1000),
    };
  }
  native?.copyTeardown();
  ok(cu.cuMemUnmap(ptr.value, 2 * size), 'unmap');
  ok(cu.cuMemRelease(h.value), 'release');
  ok(cu.cuMemAddressFree(ptr.value, 2 * size), 'free');
  return out;
}

/** The previous result file's headline, and the runs it had merged before, newest first. */
function earlierRuns(path: string): unknown[] {
  const prev = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const own = {
    file: path,
    date: prev.date ?? null,
    gpu: prev.gpu ?? null,
    driver: prev.driver ?? null,
    commit: prev.commit ?? null,
    native_cycle_us: prev.native_cycle_us ?? null,
    vmmkit_cycle_us: prev.vmmkit_cycle_us ?? null,
    overhead_ratio: prev.overhead_ratio ?? null,
    cycle_2MiB: prev.cycle_2MiB ?? null,
    cycle_1GiB: prev.cycle_1GiB ?? null,
    per_call_2MiB_sums_less_timer_us:
      (prev.per_call_2MiB as { sums_less_timer_us?: unknown } | undefined)?.sums_less_timer_us ?? null,
  };
  return [own, ...(Array.isArray(prev.earlier) ? prev.earlier : [])];
}

function main(): void {
  const driver = fake ? createFakeDriver() : loadCudaDriver();
  const native = nativePath && !fake ? loadNative(nativePath) : undefined;
  const cu = flavourOver(driver);
  // --fake is a quick rehearsal unless --full asks for the real round counts (to time vmmkit's own share on a host).
  const quick = args.includes('--quick') || (fake && !args.includes('--full'));
  const cycle2 = compareCycle(cu, driver, native, 2 * MiB, quick ? 20 : 200, quick ? 3 : 15);
  console.log('cycle 2 MiB', cycle2);
  const cycle1g = compareCycle(cu, driver, native, fake ? 64 * MiB : GiB, quick ? 3 : 20, quick ? 3 : 9);
  console.log('cycle 1 GiB', cycle1g);
  const calls2 = breakdown(cu, driver, native, 2 * MiB, quick ? 20 : 500);
  console.log('per call, 2 MiB', calls2);
  const spread2 = cycleSpread(cu, driver, native, 2 * MiB, quick ? 50 : 2000);
  const interleaved2 = native ? interleavedCycles(cu, native, 2 * MiB, 4000) : null;
  console.log('interleaved, 2 MiB', interleaved2);
  console.log('each cycle, 2 MiB', spread2);
  const copies = compareCopies(cu, native, quick ? 4 * MiB : 64 * MiB, quick ? 2 : 10, quick ? 3 : 7);
  console.log('copies', copies);
  const stats = cu.runtime.stats();
  cu.dispose();

  const proof = proofFields(provePath, flavoursPath);
  const result = {
    ...runHeader('gpu', args),
    fake,
    native_cycle_us: cycle2.native_us,
    vmmkit_cycle_us: cycle2.vmmkit_us,
    overhead_ratio: cycle2.ratio,
    // Issue 17's target (issue 4's was 1.10).
    target_ratio: NATIVE_SPEED_TARGET,
    met: cycle2.ratio !== null && cycle2.ratio <= NATIVE_SPEED_TARGET,
    conformance: proof.conformance,
    cycle_2MiB: cycle2,
    cycle_1GiB: cycle1g,
    per_call_2MiB: calls2,
    each_cycle_2MiB: spread2,
    interleaved_2MiB: interleaved2,
    copies_64MiB: copies,
    ffi: {
      note: 'This run, 2 MiB cycle: through the raw koffi functions with _Out_ arrays and struct objects, and with reused typed arrays and encoded structs (Note [Out-parameters as typed arrays]).',
      raw_koffi_cycle_us: cycle2.raw_koffi_us ?? null,
      raw_typed_cycle_us: cycle2.raw_typed_us ?? null,
      saved_per_cycle_us:
        cycle2.raw_koffi_us !== undefined && cycle2.raw_typed_us !== undefined
          ? r2(cycle2.raw_koffi_us - cycle2.raw_typed_us)
          : null,
    },
    contract: proof.contract,
    flavours_over_cuda: proof.flavours_over_cuda,
    flavour_tables: proof.flavour_tables,
    leftAfterBench: stats,
    method:
      'One Node process: the native C library (bench/native/vmm_bench.c, loaded through koffi) and vmmkit (createCuda({ backend: "cuda" })) share one primary context; rounds alternate sides; each figure is the median over rounds of the mean per cycle (or copy) in a round. raw_koffi_us: the same driver calls through the raw koffi functions, no vmmkit logic, koffi marshalling _Out_ arrays and struct objects; raw_typed_us: the same with reused typed arrays and encoded structs, as vmmkit passes them. per_call_2MiB: each call timed on its own (performance.now around it in JS, clock_gettime in C; timer is the cost of the JS timing around nothing, included in each JS figure), median over iterations, lower of two interleaved passes. interleaved_2MiB: one native cycle (timed in C) and one flavour cycle (performance.now around it, its timer included) after the other, the order swapped every pair, 4,000 pairs: the ratio of the medians and the median of the pairs\' ratios.',
    earlier: mergePath ? earlierRuns(mergePath) : [],
  };
  writeFileSync(join(outDir, 'h200-cuda.json'), `${JSON.stringify(result, null, 1)}\n`);
  console.log(
    JSON.stringify({
      native_cycle_us: result.native_cycle_us,
      vmmkit_cycle_us: result.vmmkit_cycle_us,
      overhead_ratio: result.overhead_ratio,
    }),
  );
}

main();
