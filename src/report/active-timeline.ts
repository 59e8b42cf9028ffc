/**
 * memory_viz's active memory timeline, for the page: the recording's live
 * blocks over time, each a band stacked on the ones allocated before it,
 * the bands above a freed block moving down to fill its place, with the
 * stack that allocated each.
 *
 * Note [Timeline of the largest blocks]: a trace may hold millions of
 * blocks; like memory_viz (which keeps its largest `max_entries`), the page
 * draws the largest ones (MAX_BLOCKS, and fewer where their moves would pass
 * MAX_POINTS) as bands, in allocation order, and the rest as one grey band
 * on top of them: the bytes of every smaller block live, bucketed by
 * greatest value as the charts are (Note [Min-max buckets]). A band's height is its block's
 * requested size; its offset is the bytes of the drawn blocks allocated
 * before it that are still live.
 */
import type { DevicePlan } from '../replay/engine/trace-plan.js';
import { Action } from '../replay/read/snapshot.js';

const MAX_BLOCKS = 1000;
const MAX_POINTS = 400_000;
const BUCKETS = 2000;

export interface TimelineBand {
  /** The plan's block id. */
  readonly block: number;
  readonly size: number;
  /** The event that allocated it (-1: live before the trace began). */
  readonly allocEvent: number;
  /** The event that freed it (-1: live at the trace's end). */
  readonly freeEvent: number;
  /** Pairs (event, offset): from that event on, the band starts `offset` bytes up. */
  readonly moves: number[];
  /** The frames that allocated it, innermost first (empty: not recorded). */
  readonly stack: readonly string[];
}

export interface ActiveTimeline {
  readonly device: number;
  readonly events: number;
  readonly bands: readonly TimelineBand[];
  /** The smallest size drawn as a band. */
  readonly smallestBandBytes: number;
  /** Blocks not drawn as bands, and the greatest bytes they held at once. */
  readonly otherBlocks: number;
  /** Per bucket of `bucketWidth` events, the most bytes the smaller blocks held (drawn on top of the bands). */
  readonly other: number[];
  /** Per bucket, the most bytes the bands reached (where the grey band starts). */
  readonly bandsTop: number[];
  readonly bucketWidth: number;
  /** The most bytes the bands and the band below them reach. */
  readonly maxBytes: number;
}

/** The timeline of device `d`'s trace; `stackOf` gives a block's frames. */
export function activeTimeline(
  d: DevicePlan,
  stackOf: (block: number) => readonly string[] | undefined,
): ActiveTimeline {
  const { action } = d.trace;
  const n = d.trace.length;
  // Each block's lifetime: live from the start (initial blocks) or its alloc, to its free.
  const allocAt = new Int32Array(d.blockCount).fill(-2);
  const freeAt = new Int32Array(d.blockCount).fill(-1);
  for (const b of d.initialBlocks) allocAt[b] = -1;
  for (let i = 0; i < n; i++) {
    const b = d.blockOf[i];
    if (b < 0) continue;
    if (action[i] === Action.alloc) allocAt[b] = i;
    else if (action[i] === Action.free_completed && allocAt[b] !== -2) freeAt[b] = i;
  }
  const candidates: number[] = [];
  for (let b = 0; b < d.blockCount; b++) if (allocAt[b] !== -2) candidates.push(b);
  candidates.sort((x, y) => d.blockSize[y] - d.blockSize[x] || allocAt[x] - allocAt[y]);
  for (let keep = Math.min(MAX_BLOCKS, candidates.length); ; keep = Math.floor(keep / 2)) {
    const drawn = new Set(candidates.slice(0, keep));
    const laid = layOut(d, drawn, allocAt, freeAt);
    if (laid !== undefined || keep === 0) {
      const { bands, other, bandsTop, width, maxBytes } = laid ?? layOut(d, new Set(), allocAt, freeAt)!;
      return {
        device: d.device,
        events: n,
        bands: bands.map((band) => ({ ...band, stack: stackOf(band.block) ?? [] })),
        smallestBandBytes: keep === 0 ? 0 : d.blockSize[candidates[keep - 1]],
        otherBlocks: candidates.length - keep,
        other,
        bandsTop,
        bucketWidth: width,
        maxBytes,
      };
    }
  }
}

interface Laid {
  readonly bands: Omit<TimelineBand, 'stack'>[];
  readonly other: number[];
  readonly bandsTop: number[];
  readonly width: number;
  readonly maxBytes: number;
}

/** Bands for the blocks of `drawn`, or undefined when their moves pass MAX_POINTS. */
function layOut(
  d: DevicePlan,
  drawn: ReadonlySet<number>,
  allocAt: Int32Array,
  freeAt: Int32Array,
): Laid | undefined {
  const { action } = d.trace;
  const n = d.trace.length;
  const width = Math.max(1, Math.ceil(n / BUCKETS));
  const other = new Array<number>(Math.max(1, Math.ceil(n / width))).fill(0);
  const bandsTop = new Array<number>(other.length).fill(0);
  const moves = new Map<number, number[]>();
  const stack: number[] = [];
  let stackBytes = 0;
  let otherBytes = 0;
  let points = 0;
  let maxBytes = 0;
  const push = (b: number, at: number) => {
    moves.set(b, [at, stackBytes]);
    stack.push(b);
    stackBytes += d.blockSize[b];
    points++;
  };
  for (const b of d.initialBlocks) {
    if (drawn.has(b)) push(b, -1);
    else otherBytes += d.blockSize[b];
  }
  for (let i = 0; i < n; i++) {
    const b = d.blockOf[i];
    if (b >= 0 && action[i] === Action.alloc && allocAt[b] === i) {
      if (drawn.has(b)) push(b, i);
      else otherBytes += d.blockSize[b];
    } else if (b >= 0 && action[i] === Action.free_completed && freeAt[b] === i) {
      if (drawn.has(b)) {
        const at = stack.indexOf(b);
        stack.splice(at, 1);
        stackBytes -= d.blockSize[b];
        // The bands above it move down to fill its place.
        let offset = 0;
        for (let k = 0; k < stack.length; k++) {
          if (k >= at) {
            moves.get(stack[k])!.push(i, offset);
            if (++points > MAX_POINTS) return undefined;
          }
          offset += d.blockSize[stack[k]];
        }
      } else otherBytes -= d.blockSize[b];
    }
    const k = Math.floor(i / width);
    if (otherBytes > other[k]) other[k] = otherBytes;
    if (stackBytes > bandsTop[k]) bandsTop[k] = stackBytes;
    if (otherBytes + stackBytes > maxBytes) maxBytes = otherBytes + stackBytes;
  }
  const bands = [...moves.entries()].map(([block, m]) => ({
    block,
    size: d.blockSize[block],
    allocEvent: allocAt[block],
    freeEvent: freeAt[block],
    moves: m,
  }));
  return { bands, other, bandsTop, width, maxBytes };
}
