/**
 * The conformance cases (cases.ts) where vmmkit's simulated CUDA flavour
 * answers differently from the real driver's transcript
 * (conformance/results/h200-driver.json), each with the reason.
 *
 * test/conformance/cuda-agreement.test.ts reads this list: every case not
 * named here must agree with the transcript exactly, and every case named
 * here must still differ. The list can only shrink: when a listed case starts
 * agreeing, the test fails and asks for its entry to be removed.
 */
import type { CaseRecord, Step } from './cases.js';

export const KNOWN_DIVERGENCES: Readonly<Record<string, string>> = {
  'release.bogusHandles':
    'The driver crashed (SIGSEGV) releasing handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE, since a flavour call never ends the process.',
  'release.thenMapReleasedHandle':
    'The driver crashed (SIGSEGV) mapping a handle whose memory was released; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'map.bogusHandles':
    'The driver crashed (SIGSEGV) mapping handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'properties.bogus':
    'The driver crashed (SIGSEGV) reading the properties of handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'capture.exchangeModeNullBox':
    'The driver crashed (SIGSEGV) exchanging the capture mode through a NULL pointer; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'startupHeap.loneAfterCreatedContext':
    "granulesFromBefore: a created context's first reservation lands below the primary context's hole by an amount that changes from process to process: -320 granules in 16 of 25 fresh processes, -336 in 6 and -304 in 3, whichever case made the context (conformance/results/h200-fresh-cases.json and h200-fresh-created-contexts.json, 2026-12-06). The transcript's recordings of this case say -320 (three times), its siblings' (createdContextTwoLone, twoCreatedContexts, cuMemAllocInCreatedContext, reservationOutlivesCreatedContext) -304, which the simulator follows (Note [Created contexts' heaps]); no one figure is the driver's.",
  'primaryDestroy.resetOldStreamQuery':
    'The driver crashed (SIGSEGV) querying a stream made before cuDevicePrimaryCtxReset, after a retain (it follows the freed stream); the simulator answers CUDA_ERROR_INVALID_HANDLE, the stream having gone with its context.',
  'primaryDestroy.resetOldStreamDestroy':
    'The driver crashed (SIGSEGV) destroying a stream made before cuDevicePrimaryCtxReset, after a retain; the simulator answers CUDA_ERROR_INVALID_HANDLE.',
  'primaryDestroy.resetWithObjects':
    'The driver crashed (SIGSEGV) in this case, after cuDevicePrimaryCtxReset of a primary context holding cuMemAlloc memory, a stream, an event and a VMM mapping (2026-12-01 23:29 UTC); its pieces (23:44 UTC) show which: the query of the stream made before the reset (primaryDestroy.resetOldStream*), and the simulator, answering a code for each call, agrees with the rest (primaryDestroy.resetReleases, resetOldEvent*; Note [Destroying a primary context]).',
  'properties.released':
    'The driver returned the old fields of a just-released handle (a use after free of its handle object); the simulator answers CUDA_ERROR_INVALID_VALUE for a dead handle.',
};

/** A step's answer as a case record holds it: its code, its value, or both. */
export type Answer = Omit<Step, 'op'>;

/**
 * How vmmkit over the real driver (createCuda({ backend: 'cuda' }),
 * conformance/gpu/prove.ts) differs from the record it is held against in one
 * case: every difference, so that a case that starts agreeing, or differs in
 * any other way, is told from one that still differs as listed
 * (backendDepartures; test/conformance/backend-divergences.test.ts holds the
 * latest H200 run to it, prove.js each run).
 */
export interface BackendDivergence {
  /**
   * The record it is held against: the raw driver's transcript, or, for a case
   * the simulator's own list holds (the driver crashed, say), the simulated
   * flavour's, whose difference from the driver that list gives.
   */
  readonly against: 'driver' | 'simulator';
  /** The steps, by op, whose answers differ: [theirs, vmmkit's]. */
  readonly steps?: Readonly<Record<string, readonly [Answer, Answer]>>;
  /** Ops only their run records: what it goes on to do after a call vmmkit refused. */
  readonly onlyTheirs?: readonly string[];
  /** Ops only vmmkit's run records: what the case does after that refusal. */
  readonly onlyVmmkit?: readonly string[];
  /** The raw cuCtxSynchronize after the case in their run; vmmkit's run leaves the context usable. */
  readonly contextAfter?: number;
  /** Why vmmkit answers so. */
  readonly why: string;
}

const NOT_SUPPORTED = 801;

const WHOLE_HANDLE_WHY =
  "The driver maps a whole handle from its start even where the range runs past the reservation's end (into the next reservation, or into address space no reservation holds). Core keeps every mapping inside one reservation, so the CUDA flavour hands such a map down as pieces; the simulator maps pieces and agrees with the driver, while the real backend, whose cuMemMap takes whole handles only, refuses the first piece with CUDA_ERROR_NOT_SUPPORTED (Note [Whole-handle maps]).";

/** Maps past a reservation's end, by op, each with the driver's code; vmmkit answers 801 to each. */
function wholeHandleMaps(
  maps: Readonly<Record<string, number>>,
  rest: Pick<BackendDivergence, 'onlyTheirs' | 'onlyVmmkit'> = {},
): BackendDivergence {
  const steps = Object.fromEntries(
    Object.entries(maps).map(([op, code]) => [op, [{ code }, { code: NOT_SUPPORTED }] as const]),
  );
  return { against: 'driver', steps, ...rest, why: WHOLE_HANDLE_WHY };
}

const CREATED_CONTEXT_WHY =
  "Over the real driver a created context is the CUDA flavor's model on the device's primary context (Note [Created contexts]): no driver context is made, so no start-up heap of its own, and a reservation made in it lands where it would in the primary context (0 granules from the one before), where the driver's created context puts it 304 to 336 granules below, by an amount that changes from process to process (conformance/results/h200-fresh-created-contexts.json). What the case does after depends on that placement; maps past a reservation's end are whole-handle maps (Note [Whole-handle maps]).";

/** Distances (by op) where the created context's heap shows: [the transcript's value, vmmkit's]; maps past an end as wholeHandleMaps. */
function createdContextHeap(
  distances: Readonly<Record<string, readonly [number | string, number | string]>>,
  maps: Readonly<Record<string, number>> = {},
  rest: Pick<BackendDivergence, 'onlyTheirs'> = {},
): BackendDivergence {
  return {
    against: 'driver',
    steps: {
      ...Object.fromEntries(
        Object.entries(distances).map(([op, [d, v]]) => [op, [{ value: d }, { value: v }] as const]),
      ),
      ...wholeHandleMaps(maps).steps,
    },
    ...rest,
    why: CREATED_CONTEXT_WHY,
  };
}

/** The driver's context after the case is `code` (719: faulted; 709: the context it was given is gone). */
function faultNotSent(code: number): BackendDivergence {
  return {
    against: 'driver',
    contextAfter: code,
    why: "vmmkit checks a graph launch's captured ranges and, where memory is gone, faults the device in its own books (Note [Faulted devices]) and answers 719 for it from then on, as the driver does after the fault; it never sends the work into memory that is gone, so the real context stays usable and the raw cuCtxSynchronize after the case answers 0 where the faulted driver's answers 719 (or, after a modelled reset or release, 709).",
  };
}

const PRIMARY_KEPT_WHY =
  "cuDevicePrimaryCtxReset is the CUDA flavor's model over the real driver (Note [Destroying a primary context]): the CUDA backend keeps the device's real primary context for the process, so the raw cuCtxSynchronize after the case answers 0, where the driver's own reset left the raw caller's context gone (709).";

/**
 * Where vmmkit running over the real driver answers differently from the raw
 * driver (or, for the simulator's own entries, from the simulated flavour),
 * each difference named. Every case listed in neither list must agree with the
 * raw driver exactly, and every case in KNOWN_DIVERGENCES alone must answer
 * over the real driver as the simulated flavour does.
 */
export const KNOWN_BACKEND_DIVERGENCES: Readonly<Record<string, BackendDivergence>> = {
  'map.spanningTwoReservations': wholeHandleMaps(
    { mapAcross: 0 },
    { onlyTheirs: ['setAccessAcross', 'writeAcross', 'readAcross', 'unmapAcross'] },
  ),
  'map.pastReservationEnd': wholeHandleMaps(
    { mapPastEnd: 0 },
    {
      onlyTheirs: [
        'setAccessPastEnd',
        'getAccessPastEnd',
        'writePastEnd',
        'readPastEnd',
        'freeWhileMappedPastEnd',
        'cleanup:cuMemUnmap',
      ],
    },
  ),
  'map.pastReservationEndIntoFreedRange': wholeHandleMaps(
    { mapPastEnd: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'] },
  ),
  'map.pastReservationEndIntoNextReservation': wholeHandleMaps(
    { mapAcrossIntoB: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'] },
  ),
  'map.pastReservationEndSmallerThanReservation': wholeHandleMaps(
    { mapPastEnd: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'], onlyVmmkit: ['tailFree'] },
  ),
  'map.overReservationLoneAtStart': wholeHandleMaps({ mapTwiceTheReservation: 1 }),
  'map.overReservationAtStartIntoFreedRange': wholeHandleMaps(
    { mapTwiceTheReservation: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'] },
  ),
  'map.overReservationInsideIntoFreedRange': wholeHandleMaps(
    { mapLargerFromInside: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'] },
  ),
  'map.overReservationLoneInside': wholeHandleMaps(
    { mapLargerFromInside: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'], onlyVmmkit: ['tailFree'] },
  ),
  'map.overReservationAtStartIntoNextReservation': wholeHandleMaps(
    { mapAcrossIntoB: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'] },
  ),
  'map.overReservationFourTimes': wholeHandleMaps(
    { mapFourTimesTheReservation: 0 },
    { onlyTheirs: ['cleanup:cuMemUnmap'] },
  ),
  // The start-up heap's cases, each first in a fresh process (Note [Start-up heap cases in a fresh
  // process]): their distances are the driver's, and their maps past an end whole-handle maps.
  'startupHeap.threeLoneReservations': wholeHandleMaps(
    { mapPastFirst: 1, mapPastThird: 0 },
    { onlyTheirs: ['mapPastThird:unmap'] },
  ),
  'startupHeap.fourMiBThenTwo': wholeHandleMaps(
    { mapPastTwo: 1, mapPastFour: 0 },
    { onlyTheirs: ['mapPastFour:unmap'] },
  ),
  'startupHeap.alignedTo4MiBThenLone': wholeHandleMaps(
    { mapPastAligned: 0, mapPastLone: 1 },
    { onlyTheirs: ['mapPastAligned:unmap'] },
  ),
  'startupHeap.fillTheRunThenMapPastItsEnd': wholeHandleMaps({ mapPastLast: 1 }),
  'startupHeap.loneAfterCuMemAlloc': wholeHandleMaps(
    { mapPastLone: 0 },
    { onlyTheirs: ['mapPastLone:unmap'] },
  ),
  'startupHeap.loneAfterCuMemAllocFreed': wholeHandleMaps({ mapPastLone: 1 }),
  'startupHeap.loneAfterSmallCuMemAlloc': wholeHandleMaps(
    { mapPastLone: 0 },
    { onlyTheirs: ['mapPastLone:unmap'] },
  ),
  'startupHeap.loneAfterStream': wholeHandleMaps({ mapPastLone: 1 }),
  'startupHeap.loneAfterEvent': wholeHandleMaps({ mapPastLone: 1 }),
  // In the simulator's list: the simulator's created context has a heap (-304), vmmkit's over the driver none.
  'startupHeap.loneAfterCreatedContext': {
    against: 'simulator',
    steps: {
      granulesFromBefore: [{ value: -304 }, { value: 0 }],
      ...wholeHandleMaps({ mapPastLone: 1 }).steps,
    },
    why: CREATED_CONTEXT_WHY,
  },
  'startupHeap.createdContextTwoLone': createdContextHeap(
    { firstFromBefore: [-304, 0] },
    { mapPastFirst: 1, mapPastSecond: 0 },
    { onlyTheirs: ['mapPastSecond:unmap'] },
  ),
  // The second context's reservation lands 304 below the first's in the driver; in vmmkit's one heap, 37
  // above (the first took the hole, the second the run).
  'startupHeap.twoCreatedContexts': createdContextHeap({
    inFirstFromBefore: [-304, 0],
    inSecondFromInFirst: [-304, 37],
  }),
  'startupHeap.cuMemAllocInCreatedContext': createdContextHeap({ allocFromBefore: [-304, 0] }),
  // After cuCtxDestroy the transcript's reservation landed 511 below (its recorder's worker); in fresh
  // processes the driver puts it elsewhere (h200-fresh-cases.json); vmmkit's, 37 above: the run.
  'startupHeap.reservationOutlivesCreatedContext': createdContextHeap({
    inContextFromBefore: [-304, 0],
    afterDestroyFromBefore: [-511, 37],
  }),
  'capture.replay.afterUnmap': faultNotSent(719),
  'capture.replay.afterMemFree': faultNotSent(719),
  'stickyFault.callsAfter': faultNotSent(719),
  'stickyFault.moreCallsAfter': faultNotSent(719),
  'stickyFault.inCreatedContext': faultNotSent(719),
  'stickyFault.thenCreateContext': faultNotSent(719),
  'stickyFault.primaryReset': faultNotSent(709),
  'stickyFault.releaseToZero': faultNotSent(709),
  'primaryDestroy.resetReleases': { against: 'driver', contextAfter: 709, why: PRIMARY_KEPT_WHY },
  // In the simulator's list (the driver crashed); the simulated flavour's reset, unlike the backend's, leaves 709.
  'primaryDestroy.resetWithObjects': { against: 'simulator', contextAfter: 709, why: PRIMARY_KEPT_WHY },
};

const show = (a: Answer | undefined): string =>
  a === undefined
    ? '(none)'
    : [a.code, a.value === undefined ? undefined : JSON.stringify(a.value)]
        .filter((x) => x !== undefined)
        .join(' ');

/** A listed divergence in words: every difference it names, then why. */
export function describeDivergence(d: BackendDivergence): string {
  const theirs = d.against === 'driver' ? 'the driver' : 'the simulator';
  const parts = Object.entries(d.steps ?? {}).map(
    ([op, [t, v]]) => `${op}: ${theirs} ${show(t)}, vmmkit ${show(v)}`,
  );
  if (d.onlyTheirs?.length) parts.push(`only ${theirs}'s run goes on to ${d.onlyTheirs.join(', ')}`);
  if (d.onlyVmmkit?.length) parts.push(`only vmmkit's run records ${d.onlyVmmkit.join(', ')}`);
  if (d.contextAfter !== undefined)
    parts.push(`the context after: ${theirs} ${d.contextAfter}, vmmkit's usable`);
  return `${parts.join('; ')}. ${d.why}`;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
const answerOf = ({ op: _, ...answer }: Step): Answer => answer;

/**
 * How vmmkit's record departs from what `d` says of it against `theirs`, one
 * line each; empty when the two differ exactly as listed. Their run's steps
 * less `onlyTheirs`, and vmmkit's less `onlyVmmkit`, must pair up op for op;
 * a pair must differ where `steps` names its op, as named, and agree
 * everywhere else.
 */
export function backendDepartures(d: BackendDivergence, theirs: CaseRecord, vmmkit: CaseRecord): string[] {
  const out: string[] = [];
  for (const key of ['crashed', 'threw'] as const)
    if (!same(theirs[key], vmmkit[key]))
      out.push(
        `${key}: theirs ${JSON.stringify(theirs[key] ?? null)}, vmmkit ${JSON.stringify(vmmkit[key] ?? null)}`,
      );
  if (theirs.contextAfter !== d.contextAfter || vmmkit.contextAfter !== undefined)
    out.push(
      `context after: theirs ${theirs.contextAfter ?? 0}, vmmkit ${vmmkit.contextAfter ?? 0}; listed: ${d.contextAfter ?? 0}, 0`,
    );
  const keep = (steps: Step[], only: readonly string[] = [], other: Step[], who: string): Step[] => {
    for (const op of only) {
      if (!steps.some((s) => s.op === op)) out.push(`${who} run records no ${op}, listed as only theirs`);
      if (other.some((s) => s.op === op)) out.push(`${op}, listed as only the ${who} run's, is in both`);
    }
    return steps.filter((s) => !only.includes(s.op));
  };
  const t = keep(theirs.steps, d.onlyTheirs, vmmkit.steps, 'their');
  const v = keep(vmmkit.steps, d.onlyVmmkit, theirs.steps, "vmmkit's");
  if (t.length !== v.length) out.push(`${t.length} steps of theirs against ${v.length} of vmmkit's`);
  const listed = new Set(Object.keys(d.steps ?? {}));
  const seen = new Set<string>();
  for (let i = 0; i < Math.min(t.length, v.length); i++) {
    const [a, b] = [t[i]!, v[i]!];
    if (a.op !== b.op) {
      out.push(`step ${i}: theirs ${a.op}, vmmkit ${b.op}`);
      break;
    }
    const want = d.steps?.[a.op];
    if (want === undefined) {
      if (!same(a, b))
        out.push(`${a.op}: theirs ${show(answerOf(a))}, vmmkit ${show(answerOf(b))}, not listed`);
      continue;
    }
    seen.add(a.op);
    if (!same(answerOf(a), want[0]) || !same(answerOf(b), want[1]))
      out.push(
        `${a.op}: theirs ${show(answerOf(a))}, vmmkit ${show(answerOf(b))}; listed: ${show(want[0])}, ${show(want[1])}`,
      );
  }
  for (const op of listed) if (!seen.has(op)) out.push(`${op}: listed, but no such step in both runs`);
  return out;
}

/** The differences between two case records, one line each; empty when they agree. */
export function differences(want: CaseRecord, got: CaseRecord): string[] {
  const out: string[] = [];
  for (const key of ['crashed', 'threw', 'contextAfter'] as const) {
    if (want[key] !== got[key])
      out.push(`${key}: ${JSON.stringify(want[key] ?? null)} vs ${JSON.stringify(got[key] ?? null)}`);
  }
  const step = (s: Step | undefined) =>
    s === undefined ? '(none)' : `${s.op} ${s.code ?? '-'} ${JSON.stringify(s.value ?? null)}`;
  const n = Math.max(want.steps.length, got.steps.length);
  for (let i = 0; i < n; i++) {
    if (JSON.stringify(want.steps[i]) !== JSON.stringify(got.steps[i]))
      out.push(`step ${i}: ${step(want.steps[i])} | ${step(got.steps[i])}`);
  }
  return out;
}

/** Why a case is listed, in words, from either list; undefined where neither names it. */
export function listedReason(name: string): string | undefined {
  const entry = KNOWN_BACKEND_DIVERGENCES[name];
  return entry ? describeDivergence(entry) : KNOWN_DIVERGENCES[name];
}

/**
 * How vmmkit's record over the real driver departs from what the lists say of
 * its case; empty when it holds: where neither list names the case, the record
 * is the driver's; where only the simulator's list does, the simulated
 * flavour's (whose difference from the driver that list gives and
 * test/conformance/cuda-agreement.test.ts checks); where the backend's list
 * does, it differs from its entry's record exactly as the entry says.
 */
export function departuresOverTheDriver(
  name: string,
  vmmkit: CaseRecord,
  driver: CaseRecord,
  simulator: CaseRecord,
): string[] {
  const entry = KNOWN_BACKEND_DIVERGENCES[name];
  if (entry) return backendDepartures(entry, entry.against === 'driver' ? driver : simulator, vmmkit);
  if (KNOWN_DIVERGENCES[name] !== undefined) return differences(simulator, vmmkit);
  return differences(driver, vmmkit);
}
