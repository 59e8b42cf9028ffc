import fc from 'fast-check';
import { expect, it } from 'vitest';
import { AllocatorOutOfMemoryError, type SegmentEvent } from '../../../src/alloc/allocator.js';
import { VmmkitAllocator, type VmmkitOptions } from '../../../src/alloc/vmmkit/index.js';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { Runtime } from '../../../src/core/runtime.js';
import { MiB, smallDevice } from './helpers.js';

/**
 * Random malloc / free / emptyCache on a small device (64 pages of 2 MiB)
 * against a shadow model of the live blocks: after every step no two live
 * blocks overlap, each block's first and last bytes (written at malloc)
 * read back, the allocator's counters equal the shadow's sums, the memory
 * it says it holds is what the device has given out, and a freed block's
 * address is handed out again only to its own stream (until an emptyCache,
 * after which an emptied arena's addresses may come back). At the end,
 * everything goes back (runtime stats zero, device free == total).
 */
const PAGES = 64;
const SIGNATURE = 24;

interface Live {
  readonly address: number;
  readonly size: number;
  readonly rounded: number;
  readonly stream: number;
  readonly seed: number;
}

type Op =
  | { readonly op: 'malloc'; readonly size: number; readonly stream: number }
  | { readonly op: 'free'; readonly pick: number }
  | { readonly op: 'empty' };

const sizeArb = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 64 * 1024 }), weight: 4 },
  { arbitrary: fc.integer({ min: 64 * 1024, max: 4 * MiB }), weight: 3 },
  { arbitrary: fc.integer({ min: 4 * MiB, max: 48 * MiB }), weight: 2 },
  { arbitrary: fc.integer({ min: 48 * MiB, max: 140 * MiB }), weight: 1 },
  { arbitrary: fc.constantFrom(512, 513, 2 * MiB, 2 * MiB + 1, 4 * MiB - 512), weight: 1 },
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant('malloc' as const),
      size: sizeArb,
      stream: fc.constantFrom(0, 0, 0, 5),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant('free' as const), pick: fc.nat() }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('empty' as const) }), weight: 1 },
);
const optionsArb: fc.Arbitrary<VmmkitOptions> = fc
  .record({
    slack: fc.constantFrom(0, 0.01, 0.5),
    minIdleAge: fc.constantFrom(0, 4, 256),
    hardOver: fc.constantFrom(Number.POSITIVE_INFINITY, 0.01),
    prefetchPages: fc.constantFrom(0, 8),
    prefetchSlack: fc.constantFrom(0, 0.1, 1000),
    maxChunkPages: fc.constantFrom(1, 4, 512),
    smallSize: fc.constantFrom(64 * 1024, MiB),
    mediumSize: fc.constantFrom(MiB, 4 * MiB),
    fillSlivers: fc.boolean(),
    alignWholePages: fc.boolean(),
    mappedFirst: fc.constantFrom('grow' as const, 'miss' as const, 'never' as const),
  })
  .map(({ hardOver, ...o }) => ({ ...o, hardSlack: o.slack + hardOver }));

function signature(seed: number, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7 + 1) & 0xff;
  return b;
}

function run(options: VmmkitOptions, ops: readonly Op[]): void {
  const machine = createMachine({ devices: [smallDevice(PAGES)] });
  const rt = new Runtime(machine.spawn());
  const events: SegmentEvent[] = [];
  const alloc = new VmmkitAllocator(
    { runtime: rt, device: 0, onSegmentEvent: (e) => events.push(e) },
    options,
  );
  const live: Live[] = [];
  /** The stream each address range was last handed to (block start addresses). */
  const owner = new Map<number, number>();
  let requested = 0;
  let peakRequested = 0;
  let allocated = 0;
  let peakAllocated = 0;
  let ooms = 0;
  let seed = 0;
  const check = () => {
    const sorted = [...live].sort((a, b) => a.address - b.address);
    for (let i = 1; i < sorted.length; i++)
      expect(sorted[i].address, 'live blocks overlap').toBeGreaterThanOrEqual(
        sorted[i - 1].address + sorted[i - 1].rounded,
      );
    for (const b of live) {
      const n = Math.min(SIGNATURE, b.rounded);
      const head = new Uint8Array(n);
      rt.read(0, b.address, head);
      expect(head).toEqual(signature(b.seed, n));
      const tail = new Uint8Array(n);
      rt.read(0, b.address + b.rounded - n, tail);
      expect(tail).toEqual(signature(b.seed + 1, n));
    }
    const s = alloc.stats;
    expect(s.liveBlocks).toBe(live.length);
    expect(s.allocatedBytes).toBe(allocated);
    expect(s.peakAllocatedBytes).toBe(peakAllocated);
    expect(s.requestedBytes).toBe(requested);
    expect(s.peakRequestedBytes).toBe(peakRequested);
    expect(s.ooms).toBe(ooms);
    const info = rt.memoryInfo(0);
    expect(s.reservedBytes).toBe(info.total - info.free);
    expect(s.peakReservedBytes).toBeGreaterThanOrEqual(s.reservedBytes);
    // Every live byte sits on a mapped page, so what is held covers what is handed out.
    expect(s.reservedBytes).toBeGreaterThanOrEqual(s.allocatedBytes);
  };
  for (const o of ops) {
    if (o.op === 'malloc') {
      let address: number;
      try {
        address = alloc.malloc(o.size, o.stream);
      } catch (e) {
        expect(e).toBeInstanceOf(AllocatorOutOfMemoryError);
        ooms++;
        check();
        continue;
      }
      const rounded = Math.max(512, Math.ceil(o.size / 512) * 512);
      const b: Live = { address, size: o.size, rounded, stream: o.stream, seed: seed++ };
      const prev = owner.get(address);
      if (prev !== undefined) expect(prev, 'an address crossed streams').toBe(o.stream);
      owner.set(address, o.stream);
      const n = Math.min(SIGNATURE, rounded);
      rt.write(0, address + rounded - n, signature(b.seed + 1, n));
      rt.write(0, address, signature(b.seed, n));
      live.push(b);
      requested += o.size;
      peakRequested = Math.max(peakRequested, requested);
      allocated += rounded;
      peakAllocated = Math.max(peakAllocated, allocated);
    } else if (o.op === 'free') {
      if (live.length === 0) continue;
      const i = o.pick % live.length;
      const b = live[i];
      live[i] = live[live.length - 1];
      live.pop();
      alloc.free(b.address);
      requested -= b.size;
      allocated -= b.rounded;
    } else {
      // empty_cache is where PyTorch too lets memory change streams (E7): an emptied arena's addresses may be reserved again.
      alloc.emptyCache();
      owner.clear();
    }
    check();
  }
  // Mapped bytes by the events equal what the arenas have mapped (all of it device memory held or less).
  const mapped = events.reduce((t, e) => t + (e.action === 'segment_map' ? e.size : -e.size), 0);
  expect(mapped).toBeGreaterThanOrEqual(0);
  expect(mapped).toBeLessThanOrEqual(alloc.stats.reservedBytes);
  for (const b of live) alloc.free(b.address);
  alloc.emptyCache();
  expect(alloc.stats.reservedBytes).toBe(0);
  expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  alloc.dispose();
  const info = rt.memoryInfo(0);
  expect(info.free).toBe(info.total);
  rt.dispose();
}

it('VmmkitAllocator agrees with a shadow model over random malloc/free/emptyCache', () => {
  fc.assert(
    fc.property(optionsArb, fc.array(opArb, { minLength: 20, maxLength: 120 }), (options, ops) =>
      run(options, ops),
    ),
    { numRuns: 120 },
  );
});

it('dispose with live blocks gives everything back', () => {
  fc.assert(
    fc.property(fc.array(sizeArb, { minLength: 1, maxLength: 30 }), (sizes) => {
      const machine = createMachine({ devices: [smallDevice(PAGES)] });
      const rt = new Runtime(machine.spawn());
      const alloc = new VmmkitAllocator({ runtime: rt, device: 0 });
      for (const [i, s] of sizes.entries()) {
        try {
          alloc.malloc(s, i % 3);
        } catch (e) {
          expect(e).toBeInstanceOf(AllocatorOutOfMemoryError);
        }
      }
      alloc.dispose();
      expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
      const info = rt.memoryInfo(0);
      expect(info.free).toBe(info.total);
    }),
    { numRuns: 60 },
  );
});
