/**
 * The line between the GPU host's two process states (Note [Process states]
 * in bench/gpu-paired.ts): found in a set of native cycle times, and where a
 * set holds one state only, none.
 */
import { describe, expect, it } from 'vitest';
import { processState, STATE_GAP, stateSplit } from '../../bench/gpu-run.js';

describe('stateSplit', () => {
  it('puts the line in the middle of the widest gap between two clusters', () => {
    // Draws as bench/results/h200-process-states.json has them: about 54 and 74 us.
    const draws = [53.6, 55.1, 73.9, 52.9, 77.4, 71.2, 56.3, 74.8, 69.9];
    const split = stateSplit(draws);
    expect(split).toBeCloseTo((56.3 + 69.9) / 2, 9);
    expect(draws.filter((d) => processState(d, split!) === 'fast')).toEqual([53.6, 55.1, 52.9, 56.3]);
  });

  it('finds none in one cluster, or in fewer than two values', () => {
    expect(stateSplit([71.2, 74.8, 77.4, 79.9, 73.1])).toBeNull();
    expect(stateSplit([54])).toBeNull();
    expect(stateSplit([])).toBeNull();
  });

  it('takes a gap of exactly STATE_GAP, and no narrower one', () => {
    expect(stateSplit([50, 50 * STATE_GAP])).toBe((50 + 50 * STATE_GAP) / 2);
    expect(stateSplit([50, 50 * STATE_GAP * 0.999])).toBeNull();
  });

  it('takes the widest gap when there are several', () => {
    // 10 -> 12 is 1.2, 12 -> 16 is 1.33: the line goes at 14.
    expect(stateSplit([16, 10, 12])).toBe(14);
  });
});
