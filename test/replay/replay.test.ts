import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProcess } from '../../src/compose/create-runtime.js';
import { Access } from '../../src/core/types.js';
import { DEFAULT_ALLOCATORS } from '../../src/replay/engine/allocators.js';
import {
  CostTable,
  CostTableError,
  loadCostTable,
  parseCostTable,
} from '../../src/replay/engine/cost-table.js';
import { DriverMeter } from '../../src/replay/engine/driver-meter.js';
import { compareWithTrace } from '../../src/replay/engine/fidelity.js';
import { RecordedPlacement } from '../../src/replay/engine/placement.js';
import { BlockState } from '../../src/replay/engine/replay.js';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { Action, type MemorySnapshot } from '../../src/replay/read/snapshot.js';
import { replay } from '../support/replay.js';
import { fixture, readFixture, snapshotOf } from './helpers.js';
import { ONE_STEP, OneStepAllocator as OneStep } from './support/one-step-allocator.js';

const MiB = 1024 * 1024;
const testCosts = () => loadCostTable(fixture('test-driver-costs.json'));

describe('trace plan', () => {
  it('peak requested bytes of the hand-checked trace is 4000 (see make_fixtures.py)', () => {
    const plan = planReplay(readFixture('hand.pickle'));
    expect(plan.peakRequestedBytes).toBe(4000);
    expect(plan.events).toBe(9);
    expect(plan.allocs).toBe(3);
    expect(plan.durationUs).toBe(80);
    expect(plan.startedMidRun).toBe(false);
    const c = plan.devices[0].counts;
    expect([c.freeRequested, c.freeCompleted, c.segmentAlloc, c.snapshots]).toEqual([1, 3, 1, 1]);
  });

  it('a block freed at its address and reallocated gets a new id; frees point at the right block', () => {
    const plan = planReplay(
      snapshotOf([
        ['alloc', 4096, 100],
        ['free_completed', 4096, 100],
        ['alloc', 4096, 200],
        ['free_requested', 4096, 200],
        ['free_completed', 4096, 200],
      ]),
    );
    expect([...plan.devices[0].blockOf]).toEqual([0, 0, 1, 1, 1]);
    expect(plan.peakRequestedBytes).toBe(200);
  });

  it('a trace that started mid-run: blocks live before it are reconstructed and counted in the peak', () => {
    const plan = planReplay(readFixture('midrun.pickle.gz'));
    expect(plan.startedMidRun).toBe(true);
    expect(plan.reconstructedBlocks).toBe(2);
    const d = plan.devices[0];
    expect([...d.initialAddress].map((a) => a - 0x7f00_0000_0000)).toEqual([0, 8192]);
    expect([...d.initialBlocks].map((id) => d.blockSize[id])).toEqual([4096, 8192]);
    expect(plan.peakRequestedBytes).toBe(14336);
  });

  it('double frees and allocs over a live address are counted, not guessed at', () => {
    const plan = planReplay(readFixture('double-free.pickle'));
    expect(plan.devices[0].counts.unmatchedFrees).toBe(1);
    expect(plan.startedMidRun).toBe(false);
    const dup = planReplay(
      snapshotOf([
        ['alloc', 4096, 100],
        ['alloc', 4096, 50],
        ['free_completed', 4096, 50],
      ]),
    );
    expect(dup.devices[0].counts.duplicateAllocs).toBe(1);
    // The older block is never freed: 100 stays live, so the peak is 150.
    expect(dup.peakRequestedBytes).toBe(150);
  });

  it('matches blocks as a walk over one map of every address does (Note [Live and touched addresses])', () => {
    const actions = ['alloc', 'free_requested', 'free_completed'] as const;
    const event = fc.tuple(
      fc.constantFrom(...actions),
      fc.integer({ min: 0, max: 5 }),
      fc.integer({ min: 1, max: 9 }),
    );
    const segmentBlock = fc.tuple(fc.integer({ min: 0, max: 7 }), fc.boolean());
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 60 }),
        fc.array(segmentBlock, { maxLength: 6 }),
        (events, ends) => {
          const base = 0x7f00_0000_0000;
          const snapshot: MemorySnapshot = {
            ...snapshotOf(events.map(([a, slot, size]) => [a, base + slot * 512, size * 512] as const)),
            segments: [
              {
                device: 0,
                address: base,
                totalSize: 8 * 512,
                stream: 0,
                segmentType: 'small',
                isExpandable: false,
                poolId: undefined,
                stack: -1,
                blocks: ends.map(([slot, active]) => ({
                  address: base + slot * 512,
                  size: 512,
                  requestedSize: 512,
                  state: active ? ('active_allocated' as const) : ('inactive' as const),
                  stack: -1,
                })),
              },
            ],
          };
          const d = planReplay(snapshot).devices[0];
          const expected = referenceWalk(snapshot);
          expect([...d.blockOf]).toEqual(expected.blockOf);
          expect([...d.blockSize.subarray(0, d.blockCount)]).toEqual(expected.sizes);
          expect([...d.initialBlocks]).toEqual(expected.initial.map((b) => b.id));
          expect([...d.initialAddress]).toEqual(expected.initial.map((b) => b.address));
          expect([d.counts.unmatchedFrees, d.counts.duplicateAllocs, d.counts.inconsistentBlocks]).toEqual(
            expected.counts,
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('infers empty_cache() at the start of each run of segment frees, except where GC or an OOM retry may explain it', () => {
    const events = [
      ['segment_alloc', 0x1000_0000, 20 * MiB],
      ['alloc', 0x1000_0000, MiB],
      ['free_completed', 0x1000_0000, MiB],
      ['segment_free', 0x1000_0000, 20 * MiB],
      ['segment_map', 0x2000_0000, 20 * MiB],
      ['segment_unmap', 0x2000_0000, 2 * MiB],
      ['segment_unmap', 0x2000_0000 + 2 * MiB, 2 * MiB],
      ['alloc', 0x1000_0000, MiB],
    ] as const;
    const s = snapshotOf(events);
    // Two runs: the segment_free, and the two unmaps after the map.
    expect([...planReplay(s).devices[0].emptyCacheBefore]).toEqual([3, 5]);
    expect(planReplay(s).devices[0].counts.inferredEmptyCaches).toBe(2);
    expect(planReplay(s, { inferEmptyCache: false }).devices[0].emptyCacheBefore).toHaveLength(0);
    // The device was full when the frees began: they may be a malloc's retry.
    expect(planReplay(s, { deviceMemory: 21 * MiB }).devices[0].emptyCacheBefore).toHaveLength(0);
    // With garbage collection on, segment_free may be GC's; segment_unmap (expandable segments) is not.
    const gc = { ...s, allocatorSettings: { garbage_collection_threshold: 0.8 } };
    expect([...planReplay(gc).devices[0].emptyCacheBefore]).toEqual([5]);
  });

  it('sums devices', () => {
    const plan = planReplay(readFixture('two-devices.pickle'));
    expect(plan.devices.map((d) => d.peakRequestedBytes)).toEqual([3 * MiB, 5 * MiB]);
    expect(plan.peakRequestedBytes).toBe(8 * MiB);
  });
});

describe('cost table', () => {
  it('interpolates between points, extrapolates by the last two, holds the first below it', () => {
    const t = testCosts();
    const alloc = 7; // cuMemAlloc
    expect(t.estimate(alloc, 2 * MiB)).toBe(40);
    expect(t.estimate(alloc, 3 * MiB)).toBe(50);
    expect(t.estimate(alloc, 8 * MiB)).toBe(100);
    expect(t.estimate(alloc, 1 * MiB)).toBe(40);
    expect(t.estimate(8, 64 * MiB)).toBe(30); // one point: a constant
    expect(t.info.gpu).toContain('test fixture');
  });

  it('refuses a malformed table and names a call that is missing', () => {
    expect(() =>
      parseCostTable(
        {
          calls: {
            cuMemMap: [
              [2, 1],
              [1, 1],
            ],
          },
        },
        'x',
      ),
    ).toThrow(/not ascending/);
    expect(() => parseCostTable({ calls: { cuMemMap: [] } }, 'x')).toThrow(/no points/);
    expect(() => parseCostTable([], 'x')).toThrow(/not a JSON object/);
    expect(() => loadCostTable(fixture('nope.json'))).toThrow(CostTableError);
    const t = new CostTable({ source: 'partial' }, { cuMemMap: [[1, 1]] });
    expect(() => t.estimate(9, 0)).toThrow(/no entry for cuCtxSynchronize/);
  });
});

describe('driver meter', () => {
  it('counts outermost calls only: a one-step malloc is one cuMemAlloc, not its inner steps', () => {
    const meter = new DriverMeter(testCosts(), false);
    const { runtime } = createProcess({ observers: [meter] });
    const r = runtime.malloc(0, 2 * MiB);
    runtime.mfree(r.base);
    const va = runtime.reserve(4 * MiB);
    const a = runtime.create(2 * MiB, {
      location: { type: 'device', id: 0 },
      handleTypes: 0,
      uncached: false,
    });
    runtime.map(va.base, 2 * MiB, a);
    runtime.setAccess(va.base, 2 * MiB, [{ device: 0, access: Access.ReadWrite }]);
    runtime.unmap(va.base, 2 * MiB);
    runtime.release(a);
    runtime.free(va);
    const use = meter.use();
    expect(use.calls).toMatchObject({
      cuMemAlloc: 1,
      cuMemFree: 1,
      cuMemAddressReserve: 1,
      cuMemAddressFree: 1,
      cuMemCreate: 1,
      cuMemRelease: 1,
      cuMemMap: 1,
      cuMemUnmap: 1,
      cuMemSetAccess: 1,
      cuCtxSynchronize: 0,
    });
    // 40 + 30 + reserve 1 (4 MiB: past the one point) + free 1 + create 10 + release 10 + map 1 + unmap 20 + access 30
    expect(use.estimatedUs).toBe(143);
    expect(use.measuredUs).toBeNull();
    runtime.synchronize();
    expect(() => meter.use()).toThrow(/no entry for cuCtxSynchronize/);
    runtime.dispose();
  });

  it('prices setAccess and unmap per mapping in their range (Note [Per-handle prices]), counting each call once', () => {
    const meter = new DriverMeter(testCosts(), false);
    const { runtime } = createProcess({ observers: [meter] });
    const va = runtime.reserve(6 * MiB);
    const props = { location: { type: 'device', id: 0 }, handleTypes: 0, uncached: false } as const;
    const handles = [0, 1, 2].map((i) => {
      const a = runtime.create(2 * MiB, props);
      runtime.map(va.base + i * 2 * MiB, 2 * MiB, a);
      return a;
    });
    const before = meter.use().estimatedUs ?? 0;
    runtime.setAccess(va.base, 6 * MiB, [{ device: 0, access: Access.ReadWrite }]);
    runtime.unmap(va.base, 6 * MiB);
    const use = meter.use();
    expect(use.calls).toMatchObject({ cuMemSetAccess: 1, cuMemUnmap: 1 });
    // Three 2 MiB mappings: 3 x 30 for access, 3 x 20 for the unmap.
    expect((use.estimatedUs ?? 0) - before).toBe(150);
    for (const a of handles) runtime.release(a);
    runtime.dispose();
  });

  it('measures wall time when asked', () => {
    const meter = new DriverMeter(undefined, true);
    const { runtime } = createProcess({ observers: [meter] });
    runtime.malloc(0, 2 * MiB);
    const use = meter.use();
    expect(use.estimatedUs).toBeNull();
    expect(use.measuredUs).toBeGreaterThan(0);
    runtime.dispose();
  });
});

describe('replay', () => {
  it('one-step allocator on the hand trace: every number by hand', () => {
    const r = replay(readFixture('hand.pickle'), { allocators: [ONE_STEP], costs: testCosts() });
    const a = r.allocators[0];
    expect(a.error).toBeUndefined();
    // A and B live together (2 MiB each); then B and C.
    expect(a.peakReservedBytes).toBe(4 * MiB);
    expect(a.ratio).toBe((4 * MiB) / 4000);
    expect(a.utilization).toBe(1);
    expect(a.driverCalls.cuMemAlloc).toBe(3);
    expect(a.driverCalls.cuMemFree).toBe(3);
    expect(a.driverCalls.cuMemMap).toBe(0);
    expect(a.driverTimeUs).toBe(3 * 40 + 3 * 30);
    expect(a.driverTimeMeasured).toBe(false);
    const d = a.devices[0];
    expect(d.segmentEvents.map((e) => [e.action, e.eventIndex])).toEqual([
      ['segment_alloc', 1],
      ['segment_alloc', 2],
      ['segment_free', 4],
      ['segment_alloc', 5],
      ['segment_free', 7],
      ['segment_free', 8],
    ]);
    expect([...d.blockState]).toEqual([BlockState.freed, BlockState.freed, BlockState.freed]);
  });

  it('mid-run trace: reconstructed blocks are allocated before the first event', () => {
    const r = replay(readFixture('midrun.pickle.gz'), { allocators: [ONE_STEP] });
    expect(r.plan.startedMidRun).toBe(true);
    const d = r.allocators[0].devices[0];
    expect(d.segmentEvents.slice(0, 2).map((e) => e.eventIndex)).toEqual([-1, -1]);
    // X and Y at the start, Z: three blocks of 2 MiB at the peak.
    expect(d.peakReservedBytes).toBe(6 * MiB);
    expect(d.blockState[r.plan.devices[0].initialBlocks[1]]).toBe(BlockState.live);
  });

  it('two devices: one simulated H200 each, peaks summed', () => {
    const r = replay(readFixture('two-devices.pickle'), { allocators: [ONE_STEP] });
    const a = r.allocators[0];
    expect(a.devices.map((d) => d.peakReservedBytes)).toEqual([4 * MiB, 6 * MiB]);
    expect(a.peakReservedBytes).toBe(10 * MiB);
    expect(a.ratio).toBe(10 / 8);
  });

  it('an allocator OOM is counted and the run goes on, or stops when asked', () => {
    const on = replay(readFixture('too-big.pickle'), { allocators: [ONE_STEP] }).allocators[0];
    expect(on.ooms).toBe(1);
    expect(on.error).toBeUndefined();
    expect(on.devices[0].firstOomEvent).toBe(0);
    expect(on.driverCalls.cuMemAlloc).toBe(2);
    expect(on.driverCalls.cuMemFree).toBe(1);
    const stop = replay(readFixture('too-big.pickle'), { allocators: [ONE_STEP], stopAtOom: true })
      .allocators[0];
    expect(stop.stoppedAtOom).toBe(true);
    expect(stop.driverCalls.cuMemAlloc).toBe(1);
  });

  it('an allocator that throws something else ends its own run with the message; the others still run', () => {
    const broken = {
      ...ONE_STEP,
      name: 'broken',
      create: () => {
        throw new RangeError('no such mode');
      },
    };
    const r = replay(readFixture('hand.pickle'), { allocators: [broken, ONE_STEP] });
    expect(r.allocators[0].error).toBe('RangeError: no such mode');
    expect(r.allocators[1].error).toBeUndefined();
    expect(r.allocators[1].peakReservedBytes).toBe(4 * MiB);
  });

  it('a small custom device makes an OOM cheap, and each allocator gets a fresh machine', () => {
    const device = {
      name: 'tiny',
      totalMemory: 4 * MiB,
      minimumGranularity: 2 * MiB,
      recommendedGranularity: 2 * MiB,
    };
    const s = snapshotOf([
      ['alloc', 0x1000, MiB],
      ['alloc', 0x2000, MiB],
      ['alloc', 0x3000, MiB],
    ]);
    const r = replay(s, { allocators: [ONE_STEP, ONE_STEP], device });
    expect(r.allocators.map((a) => a.ooms)).toEqual([1, 1]);
  });

  it('replay calls emptyCache() where the plan says the program did', () => {
    const calls: number[] = [];
    let cursor = 0;
    const counting = {
      ...ONE_STEP,
      create: (
        context: Parameters<typeof ONE_STEP.create>[0],
        settings: Parameters<typeof ONE_STEP.create>[1],
      ) => {
        const a = ONE_STEP.create(context, settings);
        return Object.assign(a, {
          emptyCache: () => calls.push(cursor),
          malloc: (size: number, stream: number) => {
            cursor++;
            return OneStep.prototype.malloc.call(a, size, stream);
          },
        });
      },
    };
    const s = snapshotOf([
      ['alloc', 0x1000, MiB],
      ['segment_free', 0x5000_0000, 2 * MiB],
      ['alloc', 0x2000, MiB],
    ]);
    replay(s, { allocators: [counting] });
    expect(calls).toEqual([1]);
    replay(s, { allocators: [counting], inferEmptyCache: false });
    expect(calls).toEqual([1]);
  });

  it('a call missing from the cost table ends that run with an error naming it; the counts stand', () => {
    const partial = new CostTable({ source: 'partial table' }, { cuMemAlloc: [[2 * MiB, 40]] });
    const a = replay(readFixture('hand.pickle'), { allocators: [ONE_STEP], costs: partial }).allocators[0];
    expect(a.error).toBe(
      'the cost table (partial table) has no entry for cuMemFree, which the allocator called',
    );
    expect(a.driverTimeUs).toBeNull();
    expect(a.driverCalls.cuMemFree).toBe(3);
  });

  it('progress is reported up to the total', () => {
    const seen: [number, number][] = [];
    replay(readFixture('hand.pickle'), {
      allocators: [ONE_STEP, ONE_STEP],
      onProgress: (d, t) => seen.push([d, t]),
    });
    expect(seen.at(-1)).toEqual([18, 18]);
  });

  it('the registered allocators all replay the fixtures without error', () => {
    for (const name of ['hand.pickle', 'midrun.pickle.gz', 'two-devices.pickle']) {
      const r = replay(readFixture(name), { allocators: DEFAULT_ALLOCATORS });
      for (const a of r.allocators) {
        expect(a.error, `${a.name} on ${name}`).toBeUndefined();
        expect(a.peakReservedBytes, `${a.name} on ${name}`).toBeGreaterThanOrEqual(r.plan.peakRequestedBytes);
      }
    }
  });
});

describe('recorded placement', () => {
  const R = 0x7f50_0000_0000;

  it('one-step allocations land at the recorded segment addresses and still count as cuMemAlloc / cuMemFree', () => {
    const s = snapshotOf([
      ['segment_alloc', R + 64 * MiB, 2 * MiB],
      ['alloc', R + 64 * MiB, 1000],
      ['segment_alloc', R, 4 * MiB],
      ['alloc', R, 3 * MiB],
      ['free_completed', R, 3 * MiB],
    ]);
    const a = replay(s, { allocators: [ONE_STEP] }).allocators[0];
    expect(a.placedSegments).toBe(2);
    expect(a.devices[0].segmentEvents.map((e) => e.address)).toEqual([R + 64 * MiB, R, R]);
    expect(a.driverCalls).toMatchObject({
      cuMemAlloc: 2,
      cuMemFree: 1,
      cuMemAddressReserve: 0,
      cuMemCreate: 0,
      cuMemMap: 0,
    });
    const sim = replay(s, { allocators: [ONE_STEP], recordedAddresses: false }).allocators[0];
    expect(sim.placedSegments).toBe(0);
    expect(sim.devices[0].segmentEvents[0].address).not.toBe(R + 64 * MiB);
  });

  it('a size the recording does not have next gets an ordinary malloc, and the recording waits for it', () => {
    const s = snapshotOf([
      ['segment_alloc', R, 4 * MiB],
      ['alloc', 0x1000, 1000],
      ['alloc', R, 3 * MiB],
    ]);
    const a = replay(s, { allocators: [ONE_STEP] }).allocators[0];
    expect(a.placedSegments).toBe(1);
    const [first, second] = a.devices[0].segmentEvents;
    expect(first.address).not.toBe(R);
    expect(second.address).toBe(R);
  });

  it('a placed malloc that runs out of memory leaves nothing behind', () => {
    const tiny = {
      name: 'tiny',
      totalMemory: 4 * MiB,
      minimumGranularity: 2 * MiB,
      recommendedGranularity: 2 * MiB,
    };
    const placement = new RecordedPlacement(planReplay(snapshotOf([['segment_alloc', R, 8 * MiB]])));
    const { runtime } = createProcess({ devices: [tiny], observers: [placement] });
    const hint = placement.forDevice(runtime, 0)?.addressFor(8 * MiB);
    expect(hint).toBe(R);
    expect(() => runtime.malloc(0, 8 * MiB, { hint })).toThrow(/out-of-memory/);
    expect(runtime.stats()).toMatchObject({ reservations: 0, mappings: 0, handles: 0 });
    expect(placement.placed).toBe(0);
    runtime.dispose();
  });
});

describe('fidelity', () => {
  const R1 = 0x7f00_0000_0000;
  const R2 = R1 + 64 * MiB;

  it('a recording the model reproduces compares equal', () => {
    const s = snapshotOf([
      ['segment_alloc', R1, 2 * MiB],
      ['alloc', R1, 1000],
      ['segment_alloc', R2, 2 * MiB],
      ['alloc', R2, 5000],
      ['free_completed', R1, 1000],
      ['segment_free', R1, 2 * MiB],
    ]);
    const plan = planReplay(s);
    const run = replay(s, { allocators: [ONE_STEP], plan }).allocators[0].devices[0];
    const f = compareWithTrace(plan.devices[0], run);
    expect(f.firstDifference).toBeUndefined();
    expect([f.segmentEventsRecorded, f.segmentEventsMatched, f.allocsCompared, f.allocsMatched]).toEqual([
      3, 3, 2, 2,
    ]);
  });

  it('reports the first segment difference and the first offset difference', () => {
    const sizes = snapshotOf([
      ['segment_alloc', R1, 20 * MiB],
      ['alloc', R1, 1000],
    ]);
    const plan = planReplay(sizes);
    const f = compareWithTrace(
      plan.devices[0],
      replay(sizes, { allocators: [ONE_STEP], plan }).allocators[0].devices[0],
    );
    expect(f.firstDifference?.kind).toBe('segment');
    expect(f.firstDifference?.message).toBe(
      'segment event 0 (trace event 0): recorded segment_alloc of 20971520 bytes, replayed segment_alloc of 2097152 bytes',
    );

    const offsets = snapshotOf([
      ['segment_alloc', R1, 2 * MiB],
      ['alloc', R1 + 512, 1000],
    ]);
    const p2 = planReplay(offsets);
    const g = compareWithTrace(
      p2.devices[0],
      replay(offsets, { allocators: [ONE_STEP], plan: p2 }).allocators[0].devices[0],
    );
    expect(g.firstDifference).toMatchObject({
      kind: 'offset',
      eventIndex: 1,
      recordedOffset: 512,
      replayedOffset: 0,
    });

    const extra = snapshotOf([['alloc', R1, 1000]]);
    const p3 = planReplay(extra);
    const h = compareWithTrace(
      p3.devices[0],
      replay(extra, { allocators: [ONE_STEP], plan: p3 }).allocators[0].devices[0],
    );
    expect(h.firstDifference?.message).toContain('recorded nothing more, replayed segment_alloc');
    expect(h.allocsSkipped).toBe(1);
  });

  it('mapped ranges merge with their neighbours, so offsets count from the start of the contiguous range', () => {
    const base = R1;
    const s = snapshotOf([
      ['segment_map', base, 2 * MiB],
      ['segment_map', base + 2 * MiB, 2 * MiB],
      ['alloc', base + 3 * MiB, 1000],
    ]);
    const plan = planReplay(s);
    // A run whose own events say the same, at another base address.
    const ours = 0x1000_0000;
    const run = {
      device: 0,
      peakReservedBytes: 0,
      peakAllocatedBytes: 0,
      peakRequestedBytes: 0,
      ratio: null,
      utilization: null,
      ooms: 0,
      firstOomEvent: -1,
      firstOom: null,
      recordedOoms: [],
      segmentEvents: [
        { action: 'segment_map' as const, address: ours, size: 4 * MiB, stream: 0, eventIndex: 0 },
      ],
      blockAddress: Float64Array.of(ours + 3 * MiB),
      blockState: Uint8Array.of(BlockState.live),
      deviceUsedAtPeakBytes: null,
      peakCapDemandBytes: null,
    };
    const f = compareWithTrace(plan.devices[0], run);
    expect(f.allocsMatched).toBe(1);
    expect(f.firstDifference?.kind).toBe('segment');
  });
});

describe('Note [Device memory at the peak]', () => {
  it('on the simulator the device holds exactly what each allocator reserved at its peak', async () => {
    const { readSnapshotFile } = await import('../../src/replay/read/load.js');
    const { DEFAULT_ALLOCATORS, selectAllocators } = await import('../../src/replay/engine/allocators.js');
    const snapshot = readSnapshotFile('traces/h200/phases_streams-native.pickle.gz');
    const result = replay(snapshot, {
      allocators: selectAllocators([], DEFAULT_ALLOCATORS),
      measureDeviceMemory: true,
    });
    expect(result.allocators.map((a) => a.name)).toEqual(['pytorch-native', 'pytorch-expandable', 'vmmkit']);
    for (const a of result.allocators) {
      const d = a.devices[0];
      expect(d.deviceUsedAtPeakBytes, a.name).toBe(d.peakReservedBytes);
    }
    const off = replay(snapshot, { allocators: selectAllocators(['vmmkit'], DEFAULT_ALLOCATORS) });
    expect(off.allocators[0].devices[0].deviceUsedAtPeakBytes).toBeNull();
  });
});

/** The plan's block walk as it was first written, one Map of every address (live block or FREED): the reference. */
function referenceWalk(snapshot: MemorySnapshot) {
  const FREED = -1;
  const t = snapshot.traces[0];
  const at = new Map<number, number>();
  const sizes: number[] = [];
  const blockOf: number[] = new Array(t.length).fill(-1);
  const initial: { id: number; address: number }[] = [];
  let unmatched = 0;
  let duplicates = 0;
  let inconsistent = 0;
  const add = (size: number) => sizes.push(size) - 1;
  for (let i = 0; i < t.length; i++) {
    const a = t.addr[i];
    const prior = at.get(a);
    if (t.action[i] === Action.alloc) {
      if (prior !== undefined && prior !== FREED) duplicates++;
      blockOf[i] = add(t.size[i]);
      at.set(a, blockOf[i]);
    } else if (t.action[i] === Action.free_requested) {
      if (prior === undefined) {
        blockOf[i] = add(t.size[i]);
        initial.push({ id: blockOf[i], address: a });
        at.set(a, blockOf[i]);
      } else if (prior !== FREED) blockOf[i] = prior;
    } else if (t.action[i] === Action.free_completed) {
      if (prior === FREED) unmatched++;
      else if (prior === undefined) {
        blockOf[i] = add(t.size[i]);
        initial.push({ id: blockOf[i], address: a });
        at.set(a, FREED);
      } else {
        blockOf[i] = prior;
        at.set(a, FREED);
      }
    }
  }
  for (const s of snapshot.segments) {
    for (const b of s.blocks) {
      if (b.state === 'inactive') continue;
      const prior = at.get(b.address);
      if (prior === FREED) inconsistent++;
      if (prior !== undefined) continue;
      const id = add(b.requestedSize);
      initial.push({ id, address: b.address });
      at.set(b.address, id);
    }
  }
  initial.sort((x, y) => x.address - y.address);
  return { blockOf, sizes, initial, counts: [unmatched, duplicates, inconsistent] };
}
