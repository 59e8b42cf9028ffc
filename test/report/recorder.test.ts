import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { RuntimeDescription } from '../../src/core/runtime.js';
import { DEFAULT_ALLOCATORS } from '../../src/replay/engine/allocators.js';

import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';

import { ReplayRecorder } from '../../src/report/recorder.js';
import { reportData } from '../../src/report/report-data.js';
import { type Event, snapshotOf } from '../replay/helpers.js';
import { recordReplay, replay } from '../support/replay.js';

const trace = (name: string) => fileURLToPath(new URL(`../../traces/h200/${name}`, import.meta.url));

describe('recordReplay on a real trace (phases_streams, native)', () => {
  const snapshot = readSnapshotFile(trace('phases_streams-native.pickle.gz'));
  const recorded = recordReplay(snapshot, { allocators: DEFAULT_ALLOCATORS, buckets: 100 });

  it('changes nothing replay reports: the same peaks as a plain replay', () => {
    const plain = replay(snapshot, { allocators: DEFAULT_ALLOCATORS, keepEvents: false });
    expect(recorded.result.allocators.map((a) => [a.name, a.peakReservedBytes, a.driverCalls])).toEqual(
      plain.allocators.map((a) => [a.name, a.peakReservedBytes, a.driverCalls]),
    );
  });

  for (const [i, f] of DEFAULT_ALLOCATORS.entries()) {
    it(`${f.name}: the timeline's maxima are the run's peaks, and its driver calls the meter's`, () => {
      const { run, recordings } = recorded.runs[i];
      expect(run.error).toBeUndefined();
      const r = recordings[0];
      const d = run.devices[0];
      expect(r.reserved.max).toBe(d.peakReservedBytes);
      expect(r.allocated.max).toBe(d.peakAllocatedBytes);
      expect(r.requested.max).toBe(recorded.plan.peakRequestedBytes);
      const calls = Object.values(run.driverCalls).reduce((s, x) => s + x, 0);
      expect(r.driverCalls.max).toBe(calls);
      expect(r.reserved.first.length).toBeLessThanOrEqual(100);
    });

    it(`${f.name}: the second pass ends at the peak, with the layout a pass to the end takes there`, () => {
      const r = recorded.runs[i].recordings[0];
      const capture = new Map([[`0:${r.device}`, r.peakCall]]);
      const pass = (stopOnceCaptured: boolean) => {
        let steps = 0;
        const again = new ReplayRecorder(recorded.plan, {
          buckets: 1,
          captureAfterCall: capture,
          stopOnceCaptured,
        });
        const run = replay(snapshot, {
          allocators: [f],
          plan: recorded.plan,
          keepEvents: false,
          onStep: (step) => {
            steps++;
            again.onStep(step);
          },
        }).allocators[0];
        return { steps, run, layout: again.recordings(0)[0].layout };
      };
      const full = pass(false);
      const short = pass(true);
      expect(short.layout).toEqual(full.layout);
      expect(short.layout?.reservedBytes).toBe(r.reserved.max);
      expect(full.run.error).toBeUndefined();
      expect(short.run.error).toMatch(/^CapturesTaken/);
      expect(short.steps).toBe(r.peakCall + 1);
      expect(short.steps).toBeLessThan(full.steps);
    });

    it(`${f.name}: the layout captured at the peak holds the peak's reserved bytes and live blocks`, () => {
      const r = recorded.runs[i].recordings[0];
      const layout = r.layout!;
      expect(layout).toBeDefined();
      expect(layout.reservedBytes).toBe(r.reserved.max);
      const mapped = layout.description.reservations.reduce(
        (s, res) => s + res.mappings.reduce((t, m) => t + m.size, 0),
        0,
      );
      expect(mapped).toBe(layout.reservedBytes);
      // Every live block lies in a mapped range, and none overlap.
      for (const [k, b] of layout.blocks.entries()) {
        if (k > 0)
          expect(b.address).toBeGreaterThanOrEqual(layout.blocks[k - 1].address + layout.blocks[k - 1].size);
        const inside = mappedRanges(layout.description).some(
          ([start, end]) => b.address >= start && b.address + b.size <= end,
        );
        expect(inside, `block at 0x${b.address.toString(16)}`).toBe(true);
      }
      // The number of live blocks is the trace's at that event (allocs minus frees up to it).
      const plan = recorded.plan.devices[0];
      let live = plan.initialBlocks.length;
      for (let e = 0; e <= layout.event; e++) {
        if (plan.blockOf[e] < 0) continue;
        const a = plan.trace.action[e];
        if (a === 0) live++;
        else if (a === 2) live--;
      }
      expect(layout.blocks.length).toBe(live);
    });
  }
});

describe('ReplayRecorder', () => {
  it('says so when told of a free of an address its block does not have', () => {
    const snapshot = readSnapshotFile(trace('phases_streams-native.pickle.gz'));
    const plan = planReplay(snapshot);
    const rec = new ReplayRecorder(plan);
    const result = replay(snapshot, {
      allocators: [DEFAULT_ALLOCATORS[0]],
      plan,
      keepEvents: false,
      // A free at an address that is not its block's: the recorder must not take it on trust.
      onStep: (step) => rec.onStep(step.kind === 'free' ? { ...step, address: step.address + 512 } : step),
    });
    expect(result.allocators[0].error).toMatch(/RecorderError/);
  });
});

describe('Note [Reserved but unusable]', () => {
  const MiB = 1024 ** 2;
  it("counts the cache a request could not use, at the request that made PyTorch's allocator reserve more", () => {
    // A small block's 2 MiB segment, freed to the cache, cannot serve a large request (N3: its own pool);
    // the large request's freed 20 MiB segment then serves the next large one.
    const snapshot = snapshotOf([
      ['alloc', 0x1000, 1 * MiB],
      ['free_completed', 0x1000, 1 * MiB],
      ['alloc', 0x200000, 3 * MiB],
      ['free_completed', 0x200000, 3 * MiB],
      ['alloc', 0x200000, 4 * MiB],
    ]);
    const native = DEFAULT_ALLOCATORS.filter((a) => a.name === 'pytorch-native');
    const r = recordReplay(snapshot, { allocators: native, buckets: 5, peakLayout: false }).runs[0]
      .recordings[0];
    // At the first large request; none at the small one (nothing cached yet) nor at the last (served from cache).
    expect([r.unusable.max, r.unusable.maxEvent]).toEqual([2 * MiB, 2]);
    expect([r.unusable.first[4], r.unusable.second[4], r.unusable.first[0], r.unusable.second[0]]).toEqual([
      0, 0, 0, 0,
    ]);
  });
});

/** Mapped address ranges, touching mappings merged (a block may span several pages or chunks). */
function mappedRanges(d: RuntimeDescription): [number, number][] {
  const ms = d.reservations.flatMap((r) => r.mappings).sort((a, b) => a.va - b.va);
  const out: [number, number][] = [];
  for (const m of ms) {
    const last = out[out.length - 1];
    if (last !== undefined && last[1] === m.va) last[1] = m.va + m.size;
    else out.push([m.va, m.va + m.size]);
  }
  return out;
}

describe('recordReplay on two devices', () => {
  const MiB = 1024 ** 2;
  const device0: Event[] = [
    ['alloc', 0x1000, 3 * MiB],
    ['alloc', 0x2000, 1 * MiB],
    ['free_completed', 0x1000, 3 * MiB],
  ];
  const device1: Event[] = [
    ['alloc', 0x9000, 30 * MiB],
    ['free_completed', 0x9000, 30 * MiB],
    ['alloc', 0xa000, 2 * MiB],
  ];
  const snapshot = snapshotOf(device0, device1);
  const recorded = recordReplay(snapshot, { allocators: DEFAULT_ALLOCATORS });

  it("records each device apart, and each device's map holds only its own reservations and blocks", () => {
    for (const { run, recordings } of recorded.runs) {
      expect(recordings.map((r) => r.device)).toEqual([0, 1]);
      for (const [k, r] of recordings.entries()) {
        expect(r.reserved.max, run.name).toBe(run.devices[k].peakReservedBytes);
        const layout = r.layout!;
        const handles = new Set(layout.description.allocations.map((a) => a.handle));
        expect(layout.description.allocations.every((a) => a.location.id === r.device)).toBe(true);
        for (const res of layout.description.reservations)
          for (const m of res.mappings) expect(handles.has(m.handle)).toBe(true);
      }
      // The blocks at each device's peak are the trace's live blocks after the event that reached it
      // (an allocator that maps ahead reaches its peak at the first alloc; others at the second).
      const liveAfter = (trace: readonly Event[], event: number) => {
        const live = new Map<number, number>();
        for (const [action, addr, size] of trace.slice(0, event + 1))
          if (action === 'alloc') live.set(addr, size);
          else live.delete(addr);
        return [...live.values()].sort((a, b) => b - a);
      };
      for (const [k, trace] of [device0, device1].entries()) {
        const layout = recordings[k].layout!;
        expect(layout.event, run.name).toBeGreaterThanOrEqual(0);
        expect(
          layout.blocks.map((b) => b.size).sort((a, b) => b - a),
          run.name,
        ).toEqual(liveAfter(trace, layout.event));
      }
      expect(recordings[1].layout!.blocks.map((b) => b.size)).toEqual([30 * MiB]);
    }
  });

  it('gives the report one section per device', () => {
    const data = reportData(recorded, 'two devices');
    expect(data.devices.map((d) => [d.device, d.series.length, d.maps.length])).toEqual([
      [0, 3, 3],
      [1, 3, 3],
    ]);
    expect(data.devices[1].xUnit).toBe('seconds');
    expect(data.devices[1].x[data.devices[1].x.length - 1]).toBe(2e-6);
  });
});

describe("the report's optimizer steps (Note [Steps from the optimizer's frames])", () => {
  const whatif = (name: string) =>
    fileURLToPath(new URL(`../../traces/h200-whatif/${name}`, import.meta.url));
  const pytorch = DEFAULT_ALLOCATORS.filter((a) => a.name === 'pytorch-native');
  const stepsOf = (snapshot: ReturnType<typeof readSnapshotFile>) =>
    reportData(
      recordReplay(snapshot, { allocators: pytorch, peakLayout: false }),
      'steps',
    ).devices[0].steps.map((s) => s.event);
  /** The first event at or after each Optimizer.step# START marker's time. */
  const fromMarkers = (snapshot: ReturnType<typeof readSnapshotFile>) => {
    const t = snapshot.traces[0];
    return (snapshot.annotations ?? [])
      .filter((a) => a.stage === 'START' && a.name.startsWith('Optimizer.step#'))
      .map((a) => {
        let i = 0;
        while (i < t.length && t.timeUs[i] < a.timeUs) i++;
        return i;
      });
  };

  it("a stackless recording's steps come from torch.optim's markers: one per step the job ran", () => {
    const reference = readSnapshotFile(whatif('gpt_train--reference.pickle.gz'));
    expect(reference.stacks.length).toBe(0);
    const steps = stepsOf(reference);
    // record.py's gpt_train runs 14 steps (step0 to step13 in results.json's marks).
    expect(steps).toHaveLength(14);
    expect(steps).toEqual(fromMarkers(reference));
  });

  it('without markers, the steps are where runs of allocations inside torch/optim/ start', () => {
    const stacks = readSnapshotFile(whatif('gpt_train--stacks.pickle'));
    const bare = { ...stacks, annotations: [] };
    const t = stacks.traces[0];
    const inOptimizer = (e: number) =>
      [...stacks.stacks[t.stack[e]]].some((f) => stacks.frames[f].filename.includes('torch/optim/'));
    const allocs: number[] = [];
    for (let e = 0; e < t.length; e++) if (t.action[e] === 0 && t.stack[e] >= 0) allocs.push(e);
    const starts = allocs.filter((e, k) => inOptimizer(e) && (k === 0 || !inOptimizer(allocs[k - 1])));
    expect(starts.length).toBeGreaterThan(1);
    expect(stepsOf(bare)).toEqual(starts);
    // With its markers, the same recording's steps are theirs.
    expect(stepsOf(stacks)).toEqual(fromMarkers(stacks));
  });
});
