/**
 * vmmkit over the real driver, held to its lists: the latest H200 run of
 * prove.js (conformance/results/h200-vmmkit-cases.json) against the raw
 * driver's transcript, case by case, and today's code over the fake driver
 * against that run.
 *
 * Every case the run recorded must agree with the raw driver where neither
 * list names it, answer as the simulated flavour where only the simulator's
 * list does, and differ exactly as its KNOWN_BACKEND_DIVERGENCES entry says
 * where that list does: a listed case that starts agreeing, or differs in any
 * other way, fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { wantsFreshProcess } from '../../conformance/cuda/cases/startup-heap.js';
import { type CaseRecord, caseNames } from '../../conformance/cuda/cases.js';
import {
  backendDepartures,
  departuresOverTheDriver,
  differences,
  KNOWN_BACKEND_DIVERGENCES,
  KNOWN_DIVERGENCES,
} from '../../conformance/cuda/known-divergences.js';
import { runSimulatedCase } from '../../conformance/cuda/record.js';
import { createFakeDriver } from '../../conformance/gpu/fake-driver.js';
import { backendCase, retainedPrimary } from '../../conformance/gpu/prove.js';

const read = <T>(path: string): T =>
  JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')) as T;

interface Run {
  date: string;
  transcript: string;
  cases: Record<string, { record: CaseRecord }>;
}
const run = read<Run>('conformance/results/h200-vmmkit-cases.json');
const transcript = read<{ cases: Record<string, CaseRecord> }>('conformance/results/h200-driver.json');
const names = caseNames();
const inRun = names.filter((n) => run.cases[n] !== undefined && transcript.cases[n] !== undefined);

/** The simulated flavour's record of a case, run once. */
const simulated = new Map<string, CaseRecord>();
const simulatorOf = (name: string): CaseRecord => {
  if (!simulated.has(name)) simulated.set(name, runSimulatedCase(name).record);
  return simulated.get(name)!;
};

describe('KNOWN_BACKEND_DIVERGENCES', () => {
  it('each entry names a case and at least one difference, held against the simulator exactly where its list holds the case', () => {
    for (const [name, entry] of Object.entries(KNOWN_BACKEND_DIVERGENCES)) {
      expect(names, `${name} is no case`).toContain(name);
      const listed =
        Object.keys(entry.steps ?? {}).length +
        (entry.onlyTheirs?.length ?? 0) +
        (entry.onlyVmmkit?.length ?? 0) +
        (entry.contextAfter === undefined ? 0 : 1);
      expect(listed, `${name} lists no difference`).toBeGreaterThan(0);
      expect(entry.against, name).toBe(KNOWN_DIVERGENCES[name] === undefined ? 'driver' : 'simulator');
      expect(entry.why.length, name).toBeGreaterThan(40);
    }
  });

  it('the latest run compared with the transcript it names', () => {
    expect(run.transcript).toBe('conformance/results/h200-driver.json');
    expect(inRun.length).toBeGreaterThan(400);
  });

  // Sabotage: the check tells a listed case that agrees, or differs otherwise, from one that differs as listed.
  it('a listed case that agrees, or differs in another step or code, departs', () => {
    const entry = KNOWN_BACKEND_DIVERGENCES['map.overReservationLoneAtStart']!;
    const driver = transcript.cases['map.overReservationLoneAtStart']!;
    const got = run.cases['map.overReservationLoneAtStart']!.record;
    expect(backendDepartures(entry, driver, got)).toEqual([]);
    expect(backendDepartures(entry, driver, driver).length).toBeGreaterThan(0);
    const otherCode = structuredClone(got);
    otherCode.steps.find((s) => s.op === 'mapTwiceTheReservation')!.code = 1;
    expect(backendDepartures(entry, driver, otherCode).length).toBeGreaterThan(0);
    const elsewhere = structuredClone(got);
    elsewhere.steps[0]!.code = 2;
    expect(backendDepartures(entry, driver, elsewhere).length).toBeGreaterThan(0);
    const faulted = { ...got, contextAfter: 719 };
    expect(backendDepartures(entry, driver, faulted).length).toBeGreaterThan(0);
    const fault = KNOWN_BACKEND_DIVERGENCES['stickyFault.callsAfter']!;
    const faultDriver = transcript.cases['stickyFault.callsAfter']!;
    expect(backendDepartures(fault, faultDriver, faultDriver).length).toBeGreaterThan(0);
  });

  it.each(inRun)('%s: the latest H200 run agrees, or differs as listed', (name) => {
    const got = run.cases[name]!.record;
    const departures = departuresOverTheDriver(name, got, transcript.cases[name]!, simulatorOf(name));
    expect(departures, `${name} over the real driver:\n  ${departures.join('\n  ')}`).toEqual([]);
  });
});

interface FreshRuns {
  cases: Record<string, { runs: { raw: CaseRecord; vmmkit: CaseRecord }[] }>;
}
const fresh = read<FreshRuns>('conformance/results/h200-fresh-cases.json');
const freshCreated = read<FreshRuns>('conformance/results/h200-fresh-created-contexts.json');

describe('the start-up heap cases in fresh processes on the H200 (conformance/gpu/fresh-cases.ts)', () => {
  const created = (name: string) => /CreatedContext|createdContext/.test(name);
  const plain = Object.keys(fresh.cases).filter((n) => !created(n));

  it('ran every start-up heap case', () => {
    expect(Object.keys(fresh.cases).sort()).toEqual(names.filter(wantsFreshProcess).sort());
  });

  // The reason the ten prove-worker entries had ("the hole is not free in prove's worker") is gone: in a
  // fresh process their distances are the driver's, and what differs is what their entries list.
  it.each(plain)('%s: the raw driver answers as the transcript, vmmkit as listed, in every round', (name) => {
    for (const { raw, vmmkit } of fresh.cases[name]!.runs) {
      expect(differences(transcript.cases[name]!, raw)).toEqual([]);
      expect(departuresOverTheDriver(name, vmmkit, raw, simulatorOf(name))).toEqual([]);
    }
  });

  // startupHeap.loneAfterCreatedContext's reason: where a created context's first reservation lands.
  it("a created context's first reservation lands -320 granules from the hole in 16 processes of 25, -336 in 6, -304 in 3", () => {
    const firstStep: Record<string, string> = {
      'startupHeap.loneAfterCreatedContext': 'granulesFromBefore',
      'startupHeap.createdContextTwoLone': 'firstFromBefore',
      'startupHeap.twoCreatedContexts': 'inFirstFromBefore',
      'startupHeap.cuMemAllocInCreatedContext': 'allocFromBefore',
      'startupHeap.reservationOutlivesCreatedContext': 'inContextFromBefore',
    };
    const counts: Record<string, number> = {};
    for (const file of [fresh, freshCreated])
      for (const [name, { runs }] of Object.entries(file.cases)) {
        const op = firstStep[name];
        if (op === undefined) continue;
        for (const { raw } of runs) {
          const value = String(raw.steps.find((s) => s.op === op)?.value);
          counts[value] = (counts[value] ?? 0) + 1;
        }
      }
    expect(counts).toEqual({ '-320': 16, '-336': 6, '-304': 3 });
    expect(Object.keys(firstStep).filter(created).length).toBe(Object.keys(firstStep).length);
    // The simulator's figure is one of the driver's.
    const sim = simulatorOf('startupHeap.loneAfterCreatedContext').steps.find(
      (s) => s.op === 'granulesFromBefore',
    );
    expect(sim?.value).toBe(-304);
  });
});

/**
 * Note [The backend over the fake driver]
 * conformance/gpu/fake-driver.ts answers the driver's calls from a simulated
 * machine. Where it answers as the H200 did, vmmkit's CUDA backend over it
 * must answer what it answered on the H200: so a change to the backend or the
 * flavour that moves an answer shows here, listed case or not, without a GPU.
 * Each case runs as prove.js runs it, in a fresh fake process (the start-up
 * heap's cases ran first in a fresh process on the H200 too). Where the fake is
 * not the H200, the case is named below with what differs.
 */
const FAKE_IS_NOT_THE_H200: Readonly<Record<string, string>> = {
  'import.afterFdClosed':
    "importing a closed descriptor: the H200's driver answers CUDA_ERROR_UNKNOWN (999), the fake imports it (its descriptors name /dev/null and its own table keeps the handle)",
};

describe('the CUDA backend today answers what it answered on the H200 (over the fake driver)', () => {
  it('cases the fake cannot answer as the H200 are cases, and in the run', () => {
    for (const name of Object.keys(FAKE_IS_NOT_THE_H200)) expect(inRun).toContain(name);
  });

  it.each(inRun)('%s', (name) => {
    const driver = createFakeDriver();
    const { record } = backendCase(driver, retainedPrimary(driver), name);
    const diff = differences(run.cases[name]!.record, record);
    if (FAKE_IS_NOT_THE_H200[name] === undefined)
      expect(
        diff,
        `${name}: the backend answers otherwise than on the H200 (${run.date}):\n  ${diff.join('\n  ')}`,
      ).toEqual([]);
    else
      expect(diff.length, `${name} now answers over the fake as on the H200: unlist it`).toBeGreaterThan(0);
  });
});
