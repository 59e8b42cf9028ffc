/**
 * A job's ranks side by side (src/replay/analyse/ranks.ts): a snapshot of
 * two devices from other people (fixtures/wild), and three H200 recordings
 * made in one call, whose time_us share one clock.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { ALLOCATOR_REGISTRY } from '../../../src/replay/engine/allocators.js';

import { planReplay } from '../../../src/replay/engine/trace-plan.js';

import { ReplayError } from '../../../src/replay/errors.js';
import { readSnapshotFile } from '../../../src/replay/read/load.js';
import { advise, answerWhatIf, reproduceRecording, summariseRanks } from '../../support/replay.js';

const whatif = fileURLToPath(new URL('../../../traces/h200-whatif/', import.meta.url));
const wild = fileURLToPath(new URL('../fixtures/wild/', import.meta.url));
const MiB = 2 ** 20;
const pytorch = ALLOCATOR_REGISTRY.filter((a) => a.name === 'pytorch');

describe('summariseRanks', () => {
  const two = readSnapshotFile(`${wild}memsnapdump-multi-devices.pickle.gz`);

  it("a snapshot's devices are ranks: which peaks, which runs out under a limit, advise's one setting", async () => {
    const limit = 600 * MiB;
    const r = await summariseRanks([two], { names: ['job'], memoryLimit: limit, workers: 0 });
    const recorded = reproduceRecording(two, { plan: planReplay(two) }).devices;
    expect(r.ranks.map((k) => k.name)).toEqual(['job device 0', 'job device 1']);
    expect(r.ranks.map((k) => k.peakReservedBytes)).toEqual(recorded.map((d) => d.recordedPeakBytes));
    const highest = recorded.reduce((a, b) => (b.recordedPeakBytes > a.recordedPeakBytes ? b : a));
    expect(r.ranks[r.peakRank].device).toBe(highest.device);
    const peaks = recorded.map((d) => d.recordedPeakBytes);
    expect(r.spreadBytes).toBe(Math.max(...peaks) - Math.min(...peaks));
    // Under 600 MiB the device that peaked at 614 MiB runs out and the one at 526 MiB fits, as replay says.
    const answer = answerWhatIf(two, {
      plan: planReplay(two, { memoryLimit: limit }),
      allocators: pytorch,
      memoryLimit: limit,
    });
    for (const k of r.ranks) {
      const run = answer.result.allocators[0].devices.find((d) => d.device === k.device);
      expect(k.underSetting?.fits, k.name).toBe(run?.firstOom === null);
      expect(k.underSetting?.firstOom?.event ?? -1, k.name).toBe(run?.firstOom?.event ?? -1);
    }
    expect(r.ranks.filter((k) => k.underSetting?.fits === false).map((k) => k.device)).toEqual([0]);
    expect(r.firstToRunOut?.rank).toBe(0);
    // The one setting for every rank is advise's own answer on the same snapshots.
    const advice = await advise([two], { memoryLimit: limit, workers: 0 });
    expect(r.advice?.allocConf).toBe(advice.recommended?.allocConf ?? null);
    expect(r.advice?.verdict).toBe(advice.verdict);
  });

  it('three ranks with times: the first to run out is the one whose failed request came earliest', async () => {
    const names = ['gpt_train', 'kv_decode', 'graphs_serve'];
    const snapshots = names.map((n) => readSnapshotFile(`${whatif}${n}--reference.pickle.gz`));
    const limit = 400 * MiB;
    const r = await summariseRanks(snapshots, { names, memoryLimit: limit, advise: false });
    expect(r.advice).toBeNull();
    expect(r.ranks.map((k) => k.name)).toEqual(names);
    expect(r.verdicts).toEqual(['runs-out', 'runs-out', 'runs-out']);
    const firstOoms = snapshots.map((s) => {
      const a = answerWhatIf(s, {
        plan: planReplay(s, { memoryLimit: limit }),
        allocators: pytorch,
        memoryLimit: limit,
      });
      return a.result.allocators[0].devices[0].firstOom;
    });
    const times = firstOoms.map((o) => o?.timeUs ?? Number.NaN);
    expect(times.every(Number.isFinite)).toBe(true);
    expect(r.ranks.map((k) => k.underSetting?.firstOom?.timeUs)).toEqual(times);
    expect(r.firstToRunOut).toEqual({ rank: times.indexOf(Math.min(...times)), by: 'time' });
    // gpt_train peaks highest of the three (6.35 GiB against kv_decode's and graphs_serve's).
    expect(r.ranks[r.peakRank].name).toBe('gpt_train');
  });

  it('no setting, no verdicts; bad input is a typed error', async () => {
    const r = await summariseRanks([two], { advise: false });
    expect(r.setting).toBeNull();
    expect(r.verdicts).toBeNull();
    expect(r.firstToRunOut).toBeNull();
    expect(r.ranks.every((k) => k.underSetting === null)).toBe(true);
    await expect(summariseRanks([])).rejects.toThrow(ReplayError);
    await expect(summariseRanks([two], { names: ['a', 'b'] })).rejects.toThrow(ReplayError);
  });
});

describe('summariseRanks beside a segment list', () => {
  it('gives the snapshot with no history no row, and the others theirs', async () => {
    const two = readSnapshotFile(`${wild}memsnapdump-multi-devices.pickle.gz`);
    const list = readSnapshotFile(`${wild}layoutediting-segment-list.pickle.gz`);
    const r = await summariseRanks([list, two], { names: ['list', 'job'], advise: false });
    expect(r.ranks.map((k) => [k.snapshot, k.name])).toEqual([
      [1, 'job device 0'],
      [1, 'job device 1'],
    ]);
    expect(r.ranks.map((k) => k.rank)).toEqual([0, 1]);
  });
});
