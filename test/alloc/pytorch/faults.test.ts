import { describe, expect, it } from 'vitest';
import { AllocatorOutOfMemoryError, AllocatorStateError } from '../../../src/alloc/errors.js';
import type { SimProcess } from '../../../src/backends/sim/process.js';
import { VmmError } from '../../../src/core/errors.js';
import { checkAfterFault, checkTeardown, givesEverythingBack, type LiveBlock, writeBlock } from './check.js';
import { type Harness, harness, type Kind, MiB, smallDevice } from './helpers.js';

/**
 * A malloc that needs new memory, with the k-th driver primitive failing,
 * for every k. Two kinds of failure:
 *  - not out-of-memory: PyTorch would raise at once (C10_CUDA_CHECK); the
 *    allocator and the runtime must be exactly as before, and work after;
 *  - out-of-memory: where PyTorch takes that as a failed cudaMalloc /
 *    cuMemCreate (N6, E5), it frees the cache (release_cached_blocks) and
 *    retries, so the result must equal emptyCache() followed by the same
 *    malloc on an unfaulted twin; where PyTorch raises instead (an
 *    expandable segment's cuMemAddressReserve, cuMemMap or cuMemSetAccess
 *    failing), as before.
 * Afterwards everything is freed and nothing may leak.
 */

/** Some live blocks and some cached memory on every path. */
function setup(kind: Kind): { h: Harness; live: number[] } {
  const h = harness(kind, {}, smallDevice(128 * MiB));
  const live = [h.alloc.malloc(1000, 0), h.alloc.malloc(30 * MiB, 1)];
  h.alloc.free(h.alloc.malloc(5 * MiB, 0));
  h.alloc.free(h.alloc.malloc(3000, 1));
  return { h, live };
}

function state(h: Harness): unknown {
  const s = h.alloc.stats;
  return {
    alloc: h.alloc.snapshot(),
    stats: [s.reservedBytes, s.allocatedBytes, s.requestedBytes, s.liveBlocks, s.segments],
    runtime: h.rt.stats(),
    reservations: [...h.rt.reservations()].map((r) => [r.base, r.size]),
    mappings: [...h.rt.mappings()].map((m) => [m.va, m.size, m.accessBits]),
    pageTable: (h.faults.inner as SimProcess).pageTable(0),
    used: h.machine.devices[0].pool.used,
    live: h.machine.liveAllocations,
  };
}

/** Requests that need new memory: more pages in a segment, and (stream 2) a new segment. */
const REQUESTS: [number, number][] = [
  [24 * MiB, 0],
  [45 * MiB, 2],
  [200 * 1024, 2],
];

describe.each(['native', 'expandable'] as const)('%s: a failing driver step during malloc', (kind) => {
  it.each(REQUESTS)('of %d bytes on stream %d', (size, stream) => {
    const dry = setup(kind);
    dry.h.faults.arm(0);
    dry.h.alloc.malloc(size, stream);
    const steps = [...dry.h.faults.log];
    // The request fits: no step belongs to an OOM retry.
    expect(dry.h.alloc.stats.allocRetries).toBe(0);
    expect(steps.length).toBeGreaterThan(0);
    for (let k = 1; k <= steps.length; k++) {
      // Not out of memory: raised, nothing changed.
      {
        const { h, live } = setup(kind);
        const before = state(h);
        h.faults.kind = 'invalid-value';
        h.faults.arm(k);
        expect(() => h.alloc.malloc(size, stream), `${steps[k - 1]} (step ${k})`).toThrow(VmmError);
        expect(state(h), `${steps[k - 1]} (step ${k})`).toEqual(before);
        h.faults.arm(0);
        live.push(h.alloc.malloc(size, stream));
        checkTeardown(h, live);
      }
      // Out of memory.
      {
        const { h, live } = setup(kind);
        const before = state(h);
        h.faults.kind = 'out-of-memory';
        h.faults.arm(k);
        const retried = kind === 'native' || steps[k - 1] === 'create';
        if (retried) {
          live.push(h.alloc.malloc(size, stream));
          const twin = setup(kind);
          twin.h.alloc.emptyCache();
          twin.live.push(twin.h.alloc.malloc(size, stream));
          expect(state(h), `${steps[k - 1]} (step ${k})`).toEqual(state(twin.h));
          expect(h.alloc.stats.allocRetries).toBe(1);
          checkTeardown(twin.h, twin.live);
        } else {
          expect(() => h.alloc.malloc(size, stream)).toThrow(VmmError);
          expect(state(h), `${steps[k - 1]} (step ${k})`).toEqual(before);
        }
        checkTeardown(h, live);
      }
    }
  });
});

/**
 * Giving memory back has points of no return (core's Note [Points of no
 * return]): a failure there is reported, not thrown, and what could not be
 * given back is held until dispose. Either way the allocator stays
 * consistent, a later emptyCache finishes the job, and nothing is left on
 * the machine once the runtime is disposed.
 */
describe.each(['native', 'expandable'] as const)('%s: a failing driver step during emptyCache', (kind) => {
  it('leaves a consistent allocator; a later emptyCache finishes the job; nothing leaks', () => {
    const make = () => {
      const h = harness(kind, {}, smallDevice(128 * MiB));
      const live = new Map<number, LiveBlock>();
      const keep = h.alloc.malloc(3 * MiB, 0);
      live.set(keep, { size: 3 * MiB, stream: 0, tag: 1 });
      writeBlock(h, keep, live.get(keep)!);
      for (const [size, stream] of [
        [30 * MiB, 0],
        [5 * MiB, 1],
        [100, 1],
        [45 * MiB, 2],
      ])
        h.alloc.free(h.alloc.malloc(size, stream));
      return { h, live, keep };
    };
    const dry = make();
    dry.h.faults.arm(0);
    dry.h.alloc.emptyCache();
    const steps = [...dry.h.faults.log];
    expect(steps.length).toBeGreaterThan(4);
    let thrown = 0;
    for (let k = 1; k <= steps.length; k++) {
      const { h, live, keep } = make();
      h.faults.kind = 'invalid-value';
      h.faults.arm(k);
      try {
        h.alloc.emptyCache();
      } catch (e) {
        expect(e, `${steps[k - 1]} (step ${k})`).toBeInstanceOf(VmmError);
        thrown++;
      }
      h.faults.arm(0);
      checkAfterFault(h, live);
      givesEverythingBack(h, [keep], `${steps[k - 1]} (step ${k})`);
    }
    expect(thrown).toBeGreaterThan(0);
  });
});

/**
 * Unmapping pages of an expandable segment (E7: emptyCache, the OOM path)
 * is one transaction up to its releases: every unmap first, a failed one
 * mapping the pages back with their access, so nothing changed; the
 * releases last, where a handle that will not go back is kept and retried
 * (core's Note [Points of no return]). A fault at each step of one range
 * of three pages and the segment's range after it.
 */
describe('expandable: a failing driver step while a range of pages is unmapped', () => {
  it('changes nothing before the first release, stands after it, and a later emptyCache finishes', () => {
    const make = () => {
      const h = harness('expandable', {}, smallDevice(128 * MiB));
      const live = new Map<number, LiveBlock>();
      const keep = h.alloc.malloc(3 * MiB, 0);
      live.set(keep, { size: 3 * MiB, stream: 0, tag: 2 });
      writeBlock(h, keep, live.get(keep)!);
      // Three 20 MiB pages of stream 1's segment, free: the only whole pages emptyCache can unmap.
      h.alloc.free(h.alloc.malloc(60 * MiB, 1));
      return { h, live, keep };
    };
    const dry = make();
    dry.h.faults.arm(0);
    dry.h.alloc.emptyCache();
    const steps = [...dry.h.faults.log];
    expect(steps).toEqual(['unmap', 'unmap', 'unmap', 'release', 'release', 'release', 'free']);
    for (let k = 1; k <= steps.length; k++) {
      const { h, live, keep } = make();
      const before = state(h);
      const at = `${steps[k - 1]} (step ${k})`;
      h.faults.kind = 'invalid-value';
      h.faults.arm(k);
      let thrown: unknown;
      try {
        h.alloc.emptyCache();
      } catch (e) {
        thrown = e;
      }
      h.faults.arm(0);
      if (steps[k - 1] === 'unmap') {
        expect(thrown, at).toBeInstanceOf(VmmError);
        expect(state(h), at).toEqual(before);
      } else {
        // The pages are gone either way; only the segment's own range may still be held.
        expect(thrown === undefined, at).toBe(steps[k - 1] === 'release');
        expect(h.alloc.stats.reservedBytes, at).toBe(20 * MiB);
        expect(h.events.at(-1), at).toEqual({
          action: 'segment_unmap',
          address: expect.any(Number),
          size: 60 * MiB,
          stream: 1,
        });
      }
      checkAfterFault(h, live);
      givesEverythingBack(h, [keep], at);
    }
  });
});

/**
 * Private pools (Note [Private pools]) take memory and give it back through
 * the same multi-step paths, with books of their own: cudaMalloc_count (P4)
 * decides whether a freeable pool is erased once emptied. After a fault
 * the pool must be erased, or not, exactly as in a run without one (under
 * native segments always; under expandable ones PyTorch's count of
 * mapping calls against unmapped ranges can keep it), and its memory must
 * all go back without tripping PyTorch's cudaMalloc_count assertion.
 */
describe.each(['native', 'expandable'] as const)('%s: a failing driver step in a private pool', (kind) => {
  /** Pool 1 holds a live block and cached memory; the default pool a live block (first). */
  const setup = () => {
    const h = harness(kind, {}, smallDevice(256 * MiB));
    const live = [h.alloc.malloc(1000, 0), h.alloc.malloc(30 * MiB, 0, 1)];
    h.alloc.free(h.alloc.malloc(5 * MiB, 0, 1));
    h.alloc.free(h.alloc.malloc(3000, 1, 1));
    return { h, live };
  };
  /**
   * Let pool 1 go (its blocks freed, no graph using it) and empty the cache:
   * none of its memory may stay. Returns whether the pool was erased (naming
   * it again makes a new pool rather than failing PyTorch's use_count assertion).
   */
  const letPoolGo = (h: Harness, poolBlocks: readonly number[]): boolean => {
    for (const b of poolBlocks) h.alloc.free(b);
    h.alloc.releasePool(1);
    h.alloc.emptyCache();
    expect(h.alloc.snapshot().filter((s) => s.pool === 1)).toEqual([]);
    try {
      h.alloc.free(h.alloc.malloc(4 * MiB, 0, 1));
    } catch (e) {
      expect(e).toBeInstanceOf(AllocatorStateError);
      return false;
    }
    h.alloc.releasePool(1);
    h.alloc.emptyCache();
    return true;
  };

  it.each(REQUESTS)(
    'malloc of %d bytes on stream %d: as before, then as a run without the fault',
    (size, stream) => {
      const dry = setup();
      dry.h.faults.arm(0);
      dry.live.push(dry.h.alloc.malloc(size, stream, 1));
      const steps = [...dry.h.faults.log];
      expect(steps.length).toBeGreaterThan(0);
      const erased = letPoolGo(dry.h, dry.live.slice(1));
      if (kind === 'native') expect(erased).toBe(true);
      checkTeardown(dry.h, [dry.live[0]]);
      for (const fault of ['invalid-value', 'out-of-memory'] as const) {
        for (let k = 1; k <= steps.length; k++) {
          const { h, live } = setup();
          const before = state(h);
          const at = `${fault} at ${steps[k - 1]} (step ${k})`;
          h.faults.kind = fault;
          h.faults.arm(k);
          let thrown: unknown;
          try {
            h.alloc.malloc(size, stream, 1);
          } catch (e) {
            thrown = e;
          }
          h.faults.arm(0);
          // P8: no cached block is released for a request under a capture, so nothing is retried.
          if (fault === 'out-of-memory' && (kind === 'native' || steps[k - 1] === 'create'))
            expect(thrown, at).toBeInstanceOf(AllocatorOutOfMemoryError);
          else expect(thrown, at).toBeInstanceOf(VmmError);
          expect(h.alloc.stats.allocRetries, at).toBe(0);
          expect(state(h), at).toEqual(before);
          live.push(h.alloc.malloc(size, stream, 1));
          expect(letPoolGo(h, live.slice(1)), at).toBe(erased);
          checkTeardown(h, [live[0]]);
        }
      }
    },
  );

  it('emptyCache of a freeable pool: consistent, finished by a later emptyCache, nothing leaks', () => {
    const make = () => {
      const { h, live } = setup();
      const shadow = new Map<number, LiveBlock>();
      shadow.set(live[0], { size: 1000, stream: 0, tag: 3 });
      writeBlock(h, live[0], shadow.get(live[0])!);
      h.alloc.free(live[1]);
      h.alloc.releasePool(1);
      return { h, live: shadow, keep: live[0] };
    };
    const dry = make();
    dry.h.faults.arm(0);
    dry.h.alloc.emptyCache();
    const steps = [...dry.h.faults.log];
    expect(steps.length).toBeGreaterThan(2);
    expect(dry.h.alloc.snapshot().filter((s) => s.pool === 1)).toEqual([]);
    for (let k = 1; k <= steps.length; k++) {
      const { h, live, keep } = make();
      const at = `${steps[k - 1]} (step ${k})`;
      h.faults.kind = 'invalid-value';
      h.faults.arm(k);
      try {
        h.alloc.emptyCache();
      } catch (e) {
        expect(e, at).toBeInstanceOf(VmmError);
      }
      h.faults.arm(0);
      checkAfterFault(h, live);
      expect(
        h.alloc.snapshot().filter((s) => s.pool === 1),
        at,
      ).toEqual([]);
      givesEverythingBack(h, [keep], at);
    }
  });
});
