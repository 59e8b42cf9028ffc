import { describe, expect, it } from 'vitest';
import { DEFAULT_ALLOCATORS } from '../../src/replay/engine/allocators.js';
import { exportRun } from '../../src/replay/engine/export.js';
import { compareWithTrace } from '../../src/replay/engine/fidelity.js';

import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readPickle } from '../../src/replay/read/load.js';
import { type PickleDict, pickle } from '../../src/replay/read/pickle/index.js';
import { ACTIONS, type MemorySnapshot, parseSnapshot } from '../../src/replay/read/snapshot.js';
import { replay } from '../support/replay.js';
import { readFixture } from './helpers.js';
import { python, pythonMissing } from './python.js';
import { ONE_STEP } from './support/one-step-allocator.js';

const MiB = 1024 * 1024;

/** Replay through one allocator, export, write and read back. */
function roundTrip(snapshot: MemorySnapshot, factory = ONE_STEP) {
  const plan = planReplay(snapshot);
  const run = replay(snapshot, { allocators: [factory], plan }).allocators[0];
  const value = readPickle(pickle(exportRun(snapshot, plan, run)));
  return { run, value: value as PickleDict, exported: parseSnapshot(value) };
}

const actionsOf = (s: MemorySnapshot) => [...s.traces[0].action].map((a) => ACTIONS[a]);

describe('exporting a replayed run as a snapshot', () => {
  it("the hand trace under one-step: the program's events at our addresses, our segment events in PyTorch's order", () => {
    const { run, exported } = roundTrip(readFixture('hand.pickle'));
    expect(actionsOf(exported)).toEqual([
      'segment_alloc',
      'alloc',
      'segment_alloc',
      'alloc',
      'free_requested',
      'free_completed',
      'segment_free',
      'segment_alloc',
      'alloc',
      'snapshot',
      'free_completed',
      'segment_free',
      'free_completed',
      'segment_free',
    ]);
    const t = exported.traces[0];
    expect(t.addr[1]).toBe(run.devices[0].blockAddress[0]);
    expect(t.addr[0]).toBe(t.addr[1]);
    expect([...t.size].filter((_, i) => t.action[i] === 0)).toEqual([1000, 3000, 500]);
    expect(exported.segments).toEqual([]);
    expect(planReplay(exported).peakRequestedBytes).toBe(4000);
  });

  it('a mid-run trace: rebuilt blocks become allocs at the start, live ones end in segments tiled with inactive blocks', () => {
    const { exported } = roundTrip(readFixture('midrun.pickle.gz'));
    expect(actionsOf(exported).slice(0, 4)).toEqual(['segment_alloc', 'segment_alloc', 'alloc', 'alloc']);
    expect(planReplay(exported).startedMidRun).toBe(false);
    expect(exported.segments).toHaveLength(1);
    const s = exported.segments[0];
    expect(s.totalSize).toBe(2 * MiB);
    expect(s.blocks.map((b) => [b.state, b.size])).toEqual([
      ['active_allocated', 8192],
      ['inactive', 2 * MiB - 8192],
    ]);
  });

  it('an allocation that ran out of memory is an oom event and its free is left out', () => {
    const { exported } = roundTrip(readFixture('too-big.pickle'));
    expect(actionsOf(exported)).toEqual(['oom', 'segment_alloc', 'alloc', 'free_completed', 'segment_free']);
  });

  it('a run that kept no addresses cannot be exported', () => {
    const s = readFixture('hand.pickle');
    const plan = planReplay(s);
    const run = replay(s, { allocators: [ONE_STEP], plan, keepEvents: false }).allocators[0];
    expect(() => exportRun(s, plan, run)).toThrow(/kept no addresses/);
  });

  it('replaying an exported run with the same allocator reproduces it exactly (recorded H200 traces)', () => {
    const cases = [
      ['cnn_train-native.pickle.gz', 'pytorch-native'],
      ['moe_train-expandable.pickle.gz', 'pytorch-expandable'],
    ] as const;
    for (const [name, model] of cases) {
      const factory = DEFAULT_ALLOCATORS.find((a) => a.name === model)!;
      const first = roundTrip(readFixture(`../../../traces/h200/${name}`), factory);
      const plan = planReplay(first.exported);
      const again = replay(first.exported, { allocators: [factory], plan }).allocators[0];
      expect(again.peakReservedBytes, name).toBe(first.run.peakReservedBytes);
      const f = compareWithTrace(plan.devices[0], again.devices[0]);
      expect(f.firstDifference?.message, name).toBeUndefined();
      expect(f.allocsCompared, name).toBe(plan.allocs);
    }
  });

  const noPython = pythonMissing();
  it.skipIf(noPython !== undefined)('python3 reads an exported snapshot', () => {
    const s = readFixture('midrun.pickle.gz');
    const plan = planReplay(s);
    const run = replay(s, { allocators: [ONE_STEP], plan }).allocators[0];
    const summary = python(
      'import pickle, sys\ns = pickle.loads(sys.stdin.buffer.read())\nprint(len(s["device_traces"][0]), [b["state"] for b in s["segments"][0]["blocks"]], s["segments"][0]["segment_pool_id"])',
      pickle(exportRun(s, plan, run)),
    );
    expect(summary.toString().trim()).toBe("11 ['active_allocated', 'inactive'] (0, 0)");
  });
});
