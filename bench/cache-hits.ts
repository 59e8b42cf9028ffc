/**
 * Micro-benchmark of the PyTorch models' cache hits (no thresholds; prints,
 * writes nothing):
 *   npm run build && node dist/bench/cache-hits.js
 * A steady state like a training loop's: each round allocates a window of
 * blocks of mixed sizes (both pools) and frees them in shuffled order, so
 * after the first rounds every malloc is served from the cache.
 */
import type { CachingAllocator } from '../src/alloc/allocator.js';
import {
  DEFAULT_PYTORCH_SETTINGS,
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
} from '../src/alloc/pytorch/index.js';
import { createMachine } from '../src/backends/sim/machine.js';
import { Runtime } from '../src/core/runtime.js';

const MiB = 1024 * 1024;

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function workload(window: number, rounds: number): { sizes: number[]; order: number[][] } {
  const rnd = lcg(7);
  const sizes: number[] = [];
  for (let i = 0; i < window; i++) {
    const r = rnd();
    sizes.push(
      r < 0.6
        ? 1 + Math.floor(rnd() * 64 * 1024)
        : r < 0.9
          ? MiB + Math.floor(rnd() * 8 * MiB)
          : 10 * MiB + Math.floor(rnd() * 40 * MiB),
    );
  }
  const order: number[][] = [];
  for (let k = 0; k < Math.min(rounds, 16); k++) {
    const o = sizes.map((_, i) => i);
    for (let i = o.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [o[i], o[j]] = [o[j], o[i]];
    }
    order.push(o);
  }
  return { sizes, order };
}

function measure(make: (rt: Runtime) => CachingAllocator, window: number, rounds: number): string {
  const rt = new Runtime(createMachine({ devices: ['H200'] }).spawn());
  const alloc = make(rt);
  const { sizes, order } = workload(window, rounds);
  const addrs = new Array<number>(window);
  const round = (k: number) => {
    for (let i = 0; i < window; i++) addrs[i] = alloc.malloc(sizes[i], 0);
    const o = order[k % order.length];
    for (let i = 0; i < window; i++) alloc.free(addrs[o[i]]);
  };
  for (let k = 0; k < 20; k++) round(k); // warm the cache and the JIT
  const t0 = process.hrtime.bigint();
  for (let k = 0; k < rounds; k++) round(k);
  const ns = Number(process.hrtime.bigint() - t0);
  const ops = 2 * window * rounds;
  alloc.dispose();
  return `${alloc.name.padEnd(20)} window ${String(window).padStart(5)}: ${(ns / ops).toFixed(0).padStart(5)} ns per malloc or free (${ops} ops, ${(ns / 1e6).toFixed(0)} ms)`;
}

const native = (rt: Runtime) =>
  new PytorchNativeAllocator({ runtime: rt, device: 0 }, DEFAULT_PYTORCH_SETTINGS);
const expandable = (rt: Runtime) =>
  new PytorchExpandableAllocator({ runtime: rt, device: 0 }, DEFAULT_PYTORCH_SETTINGS);
for (const window of [100, 1000, 5000]) {
  const rounds = Math.round(1_000_000 / window);
  console.log(measure(native, window, rounds));
  console.log(measure(expandable, window, rounds));
}
