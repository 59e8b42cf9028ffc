/**
 * The cap a recording does not state (src/replay/engine/cap.ts, Note [The
 * recorded cap]) and the recording reproduced under it (as-recorded.ts), on
 * small traces whose every number is worked out by hand.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_PYTORCH_SETTINGS } from '../../src/alloc/pytorch/settings.js';
import { ALLOCATOR_REGISTRY } from '../../src/replay/engine/allocators.js';

import { inferDeviceCap, retriesUnder } from '../../src/replay/engine/cap.js';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { answerLines, asRecordedLines, capLines } from '../../src/replay/engine/verdict.js';
import { answerWhatIf, reproduceRecording } from '../support/replay.js';
import { type Event, snapshotOf } from './helpers.js';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const A = 0x7f0000000000;
const B = A + GiB;
const C = A + 2 * GiB;

/** Two large tensors in segments of their own, then a 50 MiB request that fails with 70 MiB reserved. */
const ranOut: Event[] = [
  ['segment_alloc', A, 30 * MiB],
  ['alloc', A, 30 * MiB],
  ['segment_alloc', B, 40 * MiB],
  ['alloc', B, 40 * MiB],
  ['oom', 80 * GiB, 50 * MiB],
];

/** The same, but the program frees the first tensor and a retry releases its segment before a 60 MiB request. */
const retried: Event[] = [
  ['segment_alloc', A, 30 * MiB],
  ['alloc', A, 30 * MiB],
  ['segment_alloc', B, 40 * MiB],
  ['alloc', B, 40 * MiB],
  ['free_requested', A, 30 * MiB],
  ['free_completed', A, 30 * MiB],
  ['segment_free', A, 30 * MiB],
  ['segment_alloc', C, 60 * MiB],
  ['alloc', C, 60 * MiB],
  ['oom', 80 * GiB, 50 * MiB],
];

describe('the cap, from the trace alone', () => {
  it('an oom bounds it from above, the peak from below', () => {
    const plan = planReplay(snapshotOf(ranOut));
    const cap = inferDeviceCap(plan.devices[0], DEFAULT_PYTORCH_SETTINGS);
    expect(cap.peakBytes).toBe(70 * MiB);
    expect(cap.lowBytes).toBe(70 * MiB);
    // Failed with 70 MiB reserved needing 50 MiB: the cap was below 120 MiB.
    expect(cap.highBytes).toBe(120 * MiB - 1);
    expect(cap.ooms).toEqual([
      {
        event: 4,
        requestBytes: 50 * MiB,
        needBytes: 50 * MiB,
        reservedBytes: 70 * MiB,
        deviceFreeBytes: 80 * GiB,
      },
    ]);
    expect(cap.deviceFull).toBe(false);
  });

  it('a run of frees before a new segment is a retry only under caps below what the first try needed', () => {
    const plan = planReplay(snapshotOf(retried));
    const cap = inferDeviceCap(plan.devices[0], DEFAULT_PYTORCH_SETTINGS);
    // 70 MiB held before the free, 60 MiB needed: a retry under any cap below 130 MiB.
    expect(cap.runs).toEqual([
      { event: 6, reservedBytes: 70 * MiB, retryBelowBytes: 130 * MiB, collectBelowBytes: 0 },
    ]);
    expect([...retriesUnder(cap, 129 * MiB)]).toEqual([6]);
    expect([...retriesUnder(cap, 130 * MiB)]).toEqual([]);
    expect([...retriesUnder(cap, undefined)]).toEqual([]);
    // The oom shows a cap, so the run is taken for a retry: the cap was below 130 MiB as well as 150.
    expect(cap.peakBytes).toBe(100 * MiB);
    expect(cap.highBytes).toBe(130 * MiB - 1);
  });

  it('a device with less free than the request needed was full', () => {
    const full: Event[] = [...ranOut.slice(0, 4), ['oom', 10 * MiB, 50 * MiB]];
    const cap = inferDeviceCap(planReplay(snapshotOf(full)).devices[0], DEFAULT_PYTORCH_SETTINGS);
    expect(cap.deviceFull).toBe(true);
  });

  it('a trace with no segment events shows no cap', () => {
    const bare: Event[] = [
      ['alloc', A, 512],
      ['oom', 80 * GiB, 200 * GiB],
    ];
    const cap = inferDeviceCap(planReplay(snapshotOf(bare)).devices[0], DEFAULT_PYTORCH_SETTINGS);
    expect(cap.seen).toBe(false);
    expect(cap.highBytes).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('the recording reproduced under that cap', () => {
  it('reproduces an OOM-ended trace and says so first', () => {
    const snapshot = snapshotOf(ranOut);
    const ar = reproduceRecording(snapshot, { plan: planReplay(snapshot) });
    expect(ar.reproduced).toBe(true);
    expect(ar.devices[0].cap.lowBytes).toBe(70 * MiB);
    expect(ar.devices[0].cap.highBytes).toBe(120 * MiB - 1);
    expect(asRecordedLines(ar)).toEqual([
      'as recorded: reproduced (peak 70.0 MiB, OOM at event 4: 50.0 MiB) (no settings recorded; the defaults)',
    ]);
    expect(capLines({ kind: 'inferred', devices: [] }, ar)[0]).toMatch(
      /^cap: inferred from the recording: 70.0 MiB to 120.0 MiB \(the OOM at event 4 needed 50.0 MiB with 70.0 MiB reserved\)/,
    );
  });

  it('reproduces the retry as a retry, not as an empty_cache() call', () => {
    const snapshot = snapshotOf(retried);
    const ar = reproduceRecording(snapshot, { plan: planReplay(snapshot) });
    expect(ar.devices[0].differences).toEqual([]);
    expect(ar.plan.devices[0].counts.inferredEmptyCaches).toBe(0);
  });

  it('says where a recording is not reproduced: a recorded OOM the model would have served', () => {
    // The first tensor freed leaves a cached 30 MiB segment, and a 10 MiB request then "fails": PyTorch would
    // have split the cached block, so this recording is not one PyTorch's allocator could have made.
    const odd: Event[] = [
      ...ranOut.slice(0, 4),
      ['free_requested', A, 30 * MiB],
      ['free_completed', A, 30 * MiB],
      ['oom', 80 * GiB, 10 * MiB],
    ];
    const snapshot = snapshotOf(odd);
    const ar = reproduceRecording(snapshot, { plan: planReplay(snapshot) });
    expect(ar.reproduced).toBe(false);
    expect(asRecordedLines(ar)[0]).toMatch(/^as recorded: NOT reproduced on device 0/);
    expect(ar.devices[0].differences[0]).toMatch(/^the recorded OOM at event 6 \(10.0 MiB\) succeeded/);
    expect(ar.devices[0].recordedOoms).toEqual([{ event: 6, bytes: 10 * MiB, reproduced: false }]);
  });

  it('keeps each device to its own cap: device 1 ran out, device 0 did not', () => {
    const fine: Event[] = ranOut.slice(0, 4);
    const snapshot = snapshotOf(fine, ranOut);
    const ar = reproduceRecording(snapshot, { plan: planReplay(snapshot) });
    expect(ar.reproduced).toBe(true);
    const [d0, d1] = ar.devices;
    expect(d0.cap.highBytes).toBe(Number.POSITIVE_INFINITY);
    expect(d1.cap.highBytes).toBe(120 * MiB - 1);
    expect(d1.recordedOoms).toEqual([{ event: 4, bytes: 50 * MiB, reproduced: true }]);
    expect(asRecordedLines(ar)[0]).toBe(
      'as recorded: reproduced (device 0: peak 70.0 MiB; device 1: peak 70.0 MiB, OOM at event 4: 50.0 MiB) (no settings recorded; the defaults)',
    );
  });
});

describe('what-ifs over the interval', () => {
  it('fits under any cap, runs out under any, or fits only from a threshold up', () => {
    // Under the interval [70, 120) MiB: vmmkit's allocator (2 MiB pages, no rounding to 20 MiB) and the native one.
    const snapshot = snapshotOf(ranOut);
    const answer = answerWhatIf(snapshot, { plan: planReplay(snapshot), allocators: ALLOCATOR_REGISTRY });
    expect(answer.cap.kind).toBe('inferred');
    const by = new Map(answer.answers.map((a) => [a.name, a]));
    // The recorded settings' model runs out wherever the recording did.
    expect(by.get('pytorch')?.verdict).toBe('runs-out');
    // The 50 MiB request needs 120 MiB in all: every allocator here needs at least that, above the interval.
    for (const a of answer.answers) expect(a.verdict).toBe('runs-out');
    // Given a cap of 200 MiB, all fit.
    const roomy = answerWhatIf(snapshot, {
      plan: planReplay(snapshot),
      allocators: ALLOCATOR_REGISTRY,
      memoryLimit: 200 * MiB,
    });
    expect(roomy.cap.kind).toBe('given');
    for (const a of roomy.answers) expect(a.verdict).toBe('fits');
  });

  it('finds the least cap a setting fits under, to the page, on the device that ran out', () => {
    // Native PyTorch puts a 4 MiB tensor in a 20 MiB segment (N4) whose 16 MiB rest fits neither the 17 MiB
    // tensor after it (an 18 MiB segment) nor the 30 MiB request that fails with 38 MiB reserved: the cap was
    // below 68 MiB.
    const C4: Event[] = [
      ['segment_alloc', A, 20 * MiB],
      ['alloc', A, 4 * MiB],
      ['segment_alloc', B, 18 * MiB],
      ['alloc', B, 17 * MiB],
      ['oom', 80 * GiB, 30 * MiB],
    ];
    const snapshot = snapshotOf(C4.slice(0, 4), C4);
    const plan = planReplay(snapshot);
    const answer = answerWhatIf(snapshot, { plan, allocators: ALLOCATOR_REGISTRY });
    expect(answer.asRecorded.reproduced).toBe(true);
    expect(answer.asRecorded.devices[1].cap).toMatchObject({ lowBytes: 38 * MiB, highBytes: 68 * MiB - 1 });
    const by = new Map(answer.answers.map((a) => [a.name, a]));
    expect(by.get('pytorch')?.verdict).toBe('runs-out');
    // Some allocator holds the two tensors on fewer pages, so it fits from some cap on.
    const es = answer.answers.find((a) => a.verdict === 'fits-above');
    expect(answer.answers.map((a) => `${a.name} ${a.verdict}`)).toContain(`${es?.name} fits-above`);
    // Only the device that shows a cap has a threshold; it is a whole page inside the interval...
    const [t] = es?.thresholdBytes ?? [];
    expect(es?.thresholdBytes).toHaveLength(1);
    expect(t.device).toBe(1);
    expect(t.bytes % (2 * MiB)).toBe(0);
    expect(t.bytes).toBeGreaterThan(38 * MiB);
    expect(t.bytes).toBeLessThan(68 * MiB);
    // ...and the least: under it the setting fits, a page below it it runs out.
    const under = (limit: number) =>
      answerWhatIf(snapshot, {
        plan,
        allocators: ALLOCATOR_REGISTRY.filter((a) => a.name === es?.name),
        memoryLimit: limit,
      }).answers[0].verdict;
    expect(under(t.bytes)).toBe('fits');
    expect(under(t.bytes - 2 * MiB)).toBe('runs-out');
    expect(answerLines(answer)).toContain(
      `${es?.name} fits only if the cap is at least ${t.bytes / MiB}.0 MiB on device 1; below that it runs out (peak ${(es?.peakHighBytes as number) / MiB}.0 MiB at the top of the interval)`,
    );
  });

  it('an OOM after the release of a cached segment bounds the cap by what was still held', () => {
    // Free the first tensor before the failing request: a setting that reuses its 30 MiB needs less.
    const freed: Event[] = [
      ...ranOut.slice(0, 4),
      ['free_requested', A, 30 * MiB],
      ['free_completed', A, 30 * MiB],
      ['segment_free', A, 30 * MiB],
      ['oom', 80 * GiB, 50 * MiB],
    ];
    const snapshot = snapshotOf(freed);
    const answer = answerWhatIf(snapshot, { plan: planReplay(snapshot), allocators: ALLOCATOR_REGISTRY });
    const ar = answer.asRecorded.devices[0];
    // PyTorch freed its cached 30 MiB segment and still needed 40 + 50 = 90 MiB, so the cap was below 90 MiB.
    expect(ar.cap.highBytes).toBe(90 * MiB - 1);
    expect(answer.asRecorded.reproduced).toBe(true);
    for (const a of answer.answers) {
      if (a.verdict !== 'fits-above') continue;
      const t = a.thresholdBytes?.[0].bytes as number;
      expect(t % (2 * MiB)).toBe(0);
      expect(t).toBeGreaterThan(ar.cap.lowBytes);
      expect(t).toBeLessThanOrEqual(ar.cap.highBytes);
    }
  });
});
