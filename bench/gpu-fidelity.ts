/**
 * The H200 traces replayed through the PyTorch models on the real GPU: for
 * each recording of traces/h200, replay() as `vmmkit replay` does on backend
 * 'cuda', and the fidelity test's replay (test/alloc/pytorch/fidelity.test.ts:
 * reservations hinted at the recorded addresses, Note [Recorded addresses])
 * on the real driver. Run on the GPU machine after `npm run build` and
 * ../shared/device/pack.sh, with carry [".device", "dist"]:
 *
 *   source .device/setup.sh && node dist/bench/gpu-fidelity.js
 *
 * Prints one JSON line per run and, when OUT is set, writes them all to
 * $OUT/h200-fidelity.json: a GPU script writes its measurement every run
 * (no --write), into the folder it is given, never into bench/results; the
 * committed bench/results/h200-fidelity.json is such a file, copied back.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { AllocatorContext } from '../src/alloc/allocator.js';
import {
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
  settingsFromSnapshot,
} from '../src/alloc/pytorch/index.js';
import { CudaBackend } from '../src/backends/cuda/backend.js';
import { Runtime } from '../src/core/runtime.js';
import { replay } from '../src/entry/replay-library.js';
import { DEFAULT_ALLOCATORS } from '../src/replay/engine/allocators.js';
import { compareWithTrace } from '../src/replay/engine/fidelity.js';
import { planReplay } from '../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../src/replay/read/load.js';
import { hintingBackend, recordedReservationHints, replayDevice } from '../test/support/trace-replay.js';

const DIR = 'traces/h200';
const meta = JSON.parse(readFileSync(`${DIR}/pytorch-reserved.json`, 'utf8'));
const out: unknown[] = [];
const RANGE = Math.ceil((150_109_880_320 * 9) / 8 / (20 * 2 ** 20)) * 20 * 2 ** 20;

for (const r of meta.runs) {
  const name = r.setting === 'native' ? 'pytorch-native' : 'pytorch-expandable';
  const line: Record<string, unknown> = { trace: r.trace, pytorchPeakReserved: r.maxMemoryReserved };
  try {
    const snapshot = readSnapshotFile(`${DIR}/${r.trace}`);
    const res = replay(snapshot, {
      allocators: DEFAULT_ALLOCATORS.filter((a) => a.name === name),
      backend: 'cuda',
    });
    const a = res.allocators[0];
    const f = compareWithTrace(res.plan.devices[0], a.devices[0]);
    line.replay = {
      peakReserved: a.peakReservedBytes,
      error: a.error,
      warnings: a.warnings,
      replayMs: Math.round(a.replayMs),
      driverCalls: a.driverCalls,
      measuredDriverTimeUs: a.measuredDriverTimeUs,
      segments: `${f.segmentEventsMatched}/${f.segmentEventsRecorded} (replayed ${f.segmentEventsReplayed})`,
      offsets: `${f.allocsMatched}/${f.allocsCompared}`,
      firstDifference: f.firstDifference?.message,
    };
    // The fidelity test's replay, on the real driver.
    const settings = settingsFromSnapshot(snapshot.allocatorSettings);
    const plan = planReplay(snapshot).devices[0];
    const warnings: string[] = [];
    const cuda = new CudaBackend({ report: (m) => warnings.push(m) });
    const rt = new Runtime(hintingBackend(cuda, recordedReservationHints(plan, RANGE)), {
      report: (m) => warnings.push(m),
    });
    const t0 = performance.now();
    const { run, allocator } = replayDevice(
      plan,
      (c: AllocatorContext) =>
        r.setting === 'native'
          ? new PytorchNativeAllocator(c, settings)
          : new PytorchExpandableAllocator(c, settings),
      rt,
    );
    const ms = performance.now() - t0;
    const g = compareWithTrace(plan, run);
    allocator.dispose();
    const leftover = rt.stats();
    rt.dispose();
    line.hinted = {
      peakReserved: run.peakReservedBytes,
      ms: Math.round(ms),
      segments: `${g.segmentEventsMatched}/${g.segmentEventsRecorded} (replayed ${g.segmentEventsReplayed})`,
      offsets: `${g.allocsMatched}/${g.allocsCompared}`,
      firstDifference: g.firstDifference?.message,
      afterDispose: leftover,
      warnings,
    };
  } catch (e) {
    line.error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  }
  console.log(JSON.stringify(line));
  out.push(line);
}
if (process.env.OUT) writeFileSync(`${process.env.OUT}/h200-fidelity.json`, JSON.stringify(out, null, 1));
