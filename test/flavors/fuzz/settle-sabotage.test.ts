/**
 * Each rule of settle-calls.ts can fail: a process is sabotaged to break it
 * (the answer vmmkit gave before issue 17, item 4, where there was one) and a
 * short run of its flavor's model must report that rule.
 */
import { describe, expect, it } from 'vitest';
import * as A from '../../../src/flavors/acl/constants.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import * as H from '../../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';
import { ACL_MODEL } from './acl-model.js';
import { CUDA_MODEL } from './cuda-model.js';
import { type Episode, type FlavorModel, type FuzzedProcess, fuzz } from './episode.js';
import { HIP_MODEL } from './hip-model.js';
import { Random } from './random.js';
import type { SettleRule } from './settle-calls.js';

type Method = (...args: unknown[]) => unknown;
/** One episode a run: enough for each sabotage to show, and short beside the fuzz run itself. */
const CALLS = 2000;

/** Replace `name` on each of `processes` with `wrap(original, process)`. */
function wrap<P extends FuzzedProcess>(
  processes: readonly P[],
  name: string,
  wrapper: (original: Method, p: P) => Method,
): void {
  for (const p of processes) {
    const methods = p as unknown as Record<string, Method>;
    const original = methods[name]?.bind(p) as Method;
    methods[name] = wrapper(original, p);
  }
}

interface Sabotage<P extends FuzzedProcess> {
  readonly model: FlavorModel<P>;
  readonly apply: (ep: Episode<P>) => void;
}
const sabotage = <P extends FuzzedProcess>(
  model: FlavorModel<P>,
  apply: (ep: Episode<P>) => void,
): Sabotage<P> => ({
  model,
  apply,
});

const current = (p: { cuCtxGetCurrent(b: { value: bigint }): number }) => {
  const b = { value: 0n };
  p.cuCtxGetCurrent(b);
  return b.value;
};

/**
 * Make each process's cuMemsetD8Async and cuMemcpyHtoDAsync answer
 * `instead()` without doing anything when their stream was created in a
 * context that is not current now.
 */
function onForeignStreams(ep: Episode<CudaFlavor>, instead: () => number): void {
  for (const p of ep.processes) {
    const madeIn = new Map<bigint, bigint>();
    wrap([p], 'cuStreamCreate', (original) => (...args) => {
      const code = original(...args);
      const box = args[0] as { value: unknown };
      if (code === 0 && typeof box?.value === 'bigint') madeIn.set(box.value, current(p));
      return code;
    });
    for (const name of ['cuMemsetD8Async', 'cuMemcpyHtoDAsync'])
      wrap([p], name, (original) => (...args) => {
        const made = madeIn.get(args[3] as bigint);
        return made !== undefined && made !== current(p) ? instead() : original(...args);
      });
  }
}

const SABOTAGE: Record<SettleRule, Sabotage<never>> = {
  // A destroyed event taken for one never made: INVALID_HANDLE.
  destroyed: sabotage(CUDA_MODEL, (ep) => {
    for (const name of ['cuEventRecord', 'cuEventSynchronize', 'cuStreamWaitEvent'])
      wrap(ep.processes, name, (original) => (...args) => {
        const code = original(...args);
        return code === C.CUDA_ERROR_CONTEXT_IS_DESTROYED ? C.CUDA_ERROR_INVALID_HANDLE : code;
      });
  }) as never,
  // A push that replaces the top instead.
  stack: sabotage(CUDA_MODEL, (ep) =>
    wrap(ep.processes, 'cuCtxPushCurrent', (_original, p) => (ctx) => p.cuCtxSetCurrent(ctx as bigint)),
  ) as never,
  // The old rule: a copy or set on a stream of a context that is not current is CUDA_ERROR_INVALID_CONTEXT.
  crossStream: sabotage(CUDA_MODEL, (ep) =>
    onForeignStreams(ep, () => C.CUDA_ERROR_INVALID_CONTEXT),
  ) as never,
  // The old answer: a reset at count 0 succeeds.
  reset: sabotage(ACL_MODEL, (ep) => {
    for (const name of ['aclrtResetDevice', 'aclrtResetDeviceForce'])
      wrap(ep.processes, name, (original) => (...args) => {
        const code = original(...args);
        return code === A.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR ? A.ACL_SUCCESS : code;
      });
  }) as never,
  // The old answer: hipRuntimeGetVersion after dispose is hipErrorDeinitialized.
  version: sabotage(HIP_MODEL, (ep) =>
    wrap([ep.ghost], 'hipRuntimeGetVersion', () => () => H.hipErrorDeinitialized),
  ) as never,
};

describe('the fuzzer reports each broken settle rule', () => {
  it.each(Object.keys(SABOTAGE) as SettleRule[])('%s', (rule) => {
    const { model, apply } = SABOTAGE[rule] as unknown as Sabotage<FuzzedProcess>;
    const run = fuzz(model, new Random(7), CALLS, CALLS, 0.12, apply);
    expect(run.violations.map((v) => v.rule)).toContain(rule);
  });

  // The rule reads the bytes back too: a copy or set that answers success and does nothing is caught.
  it('crossStream: a copy or set that answers success and never lands (CUDA)', () => {
    const apply = (ep: Episode<CudaFlavor>) => onForeignStreams(ep, () => C.CUDA_SUCCESS);
    const run = fuzz(CUDA_MODEL, new Random(7), CALLS, CALLS, 0.12, apply);
    const details = run.violations.filter((v) => v.rule === 'crossStream').map((v) => v.detail);
    expect(details.some((d) => d.endsWith('did not land'))).toBe(true);
  });

  it('crossStream: a copy or set that answers success and never lands (HIP)', () => {
    const apply = (ep: Episode<HipFlavor>) => {
      for (const p of ep.processes) {
        const madeOn = new Map<bigint, number>();
        const device = () => {
          const d = { value: -1 };
          p.hipGetDevice(d);
          return d.value;
        };
        wrap([p], 'hipStreamCreate', (original) => (...args) => {
          const code = original(...args);
          const box = args[0] as { value: unknown };
          if (code === 0 && typeof box?.value === 'bigint') madeOn.set(box.value, device());
          return code;
        });
        // The stream is the last argument of both.
        for (const name of ['hipMemsetAsync', 'hipMemcpyAsync'])
          wrap([p], name, (original) => (...args) => {
            const made = madeOn.get(args.at(-1) as bigint);
            return made !== undefined && made !== device() ? H.hipSuccess : original(...args);
          });
      }
    };
    const run = fuzz(HIP_MODEL, new Random(7), CALLS, CALLS, 0.12, apply);
    const details = run.violations.filter((v) => v.rule === 'crossStream').map((v) => v.detail);
    expect(details.some((d) => d.endsWith('did not land'))).toBe(true);
  });

  // CUDA's run unsabotaged is sabotage.test.ts's (the same seed).
  it('the same runs unsabotaged report nothing', () => {
    for (const model of [ACL_MODEL, HIP_MODEL] as FlavorModel<FuzzedProcess>[])
      expect(fuzz(model, new Random(7), CALLS, CALLS).violations).toEqual([]);
  });
});
