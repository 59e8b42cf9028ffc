import type { PhysicalAllocation } from '../../core/objects.js';
import { Transaction } from '../../core/transaction.js';
import { reportTo } from '../transactions.js';
import { Block } from './block.js';
import { type BlockPool, tryMerge } from './block-pool.js';
import { ExpandableSegment } from './expandable-segment.js';
import type { HeldMemory } from './held-memory.js';
import { cudaMallocCountAssert } from './private-pool.js';
import { LARGE_BUFFER, SMALL_BUFFER } from './sizes.js';

/**
 * The expandable path (expandable_segments:True, rules E2-E7 of
 * docs/pytorch-allocators.md): the allocator's expandable segments, one
 * reserved range per (pool, stream), and the block bookkeeping of mapping
 * pages into them as a pool grows (find_expandable_block,
 * try_allocate_expandable_block, map_block) and unmapping the pages wholly
 * inside free blocks (unmap_block, release_expandable_segment). The driver
 * side of one segment is ExpandableSegment.
 */
export class ExpandableBlocks {
  /** Expandable segments held, in creation order. */
  readonly #segments: ExpandableSegment[] = [];
  /** Unmapped pages whose handle would not release (a driver failure); retried by every release. */
  readonly #unreleased: PhysicalAllocation[] = [];

  constructor(readonly memory: HeldMemory) {}

  /** Segments held. */
  get count(): number {
    return this.#segments.length;
  }

  /**
   * E2, E4 find_expandable_block: the lowest address, among this stream's
   * unmapped ranges of the pool, where a free block plus unmapped space
   * after it hold `size` bytes; else a new segment's whole range.
   */
  #findExpandableBlock(pool: BlockPool, stream: number, size: number): { block: Block; created: boolean } {
    for (const u of pool.unmappedOf(stream)) {
      const c = u.prev !== undefined && !u.prev.allocated ? u.prev : u;
      let bytes = 0;
      for (let b: Block | undefined = c; bytes < size && b !== undefined && !b.allocated; b = b.next)
        bytes += b.size;
      if (bytes >= size) return { block: c, created: false };
    }
    const page = pool.isSmall ? SMALL_BUFFER : LARGE_BUFFER;
    const seg = ExpandableSegment.reserve(this.memory.runtime, this.memory.device, stream, page);
    this.#segments.push(seg);
    this.memory.stats.segments++;
    const block = new Block(seg.base, seg.size, stream, pool, seg);
    block.mapped = false;
    pool.insertUnmapped(block);
    return { block, created: true };
  }

  /**
   * try_allocate_expandable_block: map the shortfall (E4) and return one
   * free block of at least `size` bytes, removed from the pool.
   *
   * Note [Plan, then map]: PyTorch maps range by range and fixes its blocks
   * after each; if a later range fails, the earlier ones stay mapped until
   * the OOM path unmaps them. Here the ranges are worked out first (they
   * follow from the blocks alone), all their pages are mapped, and only
   * then do the blocks change. The segment it created and each range it
   * mapped are steps of one Transaction: a failure (thrown, or a page that
   * ran out of memory) takes back every page this request mapped and the
   * segment, so the allocator and the runtime are as before and no
   * segment_map is reported for pages that did not stay.
   */
  tryAllocateExpandableBlock(pool: BlockPool, stream: number, size: number): Block | undefined {
    const tx = new Transaction(reportTo(this.memory.runtime));
    try {
      const block = this.#mapExpandableBlock(pool, stream, size, tx);
      if (block === undefined) tx.rollback();
      return block;
    } catch (e) {
      tx.rollback();
      throw e;
    }
  }

  /** tryAllocateExpandableBlock's steps, each recorded in `tx`; undefined when a page ran out of memory. */
  #mapExpandableBlock(pool: BlockPool, stream: number, size: number, tx: Transaction): Block | undefined {
    const { block: candidate, created } = this.#findExpandableBlock(pool, stream, size);
    const seg = candidate.segment!;
    if (created) tx.undo(() => this.#dropNewSegment(seg, candidate, pool));
    const page = seg.pageSize;
    // The unmapped blocks to map, and how many bytes (whole pages) of each.
    const plan: Block[] = [];
    const planBytes: number[] = [];
    let covered = 0;
    let after: Block | undefined;
    if (candidate.mapped) {
      covered = candidate.size;
      after = candidate.next;
    } else {
      after = candidate;
    }
    while (covered < size) {
      const u = after!;
      const bytes = Math.ceil(Math.min(size - covered, u.size) / page) * page;
      plan.push(u);
      planBytes.push(bytes);
      covered += bytes;
      after = u.next;
      if (bytes === u.size && after !== undefined && after.mapped && !after.allocated) {
        covered += after.size;
        after = after.next;
      }
    }
    for (let k = 0; k < plan.length; k++) {
      const begin = seg.pageLeft(plan[k].ptr);
      const end = begin + planBytes[k] / page;
      if (!seg.mapPages(begin, end)) return undefined;
      tx.undo(() => seg.undoPages(begin, end));
    }
    let result = candidate;
    for (let k = 0; k < plan.length; k++) {
      this.#mapBlock(plan[k], planBytes[k]);
      result = plan[k];
    }
    pool.erase(result);
    return result;
  }

  /** Take back a segment this request reserved (its one unmapped block `candidate`); never throws. */
  #dropNewSegment(seg: ExpandableSegment, candidate: Block, pool: BlockPool): void {
    pool.eraseUnmapped(candidate);
    this.#segments.splice(this.#segments.indexOf(seg), 1);
    this.memory.stats.segments--;
    seg.dispose();
  }

  /** map_block's bookkeeping once the pages of [u.ptr, +bytes) are mapped. */
  #mapBlock(u: Block, bytes: number): void {
    const pool = u.pool;
    const ptr = u.ptr;
    pool.eraseUnmapped(u);
    u.mapped = true;
    if (bytes < u.size) {
      const rest = new Block(ptr + bytes, u.size - bytes, u.stream, pool, u.segment);
      rest.mapped = false;
      rest.splice(u, u.next);
      pool.insertUnmapped(rest);
      u.size = bytes;
    }
    tryMerge(u, u.prev, pool);
    tryMerge(u, u.next, pool);
    pool.insert(u);
    this.memory.bytes += bytes;
    this.memory.stats.addReserved(bytes);
    this.memory.stats.deviceAllocs++;
    this.memory.emit('segment_map', ptr, bytes, u.stream);
  }

  /** E7 unmap_block: unmap the whole pages inside free block `b`; all of them or, thrown, none. */
  unmapBlock(b: Block): void {
    const seg = b.segment!;
    const begin = seg.pageRight(b.ptr);
    const end = seg.pageLeft(b.end);
    if (begin >= end) return;
    seg.unmapPages(begin, end, this.#unreleased);
    this.#markUnmapped(b, seg.pageAddress(begin), seg.pageAddress(end));
  }

  /** unmap_block's bookkeeping once the pages of [from, to) inside free block `b` are gone. */
  #markUnmapped(b: Block, from: number, to: number): void {
    const pool = b.pool;
    const seg = b.segment;
    pool.erase(b);
    if (from > b.ptr) {
      const before = new Block(b.ptr, from - b.ptr, b.stream, pool, seg);
      before.splice(b.prev, b);
      pool.insert(before);
    }
    if (b.end > to) {
      const after = new Block(to, b.end - to, b.stream, pool, seg);
      after.splice(b, b.next);
      pool.insert(after);
    }
    b.ptr = from;
    b.size = to - from;
    b.mapped = false;
    tryMerge(b, b.prev, pool);
    tryMerge(b, b.next, pool);
    pool.insertUnmapped(b);
    this.memory.bytes -= to - from;
    this.memory.stats.reservedBytes -= to - from;
    // P4: PyTorch asserts here, after the unmap and before its trace entry.
    if (pool.owner !== undefined) {
      if (pool.owner.cudaMallocCount <= 0) throw cudaMallocCountAssert(pool.owner);
      pool.owner.cudaMallocCount--;
    }
    this.memory.stats.deviceFrees++;
    this.memory.emit('segment_unmap', from, to - from, b.stream);
  }

  /** release_expandable_segment: a wholly unmapped segment gives its range back. */
  releaseExpandableSegment(b: Block): void {
    const seg = b.segment!;
    seg.free();
    b.pool.eraseUnmapped(b);
    this.#segments.splice(this.#segments.indexOf(seg), 1);
    this.memory.stats.segments--;
  }

  /** Release the handles an earlier unmap could not; those that fail again stay listed. */
  retryReleases(): void {
    const pending = this.#unreleased.splice(0);
    for (const a of pending) {
      try {
        this.memory.runtime.release(a);
      } catch {
        this.#unreleased.push(a);
      }
    }
  }

  /** Hold a start segment whose pages `mapped` (recorded addresses, `delta` from its own) are mapped (Note [Restoring a start state]). */
  adoptStart(
    es: ExpandableSegment,
    mapped: readonly { address: number; size: number }[],
    delta: number,
    stream: number,
  ): void {
    const mem = this.memory;
    this.#segments.push(es);
    for (const r of mapped) {
      mem.bytes += r.size;
      mem.stats.addReserved(r.size);
      mem.emit('segment_map', r.address + delta, r.size, stream);
    }
  }

  /** Give every segment and every unreleased page back. Never throws. */
  dispose(): void {
    const rt = this.memory.runtime;
    for (const seg of this.#segments) seg.dispose();
    for (const a of this.#unreleased.splice(0)) rt.quietly(() => rt.release(a));
    this.#segments.length = 0;
  }
}
