import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AllocatorContext } from '../../../src/alloc/allocator.js';
import {
  type PytorchAllocatorSettings,
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
  settingsFromSnapshot,
} from '../../../src/alloc/pytorch/index.js';
import { compareWithTrace } from '../../../src/replay/engine/fidelity.js';
import { planReplay } from '../../../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../../../src/replay/read/load.js';
import { hintedRuntime, recordedReservationHints, replayDevice } from '../../support/trace-replay.js';

/**
 * Fidelity (docs/pytorch-allocators.md T5): every trace recorded on the H200
 * (traces/record.py) replayed through the model of the allocator it was
 * recorded under, against PyTorch's own numbers (pytorch-reserved.json):
 *  (a) peak reserved bytes within 2% of max_memory_reserved();
 *  (b) the segment events (segment_alloc/free, or segment_map/unmap) equal
 *      the recorded ones in action, size and order, and every alloc sits at
 *      the recorded offset inside its segment (fidelity.ts compares).
 * New reservations are placed where the recording's segments were (Note
 * [Recorded addresses] in test/support/trace-replay.ts), so that ties between equal
 * blocks break as they did on the driver, and emptyCache() is called where
 * the plan infers the workload called empty_cache() (trace-plan.ts, Note
 * [Inferred empty_cache]).
 */
const DIR = 'traces/h200';
const META = `${DIR}/pytorch-reserved.json`;

interface RecordedRun {
  readonly workload: string;
  readonly setting: 'native' | 'expandable';
  readonly trace: string;
  readonly maxMemoryReserved: number;
}

const runs: RecordedRun[] = existsSync(META)
  ? (JSON.parse(readFileSync(META, 'utf8')).runs as RecordedRun[]).filter((r) =>
      existsSync(`${DIR}/${r.trace}`),
    )
  : [];

/** Bytes of one expandable segment's range on the H200 (E3), to tell new segments' first maps apart. */
const H200_RANGE = Math.ceil((150_109_880_320 * 9) / 8 / (20 * 2 ** 20)) * 20 * 2 ** 20;

function make(setting: RecordedRun['setting'], settings: PytorchAllocatorSettings) {
  return (c: AllocatorContext) =>
    setting === 'native'
      ? new PytorchNativeAllocator(c, settings)
      : new PytorchExpandableAllocator(c, settings);
}

function replayRun(r: RecordedRun, hinted: boolean) {
  const snapshot = readSnapshotFile(`${DIR}/${r.trace}`);
  const settings = settingsFromSnapshot(snapshot.allocatorSettings);
  expect(settings.expandableSegments).toBe(r.setting === 'expandable');
  const plan = planReplay(snapshot);
  expect(plan.startedMidRun).toBe(false);
  let peak = 0;
  const reports = [];
  for (const d of plan.devices) {
    if (d.trace.length === 0) continue;
    const rt = hintedRuntime(hinted ? recordedReservationHints(d, H200_RANGE) : []);
    const { run, allocator } = replayDevice(d, make(r.setting, settings), rt);
    expect(run.ooms).toBe(0);
    peak += run.peakReservedBytes;
    reports.push({ report: compareWithTrace(d, run), allocs: d.counts.allocs });
    allocator.dispose();
    rt.dispose();
  }
  return { peak, reports };
}

describe.skipIf(runs.length === 0)('fidelity to traces recorded on an H200', () => {
  it.each(runs)('$workload under the $setting allocator', (r) => {
    const { peak, reports } = replayRun(r, true);
    const why = `${r.trace}: peak reserved ${peak}, PyTorch ${r.maxMemoryReserved}`;
    expect(Math.abs(peak / r.maxMemoryReserved - 1), why).toBeLessThanOrEqual(0.02);
    for (const { report, allocs } of reports) {
      expect(report.firstDifference?.message, why).toBeUndefined();
      expect(report.segmentEventsMatched).toBe(report.segmentEventsRecorded);
      expect(report.segmentEventsReplayed).toBe(report.segmentEventsRecorded);
      expect(report.allocsCompared).toBe(allocs);
      expect(report.allocsMatched).toBe(allocs);
    }
  });

  // One range per (pool, stream) leaves no ties between segments to break: the plain simulator agrees too.
  it.each(runs.filter((r) => r.setting === 'expandable'))(
    '$workload under the $setting allocator, on the plain simulator',
    (r) => {
      const { peak, reports } = replayRun(r, false);
      expect(peak).toBe(r.maxMemoryReserved);
      for (const { report } of reports) expect(report.firstDifference?.message).toBeUndefined();
    },
  );
});
