/**
 * restore(): both PyTorch models take a recorded allocator's state at a
 * trace's first event (Note [Restoring a start state] in caching-allocator.ts),
 * and the blocks behave afterwards as PyTorch's own would: pool membership
 * and best fit, split state, merging with free neighbours, release.
 */
import { describe, expect, it } from 'vitest';
import {
  AllocatorOutOfMemoryError,
  type StartBlock,
  type StartSegment,
  type StartState,
} from '../../../src/alloc/allocator.js';
import { VmmError } from '../../../src/core/errors.js';
import { type Harness, harness, type Kind, MiB, smallDevice } from './helpers.js';

const S = 0x7f00_0000_0000;
const free = (address: number, size: number) => ({ address, size, requestedSize: 0, blockId: -1 });
const live = (address: number, size: number, requestedSize: number, blockId: number) => ({
  address,
  size,
  requestedSize,
  blockId,
});

/** A one-step segment on stream 0: mapped whole, as native segments are. */
const oneStep = (
  address: number,
  size: number,
  pool: 'small' | 'large',
  blocks: StartBlock[],
): StartSegment => ({
  address,
  size,
  stream: 0,
  pool,
  expandable: false,
  mapped: [{ address, size }],
  blocks,
});

/** Three one-step segments: a split 20 MiB one, a small one, a whole free 12 MiB one. */
const NATIVE: StartState = {
  device: 0,
  segments: [
    oneStep(S, 20 * MiB, 'large', [
      live(S, 6 * MiB, 6 * MiB - 100, 0),
      free(S + 6 * MiB, 8 * MiB),
      live(S + 14 * MiB, 6 * MiB, 6 * MiB, 1),
    ]),
    oneStep(S + 64 * MiB, 2 * MiB, 'small', [
      live(S + 64 * MiB, 512, 100, 2),
      free(S + 64 * MiB + 512, 2 * MiB - 512),
    ]),
    oneStep(S + 128 * MiB, 12 * MiB, 'large', [free(S + 128 * MiB, 12 * MiB)]),
  ],
};

/** One expandable range of the large pool, with 40 MiB mapped at its base and 20 MiB further up. */
const EXPANDABLE: StartState = {
  device: 0,
  segments: [
    {
      address: S,
      size: 300 * MiB,
      stream: 0,
      pool: 'large',
      expandable: true,
      mapped: [
        { address: S, size: 40 * MiB },
        { address: S + 60 * MiB, size: 20 * MiB },
      ],
      blocks: [live(S, 10 * MiB, 10 * MiB, 0), free(S + 10 * MiB, 30 * MiB), free(S + 60 * MiB, 20 * MiB)],
    },
  ],
};

const actions = (h: Harness) => h.events.map((e) => [e.action, e.size / MiB]);

describe('restore', () => {
  it('native: each segment one malloc at its recorded address, blocks as PyTorch’s, counters from them', () => {
    const h = harness('native', {}, smallDevice(256 * MiB));
    const ours = h.alloc.restore(NATIVE)!;
    expect([...ours]).toEqual([S, S + 14 * MiB, S + 64 * MiB]);
    const s = h.alloc.stats;
    expect([
      s.reservedBytes,
      s.peakReservedBytes,
      s.allocatedBytes,
      s.requestedBytes,
      s.liveBlocks,
      s.segments,
    ]).toEqual([34 * MiB, 34 * MiB, 12 * MiB + 512, 12 * MiB + 100 - 100, 3, 3]);
    expect(actions(h)).toEqual([
      ['segment_alloc', 20],
      ['segment_alloc', 2],
      ['segment_alloc', 12],
    ]);
    expect(
      h.alloc.snapshot().map((g) => [g.address, g.totalSize / MiB, g.segmentType, g.blocks.length]),
    ).toEqual([
      [S, 20, 'large', 3],
      [S + 64 * MiB, 2, 'small', 2],
      [S + 128 * MiB, 12, 'large', 1],
    ]);
    // Freeing a restored block merges it with its free neighbour (N9): one 14 MiB block, best fit for 13 MiB (N5).
    h.alloc.free(ours[0]);
    expect(h.alloc.malloc(13 * MiB, 0)).toBe(S);
    // The small pool's free block serves small requests, right after the live one (N8).
    expect(h.alloc.malloc(1000, 0)).toBe(S + 64 * MiB + 512);
    // The whole free segment is the only one empty_cache can give back (N10).
    h.alloc.emptyCache();
    expect(actions(h).slice(3)).toEqual([['segment_free', 12]]);
    expect(h.alloc.stats.reservedBytes).toBe(22 * MiB);
  });

  it('expandable: the range reserved, the pages mapped at their offsets, unmapped gaps as PyTorch keeps them', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    const ours = h.alloc.restore(EXPANDABLE)!;
    const base = ours[0];
    expect(h.alloc.stats.reservedBytes).toBe(60 * MiB);
    expect(actions(h)).toEqual([
      ['segment_map', 40],
      ['segment_map', 20],
    ]);
    expect(h.events[1].address - base).toBe(60 * MiB);
    // Best fit among the free mapped blocks: the 30 MiB one (the 20 MiB one is too small).
    expect(h.alloc.malloc(25 * MiB, 0)).toBe(base + 10 * MiB);
    // 5 MiB free is left before the unmapped gap: E4 maps the gap's 20 MiB, merging 5 + 20 + 20 free.
    expect(h.alloc.malloc(25 * MiB, 0)).toBe(base + 35 * MiB);
    expect(actions(h).slice(2)).toEqual([['segment_map', 20]]);
    expect(h.events[2].address - base).toBe(40 * MiB);
    expect(h.alloc.snapshot().map((g) => [g.address - base, g.totalSize / MiB])).toEqual([[0, 80]]);
    for (const b of h.alloc.snapshot()[0].blocks) if (b.state === 'active_allocated') h.alloc.free(b.address);
    h.alloc.emptyCache();
    expect(h.alloc.stats.reservedBytes).toBe(0);
    expect(h.rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  });

  it('another mode’s state is not restored (undefined, nothing done); only a fresh allocator restores', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    expect(h.alloc.restore(NATIVE)).toBeUndefined();
    expect(h.events).toEqual([]);
    const n = harness('native', {}, smallDevice(256 * MiB));
    expect(n.alloc.restore(EXPANDABLE)).toBeUndefined();
    n.alloc.malloc(100, 0);
    expect(() => n.alloc.restore(NATIVE)).toThrow(/fresh/);
  });

  it('refuses blocks that do not tile their segment as PyTorch’s would, before any driver call', () => {
    const h = harness('native', {}, smallDevice(256 * MiB));
    const seg = NATIVE.segments[0];
    const bad: StartState[] = [
      { device: 0, segments: [{ ...seg, blocks: seg.blocks.slice(1) }] }, // a hole at the start
      { device: 0, segments: [{ ...seg, blocks: [free(S, 10 * MiB), free(S + 10 * MiB, 10 * MiB)] }] }, // unmerged
      { device: 0, segments: [{ ...seg, blocks: [live(S, 20 * MiB, 0, 0)] }] }, // nothing requested
      { device: 0, segments: [{ ...seg, size: 21 * MiB }] }, // not whole pages
    ];
    h.faults.arm(0);
    for (const state of bad) expect(() => h.alloc.restore(state)).toThrow(RangeError);
    expect(h.faults.log).toEqual([]);
  });
});

/** A driver step of restore failing, at every step: nothing is left held, and a second try works. */
describe.each([
  ['native', NATIVE],
  ['expandable', EXPANDABLE],
] as const)('%s: a failing driver step during restore', (kind: Kind, state: StartState) => {
  it.each(['invalid-value', 'out-of-memory'] as const)('of kind %s', (fault) => {
    const dry = harness(kind, {}, smallDevice(256 * MiB));
    dry.faults.arm(0);
    dry.alloc.restore(state);
    const steps = [...dry.faults.log];
    expect(steps.length).toBeGreaterThan(3);
    for (let k = 1; k <= steps.length; k++) {
      const h = harness(kind, {}, smallDevice(256 * MiB));
      h.faults.kind = fault;
      h.faults.arm(k);
      let thrown: unknown;
      try {
        h.alloc.restore(state);
      } catch (e) {
        thrown = e;
      }
      const at = `${steps[k - 1]} (step ${k})`;
      // Out of memory where PyTorch's driver would say so (a segment or a page); anything else as it came.
      if (fault === 'out-of-memory' && (steps[k - 1] === 'create' || kind === 'native'))
        expect(thrown, at).toBeInstanceOf(AllocatorOutOfMemoryError);
      else expect(thrown, at).toBeInstanceOf(VmmError);
      expect(h.rt.stats(), at).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
      expect(h.machine.liveAllocations, at).toBe(0);
      expect([h.alloc.stats.reservedBytes, h.alloc.stats.liveBlocks, h.alloc.snapshot().length]).toEqual([
        0, 0, 0,
      ]);
      h.faults.arm(0);
      expect(h.alloc.restore(state)?.length).toBe(
        state.segments.flatMap((g) => g.blocks).filter((b) => b.blockId >= 0).length,
      );
    }
  });
});

/**
 * A model's own state, taken halfway through a run (its snapshot, the
 * blocks live then given ids), restored into a fresh model: from there on
 * the two do the same thing (the same segment events, the same layout up to
 * where new segments land, the same counters), request after request.
 */
describe.each(['native', 'expandable'] as const)(
  '%s: a restored state behaves as the original',
  (kind: Kind) => {
    it('request after request, to the end of a run', () => {
      let seed = 12345;
      const rand = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return Math.floor((seed / 2 ** 31) * n);
      };
      const SIZES = [
        100,
        3000,
        200 * 1024,
        900 * 1024,
        1.5 * MiB,
        3 * MiB,
        7 * MiB,
        12 * MiB,
        25 * MiB,
        41 * MiB,
      ];
      const ops = Array.from({ length: 600 }, () => ({
        r: rand(100),
        size: SIZES[rand(SIZES.length)],
        stream: rand(2),
        pick: rand(1000),
      }));
      const a = harness(kind, {}, smallDevice(8192 * MiB));
      const liveA: number[] = [];
      const step = (h: Harness, live: number[], op: (typeof ops)[number]) => {
        if (op.r < 60 || live.length === 0) live.push(h.alloc.malloc(op.size, op.stream));
        else if (op.r < 97) h.alloc.free(live.splice(op.pick % live.length, 1)[0]);
        else h.alloc.emptyCache();
      };
      for (const op of ops.slice(0, 300)) if (op.r < 97) step(a, liveA, op); // no emptyCache: ranges keep their base
      // The state now, as a start state: each live block gets its index in liveA as its id.
      const page = (pool: string) => (pool === 'small' ? 2 * MiB : 20 * MiB);
      const total = 8192 * MiB;
      const segments = a.alloc.snapshot().map((g) => ({
        address: g.address,
        size: g.totalSize,
        stream: g.stream,
        pool: g.segmentType,
        expandable: g.isExpandable,
        mapped: [{ address: g.address, size: g.totalSize }],
        blocks: g.blocks.map((b) =>
          b.state === 'active_allocated'
            ? live(b.address, b.size, b.requestedSize, liveA.indexOf(b.address))
            : free(b.address, b.size),
        ),
      }));
      // Expandable: one reserved range per (pool, stream), its mapped ranges from the first (its base) on.
      const state: StartState =
        kind === 'native'
          ? { device: 0, segments }
          : {
              device: 0,
              segments: [...groupBy(segments, (g) => `${g.pool}/${g.stream}`).values()].map((gs) => ({
                ...gs[0],
                size: page(gs[0].pool) * Math.ceil((total + total / 8) / page(gs[0].pool)),
                mapped: gs.map((g) => g.mapped[0]),
                blocks: gs.flatMap((g) => g.blocks),
              })),
            };
      const b = harness(kind, {}, smallDevice(8192 * MiB));
      const ours = b.alloc.restore(state)!;
      const liveB: number[] = new Array(liveA.length);
      let j = 0;
      for (const g of state.segments)
        for (const x of g.blocks) if (x.blockId >= 0) liveB[x.blockId] = ours[j++];
      const layout = (h: Harness) =>
        h.alloc
          .snapshot()
          .map((g) =>
            JSON.stringify([
              g.totalSize,
              g.stream,
              g.segmentType,
              g.blocks.map((x) => [x.size, x.requestedSize, x.state]),
            ]),
          )
          .sort();
      const counters = (h: Harness) => {
        const s = h.alloc.stats;
        return [s.reservedBytes, s.allocatedBytes, s.requestedBytes, s.liveBlocks];
      };
      expect(layout(b)).toEqual(layout(a));
      expect(counters(b)).toEqual(counters(a));
      const eventsA = a.events.length;
      const eventsB = b.events.length;
      for (const op of ops.slice(300)) {
        step(a, liveA, op);
        step(b, liveB, op);
        expect(counters(b)).toEqual(counters(a));
      }
      expect(layout(b)).toEqual(layout(a));
      const tail = (h: Harness, from: number) =>
        h.events.slice(from).map((e) => [e.action, e.size, e.stream]);
      expect(tail(b, eventsB)).toEqual(tail(a, eventsA));
      expect(tail(a, eventsA).length).toBeGreaterThan(5);
    });
  },
);

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of items) {
    const k = key(t);
    const list = out.get(k);
    if (list === undefined) out.set(k, [t]);
    else list.push(t);
  }
  return out;
}
