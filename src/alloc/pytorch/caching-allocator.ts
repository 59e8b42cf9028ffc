// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import type { Runtime } from '../../core/runtime.js';
import { AddressMap } from '../../util/address-map.js';
import {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type CachingAllocator,
  type FreeMemory,
  type StartState,
} from '../allocator.js';
import { AllocatorArgumentError, AllocatorStateError } from '../errors.js';
import { transaction } from '../transactions.js';
import { Block } from './block.js';
import { BlockPool, tryMerge } from './block-pool.js';
import { ExpandableBlocks } from './expandable-blocks.js';
import { HeldMemory } from './held-memory.js';
import { NativeSegments } from './native-segments.js';
import { npuAlignmentOffset, npuRoundSize } from './npu-rules.js';
import { PrivatePools } from './private-pool.js';
import { checkStartSegment, layStartBlocks, makeStartSegment } from './restore.js';
import { type PytorchAllocatorSettings, validateSettings } from './settings.js';
import { allocationSize, MIN_BLOCK_SIZE, roundSize, SMALL_SIZE } from './sizes.js';
import { type SegmentSnapshot, snapshotSegments } from './snapshot.js';
import { PytorchStats } from './stats.js';

/**
 * PyTorch's DeviceCachingAllocator for one device, built on vmmkit's core
 * (c10/cuda/CUDACachingAllocator.cpp; rules N1-N11 and E1-E8 of
 * docs/pytorch-allocators.md, cited where they apply). One class serves both modes, as
 * in PyTorch, because the two differ only where a segment comes from (a
 * one-step runtime.malloc, or pages mapped into an expandable segment) and
 * in the split rule; the public classes fix the mode (native.ts,
 * expandable.ts). This class keeps the policy (the pools, finding,
 * splitting and merging blocks, alloc_block, the cap, the release paths and
 * garbage collection); where a segment's memory comes from is a part per
 * mode (native-segments.ts, expandable-blocks.ts, counting what is held in
 * held-memory.ts), and snapshot.ts and restore.ts read and make the
 * segments of a snapshot.
 *
 * Note [What is not modelled]: recordStream and its events (the interface
 * has no cross-stream use, so a free completes at once; a replay frees a
 * block at its free_completed, when PyTorch makes it reusable, N9), what
 * Note [Private pools] (private-pool.ts) leaves out of CUDA graph and
 * MemPool pools, free-memory callbacks (torch's one serves CUDA IPC), peer
 * access, IPC. Streams are the trace's raw handles: numbers that order
 * blocks and separate pools, never runtime streams.
 */
export class PytorchCachingAllocator implements CachingAllocator {
  readonly device: number;
  readonly stats = new PytorchStats();
  #peakCapDemand = 0;
  readonly settings: PytorchAllocatorSettings;
  readonly #runtime: Runtime;
  readonly #expandable: boolean;
  readonly #small = new BlockPool(true);
  readonly #large = new BlockPool(false);
  /** CUDA graph and MemPool pools (graph_pools; Note [Private pools]). */
  readonly #privatePools = new PrivatePools();
  /**
   * Blocks handed out, by address (PyTorch's allocated_blocks, a hash map
   * there too): only ever looked up by exact address (Note [Address hash map]).
   */
  readonly #active = new AddressMap<Block>();
  /** What is held from the driver, as both paths count it. */
  readonly #memory: HeldMemory;
  /** The native path: one-step segments (native mode). */
  readonly #native: NativeSegments;
  /** The expandable path: expandable segments and their pages (expandable mode). */
  readonly #expandableBlocks: ExpandableBlocks;
  readonly #divisions: readonly number[];
  readonly #anyDivisions: boolean;
  readonly #maxSplitSize: number;
  readonly #maxNonSplitRounding: number;
  /** N6 (e), N10: garbage collection runs only under a cap (Note [Memory limit]). */
  readonly #gcEnabled: boolean;
  /** The cap given in bytes (AllocatorContext.memoryLimit), if any. */
  readonly #memoryLimit: number | undefined;
  /** Whether any cap is in force: a memory limit, or a memory fraction below 1. */
  readonly #capped: boolean;
  #limitBytes: number | undefined;
  #disposed = false;
  /** The largest rounded request and free block found so far (Note [Neutral max_split_size]). */
  #splitReach = 0;
  /** alloc_block has failed once (Note [Neutral max_split_size]). */
  #allocFailed = false;

  protected constructor(
    context: AllocatorContext,
    settings: PytorchAllocatorSettings,
    expandable: boolean,
    readonly name: string,
  ) {
    this.#runtime = context.runtime;
    this.device = context.device;
    context.runtime.device(context.device);
    this.#memory = new HeldMemory(context.runtime, context.device, this.stats, context.onSegmentEvent);
    this.#native = new NativeSegments(this.#memory, context.placement);
    this.#expandableBlocks = new ExpandableBlocks(this.#memory);
    this.settings = validateSettings(settings);
    this.#expandable = expandable;
    this.#divisions = this.settings.roundupPower2Divisions;
    this.#anyDivisions = this.#divisions.some((d) => d > 1);
    this.#maxSplitSize = this.settings.maxSplitSize;
    this.#maxNonSplitRounding = this.settings.maxNonSplitRoundingSize;
    const limit = context.memoryLimit;
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0))
      throw new AllocatorArgumentError(`${name}: memoryLimit ${limit} is not a byte count`);
    this.#memoryLimit = limit;
    this.#capped = limit !== undefined || this.settings.memoryFraction < 1;
    this.#gcEnabled = this.#capped && this.settings.garbageCollectionThreshold > 0;
  }

  /*
   * Note [Memory limit]: PyTorch keeps one optional cap per device,
   * allowed_memory_maximum, set by set_per_process_memory_fraction(f) to
   * size_t(f * totalGlobalMem) (a double product, truncated) when f < 1 and
   * unset at f = 1. It is checked in one place, the first step of
   * alloc_block (N6 f), before either kind of segment is asked for: when
   * total_allocated_memory (the bytes held) + alloc_size would pass it, the
   * attempt fails as a cudaMalloc OOM would, and the driver is not called.
   * alloc_size is get_allocation_size(round_size(request)) (N4) in both
   * modes, so under expandable segments the cap counts a 2 MiB, 20 MiB or
   * rounded-to-2-MiB step even where fewer pages would be mapped;
   * ExpandableSegment::map never looks at the cap. A failed attempt takes
   * the OOM path: release_available_cached_blocks (only with max_split_size
   * set; it skips expandable blocks), then release_cached_blocks (frees the
   * whole free segments, unmaps the free pages of expandable ones, E7) and
   * one retry, which checks the cap again against what is held then.
   * Garbage collection (N10) runs only while the cap is set, its threshold
   * size_t(threshold * allowed), and get_free_block counts block ages only
   * then. Read in c10/cuda/CUDACachingAllocator.cpp (setMemoryFraction,
   * malloc, alloc_block, garbage_collect_cached_blocks): the same in PyTorch
   * 2.3 (pytorch/pytorch 001074d2) and in 2026's main (as forked in
   * cyyever/pytorch 076f0279, whose only addition is an opt-in
   * throw_on_cudamalloc_oom check of the same sum), so in 2.11. Here the
   * cap is AllocatorContext's memoryLimit when given (bytes, used as given:
   * a what-if limit is a byte count), else the settings' memoryFraction,
   * rounded as PyTorch rounds it.
   */
  /*
   * Note [Neutral max_split_size]: max_split_size is read in three places:
   * get_free_block's two N5 comparisons (request or found block against it),
   * should_split's native rule (N7, the request against it), and
   * release_available_cached_blocks, which runs only once alloc_block has
   * failed (N6 g). A run with no max_split_size set that never saw a rounded
   * request or a found free block of M bytes or more, and whose alloc_block
   * never failed, would have decided every request alike under
   * max_split_size M or above (max_non_split_rounding acts only on requests
   * of M or more): the same blocks, segments, driver calls and figures.
   * advise (Note [Effective settings]) takes such a setting's figures from
   * that run instead of replaying it.
   */
  /**
   * The least max_split_size in bytes that would have changed no decision
   * of this run so far (Note [Neutral max_split_size]); Infinity when none
   * can be vouched for (a max_split_size is set, or alloc_block failed).
   */
  get neutralMaxSplitFrom(): number {
    return this.#maxSplitSize !== Number.POSITIVE_INFINITY || this.#allocFailed
      ? Number.POSITIVE_INFINITY
      : this.#splitReach + 1;
  }

  // --- the interface ---------------------------------------------------------

  /** N6, DeviceCachingAllocator::malloc; `privatePool` > 0 names a private pool (Note [Private pools]). */
  malloc(size: number, stream: number, privatePool = 0): number {
    if (this.#disposed) throw new AllocatorStateError(`${this.name}: the allocator was disposed`);
    if (!Number.isSafeInteger(size) || size <= 0)
      throw new AllocatorArgumentError(`${this.name}: size ${size} is not a positive integer`);
    if (!Number.isSafeInteger(stream) || stream < 0)
      throw new AllocatorArgumentError(`${this.name}: stream ${stream} is not a stream handle`);
    if (!Number.isSafeInteger(privatePool) || privatePool < 0)
      throw new AllocatorArgumentError(`${this.name}: pool ${privatePool} is not a pool number`);
    const rounded =
      this.settings.npu === undefined
        ? roundSize(size, this.#divisions, this.#anyDivisions)
        : npuRoundSize(size);
    // N3, P2: the request's pool's small or large BlockPool.
    const owner = privatePool === 0 ? undefined : this.#privatePools.route(privatePool);
    const pool = rounded <= SMALL_SIZE ? (owner?.small ?? this.#small) : (owner?.large ?? this.#large);
    if (rounded > this.#splitReach) this.#splitReach = rounded;
    let block = this.#getFreeBlock(pool, stream, rounded);
    if (block === undefined) {
      const allocSize = allocationSize(rounded); // N4
      if (this.#gcEnabled) this.#garbageCollect();
      block = this.#allocBlock(pool, stream, rounded, allocSize, false);
      if (block === undefined) this.#allocFailed = true;
      if (block === undefined && this.#releaseAvailableCachedBlocks(pool, stream, rounded))
        block = this.#allocBlock(pool, stream, rounded, allocSize, false);
      // P8: not while a capture is underway (a request naming a private pool is made under one).
      if (block === undefined && owner === undefined) {
        this.#releaseCachedBlocks();
        block = this.#allocBlock(pool, stream, rounded, allocSize, true);
      }
      if (block === undefined) {
        this.stats.ooms++;
        // PyTorch's message names alloc_size ("Tried to allocate ...").
        throw new AllocatorOutOfMemoryError(
          allocSize,
          this.device,
          this.stats.reservedBytes,
          this.stats.allocatedBytes,
          this.#freeMemory(),
          this.#capped ? this.#allowedBytes() : undefined,
        );
      }
    }
    if (this.settings.npu !== undefined && this.#expandable) block = this.#npuAlign(block, pool, rounded);
    return this.#allocFoundBlock(block, pool, stream, rounded, size);
  }

  /** NPU5: torch_npu starts a large block at the next base_addr_aligned_kb, the bytes before it left free. */
  #npuAlign(b: Block, pool: BlockPool, size: number): Block {
    const offset = npuAlignmentOffset(b.ptr, b.size, size, this.settings.npu?.baseAddrAlignedSize ?? 0);
    if (offset === 0) return b;
    const aligned = new Block(b.ptr + offset, b.size - offset, b.stream, pool, b.segment);
    aligned.splice(b, b.next);
    b.size = offset;
    pool.insert(b);
    return aligned;
  }

  /** N9: free_block at once (no recorded streams), merging with free neighbours. */
  free(address: number): void {
    const b = this.#active.get(address);
    if (b === undefined)
      throw new AllocatorArgumentError(`${this.name}: invalid device pointer 0x${address.toString(16)}`);
    this.#active.delete(address);
    b.allocated = false;
    this.stats.removeAllocated(b.size, b.requestedSize);
    b.requestedSize = 0;
    const pool = b.pool;
    tryMerge(b, b.prev, pool);
    tryMerge(b, b.next, pool);
    pool.insert(b);
  }

  /** N10 / E7 / P7: release_cached_blocks. */
  emptyCache(): void {
    if (this.#disposed) return;
    this.#releaseCachedBlocks();
  }

  /** P3 create_or_incref_pool: private pool `pool` gets one more user (a graph sharing it), made if new. */
  retainPool(pool: number): void {
    if (!Number.isSafeInteger(pool) || pool <= 0)
      throw new AllocatorArgumentError(`${this.name}: pool ${pool} is not a private pool`);
    this.#privatePools.retain(pool);
  }

  /** P3 releasePool: one user of private pool `pool` is gone; with none left its cache may be released (P7). */
  releasePool(pool: number): void {
    this.#privatePools.release(pool);
  }

  /** The segments and their blocks, as torch.cuda.memory._snapshot() lists them (T4; E8 for expandable). */
  snapshot(): SegmentSnapshot[] {
    return snapshotSegments(this.#large, this.#small, this.#privatePools, this.#active);
  }

  /** Make the segments and blocks of a snapshot's start (Note [Restoring a start state] in restore.ts). */
  restore(state: StartState): Float64Array | undefined {
    if (this.#disposed) throw new AllocatorStateError(`${this.name}: the allocator was disposed`);
    if (state.device !== this.device)
      throw new AllocatorArgumentError(
        `${this.name}: a start state of device ${state.device}, this is device ${this.device}`,
      );
    if (this.#memory.bytes !== 0 || this.#active.size > 0 || this.#expandableBlocks.count > 0)
      throw new AllocatorStateError(`${this.name}: restore needs a fresh allocator`);
    // Another allocator's segments (the other mode's) are not this model's to hold.
    if (state.segments.some((seg) => seg.expandable !== this.#expandable)) return undefined;
    const mem = this.#memory;
    for (const seg of state.segments) checkStartSegment(seg, this.name, this.#expandable, mem);
    const made = transaction(this.#runtime, (tx) =>
      state.segments.map((seg) => makeStartSegment(seg, tx, this.name, this.#expandable, mem)),
    );
    const out: number[] = [];
    for (let k = 0; k < made.length; k++) {
      const seg = state.segments[k];
      const m = made[k];
      layStartBlocks(seg, m, seg.pool === 'small' ? this.#small : this.#large, this.#active, this.stats, out);
      this.stats.segments++;
      if (m.segment === undefined) this.#native.adoptStart(m.base, seg.size, seg.stream);
      else this.#expandableBlocks.adoptStart(m.segment, seg.mapped, m.base - seg.address, seg.stream);
    }
    return Float64Array.from(out);
  }

  /** Give every segment back to the driver, handed-out blocks included. Never throws. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#native.dispose();
    this.#expandableBlocks.dispose();
    this.#active.clear();
    this.#small.clear();
    this.#large.clear();
    this.#privatePools.clear();
    this.#memory.bytes = 0;
    const s = this.stats;
    s.reservedBytes = s.allocatedBytes = s.requestedBytes = s.liveBlocks = s.segments = 0;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  // --- finding and handing out blocks -----------------------------------------

  /** N5 get_free_block (E6 for expandable blocks); removes and returns the block, or undefined. */
  #getFreeBlock(pool: BlockPool, stream: number, size: number): Block | undefined {
    if (this.#gcEnabled) pool.getFreeBlocksCallCount++;
    let b = pool.ceiling(stream, size);
    if (b === undefined) return undefined;
    if (b.segment !== undefined) {
      // E6: rank by expandable size (the block plus the unmapped range after
      // it), so the frontier block, which could grow, is taken last.
      let next = pool.after(b);
      while (next !== undefined && expandableSize(next) < expandableSize(b)) {
        b = next;
        next = pool.after(next);
      }
    }
    if (b.size > this.#splitReach) this.#splitReach = b.size;
    const mss = this.#maxSplitSize;
    // N5: no oversize block for a request below max_split_size...
    if (size < mss && b.size >= mss) return undefined;
    // ...and an oversize one only within max_non_split_rounding of the request.
    if (size >= mss && b.size >= size + this.#maxNonSplitRounding) return undefined;
    pool.erase(b);
    return b;
  }

  /** N7 should_split. */
  #shouldSplit(b: Block, size: number): boolean {
    const remaining = b.size - size;
    if (b.pool.isSmall || this.#expandable) return remaining >= MIN_BLOCK_SIZE;
    return size < this.#maxSplitSize && remaining > SMALL_SIZE;
  }

  /** N8 alloc_found_block: the allocation keeps the low end; the rest goes back to the pool. */
  #allocFoundBlock(b: Block, pool: BlockPool, stream: number, size: number, requested: number): number {
    if (this.#shouldSplit(b, size)) {
      const remaining = b;
      b = new Block(remaining.ptr, size, stream, pool, remaining.segment);
      b.splice(remaining.prev, remaining);
      remaining.ptr += size;
      remaining.size -= size;
      pool.insert(remaining);
    }
    b.allocated = true;
    b.requestedSize = requested;
    this.#active.set(b.ptr, b);
    this.stats.addAllocated(b.size, requested);
    return b.ptr;
  }

  // --- getting memory from the driver -----------------------------------------

  /** N6 (f) alloc_block: a new segment (native) or newly mapped pages (expandable). */
  #allocBlock(
    pool: BlockPool,
    stream: number,
    size: number,
    allocSize: number,
    isRetry: boolean,
  ): Block | undefined {
    if (isRetry) this.stats.allocRetries++;
    // Note [Memory limit]: alloc_size against the cap, before the driver, in both modes.
    const demand = this.#memory.bytes + allocSize;
    if (demand > this.#peakCapDemand) this.#peakCapDemand = demand;
    if (this.#capped && demand > this.#allowedBytes()) return undefined;
    if (this.#expandable) {
      const b = this.#expandableBlocks.tryAllocateExpandableBlock(pool, stream, size);
      if (b !== undefined && pool.owner !== undefined) pool.owner.cudaMallocCount++; // P4, P11
      return b;
    }
    return this.#native.allocBlock(pool, stream, allocSize);
  }

  /** CachingAllocator.peakCapDemandBytes. */
  get peakCapDemandBytes(): number {
    return this.#peakCapDemand;
  }

  /** Bytes the cap allows (allowed_memory_maximum, Note [Memory limit]); only while #capped. */
  #allowedBytes(): number {
    this.#limitBytes ??=
      this.#memoryLimit ??
      Math.floor(this.settings.memoryFraction * this.#runtime.memoryInfo(this.device).total);
    return this.#limitBytes;
  }

  /** The free blocks held (on mapped pages, under expandable segments), for an OOM's message. */
  #freeMemory(): FreeMemory {
    let freeBytes = 0;
    let freePieces = 0;
    let largestFreeBytes = 0;
    const pools = [this.#large, this.#small];
    for (const p of this.#privatePools.all()) pools.push(p.large, p.small); // P10
    for (const pool of pools) {
      for (const b of pool.blocksInOrder()) {
        freeBytes += b.size;
        freePieces++;
        if (b.size > largestFreeBytes) largestFreeBytes = b.size;
      }
    }
    return { freeBytes, freePieces, largestFreeBytes };
  }

  /**
   * N6 (g) release_available_cached_blocks, only with max_split_size set:
   * free the smallest cached oversize block that covers the request, or
   * else the largest oversize blocks until their sum does. Skips
   * expandable blocks (E7). Returns whether enough was freed; what it freed
   * stays freed either way, as in PyTorch.
   */
  #releaseAvailableCachedBlocks(pool: BlockPool, stream: number, size: number): boolean {
    const mss = this.#maxSplitSize;
    if (mss === Number.POSITIVE_INFINITY) return false;
    const key = Math.max(size, mss);
    const fit = pool.ceiling(stream, key);
    if (fit !== undefined && fit.segment === undefined) {
      this.#native.releaseBlock(fit);
      return true;
    }
    let released = 0;
    let cur = pool.below(stream, key);
    while (cur !== undefined && released < key && cur.size >= mss) {
      const before = pool.before(cur);
      if (cur.segment === undefined) {
        released += cur.size;
        this.#native.releaseBlock(cur);
      }
      cur = before;
    }
    return released >= key;
  }

  /** N6 (h), N10, E7, P7 release_cached_blocks: the large pool, then the small one, then freeable private pools. */
  #releaseCachedBlocks(): void {
    this.#expandableBlocks.retryReleases();
    this.#releaseBlocks(this.#large);
    this.#releaseBlocks(this.#small);
    for (const p of this.#privatePools.freeable()) {
      this.#releaseBlocks(p.small);
      this.#releaseBlocks(p.large);
      if (p.cudaMallocCount === 0) this.#privatePools.erase(p);
    }
  }

  /** release_blocks: free every whole free segment, unmap the free pages of expandable ones. */
  #releaseBlocks(pool: BlockPool): void {
    const toUnmap: Block[] = [];
    for (const b of pool.blocksInOrder()) {
      if (b.segment !== undefined) toUnmap.push(b);
      else if (!b.isSplit) this.#native.releaseBlock(b);
    }
    for (const b of toUnmap) {
      this.#expandableBlocks.unmapBlock(b);
      if (!b.mapped && b.prev === undefined && b.next === undefined)
        this.#expandableBlocks.releaseExpandableSegment(b);
    }
  }

  /** N10 garbage_collect_cached_blocks: free the older unsplit large blocks until under the threshold. */
  #garbageCollect(): void {
    const threshold = Math.floor(this.settings.garbageCollectionThreshold * this.#allowedBytes());
    const held = this.#memory.bytes;
    if (held <= threshold) return;
    const target = held - threshold;
    const pool = this.#large;
    const age = (b: Block) => pool.getFreeBlocksCallCount - b.gcCountBase;
    let totalAge = 0;
    let freeable = 0;
    for (const b of pool.blocksInOrder()) {
      if (!b.isSplit) {
        totalAge += age(b);
        freeable++;
      }
    }
    if (freeable === 0) return;
    let reclaimed = 0;
    let freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      const ageThreshold = totalAge / freeable;
      freed = false;
      for (const b of pool.blocksInOrder()) {
        if (!b.isSplit && b.segment === undefined && age(b) >= ageThreshold) {
          freed = true;
          reclaimed += b.size;
          totalAge -= age(b);
          freeable--;
          this.#native.releaseBlock(b);
        }
      }
    }
  }
}

/** E6: a block's size plus the unmapped range right after it. */
function expandableSize(b: Block): number {
  return b.size + (b.next !== undefined && !b.next.mapped ? b.next.size : 0);
}
