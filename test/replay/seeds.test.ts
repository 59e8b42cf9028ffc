/**
 * Advice from one run, checked on the next runs (traces/seeds, recorded on an H100 by
 * traces/seeds/record.py; see its README).
 *
 * Three workloads whose batch and sequence shapes are drawn from a data seed, five seeds each. vmmkit
 * advised from seed 0's snapshot under a limit set from seed 0's run (advise-seeds.mjs wrote
 * advice.json); the advice and the default ran under PyTorch on every seed under that limit
 * (results.json, written by record.py --run). What is checked here is what the committed evidence
 * must keep saying as the code changes:
 *
 * 1. Every seed's snapshot, replayed as recorded, gives PyTorch's max_memory_reserved of that run,
 *    to the byte.
 * 2. What `advise` recommends today from seed 0's snapshot under the limit is what ran on the GPU,
 *    with the same predicted peak (a change of the advice fails here until the new advice has run).
 * 3. The runs under the limit: every planned run came back, asked for what its seed's reference
 *    asked for, and the recorded outcome per seed is what results.json's summary says.
 * 4. Each run, predicted from its own seed's snapshot (replayed under the run's setting and limit),
 *    has PyTorch's OOM verdict and a peak within 2% of PyTorch's max_memory_reserved (measured: 0.31%
 *    at most, 27 of 30 to the byte).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { selectAllocators } from '../../src/replay/engine/allocators.js';

import { readSnapshotFile } from '../../src/replay/read/load.js';
import { advise, replay } from '../support/replay.js';

const dir = fileURLToPath(new URL('../../traces/seeds/', import.meta.url));
const MIB = 2 ** 20;

interface Reference {
  workload: string;
  seed: number;
  maxMemoryReserved: number;
  file: string | null;
  tracePeakEqualsMaxReserved: boolean;
}

interface Run {
  workload: string;
  seed: number;
  label: string;
  allocConf: string | null;
  allowedBytes: number | null;
  ended: 'ok' | 'oom' | 'error';
  maxMemoryReserved: number;
  numAllocRetries: number;
  numOoms: number;
  requests?: { sameAsReference?: boolean; sameAsReferenceBeforeOom?: boolean };
}

interface Advice {
  limits: Record<string, number>;
  advice: Record<
    string,
    {
      snapshot: string;
      memoryLimit: number;
      recommended: { allocConf: string; peakReservedBytes: number } | null;
    }
  >;
  runs: { workload: string; seed: number; label: string; allocConf: string | null; memoryLimit: number }[];
}

interface Results {
  gpu: string;
  /** The advice's runs that were run, by label (null: all of them). */
  labels: string[] | null;
  referenceRuns: Reference[];
  advice: Advice;
  runs: Run[];
  summary: {
    workload: string;
    label: string;
    heldOnEverySeed: boolean;
    seeds: Record<string, { ended: string }>;
  }[];
  failures: unknown[];
}

const refsFile = `${dir}references.json`;
const resultsFile = `${dir}results.json`;
const references: Reference[] = existsSync(refsFile)
  ? (JSON.parse(readFileSync(refsFile, 'utf8')) as { references: Reference[] }).references
  : [];
const results: Results | null = existsSync(resultsFile)
  ? (JSON.parse(readFileSync(resultsFile, 'utf8')) as Results)
  : null;

describe.skipIf(references.length === 0)('seeded runs: each snapshot reproduces its run', () => {
  const pytorch = selectAllocators(['pytorch']);
  for (const r of references.filter((x) => x.file !== null)) {
    it(`${r.workload} seed ${r.seed}: replayed as recorded, peak ${(r.maxMemoryReserved / MIB).toFixed(0)} MiB`, () => {
      expect(r.tracePeakEqualsMaxReserved).toBe(true);
      const a = replay(readSnapshotFile(dir + r.file!), { allocators: pytorch, keepEvents: false })
        .allocators[0];
      expect(a.error).toBeUndefined();
      expect(a.peakReservedBytes).toBe(r.maxMemoryReserved);
    });
  }
});

describe.runIf(results !== null)('seeded runs: advice from seed 0, run on every seed', () => {
  const res =
    results ??
    ({
      advice: { advice: {}, limits: {}, runs: [] },
      runs: [],
      summary: [],
      failures: [],
    } as unknown as Results);

  it('every planned run came back and asked for what its seed asked for', () => {
    expect(res.failures).toEqual([]);
    const planned = res.advice.runs
      .filter((p) => res.labels == null || res.labels.includes(p.label))
      .map((p) => `${p.workload} ${p.seed} ${p.label}`)
      .sort();
    expect(res.runs.map((r) => `${r.workload} ${r.seed} ${r.label}`).sort()).toEqual(planned);
    for (const r of res.runs) {
      const same = r.requests?.sameAsReference ?? r.requests?.sameAsReferenceBeforeOom;
      expect(same, `${r.workload} seed ${r.seed} ${r.label}: requests`).toBe(true);
      const limit = res.advice.limits[r.workload];
      expect(r.allowedBytes, `${r.workload} seed ${r.seed} ${r.label}: limit`).toBe(limit);
      expect(r.ended === 'oom', `${r.workload} seed ${r.seed} ${r.label}: OOM and num_ooms`).toBe(
        r.numOoms > 0,
      );
    }
  });

  it("the summary is the runs' own outcomes", () => {
    for (const s of res.summary) {
      const mine = res.runs.filter((r) => r.workload === s.workload && r.label === s.label);
      expect(s.heldOnEverySeed, `${s.workload} ${s.label}`).toBe(mine.every((r) => r.ended === 'ok'));
      for (const r of mine) expect(s.seeds[String(r.seed)].ended).toBe(r.ended);
    }
  });

  const pytorch = selectAllocators(['pytorch']);
  for (const r of res.runs) {
    it(`${r.workload} seed ${r.seed} ${r.label} (${r.allocConf ?? 'default'}): predicted from its snapshot as PyTorch ran it`, () => {
      const ref = res.referenceRuns.find((x) => x.workload === r.workload && x.seed === r.seed)!;
      const a = replay(readSnapshotFile(dir + ref.file!), {
        allocators: pytorch,
        keepEvents: false,
        allocConf: r.allocConf ?? undefined,
        memoryLimit: r.allowedBytes ?? undefined,
        stopAtOom: true,
      }).allocators[0];
      expect(a.error).toBeUndefined();
      expect(a.firstOom === null ? 'no OOM' : 'OOM', `${r.workload} seed ${r.seed} ${r.label}`).toBe(
        r.ended === 'oom' ? 'OOM' : 'no OOM',
      );
      const off = (a.peakReservedBytes - r.maxMemoryReserved) / r.maxMemoryReserved;
      expect(
        Math.abs(off),
        `replay ${(a.peakReservedBytes / MIB).toFixed(1)} MiB, PyTorch ${(r.maxMemoryReserved / MIB).toFixed(1)} MiB`,
      ).toBeLessThanOrEqual(0.02);
    });
  }

  for (const [workload, a] of Object.entries(res.advice.advice)) {
    it(`${workload}: advise on seed 0 under ${(a.memoryLimit / MIB).toFixed(0)} MiB still recommends what ran`, async () => {
      const now = await advise(readSnapshotFile(dir + a.snapshot), { memoryLimit: a.memoryLimit });
      expect(now.recommended?.allocConf, `${workload}: advise today`).toBe(a.recommended?.allocConf);
      expect(now.recommended?.peakReservedBytes).toBe(a.recommended?.peakReservedBytes);
    }, 300_000);
  }
});
