/**
 * The seeded hostile-input fuzzer (Note [Fuzzer checks], episode.ts) over the
 * three front ends. CI runs a fixed seed; VMMKIT_FUZZ_SEED and
 * VMMKIT_FUZZ_CALLS run others (the calls are split evenly across the
 * flavors), e.g. `VMMKIT_FUZZ_SEED=7 VMMKIT_FUZZ_CALLS=1000000 npx vitest run test/flavors/fuzz`.
 */
import { describe, expect, it } from 'vitest';
import { ACL_MODEL } from './acl-model.js';
import { CUDA_MODEL } from './cuda-model.js';
import { fuzz } from './episode.js';
import { HIP_MODEL } from './hip-model.js';
import { Random } from './random.js';

const SEED = Number(process.env.VMMKIT_FUZZ_SEED ?? 20261201);
const CALLS = Number(process.env.VMMKIT_FUZZ_CALLS ?? 210_000);
const MODELS = [CUDA_MODEL, HIP_MODEL, ACL_MODEL] as const;

describe(`front ends under hostile input (seed ${SEED}, ${CALLS} calls)`, () => {
  for (const model of MODELS) {
    it(`${model.vendor}: every call keeps the contract`, () => {
      const rng = new Random(SEED ^ model.vendor.length);
      const run = fuzz(model as never, rng, Math.ceil(CALLS / MODELS.length));
      expect(run.violations).toEqual([]);
      if (process.env.VMMKIT_FUZZ_VERBOSE)
        console.log(
          model.vendor,
          run.calls,
          'calls',
          run.comparedBytes,
          'bytes compared',
          Object.fromEntries(run.successes),
        );
    }, 120_000);
  }
});
