/**
 * Bad input gets a vendor code, never an exception: every HIP and ACL
 * function called with garbage arguments returns (the CUDA flavor has the
 * same test in test/flavors/cuda/api.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { ACL_FUNCTIONS, createAcl, createHip, HIP_FUNCTIONS } from '../../src/index.js';

const GARBAGE: readonly unknown[][] = [
  [],
  [undefined, undefined, undefined, undefined, undefined, undefined],
  [null, null, null, null, null, null],
  ['x', 'y', 'z', {}, [], () => 0],
  [-1, -1n, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 64, 2n ** 70n],
  [{ value: 0n }, 0x7000_0000_0000n, 2 ** 21, { type: 1, location: { type: 1, id: 99 } }, 0, 0],
  [{ value: 0 }, { value: 0 }, { value: 0 }, { value: 0 }, { value: 0 }, { value: 0 }],
  [new Uint8Array(4), 1n << 63n, -5, Symbol('s'), { location: null }, [null]],
];

type Flavor = Record<string, (...args: unknown[]) => unknown> & { dispose(): void };

/** The calls whose C return is text, not a code (hipGetErrorName's const char*, ACL's message or NULL). */
const TEXT: Readonly<Record<string, (r: unknown) => boolean>> = {
  hipGetErrorName: (r) => typeof r === 'string',
  hipGetErrorString: (r) => typeof r === 'string',
  aclGetRecentErrMsg: (r) => typeof r === 'string' || r === null,
};

describe.each([
  ['HIP', () => createHip() as unknown as Flavor, HIP_FUNCTIONS],
  ['ACL', () => createAcl() as unknown as Flavor, ACL_FUNCTIONS],
] as const)('%s flavor with garbage arguments', (_, make, functions) => {
  it.each(functions.map((f) => [f]))('%s returns a code and never throws', (name) => {
    // Before and after initialisation, so both paths are exercised.
    for (const init of [false, true]) {
      const api = make();
      if (init) {
        if ('hipInit' in api) api.hipInit(0);
        if ('aclInit' in api) api.aclInit(null);
      }
      for (const args of GARBAGE) {
        let result: unknown;
        expect(
          () => {
            result = api[name](...args);
          },
          `${name}(${args.map(String).join(', ')})`,
        ).not.toThrow();
        // A code is an integer, as the CUDA twin checks; only the calls that return text may return anything else.
        const ok = TEXT[name]?.(result) ?? Number.isInteger(result);
        expect(ok, `${name} returned ${String(result)}`).toBe(true);
      }
      api.dispose();
    }
  });
});
