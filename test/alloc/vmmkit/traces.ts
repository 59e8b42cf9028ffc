/**
 * Synthetic allocation traces (until real ones are replayed): each is a list
 * of operations on block ids, deterministic for a seed.
 *
 *  - training: persistent weights, then iterations whose forward pass keeps
 *    activations of varied sizes (sequence length varies per iteration) and
 *    frees temporaries, and whose backward pass frees activations in reverse
 *    while gradients come and go;
 *  - inference: per layer, a KV cache grown by concatenation (alloc n + k,
 *    copy, free n) while small and medium outputs of each step live a few
 *    steps, interleaved with the caches;
 *  - small: many blocks from 512 B to 1 MiB with random lifetimes.
 */
import { random } from '../../support/random.js';

export type Op =
  | { readonly op: 'alloc'; readonly id: number; readonly size: number; readonly stream: number }
  | { readonly op: 'free'; readonly id: number }
  | { readonly op: 'empty' };

const KiB = 1024;
const MiB = 1024 * KiB;

class Builder {
  readonly ops: Op[] = [];
  #next = 0;
  readonly live = new Set<number>();
  alloc(size: number, stream = 0): number {
    const id = this.#next++;
    this.ops.push({ op: 'alloc', id, size: Math.max(1, Math.round(size)), stream });
    this.live.add(id);
    return id;
  }
  free(id: number): void {
    this.ops.push({ op: 'free', id });
    this.live.delete(id);
  }
  freeAll(): void {
    for (const id of [...this.live]) this.free(id);
  }
}

/** A size between lo and hi, log-uniform. */
function logUniform(r: () => number, lo: number, hi: number): number {
  return Math.exp(Math.log(lo) + r() * (Math.log(hi) - Math.log(lo)));
}

export function trainingTrace(seed = 1, iterations = 12, layers = 24): Op[] {
  const r = random(seed);
  const b = new Builder();
  // Weights and optimiser state: a few large, many medium, some small.
  for (let i = 0; i < layers * 6; i++) b.alloc(logUniform(r, 4 * KiB, 96 * MiB));
  const shapes = Array.from({ length: layers * 5 }, () => logUniform(r, 64 * KiB, 128 * MiB));
  for (let it = 0; it < iterations; it++) {
    const scale = 0.6 + 0.4 * r();
    const acts: number[] = [];
    for (const s of shapes) {
      const a = b.alloc(s * scale);
      acts.push(a);
      // Temporaries of the forward pass.
      const t1 = b.alloc(logUniform(r, 512, s * scale));
      const t2 = b.alloc(logUniform(r, 512, 4 * MiB));
      b.free(t1);
      if (r() < 0.7) b.free(t2);
      else acts.push(t2);
    }
    for (let i = acts.length - 1; i >= 0; i--) {
      const g = b.alloc(logUniform(r, 64 * KiB, 64 * MiB));
      b.free(acts[i]);
      if (r() < 0.8) b.free(g);
      else acts.push(g);
    }
    // Gradients kept to the step, then freed.
    const kept = [...b.live].slice(layers * 6);
    for (const id of kept) b.free(id);
  }
  return b.ops;
}

export function inferenceTrace(seed = 2, requests = 6, steps = 80, layers = 16): Op[] {
  const r = random(seed);
  const b = new Builder();
  for (let i = 0; i < layers * 4; i++) b.alloc(logUniform(r, 1 * MiB, 64 * MiB));
  for (let q = 0; q < requests; q++) {
    const perToken = Math.round(logUniform(r, 16 * KiB, 160 * KiB) / 512) * 512;
    const prompt = Math.round(64 + r() * 1500);
    const caches = Array.from({ length: layers }, () => b.alloc(perToken * prompt));
    const outputs: number[][] = [];
    for (let t = 1; t <= steps; t++) {
      const step: number[] = [];
      for (let l = 0; l < layers; l++) {
        // Concatenation: the new cache is allocated while the old one lives, then the old one goes.
        const grown = b.alloc(perToken * (prompt + t));
        b.free(caches[l]);
        caches[l] = grown;
        // Small and medium outputs interleave with the caches and live a few steps.
        step.push(b.alloc(logUniform(r, 2 * KiB, 3 * MiB)));
        const tmp = b.alloc(logUniform(r, 256 * KiB, 24 * MiB));
        b.free(tmp);
      }
      outputs.push(step);
      if (outputs.length > 3) for (const id of outputs.shift()!) b.free(id);
    }
    for (const step of outputs) for (const id of step) b.free(id);
    for (const c of caches) b.free(c);
  }
  return b.ops;
}

export function smallTrace(seed = 3, n = 60_000): Op[] {
  const r = random(seed);
  const b = new Builder();
  const live: number[] = [];
  for (let i = 0; i < n; i++) {
    const target = 2000 + 1500 * Math.sin(i / 4000);
    if (live.length < target || r() < 0.5) live.push(b.alloc(logUniform(r, 512, MiB)));
    else {
      const k = Math.floor(r() * live.length);
      const id = live[k];
      live[k] = live[live.length - 1];
      live.pop();
      b.free(id);
    }
  }
  b.freeAll();
  return b.ops;
}

/** Two streams: the training trace's allocations alternate between streams 0 and 7. */
export function twoStreamTrace(seed = 4): Op[] {
  return trainingTrace(seed, 4, 8).map((o) =>
    o.op === 'alloc' ? { ...o, stream: o.id % 2 === 0 ? 0 : 7 } : o,
  );
}
