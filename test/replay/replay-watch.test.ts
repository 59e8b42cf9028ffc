/**
 * Watching a replay as advise does (Note [Stopping a replay],
 * advise/pool.ts): onGrowth is told exactly at the requests after which a
 * run's figures grew, which onStep shows too, at every call; and an error
 * thrown into replayInSlices at a slice's end ends that run there.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startOnSimulator } from '../../src/entry/replay-processes.js';
import { DEFAULT_ALLOCATORS, selectAllocators } from '../../src/replay/engine/allocators.js';
import { type ReplayGrowth, replayInSlices } from '../../src/replay/engine/replay.js';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { PastTheBar } from '../../src/replay/errors.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import { replay } from '../support/replay.js';
import { readFixture } from './helpers.js';

const MiB = 2 ** 20;
const trace = (name: string) =>
  readSnapshotFile(fileURLToPath(new URL(`../../traces/h200/${name}.pickle.gz`, import.meta.url)));

describe('onGrowth', () => {
  const cases = [
    { name: 'two devices', snapshot: () => readFixture('two-devices.pickle'), memoryLimit: undefined },
    { name: 'cnn_train, uncapped', snapshot: () => trace('cnn_train-native'), memoryLimit: undefined },
    // Under a cap the run fails requests: each failure is told, whether or not the peak moved.
    { name: 'cnn_train, capped', snapshot: () => trace('cnn_train-native'), memoryLimit: 300 * MiB },
  ];
  for (const c of cases) {
    it(`is told where the peak grew or a request failed, as onStep shows them (${c.name})`, () => {
      const snapshot = c.snapshot();
      const told: ReplayGrowth[][] = DEFAULT_ALLOCATORS.map(() => []);
      const expected: ReplayGrowth[][] = DEFAULT_ALLOCATORS.map(() => []);
      const peaks = new Map<string, number>();
      const r = replay(snapshot, {
        allocators: DEFAULT_ALLOCATORS,
        memoryLimit: c.memoryLimit,
        onStep: (s) => {
          if (s.kind === 'free' || s.kind === 'empty-cache') return;
          const key = `${s.run}/${s.device}`;
          const peak = s.allocator.stats.peakReservedBytes;
          if (s.failed || peak > (peaks.get(key) ?? 0)) {
            peaks.set(key, peak);
            expected[s.run].push({
              run: s.run,
              device: s.device,
              event: s.event,
              peakReservedBytes: peak,
              failed: s.failed,
            });
          }
        },
        onGrowth: (g) => told[g.run].push(g),
      });
      for (let k = 0; k < DEFAULT_ALLOCATORS.length; k++) {
        const a = r.allocators[k];
        expect(told[k], a.name).toEqual(expected[k]);
        // The last growth told on each device is its peak; failures are its OOMs.
        for (const d of a.devices)
          expect(told[k].filter((g) => g.device === d.device).at(-1)?.peakReservedBytes, a.name).toBe(
            d.peakReservedBytes,
          );
        expect(told[k].filter((g) => g.failed).length, a.name).toBe(a.ooms);
      }
      if (c.memoryLimit !== undefined) expect(r.allocators.some((a) => a.ooms > 0)).toBe(true);
    });
  }
});

describe('replayInSlices', () => {
  it('yields the next event to serve, and an error thrown in at a yield ends the run there with its figures so far', () => {
    const snapshot = trace('cnn_train-native');
    const plan = planReplay(snapshot);
    const options = {
      allocators: selectAllocators(['pytorch']),
      plan,
      startProcess: startOnSimulator(),
      keepEvents: false,
    };
    const slices = replayInSlices(snapshot, options, 1000);
    const reached: number[] = [];
    for (let k = 0; k < 5; k++) {
      const next = slices.next();
      expect(next.done).toBe(false);
      reached.push(next.value as number);
    }
    expect(reached).toEqual([1000, 2000, 3000, 4000, 5000]);
    const end = slices.throw(new PastTheBar('past'));
    expect(end.done).toBe(true);
    const stopped = (end.value as Exclude<typeof end.value, number>).allocators[0];
    expect(stopped.error).toBe('PastTheBar: past (at event 4999 of device 0)');
    // The figures are those of the first 5,000 events: what a run of only those would reserve.
    const full = replay(snapshot, { ...options }).allocators[0];
    expect(stopped.peakReservedBytes).toBeLessThanOrEqual(full.peakReservedBytes);
    let atEvent = -1;
    let peakThere = 0;
    replay(snapshot, {
      ...options,
      onStep: (s) => {
        if (s.event <= 4999 && s.event >= atEvent) {
          atEvent = s.event;
          peakThere = s.allocator.stats.peakReservedBytes;
        }
      },
    });
    expect(stopped.peakReservedBytes).toBe(peakThere);
  });
});
