/**
 * The simulator against the real driver, case by case: every case of
 * conformance/cuda/cases.ts runs against a fresh simulated createCuda() and
 * its record (each call's code and recorded value) must equal the one the
 * H200 gave (conformance/results/h200-driver.json), except for the cases
 * listed in conformance/cuda/known-divergences.ts, which must still differ.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { CaseRecord, Step } from '../../conformance/cuda/cases.js';
import { caseNames } from '../../conformance/cuda/cases.js';
import { KNOWN_DIVERGENCES } from '../../conformance/cuda/known-divergences.js';
import { prepareEnv, runSimulatedCase } from '../../conformance/cuda/record.js';
import { createCuda } from '../../src/entry/processes.js';

interface Transcript {
  caseCount: number;
  driver: { totalMem: number; deviceCount: number; granularityMinimum: number };
  cases: Record<string, CaseRecord>;
}

const transcript = JSON.parse(
  readFileSync(new URL('../../conformance/results/h200-driver.json', import.meta.url), 'utf8'),
) as Transcript;

/** Live objects a case left behind in the simulated process (each case undoes what it made). */
const leftovers = new Map<string, string>();

/** Run one case against a fresh simulated process, noting anything it left alive. */
function simulate(name: string): CaseRecord {
  const { record, leftover } = runSimulatedCase(name);
  if (leftover !== undefined) leftovers.set(name, leftover);
  return record;
}

const show = (s: Step | undefined): string =>
  s === undefined ? '(no step)' : `${s.op} code=${s.code ?? '-'} value=${JSON.stringify(s.value ?? null)}`;

/** The differences between the driver's record and the simulator's, one line each; empty when they agree. */
function differences(driver: CaseRecord, sim: CaseRecord): string[] {
  const out: string[] = [];
  for (const key of ['crashed', 'threw', 'contextAfter'] as const) {
    if (driver[key] !== sim[key])
      out.push(
        `${key}: driver ${JSON.stringify(driver[key] ?? null)}, simulator ${JSON.stringify(sim[key] ?? null)}`,
      );
  }
  const n = Math.max(driver.steps.length, sim.steps.length);
  for (let i = 0; i < n; i++) {
    const d = driver.steps[i];
    const s = sim.steps[i];
    if (JSON.stringify(d) !== JSON.stringify(s))
      out.push(`step ${i}: driver ${show(d)} | simulator ${show(s)}`);
  }
  return out;
}

/**
 * Note [Cases not yet recorded]: a case added to cases.ts has no record until
 * it is run on the H200 (record.js --only NEW --merge h200-driver.json). Until
 * then it is skipped here, by name, rather than compared with nothing; every
 * case the transcript holds must still be a case, so a renamed or dropped one
 * is caught.
 */
const names = caseNames();
const recorded = names.filter((n) => transcript.cases[n] !== undefined);
const unrecorded = names.filter((n) => transcript.cases[n] === undefined);

describe('CUDA flavor agrees with the H200 driver', () => {
  it('every recorded case is a case, and the simulated machine is the recorded one', () => {
    expect(names).toEqual(expect.arrayContaining(Object.keys(transcript.cases)));
    expect(Object.keys(transcript.cases).length).toBe(recorded.length);
    const cu = createCuda();
    const { info } = prepareEnv(cu);
    expect(info.totalMem).toBe(transcript.driver.totalMem);
    expect(info.deviceCount).toBe(transcript.driver.deviceCount);
    expect(info.granularityMinimum).toBe(transcript.driver.granularityMinimum);
    cu.dispose();
  });

  it('conformance/cuda/to-record.txt names cases only (the GPU run records them: run-all.sh, step 0)', () => {
    const listed = readFileSync(new URL('../../conformance/cuda/to-record.txt', import.meta.url), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    for (const name of listed) expect(names, `to-record.txt lists ${name}, which is no case`).toContain(name);
  });

  it('every known divergence names a case and gives a reason', () => {
    for (const [name, reason] of Object.entries(KNOWN_DIVERGENCES)) {
      expect(names, `known-divergences.ts lists ${name}, which is no case`).toContain(name);
      expect(reason.trim().length, `known-divergences.ts gives ${name} no reason`).toBeGreaterThan(10);
    }
  });

  if (unrecorded.length > 0) it.skip.each(unrecorded)('%s (not yet recorded on the H200)', () => {});

  it.each(recorded)('%s', (name) => {
    const diff = differences(transcript.cases[name]!, simulate(name));
    const reason = KNOWN_DIVERGENCES[name];
    if (reason === undefined) {
      expect(diff, `the simulator departs from the driver in ${name}:\n  ${diff.join('\n  ')}`).toEqual([]);
    } else {
      expect(
        diff.length,
        `${name} now agrees with the driver: remove it from conformance/cuda/known-divergences.ts`,
      ).toBeGreaterThan(0);
    }
  });

  it('no agreeing case leaves objects behind in the simulator', () => {
    const agreeing = [...leftovers].filter(([name]) => KNOWN_DIVERGENCES[name] === undefined);
    expect(Object.fromEntries(agreeing)).toEqual({});
  });
});
