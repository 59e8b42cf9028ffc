import { describe, expect, it } from 'vitest';
import { AllocatorOutOfMemoryError } from '../../../src/alloc/allocator.js';
import { thrown } from '../../support/thrown.js';
import { harness, MiB, smallDevice } from './helpers.js';

/** The segment events as [action, size] pairs. */
const sizes = (h: ReturnType<typeof harness>) => h.events.map((e) => [e.action, e.size / MiB]);

describe('PytorchNativeAllocator', () => {
  it('N3/N4: small requests share 2 MiB segments, mid-size ones take 20 MiB, large ones a 2 MiB multiple', () => {
    const h = harness('native', {}, smallDevice(256 * MiB));
    const a = h.alloc.malloc(1000, 0);
    const b = h.alloc.malloc(MiB, 0); // still small (N3: <= 1 MiB), fits in a's segment
    h.alloc.malloc(10 * MiB, 0); // exactly kMinLargeAlloc: its own size
    h.alloc.malloc(10 * MiB + 1, 0); // rounds to 10 MiB + 512, segment 12 MiB (2 MiB - 512 left over)
    h.alloc.malloc(3 * MiB, 0); // large, more than is left over: a 20 MiB segment
    expect(sizes(h)).toEqual([
      ['segment_alloc', 2],
      ['segment_alloc', 10],
      ['segment_alloc', 12],
      ['segment_alloc', 20],
    ]);
    expect(b).toBe(a + 1024); // N8: the first block keeps the low end; 1000 rounds to 1024 (N2)
    expect(h.alloc.name).toBe('pytorch-native');
  });

  it('N2/N8: allocated counts the rounded block, requested the caller’s size', () => {
    const h = harness('native', { roundupPower2Divisions: new Array(16).fill(4) });
    h.alloc.malloc(1_300_000, 0);
    expect(h.alloc.stats.allocatedBytes).toBe(1_310_720);
    expect(h.alloc.stats.requestedBytes).toBe(1_300_000);
    expect(h.alloc.stats.reservedBytes).toBe(20 * MiB);
  });

  it('N5: best fit takes the smallest free block that fits, lowest address among equals, never another stream’s', () => {
    const h = harness('native', {}, smallDevice(256 * MiB));
    const a = h.alloc.malloc(12 * MiB, 0);
    const b = h.alloc.malloc(14 * MiB, 0);
    const c = h.alloc.malloc(12 * MiB, 0);
    h.alloc.free(b);
    h.alloc.free(c);
    h.alloc.free(a);
    const before = h.events.length;
    // 12 MiB blocks a and c: the lower one (where the driver put each segment: Note [Driver VA placement]).
    const [low, high] = a < c ? [a, c] : [c, a];
    expect(h.alloc.malloc(11 * MiB, 0)).toBe(low);
    expect(h.alloc.malloc(13 * MiB, 0)).toBe(b);
    expect(h.events.length).toBe(before);
    const d = h.alloc.malloc(12 * MiB, 1); // the other is free, but on stream 0
    expect(d).not.toBe(high);
    expect(h.events.slice(before).map((e) => [e.action, e.size / MiB, e.stream])).toEqual([
      ['segment_alloc', 12, 1],
    ]);
  });

  it('N5: with max_split_size, a small request never takes an oversize block; a large one takes it within 20 MiB', () => {
    const h = harness('native', { maxSplitSize: 40 * MiB }, smallDevice(512 * MiB));
    const big = h.alloc.malloc(64 * MiB, 0);
    h.alloc.free(big);
    const small = h.alloc.malloc(30 * MiB, 0); // 30 < mss, block 64 >= mss: not used
    expect(small).not.toBe(big);
    expect(h.alloc.malloc(42 * MiB, 0)).not.toBe(big); // 64 >= 42 + 20: not used
    expect(h.alloc.malloc(50 * MiB, 0)).toBe(big); // 64 < 50 + 20: used, whole (N7: 50 >= mss)
    expect(h.alloc.stats.allocatedBytes).toBe(30 * MiB + 42 * MiB + 64 * MiB);
  });

  it('N7: the large pool splits only when more than 1 MiB would remain; the small pool at 512 bytes', () => {
    const h = harness('native', {}, smallDevice(256 * MiB));
    h.alloc.malloc(19 * MiB, 0); // segment 20 MiB, 1 MiB left: not > 1 MiB, so the block is all 20
    expect(h.alloc.stats.allocatedBytes).toBe(20 * MiB);
    const x = h.alloc.malloc(9 * MiB, 0); // segment 20 MiB, 11 left: split
    const y = h.alloc.malloc(9 * MiB, 0); // the remainder serves it
    expect(y).toBe(x + 9 * MiB);
    const s = h.alloc.malloc(MiB, 0);
    const t = h.alloc.malloc(MiB - 512, 0); // 512 bytes are left after t
    const u = h.alloc.malloc(512, 0);
    expect([t - s, u - t]).toEqual([MiB, MiB - 512]);
    expect(sizes(h)).toEqual([
      ['segment_alloc', 20],
      ['segment_alloc', 20],
      ['segment_alloc', 2],
    ]);
  });

  it('N9: free merges with free neighbours in the same segment, never across segments', () => {
    const h = harness('native');
    const a = h.alloc.malloc(600 * 1024, 0);
    const b = h.alloc.malloc(600 * 1024, 0);
    const c = h.alloc.malloc(600 * 1024, 0);
    const other = h.alloc.malloc(900 * 1024, 0); // does not fit: a second 2 MiB segment
    h.alloc.free(a);
    h.alloc.free(c);
    h.alloc.emptyCache(); // b still splits the first segment: nothing whole is free
    expect(h.events.filter((e) => e.action === 'segment_free')).toEqual([]);
    h.alloc.free(b); // merges a, b, c and the tail into one 2 MiB block
    h.alloc.free(other);
    h.alloc.emptyCache();
    expect(sizes(h)).toEqual([
      ['segment_alloc', 2],
      ['segment_alloc', 2],
      ['segment_free', 2],
      ['segment_free', 2],
    ]);
    expect(h.rt.stats().reservations).toBe(0);
    expect(h.alloc.stats.reservedBytes).toBe(0);
  });

  it('N6 (h): when the device is full, cached segments are freed (large pool first) and the allocation retried', () => {
    const h = harness('native'); // 64 MiB
    const s = h.alloc.malloc(1000, 0);
    const m = h.alloc.malloc(5 * MiB, 0);
    h.alloc.free(s);
    h.alloc.free(m);
    h.alloc.malloc(48 * MiB, 0); // 64 - 22 free: cudaMalloc fails, then succeeds after the release
    expect(sizes(h)).toEqual([
      ['segment_alloc', 2],
      ['segment_alloc', 20],
      ['segment_free', 20],
      ['segment_free', 2],
      ['segment_alloc', 48],
    ]);
    expect(h.alloc.stats.allocRetries).toBe(1);
    expect(h.alloc.stats.reservedBytes).toBe(48 * MiB);
    expect(h.alloc.stats.peakReservedBytes).toBe(48 * MiB);
  });

  it('N6 (g): with max_split_size, the smallest oversize block that covers the request goes first', () => {
    const h = harness('native', { maxSplitSize: 20 * MiB }, smallDevice(128 * MiB));
    const a = h.alloc.malloc(24 * MiB, 0);
    const b = h.alloc.malloc(50 * MiB, 0);
    h.alloc.malloc(40 * MiB, 0); // live; 14 MiB of the device left
    h.alloc.free(a);
    h.alloc.free(b);
    h.alloc.malloc(26 * MiB, 0); // 50 >= 26 + 20: no cached fit; cudaMalloc fails; 50 is released
    expect(sizes(h).slice(3)).toEqual([
      ['segment_free', 50],
      ['segment_alloc', 26],
    ]);
    expect(h.alloc.stats.reservedBytes).toBe((24 + 40 + 26) * MiB);
    expect(h.alloc.stats.allocRetries).toBe(0);
  });

  it('N6 (g): ...else the largest oversize blocks until they add up to the request', () => {
    const h = harness('native', { maxSplitSize: 20 * MiB }, smallDevice(128 * MiB));
    const a = h.alloc.malloc(24 * MiB, 0);
    const b = h.alloc.malloc(30 * MiB, 0);
    h.alloc.malloc(60 * MiB, 0);
    h.alloc.free(a);
    h.alloc.free(b);
    h.alloc.malloc(40 * MiB, 0);
    expect(sizes(h).slice(3)).toEqual([
      ['segment_free', 30],
      ['segment_free', 24],
      ['segment_alloc', 40],
    ]);
  });

  it('N6 (j): out of memory after every retry throws AllocatorOutOfMemoryError, cache released as PyTorch does', () => {
    const h = harness('native');
    const live = h.alloc.malloc(30 * MiB, 0);
    const cached = h.alloc.malloc(12 * MiB, 0);
    h.alloc.free(cached);
    const error = thrown(() => h.alloc.malloc(40 * MiB, 0), AllocatorOutOfMemoryError);
    expect(error.requestedBytes).toBe(40 * MiB);
    expect(h.alloc.stats.ooms).toBe(1);
    expect(h.alloc.stats.allocRetries).toBe(1);
    // The cached 12 MiB segment went back on the way (release_cached_blocks); the live block is untouched.
    expect(h.alloc.stats.reservedBytes).toBe(30 * MiB);
    expect(h.alloc.snapshot().map((s) => [s.address, s.totalSize / MiB])).toEqual([[live, 30]]);
    expect(h.machine.devices[0].pool.used).toBe(30 * MiB);
  });

  it('N6 (f): a memory fraction caps what is held, without asking the driver', () => {
    const h = harness('native', { memoryFraction: 0.5 });
    h.alloc.malloc(20 * MiB, 0);
    h.faults.arm(0);
    expect(() => h.alloc.malloc(20 * MiB, 0)).toThrow(AllocatorOutOfMemoryError); // 40 > 32 allowed
    expect(h.faults.log).toEqual([]);
  });

  it('N10: garbage collection frees unsplit large blocks at least as old as the mean, only under a fraction', () => {
    const run = (garbageCollectionThreshold: number) => {
      const h = harness(
        'native',
        { memoryFraction: 0.25, garbageCollectionThreshold },
        smallDevice(256 * MiB),
      );
      const a = h.alloc.malloc(12 * MiB, 0);
      const b = h.alloc.malloc(10 * MiB, 0);
      const e = h.alloc.malloc(20 * MiB, 0); // 42 MiB held; 64 allowed, threshold 32
      h.alloc.free(a);
      h.alloc.free(e);
      for (let i = 0; i < 3; i++) h.alloc.free(h.alloc.malloc(20 * MiB, 0)); // hits on e age a
      expect(h.alloc.malloc(20 * MiB, 0)).toBe(e);
      h.alloc.free(e);
      h.alloc.free(b);
      h.alloc.malloc(30 * MiB, 0); // a miss: ages a 5, b 1, e 1; mean 7/3
      return sizes(h).slice(3);
    };
    expect(run(0.5)).toEqual([
      ['segment_free', 12],
      ['segment_alloc', 30],
    ]);
    // Without GC, the cap (42 + 30 > 64) sends it down the OOM retry path: everything cached goes.
    expect(run(0)).toEqual([
      ['segment_free', 10],
      ['segment_free', 12],
      ['segment_free', 20],
      ['segment_alloc', 30],
    ]);
  });

  it('N11: reserved follows the segment events; emptyCache gives back every whole free segment', () => {
    const h = harness('native', {}, smallDevice(256 * MiB));
    const blocks = [h.alloc.malloc(100, 0), h.alloc.malloc(3 * MiB, 0), h.alloc.malloc(30 * MiB, 1)];
    const held = () => h.events.reduce((n, e) => n + (e.action === 'segment_alloc' ? e.size : -e.size), 0);
    expect(h.alloc.stats.reservedBytes).toBe(held());
    h.alloc.free(blocks[1]);
    h.alloc.emptyCache();
    expect(h.alloc.stats.reservedBytes).toBe(held());
    expect(h.alloc.stats.reservedBytes).toBe(32 * MiB);
    for (const b of [blocks[0], blocks[2]]) h.alloc.free(b);
    h.alloc.emptyCache();
    expect(h.alloc.stats.reservedBytes).toBe(0);
    expect(h.alloc.stats.peakReservedBytes).toBe(52 * MiB);
  });

  it('bad input gets a typed error and changes nothing', () => {
    const h = harness('native');
    const a = h.alloc.malloc(100, 0);
    const before = { ...h.alloc.stats };
    for (const size of [0, -1, 1.5, Number.NaN, 2 ** 60])
      expect(() => h.alloc.malloc(size, 0)).toThrow(RangeError);
    expect(() => h.alloc.malloc(100, -1)).toThrow(RangeError);
    expect(() => h.alloc.free(a + 512)).toThrow(RangeError);
    h.alloc.free(a);
    expect(() => h.alloc.free(a)).toThrow(RangeError);
    expect({
      ...h.alloc.stats,
      allocatedBytes: before.allocatedBytes,
      requestedBytes: before.requestedBytes,
      liveBlocks: 1,
    }).toEqual(before);
  });

  it('dispose gives everything back, live blocks included, and never throws', () => {
    const h = harness('native');
    h.alloc.malloc(100, 0);
    h.alloc.malloc(30 * MiB, 3);
    h.alloc.dispose();
    h.alloc.dispose();
    expect(h.rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    expect(h.rt.memoryInfo(0).free).toBe(h.rt.memoryInfo(0).total);
    expect(() => h.alloc.malloc(1, 0)).toThrow();
  });
});
