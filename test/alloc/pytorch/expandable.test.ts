import { describe, expect, it, vi } from 'vitest';
import { AllocatorOutOfMemoryError } from '../../../src/alloc/allocator.js';
import { harness, MiB, smallDevice } from './helpers.js';

const events = (h: ReturnType<typeof harness>) =>
  h.events.map((e) => [e.action, (e.address - h.events[0].address) / MiB, e.size / MiB, e.stream]);

describe('PytorchExpandableAllocator', () => {
  it('E2/E3: one reserved range per (pool, stream) of pages * ceil(1.125 * total / page)', () => {
    const h = harness('expandable'); // 64 MiB: ranges of 72 MiB (36 small pages) and 80 MiB (4 large pages)
    h.alloc.malloc(1000, 0);
    h.alloc.malloc(2000, 0);
    h.alloc.malloc(1000, 7);
    h.alloc.malloc(3 * MiB, 0);
    expect([...h.rt.reservations()].map((r) => r.size / MiB)).toEqual([72, 72, 80]);
    expect(h.alloc.name).toBe('pytorch-expandable');
  });

  it('E3: on the H200 (150,109,880,320 bytes) the ranges are 80,526 small pages and 8,053 large ones', () => {
    const h = harness('expandable', {}, 'H200');
    h.alloc.malloc(100, 0);
    h.alloc.malloc(100 * MiB, 0);
    expect([...h.rt.reservations()].map((r) => r.size)).toEqual([80_526 * 2 * MiB, 8_053 * 20 * MiB]);
    h.alloc.dispose();
  });

  it('E4: maps only the shortfall at the frontier, in whole pages, keeping blocks contiguous', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    const a = h.alloc.malloc(3 * MiB, 0); // one 20 MiB page
    const b = h.alloc.malloc(30 * MiB, 0); // 17 MiB free at the frontier: 13 more, one page
    expect(b).toBe(a + 3 * MiB);
    const s = h.alloc.malloc(MiB, 0);
    const t = h.alloc.malloc(MiB, 0);
    const u = h.alloc.malloc(MiB, 0); // a second small page
    expect([t - s, u - t]).toEqual([MiB, MiB]);
    expect(h.alloc.stats.reservedBytes).toBe(44 * MiB);
    expect(h.events.map((e) => [e.action, e.size / MiB])).toEqual([
      ['segment_map', 20],
      ['segment_map', 20],
      ['segment_map', 2],
      ['segment_map', 2],
    ]);
    expect(h.events[1].address).toBe(h.events[0].address + 20 * MiB);
  });

  it('E5: each page is its own create and map; one setAccess per newly mapped range', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    h.faults.arm(0);
    h.alloc.malloc(50 * MiB, 0);
    expect(h.faults.log).toEqual(['reserve', 'create', 'create', 'create', 'map', 'map', 'map', 'setAccess']);
    expect(h.rt.stats().mappings).toBe(3);
  });

  it('E6: blocks split at 512 bytes in the large pool too', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    const a = h.alloc.malloc(21 * MiB, 0); // two pages mapped, 19 MiB free after the block
    expect(h.alloc.stats.allocatedBytes).toBe(21 * MiB);
    expect(h.alloc.malloc(18 * MiB, 0)).toBe(a + 21 * MiB); // 1 MiB left: split (native would not, N7)
    expect(h.alloc.stats.allocatedBytes).toBe(39 * MiB);
    const blocks = h.alloc.snapshot()[0].blocks.map((b) => [b.size / MiB, b.state]);
    expect(blocks).toEqual([
      [21, 'active_allocated'],
      [18, 'active_allocated'],
      [1, 'inactive'],
    ]);
    expect(h.alloc.stats.reservedBytes).toBe(40 * MiB);
  });

  it('E6: best fit ranks by expandable size, so the frontier block is used last', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    const hole = h.alloc.malloc(8 * MiB, 0);
    h.alloc.malloc(5 * MiB, 0); // the frontier block is now 7 MiB free + the unmapped rest
    h.alloc.free(hole);
    expect(h.alloc.malloc(6 * MiB, 0)).toBe(hole); // the 8 MiB hole, not the smaller 7 MiB frontier
    expect(h.alloc.stats.reservedBytes).toBe(20 * MiB);
  });

  it('E7: free never unmaps; emptyCache unmaps pages wholly inside free blocks, after a synchronize', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    const sync = vi.spyOn(h.rt, 'synchronize');
    const a = h.alloc.malloc(3 * MiB, 0);
    const b = h.alloc.malloc(30 * MiB, 0); // pages 0 and 1
    h.alloc.free(b);
    expect(h.rt.stats().mappings).toBe(2);
    expect(h.events.every((e) => e.action === 'segment_map')).toBe(true);
    h.alloc.emptyCache(); // page 0 holds a: only page 1 goes
    expect(sync).toHaveBeenCalledTimes(1);
    expect(h.rt.stats().mappings).toBe(1);
    expect(h.alloc.stats.reservedBytes).toBe(20 * MiB);
    h.alloc.free(a);
    h.alloc.emptyCache(); // the segment is wholly unmapped now: its range goes too
    expect(events(h)).toEqual([
      ['segment_map', 0, 20, 0],
      ['segment_map', 20, 20, 0],
      ['segment_unmap', 20, 20, 0],
      ['segment_unmap', 0, 20, 0],
    ]);
    expect(h.rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  });

  it('E4: an unmapped gap is filled again before the frontier grows, merging with the free block before it', () => {
    const h = harness('expandable', {}, smallDevice(256 * MiB));
    const a = h.alloc.malloc(10 * MiB, 0);
    const b = h.alloc.malloc(30 * MiB, 0); // [10, 40)
    h.alloc.malloc(15 * MiB, 0); // [40, 55): page 2
    h.alloc.free(b);
    h.alloc.emptyCache(); // page 1 ([20, 40)) goes; [10, 20) stays mapped and free
    const c = h.alloc.malloc(25 * MiB, 0);
    expect(c).toBe(a + 10 * MiB);
    expect(events(h).slice(3)).toEqual([
      ['segment_unmap', 20, 20, 0],
      ['segment_map', 20, 20, 0],
    ]);
  });

  it('E4: a request over free, unmapped, free, unmapped ranges maps each gap in turn (Note [Plan, then map])', () => {
    const setup = () => {
      const h = harness('expandable', {}, smallDevice(256 * MiB));
      const l0 = h.alloc.malloc(5 * MiB, 0); // [0, 5) of page 0
      const f1 = h.alloc.malloc(35 * MiB, 0); // [5, 40): page 1
      const m = h.alloc.malloc(20 * MiB, 0); // [40, 60): page 2
      const f3 = h.alloc.malloc(20 * MiB, 0); // [60, 80): page 3
      h.alloc.malloc(5 * MiB, 0); // [80, 85): page 4
      h.alloc.free(f1);
      h.alloc.free(f3);
      h.alloc.emptyCache(); // pages 1 and 3 go
      h.alloc.free(m); // page 2: free and mapped, between two gaps
      return { h, l0 };
    };
    const { h, l0 } = setup();
    const mapped = h.events.length;
    h.faults.arm(0);
    expect(h.alloc.malloc(65 * MiB, 0)).toBe(l0 + 5 * MiB);
    expect(h.faults.log).toEqual(['create', 'map', 'setAccess', 'create', 'map', 'setAccess']);
    expect(events(h).slice(mapped)).toEqual([
      ['segment_map', 20, 20, 0],
      ['segment_map', 60, 20, 0],
    ]);
    expect(h.alloc.snapshot()[0].blocks.map((b) => [b.size / MiB, b.state])).toEqual([
      [5, 'active_allocated'],
      [65, 'active_allocated'],
      [10, 'inactive'],
      [5, 'active_allocated'],
      [15, 'inactive'],
    ]);
    // The second gap failing takes back the first one too: all as before.
    for (let k = 1; k <= 6; k++) {
      const again = setup();
      const before = {
        snap: again.h.alloc.snapshot(),
        rt: again.h.rt.stats(),
        stats: { ...again.h.alloc.stats },
      };
      again.h.faults.kind = 'invalid-value';
      again.h.faults.arm(k);
      expect(() => again.h.alloc.malloc(65 * MiB, 0)).toThrow();
      expect({
        snap: again.h.alloc.snapshot(),
        rt: again.h.rt.stats(),
        stats: { ...again.h.alloc.stats },
      }).toEqual(before);
    }
  });

  it('E7: the OOM path unmaps another stream’s free pages so this stream can map them', () => {
    const h = harness('expandable'); // 64 MiB
    h.alloc.free(h.alloc.malloc(40 * MiB, 0));
    h.alloc.malloc(40 * MiB, 1); // creating its second page fails: 24 MiB free
    expect(events(h).map(([action, , size, stream]) => [action, size, stream])).toEqual([
      ['segment_map', 40, 0],
      ['segment_unmap', 40, 0],
      ['segment_map', 40, 1],
    ]);
    expect(h.alloc.stats.reservedBytes).toBe(40 * MiB);
    expect(h.alloc.stats.allocRetries).toBe(1);
    // Stream 0's range went too (wholly unmapped); stream 1's remains.
    expect(h.rt.stats().reservations).toBe(1);
  });

  it('E5: out of memory in the middle of mapping takes back the pages made, then fails as PyTorch does', () => {
    const h = harness('expandable');
    h.alloc.malloc(30 * MiB, 0); // two pages
    const before = { rt: h.rt.stats(), used: h.machine.devices[0].pool.used, snap: h.alloc.snapshot() };
    expect(() => h.alloc.malloc(60 * MiB, 1)).toThrow(AllocatorOutOfMemoryError);
    expect({ rt: h.rt.stats(), used: h.machine.devices[0].pool.used, snap: h.alloc.snapshot() }).toEqual(
      before,
    );
    expect(h.alloc.stats.ooms).toBe(1);
    expect(h.events.map((e) => e.action)).toEqual(['segment_map']);
  });

  it('dispose gives back every page and range, live blocks included', () => {
    const h = harness('expandable');
    h.alloc.malloc(100, 0);
    h.alloc.malloc(30 * MiB, 2);
    h.alloc.dispose();
    expect(h.rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    expect(h.rt.memoryInfo(0).free).toBe(h.rt.memoryInfo(0).total);
  });
});
