/**
 * vmmkit's allocator against the PyTorch expandable-segments model on the
 * synthetic traces of traces.ts, on a simulated H200:
 *
 *   npx tsc -p . && node dist/test/alloc/vmmkit/measure.js ['{"slack": 0.01, ...}'] [--cuda] [--out FILE]
 *
 * With --cuda the same allocators run on the real GPU (createRuntime({
 * backend: 'cuda' })), and each row also has the driver time measured
 * there (measuredDriverMs: wall time inside the VMM calls).
 *
 * For each trace and allocator: peak reserved / peak requested, estimated
 * H200 driver time priced per handle (meter.ts), chunks created, and the
 * wall time of the replay here.
 */

import { writeFileSync } from 'node:fs';
import type { CachingAllocator } from '../../../src/alloc/allocator.js';
import { DEFAULT_PYTORCH_SETTINGS, PytorchExpandableAllocator } from '../../../src/alloc/pytorch/index.js';
import { VmmkitAllocator, type VmmkitOptions } from '../../../src/alloc/vmmkit/index.js';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { createRuntime } from '../../../src/compose/create-runtime.js';
import { Runtime } from '../../../src/core/runtime.js';
import { meter } from './meter.js';
import { inferenceTrace, type Op, smallTrace, trainingTrace, twoStreamTrace } from './traces.js';

export interface Measured {
  readonly trace: string;
  readonly allocator: string;
  readonly ratio: number;
  readonly peakReservedMiB: number;
  readonly peakRequestedMiB: number;
  readonly driverMs: number;
  readonly measuredDriverMs: number;
  readonly creates: number;
  readonly setAccessHandles: number;
  readonly unmaps: number;
  readonly wallMs: number;
  readonly events: number;
}

export function run(
  trace: string,
  ops: readonly Op[],
  name: string,
  make: (rt: Runtime) => CachingAllocator,
  cuda = false,
): Measured {
  const rt = cuda
    ? createRuntime({ backend: 'cuda' })
    : new Runtime(createMachine({ devices: ['H200'] }).spawn());
  const est = meter(rt);
  const alloc = make(rt);
  const address = new Map<number, number>();
  const t0 = performance.now();
  for (const o of ops) {
    if (o.op === 'alloc') address.set(o.id, alloc.malloc(o.size, o.stream));
    else if (o.op === 'free') {
      alloc.free(address.get(o.id)!);
      address.delete(o.id);
    } else alloc.emptyCache();
  }
  const wallMs = performance.now() - t0;
  const s = alloc.stats;
  const out: Measured = {
    trace,
    allocator: name,
    ratio: Math.round((s.peakReservedBytes / s.peakRequestedBytes) * 10000) / 10000,
    peakReservedMiB: Math.round(s.peakReservedBytes / 2 ** 20),
    peakRequestedMiB: Math.round(s.peakRequestedBytes / 2 ** 20),
    driverMs: Math.round(est.us) / 1000,
    measuredDriverMs: Math.round(est.measuredUs) / 1000,
    creates: est.creates,
    setAccessHandles: est.setAccessHandles,
    unmaps: est.unmaps,
    wallMs: Math.round(wallMs),
    events: ops.length,
  };
  alloc.dispose();
  rt.dispose();
  return out;
}

export const TRACES: readonly [string, () => Op[]][] = [
  ['training', () => trainingTrace()],
  ['training-b', () => trainingTrace(11, 8, 40)],
  ['inference', () => inferenceTrace()],
  ['inference-b', () => inferenceTrace(12, 4, 200, 32)],
  ['small', () => smallTrace()],
  ['two-streams', () => twoStreamTrace()],
];

function main(): void {
  const args = process.argv.slice(2);
  const cuda = args.includes('--cuda');
  const outAt = args.indexOf('--out');
  const json = args.find((a) => a.startsWith('{'));
  const options: VmmkitOptions = JSON.parse(json ?? '{}');
  const rows: Measured[] = [];
  for (const [name, make] of TRACES) {
    const ops = make();
    rows.push(
      run(
        name,
        ops,
        'pytorch-expandable',
        (rt) => new PytorchExpandableAllocator({ runtime: rt, device: 0 }, DEFAULT_PYTORCH_SETTINGS),
        cuda,
      ),
    );
    rows.push(
      run(name, ops, 'vmmkit', (rt) => new VmmkitAllocator({ runtime: rt, device: 0 }, options), cuda),
    );
  }
  console.table(rows);
  if (outAt >= 0)
    writeFileSync(
      args[outAt + 1],
      `${JSON.stringify({ cuda, options, date: new Date().toISOString(), rows }, null, 1)}\n`,
    );
}

if (process.argv[1]?.endsWith('measure.js')) main();
