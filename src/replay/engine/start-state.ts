/**
 * The recorded allocator's state at a trace's first event, for a snapshot
 * that starts mid-run (a ring buffer that wrapped, or history recorded from
 * some point on: docs/pytorch-allocators.md T3). Replay gives it to an allocator that
 * can restore it (CachingAllocator.restore), so that the window is replayed
 * from the state PyTorch was in, cached segments included, rather than from
 * its live blocks alone (trace-plan.ts, Note [Started mid-run]).
 *
 * Note [Rewinding a snapshot]: the `segments` list is complete at the end
 * of the trace (T4), so the state at the first event is the end state with
 * the trace's own segment events undone, last to first, as memory_viz
 * rewinds it:
 *
 *  - one-step segments (native): those at the end, less those the trace
 *    made (segment_alloc), plus those it gave back (segment_free, which
 *    carries address, size and stream). A segment's pool follows from its
 *    size: get_allocation_size gives 2 MiB only to small requests (N4).
 *  - expandable segments: the mapped pages at the end, less the pages the
 *    trace mapped (segment_map), plus those it unmapped (segment_unmap).
 *    The ranges mapped at the start are grouped by reserved range
 *    (Note [Expandable ranges at the start]).
 *  - blocks: those live at the start (the plan's initial blocks: a free
 *    whose alloc is not in the trace, a block active at the end that no
 *    event touched) at their recorded addresses; everything else in a
 *    segment's memory is free. PyTorch merges free neighbours at once (N9),
 *    so the free bytes between two live blocks are one free block.
 *
 * What a snapshot cannot tell, and what is reported (uncertainBytes, with
 * the reasons) where it applies:
 *
 *  - A live block's size. One active at the end and untouched has its size
 *    in `segments`. One the trace frees is known by its request only
 *    (free_completed carries the requested size, T2); PyTorch rounds it
 *    (N2), and may leave the block unsplit (N7), larger by what was left of
 *    the free block it came from. Small-pool and expandable blocks split
 *    whenever 512 bytes or more remain, so their size is the rounded
 *    request. A native large-pool block is not split when 1 MiB or less
 *    would remain; and every free block of a native large pool is larger
 *    than 1 MiB (a split leaves more than 1 MiB, a freed block is a large
 *    request, merging only grows), so a gap of 1 MiB or less after a live
 *    block is that block's own slack: exact. A larger gap is free, or is
 *    the block's slack (up to 1 MiB) followed by a free block that came
 *    later, which leaves no trace: counted, up to 1 MiB per such block.
 *    With max_split_size, an oversize block is never split (N7) and may
 *    hold up to max_non_split_rounding more (N5): counted the same way.
 *  - The ages garbage collection ranks blocks by (N10): not in a snapshot.
 *    Counted (the bytes garbage collection could free) only when the
 *    recorded settings turn it on.
 *  - The pool of an expandable range the trace unmapped and that is not in
 *    `segments` (memory_viz says the same): inferred where the snapshot
 *    shows it (Note [Expandable ranges at the start]); otherwise guessed
 *    and counted.
 *  - Where the segments and the trace disagree (a segment made twice, a
 *    block outside every segment, two live blocks overlapping): counted and
 *    described; such a block is left to the caller to allocate.
 *
 * Note [Expandable ranges at the start]: each expandable segment is one
 * reserved range per (pool, stream) of pageSize * ceil(1.125 * device
 * memory / pageSize) bytes (E3), 2 MiB pages for the small pool and 20 MiB
 * for the large (E2); `segments` lists its contiguous mapped ranges (E8).
 * While rewinding, every mapped range carries the reserved range it is in:
 * one known from `segments` (pool and stream recorded), or, for pages put
 * back by undoing a segment_unmap, one not yet known, which is the same as
 * a range it touches (mapped pages side by side lie in one reserved range:
 * reserved ranges are far larger than what is mapped in them). A range
 * still unknown at the start takes its pool from the first evidence: a
 * live block in it (its rounded size, N3), an alloc the trace serves in it
 * while it is still mapped, a mapped size that is not a whole number of
 * 20 MiB pages (small), or lying between ranges of a known reserved range
 * of its stream (reserved ranges do not overlap). Failing all of those, it
 * joins the nearest known range of its stream within one reserved range's
 * size, else takes the pool its stream's ranges have at the end (else the
 * large pool), and is counted. A reserved
 * range's base is taken as the lowest page the trace or the start shows
 * mapped in it: a range first mapped at its base (find_expandable_block
 * maps from an unmapped block's low end) and unmapped before the trace
 * began shows no lower page, and then none is used during the trace
 * either, which is all a replay needs (a request that would have used such
 * pages would have mapped them, and the trace would show it).
 */
import type { StartBlock, StartSegment, StartState } from '../../alloc/allocator.js';
import { npuRoundSize } from '../../alloc/pytorch/npu-rules.js';
import type { PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import {
  LARGE_BUFFER,
  MIN_BLOCK_SIZE,
  roundSize,
  SMALL_BUFFER,
  SMALL_SIZE,
} from '../../alloc/pytorch/sizes.js';
import { rangeHolding } from '../../util/address-ranges.js';
import { Action, type DeviceTrace, type MemorySnapshot, type SnapshotSegment } from '../read/snapshot.js';
import { settingsOfSnapshot } from '../read/vendor.js';

/** One device's rebuilt start, with how sure it is. */
export interface DeviceStartState extends StartState {
  /** True when nothing below is in doubt: the start is the recorded allocator's, as far as a snapshot can show. */
  readonly exact: boolean;
  /** How many bytes of the rebuilt start may be laid out otherwise than the recorded allocator had them. */
  readonly uncertainBytes: number;
  /** Why, one line per kind of doubt (each with its bytes). */
  readonly reasons: readonly string[];
  /** Bytes held at the start: the segments' (native), the mapped pages' (expandable). */
  readonly reservedBytes: number;
}

/** The plan's blocks live before the first event, as trace-plan.ts has them. */
export interface InitialBlocks {
  /** Block ids, in address order. */
  readonly ids: Int32Array;
  /** Recorded address of each, parallel to ids. */
  readonly address: Float64Array;
  /** 1 where an alloc or free of the trace names the block's address (a free found it), parallel to ids. */
  readonly inTrace: Uint8Array;
  /** Requested bytes and stream, indexed by block id. */
  readonly requested: Float64Array;
  readonly stream: Float64Array;
}

export interface StartStateOptions {
  /** Bytes of the recorded device, for the size of an expandable segment's range (E3). */
  readonly deviceMemory: number;
}

const SMALL = 'small';
const LARGE = 'large';
type Pool = typeof SMALL | typeof LARGE;

/** Rebuild one device's allocator state at its trace's first event (Note [Rewinding a snapshot]). */
export function rebuildStartState(
  snapshot: MemorySnapshot,
  trace: DeviceTrace,
  initial: InitialBlocks,
  options: StartStateOptions,
): DeviceStartState {
  const doubts = new Doubts();
  const rules = sizeRules(snapshot, doubts);
  const own = snapshot.segments.filter((s) => s.device === trace.device);
  const native = rewindNative(
    own.filter((s) => !s.isExpandable),
    trace,
    doubts,
  );
  const ranges = rewindExpandable(
    own.filter((s) => s.isExpandable),
    trace,
    doubts,
  );
  const live = liveBlocks(own, initial, rules.blockSize);
  const expandable = groupExpandable(ranges, live, trace, options.deviceMemory, rules.blockSize, doubts);
  const byAddress = segmentsByAddress(native, expandable);
  const laid = layOut(byAddress, holdersOf(byAddress, live, doubts), doubts);
  addSlack(byAddress, laid, trace, rules, doubts);
  const { segments, reservedBytes } = startSegments(byAddress, laid);
  doubtCollection(rules.settings, segments, doubts);
  return {
    device: trace.device,
    segments,
    exact: doubts.reasons.length === 0,
    uncertainBytes: doubts.bytes,
    reasons: doubts.lines(),
    reservedBytes,
  };
}

/** What sizes blocks at the start: the snapshot's settings (PyTorch's defaults when unreadable, a doubt). */
interface SizeRules {
  readonly settings: PytorchAllocatorSettings | undefined;
  /** A request's block size (N2, roundup_power2_divisions; torch_npu's own on an NPU snapshot). */
  readonly blockSize: (requested: number) => number;
  readonly maxSplit: number;
  readonly nonSplitRounding: number;
}

function sizeRules(snapshot: MemorySnapshot, doubts: Doubts): SizeRules {
  let settings: PytorchAllocatorSettings | undefined;
  try {
    settings = settingsOfSnapshot(snapshot);
  } catch (e) {
    doubts.add(
      `allocator_settings unreadable (${e instanceof Error ? e.message : String(e)}): PyTorch's defaults assumed`,
      0,
    );
  }
  const divisions = settings?.roundupPower2Divisions ?? [];
  const anyDivisions = divisions.some((d) => d > 1);
  // NPU2: torch_npu pads and rounds requests its own way.
  const blockSize = (n: number) =>
    settings?.npu === undefined ? roundSize(n, divisions, anyDivisions) : npuRoundSize(n);
  return {
    settings,
    blockSize,
    maxSplit: settings?.maxSplitSize ?? Number.POSITIVE_INFINITY,
    nonSplitRounding: settings?.maxNonSplitRoundingSize ?? LARGE_BUFFER,
  };
}

/** The live blocks, each with its size and where it came from: the recorded block's where the trace never touched it. */
function liveBlocks(
  own: readonly SnapshotSegment[],
  initial: InitialBlocks,
  blockSize: (requested: number) => number,
): LiveBlock[] {
  const endBlocks = new Map<number, number>();
  for (const s of own) for (const b of s.blocks) if (b.state !== 'inactive') endBlocks.set(b.address, b.size);
  const live: LiveBlock[] = [];
  for (let k = 0; k < initial.ids.length; k++) {
    const id = initial.ids[k];
    const address = initial.address[k];
    const requested = initial.requested[id];
    // A block the trace touched was sized by its events; one it never touched keeps its recorded size.
    const end = initial.inTrace[k] === 1 ? undefined : endBlocks.get(address);
    live.push({
      id,
      address,
      requested,
      stream: initial.stream[id],
      size: end ?? blockSize(requested),
      exactSize: end !== undefined,
    });
  }
  return live;
}

/** A segment at the start, before its blocks are laid. */
type StartShape = Omit<StartSegment, 'blocks'>;

/** Native and expandable segments together, by address; a native segment is one mapped range. */
function segmentsByAddress(
  native: readonly NativeSegment[],
  expandable: readonly StartShape[],
): StartShape[] {
  return [
    ...native.map((n) => ({
      address: n.address,
      size: n.size,
      stream: n.stream,
      pool: n.pool,
      expandable: false,
      mapped: [{ address: n.address, size: n.size }],
    })),
    ...expandable,
  ].sort((a, b) => a.address - b.address);
}

/** Each live block to the segment (and mapped range) holding it; one in none is a doubt. */
function holdersOf(
  byAddress: readonly StartShape[],
  live: readonly LiveBlock[],
  doubts: Doubts,
): { blocks: LiveBlock[][] }[] {
  const holders: { blocks: LiveBlock[][] }[] = byAddress.map((s) => ({ blocks: s.mapped.map(() => []) }));
  const flat: { start: number; end: number; seg: number; range: number }[] = [];
  for (let i = 0; i < byAddress.length; i++) {
    const m = byAddress[i].mapped;
    for (let j = 0; j < m.length; j++)
      flat.push({ start: m[j].address, end: m[j].address + m[j].size, seg: i, range: j });
  }

  flat.sort((a, b) => a.start - b.start);
  for (const b of live) {
    const f = rangeHolding(flat, b.address);
    if (f === undefined || b.address + b.size > f.end) {
      doubts.add(`live at the start but in no segment the snapshot and trace show`, b.size);
      continue;
    }
    holders[f.seg].blocks[f.range].push(b);
  }
  return holders;
}

/** One mapped range with its live blocks laid in address order. */
interface LaidRange {
  readonly start: number;
  readonly end: number;
  readonly blocks: Placed[];
}

/** Each range's live blocks in order, sized; an overlap is a doubt. */
function layOut(
  byAddress: readonly StartShape[],
  holders: readonly { blocks: LiveBlock[][] }[],
  doubts: Doubts,
): LaidRange[][] {
  return byAddress.map((s, i) =>
    s.mapped.map((r, j) => {
      const blocks: Placed[] = [];
      let at = r.address;
      for (const b of holders[i].blocks[j].sort((x, y) => x.address - y.address)) {
        if (b.address < at) {
          doubts.add(`live blocks at the start overlap (the trace and segments disagree)`, b.size);
          continue;
        }
        blocks.push({ block: b, size: b.size, slack: undefined });
        at = b.address + b.size;
      }
      return { start: r.address, end: r.address + r.size, blocks };
    }),
  );
}

/**
 * A native large-pool block known by its request may own slack after it
 * (N7): a gap of 1 MiB or less is its own; a larger one is resolved from the
 * trace where it can be (resolveSlack), else its bytes are a doubt.
 */
function addSlack(
  byAddress: readonly StartShape[],
  laid: readonly LaidRange[][],
  trace: DeviceTrace,
  rules: SizeRules,
  doubts: Doubts,
): void {
  const { maxSplit, nonSplitRounding } = rules;
  const open: Slack[] = [];
  byAddress.forEach((s, i) => {
    if (s.expandable || s.pool !== LARGE) return;
    for (const range of laid[i]) {
      range.blocks.forEach((p, k) => {
        if (p.block.exactSize) return;
        const from = p.block.address + p.size;
        const next = k + 1 < range.blocks.length ? range.blocks[k + 1].block.address : range.end;
        const gap = next - from;
        if (gap <= 0) return;
        // No free large-pool block is 1 MiB or smaller, so such a gap is the block's own slack.
        if (gap <= SMALL_SIZE) p.size += gap;
        else if (p.size >= maxSplit)
          open.push({ placed: p, from, to: next, most: Math.min(gap, nonSplitRounding), oversize: true });
        else if (gap - SMALL_SIZE - MIN_BLOCK_SIZE >= MIN_BLOCK_SIZE)
          open.push({
            placed: p,
            from,
            to: next,
            most: Math.min(SMALL_SIZE, gap - SMALL_SIZE - MIN_BLOCK_SIZE),
            oversize: false,
          });
      });
    }
  });
  resolveSlack(open, trace);
  for (const o of open) {
    if (o.placed.slack !== undefined) o.placed.size += o.placed.slack;
    else if (o.oversize)
      doubts.add(
        `oversize blocks (max_split_size) known by their request, whose unsplit slack the trace does not show (N5, N7)`,
        o.most,
      );
    else
      doubts.add(
        `large blocks known by their request, whose unsplit slack (up to 1 MiB, N7) the trace does not show`,
        o.most,
      );
  }
}

/** The start's segments, each range's free gaps made free blocks, and the bytes they reserve. */
function startSegments(
  byAddress: readonly StartShape[],
  laid: readonly LaidRange[][],
): { segments: StartSegment[]; reservedBytes: number } {
  const segments: StartSegment[] = [];
  let reservedBytes = 0;
  byAddress.forEach((s, i) => {
    const blocks: StartBlock[] = [];
    for (const range of laid[i]) {
      reservedBytes += range.end - range.start;
      let at = range.start;
      for (const p of range.blocks) {
        const b = p.block;
        if (b.address > at) blocks.push({ address: at, size: b.address - at, requestedSize: 0, blockId: -1 });
        blocks.push({ address: b.address, size: p.size, requestedSize: b.requested, blockId: b.id });
        at = b.address + p.size;
      }
      if (at < range.end) blocks.push({ address: at, size: range.end - at, requestedSize: 0, blockId: -1 });
    }
    segments.push({
      address: s.address,
      size: s.size,
      stream: s.stream,
      pool: s.pool,
      expandable: s.expandable,
      mapped: s.mapped,
      blocks,
    });
  });
  return { segments, reservedBytes };
}

/** Under garbage collection (N10), the free segments' ages are a doubt: a snapshot does not hold them. */
function doubtCollection(
  settings: PytorchAllocatorSettings | undefined,
  segments: readonly StartSegment[],
  doubts: Doubts,
): void {
  if (settings === undefined || !(settings.garbageCollectionThreshold > 0)) return;
  let collectable = 0;
  for (const s of segments)
    if (!s.expandable && s.pool === LARGE && s.blocks.length === 1 && s.blocks[0].blockId < 0)
      collectable += s.size;
  // Only whole free segments are collectable; a block freed later gets its age then.
  if (collectable > 0)
    doubts.add(`block ages for garbage collection (N10) are not in a snapshot`, collectable);
}

interface LiveBlock {
  readonly id: number;
  readonly address: number;
  readonly requested: number;
  readonly stream: number;
  readonly size: number;
  /** The size is the recorded block's (from `segments`), not the rounded request. */
  readonly exactSize: boolean;
}

/** A live block laid in its range: its size so far, and the slack the trace showed (resolveSlack). */
interface Placed {
  readonly block: LiveBlock;
  size: number;
  slack: number | undefined;
}

/** A free gap after a live block that may begin with the block's own unsplit slack, up to `most` bytes. */
interface Slack {
  readonly placed: Placed;
  readonly from: number;
  readonly to: number;
  readonly most: number;
  readonly oversize: boolean;
}

/**
 * The slack of each block that the trace shows: the first alloc served in
 * the gap after a live block, while that block is still live, takes the low
 * end of the free block there (N8), which begins where the live block's
 * slack ends. Once the live block is freed it merges with the gap (N9), and
 * its slack no longer matters to anything a replay measures.
 */
function resolveSlack(open: readonly Slack[], trace: DeviceTrace): void {
  if (open.length === 0) return;
  const gaps = [...open]
    .sort((a, b) => a.from - b.from)
    .map((o) => ({ start: o.from, end: o.to, slack: o, done: false }));
  const byBlock = new Map<number, (typeof gaps)[number]>();
  for (const g of gaps) byBlock.set(g.slack.placed.block.address, g);
  let left = gaps.length;
  for (let i = 0; i < trace.length && left > 0; i++) {
    const a = trace.action[i];
    if (a === Action.free_completed) {
      const g = byBlock.get(trace.addr[i]);
      if (g !== undefined && !g.done) {
        g.done = true;
        left--;
      }
      byBlock.delete(trace.addr[i]);
    } else if (a === Action.alloc) {
      const g = rangeHolding(gaps, trace.addr[i]);
      if (g === undefined || g.done) continue;
      g.done = true;
      left--;
      const e = trace.addr[i] - g.start;
      if (e <= g.slack.most && e % MIN_BLOCK_SIZE === 0) g.slack.placed.slack = e;
    }
  }
}

interface Range {
  readonly address: number;
  readonly size: number;
}

/** Reasons, each with the bytes it puts in doubt, in the order first met. */
class Doubts {
  readonly reasons: string[] = [];
  readonly #bytes = new Map<string, { bytes: number; count: number }>();
  bytes = 0;

  add(reason: string, bytes: number): void {
    let d = this.#bytes.get(reason);
    if (d === undefined) {
      this.#bytes.set(reason, (d = { bytes: 0, count: 0 }));
      this.reasons.push(reason);
    }
    d.bytes += bytes;
    d.count++;
    this.bytes += bytes;
  }

  lines(): string[] {
    return this.reasons.map((r) => {
      const d = this.#bytes.get(r)!;
      return `${r}: ${d.count} time(s), ${d.bytes} bytes`;
    });
  }
}

interface NativeSegment {
  readonly address: number;
  readonly size: number;
  readonly stream: number;
  readonly pool: Pool;
}

/** One-step segments at the start: the end's, less those the trace made, plus those it freed. */
function rewindNative(end: readonly SnapshotSegment[], trace: DeviceTrace, doubts: Doubts): NativeSegment[] {
  const held = new Map<number, NativeSegment>();
  for (const s of end) {
    const pool: Pool =
      s.segmentType === SMALL || s.segmentType === LARGE
        ? s.segmentType
        : s.totalSize === SMALL_BUFFER
          ? SMALL
          : LARGE;
    held.set(s.address, { address: s.address, size: s.totalSize, stream: s.stream, pool });
  }
  for (let i = trace.length - 1; i >= 0; i--) {
    const a = trace.action[i];
    const address = trace.addr[i];
    const size = trace.size[i];
    if (a === Action.segment_alloc) {
      if (!held.delete(address))
        doubts.add(`a segment_alloc of a segment neither at the end nor freed later`, size);
    } else if (a === Action.segment_free) {
      if (held.has(address)) doubts.add(`a segment_free of a segment that is at the end`, size);
      // N4: only a small request gets a 2 MiB segment.
      held.set(address, {
        address,
        size,
        stream: trace.stream[i],
        pool: size === SMALL_BUFFER ? SMALL : LARGE,
      });
    }
  }
  return [...held.values()];
}

/** A mapped range while rewinding, with the reserved range it lies in (a union-find id). */
interface Mapped {
  start: number;
  end: number;
  readonly stream: number;
  owner: number;
}

/** The reserved ranges met while rewinding: union-find over ids, with what is known of each. */
class Owners {
  readonly parent: number[] = [];
  readonly pool: (Pool | undefined)[] = [];
  /** Lowest page the trace or the start shows mapped in it. */
  readonly low: number[] = [];

  make(pool: Pool | undefined, low: number): number {
    this.parent.push(this.parent.length);
    this.pool.push(pool);
    this.low.push(low);
    return this.parent.length - 1;
  }

  find(x: number): number {
    const p = this.parent;
    while (p[x] !== x) {
      p[x] = p[p[x]];
      x = p[x];
    }
    return x;
  }

  /** One reserved range; false when their known pools disagree (then they stay apart). */
  union(a: number, b: number): boolean {
    const x = this.find(a);
    const y = this.find(b);
    if (x === y) return true;
    if (this.pool[x] !== undefined && this.pool[y] !== undefined && this.pool[x] !== this.pool[y])
      return false;
    this.parent[y] = x;
    this.pool[x] ??= this.pool[y];
    this.low[x] = Math.min(this.low[x], this.low[y]);
    return true;
  }
}

interface Rewound {
  readonly mapped: Mapped[];
  readonly owners: Owners;
  /** A pool each stream's expandable ranges have in `segments` (a last guess for one of unknown pool). */
  readonly streamPools: ReadonlyMap<number, Pool>;
}

/** Expandable segments' mapped pages at the start: the end's, less the trace's maps, plus its unmaps. */
function rewindExpandable(end: readonly SnapshotSegment[], trace: DeviceTrace, doubts: Doubts): Rewound {
  const owners = new Owners();
  // One owner per (stream, pool) at the end: one expandable segment each (E2).
  const endOwner = new Map<string, number>();
  let mapped: Mapped[] = [];
  for (const s of end) {
    const pool: Pool = s.segmentType === SMALL ? SMALL : LARGE;
    const key = `${s.stream}/${pool}`;
    let o = endOwner.get(key);
    if (o === undefined) endOwner.set(key, (o = owners.make(pool, s.address)));
    owners.low[o] = Math.min(owners.low[o], s.address);
    mapped.push({ start: s.address, end: s.address + s.totalSize, stream: s.stream, owner: o });
  }
  mapped.sort((a, b) => a.start - b.start);
  for (let i = trace.length - 1; i >= 0; i--) {
    const a = trace.action[i];
    if (a !== Action.segment_map && a !== Action.segment_unmap) continue;
    const start = trace.addr[i];
    const stop = start + trace.size[i];
    const stream = trace.stream[i];
    if (a === Action.segment_map) {
      // Before this map, [start, stop) was not mapped.
      let covered = 0;
      let owner: number | undefined;
      const out: Mapped[] = [];
      for (const m of mapped) {
        if (m.end <= start || m.start >= stop) {
          out.push(m);
          continue;
        }
        covered += Math.min(m.end, stop) - Math.max(m.start, start);
        if (owner === undefined) owner = m.owner;
        else owners.union(owner, m.owner);
        if (m.start < start) out.push({ start: m.start, end: start, stream: m.stream, owner: m.owner });
        if (m.end > stop) out.push({ start: stop, end: m.end, stream: m.stream, owner: m.owner });
      }
      if (covered !== stop - start)
        doubts.add(`a segment_map of pages not mapped at the end nor unmapped later`, stop - start - covered);
      if (owner !== undefined)
        owners.low[owners.find(owner)] = Math.min(owners.low[owners.find(owner)], start);
      mapped = out.sort((x, y) => x.start - y.start);
    } else {
      // Before this unmap, [start, stop) was mapped, in a reserved range that touches what is mapped beside it.
      let o = owners.make(undefined, start);
      const out: Mapped[] = [];
      let lo = start;
      let hi = stop;
      for (const m of mapped) {
        if (m.end < start || m.start > stop) {
          out.push(m);
          continue;
        }
        if (m.end > start && m.start < stop)
          doubts.add(
            `a segment_unmap of pages mapped at the time`,
            Math.min(m.end, stop) - Math.max(m.start, start),
          );
        if (m.stream !== stream || !owners.union(m.owner, o)) {
          out.push(m);
          continue;
        }
        o = owners.find(o);
        lo = Math.min(lo, m.start);
        hi = Math.max(hi, m.end);
      }
      out.push({ start: lo, end: hi, stream, owner: o });
      mapped = out.sort((x, y) => x.start - y.start);
    }
  }
  for (const m of mapped) m.owner = owners.find(m.owner);
  const streamPools = new Map<number, Pool>();
  for (const s of end) streamPools.set(s.stream, s.segmentType === SMALL ? SMALL : LARGE);
  return { mapped, owners, streamPools };
}

/** The expandable segments at the start: mapped ranges grouped by reserved range (Note [Expandable ranges at the start]). */
function groupExpandable(
  rewound: Rewound,
  live: readonly LiveBlock[],
  trace: DeviceTrace,
  deviceMemory: number,
  blockSize: (size: number) => number,
  doubts: Doubts,
): Omit<StartSegment, 'blocks'>[] {
  const { mapped, owners } = rewound;
  if (mapped.length === 0) return [];
  const reserved = (pool: Pool) => {
    const page = pool === SMALL ? SMALL_BUFFER : LARGE_BUFFER;
    return page * Math.ceil((deviceMemory + Math.floor(deviceMemory / 8)) / page);
  };
  const poolOf = (size: number): Pool => (blockSize(size) <= SMALL_SIZE ? SMALL : LARGE);
  const unknown = () => mapped.filter((m) => owners.pool[owners.find(m.owner)] === undefined);
  const settle = (m: Mapped, pool: Pool) => {
    const o = owners.find(m.owner);
    owners.pool[o] ??= pool;
  };
  // A live block in it.
  for (const m of unknown()) {
    const b = live.find((x) => x.address >= m.start && x.address < m.end);
    if (b !== undefined) settle(m, poolOf(b.requested));
  }
  // An alloc the trace serves in it while it is still mapped (before a segment_unmap touches it).
  let open = unknown();
  for (let i = 0; i < trace.length && open.length > 0; i++) {
    const a = trace.action[i];
    if (a === Action.segment_unmap) {
      const lo = trace.addr[i];
      const hi = lo + trace.size[i];
      open = open.filter((m) => m.end <= lo || m.start >= hi);
    } else if (a === Action.alloc) {
      const at = trace.addr[i];
      const m = open.find((x) => at >= x.start && at < x.end && x.stream === trace.stream[i]);
      if (m !== undefined) {
        settle(m, poolOf(trace.size[i]));
        open = open.filter((x) => owners.pool[owners.find(x.owner)] === undefined);
      }
    }
  }
  // Not whole large pages: the small pool.
  for (const m of unknown()) if ((m.end - m.start) % LARGE_BUFFER !== 0) settle(m, SMALL);
  // Between ranges of one known reserved range of its stream.
  for (const m of unknown()) {
    for (const n of mapped) {
      const o = owners.find(n.owner);
      if (n === m || n.stream !== m.stream || owners.pool[o] === undefined) continue;
      const others = mapped.filter((x) => owners.find(x.owner) === o);
      const lo = Math.min(...others.map((x) => x.start));
      const hi = Math.max(...others.map((x) => x.end));
      if (m.start >= lo && m.end <= hi) {
        owners.union(o, m.owner);
        break;
      }
    }
  }
  // Failing all that: the nearest known reserved range of its stream, else the large pool.
  for (const m of unknown()) {
    let best: Mapped | undefined;
    let distance = Number.POSITIVE_INFINITY;
    for (const n of mapped) {
      const o = owners.find(n.owner);
      if (n.stream !== m.stream || owners.pool[o] === undefined) continue;
      const d = n.start > m.start ? n.end - m.start : m.end - n.start;
      if (d <= reserved(owners.pool[o]!) && d < distance) {
        best = n;
        distance = d;
      }
    }
    if (best !== undefined) owners.union(best.owner, m.owner);
    else settle(m, rewound.streamPools.get(m.stream) ?? LARGE);
    doubts.add(
      `the pool of an expandable range unmapped during the trace (memory_viz cannot tell it either)`,
      m.end - m.start,
    );
  }
  // One segment per reserved range.
  const groups = new Map<number, Mapped[]>();
  for (const m of mapped) {
    const o = owners.find(m.owner);
    let g = groups.get(o);
    if (g === undefined) groups.set(o, (g = []));
    g.push(m);
  }
  const out: Omit<StartSegment, 'blocks'>[] = [];
  for (const [o, g] of groups) {
    g.sort((a, b) => a.start - b.start);
    const pool = owners.pool[o] ?? LARGE;
    const page = pool === SMALL ? SMALL_BUFFER : LARGE_BUFFER;
    const base = Math.min(owners.low[o], g[0].start);
    const size = reserved(pool);
    const ranges: Range[] = [];
    for (const m of g) {
      if ((m.start - base) % page !== 0 || (m.end - m.start) % page !== 0)
        doubts.add(
          `an expandable range that is not whole ${page}-byte pages of its segment`,
          m.end - m.start,
        );
      if (m.end - base > size)
        doubts.add(`expandable ranges farther apart than one segment's range`, m.end - m.start);
      ranges.push({ address: m.start, size: m.end - m.start });
    }
    out.push({ address: base, size, stream: g[0].stream, pool, expandable: true, mapped: ranges });
  }
  return out;
}
