import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressMap } from '../../src/util/address-map.js';

/** An operation on both maps: set (with a value), delete, or get of an address. */
type Op = { kind: 'set' | 'delete' | 'get'; key: number; value: number };

/**
 * Addresses as allocators make them (Note [Address hash map]): multiples of
 * 512 above 2^31 from a few bases, 2 MiB segments' bases sharing their low
 * bits, and some odd ones, so collisions, runs and the shifting delete are
 * all exercised.
 */
const address = fc.oneof(
  fc.integer({ min: 0, max: 4096 }).map((k) => 0x7f0000000000 + k * 512),
  fc.integer({ min: 0, max: 256 }).map((k) => 0x7f2000000000 + k * 2 * 1024 * 1024),
  fc.integer({ min: 0, max: 2 ** 40 }),
);
const op: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom('set' as const, 'set' as const, 'delete' as const, 'get' as const),
  key: address,
  value: fc.integer(),
});

describe('AddressMap', () => {
  it('agrees with a Map under any sequence of sets, deletes and gets', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 600 }), (ops) => {
        const mine = new AddressMap<number>();
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === 'set') {
            mine.set(o.key, o.value);
            model.set(o.key, o.value);
          } else if (o.kind === 'delete') expect(mine.delete(o.key)).toBe(model.delete(o.key));
          else expect(mine.get(o.key)).toBe(model.get(o.key));
          expect(mine.size).toBe(model.size);
        }
        for (const [k, v] of model) expect(mine.get(k)).toBe(v);
        expect([...mine.values()].sort((a, b) => a - b)).toEqual([...model.values()].sort((a, b) => a - b));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps every entry through growth, and finds what was removed gone', () => {
    const m = new AddressMap<number>();
    const keys = Array.from({ length: 5000 }, (_, k) => 0x7f0000000000 + k * 2 * 1024 * 1024);
    for (const [i, k] of keys.entries()) m.set(k, i);
    expect(m.size).toBe(keys.length);
    for (let i = 0; i < keys.length; i += 2) expect(m.delete(keys[i])).toBe(true);
    expect(m.size).toBe(keys.length / 2);
    for (const [i, k] of keys.entries()) expect(m.get(k)).toBe(i % 2 === 0 ? undefined : i);
    expect(m.delete(keys[0])).toBe(false);
    m.clear();
    expect(m.size).toBe(0);
    expect(m.get(keys[1])).toBeUndefined();
  });
});
