/**
 * Snapshots that start mid-run (src/replay/engine/start-state.ts): the recorded
 * allocator's state at the first event, rewound from the final `segments`
 * and the trace (Note [Rewinding a snapshot]), and replay restoring it.
 *
 * The goal, on the real traces: each complete recording in traces/h200,
 * cut as a late start or a wrapped ring buffer would cut it (the first K
 * events gone, the final segments kept), replayed through the model of the
 * allocator that recorded it, reaches exactly the recorded allocator's own
 * reserved peak over the window (the start's segment bytes plus the running
 * sum of the window's segment events); where the rebuilt start is exact,
 * every segment event and every alloc's offset agree too.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ALLOCATORS } from '../../src/replay/engine/allocators.js';
import { compareWithTrace } from '../../src/replay/engine/fidelity.js';
import { BlockState } from '../../src/replay/engine/replay.js';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import {
  Action,
  type DeviceTrace,
  type MemorySnapshot,
  type SnapshotSegment,
} from '../../src/replay/read/snapshot.js';
import { replay } from '../support/replay.js';
import { type Event, readFixture, traceOf } from './helpers.js';

const MiB = 1024 * 1024;
const S = 0x7f00_0000_0000;
const E = 0x0003_0200_0000;

function snapshot(
  events: readonly Event[],
  segments: SnapshotSegment[],
  conf?: Record<string, unknown>,
): MemorySnapshot {
  const base = {
    traces: [traceOf(0, events)],
    segments,
    allocatorSettings: conf as MemorySnapshot['allocatorSettings'],
  };
  return base as unknown as MemorySnapshot;
}

function segment(
  address: number,
  blocks: [size: number, state: 'a' | 'i', requested?: number][],
  extra: Partial<SnapshotSegment> = {},
): SnapshotSegment {
  let at = address;
  const bs = blocks.map(([size, state, requested]) => {
    const b = {
      address: at,
      size,
      requestedSize: requested ?? (state === 'a' ? size : 0),
      state: state === 'a' ? ('active_allocated' as const) : ('inactive' as const),
    };
    at += size;
    return b;
  });
  return {
    device: 0,
    address,
    totalSize: at - address,
    stream: 0,
    segmentType: at - address === 2 * MiB ? 'small' : 'large',
    isExpandable: false,
    blocks: bs,
    ...extra,
  } as SnapshotSegment;
}

const blocksOf = (s: {
  address: number;
  blocks: readonly { address: number; size: number; blockId: number }[];
}) => s.blocks.map((b) => [(b.address - s.address) / MiB, b.size / MiB, b.blockId >= 0]);

describe('rebuilding the start (native)', () => {
  it('segments at the end, less those the trace made, plus those it freed; live blocks where they were', () => {
    const s = snapshot(
      [
        ['free_completed', S, 6 * MiB], // live at the start, in a segment the trace keeps
        ['segment_alloc', S + 200 * MiB, 30 * MiB], // made by the trace: not at the start
        ['alloc', S + 200 * MiB, 30 * MiB],
        ['free_completed', S + 100 * MiB, 10 * MiB], // live at the start, its segment freed next
        ['segment_free', S + 100 * MiB, 40 * MiB],
      ],
      [
        segment(S, [[20 * MiB, 'i']]),
        segment(S + 64 * MiB, [
          [4096, 'a'],
          [2 * MiB - 4096, 'i'],
        ]), // untouched: live all along
        segment(S + 200 * MiB, [[30 * MiB, 'a']]),
      ],
    );
    const plan = planReplay(s);
    const st = plan.devices[0].startState;
    expect(plan.startedMidRun).toBe(true);
    expect(st.segments.map((g) => [g.address - S, g.size / MiB, g.pool, g.expandable])).toEqual([
      [0, 20, 'large', false],
      [64 * MiB, 2, 'small', false],
      [100 * MiB, 40, 'large', false],
    ]);
    expect(st.segments.map(blocksOf)).toEqual([
      [
        [0, 6, true],
        [6, 14, false],
      ],
      [
        [0, 4096 / MiB, true],
        [4096 / MiB, 2 - 4096 / MiB, false],
      ],
      [
        [0, 10, true],
        [10, 30, false],
      ],
    ]);
    expect(st.reservedBytes).toBe(62 * MiB);
    // Both freed blocks are known by their request, with more than 1 MiB free after each (N7, below).
    expect([st.exact, st.uncertainBytes]).toEqual([false, 2 * MiB]);
  });

  it('N7: a large block known by its request owns a gap of 1 MiB or less after it; a larger one is free, unless the trace shows otherwise', () => {
    const req = 10 * MiB;
    const events: Event[] = [
      ['free_completed', S, req], // followed by 0.5 MiB, then a live block: its own slack
      ['free_completed', S + 32 * MiB, req], // followed by 5 MiB: free, or up to 1 MiB of slack then free
      ['free_completed', S + 64 * MiB, req], // likewise; an alloc shows 0.25 MiB of slack
    ];
    const segs = [
      segment(S, [
        [10.5 * MiB, 'i'],
        [9.5 * MiB, 'a'],
      ]),
      segment(S + 32 * MiB, [[15 * MiB, 'i']]),
      segment(S + 64 * MiB, [[15 * MiB, 'i']]),
    ];
    const unknown = planReplay(snapshot(events, segs)).devices[0].startState;
    expect(unknown.segments.map(blocksOf)).toEqual([
      [
        [0, 10.5, true],
        [10.5, 9.5, true],
      ],
      [
        [0, 10, true],
        [10, 5, false],
      ],
      [
        [0, 10, true],
        [10, 5, false],
      ],
    ]);
    expect(unknown.exact).toBe(false);
    // Each of the two may own up to 1 MiB (leaving more than 1 MiB free after it).
    expect(unknown.uncertainBytes).toBe(2 * MiB);
    expect(unknown.reasons[0]).toMatch(/unsplit slack .* 2 time\(s\), 2097152 bytes/);
    // The first alloc in the gap while the block lives takes the low end of the free block there (N8).
    const shown: Event[] = [
      ['alloc', S + 64 * MiB + 10.25 * MiB, 2 * MiB],
      ['alloc', S + 32 * MiB + 10 * MiB, 2 * MiB],
      ...events,
    ];
    const known = planReplay(snapshot(shown, segs)).devices[0].startState;
    expect(known.segments.map(blocksOf).slice(1)).toEqual([
      [
        [0, 10, true],
        [10, 5, false],
      ],
      [
        [0, 10.25, true],
        [10.25, 4.75, false],
      ],
    ]);
    expect([known.exact, known.uncertainBytes]).toEqual([true, 0]);
  });

  it('a complete trace starts from nothing; blocks outside every segment are counted, left to allocate', () => {
    const complete = planReplay(
      snapshot(
        [
          ['segment_alloc', S, 2 * MiB],
          ['alloc', S, 4096],
          ['segment_alloc', S + 2 * MiB, 20 * MiB],
        ],
        [
          segment(S, [
            [4096, 'a'],
            [2 * MiB - 4096, 'i'],
          ]),
          segment(S + 2 * MiB, [[20 * MiB, 'i']]),
        ],
      ),
    );
    // A snapshot whose segments leave out one the trace made disagrees with itself: said so.
    expect(planReplay(readFixture('hand.pickle')).devices[0].startState.reasons).toEqual([
      'a segment_alloc of a segment neither at the end nor freed later: 1 time(s), 20971520 bytes',
    ]);
    expect(complete.devices[0].startState).toMatchObject({ segments: [], exact: true, uncertainBytes: 0 });
    expect(complete.startedMidRun).toBe(false);
    const orphan = planReplay(snapshot([['free_completed', S, 4096]], [])).devices[0].startState;
    expect([orphan.segments, orphan.exact, orphan.uncertainBytes]).toEqual([[], false, 4096]);
  });
});

describe('rebuilding the start: garbage collection', () => {
  it('N10: the ages of blocks free at the start are unknown; counted only where there are such blocks', () => {
    const gc = { garbage_collection_threshold: 0.6 };
    const cached = planReplay(snapshot([['alloc', S + 64 * MiB, 4096]], [segment(S, [[20 * MiB, 'i']])], gc));
    expect(cached.devices[0].startState).toMatchObject({ exact: false, uncertainBytes: 20 * MiB });
    const complete = planReplay(
      snapshot([['segment_alloc', S, 20 * MiB]], [segment(S, [[20 * MiB, 'i']])], gc),
    );
    expect(complete.devices[0].startState).toMatchObject({ exact: true, uncertainBytes: 0 });
  });
});

describe('rebuilding the start (expandable)', () => {
  const es = (address: number, blocks: [number, 'a' | 'i'][], extra: Partial<SnapshotSegment> = {}) =>
    segment(address, blocks, { isExpandable: true, ...extra });

  it('mapped pages at the end, less the trace’s maps, plus its unmaps, grouped by reserved range', () => {
    const s = snapshot(
      [
        ['free_completed', E + 20 * MiB, 20 * MiB], // live at the start, in pages the trace unmaps later
        ['segment_unmap', E + 20 * MiB, 40 * MiB], // touches the range kept to the end: the same pool
        ['segment_map', E + 60 * MiB, 20 * MiB], // mapped by the trace: not at the start
        ['alloc', E + 60 * MiB, 20 * MiB],
      ],
      [es(E, [[20 * MiB, 'a']]), es(E + 60 * MiB, [[20 * MiB, 'a']])],
    );
    const st = planReplay(s).devices[0].startState;
    expect(
      st.segments.map((g) => [
        g.address,
        g.pool,
        g.expandable,
        g.mapped.map((r) => [r.address - E, r.size / MiB]),
      ]),
    ).toEqual([[E, 'large', true, [[0, 60]]]]);
    expect(st.segments.map(blocksOf)).toEqual([
      [
        [0, 20, true],
        [20, 20, true],
        [40, 20, false],
      ],
    ]);
    expect(st.segments[0].size).toBe(20 * MiB * Math.ceil((150_109_880_320 * 1.125) / (20 * MiB)));
    expect([st.exact, st.reservedBytes]).toEqual([true, 60 * MiB]);
  });

  it('an unmapped range’s pool is inferred where the snapshot shows it, and counted where it cannot be', () => {
    const far = E + 1000 * 1024 * MiB; // nowhere near the range known at the end
    const events = (pool: 'small' | 'large'): Event[] => [
      ['segment_unmap', far, pool === 'small' ? 6 * MiB : 40 * MiB], // 6 MiB: not whole large pages
    ];
    const small = planReplay(snapshot(events('small'), [es(E, [[40 * MiB, 'i']])])).devices[0].startState;
    expect(small.segments.map((g) => [g.address, g.pool])).toEqual([
      [E, 'large'],
      [far, 'small'],
    ]);
    expect(small.exact).toBe(true);
    const unknown = planReplay(snapshot(events('large'), [es(E, [[40 * MiB, 'i']])])).devices[0].startState;
    expect(unknown.segments.map((g) => [g.address, g.pool])).toEqual([
      [E, 'large'],
      [far, 'large'],
    ]);
    expect([unknown.exact, unknown.uncertainBytes]).toEqual([false, 40 * MiB]);
    expect(unknown.reasons[0]).toMatch(/memory_viz/);
    // An alloc the trace serves there before the unmap tells.
    const told = planReplay(
      snapshot(
        [['alloc', far, 4096], ['free_completed', far, 4096], ...events('large')],
        [es(E, [[40 * MiB, 'i']])],
      ),
    ).devices[0].startState;
    expect(told.segments.map((g) => g.pool)).toEqual(['large', 'small']);
    expect(told.exact).toBe(true);
  });
});

describe('replay from the rebuilt start', () => {
  it('the PyTorch models restore it; one without restore gets the live blocks allocated, as before', () => {
    const s = readFixture('midrun.pickle.gz');
    const r = replay(s, { allocators: DEFAULT_ALLOCATORS });
    const byName = Object.fromEntries(r.allocators.map((a) => [a.name, a]));
    const native = byName['pytorch-native'].devices[0];
    expect(native.startRestored).toBe(true);
    // The 2 MiB small segment the recording held, at its address; no new one for the window's alloc.
    expect(native.segmentEvents.map((e) => [e.action, e.size, e.eventIndex])).toEqual([
      ['segment_alloc', 2 * MiB, -1],
    ]);
    expect(native.blockAddress[r.plan.devices[0].initialBlocks[1]]).toBe(S + 8192);
    expect(native.peakReservedBytes).toBe(2 * MiB);
    // The trace's segment is native: the expandable model starts from the live blocks instead.
    expect(byName['pytorch-expandable'].devices[0].startRestored).toBe(false);
    expect(byName.vmmkit.devices[0].startRestored).toBe(false);
    for (const a of r.allocators) {
      expect(a.error).toBeUndefined();
      expect(a.devices[0].blockState[r.plan.devices[0].initialBlocks[1]]).toBe(BlockState.live);
    }
  });
});

const dir = fileURLToPath(new URL('../../traces/h200/', import.meta.url));
const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.pickle.gz')) : [];

/** The trace without its first k events, the final segments kept: a late start, or a ring buffer that wrapped. */
function cut(s: MemorySnapshot, k: number): MemorySnapshot {
  const t = s.traces[0];
  const trace: Record<string, unknown> = { ...t, length: t.length - k };
  // Every per-event array loses its first k entries.
  for (const [key, v] of Object.entries(t))
    if (ArrayBuffer.isView(v) && (v as Uint8Array).length === t.length)
      trace[key] = (v as Uint8Array).subarray(k);
  return { ...s, traces: [trace as unknown as DeviceTrace] };
}

/** Cut points: through the run, between a free_requested and its free_completed, around each empty_cache. */
function cutPoints(s: MemorySnapshot): number[] {
  const { action, length: n } = s.traces[0];
  const frees = (a: number) => a === Action.segment_free || a === Action.segment_unmap;
  const ks = new Set<number>();
  for (const f of [0.1, 0.3, 0.5, 0.7, 0.9]) ks.add(Math.floor(n * f));
  for (let i = Math.floor(n / 2); i < n; i++) {
    if (action[i - 1] === Action.free_requested && action[i] !== Action.free_completed) {
      ks.add(i);
      break;
    }
  }
  for (let i = 1; i < n; i++) {
    if (!frees(action[i]) || frees(action[i - 1])) continue;
    let j = i;
    while (j < n && frees(action[j])) j++;
    ks.add(i); // just before an empty_cache
    ks.add(i + 1); // inside it
    ks.add(j); // right after it
  }
  return [...ks].sort((a, b) => a - b);
}

describe.skipIf(files.length === 0)('cut recordings replay to the recorded allocator’s own peak', () => {
  for (const file of files) {
    it(file, () => {
      const s = readSnapshotFile(dir + file);
      const model = file.includes('expandable') ? 'pytorch-expandable' : 'pytorch-native';
      const factory = DEFAULT_ALLOCATORS.filter((a) => a.name === model);
      const t = s.traces[0];
      // The recorded allocator's reserved bytes before each event, and the peak from each event on.
      const before = new Float64Array(t.length + 1);
      for (let i = 0; i < t.length; i++) {
        const a = t.action[i];
        const sign =
          a === Action.segment_alloc || a === Action.segment_map
            ? 1
            : a === Action.segment_free || a === Action.segment_unmap
              ? -1
              : 0;
        before[i + 1] = before[i] + sign * t.size[i];
      }
      const peakFrom = new Float64Array(t.length + 1);
      peakFrom[t.length] = before[t.length];
      for (let i = t.length - 1; i >= 0; i--) peakFrom[i] = Math.max(before[i], peakFrom[i + 1]);
      for (const k of cutPoints(s)) {
        const c = cut(s, k);
        const plan = planReplay(c);
        const start = plan.devices[0].startState;
        const run = replay(c, { allocators: factory, plan }).allocators[0];
        const at = `${file} from event ${k}`;
        expect(run.error, at).toBeUndefined();
        expect(plan.startedMidRun, at).toBe(true);
        expect(run.devices[0].startRestored, at).toBe(true);
        expect(start.reservedBytes, at).toBe(before[k]);
        expect(run.peakReservedBytes, at).toBe(peakFrom[k]);
        expect(start.exact, at).toBe(start.uncertainBytes === 0 && start.reasons.length === 0);
        if (start.exact)
          expect(
            compareWithTrace(plan.devices[0], run.devices[0]).firstDifference?.message,
            at,
          ).toBeUndefined();
      }
    });
  }
});

/** Real mid-run recordings (traces/h200-whatif): a history started after warm-up, and a ring buffer that wrapped. */
const whatif = fileURLToPath(new URL('../../traces/h200-whatif/', import.meta.url));
const midRuns: { name: string; file: string; maxMemoryReserved: number }[] = existsSync(
  `${whatif}results.json`,
)
  ? (
      JSON.parse(readFileSync(`${whatif}results.json`, 'utf8')) as {
        runs: { name: string; kind: string; file: string; maxMemoryReserved: number }[];
      }
    ).runs.filter((r) => (r.kind === 'ring' || r.kind === 'midrun') && existsSync(whatif + r.file))
  : [];

describe.skipIf(midRuns.length === 0)(
  'real recordings that start mid-run replay to PyTorch’s own peak',
  () => {
    for (const run of midRuns) {
      it(run.name, () => {
        const s = readSnapshotFile(whatif + run.file);
        const model = run.name.includes('expandable') ? 'pytorch-expandable' : 'pytorch-native';
        const plan = planReplay(s);
        const r = replay(s, { allocators: DEFAULT_ALLOCATORS.filter((a) => a.name === model), plan })
          .allocators[0];
        expect(plan.startedMidRun).toBe(true);
        expect(r.devices[0].startRestored).toBe(true);
        // max_memory_reserved() over the window (reset when history started, or the window's own peak).
        expect(r.peakReservedBytes).toBe(run.maxMemoryReserved);
        const f = compareWithTrace(plan.devices[0], r.devices[0]);
        expect(f.firstDifference?.message).toBeUndefined();
        expect(f.allocsSkipped).toBe(0);
      });
    }
  },
);
