/**
 * What a device held at its peak: the segments (or mapped ranges) and the
 * live blocks in them, read either from the recording's own trace or from
 * an allocator model replayed under other settings.
 *
 * Note [The moment of the peak]: the peak is the as-recorded reproduction's
 * (AsRecordedDevice.recordedPeakBytes: the running peak of the trace's
 * segment events from the start state's bytes), not a second definition.
 * Reserved bytes stay at that figure from the segment event that reached it
 * until the next segment free, and the live bytes change in between: at
 * the segment event itself the request that needed the segment is not yet
 * served, so its bytes would read as slack. Of every moment at which
 * reserved equals the peak, the one with the most bytes live (the first
 * such) is taken: the peak at its fullest. A replay under other settings is
 * read the same way, at the moment its own reserved bytes peak with the most
 * requested bytes live. A trace that shows no reserved memory at all (no
 * segment events, no segments at its start) has a peak of 0 reserved bytes;
 * its moment is then that of the most bytes live, and slack is not told.
 */

import type { PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import { roundSize } from '../../alloc/pytorch/sizes.js';
import type { SegmentSnapshot } from '../../alloc/pytorch/snapshot.js';
import type { DevicePlan } from '../engine/trace-plan.js';
import { ReplayError } from '../errors.js';
import { Action, type MemorySnapshot } from '../read/snapshot.js';

/** One live block at the peak. */
export interface HeldBlock {
  /** The plan's block id (-1: a block the model holds that the plan does not name). */
  readonly block: number;
  readonly address: number;
  /** Bytes the program asked for. */
  readonly requestedBytes: number;
  /** Bytes the allocator gave it: the model's block size, or the request rounded by the recorded settings. */
  readonly sizeBytes: number;
  /** Its stack (MemorySnapshot.stacks), -1 when none is recorded. */
  readonly stack: number;
  /** Its pool: 0 the default one, else a private one (private-pools.ts). */
  readonly pool: number;
  /** When it was allocated (its alloc event's time_us); NaN for a block live before the trace or without times. */
  readonly timeUs: number;
}

/** One segment (native) or run of mapped pages (expandable) at the peak, with the live blocks in it. */
export interface HeldSegment {
  readonly address: number;
  readonly sizeBytes: number;
  readonly expandable: boolean;
  readonly blocks: readonly HeldBlock[];
}

export interface HeldState {
  readonly device: number;
  /** The trace event after which the state is taken; -1 before the first. */
  readonly event: number;
  readonly reservedBytes: number;
  readonly segments: readonly HeldSegment[];
  /** Live blocks no segment holds (a trace that shows no segments). */
  readonly loose: readonly HeldBlock[];
}

/** The stack of each of a device's blocks, by the plan's block id (-1: none recorded). */
export function blockStacks(snapshot: MemorySnapshot, d: DevicePlan): Int32Array {
  const out = new Int32Array(d.blockCount).fill(-1);
  const { action, stack } = d.trace;
  for (let i = 0; i < d.trace.length; i++) {
    const b = d.blockOf[i];
    if (b >= 0 && action[i] === Action.alloc) out[b] = stack[i];
  }
  // A block live before the trace has no alloc event: the final segments may still show its stack.
  if (d.initialBlocks.length > 0) {
    const byAddress = new Map<number, number>();
    for (const s of snapshot.segments)
      if (s.device === d.device)
        for (const b of s.blocks) if (b.stack >= 0) byAddress.set(b.address, b.stack);
    for (let k = 0; k < d.initialBlocks.length; k++) {
      const found = byAddress.get(d.initialAddress[k]);
      if (found !== undefined) out[d.initialBlocks[k]] = found;
    }
  }
  return out;
}

/** When each of a device's blocks was allocated, by the plan's block id (NaN: before the trace, or no time). */
export function blockTimes(d: DevicePlan): Float64Array {
  const out = new Float64Array(d.blockCount).fill(Number.NaN);
  const { action, timeUs } = d.trace;
  for (let i = 0; i < d.trace.length; i++) {
    const b = d.blockOf[i];
    if (b >= 0 && action[i] === Action.alloc) out[b] = timeUs[i];
  }
  return out;
}

/** The event of the recorded peak's fullest moment (Note [The moment of the peak]); -1: before the first event. */
export function peakMoment(d: DevicePlan, peakBytes: number): number {
  const { action, size } = d.trace;
  let held = d.startState.reservedBytes;
  let live = 0;
  for (let k = 0; k < d.initialBlocks.length; k++) live += d.blockSize[d.initialBlocks[k]];
  let best = held === peakBytes ? -1 : -2;
  let bestLive = held === peakBytes ? live : -1;
  for (let i = 0; i < d.trace.length; i++) {
    const a = action[i];
    const b = d.blockOf[i];
    if (a === Action.segment_alloc || a === Action.segment_map) held += size[i];
    else if (a === Action.segment_free || a === Action.segment_unmap) held -= size[i];
    else if (a === Action.alloc && b >= 0) live += d.blockSize[b];
    else if (a === Action.free_completed && b >= 0) live -= d.blockSize[b];
    if (held === peakBytes && live > bestLive) {
      best = i;
      bestLive = live;
    }
  }
  // The peak is the walk's own maximum, so some moment reaches it; -2 would mean another figure was given.
  if (best === -2) throw new ReplayError(`device ${d.device} never held ${peakBytes} reserved bytes`);
  return best;
}

/** A mapped range while the trace is walked. */
interface Range {
  address: number;
  size: number;
  readonly expandable: boolean;
}

/**
 * The recording's own state after event `event` (-1: at the start): its
 * segments from the start state and the segment events, its live blocks
 * from the plan, each block's size the request rounded as the recorded
 * settings round it (a block the allocator did not split is larger; that
 * remainder reads as free space in its segment).
 */
export function recordedHeld(
  d: DevicePlan,
  event: number,
  settings: PytorchAllocatorSettings,
  stacks: Int32Array,
  times: Float64Array,
): HeldState {
  const ranges: Range[] = [];
  for (const s of d.startState.segments)
    for (const m of s.mapped) ranges.push({ address: m.address, size: m.size, expandable: s.expandable });
  const address = new Float64Array(d.blockCount).fill(Number.NaN);
  for (let k = 0; k < d.initialBlocks.length; k++) address[d.initialBlocks[k]] = d.initialAddress[k];
  const { action, addr, size } = d.trace;
  let reserved = d.startState.reservedBytes;
  for (let i = 0; i <= event; i++) {
    const a = action[i];
    const b = d.blockOf[i];
    if (a === Action.alloc && b >= 0) address[b] = addr[i];
    else if (a === Action.free_completed && b >= 0) address[b] = Number.NaN;
    else if (a === Action.segment_alloc || a === Action.segment_map) {
      ranges.push({ address: addr[i], size: size[i], expandable: a === Action.segment_map });
      reserved += size[i];
    } else if (a === Action.segment_free) {
      const at = ranges.findIndex((r) => !r.expandable && r.address === addr[i]);
      if (at >= 0) ranges.splice(at, 1);
      reserved -= size[i];
    } else if (a === Action.segment_unmap) {
      unmap(ranges, addr[i], size[i]);
      reserved -= size[i];
    }
  }
  const divisions = settings.roundupPower2Divisions;
  const anyDivisions = divisions.some((x) => x > 1);
  const blocks: HeldBlock[] = [];
  for (let b = 0; b < d.blockCount; b++) {
    if (Number.isNaN(address[b])) continue;
    const requested = d.blockSize[b];
    blocks.push({
      block: b,
      address: address[b],
      requestedBytes: requested,
      sizeBytes: roundSize(requested, divisions, anyDivisions),
      stack: stacks[b],
      pool: d.privatePools.blockPool[b] ?? 0,
      timeUs: times[b],
    });
  }
  return { device: d.device, event, reservedBytes: reserved, ...place(runsOf(ranges), blocks) };
}

/** Take [address, address + size) out of the expandable ranges. */
function unmap(ranges: Range[], address: number, size: number): void {
  const end = address + size;
  for (let k = ranges.length - 1; k >= 0; k--) {
    const r = ranges[k];
    const rEnd = r.address + r.size;
    if (!r.expandable || rEnd <= address || r.address >= end) continue;
    ranges.splice(k, 1);
    if (r.address < address) ranges.push({ address: r.address, size: address - r.address, expandable: true });
    if (rEnd > end) ranges.push({ address: end, size: rEnd - end, expandable: true });
  }
}

/** Segments as a snapshot lists them: a native segment each, and each contiguous run of mapped pages. */
function runsOf(ranges: readonly Range[]): Range[] {
  const sorted = [...ranges].sort((x, y) => x.address - y.address);
  const out: Range[] = [];
  for (const r of sorted) {
    const last = out.at(-1);
    if (last?.expandable && r.expandable && last.address + last.size === r.address) last.size += r.size;
    else out.push({ ...r });
  }
  return out;
}

/** Put each block in the segment that holds its address. */
function place(
  ranges: readonly Range[],
  blocks: HeldBlock[],
): { segments: HeldSegment[]; loose: HeldBlock[] } {
  blocks.sort((x, y) => x.address - y.address);
  const segments: HeldSegment[] = [];
  const loose: HeldBlock[] = [];
  let k = 0;
  for (const r of ranges) {
    const inside: HeldBlock[] = [];
    while (k < blocks.length && blocks[k].address < r.address) loose.push(blocks[k++]);
    while (k < blocks.length && blocks[k].address < r.address + r.size) inside.push(blocks[k++]);
    segments.push({ address: r.address, sizeBytes: r.size, expandable: r.expandable, blocks: inside });
  }
  while (k < blocks.length) loose.push(blocks[k++]);
  return { segments, loose };
}

/** A model's state (CachingAllocator snapshot) with its blocks named by the plan's ids. */
export function modelHeld(
  device: number,
  event: number,
  reservedBytes: number,
  segments: readonly SegmentSnapshot[],
  blockAt: ReadonlyMap<number, number>,
  stacks: Int32Array,
  times: Float64Array,
): HeldState {
  return {
    device,
    event,
    reservedBytes,
    loose: [],
    segments: segments.map((s) => ({
      address: s.address,
      sizeBytes: s.totalSize,
      expandable: s.isExpandable,
      blocks: s.blocks
        .filter((b) => b.state === 'active_allocated')
        .map((b) => {
          const block = blockAt.get(b.address) ?? -1;
          return {
            block,
            address: b.address,
            requestedBytes: b.requestedSize,
            sizeBytes: b.size,
            stack: block >= 0 ? stacks[block] : -1,
            pool: s.pool,
            timeUs: block >= 0 ? times[block] : Number.NaN,
          };
        }),
    })),
  };
}

/** Reserved bytes less what the program asked for, by cause. */
export interface Slack {
  /** Reserved less the live blocks' requested bytes: the sum of the parts below. */
  readonly totalBytes: number;
  /**
   * Live blocks' size over their request: PyTorch's rounding (N2); in a model's state the block's own size,
   * so also a remainder the allocator left unsplit in it (N7, N8), which a recording's state cannot see.
   */
  readonly roundingBytes: number;
  /** Free pieces of segments that hold a live block (a split block's rest, an unsplit remainder). */
  readonly freeInSegmentsBytes: number;
  /** Whole segments (or mapped runs) with no live block: cached memory empty_cache() would give back. */
  readonly cachedSegmentsBytes: number;
  /** What the three do not account for (live blocks outside any segment the trace shows); 0 when consistent. */
  readonly unexplainedBytes: number;
}

/** The slack of a state, by cause. */
export function slackOf(state: HeldState): Slack {
  let requested = 0;
  let rounding = 0;
  let free = 0;
  let cached = 0;
  for (const s of state.segments) {
    if (s.blocks.length === 0) {
      cached += s.sizeBytes;
      continue;
    }
    let used = 0;
    for (const b of s.blocks) {
      requested += b.requestedBytes;
      rounding += b.sizeBytes - b.requestedBytes;
      used += b.sizeBytes;
    }
    free += Math.max(0, s.sizeBytes - used);
  }
  for (const b of state.loose) requested += b.requestedBytes;
  const total = state.reservedBytes - requested;
  return {
    totalBytes: total,
    roundingBytes: rounding,
    freeInSegmentsBytes: free,
    cachedSegmentsBytes: cached,
    unexplainedBytes: total - rounding - free - cached,
  };
}

/** Every live block of a state. */
export function liveBlocks(state: HeldState): HeldBlock[] {
  const out: HeldBlock[] = [...state.loose];
  for (const s of state.segments) out.push(...s.blocks);
  return out;
}
