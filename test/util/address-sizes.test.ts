import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressSizes } from '../../src/util/address-sizes.js';

const MiB2 = 2 * 1024 * 1024;

/** The table's contents as a sorted list, to compare with a Map's. */
const sorted = (pairs: Iterable<[number, number]>): [number, number][] =>
  [...pairs].sort((a, b) => a[0] - b[0]);

describe('AddressSizes', () => {
  it('sets, reads, overwrites and deletes', () => {
    const t = new AddressSizes();
    expect(t.get(0x7f00_0000_0000)).toBeUndefined();
    t.set(0x7f00_0000_0000, MiB2);
    t.set(0, 4096);
    expect(t.get(0x7f00_0000_0000)).toBe(MiB2);
    expect(t.get(0)).toBe(4096);
    expect(t.has(0)).toBe(true);
    t.set(0, 8192);
    expect(t.get(0)).toBe(8192);
    expect(t.size).toBe(2);
    expect(t.delete(0)).toBe(true);
    expect(t.delete(0)).toBe(false);
    expect(t.has(0)).toBe(false);
    expect(t.size).toBe(1);
    t.clear();
    expect(t.size).toBe(0);
    expect(t.entries()).toEqual([]);
  });

  it('keeps addresses up to 2^53 apart, whose low words agree', () => {
    const t = new AddressSizes();
    const keys = [2 ** 32, 2 * 2 ** 32, 2 ** 52, Number.MAX_SAFE_INTEGER, 2 ** 32 + MiB2];
    for (const [i, k] of keys.entries()) t.set(k, i + 1);
    for (const [i, k] of keys.entries()) expect(t.get(k)).toBe(i + 1);
    expect(t.get(0)).toBeUndefined();
  });

  it('agrees with a Map over any sequence of sets, deletes and takes (the churn of the VMM cycle included)', () => {
    // Keys from a small pool of 2 MiB-aligned addresses, so sets and deletes meet the same keys often.
    const key = fc.integer({ min: 0, max: 40 }).map((k) => 0x7f00_0000_0000 + k * MiB2);
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key, size: fc.integer({ min: 1, max: 2 ** 40 }) }),
      fc.record({ kind: fc.constant('delete' as const), key }),
      fc.record({ kind: fc.constant('take' as const), key }),
      fc.record({ kind: fc.constant('get' as const), key }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const t = new AddressSizes(4);
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === 'set') {
            t.set(o.key, o.size);
            model.set(o.key, o.size);
          } else if (o.kind === 'delete') {
            expect(t.delete(o.key)).toBe(model.delete(o.key));
          } else if (o.kind === 'take') {
            expect(t.take(o.key)).toBe(model.get(o.key) ?? -1);
            model.delete(o.key);
          } else {
            expect(t.get(o.key)).toBe(model.get(o.key));
          }
          expect(t.size).toBe(model.size);
        }
        expect(sorted(t.entries())).toEqual(sorted(model));
      }),
      { seed: 17, numRuns: 300 },
    );
  });

  it('stays correct through growth to thousands of entries and back', () => {
    const t = new AddressSizes();
    for (let k = 0; k < 5000; k++) t.set(k * MiB2, k + 1);
    expect(t.size).toBe(5000);
    for (let k = 0; k < 5000; k += 2) expect(t.delete(k * MiB2)).toBe(true);
    for (let k = 0; k < 5000; k++) expect(t.get(k * MiB2)).toBe(k % 2 === 0 ? undefined : k + 1);
    expect(t.size).toBe(2500);
  });
});
