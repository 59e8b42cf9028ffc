import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GenerationalHandleTable, HandleTable } from '../../src/util/handle-table.js';

describe('HandleTable', () => {
  it('hands out handles from `first` upward, 1 by default', () => {
    const t = new HandleTable<string>();
    expect(t.peek()).toBe(1);
    expect(t.add('a')).toBe(1);
    expect(t.add('b')).toBe(2);
    expect(t.size).toBe(2);
    const u = new HandleTable<string>(3);
    expect(u.add('x')).toBe(3);
    expect(u.get(0)).toBeUndefined();
    expect(u.get(2)).toBeUndefined();
  });

  it('get, remove and peek', () => {
    const t = new HandleTable<string>();
    const a = t.add('a');
    const b = t.add('b');
    expect(t.get(a)).toBe('a');
    expect(t.get(b)).toBe('b');
    expect(t.get(0)).toBeUndefined();
    expect(t.get(99)).toBeUndefined();
    expect(t.get(-1)).toBeUndefined();
    expect(t.remove(a)).toBe(true);
    expect(t.remove(a)).toBe(false);
    expect(t.remove(0)).toBe(false);
    expect(t.remove(77)).toBe(false);
    expect(t.get(a)).toBeUndefined();
    expect(t.size).toBe(1);
    expect(t.peek()).toBe(a);
    expect(t.add('c')).toBe(a);
    expect(t.peek()).toBe(3);
  });

  it('reuses the last freed handle first', () => {
    const t = new HandleTable<number>();
    const hs = [1, 2, 3, 4, 5].map((v) => t.add(v));
    t.remove(hs[1]);
    t.remove(hs[3]);
    t.remove(hs[0]);
    expect(t.peek()).toBe(hs[0]);
    expect(t.add(10)).toBe(hs[0]);
    expect(t.add(11)).toBe(hs[3]);
    expect(t.add(12)).toBe(hs[1]);
    expect(t.add(13)).toBe(6);
  });

  it('values yields live values in handle order', () => {
    const t = new HandleTable<string>();
    for (const s of ['a', 'b', 'c', 'd']) t.add(s);
    t.remove(2);
    expect([...t.values()]).toEqual(['a', 'c', 'd']);
    t.add('e');
    expect([...t.values()]).toEqual(['a', 'e', 'c', 'd']);
  });

  it('agrees with a model over random add/remove sequences', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant(-1), fc.nat(40)), { maxLength: 300 }), (ops) => {
        const t = new HandleTable<number>();
        const live = new Map<number, number>();
        const freed: number[] = [];
        let next = 1;
        let counter = 0;
        for (const op of ops) {
          if (op === -1) {
            const expected = freed.length > 0 ? freed[freed.length - 1] : next;
            expect(t.peek()).toBe(expected);
            const h = t.add(counter);
            expect(h).toBe(expected);
            if (freed.length > 0) freed.pop();
            else next++;
            live.set(h, counter++);
          } else {
            const ok = live.has(op);
            expect(t.remove(op)).toBe(ok);
            if (ok) {
              live.delete(op);
              freed.push(op);
            }
          }
          expect(t.size).toBe(live.size);
        }
        const sorted = [...live.entries()].sort((a, b) => a[0] - b[0]);
        expect([...t.values()]).toEqual(sorted.map(([, v]) => v));
        for (const [h, v] of live) expect(t.get(h)).toBe(v);
      }),
      { numRuns: 100, seed: 4 },
    );
  });
});

describe('GenerationalHandleTable', () => {
  it('never hands out a value twice, and a stale value finds nothing even when its slot is reused', () => {
    const t = new GenerationalHandleTable<string>();
    const seen = new Set<number>();
    const first = t.add('a');
    expect(first).toBe(1);
    seen.add(first);
    expect(t.remove(first)).toBe(true);
    for (let i = 0; i < 1000; i++) {
      expect(t.peek()).not.toBe(first);
      const h = t.add(`v${i}`);
      expect(seen.has(h)).toBe(false);
      seen.add(h);
      expect(t.get(h)).toBe(`v${i}`);
      if (i % 3 !== 0) t.remove(h);
    }
    expect(t.get(first)).toBeUndefined();
    expect(t.remove(first)).toBe(false);
    expect(t.size).toBe(334);
    expect([...t.values()]).toHaveLength(334);
    for (const bad of [0, -1, 0.5, Number.NaN, 2 ** 60]) expect(t.get(bad)).toBeUndefined();
  });

  it('reuses the last freed slot with the next generation', () => {
    const t = new GenerationalHandleTable<number>();
    const a = t.add(1);
    const b = t.add(2);
    t.remove(a);
    const c = t.add(3);
    expect(c).toBe(a + GenerationalHandleTable.SLOTS);
    expect(t.get(b)).toBe(2);
    expect(t.get(c)).toBe(3);
  });
});
