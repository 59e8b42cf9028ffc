/**
 * Note [Page books by range] (src/alloc/vmmkit/arena.ts): the allocator's
 * bookkeeping costs steps per chunk and per run, never per page, so a device
 * of 4 KiB granularity (the MI300X's) costs no more than its driver calls and
 * the trace's events say. Counted, not timed: the store's bookSteps.
 */
import { describe, expect, it } from 'vitest';
import { VmmkitAllocator } from '../../../src/alloc/vmmkit/index.js';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { Runtime } from '../../../src/core/runtime.js';
import { ALLOCATOR_REGISTRY } from '../../../src/replay/engine/allocators.js';

import { readSnapshotFile } from '../../../src/replay/read/load.js';
import { DEVICE_SPECS } from '../../../src/util/device-specs.js';
import { replay } from '../../support/replay.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const TiB = 1024 * GiB;

const vmmkit = ALLOCATOR_REGISTRY.filter((a) => a.name === 'vmmkit');

/** Replay a committed trace through vmmkit on `device`: its allocator calls, driver calls and book steps. */
function replayed(file: string, device: 'MI300X' | 'H200') {
  const snapshot = readSnapshotFile(file);
  let calls = 0;
  let last: VmmkitAllocator | undefined;
  const r = replay(snapshot, {
    allocators: vmmkit,
    device,
    keepEvents: false,
    onStep: (s) => {
      calls++;
      last = s.allocator as VmmkitAllocator;
    },
  });
  const run = r.allocators[0];
  expect(run.error).toBeUndefined();
  const driverCalls = Object.values(run.driverCalls).reduce((a, b) => a + b, 0);
  return { calls, driverCalls, counts: last!.chunkCounts, peak: run.peakReservedBytes };
}

describe('vmmkit allocator on small-granularity devices (Note [Page books by range])', () => {
  it.each([
    'traces/h200/transformer_train-native.pickle.gz',
    'traces/h200/phases_streams-expandable.pickle.gz',
  ])('replaying %s on the MI300X (4 KiB pages) takes steps bounded by its calls, not its pages', (file) => {
    const mi = replayed(file, 'MI300X');
    const pages = DEVICE_SPECS.MI300X.totalMemory / DEVICE_SPECS.MI300X.minimumGranularity;
    // Each allocator call looks up a few runs and the chunks under its block, each driver call a chunk and
    // its runs: 7.28 and 6.87 steps per call on these traces (2.40 and 2.24 on the H200, whose small blocks
    // lie on fewer chunks). A loop over a block's pages would pass 16: a block is hundreds of 4 KiB pages.
    expect(mi.counts.bookSteps).toBeGreaterThan(mi.calls);
    expect(mi.counts.bookSteps).toBeLessThanOrEqual(16 * (mi.calls + mi.driverCalls));
    // An arena spans the device's memory: anything per page of it would be far past that bound.
    expect(16 * (mi.calls + mi.driverCalls)).toBeLessThan(pages / 10);
    // The same trace on the H200 (2 MiB pages) makes as many allocator calls.
    expect(replayed(file, 'H200').calls).toBe(mi.calls);
  });

  it('serves and frees on an 8 TiB device of 4 KiB pages (2^31 pages an arena, each arena as wide as the device)', () => {
    const device = {
      name: 'wide-4KiB',
      totalMemory: 8 * TiB,
      minimumGranularity: 4 * KiB,
      recommendedGranularity: 2 * MiB,
    };
    const rt = new Runtime(createMachine({ devices: [device] }).spawn());
    const alloc = new VmmkitAllocator({ runtime: rt, device: 0 });
    const sizes = [GiB, 512, 3 * MiB + 5, 700 * KiB, 64 * MiB];
    const addresses = sizes.map((s) => alloc.malloc(s, 0));
    expect(new Set(addresses).size).toBe(sizes.length);
    // The blocks' pages are mapped: a large block of 1 GiB takes 512 chunks of 512 pages (maxChunkPages).
    const held = alloc.stats.reservedBytes;
    expect(held).toBeGreaterThanOrEqual(GiB + 64 * MiB + 3 * MiB + 700 * KiB + 512);
    for (const a of addresses) alloc.free(a);
    // Cache hits: the same sizes again make no driver call.
    const created = alloc.chunkCounts.created;
    const again = sizes.map((s) => alloc.malloc(s, 0));
    expect(alloc.chunkCounts.created).toBe(created);
    expect(alloc.stats.reservedBytes).toBe(held);
    for (const a of again) alloc.free(a);
    // Steps: per chunk touched (each malloc and free walks the chunks under its block), never per page.
    expect(alloc.chunkCounts.bookSteps).toBeLessThanOrEqual(8 * created + 8 * 4 * sizes.length);
    const layout = alloc.layout();
    expect(layout.arenas.reduce((n, a) => n + a.chunks.length, 0)).toBe(alloc.chunkCounts.held);
    alloc.emptyCache();
    expect(alloc.stats.reservedBytes).toBe(0);
    alloc.dispose();
  });
});
