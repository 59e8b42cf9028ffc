import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OrderedMap } from '../../src/util/ordered-map.js';

/**
 * A naive model: entries sorted by key, each with an end. Ranges kept by the
 * model never overlap (a point entry, end === key, counts as [key, key + 1)),
 * which is how every user of OrderedMap keeps them; containing and
 * intersects are specified for that case.
 */
interface Entry {
  key: number;
  end: number;
  value: string;
}

class Model {
  entries: Entry[] = [];

  index(key: number): number {
    return this.entries.findIndex((e) => e.key === key);
  }

  /** Whether [key, end) would overlap an entry other than the one at `key`. */
  overlaps(key: number, end: number): boolean {
    const hi = Math.max(end, key + 1);
    return this.entries.some((e) => e.key !== key && e.key < hi && Math.max(e.end, e.key + 1) > key);
  }

  set(key: number, end: number, value: string): void {
    const i = this.index(key);
    if (i >= 0) this.entries[i] = { key, end, value };
    else {
      this.entries.push({ key, end, value });
      this.entries.sort((a, b) => a.key - b.key);
    }
  }

  delete(key: number): boolean {
    const i = this.index(key);
    if (i < 0) return false;
    this.entries.splice(i, 1);
    return true;
  }

  get(key: number): string | undefined {
    return this.entries.find((e) => e.key === key)?.value;
  }

  floor(key: number): Entry | undefined {
    let out: Entry | undefined;
    for (const e of this.entries) if (e.key <= key) out = e;
    return out;
  }

  ceiling(key: number): string | undefined {
    return this.entries.find((e) => e.key >= key)?.value;
  }

  higher(key: number): string | undefined {
    return this.entries.find((e) => e.key > key)?.value;
  }

  containing(point: number): string | undefined {
    return this.entries.find((e) => e.key <= point && point < e.end)?.value;
  }

  intersects(start: number, end: number): boolean {
    return this.entries.some((e) => e.key < end && e.end > start);
  }
}

type Op =
  | { op: 'set'; key: number; len: number }
  | { op: 'burst'; key: number; len: number; count: number }
  | { op: 'delete'; key: number }
  | { op: 'deleteExisting'; pick: number }
  | { op: 'get' | 'floor' | 'ceiling' | 'higher' | 'containing'; key: number }
  | { op: 'intersects'; key: number; len: number }
  | { op: 'first' | 'values' | 'size' };

function opsFor(key: fc.Arbitrary<number>, len: fc.Arbitrary<number>): fc.Arbitrary<Op> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.record({ op: fc.constant('set' as const), key, len }) },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('burst' as const),
        key,
        len,
        count: fc.integer({ min: 20, max: 70 }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), key }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('deleteExisting' as const), pick: fc.nat() }) },
    {
      weight: 6,
      arbitrary: fc.record({
        op: fc.constantFrom('get' as const, 'floor' as const, 'ceiling' as const, 'higher' as const),
        key,
      }),
    },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('containing' as const), key }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('intersects' as const), key, len }) },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constantFrom('first' as const, 'values' as const, 'size' as const) }),
    },
  );
}

function check(ops: Op[]): { maxSize: number } {
  const map = new OrderedMap<string>();
  const model = new Model();
  let counter = 0;
  let maxSize = 0;
  for (const op of ops) {
    switch (op.op) {
      case 'set': {
        const end = op.key + op.len;
        if (model.overlaps(op.key, end)) break;
        const value = `v${counter++}`;
        map.set(op.key, value, op.len === 0 ? undefined : end);
        model.set(op.key, end, value);
        break;
      }
      case 'burst': {
        // A run of adjacent entries: fills chunks fast so they split.
        const step = Math.max(op.len, 1);
        for (let i = 0; i < op.count; i++) {
          const key = op.key + i * step;
          if (model.overlaps(key, key + op.len)) continue;
          const value = `v${counter++}`;
          map.set(key, value, op.len === 0 ? undefined : key + op.len);
          model.set(key, key + op.len, value);
        }
        break;
      }
      case 'delete':
        expect(map.delete(op.key)).toBe(model.delete(op.key));
        break;
      case 'deleteExisting': {
        if (model.entries.length === 0) break;
        const key = model.entries[op.pick % model.entries.length].key;
        expect(map.delete(key)).toBe(true);
        model.delete(key);
        expect(map.get(key)).toBeUndefined();
        break;
      }
      case 'get':
        expect(map.get(op.key)).toBe(model.get(op.key));
        expect(map.has(op.key)).toBe(model.get(op.key) !== undefined);
        break;
      case 'floor':
        expect(map.floor(op.key)).toBe(model.floor(op.key)?.value);
        break;
      case 'ceiling':
        expect(map.ceiling(op.key)).toBe(model.ceiling(op.key));
        break;
      case 'higher':
        expect(map.higher(op.key)).toBe(model.higher(op.key));
        break;
      case 'containing':
        expect(map.containing(op.key)).toBe(model.containing(op.key));
        break;
      case 'intersects': {
        const len = Math.max(op.len, 1);
        expect(map.intersects(op.key, op.key + len)).toBe(model.intersects(op.key, op.key + len));
        break;
      }
      case 'first':
        expect(map.first()).toBe(model.entries[0]?.value);
        break;
      case 'values':
        expect([...map.values()]).toEqual(model.entries.map((e) => e.value));
        break;
      case 'size':
        break;
    }
    expect(map.size).toBe(model.entries.length);
    maxSize = Math.max(maxSize, map.size);
  }
  expect([...map.values()]).toEqual(model.entries.map((e) => e.value));
  return { maxSize };
}

describe('OrderedMap against a sorted-array model', () => {
  it('small keys: dense collisions, replacements and deletions', () => {
    let largest = 0;
    fc.assert(
      fc.property(
        fc.array(opsFor(fc.integer({ min: 0, max: 300 }), fc.constantFrom(0, 1, 1, 2, 5)), {
          minLength: 50,
          maxLength: 600,
        }),
        (ops) => {
          largest = Math.max(largest, check(ops).maxSize);
        },
      ),
      { numRuns: 60, seed: 1 },
    );
    // Enough entries to need several chunks (CAPACITY is 64).
    expect(largest).toBeGreaterThan(128);
  });

  it('address-like keys up to 2^47 with range ends', () => {
    const granule = 2 ** 21;
    const key = fc.oneof(
      fc.integer({ min: 0, max: 2 ** 26 - 1 }).map((k) => 0x7000_0000_0000 + k * granule),
      fc.integer({ min: 0, max: 2 ** 47 }),
      fc.integer({ min: 0, max: 400 }).map((k) => 0x7000_0000_0000 + k * granule),
    );
    const len = fc.constantFrom(0, granule, 2 * granule, 64 * granule, 1);
    let largest = 0;
    fc.assert(
      fc.property(fc.array(opsFor(key, len), { minLength: 50, maxLength: 500 }), (ops) => {
        largest = Math.max(largest, check(ops).maxSize);
      }),
      { numRuns: 40, seed: 2 },
    );
    expect(largest).toBeGreaterThan(128);
  });

  it('many inserts split chunks, mass deletes remove them, and queries stay right throughout', () => {
    // CAPACITY is 64: 2,000 keys need dozens of chunks; deleting runs of keys empties whole chunks.
    fc.assert(
      fc.property(
        fc.shuffledSubarray(
          Array.from({ length: 2000 }, (_, i) => i * 3),
          { minLength: 2000, maxLength: 2000 },
        ),
        fc.integer({ min: 0, max: 3 }),
        (keys, deletionOrder) => {
          const map = new OrderedMap<number>();
          for (const k of keys) map.set(k, k, k + 2);
          expect(map.size).toBe(2000);
          const sorted = [...keys].sort((a, b) => a - b);
          expect([...map.values()]).toEqual(sorted);
          for (const q of [-1, 0, 1, 2, 3, 100, 2999, 5997, 5998, 6000]) {
            const fl = sorted.filter((k) => k <= q).pop();
            expect(map.floor(q)).toBe(fl);
            expect(map.ceiling(q)).toBe(sorted.find((k) => k >= q));
            expect(map.higher(q)).toBe(sorted.find((k) => k > q));
            expect(map.containing(q)).toBe(fl !== undefined && q < fl + 2 ? fl : undefined);
          }
          // Delete in one of several orders: ascending, descending, middle-out, interleaved.
          const order =
            deletionOrder === 0
              ? sorted
              : deletionOrder === 1
                ? [...sorted].reverse()
                : deletionOrder === 2
                  ? [...sorted.slice(1000), ...sorted.slice(0, 1000).reverse()]
                  : [...sorted.filter((_, i) => i % 2 === 0), ...sorted.filter((_, i) => i % 2 === 1)];
          const live = new Set(sorted);
          order.forEach((k, i) => {
            expect(map.delete(k)).toBe(true);
            live.delete(k);
            if (i % 97 === 0) {
              const rest = sorted.filter((x) => live.has(x));
              expect([...map.values()]).toEqual(rest);
              expect(map.first()).toBe(rest[0]);
              const probe = k + 1;
              expect(map.floor(probe)).toBe(rest.filter((x) => x <= probe).pop());
              expect(map.ceiling(probe)).toBe(rest.find((x) => x >= probe));
              expect(map.higher(k)).toBe(rest.find((x) => x > k));
              expect(map.intersects(k, k + 1)).toBe(rest.some((x) => x < k + 1 && x + 2 > k));
            }
          });
          expect(map.size).toBe(0);
          expect(map.first()).toBeUndefined();
          expect(map.floor(10_000)).toBeUndefined();
          expect(map.ceiling(-1)).toBeUndefined();
          // Still usable after being emptied.
          map.set(7, 7, 9);
          expect(map.containing(8)).toBe(7);
          expect(map.size).toBe(1);
        },
      ),
      { numRuns: 8, seed: 3 },
    );
  });

  it('set on an existing key replaces value and end without growing', () => {
    const map = new OrderedMap<string>();
    map.set(10, 'a', 20);
    map.set(10, 'b', 12);
    expect(map.size).toBe(1);
    expect(map.get(10)).toBe('b');
    expect(map.containing(11)).toBe('b');
    expect(map.containing(15)).toBeUndefined();
    expect(map.intersects(12, 30)).toBe(false);
    expect(map.intersects(11, 30)).toBe(true);
  });

  it('a point entry (no end) contains nothing', () => {
    const map = new OrderedMap<string>();
    map.set(5, 'p');
    expect(map.containing(5)).toBeUndefined();
    expect(map.get(5)).toBe('p');
  });

  it('clear empties the map and it can be refilled', () => {
    const map = new OrderedMap<number>();
    for (let i = 0; i < 500; i++) map.set(i, i, i + 1);
    map.clear();
    expect(map.size).toBe(0);
    expect([...map.values()]).toEqual([]);
    expect(map.get(3)).toBeUndefined();
    for (let i = 499; i >= 0; i--) map.set(i * 2, i);
    expect(map.size).toBe(500);
    expect(map.first()).toBe(0);
    expect(map.floor(999)).toBe(499);
  });

  it('values() is a snapshot: deleting while iterating visits every original entry', () => {
    const map = new OrderedMap<number>();
    for (let i = 0; i < 200; i++) map.set(i, i);
    const seen: number[] = [];
    for (const v of map.values()) {
      seen.push(v);
      map.delete(v);
    }
    expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(map.size).toBe(0);
  });
});
