import fc from 'fast-check';
import { expect, it } from 'vitest';
import { PairSet } from '../../../src/alloc/pytorch/pair-set.js';

/** The naive model: entries sorted by (a, b). */
type Key = readonly [number, number];
const cmp = (x: Key, y: Key) => (x[0] !== y[0] ? x[0] - y[0] : x[1] - y[1]);

const op = fc.oneof(
  fc.record({
    kind: fc.constant('insert' as const),
    a: fc.integer({ min: 0, max: 40 }),
    b: fc.integer({ min: 0, max: 300 }),
  }),
  fc.record({
    kind: fc.constant('delete' as const),
    a: fc.integer({ min: 0, max: 40 }),
    b: fc.integer({ min: 0, max: 300 }),
  }),
  fc.record({ kind: fc.constant('deleteSeen' as const), i: fc.nat() }),
  fc.record({
    kind: fc.constant('query' as const),
    a: fc.integer({ min: -1, max: 41 }),
    b: fc.integer({ min: -1, max: 301 }),
  }),
);

it('PairSet agrees with a sorted array under random inserts, deletes and queries (several chunks)', () => {
  fc.assert(
    fc.property(fc.array(op, { minLength: 1, maxLength: 600 }), (ops) => {
      const set = new PairSet<string>();
      let model: Key[] = [];
      for (const o of ops) {
        if (o.kind === 'insert') {
          if (model.some((k) => k[0] === o.a && k[1] === o.b)) continue;
          set.insert(o.a, o.b, `${o.a}/${o.b}`);
          model.push([o.a, o.b]);
          model.sort(cmp);
        } else if (o.kind === 'delete' || o.kind === 'deleteSeen') {
          const k: Key =
            o.kind === 'delete' ? [o.a, o.b] : (model[o.i % Math.max(1, model.length)] ?? [0, 0]);
          // A lookup first, as the allocator does (it sets the finger the delete then uses).
          if (o.kind === 'deleteSeen') set.ceiling(k[0], k[1]);
          const present = model.some((m) => m[0] === k[0] && m[1] === k[1]);
          expect(set.delete(k[0], k[1])).toBe(present);
          model = model.filter((m) => m[0] !== k[0] || m[1] !== k[1]);
        } else {
          const q: Key = [o.a, o.b];
          const name = (k: Key | undefined) => (k === undefined ? undefined : `${k[0]}/${k[1]}`);
          expect(set.ceiling(o.a, o.b)).toBe(name(model.find((k) => cmp(k, q) >= 0)));
          expect(set.higher(o.a, o.b)).toBe(name(model.find((k) => cmp(k, q) > 0)));
          expect(set.lower(o.a, o.b)).toBe(name(model.filter((k) => cmp(k, q) < 0).at(-1)));
        }
        expect(set.size).toBe(model.length);
      }
      expect(set.toArray()).toEqual(model.map((k) => `${k[0]}/${k[1]}`));
      expect(set.first()).toBe(model.length ? `${model[0][0]}/${model[0][1]}` : undefined);
      expect(set.last()).toBe(model.length ? `${model.at(-1)![0]}/${model.at(-1)![1]}` : undefined);
    }),
    { numRuns: 150 },
  );
});
