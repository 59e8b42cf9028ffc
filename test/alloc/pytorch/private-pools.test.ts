/**
 * CUDA graph / MemPool private pools in both PyTorch models (Note [Private
 * pools] in src/alloc/pytorch/private-pool.ts, rules P1-P11): a request
 * naming a pool is served from that pool's own small and large BlockPools,
 * its blocks never serve another pool, its cached memory goes back to the
 * driver only once the pool is freeable, and its OOM path releases no
 * cached blocks.
 */
import { describe, expect, it } from 'vitest';
import { AllocatorOutOfMemoryError } from '../../../src/alloc/allocator.js';
import { thrown } from '../../support/thrown.js';
import { checkAgainstShadow, checkTeardown, type LiveBlock, writeBlock } from './check.js';
import { type Harness, harness, type Kind, MiB, smallDevice } from './helpers.js';

const events = (h: Harness) => h.events.map((e) => [e.action, e.size / MiB]);
const segments = (h: Harness) =>
  h.alloc.snapshot().map((s) => [s.pool, s.segmentType, s.totalSize / MiB, s.blocks.length]);

for (const kind of ['native', 'expandable'] as Kind[]) {
  describe(`${kind}: private pools`, () => {
    it('P2, P5: a private block freed serves its own pool again, never the default pool, and the reverse', () => {
      const h = harness(kind, {}, smallDevice(512 * MiB));
      const graph = h.alloc.malloc(40 * MiB, 7, 1);
      h.alloc.free(graph);
      const eager = h.alloc.malloc(40 * MiB, 7); // the default pool: memory of its own
      expect(eager).not.toBe(graph);
      expect(h.alloc.malloc(40 * MiB, 7, 1)).toBe(graph); // the pool's own cached block
      h.alloc.free(eager);
      const other = h.alloc.malloc(40 * MiB, 7, 2); // another private pool: not the default's cache
      expect(other).not.toBe(eager);
      expect(h.alloc.stats.reservedBytes).toBe((kind === 'native' ? 120 : 3 * 40) * MiB);
      expect(
        segments(h)
          .map((s) => s[0])
          .sort(),
      ).toEqual([0, 1, 2]);
    });

    it('P2: small requests of a private pool take a small segment of its own', () => {
      const h = harness(kind, {}, smallDevice(512 * MiB));
      h.alloc.free(h.alloc.malloc(4096, 0));
      const p = h.alloc.malloc(4096, 0, 1);
      expect(events(h)).toEqual(
        kind === 'native'
          ? [
              ['segment_alloc', 2],
              ['segment_alloc', 2],
            ]
          : [
              ['segment_map', 2],
              ['segment_map', 2],
            ],
      );
      expect(h.alloc.snapshot().find((s) => s.pool === 1)?.blocks[0].address).toBe(p);
      expect(
        segments(h)
          .map((s) => `${s[0]} ${s[1]}`)
          .sort(),
      ).toEqual(['0 small', '1 small']);
    });

    it('P7: empty_cache gives back the default pool, and a private pool only once no graph uses it', () => {
      const h = harness(kind, {}, smallDevice(512 * MiB));
      h.alloc.free(h.alloc.malloc(40 * MiB, 0));
      h.alloc.free(h.alloc.malloc(40 * MiB, 0, 1));
      h.alloc.emptyCache();
      expect(h.alloc.stats.reservedBytes).toBe(40 * MiB); // the private pool's 40 stay
      expect(segments(h).map((s) => s[0])).toEqual([1]);
      h.alloc.releasePool(1);
      h.alloc.emptyCache();
      expect(h.alloc.stats.reservedBytes).toBe(0);
      expect(h.alloc.snapshot()).toEqual([]);
      // The pool was erased (cudaMalloc_count 0): naming it again makes a new one.
      h.alloc.malloc(40 * MiB, 0, 1);
      expect(h.alloc.stats.reservedBytes).toBe(40 * MiB);
    });

    it('P3: a pool shared by two graphs is freeable only when both are gone', () => {
      const h = harness(kind, {}, smallDevice(512 * MiB));
      h.alloc.free(h.alloc.malloc(40 * MiB, 0, 3)); // the first capture made the pool (use count 1)
      h.alloc.retainPool(3); // a second graph shares it
      h.alloc.releasePool(3);
      h.alloc.emptyCache();
      expect(h.alloc.stats.reservedBytes).toBe(40 * MiB);
      h.alloc.releasePool(3);
      h.alloc.emptyCache();
      expect(h.alloc.stats.reservedBytes).toBe(0);
      expect(() => h.alloc.releasePool(3)).toThrow(RangeError);
    });

    it('P3, P7: a freeable pool still holding a live block stays; a capture naming it again fails as PyTorch asserts', () => {
      const h = harness(kind, {}, smallDevice(512 * MiB));
      h.alloc.malloc(40 * MiB, 0, 1); // an output the program still holds
      h.alloc.releasePool(1);
      h.alloc.emptyCache();
      expect(h.alloc.stats.reservedBytes).toBe(40 * MiB);
      expect(() => h.alloc.malloc(4 * MiB, 0, 1)).toThrow(/no longer used by any graph/);
    });

    it('P8: a request under a capture releases no cached blocks when it does not fit the limit', () => {
      const h = harness(kind, {}, smallDevice(512 * MiB), { memoryLimit: 60 * MiB });
      h.alloc.free(h.alloc.malloc(40 * MiB, 0)); // 40 cached in the default pool
      expect(() => h.alloc.malloc(40 * MiB, 0, 1)).toThrow(AllocatorOutOfMemoryError);
      expect([h.alloc.stats.reservedBytes, h.alloc.stats.allocRetries, h.alloc.stats.ooms]).toEqual([
        40 * MiB,
        0,
        1,
      ]);
      // A default-pool request (on stream 1, where nothing is cached) frees the cache and retries.
      h.alloc.malloc(40 * MiB, 1);
      expect([h.alloc.stats.reservedBytes, h.alloc.stats.allocRetries]).toEqual([40 * MiB, 1]);
    });

    it('P10: the limit counts private memory, and the OOM reports private cached bytes as free', () => {
      const h = harness(kind, {}, smallDevice(512 * MiB), { memoryLimit: 60 * MiB });
      h.alloc.free(h.alloc.malloc(40 * MiB, 0, 1));
      const oom = thrown(() => h.alloc.malloc(40 * MiB, 0), AllocatorOutOfMemoryError);
      expect([oom.reservedBytes, oom.freeBytes, oom.freePieces]).toEqual([40 * MiB, 40 * MiB, 1]);
      expect(h.alloc.stats.allocRetries).toBe(1); // outside a capture: the release ran, and freed nothing private
    });

    it('keeps the shadow model with requests spread over three pools', () => {
      const h = harness(kind, {}, smallDevice(1024 * MiB));
      const live = new Map<number, LiveBlock>();
      let seed = 5;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed / 0x7fffffff;
      };
      for (let step = 0; step < 400; step++) {
        if (live.size > 0 && rand() < 0.45) {
          const keys = [...live.keys()];
          const a = keys[Math.floor(rand() * keys.length)];
          h.alloc.free(a);
          live.delete(a);
        } else {
          const size =
            rand() < 0.5 ? 1 + Math.floor(rand() * 900_000) : 2 * MiB + Math.floor(rand() * 30 * MiB);
          const stream = rand() < 0.8 ? 0 : 9;
          const pool = Math.floor(rand() * 3);
          const a = h.alloc.malloc(size, stream, pool);
          const b = { size, stream, tag: step };
          writeBlock(h, a, b);
          live.set(a, b);
        }
        if (step % 100 === 99) h.alloc.emptyCache();
      }
      checkAgainstShadow(h, live);
      // Once no graph uses them, the private pools go back too.
      h.alloc.releasePool(1);
      h.alloc.releasePool(2);
      checkTeardown(h, live.keys());
    });
  });
}

describe('native: private pools', () => {
  it('P9: garbage collection frees only the default large pool', () => {
    const h = harness('native', { garbageCollectionThreshold: 0.5 }, smallDevice(512 * MiB), {
      memoryLimit: 100 * MiB,
    });
    h.alloc.free(h.alloc.malloc(30 * MiB, 0, 1));
    h.alloc.free(h.alloc.malloc(30 * MiB, 0));
    h.alloc.malloc(32 * MiB, 0); // no cached block fits; 60 held > 50: GC, before the new segment
    expect(events(h)).toEqual([
      ['segment_alloc', 30],
      ['segment_alloc', 30],
      ['segment_free', 30],
      ['segment_alloc', 32],
    ]);
    expect(
      segments(h)
        .map((s) => [s[0], s[2]])
        .sort(),
    ).toEqual([
      [0, 32],
      [1, 30],
    ]);
  });

  it('P7: a freeable pool gives back its small segments, then its large ones, after the default pool', () => {
    const h = harness('native', {}, smallDevice(512 * MiB));
    h.alloc.free(h.alloc.malloc(40 * MiB, 0, 1));
    h.alloc.free(h.alloc.malloc(4096, 0, 1));
    h.alloc.free(h.alloc.malloc(24 * MiB, 0));
    h.alloc.releasePool(1);
    h.events.length = 0;
    h.alloc.emptyCache();
    expect(events(h)).toEqual([
      ['segment_free', 24],
      ['segment_free', 2],
      ['segment_free', 40],
    ]);
  });
});

describe('expandable: private pools', () => {
  it('P11: a private pool maps pages in a reserved range of its own, unmapped only once the pool is freeable', () => {
    const h = harness('expandable', {}, smallDevice(512 * MiB));
    const eager = h.alloc.malloc(30 * MiB, 0);
    const graph = h.alloc.malloc(30 * MiB, 0, 1);
    const [a, b] = h.alloc.snapshot();
    expect([a.pool, b.pool]).toEqual(eager < graph ? [0, 1] : [1, 0]);
    // Two ranges, each about 1.125 times the device: far apart.
    expect(Math.abs(graph - eager)).toBeGreaterThanOrEqual(512 * MiB);
    h.alloc.free(graph);
    h.alloc.free(eager);
    h.alloc.emptyCache();
    expect(h.alloc.snapshot().map((s) => [s.pool, s.totalSize / MiB])).toEqual([[1, 40]]);
    h.alloc.releasePool(1);
    h.alloc.emptyCache();
    expect(h.alloc.snapshot()).toEqual([]);
    expect(h.alloc.stats.reservedBytes).toBe(0);
  });

  it("P4: giving back more ranges than it counted fails PyTorch's cudaMalloc_count assertion", () => {
    const h = harness('expandable', {}, smallDevice(512 * MiB));
    h.alloc.free(h.alloc.malloc(60 * MiB, 0, 1)); // one alloc_block: 3 pages, count 1
    const x = h.alloc.malloc(20 * MiB, 0, 1); // [0, 20)
    h.alloc.malloc(20 * MiB, 0, 1); // [20, 40), kept alive
    h.alloc.free(x); // free [0, 20) and [40, 60): two ranges to unmap
    h.alloc.releasePool(1);
    expect(() => h.alloc.emptyCache()).toThrow(/cudaMalloc_count > 0/);
  });
});
