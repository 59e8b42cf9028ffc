/**
 * Both PyTorch models under a memory limit (AllocatorContext.memoryLimit,
 * the cap set_per_process_memory_fraction sets): the cap is met where
 * PyTorch meets it (Note [Memory limit] in caching-allocator.ts): alloc_size
 * against the cap in alloc_block, before the driver, then the OOM path's
 * releases and one retry; garbage collection relative to the cap.
 */
import { describe, expect, it } from 'vitest';
import { AllocatorOutOfMemoryError } from '../../../src/alloc/allocator.js';
import { VmmError } from '../../../src/core/errors.js';
import { thrown } from '../../support/thrown.js';
import { checkAfterFault, givesEverythingBack, type LiveBlock, writeBlock } from './check.js';
import { type Harness, harness, type Kind, MiB, smallDevice } from './helpers.js';

const sizes = (h: Harness) => h.events.map((e) => [e.action, e.size / MiB, e.stream]);

const oomOf = (f: () => unknown) => thrown(f, AllocatorOutOfMemoryError, 'no out-of-memory error');

describe('PytorchNativeAllocator under a memory limit', () => {
  it('N6 (f): a segment that would pass the limit fails before the driver is asked; up to the limit is fine', () => {
    const h = harness('native', {}, smallDevice(256 * MiB), { memoryLimit: 40 * MiB });
    h.alloc.malloc(20 * MiB, 0);
    h.alloc.malloc(20 * MiB, 0); // 40 of 40
    expect(h.alloc.stats.reservedBytes).toBe(40 * MiB);
    h.faults.arm(0);
    const e = oomOf(() => h.alloc.malloc(12 * MiB, 0)); // 52 > 40
    expect(h.faults.log).toEqual([]); // not the driver's refusal: no call at all
    expect([e.requestedBytes, e.reservedBytes, e.limitBytes, e.freeBytes, e.freePieces]).toEqual([
      12 * MiB,
      40 * MiB,
      40 * MiB,
      0,
      0,
    ]);
    expect(e.message).toContain(`${40 * MiB} allowed`);
    expect([h.alloc.stats.ooms, h.alloc.stats.allocRetries]).toEqual([1, 1]);
  });

  it('N6 (h): the retry gives the cached segments back and succeeds when that is enough', () => {
    const h = harness('native', {}, smallDevice(256 * MiB), { memoryLimit: 40 * MiB });
    h.alloc.malloc(20 * MiB, 0);
    h.alloc.free(h.alloc.malloc(12 * MiB, 0)); // 32 held, 12 of them cached
    h.alloc.malloc(16 * MiB, 0); // 32 + 16 > 40: free the 12, then 20 + 16 fits
    expect(sizes(h)).toEqual([
      ['segment_alloc', 20, 0],
      ['segment_alloc', 12, 0],
      ['segment_free', 12, 0],
      ['segment_alloc', 16, 0],
    ]);
    expect([h.alloc.stats.allocRetries, h.alloc.stats.ooms, h.alloc.stats.reservedBytes]).toEqual([
      1,
      0,
      36 * MiB,
    ]);
  });

  it('N6 (g): with max_split_size, just enough oversize blocks go first, and no retry is counted', () => {
    const h = harness('native', { maxSplitSize: 20 * MiB }, smallDevice(256 * MiB), {
      memoryLimit: 80 * MiB,
    });
    const a = h.alloc.malloc(24 * MiB, 0);
    const b = h.alloc.malloc(30 * MiB, 0);
    h.alloc.malloc(20 * MiB, 0); // 74 held
    h.alloc.free(a);
    h.alloc.free(b);
    h.alloc.malloc(40 * MiB, 0); // 74 + 40 > 80: release 30 and 24 (54 >= 40), then 20 + 40 fits
    expect(sizes(h).slice(3)).toEqual([
      ['segment_free', 30, 0],
      ['segment_free', 24, 0],
      ['segment_alloc', 40, 0],
    ]);
    expect(h.alloc.stats.allocRetries).toBe(0);
  });

  it('N10: garbage collection acts relative to the limit, and only under one', () => {
    // The scenario of native.test.ts's N10 test: 42 MiB held, a 30 MiB miss; ages a 5, b 1, e 1.
    const run = (limit: number | undefined, garbageCollectionThreshold: number) => {
      const h = harness(
        'native',
        { garbageCollectionThreshold },
        smallDevice(256 * MiB),
        limit === undefined ? {} : { memoryLimit: limit },
      );
      const a = h.alloc.malloc(12 * MiB, 0);
      const b = h.alloc.malloc(10 * MiB, 0);
      const e = h.alloc.malloc(20 * MiB, 0);
      h.alloc.free(a);
      h.alloc.free(e);
      for (let i = 0; i < 3; i++) h.alloc.free(h.alloc.malloc(20 * MiB, 0));
      h.alloc.free(h.alloc.malloc(20 * MiB, 0));
      h.alloc.free(b);
      h.alloc.malloc(30 * MiB, 0);
      return sizes(h)
        .slice(3)
        .map(([action, size]) => [action, size]);
    };
    // Limit 64 MiB, threshold 0.5: 42 > 32, so the oldest (a, 12 MiB) goes; then 30 + 30 fits the limit.
    expect(run(64 * MiB, 0.5)).toEqual([
      ['segment_free', 12],
      ['segment_alloc', 30],
    ]);
    // Limit 128 MiB: the threshold is 64, 42 is under it: no collection, and 72 fits.
    expect(run(128 * MiB, 0.5)).toEqual([['segment_alloc', 30]]);
    // No limit (and no fraction): the threshold does nothing.
    expect(run(undefined, 0.5)).toEqual([['segment_alloc', 30]]);
  });

  it('the error describes the allocator at the failure: free bytes held, in how many pieces, the largest', () => {
    const h = harness('native', {}, smallDevice(256 * MiB), { memoryLimit: 40 * MiB });
    h.alloc.malloc(12 * MiB, 0);
    h.alloc.malloc(3 * MiB, 0); // a 20 MiB segment: 17 MiB free after it
    h.alloc.malloc(1000, 0); // a 2 MiB small segment: 2 MiB - 1 KiB free
    const before = { snap: h.alloc.snapshot(), rt: h.rt.stats() };
    const e = oomOf(() => h.alloc.malloc(18 * MiB, 0)); // fits no free block; 34 + 18 > 40
    expect([e.reservedBytes, e.freeBytes, e.freePieces, e.largestFreeBytes]).toEqual([
      34 * MiB,
      17 * MiB + 2 * MiB - 1024,
      2,
      17 * MiB,
    ]);
    // Nothing was cached whole, so the retry's release changed nothing: the state is as before.
    expect({ snap: h.alloc.snapshot(), rt: h.rt.stats() }).toEqual(before);
  });

  it('refuses a memory limit that is not a byte count', () => {
    for (const memoryLimit of [-1, 1.5, Number.NaN])
      expect(() => harness('native', {}, smallDevice(), { memoryLimit })).toThrow(RangeError);
  });
});

describe('PytorchExpandableAllocator under a memory limit', () => {
  it('the limit counts alloc_size, not the pages mapped (as PyTorch does)', () => {
    // 30 MiB asks alloc_size 30 MiB, within 35, and maps two 20 MiB pages: 40 held, past the limit.
    const over = harness('expandable', {}, smallDevice(128 * MiB), { memoryLimit: 35 * MiB });
    over.alloc.malloc(30 * MiB, 0);
    expect(over.alloc.stats.reservedBytes).toBe(40 * MiB);
    // 40 held (10 MiB free at the frontier); 25 MiB asks alloc_size 26: 66 > 60, though one more page
    // (60 held) would have served it. The free 10 MiB is no whole page, so the retry unmaps nothing.
    const h = harness('expandable', {}, smallDevice(128 * MiB), { memoryLimit: 60 * MiB });
    h.alloc.malloc(30 * MiB, 0);
    const before = { snap: h.alloc.snapshot(), rt: h.rt.stats() };
    h.faults.arm(0);
    const e = oomOf(() => h.alloc.malloc(25 * MiB, 0));
    expect(h.faults.log).toEqual([]);
    expect([
      e.requestedBytes,
      e.reservedBytes,
      e.freeBytes,
      e.freePieces,
      e.largestFreeBytes,
      e.limitBytes,
    ]).toEqual([26 * MiB, 40 * MiB, 10 * MiB, 1, 10 * MiB, 60 * MiB]);
    expect({ snap: h.alloc.snapshot(), rt: h.rt.stats() }).toEqual(before);
  });

  it('E7: the retry unmaps free pages (another stream’s here), then maps what the request needs', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB), { memoryLimit: 60 * MiB });
    h.alloc.free(h.alloc.malloc(40 * MiB, 0)); // 40 MiB mapped, all free
    h.alloc.malloc(30 * MiB, 1); // 40 + 30 > 60: unmap stream 0's pages, then 0 + 30 fits
    expect(sizes(h)).toEqual([
      ['segment_map', 40, 0],
      ['segment_unmap', 40, 0],
      ['segment_map', 40, 1],
    ]);
    expect([h.alloc.stats.allocRetries, h.alloc.stats.reservedBytes]).toEqual([1, 40 * MiB]);
  });

  it('N10: garbage collection skips expandable blocks: past the threshold, the OOM path unmaps them instead', () => {
    const h = harness('expandable', { garbageCollectionThreshold: 0.5 }, smallDevice(256 * MiB), {
      memoryLimit: 80 * MiB,
    });
    h.alloc.free(h.alloc.malloc(60 * MiB, 0)); // 60 > 40 (the threshold): collection finds nothing it may free
    h.alloc.malloc(30 * MiB, 1); // 60 + 30 > 80
    expect(sizes(h)).toEqual([
      ['segment_map', 60, 0],
      ['segment_unmap', 60, 0],
      ['segment_map', 40, 1],
    ]);
  });
});

/**
 * A malloc under a limit that must take the retry (release the cache, then
 * ask for the segment), with the k-th driver step failing (not out of
 * memory: PyTorch raises at once). What was released stays released, as in
 * PyTorch; the allocator stays consistent with its live blocks, and nothing
 * leaks.
 */
describe.each(['native', 'expandable'] as const)(
  '%s under a limit: a failing driver step during the retry',
  (kind: Kind) => {
    const make = () => {
      const h = harness(kind, {}, smallDevice(128 * MiB), { memoryLimit: 60 * MiB });
      const live = new Map<number, LiveBlock>();
      const keep = h.alloc.malloc(3 * MiB, 0);
      live.set(keep, { size: 3 * MiB, stream: 0, tag: 1 });
      writeBlock(h, keep, live.get(keep)!);
      h.alloc.free(h.alloc.malloc(36 * MiB, 0)); // cached: 36 (native) or 40 (expandable) MiB
      return { h, live };
    };
    it('leaves a consistent allocator; nothing leaks', () => {
      const dry = make();
      dry.h.faults.arm(0);
      dry.h.alloc.malloc(30 * MiB, 1);
      expect(dry.h.alloc.stats.allocRetries).toBe(1);
      const steps = [...dry.h.faults.log];
      expect(steps.length).toBeGreaterThan(3);
      for (let k = 1; k <= steps.length; k++) {
        const { h, live } = make();
        h.faults.kind = 'invalid-value';
        h.faults.arm(k);
        let address: number | undefined;
        try {
          address = h.alloc.malloc(30 * MiB, 1);
        } catch (e) {
          expect(e, `${steps[k - 1]} (step ${k})`).toBeInstanceOf(VmmError);
        }
        h.faults.arm(0);
        if (address !== undefined) {
          live.set(address, { size: 30 * MiB, stream: 1, tag: 2 });
          writeBlock(h, address, live.get(address)!);
        }
        checkAfterFault(h, live);
        // A range whose free failed stays reserved until dispose (core's Note [Points of no return]).
        givesEverythingBack(h, live.keys(), `${steps[k - 1]} (step ${k})`);
      }
    });
  },
);
