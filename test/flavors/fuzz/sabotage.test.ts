/**
 * Each check of the fuzzer can fail: a CUDA process is sabotaged to break
 * one rule of Note [Fuzzer checks] (episode.ts) at a time, and a short run
 * must report that rule.
 */
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import { CUDA_MODEL } from './cuda-model.js';
import { type Episode, fuzz, type Violation } from './episode.js';
import { Random } from './random.js';
import type { SettleRule } from './settle-calls.js';

type Method = (...args: unknown[]) => unknown;

/** Replace `name` on every live process of the episode with `wrap(original)`. */
function wrapEach(
  ep: Episode<CudaFlavor>,
  name: string,
  wrap: (original: Method, p: CudaFlavor) => Method,
): void {
  for (const p of ep.processes) {
    const methods = p as unknown as Record<string, Method>;
    const original = methods[name]?.bind(p) as Method;
    methods[name] = wrap(original, p);
  }
}

/** The settle rules have theirs, each on its own flavor (settle-sabotage.test.ts). */
const SABOTAGE: Record<
  Exclude<Violation['rule'], SettleRule | 'faulted'>,
  (ep: Episode<CudaFlavor>) => void
> = {
  throw: (ep) =>
    wrapEach(ep, 'cuDeviceGetCount', () => () => {
      throw new Error('sabotage');
    }),
  code: (ep) => wrapEach(ep, 'cuDriverGetVersion', () => () => 12345),
  internal: (ep) => {
    for (const p of ep.processes) {
      const rt = p.runtime as unknown as { synchronize: () => void };
      rt.synchronize = () => {
        throw new TypeError('sabotage');
      };
    }
  },
  changed: (ep) =>
    wrapEach(ep, 'cuMemAddressFree', (original, p) => (...args) => {
      const code = original(...args);
      if (code !== 0) p.runtime.reserve(64 * 1024);
      return code;
    }),
  box: (ep) =>
    wrapEach(ep, 'cuMemCreate', (original) => (...args) => {
      const code = original(...args);
      const box = args[0] as { value: unknown };
      if (code !== 0 && Object.getPrototypeOf(box) === Object.prototype && Object.isExtensible(box))
        box.value = 1n;
      return code;
    }),
  host: (ep) =>
    wrapEach(ep, 'cuMemcpyDtoH', (original) => (...args) => {
      const code = original(...args);
      const host = args[0];
      if (
        code !== 0 &&
        host instanceof Uint8Array &&
        Object.getPrototypeOf(host) === Uint8Array.prototype &&
        host.length > 0
      )
        host[0] = (host[0] ?? 0) ^ 1;
      return code;
    }),
  bytes: (ep) =>
    wrapEach(ep, 'cuMemcpyDtoH', (original) => (...args) => {
      const code = original(...args);
      const host = args[0];
      if (code === 0 && host instanceof Uint8Array && host.length > 0) host[0] = (host[0] ?? 0) ^ 0xff;
      return code;
    }),
  // The simulator's old wait on the default stream: none (issue 17).
  wait: (ep) =>
    wrapEach(
      ep,
      'cuStreamWaitEvent',
      (original) =>
        (...args) =>
          args[0] === 0n ? 0 : original(...args),
    ),
  // The old rule compared devices: a refused record goes to the current context's default stream instead.
  context: (ep) =>
    wrapEach(ep, 'cuEventRecord', (original) => (...args) => {
      const code = original(...args);
      return code === C.CUDA_ERROR_INVALID_HANDLE ? original(args[0], 0n) : code;
    }),
  // The old answer: the primary context of device 0, whichever context made the memory.
  pointer: (ep) =>
    wrapEach(ep, 'cuPointerGetAttribute', (original) => (...args) => {
      const code = original(...args);
      const box = args[0] as { value: unknown };
      if (code === 0 && args[1] === C.CU_POINTER_ATTRIBUTE_CONTEXT) box.value = 0xc0_0000n;
      return code;
    }),
  // Note [Destroying a primary context]: a reset primary context that keeps its cuMemAlloc memory.
  owned: (ep) =>
    wrapEach(ep, 'cuDevicePrimaryCtxReset', (original, p) => (...args) => {
      const rt = p.runtime as unknown as { mfree: (va: number) => void };
      const mfree = rt.mfree;
      rt.mfree = () => {};
      try {
        return original(...args);
      } finally {
        rt.mfree = mfree;
      }
    }),
  baseline: (ep) =>
    wrapEach(
      ep,
      'cuMemFree',
      (original) =>
        (...args) =>
          args[0] === 0n ? original(...args) : 0,
    ),
};

describe('the fuzzer reports each broken rule', () => {
  it.each(Object.keys(SABOTAGE) as (keyof typeof SABOTAGE)[])('%s', (rule) => {
    const run = fuzz(CUDA_MODEL, new Random(7), 6000, 2000, 0.12, SABOTAGE[rule]);
    expect(run.violations.map((v) => v.rule)).toContain(rule);
  });

  it('pointer: a host buffer’s device pointer that is not its address', () => {
    const run = fuzz(CUDA_MODEL, new Random(7), 6000, 2000, 0.12, (ep) =>
      wrapEach(ep, 'cuMemHostGetDevicePointer', (original) => (...args) => {
        const code = original(...args);
        const box = args[0] as { value: unknown };
        if (code === 0 && typeof box.value === 'bigint') box.value += 4096n;
        return code;
      }),
    );
    expect(run.violations.map((v) => v.rule)).toContain('pointer');
  });

  // Seed 8's run faults devices (seed 7's, at the fuzzer's rate, does not).
  it('faulted: a fault answered once, by the synchronisation that met it, then forgotten (the old model)', () => {
    const run = fuzz(CUDA_MODEL, new Random(8), 6000, 2000, 0.12, (ep) => {
      const forget =
        (original: Method) =>
        (...args: unknown[]) => {
          const code = original(...args);
          return code === C.CUDA_ERROR_LAUNCH_FAILED ? 0 : code;
        };
      wrapEach(ep, 'cuMemGetInfo', forget);
      wrapEach(ep, 'cuDevicePrimaryCtxRetain', forget);
    });
    expect(run.violations.map((v) => v.rule)).toContain('faulted');
    expect(fuzz(CUDA_MODEL, new Random(8), 6000).violations).toEqual([]);
  });

  it('the same run unsabotaged reports nothing', () => {
    expect(fuzz(CUDA_MODEL, new Random(7), 6000).violations).toEqual([]);
  });
});
