/** vmmkit's allocator under a memory limit (Note [vmmkit allocator], point 9). */
import { describe, expect, it } from 'vitest';
import { AllocatorOutOfMemoryError, type SegmentEvent } from '../../../src/alloc/allocator.js';
import { VmmkitAllocator, type VmmkitOptions } from '../../../src/alloc/vmmkit/index.js';
import { VmmError } from '../../../src/core/errors.js';
import { thrown } from '../../support/thrown.js';
import { faultySetup, MiB, smallDevice, state } from './helpers.js';

function setup(memoryLimit: number | undefined, options: VmmkitOptions = {}, pages = 64) {
  const s = faultySetup([smallDevice(pages)]);
  const events: SegmentEvent[] = [];
  const alloc = new VmmkitAllocator(
    { runtime: s.rt, device: 0, onSegmentEvent: (e) => events.push(e), memoryLimit },
    options,
  );
  return { ...s, alloc, events };
}

const oomOf = (f: () => unknown) => thrown(f, AllocatorOutOfMemoryError, 'no out-of-memory error');

describe('VmmkitAllocator under a memory limit', () => {
  it('never holds more than the limit: a growth past it fails before the driver, and changes nothing', () => {
    const p = setup(32 * MiB, { prefetchPages: 0 });
    const a = p.alloc.malloc(20 * MiB, 0);
    const before = state(p.rt, p.inner, p.machine);
    const stats = { ...p.alloc.stats };
    p.faulty.arm(0);
    const e = oomOf(() => p.alloc.malloc(16 * MiB, 0)); // 20 + 16 > 32, nothing cached to give back
    expect(p.faulty.log).toEqual([]);
    expect([e.reservedBytes, e.limitBytes, e.freeBytes, e.freePieces]).toEqual([20 * MiB, 32 * MiB, 0, 0]);
    expect(state(p.rt, p.inner, p.machine)).toEqual(before);
    expect({ ...p.alloc.stats, ooms: 0 }).toEqual(stats);
    p.alloc.malloc(12 * MiB, 0); // 32 of 32
    expect(p.alloc.stats.reservedBytes).toBe(32 * MiB);
    p.alloc.free(a);
    p.alloc.dispose();
  });

  it('gives back idle and pooled memory first (its own release and retry), then grows', () => {
    const p = setup(32 * MiB, { prefetchPages: 0 });
    p.alloc.free(p.alloc.malloc(20 * MiB, 0)); // idle, young: not moved by the budget rule
    const b = p.alloc.malloc(16 * MiB, 1); // 20 + 16 > 32: the idle chunk goes, then 16 fits
    expect(p.alloc.stats.reservedBytes).toBeLessThanOrEqual(32 * MiB);
    expect(p.events.map((e) => [e.action, e.size / MiB, e.stream])).toEqual([
      ['segment_map', 20, 0],
      ['segment_unmap', 20, 0],
      ['segment_map', 16, 1],
    ]);
    p.rt.write(0, b + 16 * MiB - 4, Uint8Array.of(1, 2, 3, 4));
    expect(p.alloc.stats.ooms).toBe(0);
    p.alloc.dispose();
  });

  it('maps ahead only within the limit', () => {
    const ahead = setup(undefined, { minBudget: 100 * MiB });
    ahead.alloc.malloc(3 * MiB, 0); // two pages, mapped ahead to eight
    expect(ahead.alloc.stats.reservedBytes).toBe(16 * MiB);
    const capped = setup(6 * MiB, { minBudget: 100 * MiB });
    capped.alloc.malloc(3 * MiB, 0);
    expect(capped.alloc.stats.reservedBytes).toBe(4 * MiB);
    ahead.alloc.dispose();
    capped.alloc.dispose();
  });

  it('the error counts the free bytes held: free extents on mapped pages, pooled chunks', () => {
    const p = setup(20 * MiB, { prefetchPages: 0 });
    p.alloc.malloc(3 * MiB, 0); // pages 0-1: 1 MiB free after it
    const e = oomOf(() => p.alloc.malloc(18 * MiB, 0));
    expect([e.reservedBytes, e.freeBytes, e.freePieces, e.largestFreeBytes]).toEqual([4 * MiB, MiB, 1, MiB]);
    p.alloc.dispose();
  });

  it('refuses a memory limit that is not a byte count', () => {
    const p = faultySetup([smallDevice(4)]);
    expect(() => new VmmkitAllocator({ runtime: p.rt, device: 0, memoryLimit: -1 })).toThrow(VmmError);
  });
});
