/**
 * The recorder's merge mode (conformance/cuda/record.ts, Note [Merged
 * transcripts]): every case keeps the run its record came from.
 */
import { describe, expect, it } from 'vitest';
import type { CaseRecord } from '../../conformance/cuda/cases.js';
import {
  combineTranscripts,
  mergeTranscripts,
  type RunInfo,
  type Transcript,
} from '../../conformance/cuda/record.js';

const run = (recordedAt: string, cases: number): RunInfo => ({
  recordedAt,
  gpu: {
    name: 'NVIDIA H200',
    driverVersion: '580.159.04',
    memoryTotal: '143771 MiB',
    cudaDriverVersion: 13000,
  },
  driver: null,
  restarts: [],
  cases,
});
const rec = (code: number): CaseRecord => ({ steps: [{ op: 'cuMemCreate', code }] });

describe('mergeTranscripts', () => {
  it('a single run: every case from run 0, in the order of the case list', () => {
    const r = run('2026-12-01T10:00:00.000Z', 2);
    const m = mergeTranscripts({ runs: [], caseRun: {}, cases: {} }, r, { b: rec(1), a: rec(0) }, ['a', 'b']);
    expect(Object.keys(m.cases)).toEqual(['a', 'b']);
    expect(m.runs).toEqual([r]);
    expect(m.caseRun).toEqual({ a: 0, b: 0 });
  });

  it('re-recorded cases come from the new run, the others keep their old run; unused runs and gone cases drop', () => {
    const first = run('2026-11-30T08:00:00.000Z', 3);
    const second = run('2026-11-30T09:00:00.000Z', 1);
    const previous: Pick<Transcript, 'runs' | 'caseRun' | 'cases'> = {
      runs: [first, second],
      caseRun: { a: 0, b: 1, gone: 0 },
      cases: { a: rec(0), b: rec(1), gone: rec(2) },
    };
    const third = run('2026-12-01T10:00:00.000Z', 2);
    const m = mergeTranscripts(previous, third, { b: rec(801), c: rec(2) }, ['a', 'b', 'c']);
    expect(m.cases).toEqual({ a: rec(0), b: rec(801), c: rec(2) });
    // `second` recorded only b, which was re-recorded: no case points to it any more.
    expect(m.runs).toEqual([first, third]);
    expect(m.caseRun).toEqual({ a: 0, b: 1, c: 1 });
  });

  it('a case neither recorded now nor before is left out, not invented', () => {
    const m = mergeTranscripts(
      { runs: [], caseRun: {}, cases: {} },
      run('2026-12-01T10:00:00.000Z', 1),
      { a: rec(0) },
      ['a', 'b'],
    );
    expect(Object.keys(m.cases)).toEqual(['a']);
  });
});

describe('combineTranscripts', () => {
  it('two merges of one transcript: each case from the newer run holding it, runs in recorded order', () => {
    const base = run('2026-12-01T09:00:00.000Z', 2);
    const mine = run('2026-12-01T12:00:00.000Z', 2);
    const theirs = run('2026-12-01T11:00:00.000Z', 1);
    const a = {
      runs: [base, theirs],
      caseRun: { a: 0, b: 0, t: 1 },
      cases: { a: rec(0), b: rec(0), t: rec(7) },
    };
    const b = {
      runs: [base, mine],
      caseRun: { a: 1, b: 0, m: 1 },
      cases: { a: rec(801), b: rec(0), m: rec(2) },
    };
    const c = combineTranscripts(a, b, ['a', 'b', 't', 'm', 'never']);
    expect(c.cases).toEqual({ a: rec(801), b: rec(0), t: rec(7), m: rec(2) });
    expect(c.runs).toEqual([base, theirs, mine]);
    expect(c.caseRun).toEqual({ a: 2, b: 0, t: 1, m: 2 });
  });
});
