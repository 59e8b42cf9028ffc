import { describe, expect, it } from 'vitest';
import type { SimProcess } from '../../../src/backends/sim/process.js';
import { VmmError } from '../../../src/core/errors.js';
import { checkAgainstShadow, checkTeardown, type LiveBlock, writeBlock } from './check.js';
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
      checkAgainstShadow(h, live, false);
      h.alloc.emptyCache();
      checkAgainstShadow(h, live);
      h.alloc.free(keep);
      h.alloc.emptyCache();
      expect(h.alloc.stats.reservedBytes).toBe(0);
      h.alloc.dispose();
      h.rt.dispose();
      expect(h.machine.liveAllocations, `${steps[k - 1]} (step ${k})`).toBe(0);
      expect(h.machine.devices[0].pool.used).toBe(0);
    }
    expect(thrown).toBeGreaterThan(0);
  });
});
