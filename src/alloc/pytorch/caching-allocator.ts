// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import { isVmmError } from '../../core/errors.js';
import type { PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { Transaction } from '../../core/transaction.js';
import { OrderedMap } from '../../util/ordered-map.js';
import {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type CachingAllocator,
  type FreeMemory,
  type SegmentEvent,
  type SegmentPlacement,
  type StartSegment,
  type StartState,
} from '../allocator.js';
import { AllocatorArgumentError, AllocatorInternalError, AllocatorStateError } from '../errors.js';
import { reportTo, transaction } from '../transactions.js';
import { Block } from './block.js';
import { BlockPool } from './block-pool.js';
import { ExpandableSegment } from './expandable-segment.js';
import { type PrivatePool, PrivatePools } from './private-pool.js';
import { type PytorchAllocatorSettings, validateSettings } from './settings.js';
import {
  allocationSize,
  LARGE_BUFFER,
  MIN_BLOCK_SIZE,
  roundSize,
  SMALL_BUFFER,
  SMALL_SIZE,
} from './sizes.js';
import { PytorchStats } from './stats.js';

/** One segment as a snapshot's `segments` list shows it (docs/pytorch-allocators.md T4, E8). */
export interface SegmentSnapshot {
  readonly address: number;
  readonly totalSize: number;
  readonly stream: number;
  readonly segmentType: 'small' | 'large';
  readonly isExpandable: boolean;
  /** Its pool (segment_pool_id, P1): 0 for the default pool, else the number malloc was given. */
  readonly pool: number;
  readonly blocks: readonly BlockSnapshot[];
}

export interface BlockSnapshot {
  readonly address: number;
  readonly size: number;
  readonly requestedSize: number;
  readonly state: 'active_allocated' | 'inactive';
}

/**
 * PyTorch's DeviceCachingAllocator for one device, built on vmmkit's core
 * (c10/cuda/CUDACachingAllocator.cpp; rules N1-N11 and E1-E8 of
 * docs/pytorch-allocators.md, cited where they apply). One class serves both modes, as
 * in PyTorch, because the two differ only where a segment comes from (a
 * one-step runtime.malloc, or pages mapped into an expandable segment) and
 * in the split rule; the public classes fix the mode (native.ts,
 * expandable.ts).
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
  readonly settings: PytorchAllocatorSettings;
  readonly #runtime: Runtime;
  readonly #onSegmentEvent: ((event: SegmentEvent) => void) | undefined;
  readonly #placement: SegmentPlacement | undefined;
  readonly #expandable: boolean;
  readonly #small = new BlockPool(true);
  readonly #large = new BlockPool(false);
  /** CUDA graph and MemPool pools (graph_pools; Note [Private pools]). */
  readonly #privatePools = new PrivatePools();
  /** Blocks handed out, by address (PyTorch's allocated_blocks). */
  readonly #active = new OrderedMap<Block>();
  /** One-step segments held (native mode): size by base address. */
  readonly #segments = new Map<number, number>();
  /** Expandable segments held, in creation order (expandable mode). */
  readonly #expandableSegments: ExpandableSegment[] = [];
  /** Unmapped pages whose handle would not release (a driver failure); retried by every release. */
  readonly #unreleased: PhysicalAllocation[] = [];
  /** Bytes held from the driver (PyTorch's total_allocated_memory). */
  #held = 0;
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

  protected constructor(
    context: AllocatorContext,
    settings: PytorchAllocatorSettings,
    expandable: boolean,
    readonly name: string,
  ) {
    this.#runtime = context.runtime;
    this.device = context.device;
    context.runtime.device(context.device);
    this.#onSegmentEvent = context.onSegmentEvent;
    this.#placement = context.placement;
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
    const rounded = roundSize(size, this.#divisions, this.#anyDivisions);
    // N3, P2: the request's pool's small or large BlockPool.
    const owner = privatePool === 0 ? undefined : this.#privatePools.route(privatePool);
    const pool = rounded <= SMALL_SIZE ? (owner?.small ?? this.#small) : (owner?.large ?? this.#large);
    let block = this.#getFreeBlock(pool, stream, rounded);
    if (block === undefined) {
      const allocSize = allocationSize(rounded); // N4
      if (this.#gcEnabled) this.#garbageCollect();
      block = this.#allocBlock(pool, stream, rounded, allocSize, false);
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
    return this.#allocFoundBlock(block, pool, stream, rounded, size);
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
    this.#tryMerge(b, b.prev, pool);
    this.#tryMerge(b, b.next, pool);
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
    const all: Block[] = [...this.#large.blocksInOrder(), ...this.#small.blocksInOrder()];
    for (const p of this.#privatePools.all())
      all.push(...p.large.blocksInOrder(), ...p.small.blocksInOrder());
    all.push(...this.#active.values());
    const out: SegmentSnapshot[] = [];
    for (const head of all) {
      if (head.prev?.mapped) continue;
      const blocks: BlockSnapshot[] = [];
      let total = 0;
      for (let b: Block | undefined = head; b?.mapped; b = b.next) {
        blocks.push({
          address: b.ptr,
          size: b.size,
          requestedSize: b.requestedSize,
          state: b.allocated ? 'active_allocated' : 'inactive',
        });
        total += b.size;
      }
      out.push({
        address: head.ptr,
        totalSize: total,
        stream: head.stream,
        segmentType: head.pool.isSmall ? 'small' : 'large',
        isExpandable: head.segment !== undefined,
        pool: head.pool.owner?.id ?? 0,
        blocks,
      });
    }
    return out.sort((a, b) => a.address - b.address);
  }

  /**
   * Note [Restoring a start state]: a snapshot that starts mid-run
   * (replay/start-state.ts) gives the recorded allocator's segments at the
   * first event, with the blocks live and free in each. They are made here
   * the way PyTorch made them: a native segment is one one-step malloc of
   * its size (its cudaMalloc), asked for at its recorded address; an
   * expandable segment is a reserved range of this device's size (E3) with
   * the pages mapped at the start mapped at their offsets (E5). Then the
   * blocks are laid over them as PyTorch's Block list would be: linked in
   * address order (so the split state, is_split, and merging on free come
   * out as PyTorch's), free mapped blocks in their pool (the free list by
   * size), the unmapped gaps of an expandable range as unmapped blocks, the
   * live blocks handed out. Reserved is the segments' bytes (mapped bytes
   * for expandable ones), allocated and requested the live blocks' (N8,
   * N11); the peaks start there. The driver calls come first, in one
   * transaction (any failure takes back what was made and is thrown); the
   * bookkeeping after them cannot fail. Each segment made is reported as a
   * segment_alloc or segment_map, so a listener sees the memory taken. The
   * cap (Note [Memory limit]) is not applied: the start is what PyTorch
   * held, and the cap acts from the next malloc on. Ages for garbage
   * collection start at 0 (N10; the snapshot has none).
   */
  restore(state: StartState): Float64Array | undefined {
    if (this.#disposed) throw new AllocatorStateError(`${this.name}: the allocator was disposed`);
    if (state.device !== this.device)
      throw new AllocatorArgumentError(
        `${this.name}: a start state of device ${state.device}, this is device ${this.device}`,
      );
    if (this.#held !== 0 || this.#active.size > 0 || this.#expandableSegments.length > 0)
      throw new AllocatorStateError(`${this.name}: restore needs a fresh allocator`);
    // Another allocator's segments (the other mode's) are not this model's to hold.
    if (state.segments.some((seg) => seg.expandable !== this.#expandable)) return undefined;
    for (const seg of state.segments) this.#checkStartSegment(seg);
    const made = transaction(this.#runtime, (tx) =>
      state.segments.map((seg) => this.#makeStartSegment(seg, tx)),
    );
    const out: number[] = [];
    for (let k = 0; k < made.length; k++) this.#adoptStartSegment(state.segments[k], made[k], out);
    return Float64Array.from(out);
  }

  /** A start segment this model can hold: blocks tiling its memory, sizes as PyTorch's are. Throws AllocatorArgumentError. */
  #checkStartSegment(seg: StartSegment): void {
    const where = `${this.name}: start segment 0x${seg.address.toString(16)}`;
    const g = Math.max(this.#runtime.device(this.device).minimumGranularity, this.#runtime.vaGranularity);
    const page = seg.pool === 'small' ? SMALL_BUFFER : LARGE_BUFFER;
    const ranges = this.#expandable ? seg.mapped : [{ address: seg.address, size: seg.size }];
    if (!Number.isSafeInteger(seg.address) || !Number.isSafeInteger(seg.size) || seg.size <= 0)
      throw new AllocatorArgumentError(`${where}: address or size is not a byte count`);
    if (!this.#expandable && seg.size % g !== 0)
      throw new AllocatorArgumentError(`${where}: ${seg.size} bytes is not a multiple of ${g}`);
    let k = 0;
    let end = Number.NEGATIVE_INFINITY;
    for (const r of ranges) {
      const offset = r.address - seg.address;
      if (
        r.address <= end ||
        offset < 0 ||
        offset + r.size > seg.size ||
        r.size <= 0 ||
        (this.#expandable && (offset % page !== 0 || r.size % page !== 0))
      )
        throw new AllocatorArgumentError(
          `${where}: mapped range 0x${r.address.toString(16)} (${r.size} bytes) is not whole pages in order`,
        );
      let at = r.address;
      let freeBefore = false;
      for (; k < seg.blocks.length && at < r.address + r.size; k++) {
        const b = seg.blocks[k];
        const free = b.blockId < 0;
        if (
          b.address !== at ||
          !Number.isSafeInteger(b.size) ||
          b.size <= 0 ||
          b.size % MIN_BLOCK_SIZE !== 0 ||
          (free
            ? b.requestedSize !== 0
            : !(Number.isSafeInteger(b.blockId) && b.requestedSize > 0 && b.requestedSize <= b.size))
        )
          throw new AllocatorArgumentError(
            `${where}: block 0x${b.address.toString(16)} does not tile it as a block of PyTorch's would`,
          );
        if (free && freeBefore)
          throw new AllocatorArgumentError(
            `${where}: free blocks side by side at 0x${b.address.toString(16)} (PyTorch merges them)`,
          );
        freeBefore = free;
        at += b.size;
      }
      if (at !== r.address + r.size)
        throw new AllocatorArgumentError(
          `${where}: its blocks do not cover 0x${r.address.toString(16)} (${r.size} bytes)`,
        );
      end = r.address + r.size;
    }
    if (k !== seg.blocks.length) throw new AllocatorArgumentError(`${where}: blocks outside its memory`);
  }

  /** The driver's part of one start segment, undone by `tx` if a later one fails. */
  #makeStartSegment(
    seg: StartSegment,
    tx: Transaction,
  ): { base: number; segment: ExpandableSegment | undefined } {
    const rt = this.#runtime;
    if (!this.#expandable) {
      let base: number;
      try {
        base = rt.malloc(this.device, seg.size, { hint: seg.address }).base;
      } catch (e) {
        if (isVmmError(e) && e.kind === 'out-of-memory')
          throw new AllocatorOutOfMemoryError(seg.size, this.device, 0, 0);
        throw e;
      }
      tx.undo(() => rt.mfree(base));
      return { base, segment: undefined };
    }
    const es = ExpandableSegment.reserve(
      rt,
      this.device,
      seg.stream,
      seg.pool === 'small' ? SMALL_BUFFER : LARGE_BUFFER,
    );
    tx.undo(() => es.dispose());
    const last = seg.mapped[seg.mapped.length - 1];
    if (last !== undefined && last.address + last.size - seg.address > es.size)
      throw new AllocatorArgumentError(
        `${this.name}: start segment 0x${seg.address.toString(16)} maps past this device's ${es.size}-byte range`,
      );
    for (const r of seg.mapped) {
      const begin = es.pageLeft(es.base + (r.address - seg.address));
      if (!es.mapPages(begin, begin + r.size / es.pageSize))
        throw new AllocatorOutOfMemoryError(r.size, this.device, 0, 0);
    }
    return { base: es.base, segment: es };
  }

  /** The blocks and counters of one start segment whose memory is made; pushes the live blocks' addresses. */
  #adoptStartSegment(
    seg: StartSegment,
    made: { base: number; segment: ExpandableSegment | undefined },
    out: number[],
  ): void {
    const pool = seg.pool === 'small' ? this.#small : this.#large;
    const es = made.segment;
    const delta = made.base - seg.address;
    let prev: Block | undefined;
    let cursor = made.base;
    const link = (b: Block) => {
      b.splice(prev, undefined);
      prev = b;
    };
    const unmapped = (from: number, to: number) => {
      const u = new Block(from, to - from, seg.stream, pool, es);
      u.mapped = false;
      link(u);
      pool.insertUnmapped(u);
    };
    for (const sb of seg.blocks) {
      const ptr = sb.address + delta;
      if (ptr > cursor) unmapped(cursor, ptr);
      const b = new Block(ptr, sb.size, seg.stream, pool, es);
      link(b);
      if (sb.blockId >= 0) {
        b.allocated = true;
        b.requestedSize = sb.requestedSize;
        this.#active.set(ptr, b);
        this.stats.addAllocated(sb.size, sb.requestedSize);
        out.push(ptr);
      } else pool.insert(b);
      cursor = ptr + sb.size;
    }
    this.stats.segments++;
    if (es === undefined) {
      this.#segments.set(made.base, seg.size);
      this.#held += seg.size;
      this.stats.addReserved(seg.size);
      this.#emit('segment_alloc', made.base, seg.size, seg.stream);
      return;
    }
    if (cursor < es.end) unmapped(cursor, es.end);
    this.#expandableSegments.push(es);
    for (const r of seg.mapped) {
      this.#held += r.size;
      this.stats.addReserved(r.size);
      this.#emit('segment_map', r.address + delta, r.size, seg.stream);
    }
  }

  /** Give every segment back to the driver, handed-out blocks included. Never throws. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const rt = this.#runtime;
    for (const base of this.#segments.keys()) rt.quietly(() => rt.mfree(base));
    for (const seg of this.#expandableSegments) seg.dispose();
    for (const a of this.#unreleased.splice(0)) rt.quietly(() => rt.release(a));
    this.#segments.clear();
    this.#expandableSegments.length = 0;
    this.#active.clear();
    this.#small.clear();
    this.#large.clear();
    this.#privatePools.clear();
    this.#held = 0;
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

  /** Merge free `src` into `dst` if it is a free neighbour in the same state (try_merge_blocks). */
  #tryMerge(dst: Block, src: Block | undefined, pool: BlockPool): void {
    if (src === undefined || src.allocated || src.mapped !== dst.mapped) return;
    if (src.mapped) pool.erase(src);
    else pool.eraseUnmapped(src);
    if (dst.prev === src) {
      dst.ptr = src.ptr;
      dst.prev = src.prev;
      if (dst.prev !== undefined) dst.prev.next = dst;
    } else {
      dst.next = src.next;
      if (dst.next !== undefined) dst.next.prev = dst;
    }
    dst.size += src.size;
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
    if (this.#capped && this.#held + allocSize > this.#allowedBytes()) return undefined;
    if (this.#expandable) {
      const b = this.#tryAllocateExpandableBlock(pool, stream, size);
      if (b !== undefined && pool.owner !== undefined) pool.owner.cudaMallocCount++; // P4, P11
      return b;
    }
    let base: number;
    try {
      const hint = this.#placement?.addressFor(allocSize);
      base = this.#runtime.malloc(this.device, allocSize, hint === undefined ? {} : { hint }).base;
    } catch (e) {
      if (isVmmError(e) && e.kind === 'out-of-memory') return undefined;
      throw e;
    }
    this.#segments.set(base, allocSize);
    if (pool.owner !== undefined) pool.owner.cudaMallocCount++; // P4
    this.#held += allocSize;
    this.stats.addReserved(allocSize); // N11
    this.stats.segments++;
    this.stats.deviceAllocs++;
    this.#emit('segment_alloc', base, allocSize, stream);
    return new Block(base, allocSize, stream, pool, undefined);
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

  /** Native segment back to the driver (release_block). */
  #releaseBlock(b: Block): void {
    const owner = b.pool.owner;
    if (owner !== undefined && owner.cudaMallocCount <= 0) throw cudaMallocCountAssert(owner);
    this.#runtime.mfree(b.ptr);
    if (owner !== undefined) owner.cudaMallocCount--; // P4
    b.pool.erase(b);
    this.#segments.delete(b.ptr);
    this.#held -= b.size;
    this.stats.reservedBytes -= b.size;
    this.stats.segments--;
    this.stats.deviceFrees++;
    this.#emit('segment_free', b.ptr, b.size, b.stream);
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
      this.#releaseBlock(fit);
      return true;
    }
    let released = 0;
    let cur = pool.below(stream, key);
    while (cur !== undefined && released < key && cur.size >= mss) {
      const before = pool.before(cur);
      if (cur.segment === undefined) {
        released += cur.size;
        this.#releaseBlock(cur);
      }
      cur = before;
    }
    return released >= key;
  }

  /** N6 (h), N10, E7, P7 release_cached_blocks: the large pool, then the small one, then freeable private pools. */
  #releaseCachedBlocks(): void {
    this.#retryReleases();
    this.#releaseBlocks(this.#large);
    this.#releaseBlocks(this.#small);
    for (const p of this.#privatePools.freeable()) {
      this.#releaseBlocks(p.small);
      this.#releaseBlocks(p.large);
      if (p.cudaMallocCount === 0) this.#privatePools.erase(p);
    }
  }

  /** Release the handles an earlier unmap could not; those that fail again stay listed. */
  #retryReleases(): void {
    const pending = this.#unreleased.splice(0);
    for (const a of pending) {
      try {
        this.#runtime.release(a);
      } catch {
        this.#unreleased.push(a);
      }
    }
  }

  /** release_blocks: free every whole free segment, unmap the free pages of expandable ones. */
  #releaseBlocks(pool: BlockPool): void {
    const toUnmap: Block[] = [];
    for (const b of pool.blocksInOrder()) {
      if (b.segment !== undefined) toUnmap.push(b);
      else if (!b.isSplit) this.#releaseBlock(b);
    }
    for (const b of toUnmap) {
      this.#unmapBlock(b);
      if (!b.mapped && b.prev === undefined && b.next === undefined) this.#releaseExpandableSegment(b);
    }
  }

  /** N10 garbage_collect_cached_blocks: free the older unsplit large blocks until under the threshold. */
  #garbageCollect(): void {
    const threshold = Math.floor(this.settings.garbageCollectionThreshold * this.#allowedBytes());
    if (this.#held <= threshold) return;
    const target = this.#held - threshold;
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
          this.#releaseBlock(b);
        }
      }
    }
  }

  // --- expandable segments ------------------------------------------------------

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
    const seg = ExpandableSegment.reserve(this.#runtime, this.device, stream, page);
    this.#expandableSegments.push(seg);
    this.stats.segments++;
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
  #tryAllocateExpandableBlock(pool: BlockPool, stream: number, size: number): Block | undefined {
    const tx = new Transaction(reportTo(this.#runtime));
    try {
      const block = this.#mapExpandableBlock(pool, stream, size, tx);
      if (block === undefined) tx.rollback();
      return block;
    } catch (e) {
      tx.rollback();
      throw e;
    }
  }

  /** #tryAllocateExpandableBlock's steps, each recorded in `tx`; undefined when a page ran out of memory. */
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
    this.#expandableSegments.splice(this.#expandableSegments.indexOf(seg), 1);
    this.stats.segments--;
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
    this.#tryMerge(u, u.prev, pool);
    this.#tryMerge(u, u.next, pool);
    pool.insert(u);
    this.#held += bytes;
    this.stats.addReserved(bytes);
    this.stats.deviceAllocs++;
    this.#emit('segment_map', ptr, bytes, u.stream);
  }

  /** E7 unmap_block: unmap the whole pages inside free block `b`; all of them or, thrown, none. */
  #unmapBlock(b: Block): void {
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
    this.#tryMerge(b, b.prev, pool);
    this.#tryMerge(b, b.next, pool);
    pool.insertUnmapped(b);
    this.#held -= to - from;
    this.stats.reservedBytes -= to - from;
    // P4: PyTorch asserts here, after the unmap and before its trace entry.
    if (pool.owner !== undefined) {
      if (pool.owner.cudaMallocCount <= 0) throw cudaMallocCountAssert(pool.owner);
      pool.owner.cudaMallocCount--;
    }
    this.stats.deviceFrees++;
    this.#emit('segment_unmap', from, to - from, b.stream);
  }

  /** release_expandable_segment: a wholly unmapped segment gives its range back. */
  #releaseExpandableSegment(b: Block): void {
    const seg = b.segment!;
    seg.free();
    b.pool.eraseUnmapped(b);
    this.#expandableSegments.splice(this.#expandableSegments.indexOf(seg), 1);
    this.stats.segments--;
  }

  // --- helpers -------------------------------------------------------------------

  #emit(action: SegmentEvent['action'], address: number, size: number, stream: number): void {
    this.#onSegmentEvent?.({ action, address, size, stream });
  }
}

/** PyTorch's TORCH_INTERNAL_ASSERT(cudaMalloc_count > 0) failing (P4): its count of driver allocations is off. */
function cudaMallocCountAssert(p: PrivatePool): AllocatorInternalError {
  return new AllocatorInternalError(
    `private pool ${p.id}: PyTorch's assertion cudaMalloc_count > 0 fails here (more driver allocations given back than it counted)`,
  );
}

/** E6: a block's size plus the unmapped range right after it. */
function expandableSize(b: Block): number {
  return b.size + (b.next !== undefined && !b.next.mapped ? b.next.size : 0);
}
