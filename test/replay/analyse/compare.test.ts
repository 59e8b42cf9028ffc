/**
 * Two snapshots compared (src/replay/analyse/compare.ts), on runs of one job
 * recorded on the H200 under different settings (traces/h200-whatif), whose
 * results.json holds PyTorch's own max_memory_reserved for each.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { readSnapshotFile } from '../../../src/replay/read/load.js';
import type { MemorySnapshot } from '../../../src/replay/read/snapshot.js';
import { compareSnapshots } from '../../support/replay.js';

const whatif = fileURLToPath(new URL('../../../traces/h200-whatif/', import.meta.url));
const wild = fileURLToPath(new URL('../fixtures/wild/', import.meta.url));
const runs = (
  JSON.parse(readFileSync(`${whatif}results.json`, 'utf8')) as {
    runs: { name: string; maxMemoryReserved: number; peakRequestedBytes: number }[];
  }
).runs;
const reserved = (name: string) => runs.find((r) => r.name === name)?.maxMemoryReserved ?? Number.NaN;

describe('compareSnapshots', () => {
  const reference = readSnapshotFile(`${whatif}gpt_train--reference.pickle.gz`);

  it("before and after a setting: the engine's answer for the first under the second's setting is what PyTorch reserved in the second run", () => {
    const expandable = readSnapshotFile(`${whatif}gpt_train--expandable.pickle.gz`);
    const c = compareSnapshots(reference, expandable, { allocConf: 'expandable_segments:True' });
    expect(c.a.reproduced && c.b.reproduced).toBe(true);
    const d = c.devices[0];
    expect(d.a.reservedBytes).toBe(reserved('gpt_train--reference'));
    expect(d.b.reservedBytes).toBe(reserved('gpt_train--expandable'));
    expect(d.reservedDifferenceBytes).toBe(
      reserved('gpt_train--expandable') - reserved('gpt_train--reference'),
    );
    // The same requests in the same order: the same bytes live at each peak, in the same (unknown) category.
    expect(d.a.peakAllocatedBytes).toBe(d.b.peakAllocatedBytes);
    expect(d.allocatedDifferenceBytes).toBe(0);
    for (const k of d.categories) expect(k.differenceBytes, k.category).toBe(0);
    // So the whole difference is the allocator's slack.
    expect((d.b.slack?.totalBytes ?? 0) - (d.a.slack?.totalBytes ?? 0)).toBe(d.reservedDifferenceBytes);
    // No second recording needed: the reference replayed under expandable segments reserves what PyTorch did.
    expect(d.underSetting?.aPeakBytes).toBe(reserved('gpt_train--expandable'));
    expect(d.underSetting?.bPeakBytes).toBe(reserved('gpt_train--expandable'));
    expect(c.verdicts).toEqual({ a: 'fits', b: 'fits' });
    expect(c.onlyInA).toEqual([]);
    expect(c.onlyInB).toEqual([]);
  });

  it("and under max_split_size_mb:256, whose peak is 1.56 times the reference run's", () => {
    const mss = readSnapshotFile(`${whatif}gpt_train--mss256.pickle.gz`);
    const c = compareSnapshots(reference, mss, { allocConf: 'max_split_size_mb:256' });
    const d = c.devices[0];
    expect(d.b.reservedBytes).toBe(reserved('gpt_train--mss256'));
    expect(d.underSetting?.aPeakBytes).toBe(reserved('gpt_train--mss256'));
    expect(d.underSetting?.bPeakBytes).toBe(reserved('gpt_train--mss256'));
    expect(d.b.reservedBytes / d.a.reservedBytes).toBeCloseTo(1.56, 2);
  });

  it('without a setting, compares the recordings only', () => {
    const mss = readSnapshotFile(`${whatif}gpt_train--mss256.pickle.gz`);
    const c = compareSnapshots(reference, mss);
    expect(c.setting).toBeNull();
    expect(c.verdicts).toBeNull();
    const d = c.devices[0];
    expect(d.underSetting).toBeNull();
    expect(d.b.reservedBytes).toBe(reserved('gpt_train--mss256'));
    expect(d.reservedDifferenceBytes).toBe(reserved('gpt_train--mss256') - reserved('gpt_train--reference'));
  });

  it('a snapshot against itself differs in nothing', () => {
    const stacks = readSnapshotFile(`${whatif}gpt_train--stacks.pickle`);
    const c = compareSnapshots(stacks, stacks);
    const d = c.devices[0];
    expect(d.reservedDifferenceBytes).toBe(0);
    expect(d.allocatedDifferenceBytes).toBe(0);
    expect(d.categories.every((k) => k.differenceBytes === 0)).toBe(true);
    expect(d.stacks).toEqual([]);
  });

  it('matches stacks by function and file, so lines moved by the change read as the same stack', () => {
    const stacks = readSnapshotFile(`${whatif}gpt_train--stacks.pickle`);
    const moved: MemorySnapshot = {
      ...stacks,
      frames: stacks.frames.map((f) => ({ ...f, line: typeof f.line === 'number' ? f.line + 7 : f.line })),
    };
    const c = compareSnapshots(stacks, moved);
    expect(c.devices[0].stacks).toEqual([]);
  });

  it("names the stacks that changed, with each side's bytes", () => {
    const stacks = readSnapshotFile(`${whatif}gpt_train--stacks.pickle`);
    // The same job recorded without stacks: every block of B is under no stack (a row per category its
    // annotations tell: AdamW's state, and the unknown rest), every stack of A is gone.
    const c = compareSnapshots(stacks, reference, { topStacks: 10_000 });
    const d = c.devices[0];
    const none = d.stacks.filter((s) => s.summary === '(no stack recorded)');
    const sum = (rows: typeof none, f: (s: (typeof none)[number]) => number) =>
      rows.reduce((n, s) => n + f(s), 0);
    expect(none.length).toBeGreaterThan(0);
    expect(sum(none, (s) => s.aBytes)).toBe(0);
    expect(sum(none, (s) => s.bBytes)).toBe(d.b.allocatedBytes);
    const gone = d.stacks.filter((s) => !none.includes(s));
    expect(gone.every((s) => s.bBytes === 0 && s.differenceBytes === -s.aBytes)).toBe(true);
    expect(sum(gone, (s) => s.aBytes)).toBe(d.a.allocatedBytes);
  });

  it('devices only one side has are listed', () => {
    const two = readSnapshotFile(`${wild}memsnapdump-multi-devices.pickle.gz`);
    const c = compareSnapshots(two, reference);
    expect(c.devices.map((d) => d.device)).toEqual([0]);
    expect(c.onlyInA).toEqual([1]);
    expect(c.onlyInB).toEqual([]);
  });
});
