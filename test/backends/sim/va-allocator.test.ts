import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VaAllocator } from '../../../src/backends/sim/va-allocator.js';
import { VmmError } from '../../../src/core/errors.js';

const START = 0x10_0000;
const END = 0x10_0000 + 64 * 0x1000; // 64 pages of 4 KiB
const P = 0x1000;

function expectVmmError(f: () => unknown, kind: string): void {
  let thrown: unknown;
  try {
    f();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(VmmError);
  expect((thrown as VmmError).kind).toBe(kind);
}

describe('VaAllocator', () => {
  it('is deterministic: the same calls give the same addresses', () => {
    const calls = (va: VaAllocator) => {
      const out: number[] = [];
      const a = va.allocate(3 * P, P, 0);
      const b = va.allocate(P, 4 * P, 0);
      out.push(a, b);
      va.release(a, 3 * P);
      out.push(va.allocate(2 * P, P, 0), va.allocate(8 * P, 8 * P, 0), va.allocate(P, P, START + 40 * P));
      return out;
    };
    expect(calls(new VaAllocator(START, END))).toEqual(calls(new VaAllocator(START, END)));
  });

  it('hands out the lowest fitting address first', () => {
    const va = new VaAllocator(START, END);
    expect(va.allocate(P, P, 0)).toBe(START);
    expect(va.allocate(2 * P, P, 0)).toBe(START + P);
    expect(va.allocate(P, P, 0)).toBe(START + 3 * P);
    // A hole of one page at START + P after a release: a one-page request takes it, a two-page one does not.
    va.release(START + P, 2 * P);
    expect(va.allocate(3 * P, P, 0)).toBe(START + 4 * P);
    expect(va.allocate(P, P, 0)).toBe(START + P);
    expect(va.allocate(P, P, 0)).toBe(START + 2 * P);
  });

  it('honours the alignment', () => {
    const va = new VaAllocator(START, END);
    va.allocate(P, P, 0); // START taken
    const a = va.allocate(P, 16 * P, 0);
    expect(a % (16 * P)).toBe(0);
    expect(a).toBe(Math.ceil((START + P) / (16 * P)) * 16 * P);
    // The gap before the aligned block is still free and used first.
    expect(va.allocate(P, P, 0)).toBe(START + P);
    for (const align of [P, 2 * P, 8 * P, 32 * P]) {
      const b = va.allocate(P, align, 0);
      expect(b % align).toBe(0);
    }
  });

  it('honours a free hint and ignores a taken one', () => {
    const va = new VaAllocator(START, END);
    const hint = START + 20 * P;
    expect(va.allocate(2 * P, P, hint)).toBe(hint);
    // Taken (exactly, or overlapping): first fit instead.
    expect(va.allocate(P, P, hint)).toBe(START);
    expect(va.allocate(2 * P, P, hint + P)).toBe(START + P);
    // A hint whose range runs past the free range: ignored.
    expect(va.allocate(2 * P, P, hint - P)).toBe(START + 3 * P);
    // A free hint right after the taken block is honoured.
    expect(va.allocate(P, P, hint + 2 * P)).toBe(hint + 2 * P);
    // A hint outside the space is ignored.
    expect(va.allocate(P, P, END + 10 * P)).toBe(START + 5 * P);
  });

  it('release merges with both neighbours: a reserve/free cycle returns the same address', () => {
    const va = new VaAllocator(START, END);
    expect(va.fragments).toBe(1);
    const a = va.allocate(4 * P, P, 0);
    expect(va.fragments).toBe(1);
    for (let i = 0; i < 5; i++) {
      va.release(a, 4 * P);
      expect(va.fragments).toBe(1);
      expect(va.allocate(4 * P, P, 0)).toBe(a);
    }
    const b = va.allocate(P, P, 0);
    const c = va.allocate(P, P, 0);
    va.release(b, P); // hole between a and c
    expect(va.fragments).toBe(2);
    va.release(a, 4 * P); // merges with the hole after it
    expect(va.fragments).toBe(2);
    va.release(c, P); // merges hole and tail
    expect(va.fragments).toBe(1);
    expect(va.allocate(END - START, P, 0)).toBe(START);
  });

  it('refuses what does not fit with VmmError out-of-memory, changing nothing', () => {
    const va = new VaAllocator(START, END);
    expectVmmError(() => va.allocate(END - START + P, P, 0), 'out-of-memory');
    const a = va.allocate(END - START - P, P, 0);
    expectVmmError(() => va.allocate(2 * P, P, 0), 'out-of-memory');
    // Alignment that leaves no aligned base inside the free page.
    expectVmmError(() => va.allocate(P, 1 << 30, 0), 'out-of-memory');
    expect(va.fragments).toBe(1);
    expect(va.allocate(P, P, 0)).toBe(END - P);
    expect(va.fragments).toBe(0);
    expectVmmError(() => va.allocate(P, P, 0), 'out-of-memory');
    va.release(a, END - START - P);
    va.release(END - P, P);
    expect(va.fragments).toBe(1);
  });

  it('random allocate/release: ranges never overlap, stay in bounds and aligned; freeing all leaves one fragment', () => {
    type Op = { op: 'alloc'; pages: number; alignLog: number; hint: number } | { op: 'free'; pick: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        op: fc.constant('alloc' as const),
        pages: fc.integer({ min: 1, max: 9 }),
        alignLog: fc.integer({ min: 0, max: 4 }),
        hint: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 0, max: 70 }).map((p) => START + p * P),
        ),
      }),
      fc.record({ op: fc.constant('free' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 120 }), fc.boolean(), (ops, reverse) => {
        const va = new VaAllocator(START, END);
        const live: { base: number; size: number }[] = [];
        for (const op of ops) {
          if (op.op === 'alloc') {
            const size = op.pages * P;
            const align = P << op.alignLog;
            let base: number;
            try {
              base = va.allocate(size, align, op.hint);
            } catch (e) {
              expect((e as VmmError).kind).toBe('out-of-memory');
              // Really nothing fits: no aligned free run of `size` exists.
              for (let b = START; b + size <= END; b += align) {
                if (b % align !== 0) continue;
                expect(live.some((r) => r.base < b + size && b < r.base + r.size)).toBe(true);
              }
              continue;
            }
            expect(base).toBeGreaterThanOrEqual(START);
            expect(base + size).toBeLessThanOrEqual(END);
            const hintFree =
              op.hint !== 0 &&
              op.hint >= START &&
              op.hint + size <= END &&
              !live.some((r) => r.base < op.hint + size && op.hint < r.base + r.size);
            if (hintFree) expect(base).toBe(op.hint);
            else expect(base % align).toBe(0);
            for (const r of live) expect(r.base < base + size && base < r.base + r.size).toBe(false);
            live.push({ base, size });
          } else if (live.length > 0) {
            const [r] = live.splice(op.pick % live.length, 1);
            va.release(r.base, r.size);
          }
        }
        if (reverse) live.reverse();
        for (const r of live) va.release(r.base, r.size);
        expect(va.fragments).toBe(1);
        expect(va.allocate(END - START, P, 0)).toBe(START);
      }),
      { numRuns: 200, seed: 5 },
    );
  });
});
