/**
 * Growing one buffer to 4 GiB on a real GPU (issue 8, item 1), in one run:
 *
 *   node dist/bench/gpu-grow.js --out FILE [--rounds 9] [--fixed-rounds 3] [--total-mib 4096] [--step-mib 2]
 *   node dist/bench/gpu-grow.js --fake --out FILE     (rehearsal on the simulated stand-in for libcuda)
 *
 * Runs over createRuntime({ backend: 'cuda' }). Sides (bench/grow.ts): a GrowableBuffer with geometric chunks, the same
 * with one chunk per 2 MiB step, and runtime.malloc doubling + copy + mfree;
 * each grows in 2 MiB steps, rounds rotating the order, best and median per
 * side, peak bytes from memoryInfo (cuMemGetInfo) read after every step in
 * one extra untimed run per side. Writes the result as JSON to FILE (or to
 * FILE/gpu-grow.json when FILE is a directory) on every run: a GPU script's
 * output is its measurement (no --write); FILE defaults to $OUT or the
 * current folder, never to bench/results. Goal: geometric 0 -> 4 GiB in at
 * most 3 ms with peak at most the final size plus one chunk.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFakeDriver } from '../conformance/gpu/fake-driver.js';
import { loadCudaDriver } from '../src/backends/cuda/driver.js';
import { createRuntime } from '../src/index.js';
import { gpuInfo } from './gpu-info.js';
import { optionOf } from './gpu-run.js';
import { measureGrow } from './grow.js';

const MiB = 1024 * 1024;
const GOAL_MS = 3;

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => optionOf(args, name);
const num = (name: string, fallback: number): number => {
  const v = opt(name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${name} ${v} is not a count`);
  return n;
};

function main(): void {
  const fake = args.includes('--fake');
  const out = opt('--out') ?? process.env.OUT ?? '.';
  const path = existsSync(out) && statSync(out).isDirectory() ? join(out, 'gpu-grow.json') : out;
  const total = num('--total-mib', 4096) * MiB;
  const step = num('--step-mib', 2) * MiB;
  const rounds = num('--rounds', fake ? 3 : 9);
  const fixedRounds = num('--fixed-rounds', fake ? 1 : 3);
  const driver = fake ? createFakeDriver() : loadCudaDriver();
  const rt = createRuntime({ backend: 'cuda', cuda: { driver } });
  const result = measureGrow(rt, { total, step, rounds, fixedRounds });
  const left = rt.stats();
  rt.dispose();
  const g = result.sides.geometric!;
  const { gpu, driver: driverVersion } = fake ? { gpu: 'fake (simulated H200)', driver: 'none' } : gpuInfo();
  const report = {
    gpu,
    driver: driverVersion,
    date: new Date().toISOString(),
    node: process.version,
    fake,
    ...result,
    goal: {
      geometricMs: GOAL_MS,
      metTime: g.bestMs <= GOAL_MS,
      metTimeMedian: g.medianMs <= GOAL_MS,
      metPeak: result.geometricPeakWithinFinalPlusChunk,
    },
    leftAfterBench: left,
    method:
      'One Node process, createRuntime({ backend: "cuda" }). Each side grows one buffer from one step to total in step increments; rounds rotate the order of sides after one warm-up run each; bestMs/medianMs over rounds (the doubling side includes its copies and a final synchronize). peakBytes: an extra untimed run per side reading cuMemGetInfo after every step, used bytes above the start of that run.',
  };
  writeFileSync(path, `${JSON.stringify(report, null, 1)}\n`);
  console.log(JSON.stringify({ path, ...report.goal, sides: result.sides }, null, 1));
}

main();
