/**
 * Bad input gets a vendor code, never an exception: every HIP and ACL
 * function called with garbage arguments returns an integer code, before
 * initialisation, after it and over live VMM state, reports no internal error
 * and leaves nothing behind (the CUDA flavor's twin is in
 * test/flavors/cuda/api.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Machine } from '../../src/backends/sim/machine.js';
import * as H from '../../src/flavors/hip/constants.js';
import { ACL_FUNCTIONS, createAcl, createHip, HIP_FUNCTIONS } from '../../src/index.js';
import { prop as aclProp } from './acl/helpers.js';

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

type Flavor = Record<string, ((...args: unknown[]) => unknown) | undefined> & {
  dispose(): void;
  readonly lastInternalError: unknown;
  readonly machine: Machine;
};
type Report = (message: string, error?: unknown) => void;
const MiB2 = 2 * 1024 * 1024;

/** The calls whose C return is text, not a code (hipGetErrorName's const char*, ACL's message or NULL). */
const TEXT: Readonly<Record<string, (r: unknown) => boolean>> = {
  hipGetErrorName: (r) => typeof r === 'string',
  hipGetErrorString: (r) => typeof r === 'string',
  aclGetRecentErrMsg: (r) => typeof r === 'string' || r === null,
};

/** Live VMM state to call garbage over: a reservation, a mapped handle and a stream, each call answering success. */
const LIVE: Readonly<Record<'HIP' | 'ACL', (api: Flavor) => void>> = {
  HIP: (api) => {
    const prop = {
      type: H.hipMemAllocationTypePinned,
      requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor,
      location: { type: H.hipMemLocationTypeDevice, id: 0 },
    };
    const ptr = { value: 0n };
    const h = { value: 0n };
    const stream = { value: 0n };
    expect(api.hipSetDevice!(0)).toBe(0);
    expect(api.hipMemAddressReserve!(ptr, 2 * MiB2, 0, null, 0)).toBe(0);
    expect(api.hipMemCreate!(h, MiB2, prop, 0)).toBe(0);
    expect(api.hipMemMap!(ptr.value, MiB2, 0, h.value, 0)).toBe(0);
    expect(api.hipStreamCreate!(stream)).toBe(0);
  },
  ACL: (api) => {
    const va = { value: 0n };
    const h = { value: 0n };
    const stream = { value: 0n };
    expect(api.aclrtSetDevice!(0)).toBe(0);
    expect(api.aclrtReserveMemAddress!(va, 2 * MiB2, 0, null, 0)).toBe(0);
    expect(api.aclrtMallocPhysical!(h, MiB2, aclProp(), 0)).toBe(0);
    expect(api.aclrtMapMem!(va.value, MiB2, 0, h.value, 0)).toBe(0);
    expect(api.aclrtCreateStream!(stream)).toBe(0);
  },
};

describe.each([
  ['HIP', (report: Report) => createHip({ report }) as unknown as Flavor, HIP_FUNCTIONS],
  ['ACL', (report: Report) => createAcl({ report }) as unknown as Flavor, ACL_FUNCTIONS],
] as const)('%s flavor with garbage arguments', (vendor, make, functions) => {
  it.each(functions.map((f) => [f]))('%s returns a code and never throws', (name) => {
    // Before initialisation, after it, and over live VMM state, as the CUDA twin does.
    for (const state of ['fresh', 'initialised', 'live'] as const) {
      const reports: unknown[] = [];
      const api = make((m, e) => reports.push([m, e]));
      if (state !== 'fresh') {
        if (vendor === 'HIP') expect(api.hipInit!(0)).toBe(0);
        else expect(api.aclInit!(null)).toBe(0);
      }
      if (state === 'live') LIVE[vendor](api);
      for (const args of GARBAGE) {
        let result: unknown;
        expect(
          () => {
            result = api[name]!(...args);
          },
          `${name}(${args.map(String).join(', ')})`,
        ).not.toThrow();
        // A code is an integer, as the CUDA twin checks; only the calls that return text may return anything else.
        const ok = TEXT[name]?.(result) ?? Number.isInteger(result);
        expect(ok, `${name} returned ${String(result)}`).toBe(true);
      }
      // No internal error (a vmmkit bug answered with the vendor's internal code) along the way, and
      // dispose gives everything back, as the CUDA twin checks.
      expect(api.lastInternalError, `${name} (${state})`).toBeUndefined();
      expect(reports, `${name} (${state})`).toEqual([]);
      const machine = api.machine;
      api.dispose();
      expect(machine.liveAllocations, `${name} (${state}) left memory behind`).toBe(0);
    }
  });
});
