import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MinMaxBuckets } from '../../src/report/downsample.js';

/** Updates (event, value) in event order, as a replay makes them. */
const updates = fc
  .array(fc.tuple(fc.nat(50), fc.integer({ min: -1e6, max: 1e6 })), { minLength: 1, maxLength: 300 })
  .map((steps) => {
    let event = -1;
    return steps.map(([gap, value]) => {
      event += gap === 0 && event >= 0 ? 0 : gap;
      return [event, value] as const;
    });
  });

describe('MinMaxBuckets', () => {
  it('keeps the exact maximum and minimum of any series, whatever the bucket count', () => {
    fc.assert(
      fc.property(
        updates,
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: -10, max: 10 }),
        (ups, buckets, initial) => {
          const events = ups[ups.length - 1][0] + 1 + 5;
          const m = new MinMaxBuckets(events, buckets, initial);
          for (const [e, v] of ups) m.set(e, v);
          const s = m.finish();
          const drawn = [...s.first, ...s.second];
          const values = [initial, ...ups.map(([, v]) => v)];
          expect(Math.max(...drawn)).toBe(Math.max(...values));
          expect(Math.min(...drawn)).toBe(Math.min(...values));
          expect(s.max).toBe(Math.max(...values));
          expect(s.first.length).toBeLessThanOrEqual(buckets);
        },
      ),
    );
  });

  it('gives each bucket the extremes of its own events and the value carried into it', () => {
    const m = new MinMaxBuckets(10, 5, 0); // width 2
    m.set(0, 5);
    m.set(1, 3);
    m.set(4, 9); // bucket 1 (events 2, 3) carries 3 only
    m.set(5, 1);
    const s = m.finish();
    expect(m.width).toBe(2);
    expect([...s.first]).toEqual([0, 3, 9, 1, 1]);
    expect([...s.second]).toEqual([5, 3, 1, 1, 1]);
    expect(s.maxEvent).toBe(4);
  });

  it('draws the minimum first when it came first, the maximum first otherwise', () => {
    const up = new MinMaxBuckets(4, 1, 0);
    up.set(1, 10);
    expect([up.finish().first[0], up.finish().second[0]]).toEqual([0, 10]);
    const down = new MinMaxBuckets(4, 1, 10);
    down.set(1, 0);
    const s = down.finish();
    expect([s.first[0], s.second[0]]).toEqual([10, 0]);
  });

  it('keeps the peak of a million events in 2000 buckets', () => {
    const n = 1_000_000;
    const m = new MinMaxBuckets(n, 2000, 0);
    let x = 1;
    let peak = 0;
    for (let i = 0; i < n; i++) {
      x = (x * 48271) % 2147483647;
      const v = x % 1000003;
      if (v > peak) peak = v;
      m.set(i, v);
    }
    const s = m.finish();
    expect(s.first.length).toBe(2000);
    expect(Math.max(...s.first, ...s.second)).toBe(peak);
  });

  it('rejects a bucket count below one', () => {
    expect(() => new MinMaxBuckets(10, 0)).toThrow(RangeError);
  });
});
