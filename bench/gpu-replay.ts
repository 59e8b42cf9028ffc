/**
 * Recorded PyTorch traces replayed through every allocator on a real GPU
 * (issue 8, "real hardware"), beside the same replay on the simulator:
 *
 *   node dist/bench/gpu-replay.js --out FILE [--dir DIR] [--trace NAME ...]   (default: all of traces/h200)
 *   node dist/bench/gpu-replay.js --sim-only --out FILE             (the simulator side alone, here)
 *   node dist/bench/gpu-replay.js --fake --out FILE                 (rehearsal over the stand-in for libcuda)
 *
 * For each trace and allocator: peak reserved bytes (the allocator's books)
 * and the device's own used memory at that peak (cuMemGetInfo, Note [Device
 * memory at the peak] in src/replay/engine/replay.ts), the driver calls, the driver
 * time estimated from bench/results/h200-driver-costs.json and the driver
 * time measured around each call on the GPU. Writes one JSON file, FILE, on
 * every run: a GPU script's output is its measurement (no --write); the
 * committed bench/results/h200-replay*.json are such files, copied back.
 */

import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createFakeDriver } from '../conformance/gpu/fake-driver.js';
import { replay } from '../src/entry/replay-library.js';
import { DEFAULT_ALLOCATORS, selectAllocators } from '../src/replay/engine/allocators.js';
import { loadCostTable } from '../src/replay/engine/cost-table.js';
import type { AllocatorRun } from '../src/replay/engine/replay.js';
import { planReplay } from '../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../src/replay/read/load.js';
import { gpuInfo } from './gpu-info.js';

const args = process.argv.slice(2);
const DIR = args.includes('--dir') ? args[args.indexOf('--dir') + 1] : 'traces/h200';
const out = args[args.indexOf('--out') + 1];
if (!args.includes('--out') || out === undefined) throw new Error('--out FILE is required');
const simOnly = args.includes('--sim-only');
const cuda = args.includes('--fake') ? { driver: createFakeDriver() } : undefined;
const chosen = args.flatMap((a, i) => (args[i - 1] === '--trace' ? [a] : []));
const traces = chosen.length > 0 ? chosen : readdirSync(DIR).filter((f) => f.endsWith('.pickle.gz'));
const costs = loadCostTable('bench/results/h200-driver-costs.json');
const pytorch = JSON.parse(readFileSync(`${DIR}/pytorch-reserved.json`, 'utf8')).runs as {
  trace: string;
  maxMemoryReserved: number;
}[];

function gpu(): string {
  const { gpu: name, driver } = gpuInfo();
  return name === 'unknown' ? 'none (simulator only)' : `${name}, ${driver}`;
}

function summary(a: AllocatorRun) {
  return {
    peakReservedBytes: a.peakReservedBytes,
    ratio: a.ratio,
    utilization: a.utilization,
    deviceUsedAtPeakBytes: a.devices.reduce((s, d) => s + (d.deviceUsedAtPeakBytes ?? 0), 0),
    driverCalls: a.driverCalls,
    estimatedDriverTimeUs: a.driverTimeUs,
    measuredDriverTimeUs: a.measuredDriverTimeUs,
    replayMs: Math.round(a.replayMs),
    ooms: a.ooms,
    error: a.error ?? null,
    warnings: a.warnings,
  };
}

const results = [];
for (const trace of traces) {
  const snapshot = readSnapshotFile(`${DIR}/${trace}`);
  const plan = planReplay(snapshot);
  const allocators = selectAllocators([], DEFAULT_ALLOCATORS);
  const sim = replay(snapshot, { allocators, costs, plan, measureDeviceMemory: true, keepEvents: false });
  const real = simOnly
    ? undefined
    : replay(snapshot, { allocators, costs, plan, backend: 'cuda', cuda, keepEvents: false });
  const row = {
    trace,
    events: plan.events,
    peakRequestedBytes: plan.peakRequestedBytes,
    pytorchMaxMemoryReserved: pytorch.find((p) => p.trace === trace)?.maxMemoryReserved ?? null,
    allocators: sim.allocators.map((s, i) => ({
      name: s.name,
      simulator: summary(s),
      gpu: real === undefined ? null : summary(real.allocators[i]),
    })),
  };
  results.push(row);
  for (const a of row.allocators) {
    const g = a.gpu;
    console.log(
      `${trace} ${a.name}: reserved ${a.simulator.peakReservedBytes}` +
        (g === null
          ? ''
          : ` | gpu reserved ${g.peakReservedBytes}, device used at peak ${g.deviceUsedAtPeakBytes}, driver ${g.estimatedDriverTimeUs?.toFixed(0)} us estimated / ${g.measuredDriverTimeUs?.toFixed(0)} us measured${g.error ? `, error ${g.error}` : ''}`),
    );
  }
}
writeFileSync(
  out,
  `${JSON.stringify({ script: 'bench/gpu-replay.ts', dir: DIR, date: new Date().toISOString(), gpu: cuda ? 'fake (rehearsal)' : gpu(), simOnly, results }, null, 1)}\n`,
);
