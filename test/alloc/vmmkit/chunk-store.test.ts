import { describe, expect, it } from 'vitest';
import { ChunkStore } from '../../../src/alloc/vmmkit/chunk-store.js';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { Runtime } from '../../../src/core/runtime.js';
import { G, smallDevice } from './helpers.js';

function store() {
  const rt = new Runtime(createMachine({ devices: [smallDevice(64)] }).spawn());
  return { rt, s: new ChunkStore(rt, 0, G) };
}

describe('ChunkStore (chunks of any page count)', () => {
  it('creates handles of exactly the pages asked for and counts what it holds', () => {
    const { rt, s } = store();
    const a = s.create(3);
    const b = s.create(1);
    expect([a.pages, a.bytes, b.bytes]).toEqual([3, 3 * G, G]);
    expect([s.held, s.peakHeld, s.creates]).toEqual([4 * G, 4 * G, 2]);
    s.release(a);
    expect([s.held, s.peakHeld, s.releases, rt.stats().handles]).toEqual([G, 4 * G, 1, 1]);
    s.release(b);
  });

  it('takePooled gives the largest pooled chunk that fits, and nothing when none fits', () => {
    const { s } = store();
    const [c1, c4, c2] = [s.create(1), s.create(4), s.create(2)];
    for (const c of [c1, c4, c2]) s.putPooled(c);
    expect(s.poolBytes).toBe(7 * G);
    expect(s.takePooled(3)).toBe(c2);
    expect(s.takePooled(3)).toBe(c1);
    expect(s.takePooled(3)).toBeUndefined();
    expect(s.poolBytes).toBe(4 * G);
    expect(s.takeAnyPooled()).toBe(c4);
    expect([s.poolBytes, s.takeAnyPooled()]).toEqual([0, undefined]);
  });

  it('largestIdle: the largest that fits among chunks idle long enough, the oldest among equals', () => {
    const { s } = store();
    const [a, b, c, d] = [s.create(2), s.create(2), s.create(5), s.create(1)];
    s.clock = 10;
    s.markIdle(a);
    s.clock = 20;
    s.markIdle(b);
    s.markIdle(c);
    s.clock = 30;
    s.markIdle(d);
    expect(s.idleBytes).toBe(10 * G);
    expect(s.largestIdle(4)).toBe(a); // a and b fit and are largest; a is older
    expect(s.largestIdle(9)).toBe(c);
    expect(s.largestIdle(9, 15)).toBe(a); // only a has been idle 15 mallocs
    expect(s.largestIdle(1, 15)).toBeUndefined();
    expect(s.largestIdle(1)).toBe(d);
    s.unmarkIdle(a);
    s.unmarkIdle(a); // twice is harmless
    expect(s.largestIdle(4)).toBe(b);
    expect(s.idleChunks()).toEqual([b, c, d]);
    expect(s.idleBytes).toBe(8 * G);
  });
});
