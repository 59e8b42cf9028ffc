import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { STARTUP_HEAP_FREE, STARTUP_HOLE, VA_CHUNK } from '../../../src/backends/sim/driver-va.js';
import { VmmError } from '../../../src/core/errors.js';
import { END, G, HOLE, LOW, MiB, RUN, space } from '../../support/driver-va-space.js';

describe('DriverVaSpace (Note [Driver VA placement])', () => {
  it('small reservations share the start-up heap; what does not fit gets a 32 MiB-granular chunk of its own', () => {
    const va = space();
    const inHeap = [];
    for (let at = 0; at < STARTUP_HOLE + STARTUP_HEAP_FREE; at += G) inHeap.push(va.allocate(G, G, 0));
    // [startupHeapFull]: the first in the hole, the other twelve 74 MiB above it, in the run.
    expect(inHeap).toEqual(inHeap.map((_, i) => (i === 0 ? HOLE : RUN + (i - 1) * G)));
    expect(RUN - HOLE).toBe(74 * MiB);
    expect(va.heaps).toBe(1);
    const spilled = va.allocate(G, G, 0);
    expect(spilled).toBe(LOW);
    expect(va.heaps).toBe(2);
    // 48 MiB rounds to a 64 MiB chunk; the next 48 MiB does not fit its 16 MiB tail.
    const a = va.allocate(48 * MiB, G, 0);
    const b = va.allocate(48 * MiB, G, 0);
    expect([a - LOW, b - a]).toEqual([VA_CHUNK, 64 * MiB]);
  });

  it('searches the newest heap first, the start-up heap last', () => {
    const va = space();
    const a = va.allocate(48 * MiB, G, 0);
    const b = va.allocate(48 * MiB, G, 0);
    // Both chunks have a 16 MiB tail and the start-up heap has 24 MiB: the newest chunk wins.
    expect(va.allocate(G, G, 0)).toBe(b + 48 * MiB);
    // A hint into the older chunk's free tail is only where the search starts.
    expect(va.allocate(G, G, a + 48 * MiB)).toBe(b + 50 * MiB);
  });

  it('gives a chunk back when nothing is reserved in it, so hints into it then go elsewhere', () => {
    const va = space();
    const big = va.allocate(64 * MiB, G, 0);
    va.release(big, 64 * MiB);
    expect(va.heaps).toBe(1);
    // 2 MiB in: its chunk is gone; the start-up heap, above it, has room in its hole [fresh32Plus2].
    expect(va.allocate(G, G, big + G)).toBe(HOLE);
    // A request no heap holds: a new chunk at the next 32 MiB boundary, or at the hint if it is one.
    expect(va.allocate(32 * MiB, G, big + G)).toBe(big + VA_CHUNK);
    expect(va.allocate(32 * MiB, G, big + 2 * VA_CHUNK)).toBe(big + 2 * VA_CHUNK);
    // The same size again, un-hinted, after everything is freed: the same base.
    va.release(big + VA_CHUNK, 32 * MiB);
    va.release(big + 2 * VA_CHUNK, 32 * MiB);
    expect(va.allocate(64 * MiB, G, 0)).toBe(big);
  });

  it('honours a hint into a freed range whose chunk still holds something', () => {
    const va = space();
    const a = va.allocate(48 * MiB, G, 0);
    const b = va.allocate(G, G, 0);
    expect(b).toBe(a + 48 * MiB);
    va.release(a, 48 * MiB);
    expect(va.allocate(G, G, a + G)).toBe(a + G);
    expect(va.allocate(16 * MiB, G, a + 16 * MiB)).toBe(a + 16 * MiB);
  });

  it('rounds a chunk up to the alignment when that is larger, and refuses hints past the address space', () => {
    const va = space();
    const a = va.allocate(34 * MiB, 128 * MiB, 0);
    expect(a % (128 * MiB)).toBe(0);
    expect(va.allocate(G, G, a + 64 * MiB)).toBe(a + 64 * MiB);
    let thrown: unknown;
    try {
      va.allocate(G, G, END + VA_CHUNK);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(VmmError);
    expect((thrown as VmmError).kind).toBe('out-of-memory');
  });

  it('allocateAt takes the range itself when it is free address space, in a heap or outside every heap', () => {
    const va = space();
    const big = va.allocate(64 * MiB, G, 0);
    va.release(big, 64 * MiB);
    // Outside every heap, not on a chunk boundary: a heap of exactly that range.
    expect(va.allocateAt(G, G, big + G)).toBe(big + G);
    expect(va.heaps).toBe(2);
    // Inside the start-up heap's free run.
    expect(va.allocateAt(G, G, RUN + 4 * G)).toBe(RUN + 4 * G);
    // Taken: placed as an un-hinted reservation instead.
    expect(va.allocateAt(G, G, big + G)).toBe(HOLE);
    va.release(big + G, G);
    expect(va.heaps).toBe(1);
  });

  it("keeps the start-up heap's hole for what fits it, and its driver memory from every reservation", () => {
    const va = space();
    // 4 MiB [fresh4Plus2, alignmentAndSize], or 2 MiB aligned to 4 MiB [largeAlignment], does not fit the hole.
    expect(va.allocate(2 * G, G, 0)).toBe(RUN);
    expect(va.allocate(G, 2 * G, 0)).toBe(RUN + 2 * G);
    expect(va.allocate(G, G, 0)).toBe(HOLE);
    va.release(HOLE, G);
    // A hint just past the hole [several, matrixDescending], or further into the driver memory, goes to the run.
    for (const hint of [HOLE + G, HOLE + 18 * G, RUN - G]) {
      expect(va.allocate(G, G, hint)).toBe(RUN + 3 * G);
      va.release(RUN + 3 * G, G);
    }
    // An exact range there (a map's tail past a reservation in the hole) is not free either.
    expect(va.allocateAt(G, G, HOLE + G)).toBe(HOLE);
    // [neighbours]: the hole, freed, is the first place again.
    va.release(HOLE, G);
    expect(va.allocate(G, G, 0)).toBe(HOLE);
    expect(va.heaps).toBe(1);
    va.release(HOLE, G);
    // Smaller pieces (a 4 KiB-granular device's) share the hole; while one is there, 2 MiB goes to the run.
    const half = G / 2;
    expect(va.allocate(half, half, 0)).toBe(HOLE);
    expect(va.allocate(G, G, 0)).toBe(RUN + 3 * G);
    expect(va.allocateAt(half, half, HOLE + half)).toBe(HOLE + half);
    expect(va.allocate(half, half, 0)).toBe(RUN + 4 * G);
    for (const base of [HOLE, HOLE + half, RUN + 3 * G, RUN + 4 * G]) va.release(base, base < RUN ? half : G);
    expect(va.allocate(G, G, HOLE)).toBe(HOLE);
    expect(va.allocateAt(half, half, HOLE + half)).toBe(RUN + 3 * G);
  });

  it('random reserve/free: ranges never overlap and stay inside; freeing all leaves the start-up heap alone', () => {
    type Op =
      | { op: 'alloc'; granules: number; alignLog: number; hint: number; exact: boolean }
      | { op: 'free'; pick: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        op: fc.constant('alloc' as const),
        granules: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 5, max: 80 })),
        alignLog: fc.integer({ min: 0, max: 6 }),
        hint: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 0, max: 200 }).map((k) => LOW + k * G),
          fc.integer({ min: 0, max: 40 }).map((k) => RUN + k * G),
          fc.integer({ min: 0, max: 37 }).map((k) => HOLE + k * G),
        ),
        exact: fc.boolean(),
      }),
      fc.record({ op: fc.constant('free' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 100 }), (ops) => {
        const va = space();
        const live: { base: number; size: number }[] = [];
        for (const o of ops) {
          if (o.op === 'free') {
            if (live.length === 0) continue;
            const [r] = live.splice(o.pick % live.length, 1);
            va.release(r!.base, r!.size);
            continue;
          }
          const size = o.granules * G;
          const align = G << o.alignLog;
          const hint = o.hint % align === 0 ? o.hint : 0;
          const base =
            o.exact && hint !== 0 ? va.allocateAt(size, align, hint) : va.allocate(size, align, hint);
          expect(base % align).toBe(0);
          expect(base).toBeGreaterThanOrEqual(LOW);
          expect(base + size).toBeLessThanOrEqual(END);
          for (const r of live) expect(r.base < base + size && base < r.base + r.size).toBe(false);
          live.push({ base, size });
        }
        for (const r of live) va.release(r.base, r.size);
        expect(va.heaps).toBe(1);
        expect(va.allocate(STARTUP_HEAP_FREE, G, 0)).toBe(RUN);
        expect(va.allocate(STARTUP_HOLE, G, 0)).toBe(HOLE);
      }),
      { numRuns: 200, seed: 11 },
    );
  });
});
