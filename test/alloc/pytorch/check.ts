import { expect } from 'vitest';
import { roundSize } from '../../../src/alloc/pytorch/sizes.js';
import type { Harness } from './helpers.js';

/** What the test knows of one live block. */
export interface LiveBlock {
  readonly size: number;
  readonly stream: number;
  readonly tag: number;
}

/** Byte j of a block tagged `tag`: a pattern that tells blocks and offsets apart. */
const byteAt = (tag: number, j: number) => (tag * 13 + j * 7) & 255;

/** The first and last few bytes of a block: what is written and read back through it. */
function probes(size: number): [number, number][] {
  const h = Math.min(size, 8);
  return [
    [0, h],
    [size - h, h],
  ];
}

export function writeBlock(h: Harness, address: number, b: LiveBlock): void {
  for (const [at, n] of probes(b.size)) {
    const bytes = new Uint8Array(n);
    for (let j = 0; j < n; j++) bytes[j] = byteAt(b.tag, at + j);
    h.rt.write(0, address + at, bytes);
  }
}

/**
 * Everything a shadow of the live blocks can check against the allocator:
 * its blocks never overlap and tile its segments, its segments are the ones
 * its events announced and are mapped read-write, its stats are the sums,
 * and every live block's bytes read back.
 */
export function checkAgainstShadow(
  h: Harness,
  live: ReadonlyMap<number, LiveBlock>,
  /** False right after a failed release: memory the driver would not take back is held outside the segments. */
  deviceUseIsReserved = true,
): void {
  const { alloc, rt } = h;
  const settings = alloc.settings;
  const anyDivisions = settings.roundupPower2Divisions.some((d) => d > 1);
  const snap = alloc.snapshot();
  const allocated = new Map<number, { size: number; requested: number }>();
  let prevEnd = 0;
  let total = 0;
  for (const seg of snap) {
    expect(seg.address, 'segments overlap').toBeGreaterThanOrEqual(prevEnd);
    prevEnd = seg.address + seg.totalSize;
    total += seg.totalSize;
    let at = seg.address;
    for (const b of seg.blocks) {
      expect(b.address, 'blocks tile their segment').toBe(at);
      at += b.size;
      if (b.state === 'active_allocated')
        allocated.set(b.address, { size: b.size, requested: b.requestedSize });
    }
    expect(at).toBe(seg.address + seg.totalSize);
    // The whole segment is mapped, and device 0 may read and write it.
    for (let va = seg.address; va < seg.address + seg.totalSize; ) {
      const m = rt.mappingAt(va);
      expect(m, `unmapped memory at 0x${va.toString(16)} inside a segment`).toBeDefined();
      expect(m!.accessOf(0)).toBe(3);
      va = m!.end;
    }
  }
  // The segments are what the events announced.
  let announced = 0;
  for (const e of h.events)
    announced += e.action === 'segment_alloc' || e.action === 'segment_map' ? e.size : -e.size;
  expect(total).toBe(announced);
  expect(alloc.stats.reservedBytes).toBe(announced);
  if (deviceUseIsReserved) expect(h.machine.devices[0].pool.used).toBe(announced);
  else expect(h.machine.devices[0].pool.used).toBeGreaterThanOrEqual(announced);
  // The live blocks are exactly the shadow's.
  expect([...allocated.keys()].sort((a, b) => a - b)).toEqual([...live.keys()].sort((a, b) => a - b));
  let allocatedBytes = 0;
  let requested = 0;
  for (const [address, b] of live) {
    const got = allocated.get(address)!;
    expect(got.requested).toBe(b.size);
    expect(got.size).toBeGreaterThanOrEqual(roundSize(b.size, settings.roundupPower2Divisions, anyDivisions));
    allocatedBytes += got.size;
    requested += b.size;
    for (const [at, n] of probes(b.size)) {
      const bytes = new Uint8Array(n);
      rt.read(0, address + at, bytes);
      for (let j = 0; j < n; j++) expect(bytes[j], 'bytes read back').toBe(byteAt(b.tag, at + j));
    }
  }
  expect(alloc.stats.allocatedBytes).toBe(allocatedBytes);
  expect(alloc.stats.requestedBytes).toBe(requested);
  expect(alloc.stats.liveBlocks).toBe(live.size);
  expect(alloc.stats.peakReservedBytes).toBeGreaterThanOrEqual(alloc.stats.reservedBytes);
}

/**
 * After a driver step failed and faults were disarmed: the allocator agrees with its live blocks
 * at once (device memory the driver would not take back may be held outside the segments) and
 * after a later emptyCache (which finishes any release that failed).
 */
export function checkAfterFault(h: Harness, live: ReadonlyMap<number, LiveBlock>): void {
  checkAgainstShadow(h, live, false);
  h.alloc.emptyCache();
  checkAgainstShadow(h, live);
}

/** The live blocks freed, the cache emptied, everything disposed: nothing may stay on the machine. */
export function givesEverythingBack(h: Harness, live: Iterable<number>, at: string): void {
  for (const address of live) h.alloc.free(address);
  h.alloc.emptyCache();
  expect(h.alloc.stats.reservedBytes, at).toBe(0);
  h.alloc.dispose();
  h.rt.dispose();
  expect(h.machine.liveAllocations, at).toBe(0);
  expect(h.machine.devices[0].pool.used, at).toBe(0);
}

/** Free everything, empty the cache, dispose: the runtime must hold nothing. */
export function checkTeardown(h: Harness, live: Iterable<number>): void {
  for (const address of live) h.alloc.free(address);
  h.alloc.emptyCache();
  expect(h.alloc.stats.reservedBytes).toBe(0);
  expect(h.rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  h.alloc.dispose();
  expect(h.rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  expect(h.rt.memoryInfo(0).free).toBe(h.rt.memoryInfo(0).total);
  expect(h.machine.liveAllocations).toBe(0);
}
