/**
 * Which pool each block of a trace was in (src/replay/engine/private-pools.ts,
 * Note [Pools from addresses]), and replay routing it there: 2.11's trace
 * entries carry no pool, so it comes from the final segments'
 * segment_pool_id, traced back through the segment frees and unmaps.
 */
import { describe, expect, it } from 'vitest';
import { selectAllocators } from '../../src/replay/engine/allocators.js';

import { planReplay } from '../../src/replay/engine/trace-plan.js';
import type { MemorySnapshot, SnapshotSegment } from '../../src/replay/read/snapshot.js';
import { replay } from '../support/replay.js';
import { type Event, snapshotOf } from './helpers.js';

const MiB = 1024 * 1024;
const A = 0x7f00_0000_0000; // a default segment
const P = 0x7f00_1000_0000; // a graph's
const B = 0x7f00_2000_0000; // given back, then made again for a MemPool

function segment(
  address: number,
  totalSize: number,
  poolId: readonly [number, number] | undefined,
  stream = 0,
  live: readonly [number, number][] = [],
): SnapshotSegment {
  const blocks = live.map(([at, size]) => ({
    address: at,
    size,
    requestedSize: size,
    state: 'active_allocated' as const,
    stack: -1,
  }));
  return {
    device: 0,
    address,
    totalSize,
    stream,
    segmentType: 'large',
    isExpandable: false,
    poolId,
    stack: -1,
    blocks:
      blocks.length > 0
        ? blocks
        : [{ address, size: totalSize, requestedSize: 0, state: 'inactive', stack: -1 }],
  };
}

function withSegments(
  events: readonly Event[],
  segments: SnapshotSegment[],
  settings?: object,
): MemorySnapshot {
  return {
    ...snapshotOf(events),
    segments,
    allocatorSettings: settings as MemorySnapshot['allocatorSettings'],
  };
}

/** The recorded run: eager work, a capture on stream 7 into pool (1, 0), a segment given back and made again in pool (0, 1). */
const events: Event[] = [
  ['segment_alloc', A, 20 * MiB],
  ['alloc', A, 20 * MiB], // 1: default
  ['free_requested', A, 20 * MiB],
  ['free_completed', A, 20 * MiB],
  ['segment_alloc', P, 20 * MiB, 7],
  ['alloc', P, 20 * MiB, 7], // 5: the capture's, not the cached default block
  ['free_requested', P, 20 * MiB, 7],
  ['free_completed', P, 20 * MiB, 7],
  ['alloc', P, 20 * MiB, 7], // 8: the pool's own block again
  ['segment_alloc', B, 20 * MiB],
  ['alloc', B, 20 * MiB], // 10: in memory given back below: pool unknown
  ['free_requested', B, 20 * MiB],
  ['free_completed', B, 20 * MiB],
  ['segment_free', B, 20 * MiB],
  ['segment_alloc', B, 20 * MiB, 7],
  ['alloc', B, 20 * MiB, 7], // 15: pool (0, 1)
];
const finals = [
  segment(A, 20 * MiB, [0, 0]),
  segment(P, 20 * MiB, [1, 0], 7, [[P, 20 * MiB]]),
  segment(B, 20 * MiB, [0, 1], 7, [[B, 20 * MiB]]),
];

describe('private pools from the recorded segments', () => {
  it('tags each block by the final segment holding its address, unless that memory was given back after it', () => {
    const plan = planReplay(withSegments(events, finals));
    const d = plan.devices[0];
    const p = d.privatePools;
    expect(p.pools).toEqual([
      [0, 1],
      [1, 0],
    ]);
    const poolOfEvent = (i: number) => p.blockPool[d.blockOf[i]];
    expect([1, 5, 8, 10, 15].map(poolOfEvent)).toEqual([0, 2, 2, 0, 1]);
    expect([p.privateBlocks, p.unknownPoolBlocks]).toEqual([3, 1]);
    expect([plan.privatePoolBlocks, plan.unknownPoolBlocks]).toEqual([3, 1]);
  });

  it('blocks live before the first event are tagged too; a snapshot without segment_pool_id tells nothing', () => {
    const late: Event[] = [
      ['free_requested', P, 20 * MiB, 7],
      ['free_completed', P, 20 * MiB, 7],
    ];
    const d = planReplay(withSegments(late, [segment(P, 20 * MiB, [1, 0], 7)])).devices[0];
    expect([d.privatePools.blockPool[d.initialBlocks[0]], d.privatePools.privateBlocks]).toEqual([1, 1]);
    const old = planReplay(
      withSegments(
        events,
        finals.map((s) => ({ ...s, poolId: undefined })),
      ),
    ).devices[0];
    expect(old.privatePools.pools).toEqual([]);
    expect([old.privatePools.privateBlocks, old.privatePools.unknownPoolBlocks]).toEqual([0, 5]);
  });

  it('expandable segments: a mapped range that stays to the end gives its pool to the blocks in it', () => {
    const es: Event[] = [
      ['segment_map', P, 40 * MiB, 7],
      ['alloc', P, 20 * MiB, 7],
      ['alloc', P + 20 * MiB, 20 * MiB, 7],
      ['free_requested', P + 20 * MiB, 20 * MiB, 7],
      ['free_completed', P + 20 * MiB, 20 * MiB, 7],
      ['segment_unmap', P + 20 * MiB, 20 * MiB, 7],
    ];
    const d = planReplay(
      withSegments(es, [{ ...segment(P, 20 * MiB, [1, 0], 7, [[P, 20 * MiB]]), isExpandable: true }]),
    ).devices[0];
    expect([1, 2].map((i) => d.privatePools.blockPool[d.blockOf[i]])).toEqual([1, 0]);
    expect(d.privatePools.unknownPoolBlocks).toBe(1);
  });

  it('replay routes the tagged blocks to their pools: the capture does not reuse the cached default block', () => {
    const trace: Event[] = [
      ['segment_alloc', A, 20 * MiB],
      ['alloc', A, 20 * MiB],
      ['free_requested', A, 20 * MiB],
      ['free_completed', A, 20 * MiB],
      ['segment_alloc', P, 20 * MiB], // captured on the default stream, into pool (1, 0)
      ['alloc', P, 20 * MiB],
      ['free_requested', P, 20 * MiB],
      ['free_completed', P, 20 * MiB],
      ['alloc', P, 20 * MiB],
    ];
    const s = withSegments(trace, [
      segment(A, 20 * MiB, [0, 0]),
      segment(P, 20 * MiB, [1, 0], 0, [[P, 20 * MiB]]),
    ]);
    const run = replay(s, { allocators: selectAllocators(['pytorch', 'pytorch-expandable']) }).allocators;
    for (const r of run) expect(r.error).toBeUndefined();
    // As recorded: a segment for the capture at event 5, and none at event 8 (the pool's own block again).
    expect(run[0].devices[0].segmentEvents.map((e) => [e.action, e.size / MiB, e.eventIndex])).toEqual([
      ['segment_alloc', 20, 1],
      ['segment_alloc', 20, 5],
    ]);
    expect(run[0].peakReservedBytes).toBe(40 * MiB);
    // Under expandable segments the pool maps pages of a reserved range of its own.
    expect(run[1].devices[0].segmentEvents.map((e) => [e.action, e.size / MiB, e.eventIndex])).toEqual([
      ['segment_map', 20, 1],
      ['segment_map', 20, 5],
    ]);
  });

  it('under a limit, segment frees just before a private request are empty_cache, not an OOM retry (P8)', () => {
    const trace: Event[] = [
      ['segment_alloc', A, 20 * MiB],
      ['alloc', A, 20 * MiB],
      ['free_requested', A, 20 * MiB],
      ['free_completed', A, 20 * MiB],
      ['segment_free', A, 20 * MiB], // torch.cuda.graph's empty_cache()
      ['segment_alloc', P, 20 * MiB, 7],
      ['alloc', P, 20 * MiB, 7],
    ];
    const limit = 21 * MiB; // 20 of 21 held when the frees start: "nearly full"
    const graph = withSegments(trace, [segment(P, 20 * MiB, [1, 0], 7, [[P, 20 * MiB]])]);
    expect([...planReplay(graph, { memoryLimit: limit }).devices[0].emptyCacheBefore]).toEqual([4]);
    // The same frees before a default-pool request may be that request's OOM retry: left alone.
    const eager = withSegments(trace, [segment(P, 20 * MiB, [0, 0], 7, [[P, 20 * MiB]])]);
    expect([...planReplay(eager, { memoryLimit: limit }).devices[0].emptyCacheBefore]).toEqual([]);
    // And so when max_split_size was set (release_available_cached_blocks frees the pool's own blocks).
    const mss = withSegments(trace, graph.segments.slice(), { max_split_size: 64 * MiB });
    expect([...planReplay(mss, { memoryLimit: limit }).devices[0].emptyCacheBefore]).toEqual([]);
  });
});
