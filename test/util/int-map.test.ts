import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ABSENT, IntMap } from '../../src/util/int-map.js';

describe('IntMap', () => {
  it('answers as a Map does, for addresses and odd keys alike', () => {
    const key = fc.oneof(
      fc.integer({ min: 0, max: 64 }).map((k) => k * 512),
      fc.integer({ min: 0, max: 2 ** 20 }).map((k) => 2 ** 47 + k * 2 ** 21),
      fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, -1, 0.5, 2 ** 53, 2 ** 32, 2 ** 32 + 1),
    );
    const op = fc.tuple(
      fc.constantFrom('set', 'set', 'delete', 'get'),
      key,
      fc.integer({ min: -1, max: 1 << 30 }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 3000 }), (ops) => {
        const map = new IntMap();
        const model = new Map<number, number>();
        for (const [what, k, v] of ops) {
          if (what === 'set') {
            map.set(k, v);
            model.set(k, v);
          } else if (what === 'delete') expect(map.delete(k)).toBe(model.delete(k));
          expect(map.get(k)).toBe(model.get(k) ?? ABSENT);
          expect(map.has(k)).toBe(model.has(k));
        }
        expect(map.size).toBe(model.size);
        for (const [k, v] of model) expect(map.get(k)).toBe(v);
      }),
      { numRuns: 200 },
    );
  });

  it('grows past its first capacity and keeps every entry', () => {
    const map = new IntMap();
    for (let i = 0; i < 100_000; i++) map.set(2 ** 40 + i * 512, i);
    expect(map.size).toBe(100_000);
    for (let i = 0; i < 100_000; i++) expect(map.get(2 ** 40 + i * 512)).toBe(i);
    expect(map.get(2 ** 40 + 100_000 * 512)).toBe(ABSENT);
  });

  it('keeps every other entry findable through deletes in long probe runs', () => {
    const map = new IntMap();
    const model = new Map<number, number>();
    // Keys that share low bits crowd into runs; deleting from their middle must not cut a run.
    for (let i = 0; i < 20_000; i++) {
      const k = (i % 700) * 2 ** 33 + Math.floor(i / 700) * 2 ** 21;
      map.set(k, i);
      model.set(k, i);
      if (i % 3 === 0) {
        const gone = (Math.floor(i / 2) % 700) * 2 ** 33;
        expect(map.delete(gone)).toBe(model.delete(gone));
      }
    }
    expect(map.size).toBe(model.size);
    for (const [k, v] of model) expect(map.get(k)).toBe(v);
  });

  it('refuses a value it could not store', () => {
    const map = new IntMap();
    expect(() => map.set(1, ABSENT)).toThrow(RangeError);
    expect(() => map.set(1, 0.5)).toThrow(RangeError);
    expect(() => map.set(1, 2 ** 31)).toThrow(RangeError);
  });
});
