/**
 * The cycle's seven driver calls in both forms (Note [Fast cycle calls]):
 * through koffi and through the fast-call addon, over a stand-in libcuda
 * built here from test/support/stub-libcuda.c that remembers what reached it.
 * Both forms must hand C the same integers and struct bytes and answer the
 * same codes and out-parameters, in the interpreter and once the calling
 * code is optimised (when V8 calls the fast functions directly).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import koffi from 'koffi';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CYCLE_SYMBOLS,
  type CycleCalls,
  chooseCycleCalls,
  cycleCallsAddonPath,
  fastCycleCalls,
  koffiCycleCalls,
  SCRATCH,
} from '../../src/backends/cuda/cycle-calls.js';
import type { CudaDriver } from '../../src/backends/cuda/driver.js';
import { DRIVER_API, declareDriverTypes } from '../../src/backends/cuda/driver-api.js';

const linux = process.platform === 'linux';
const dir = mkdtempSync(join(tmpdir(), 'vmmkit-stub-libcuda-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The stand-in, compiled and loaded; the seven functions bound from DRIVER_API's own prototypes. */
function stubLibrary() {
  const path = join(dir, 'libcuda-stub.so');
  execFileSync(process.env.CC || 'cc', [
    '-O1',
    '-shared',
    '-fPIC',
    'test/support/stub-libcuda.c',
    '-o',
    path,
  ]);
  const lib = koffi.load(path);
  declareDriverTypes();
  const fns: Record<string, unknown> = {
    libraryPath: path,
    symbolAddress: (symbol: string) => koffi.address(lib.symbol(symbol)),
  };
  for (const symbol of CYCLE_SYMBOLS) fns[symbol] = lib.func(DRIVER_API[symbol]);
  const last = lib.func('int stub_last(_Out_ uint64_t *args, uint8_t *bytes)');
  const setOut = lib.func('void stub_set_out(uint64_t value)');
  return {
    driver: fns as unknown as CudaDriver,
    /** The last call: function number (1-7), its integer arguments, its struct's bytes. */
    last(): { fn: number; args: bigint[]; bytes: number[] } {
      const args = new BigUint64Array(5);
      const bytes = new Uint8Array(32);
      const fn = last(args, bytes) as number;
      return { fn, args: [...args], bytes: [...bytes] };
    },
    setOut: (value: bigint) => setOut(value),
  };
}

/**
 * One call of each of the seven, with arguments from `i`; what C saw and what came back, per call.
 * It names nothing outside its parameters, so freshCopy can make copies of it.
 */
function sevenCalls(calls: CycleCalls, stub: ReturnType<typeof stubLibrary>, i: number, at: typeof SCRATCH) {
  const out = new BigUint64Array(calls.scratch, at.out, 1);
  const prop = new Int32Array(calls.scratch, at.prop, 8);
  const desc = new Int32Array(calls.scratch, at.desc, 3);
  const big = 0x7f00_0000_0000 + i * 0x20_0000;
  const seen = [];
  stub.setOut(BigInt(0x1000 + i));
  seen.push({
    code: calls.cuMemAddressReserve(2 << 20, i % 3 === 0 ? 0 : 1 << 21, big, i & 1),
    out: out[0],
    ...stub.last(),
  });
  prop[0] = 1;
  prop[1] = i & 3;
  prop[2] = 1;
  prop[3] = i % 8;
  seen.push({ code: calls.cuMemCreate((i + 1) * (2 << 20), 0), out: out[0], ...stub.last() });
  seen.push({ code: calls.cuMemMap(big, 2 << 20, i, 0x5550_0000_0000 + i, 0), ...stub.last() });
  desc[0] = 1;
  desc[1] = i % 4;
  desc[2] = 3;
  seen.push({ code: calls.cuMemSetAccess(big, 2 << 20), ...stub.last() });
  seen.push({ code: calls.cuMemUnmap(big, 2 << 20), ...stub.last() });
  seen.push({ code: calls.cuMemRelease(0x5550_0000_0000 + i), ...stub.last() });
  seen.push({ code: calls.cuMemAddressFree(big, 2 << 20), ...stub.last() });
  return seen;
}

/**
 * A copy of sevenCalls with call feedback of its own. V8 makes a call a fast call only where
 * its target is known, and a function that has called both forms knows neither.
 */
const freshCopy = (): typeof sevenCalls => new Function(`return ${sevenCalls.toString()}`)();

/** V8's own hooks, to optimise a function now rather than when its counters say (no timing in tests). */
setFlagsFromString('--allow-natives-syntax');
const optimiseOnNextCall: (f: Function, warm: () => void) => void = new Function(
  'f',
  'warm',
  '%PrepareFunctionForOptimization(f); warm(); warm(); %OptimizeFunctionOnNextCall(f);',
) as never;

const text = (x: unknown) => JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

describe.skipIf(!linux)(
  'cycle calls: koffi and fast forms hand C the same calls (Note [Fast cycle calls])',
  () => {
    const stub = stubLibrary();

    it('the addon is built at install here (scripts/build-native.mjs)', () => {
      expect(existsSync(cycleCallsAddonPath())).toBe(true);
      const chosen = chooseCycleCalls(stub.driver);
      expect(chosen.why).toBeUndefined();
      expect(chosen.form).toBe('fast');
    });

    it('agree call by call, before and after the calling code is optimised', () => {
      const slow = koffiCycleCalls(stub.driver);
      const fast = fastCycleCalls(
        CYCLE_SYMBOLS.map((s) => koffi.address(koffi.load(stub.driver.libraryPath).symbol(s))),
      );
      if (typeof fast === 'string') throw new Error(fast);
      const fastCount = new BigUint64Array(fast.scratch, SCRATCH.fastCount, 1);
      const expected = sevenCalls(slow, stub, 1, SCRATCH);
      expect(expected.map((c) => c.fn)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(expected[0].args.slice(0, 4)).toEqual([2n << 20n, 2n << 20n, BigInt(0x7f00_0020_0000), 1n]);
      expect(expected[1].bytes.slice(0, 16)).toEqual([1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
      expect(expected[3].args.slice(0, 3)).toEqual([BigInt(0x7f00_0020_0000), 2n << 20n, 1n]);
      const rounds = 300;
      const koffiSaw = Array.from({ length: rounds }, (_, i) => text(sevenCalls(slow, stub, i, SCRATCH)));
      // The fast form through the addon's slow callbacks (the function is not optimised yet) ...
      const throughFast = freshCopy();
      expect(Array.from({ length: rounds }, (_, i) => text(throughFast(fast, stub, i, SCRATCH)))).toEqual(
        koffiSaw,
      );
      expect(fastCount[0]).toBe(0n);
      // ... and through its fast functions, once V8 has optimised the caller.
      const optimised = freshCopy();
      optimiseOnNextCall(optimised, () => optimised(fast, stub, 0, SCRATCH));
      expect(fastCount[0]).toBe(0n);
      expect(Array.from({ length: rounds }, (_, i) => text(optimised(fast, stub, i, SCRATCH)))).toEqual(
        koffiSaw,
      );
      expect(fastCount[0]).toBe(BigInt(rounds * 7));
    });

    it('take bigints (handles above 2^53) and two-complement negatives as koffi does', () => {
      const slow = koffiCycleCalls(stub.driver);
      const fast = chooseCycleCalls(stub.driver).calls;
      for (const handle of [1n << 60n, (1n << 64n) - 1n, 0x20_0000_0000_0001n]) {
        const a = { code: slow.cuMemRelease(handle), ...stub.last() };
        const b = { code: fast.cuMemRelease(handle), ...stub.last() };
        expect(b).toEqual(a);
        expect(b.args[0]).toBe(handle);
      }
      const a = { code: slow.cuMemUnmap(-1, -2), ...stub.last() };
      const b = { code: fast.cuMemUnmap(-1, -2), ...stub.last() };
      expect(b).toEqual(a);
      expect(b.args.slice(0, 2)).toEqual([(1n << 64n) - 1n, (1n << 64n) - 2n]);
    });

    it('refuse what koffi refuses: a string, a missing argument, a call off its object', () => {
      const fast = chooseCycleCalls(stub.driver).calls;
      expect(() => fast.cuMemRelease('1' as unknown as number)).toThrow(TypeError);
      expect(() => (fast.cuMemUnmap as (ptr: number) => number)(1)).toThrow(TypeError);
      const detached = fast.cuMemRelease;
      expect(() => detached(1)).toThrow(TypeError);
      expect(() => koffiCycleCalls(stub.driver).cuMemRelease('1' as unknown as number)).toThrow(TypeError);
    });

    it('fall back to koffi where asked, where the driver is no library and where the addresses are refused', () => {
      expect(chooseCycleCalls(stub.driver, false)).toMatchObject({ form: 'koffi', why: 'fastCalls: false' });
      const { symbolAddress: _, ...noLibrary } = stub.driver as unknown as Record<string, unknown>;
      expect(chooseCycleCalls(noLibrary as unknown as CudaDriver).form).toBe('koffi');
      const zero = { ...(stub.driver as object), symbolAddress: () => 0n } as unknown as CudaDriver;
      expect(chooseCycleCalls(zero)).toMatchObject({ form: 'koffi', why: expect.stringMatching(/refused/) });
    });
  },
);
