import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AllocatorOutOfMemoryError } from '../../../src/alloc/allocator.js';
import { checkAgainstShadow, checkTeardown, type LiveBlock, writeBlock } from './check.js';
import { harness, type Kind, MiB, smallDevice } from './helpers.js';

/**
 * Random malloc/free/emptyCache sequences on a 96 MiB device, against a
 * shadow of the live blocks (check.ts says what is compared after each step).
 * Sizes cover both pools and every get_allocation_size case; three streams;
 * settings vary max_split_size, power-of-two rounding and garbage collection
 * under a memory fraction.
 */
const size = fc.oneof(
  fc.integer({ min: 1, max: 4096 }),
  fc.integer({ min: 4097, max: MiB }),
  fc.integer({ min: MiB + 1, max: 12 * MiB }),
  fc.integer({ min: 12 * MiB, max: 40 * MiB }),
);

const op = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('malloc' as const),
      size,
      stream: fc.integer({ min: 0, max: 2 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('emptyCache' as const) }) },
);

const settings = fc.record({
  maxSplitSize: fc.constantFrom(Number.POSITIVE_INFINITY, 20 * MiB, 32 * MiB),
  roundupPower2Divisions: fc.constantFrom(new Array(16).fill(0), new Array(16).fill(4), [
    0,
    8,
    2,
    ...new Array(13).fill(0),
  ]),
  garbageCollectionThreshold: fc.constantFrom(0, 0.5),
  memoryFraction: fc.constantFrom(1, 0.75),
});

function run(kind: Kind, s: fc.Arbitrary<unknown>) {
  fc.assert(
    fc.property(s, fc.array(op, { minLength: 20, maxLength: 150 }), (st, ops) => {
      const h = harness(kind, st as object, smallDevice(96 * MiB));
      const live = new Map<number, LiveBlock>();
      let tag = 0;
      for (const o of ops) {
        if (o.kind === 'malloc') {
          let address: number;
          try {
            address = h.alloc.malloc(o.size, o.stream);
          } catch (e) {
            expect(e).toBeInstanceOf(AllocatorOutOfMemoryError);
            checkAgainstShadow(h, live);
            continue;
          }
          expect(live.has(address)).toBe(false);
          const b = { size: o.size, stream: o.stream, tag: ++tag };
          live.set(address, b);
          writeBlock(h, address, b);
        } else if (o.kind === 'free') {
          if (live.size === 0) continue;
          const address = [...live.keys()][o.pick % live.size];
          h.alloc.free(address);
          live.delete(address);
        } else {
          h.alloc.emptyCache();
        }
        checkAgainstShadow(h, live);
      }
      checkTeardown(h, live.keys());
    }),
    { numRuns: 60 },
  );
}

describe('against a shadow model', () => {
  it('PytorchNativeAllocator', () => run('native', settings));
  it('PytorchExpandableAllocator', () => run('expandable', settings));
});
