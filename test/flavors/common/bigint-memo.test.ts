import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BigIntMemo } from '../../../src/flavors/common/args.js';

describe('BigIntMemo', () => {
  it('gives BigInt(n) for handle values that step evenly (Note [Handle steps]), and for any after', () => {
    const memo = new BigIntMemo();
    const slots = 2 ** 24;
    for (let generation = 0; generation < 50; generation++) {
      const id = generation * slots + 1;
      expect(memo.toBigInt(id)).toBe(BigInt(id));
      expect(memo.toNumber(BigInt(id))).toBe(id);
    }
    expect(memo.toBigInt(7)).toBe(7n);
    expect(memo.toBigInt(Number.MAX_SAFE_INTEGER)).toBe(BigInt(Number.MAX_SAFE_INTEGER));
  });

  it('agrees with BigInt and toCount over any mix of conversions both ways', () => {
    const value = fc.oneof(
      fc.integer({ min: 0, max: 40 }).map((k) => k * 2 ** 24 + 1),
      fc.integer({ min: 0, max: 2 ** 21 }).map((k) => k * 2 ** 21),
      fc.maxSafeNat(),
    );
    const op = fc.record({ toBig: fc.boolean(), n: value });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const memo = new BigIntMemo();
        for (const { toBig, n } of ops) {
          if (toBig) expect(memo.toBigInt(n)).toBe(BigInt(n));
          else expect(memo.toNumber(BigInt(n))).toBe(n);
        }
      }),
      { seed: 23, numRuns: 300 },
    );
  });
});
