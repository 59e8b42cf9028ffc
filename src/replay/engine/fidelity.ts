/**
 * Fidelity: does a model of an allocator do what the recorded one did
 * (docs/pytorch-allocators.md T5)? Two things are compared, in trace order:
 *
 *  1. the segment events: the model's (action, size) sequence against the
 *     trace's segment_alloc / segment_free / segment_map / segment_unmap;
 *  2. each alloc's offset inside the segment that holds it, recorded address
 *     against recorded segment, ours against ours. Addresses themselves are
 *     not compared: the driver's and the simulator's address spaces differ.
 *
 * A segment from segment_alloc is one range; ranges from segment_map are
 * merged with mapped neighbours (an expandable segment grows page by page),
 * so an offset under expandable segments is measured from the start of the
 * contiguous mapped range. For a trace that began mid-run, the recorded
 * segments at its start are the plan's rebuilt ones (start-state.ts), and
 * the segment events a run made before the first event (rebuilding that
 * start, eventIndex -1) are not compared with the recording, which has
 * none. A recorded alloc in no known segment is not compared; it is
 * counted.
 */

import { rangeHolding } from '../../util/address-ranges.js';
import { ACTIONS, Action } from '../read/snapshot.js';
import { BlockState, type DeviceRun, type ReplaySegmentEvent } from './replay.js';
import type { DevicePlan } from './trace-plan.js';

export interface FidelityReport {
  readonly device: number;
  readonly segmentEventsRecorded: number;
  readonly segmentEventsReplayed: number;
  /** Leading segment events that agree in action and size. */
  readonly segmentEventsMatched: number;
  readonly allocsCompared: number;
  readonly allocsMatched: number;
  /** Allocs not compared: in no recorded or no replayed segment, or failed in the replay. */
  readonly allocsSkipped: number;
  /** The first difference, in trace order, or undefined when none. */
  readonly firstDifference: FidelityDifference | undefined;
}

export type FidelityDifference =
  | {
      readonly kind: 'segment';
      /** Position in the sequence of segment events. */
      readonly index: number;
      /** Trace event index of the recorded one (-1: the recorded sequence ended). */
      readonly eventIndex: number;
      readonly recorded: { readonly action: string; readonly size: number } | undefined;
      readonly replayed:
        | { readonly action: string; readonly size: number; readonly eventIndex: number }
        | undefined;
      readonly message: string;
    }
  | {
      readonly kind: 'offset';
      readonly eventIndex: number;
      readonly size: number;
      readonly recordedOffset: number;
      readonly replayedOffset: number;
      readonly message: string;
    };

/** Per action code, 1 for the four segment actions: a table, as the loops below read it for every event. */
const IS_SEGMENT = new Uint8Array(256);
for (const a of [Action.segment_alloc, Action.segment_free, Action.segment_map, Action.segment_unmap])
  IS_SEGMENT[a] = 1;

/** Compare one device's replay (kept with keepEvents) against its recorded trace. */
export function compareWithTrace(plan: DevicePlan, run: DeviceRun): FidelityReport {
  const t = plan.trace;
  const ours = run.segmentEvents;
  let recordedCount = 0;
  for (let i = 0; i < t.length; i++) recordedCount += IS_SEGMENT[t.action[i]];

  // 1. The sequences, position by position, from the run's first event after rebuilding the start.
  let startEvents = 0;
  while (startEvents < ours.length && ours[startEvents].eventIndex < 0) startEvents++;
  let first: FidelityDifference | undefined;
  let matched = 0;
  {
    let k = startEvents;
    for (let i = 0; i <= t.length && first === undefined; i++) {
      const isSeg = i < t.length && IS_SEGMENT[t.action[i]] === 1;
      if (i < t.length && !isSeg) continue;
      const mine: ReplaySegmentEvent | undefined = ours[k];
      if (i === t.length) {
        if (mine !== undefined) first = segmentDifference(k - startEvents, -1, undefined, mine);
        break;
      }
      const recorded = { action: ACTIONS[t.action[i]], size: t.size[i] };
      if (mine === undefined || mine.action !== recorded.action || mine.size !== recorded.size) {
        first = segmentDifference(k - startEvents, i, recorded, mine);
        break;
      }
      matched++;
      k++;
    }
  }

  // 2. Offsets: walk the trace, applying each side's segment events as they happen.
  const recordedRanges = new Ranges();
  for (const s of plan.startState.segments)
    for (const r of s.mapped)
      recordedRanges.apply({
        action: s.expandable ? 'segment_map' : 'segment_alloc',
        address: r.address,
        size: r.size,
      });
  const ourRanges = new Ranges();
  let next = 0;
  while (next < ours.length && ours[next].eventIndex < 0) ourRanges.apply(ours[next++]);
  let compared = 0;
  let offsetsMatched = 0;
  let skipped = 0;
  let firstOffset: FidelityDifference | undefined;
  for (let i = 0; i < t.length; i++) {
    while (next < ours.length && ours[next].eventIndex <= i) ourRanges.apply(ours[next++]);
    const a = t.action[i];
    if (a !== Action.alloc) {
      if (IS_SEGMENT[a] === 1)
        recordedRanges.apply({ action: ACTIONS[a], address: t.addr[i], size: t.size[i] });
      continue;
    }
    const id = plan.blockOf[i];
    const address = run.blockAddress[id];
    const recordedBase = recordedRanges.baseOf(t.addr[i]);
    const ourBase = run.blockState[id] === BlockState.failed ? undefined : ourRanges.baseOf(address);
    if (recordedBase === undefined || ourBase === undefined) {
      skipped++;
      continue;
    }
    compared++;
    const recordedOffset = t.addr[i] - recordedBase;
    const replayedOffset = address - ourBase;
    if (recordedOffset === replayedOffset) offsetsMatched++;
    else if (firstOffset === undefined) {
      firstOffset = {
        kind: 'offset',
        eventIndex: i,
        size: t.size[i],
        recordedOffset,
        replayedOffset,
        message: `event ${i}: alloc of ${t.size[i]} bytes at offset ${recordedOffset} in its recorded segment, ${replayedOffset} in ours`,
      };
    }
  }
  const earliest =
    first === undefined
      ? firstOffset
      : firstOffset === undefined
        ? first
        : firstOffset.eventIndex < (first.eventIndex < 0 ? Number.POSITIVE_INFINITY : first.eventIndex)
          ? firstOffset
          : first;
  return {
    device: plan.device,
    segmentEventsRecorded: recordedCount,
    segmentEventsReplayed: ours.length - startEvents,
    segmentEventsMatched: matched,
    allocsCompared: compared,
    allocsMatched: offsetsMatched,
    allocsSkipped: skipped,
    firstDifference: earliest,
  };
}

function segmentDifference(
  index: number,
  eventIndex: number,
  recorded: { action: string; size: number } | undefined,
  mine: ReplaySegmentEvent | undefined,
): FidelityDifference {
  const r = recorded === undefined ? 'nothing more' : `${recorded.action} of ${recorded.size} bytes`;
  const m = mine === undefined ? 'nothing more' : `${mine.action} of ${mine.size} bytes`;
  return {
    kind: 'segment',
    index,
    eventIndex,
    recorded,
    replayed:
      mine === undefined ? undefined : { action: mine.action, size: mine.size, eventIndex: mine.eventIndex },
    message: `segment event ${index}${eventIndex >= 0 ? ` (trace event ${eventIndex})` : ''}: recorded ${r}, replayed ${m}`,
  };
}

/**
 * Live segment ranges of one side: whole segments (segment_alloc) kept apart,
 * mapped ranges (segment_map) merged with mapped neighbours. Few ranges are
 * live at once, so sorted arrays do.
 */
class Ranges {
  readonly #segments: { start: number; end: number }[] = [];
  readonly #mapped: { start: number; end: number }[] = [];
  /** The range the last lookup found, until the ranges change: consecutive allocations mostly share one. */
  #last: { start: number; end: number } | undefined;

  apply(e: { readonly action: string; readonly address: number; readonly size: number }): void {
    this.#last = undefined;
    const end = e.address + e.size;
    switch (e.action) {
      case 'segment_alloc':
        insert(this.#segments, { start: e.address, end });
        break;
      case 'segment_free': {
        const i = this.#segments.findIndex((r) => r.start === e.address);
        if (i >= 0) this.#segments.splice(i, 1);
        break;
      }
      case 'segment_map': {
        const list = this.#mapped;
        const r = { start: e.address, end };
        const i = insert(list, r);
        if (i + 1 < list.length && list[i + 1].start === r.end) {
          r.end = list[i + 1].end;
          list.splice(i + 1, 1);
        }
        if (i > 0 && list[i - 1].end === r.start) {
          list[i - 1].end = r.end;
          list.splice(i, 1);
        }
        break;
      }
      case 'segment_unmap': {
        const list = this.#mapped;
        const i = list.findIndex((x) => x.start <= e.address && end <= x.end);
        if (i < 0) break;
        const x = list[i];
        const pieces = [];
        if (x.start < e.address) pieces.push({ start: x.start, end: e.address });
        if (end < x.end) pieces.push({ start: end, end: x.end });
        list.splice(i, 1, ...pieces);
        break;
      }
    }
  }

  /** The base of the range holding `address`, or undefined. */
  baseOf(address: number): number | undefined {
    const last = this.#last;
    if (last !== undefined && address >= last.start && address < last.end) return last.start;
    const r = rangeHolding(this.#segments, address) ?? rangeHolding(this.#mapped, address);
    this.#last = r;
    return r?.start;
  }
}

function insert(list: { start: number; end: number }[], r: { start: number; end: number }): number {
  let i = 0;
  while (i < list.length && list[i].start < r.start) i++;
  list.splice(i, 0, r);
  return i;
}
