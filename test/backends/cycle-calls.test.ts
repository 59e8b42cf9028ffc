/**
 * The cycle's seven driver calls in both forms (Note [Fast cycle calls]):
 * through koffi and through the fast-call addon, over the libcuda stand-in
 * (conformance/gpu/libcuda-stand-in.c), which remembers what reached it.
 * Both forms must hand C the same integers and struct bytes and answer the
 * same codes and out-parameters, in the interpreter and once the calling
 * code is optimised (when V8 calls the fast functions directly); and the real
 * backend and the CUDA flavour over the stand-in take the fast form.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import koffi from 'koffi';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildStandInLibcuda,
  type StandInControls,
  standInControls,
} from '../../conformance/gpu/stand-in-libcuda.js';
import { CudaBackend } from '../../src/backends/cuda/backend.js';
import {
  CYCLE_SYMBOLS,
  type CycleCalls,
  chooseCycleCalls,
  cycleCallsAddonPath,
  fastCycleCalls,
  koffiCycleCalls,
  SCRATCH,
} from '../../src/backends/cuda/cycle-calls.js';
import { type CudaDriver, loadCudaDriver } from '../../src/backends/cuda/driver.js';
import { createCuda } from '../../src/index.js';

const linux = process.platform === 'linux';
const dir = mkdtempSync(join(tmpdir(), 'vmmkit-libcuda-stand-in-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * One call of each of the seven, with arguments from `i`; what C saw and what came back, per call.
 * It names nothing outside its parameters, so freshCopy can make copies of it.
 */
function sevenCalls(calls: CycleCalls, stub: StandInControls, i: number, at: typeof SCRATCH) {
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
  seen.push({ code: calls.cuMemCreate((i + 1) * (2 << 20), i & 2), out: out[0], ...stub.last() });
  seen.push({ code: calls.cuMemMap(big, 2 << 20, i, 0x5550_0000_0000 + i, 0), ...stub.last() });
  desc[0] = 1;
  desc[1] = i % 4;
  desc[2] = 3;
  seen.push({ code: calls.cuMemSetAccess(big, 2 << 20), ...stub.last() });
  seen.push({ code: calls.cuMemUnmap(big, 2 << 20), ...stub.last() });
  seen.push({ code: calls.cuMemRelease(0x5550_0000_0000 + i), ...stub.last() });
  seen.push({ code: calls.cuMemAddressFree(big, 2 << 20), ...stub.last() });
  stub.setOut(0n);
  return seen;
}

/**
 * cuMemRelease of each value; what C saw and what came back. Names nothing outside its parameters.
 * An indexed loop: Node 22's TurboFan makes no fast call inside a for-of loop over an array.
 */
function releaseEach(calls: CycleCalls, stub: StandInControls, values: readonly (number | bigint)[]) {
  const seen = [];
  for (let i = 0; i < values.length; i++) seen.push({ code: calls.cuMemRelease(values[i]), ...stub.last() });
  return seen;
}

/**
 * A copy of a function with call feedback of its own. V8 makes a call a fast call only where its
 * target is known, and a function that has called both forms knows neither.
 */
const freshCopy = <F extends (...args: never[]) => unknown>(f: F): F =>
  new Function(`return ${f.toString()}`)();

/** V8's own hooks, to optimise a function now rather than when its counters say (no timing in tests). */
setFlagsFromString('--allow-natives-syntax');
const optimiseOnNextCall: (f: unknown, warm: () => void) => void = new Function(
  'f',
  'warm',
  '%PrepareFunctionForOptimization(f); warm(); warm(); %OptimizeFunctionOnNextCall(f);',
) as never;

/** V8's detach of an ArrayBuffer, as a transfer makes it. */
const detach = new Function('buffer', '%ArrayBufferDetach(buffer)') as (buffer: ArrayBuffer) => void;

/** A full garbage collection, now (V8's gc(), which the flag exposes to code compiled after it). */
setFlagsFromString('--expose-gc');
const collectEverything = runInNewContext('gc') as () => void;

/** The V8 this test runs on (Note [Fast calls in try blocks]: V8 12 makes no fast call inside a try block). */
const V8_MAJOR = Number(process.versions.v8.split('.')[0]);

const text = (x: unknown) => JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

describe.skipIf(!linux)(
  'cycle calls: koffi and fast forms hand C the same calls (Note [Fast cycle calls])',
  () => {
    const path = buildStandInLibcuda(dir);
    const stub = standInControls(path);
    const driver = loadCudaDriver([path]);

    it('the addon is built at install here (scripts/build-native.mjs)', () => {
      const addon = cycleCallsAddonPath();
      expect(addon !== undefined && existsSync(addon)).toBe(true);
      const chosen = chooseCycleCalls(driver);
      expect(chosen.why).toBeUndefined();
      expect(chosen.form).toBe('fast');
    });

    it('agree call by call, before and after the calling code is optimised', () => {
      const slow = koffiCycleCalls(driver);
      const lib = koffi.load(path);
      const fast = fastCycleCalls(
        CYCLE_SYMBOLS.map((s) => koffi.address(lib.symbol(s))),
        lib,
      );
      if (typeof fast === 'string') throw new Error(fast);
      const fastCount = new BigUint64Array(fast.scratch, SCRATCH.fastCount, 1);
      const expected = sevenCalls(slow, stub, 1, SCRATCH);
      expect(expected.map((c) => c.fn)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(expected[0].args.slice(0, 4)).toEqual([2n << 20n, 2n << 20n, BigInt(0x7f00_0020_0000), 1n]);
      expect(expected[0]).toMatchObject({ out: 0x1001n });
      expect(expected[1].bytes.slice(0, 16)).toEqual([1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
      expect(expected[3].args.slice(0, 3)).toEqual([BigInt(0x7f00_0020_0000), 2n << 20n, 1n]);
      const rounds = 300;
      const koffiSaw = Array.from({ length: rounds }, (_, i) => text(sevenCalls(slow, stub, i, SCRATCH)));
      // The fast form through the addon's slow callbacks (the function is not optimised yet) ...
      const throughFast = freshCopy(sevenCalls);
      expect(Array.from({ length: rounds }, (_, i) => text(throughFast(fast, stub, i, SCRATCH)))).toEqual(
        koffiSaw,
      );
      expect(fastCount[0]).toBe(0n);
      // ... and through its fast functions, once V8 has optimised the caller.
      const optimised = freshCopy(sevenCalls);
      optimiseOnNextCall(optimised, () => optimised(fast, stub, 0, SCRATCH));
      expect(fastCount[0]).toBe(0n);
      expect(Array.from({ length: rounds }, (_, i) => text(optimised(fast, stub, i, SCRATCH)))).toEqual(
        koffiSaw,
      );
      expect(fastCount[0]).toBe(BigInt(rounds * 7));
    });

    it('read numbers and bigints as koffi does, through the slow callbacks and the fast functions', () => {
      const slow = koffiCycleCalls(driver);
      const fast = chooseCycleCalls(driver).calls;
      const fastCount = new BigUint64Array(fast.scratch, SCRATCH.fastCount, 1);
      // Numbers a C integer cannot hold exactly: koffi truncates, wraps negatives, saturates at int64's
      // ends and makes NaN and the infinities 0 (what the stand-in received, in the koffi column).
      const numbers = [
        -1,
        -1.5,
        1.5,
        2 ** 53 + 2,
        2 ** 63,
        2 ** 64,
        2 ** 70,
        -(2 ** 63),
        -(2 ** 70),
        NaN,
        Infinity,
        -Infinity,
        -0,
      ];
      const bigints = [1n << 60n, (1n << 64n) - 1n, 0x20_0000_0000_0001n, -1n, 1n << 64n, (1n << 64n) + 5n];
      const throughKoffi = text(releaseEach(slow, stub, [...numbers, ...bigints]));
      expect(releaseEach(slow, stub, [-1, 2 ** 70, NaN]).map((r) => r.args[0])).toEqual([
        (1n << 64n) - 1n,
        (1n << 63n) - 1n,
        0n,
      ]);
      expect(text(releaseEach(fast, stub, [...numbers, ...bigints]))).toEqual(throughKoffi);
      // Optimised on a list of doubles like `numbers` (another kind of list would undo the optimisation).
      const optimised = freshCopy(releaseEach);
      optimiseOnNextCall(optimised, () => optimised(fast, stub, [1.5, -2.5]));
      const before = fastCount[0];
      expect(text(optimised(fast, stub, numbers))).toEqual(text(releaseEach(slow, stub, numbers)));
      expect(fastCount[0] - before).toBe(BigInt(numbers.length));
    });

    it('are fast calls inside a try block, but on V8 12 (Note [Fast calls in try blocks])', () => {
      const fast = chooseCycleCalls(driver).calls;
      const fastCount = new BigUint64Array(fast.scratch, SCRATCH.fastCount, 1);
      const made = (body: string) => {
        const f = new Function('calls', 'v', body) as (calls: CycleCalls, v: number) => number;
        optimiseOnNextCall(f, () => f(fast, 1));
        const before = fastCount[0];
        for (let i = 0; i < 10; i++) expect(f(fast, 0x7f00_0000_0000 + i)).toBe(0);
        return Number(fastCount[0] - before);
      };
      expect(made('return calls.cuMemRelease(v);')).toBe(10);
      expect(made('try { return calls.cuMemRelease(v); } catch { return -1; }')).toBe(
        V8_MAJOR === 12 ? 0 : 10,
      );
    });

    it('once warm, the CUDA flavour makes each of the cycle calls a fast call (on V8 12, those outside try blocks)', () => {
      const cu = createCuda({ backend: 'cuda', cuda: { driver } });
      const checked = (cu.runtime.backend as CudaBackend).cu;
      const ctx = { value: 0n };
      expect([cu.cuInit(0), cu.cuDevicePrimaryCtxRetain(ctx, 0), cu.cuCtxSetCurrent(ctx.value)]).toEqual([
        0, 0, 0,
      ]);
      const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
      const rw = [{ location: { type: 1, id: 0 }, flags: 3 }];
      const ptr = { value: 0n };
      const h = { value: 0n };
      const size = 2 << 20;
      const calls = [
        () => cu.cuMemAddressReserve(ptr, size, 0, 0, 0),
        () => cu.cuMemCreate(h, size, prop, 0),
        () => cu.cuMemMap(ptr.value, size, 0, h.value, 0),
        () => cu.cuMemSetAccess(ptr.value, size, rw, 1),
        () => cu.cuMemUnmap(ptr.value, size),
        () => cu.cuMemRelease(h.value),
        () => cu.cuMemAddressFree(ptr.value, size),
      ];
      // Cycles until V8 has optimised every function on the way: 1,000 measured after each 5,000 warm,
      // until a measured batch is all fast calls, for at most 200,000 cycles (a count, no timing: V8
      // compiles in the background, so how many cycles that takes varies with the machine's load).
      let failed = 0;
      let fastShare = calls.map(() => 0);
      for (let round = 0; round < 33 && !fastShare.every((x) => x === 1); round++) {
        for (let i = 0; i < 5_000; i++) for (const call of calls) failed += call() === 0 ? 0 : 1;
        const fast = calls.map(() => 0);
        for (let i = 0; i < 1_000; i++) {
          calls.forEach((call, k) => {
            const before = checked.fastCallCount;
            failed += call() === 0 ? 0 : 1;
            fast[k] += checked.fastCallCount - before;
          });
        }
        fastShare = fast.map((n) => n / 1_000);
      }
      expect(failed).toBe(0);
      if (V8_MAJOR === 12) expect(fastShare.filter((x) => x === 1).length).toBeGreaterThan(0);
      else expect(fastShare).toEqual([1, 1, 1, 1, 1, 1, 1]);
      cu.dispose();
    });

    it('refuse what koffi refuses: a string, a missing argument, a call off its object; and a transfer of the scratch', () => {
      const fast = chooseCycleCalls(driver).calls;
      expect(() => fast.cuMemRelease('1' as unknown as number)).toThrow(TypeError);
      expect(() => (fast.cuMemUnmap as (ptr: number) => number)(1)).toThrow(TypeError);
      const offItsObject = fast.cuMemRelease;
      expect(() => offItsObject(1)).toThrow(TypeError);
      expect(() => koffiCycleCalls(driver).cuMemRelease('1' as unknown as number)).toThrow(TypeError);
      // The fast functions write to these bytes: script may not detach them (V8's own detach, as a
      // transfer does it; Node 20's structuredClone aborts on a buffer it may not detach instead).
      expect(() => detach(fast.scratch)).toThrow(/DetachKey/);
      expect(fast.scratch.byteLength).toBe(SCRATCH.bytes);
      const plain = new ArrayBuffer(8);
      detach(plain);
      expect(plain.byteLength).toBe(0);
    });

    it('keep the library loaded while the bound calls live, whoever else lets it go (Note [Library lifetime])', () => {
      // A copy of the stand-in of its own, so nothing else in this file holds it.
      const own = buildStandInLibcuda(join(dir, 'own'));
      const mapped = () => readFileSync('/proc/self/maps', 'utf8').includes(own);
      // The driver, and every koffi object of the library, are left behind when bind returns.
      const bind = () => chooseCycleCalls(loadCudaDriver([own])).calls;
      const calls = bind();
      expect(mapped()).toBe(true);
      collectEverything();
      // Before the fix koffi had unloaded the library here, and the next call jumped into nothing.
      expect(mapped()).toBe(true);
      expect(calls.cuMemUnmap(2 << 20, 2 << 20)).toBe(0);
    });

    it('fall back to koffi where asked, where the driver is no library and where the addresses are refused', () => {
      expect(chooseCycleCalls(driver, false)).toMatchObject({ form: 'koffi', why: 'fastCalls: false' });
      const { symbolAddress: _, ...noLibrary } = driver as unknown as Record<string, unknown>;
      expect(chooseCycleCalls(noLibrary as unknown as CudaDriver).form).toBe('koffi');
      const missing = {
        ...(driver as object),
        symbolAddress: () => {
          throw new Error('no such symbol');
        },
      } as unknown as CudaDriver;
      expect(chooseCycleCalls(missing)).toMatchObject({
        form: 'koffi',
        why: expect.stringMatching(/no such symbol/),
      });
      const zero = { ...(driver as object), symbolAddress: () => 0n } as unknown as CudaDriver;
      expect(chooseCycleCalls(zero)).toMatchObject({ form: 'koffi', why: expect.stringMatching(/refused/) });
    });

    it('the backend and the CUDA flavour over the stand-in make the cycle through the fast form', () => {
      const backend = new CudaBackend({ driver });
      expect(backend.cu.cycleCalls).toBe('fast');
      expect(new CudaBackend({ driver, fastCalls: false }).cu.cycleCalls).toBe('koffi');
      const cu = createCuda({ backend: 'cuda', cuda: { driver } });
      const ctx = { value: 0n };
      expect([cu.cuInit(0), cu.cuDevicePrimaryCtxRetain(ctx, 0), cu.cuCtxSetCurrent(ctx.value)]).toEqual([
        0, 0, 0,
      ]);
      const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
      const ptr = { value: 0n };
      const handle = { value: 0n };
      expect(cu.cuMemAddressReserve(ptr, 2 << 20, 0, 0, 0)).toBe(0);
      expect(stub.last()).toMatchObject({ fn: 1, args: [2n << 20n, 2n << 20n, 0n, 0n, 0n] }); // aligned to the granularity
      expect(cu.cuMemCreate(handle, 2 << 20, prop, 0)).toBe(0);
      expect(stub.last().bytes.slice(0, 16)).toEqual([1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
      expect(cu.cuMemMap(ptr.value, 2 << 20, 0, handle.value, 0)).toBe(0);
      expect(cu.cuMemSetAccess(ptr.value, 2 << 20, [{ location: { type: 1, id: 0 }, flags: 3 }], 1)).toBe(0);
      expect(stub.last()).toMatchObject({ fn: 4, bytes: [1, 0, 0, 0, 0, 0, 0, 0, 3, ...Array(23).fill(0)] });
      expect(cu.cuMemUnmap(ptr.value, 2 << 20)).toBe(0);
      expect(cu.cuMemRelease(handle.value)).toBe(0);
      expect(cu.cuMemAddressFree(ptr.value, 2 << 20)).toBe(0);
      expect(stub.last()).toMatchObject({ fn: 7 });
    });
  },
);
