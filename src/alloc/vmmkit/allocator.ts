import { isVmmError, vmmError } from '../../core/errors.js';
import type { AccessDescriptor, Runtime } from '../../core/runtime.js';
import { Access } from '../../core/types.js';
import {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type AllocatorStats,
  type CachingAllocator,
  type SegmentEvent,
} from '../allocator.js';
import { Arena } from './arena.js';
import type { Block } from './block.js';
import { type Chunk, ChunkStore } from './chunk-store.js';

/**
 * Note [vmmkit allocator]
 *
 * What is counted: reserved = physical memory held (created, not released),
 * idle and pooled chunks included. The goal: peak reserved / peak
 * requested <= 1.02 on every trace, at no more driver time than PyTorch's
 * expandable segments (ES), 2x at most. Physical pages are interchangeable
 * and addresses are free, so the waste that must exist is only pages that
 * live blocks partly cover; the rest is policy, and every choice below
 * trades memory against driver calls (setAccess ~37 us per handle, create
 * ~12 us up to 64 MiB, unmap ~20 us per handle on the H200):
 *
 * 1. Placement as ES: one reservation (arena) per stream and size class,
 *    blocks tiling it, best fit by size over free blocks mapped or not
 *    (one ordered lookup, lowest address among equals, as PyTorch orders
 *    its pools), the low end of a free block kept (N8), split at 512 B,
 *    free neighbours merged, requests rounded as PyTorch rounds them (N2,
 *    512 B). A block never leaves its stream's arena, so no block crosses
 *    streams before it is freed (N5).
 * 2. Size classes: small (<= 1 MiB) and large, as ES's pools; a medium
 *    arena (mediumSize) is optional: it keeps long-lived medium blocks from
 *    sitting between large ones (synthetic inference: 1.40 -> 1.04) but on
 *    the recorded kv_cache_decode trace it costs (1.085 -> 1.108), so it is
 *    off by default.
 * 3. Physical chunks of 2^k pages (k <= 9: 2 MiB to 1 GiB; the small arena
 *    single pages, a medium one up to 4): a run of n new pages is n in
 *    binary, at most log2 n handles. Each chunk counts the live blocks over
 *    it; at 0 it is idle (mapped, no live block). Freeing never calls the
 *    driver; a cache hit makes no call.
 * 4. Budgets, from the peak requested so far P (including the request):
 *    while held + need <= (1 + slack) P (slack 1%) new pages are created;
 *    past it, a need of 2^k pages takes a pooled chunk of that class, or
 *    unmaps the longest-idle chunk of that class and maps it here
 *    (GMLake's stitching: the memory moves, nothing is created), or is
 *    split in two of 2^(k-1) when smaller ones exist, and is created last
 *    (after releasing pooled and idle chunks to make room). Only chunks
 *    idle for minIdleAge mallocs (64) are moved: younger ones are the
 *    working set (a tensor freed and allocated again within a step), and
 *    moving them is what costs driver time. minIdleAge 0 is the memory-
 *    first setting (numbers below); hardSlack moves young chunks only past
 *    (1 + hardSlack) P. A run that ends a block and is followed by unmapped
 *    free space is mapped ahead to prefetchPages (8) while held stays
 *    within (1 + prefetchSlack) P: fewer, larger handles.
 * 5. Slivers: a small block first tries the free part of a page that a
 *    large block of its stream already pins (best fit in the large arena,
 *    a free block under 2 pages whose pages all have live blocks). That
 *    space is held anyway and ES can never use it for small blocks.
 * 6. A large block of whole pages (tensors of 2^k bytes) starts on a page
 *    boundary when its free block allows, so it covers no more pages than
 *    it must; the gap before it is a sliver for point 5.
 * 7. Unmapping idle memory waits for the device first (once per malloc or
 *    emptyCache), as ES synchronises before it unmaps (E7): a freed block
 *    may still be read by work queued before its free.
 * 8. A driver out-of-memory releases every pooled and idle chunk and tries
 *    once more (N6 h); a malloc that still fails unmaps and releases what
 *    it mapped and created (chunks it took from elsewhere stay, pooled)
 *    and throws AllocatorOutOfMemoryError. emptyCache releases pooled and
 *    idle chunks and frees arenas with no live block.
 *
 * Measured on the recorded H200 traces (traces/h200/*-expandable, `vmmkit
 * replay`, driver time from bench/results/h200-driver-costs.json), ratio
 * and driver time, default / minIdleAge 0 / the ES model:
 *   cnn_train          1.0256  7.6 ms | 1.0210 12.2 ms | 1.0393 2.1 ms
 *   kv_cache_decode    1.0853  2.9 ms | 1.0704 15.9 ms | 1.0853 1.2 ms
 *   moe_train          1.0130  5.3 ms | 1.0111  9.4 ms | 1.0317 4.5 ms
 *   phases_streams     1.0005  5.2 ms | 1.0005  8.1 ms | 1.0071 7.3 ms
 *   transformer_train  1.0626  5.0 ms | 1.0182 12.1 ms | 1.0713 4.9 ms
 * Never above ES on these, at most 1.02 on two of five (three memory
 * first); estimated driver time within 2x of ES on three (cnn 3.6x, kv
 * 2.4x, where ES calls the driver 89 times in all). Replayed on the H200
 * itself (--backend cuda, default settings), the same ratios and measured
 * driver time vmmkit / ES: cnn 24.1 / 6.3 ms, kv 9.6 / 5.1, moe 15.0 /
 * 14.1, phases 9.0 / 19.5, transformer 11.8 / 15.5. The synthetic traces of
 * test/alloc/vmmkit/traces.ts (measure.ts) disagree on the medium arena
 * (point 2): tuning on them alone chose settings the real traces refuted.
 */
export interface VmmkitOptions {
  /** Held memory may grow to (1 + slack) x peak requested before memory is moved instead of created (0.01). */
  readonly slack?: number;
  /** Rounded requests up to this go to the small arena (1 MiB, PyTorch's kSmallSize). */
  readonly smallSize?: number;
  /** Rounded requests up to this (and above smallSize) go to a medium arena (default 1 MiB: none); larger ones to the large arena. */
  readonly mediumSize?: number;
  /** The largest chunk, in pages (512: 1 GiB at 2 MiB pages); a power of two. */
  readonly maxChunkPages?: number;
  /** Below the budget, a run at the end of a large arena is mapped ahead to this many pages (8). */
  readonly prefetchPages?: number;
  /** Mapping ahead is allowed while held stays within (1 + prefetchSlack) x peak requested (default: slack). */
  readonly prefetchSlack?: number;
  /** Small and medium blocks first try free space on pages large blocks already pin (true; point 5 of the Note). */
  readonly fillSlivers?: boolean;
  /** A large block of whole pages starts on a page boundary when its free block allows (true; point 6). */
  readonly alignWholePages?: boolean;
  /** Budget floor in bytes: held memory below this is never moved (0). */
  readonly minBudget?: number;
  /**
   * Past (1 + hardSlack) x peak requested, any idle chunk is moved, however
   * recently idle (default: never). Memory first: 0.02 holds the ratio near
   * 1.02 on the synthetic inference traces at ~50x the driver time.
   */
  readonly hardSlack?: number;
  /** Over the budget, only chunks idle for this many mallocs are moved or released (64): younger ones are the working set. 0: memory first. */
  readonly minIdleAge?: number;
  /** Each arena's reservation (default: the device's memory, rounded up to a page). */
  readonly arenaSize?: number;
}

/** What an allocator holds and where, for analysis (bench/vmmkit-traces.ts): each arena's blocks and mapped pages, and unmapped held bytes. */
export interface MemoryLayout {
  readonly pageSize: number;
  readonly arenas: readonly {
    readonly stream: number;
    readonly kind: 'small' | 'medium' | 'large';
    /** Every block, live or free, in address order (absolute addresses). */
    readonly blocks: readonly { address: number; size: number; requested: number; live: boolean }[];
    /** Whether the page at `address` (a page boundary in the arena) is mapped. */
    mappedPage(address: number): boolean;
  }[];
  /** Bytes held in unmapped handles (the pool). */
  readonly pooledBytes: number;
}

const MIN_BLOCK = 512;
const SMALL = 0;
const MEDIUM = 1;
const LARGE = 2;

/** Where a chunk used by a malloc in progress came from, for undo. */
interface Taken {
  readonly chunk: Chunk;
  readonly created: boolean;
}

interface Stats {
  reservedBytes: number;
  peakReservedBytes: number;
  allocatedBytes: number;
  peakAllocatedBytes: number;
  requestedBytes: number;
  peakRequestedBytes: number;
  liveBlocks: number;
  ooms: number;
}

export class VmmkitAllocator implements CachingAllocator {
  readonly name = 'vmmkit';
  readonly device: number;
  readonly #runtime: Runtime;
  readonly #onEvent: ((e: SegmentEvent) => void) | undefined;
  readonly #store: ChunkStore;
  readonly #pageSize: number;
  readonly #arenaSize: number;
  readonly #slack: number;
  readonly #smallSize: number;
  readonly #mediumSize: number;
  readonly #prefetch: number;
  readonly #maxChunkPages: number;
  readonly #minBudget: number;
  readonly #minIdleAge: number;
  /** The hard budget over the soft one: (1 + hardSlack) / (1 + slack). */
  readonly #hardFactor: number;
  readonly #fillSlivers: boolean;
  readonly #alignWholePages: boolean;
  /** The prefetch budget over the soft one. */
  readonly #prefetchFactor: number;
  readonly #access: readonly AccessDescriptor[];
  /** Arenas by stream, by kind (small, medium, large). */
  readonly #arenas = new Map<number, (Arena | undefined)[]>();
  readonly #live = new Map<number, Block>();
  readonly #stats: Stats = {
    reservedBytes: 0,
    peakReservedBytes: 0,
    allocatedBytes: 0,
    peakAllocatedBytes: 0,
    requestedBytes: 0,
    peakRequestedBytes: 0,
    liveBlocks: 0,
    ooms: 0,
  };
  #disposed = false;
  /** Advanced per malloc and emptyCache; the device was synchronised in epoch #synced (point 5). */
  #epoch = 0;
  #synced = -1;

  constructor(context: AllocatorContext, options: VmmkitOptions = {}) {
    const rt = context.runtime;
    const info = rt.device(context.device);
    this.device = context.device;
    this.#runtime = rt;
    this.#onEvent = context.onSegmentEvent;
    this.#pageSize = Math.max(info.minimumGranularity, rt.vaGranularity);
    const {
      slack = 0.01,
      smallSize = 1024 * 1024,
      mediumSize = 1024 * 1024,
      maxChunkPages = 512,
      prefetchPages = 8,
      minBudget = 0,
    } = options;
    if (!(slack >= 0) || !Number.isFinite(slack)) throw new RangeError(`slack ${slack} is not >= 0`);
    if (!isCount(smallSize)) throw vmmError('invalid-value', `smallSize ${smallSize}`);
    if (!isCount(mediumSize) || mediumSize < smallSize)
      throw vmmError('invalid-value', `mediumSize ${mediumSize} is below smallSize ${smallSize}`);
    if (
      !isCount(maxChunkPages) ||
      maxChunkPages === 0 ||
      2 ** Math.round(Math.log2(maxChunkPages)) !== maxChunkPages
    )
      throw vmmError('invalid-value', `maxChunkPages ${maxChunkPages} is not a power of two`);
    if (!isCount(prefetchPages)) throw vmmError('invalid-value', `prefetchPages ${prefetchPages}`);
    if (!isCount(minBudget)) throw vmmError('invalid-value', `minBudget ${minBudget}`);
    const arenaSize = options.arenaSize ?? info.totalMemory;
    if (!isCount(arenaSize) || arenaSize === 0) throw vmmError('invalid-value', `arenaSize ${arenaSize}`);
    this.#arenaSize = Math.ceil(arenaSize / this.#pageSize) * this.#pageSize;
    this.#slack = slack;
    this.#smallSize = smallSize;
    this.#mediumSize = mediumSize;
    this.#prefetch = prefetchPages;
    this.#minBudget = minBudget;
    this.#minIdleAge = options.minIdleAge ?? 1000;
    this.#fillSlivers = options.fillSlivers ?? false;
    this.#alignWholePages = options.alignWholePages ?? false;
    const hardSlack = options.hardSlack ?? Number.POSITIVE_INFINITY;
    if (!(hardSlack >= slack)) throw new RangeError(`hardSlack ${hardSlack} is below slack ${slack}`);
    this.#hardFactor = (1 + hardSlack) / (1 + slack);
    const prefetchSlack = options.prefetchSlack ?? 0.1;
    if (!(prefetchSlack >= 0)) throw new RangeError(`prefetchSlack ${prefetchSlack} is not >= 0`);
    this.#prefetchFactor = (1 + prefetchSlack) / (1 + slack);
    this.#access = [{ device: context.device, access: Access.ReadWrite }];
    this.#maxChunkPages = maxChunkPages;
    this.#store = new ChunkStore(rt, context.device, this.#pageSize);
  }

  get stats(): AllocatorStats {
    const s = this.#stats;
    s.reservedBytes = this.#store.held;
    s.peakReservedBytes = this.#store.peakHeld;
    return s;
  }

  /** Driver work so far, for reports: chunks created and released. */
  get chunkCounts(): {
    created: number;
    released: number;
    held: number;
    idleBytes: number;
    poolBytes: number;
  } {
    const st = this.#store;
    return {
      created: st.creates,
      released: st.releases,
      held: st.all.size,
      idleBytes: st.idleBytes,
      poolBytes: st.poolBytes,
    };
  }

  /** Where the held memory is now (for analysis; walks every block). */
  layout(): MemoryLayout {
    const arenas: MemoryLayout['arenas'][number][] = [];
    for (const [stream, list] of this.#arenas) {
      for (const a of list) {
        if (a === undefined) continue;
        const blocks: { address: number; size: number; requested: number; live: boolean }[] = [];
        let b: Block | undefined = a.firstBlock;
        for (; b !== undefined; b = b.next)
          blocks.push({ address: a.base + b.offset, size: b.size, requested: b.requested, live: b.live });
        const page = this.#pageSize;
        arenas.push({
          stream,
          kind: a.kind === SMALL ? 'small' : a.kind === MEDIUM ? 'medium' : 'large',
          blocks,
          mappedPage: (address) => a.pages[Math.floor((address - a.base) / page)] !== undefined,
        });
      }
    }
    return { pageSize: this.#pageSize, arenas, pooledBytes: this.#store.poolBytes };
  }

  // --- malloc ------------------------------------------------------------------------

  malloc(size: number, stream: number): number {
    if (this.#disposed) throw vmmError('not-initialized', 'the allocator was disposed');
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size} is not a size`);
    if (!Number.isSafeInteger(stream)) throw vmmError('invalid-value', `stream ${stream} is not a stream`);
    this.#store.clock++;
    this.#epoch++;
    const rounded = size <= MIN_BLOCK ? MIN_BLOCK : Math.ceil(size / MIN_BLOCK) * MIN_BLOCK;
    const kind = rounded <= this.#smallSize ? SMALL : rounded <= this.#mediumSize ? MEDIUM : LARGE;
    let arena: Arena | undefined;
    let fit: Block | undefined;
    if (kind !== LARGE && this.#fillSlivers) {
      // Point 5 of the Note: a small block first tries the free tail of a page a large block already pins.
      const large = this.#arenas.get(stream)?.[LARGE];
      const f = large?.free.bestFit(rounded);
      if (
        f !== undefined &&
        f.size < 2 * this.#pageSize &&
        this.#pinnedAll(large!, f.offset, f.offset + rounded)
      ) {
        arena = large;
        fit = f;
      }
    }
    if (arena === undefined) {
      try {
        arena = this.#arena(stream, kind);
      } catch (e) {
        throw this.#oom(size, e);
      }
      fit = arena.free.bestFit(rounded);
      if (fit === undefined) throw this.#oom(size, undefined);
    }
    let offset = fit!.offset;
    if (arena.kind === LARGE && this.#alignWholePages) {
      // Point 6 of the Note: a block of whole pages on a page boundary covers no more pages than it must.
      const page = this.#pageSize;
      const aligned = Math.ceil(offset / page) * page;
      if (
        aligned !== offset &&
        aligned + rounded <= fit!.end &&
        Math.floor(rounded / page) * page === rounded
      )
        offset = aligned;
    }
    if (!this.#mappedAll(arena, offset, offset + rounded)) {
      try {
        this.#mapFor(arena, offset, offset + rounded, size);
      } catch (e) {
        throw this.#oom(size, e);
      }
    } else this.#activate(arena, offset, offset + rounded);
    const b = arena.takeAt(fit!, offset, rounded);
    b.requested = size;
    const address = arena.base + offset;
    this.#live.set(address, b);
    const s = this.#stats;
    s.allocatedBytes += rounded;
    s.requestedBytes += size;
    s.liveBlocks++;
    if (s.allocatedBytes > s.peakAllocatedBytes) s.peakAllocatedBytes = s.allocatedBytes;
    if (s.requestedBytes > s.peakRequestedBytes) s.peakRequestedBytes = s.requestedBytes;
    return address;
  }

  /** The driver's out-of-memory (or no room at all: no cause) becomes the allocator's; any other error goes up as it is. */
  #oom(size: number, cause: unknown): unknown {
    if (cause !== undefined && !(isVmmError(cause) && cause.kind === 'out-of-memory')) return cause;
    this.#stats.ooms++;
    return new AllocatorOutOfMemoryError(size, this.device, this.#store.held, this.#stats.allocatedBytes);
  }

  #arena(stream: number, kind: number): Arena {
    let arenas = this.#arenas.get(stream);
    if (arenas === undefined) {
      arenas = [undefined, undefined, undefined];
      this.#arenas.set(stream, arenas);
    }
    let a = arenas[kind];
    if (a === undefined) {
      const r = this.#runtime.reserve(this.#arenaSize, { alignment: this.#pageSize });
      const maxPages =
        kind === SMALL ? 1 : kind === MEDIUM ? Math.min(4, this.#maxChunkPages) : this.#maxChunkPages;
      a = new Arena(this.#runtime, r, this.#pageSize, stream, kind, maxPages);
      arenas[kind] = a;
    }
    return a;
  }

  /** Whether every page [offset, end) touches is mapped (the cache-hit test: one step per chunk). */
  #mappedAll(arena: Arena, offset: number, end: number): boolean {
    const pages = arena.pages;
    const last = arena.endPage(end);
    for (let p = arena.firstPage(offset); p < last; ) {
      const c = pages[p];
      if (c === undefined) return false;
      p = c.firstPage + c.pages;
    }
    return true;
  }

  /** Whether every page [offset, end) touches is mapped and already under a live block. */
  #pinnedAll(arena: Arena, offset: number, end: number): boolean {
    const pages = arena.pages;
    const last = arena.endPage(end);
    for (let p = arena.firstPage(offset); p < last; ) {
      const c = pages[p];
      if (c === undefined || c.live === 0) return false;
      p = c.firstPage + c.pages;
    }
    return true;
  }

  /** Count a new live block over every chunk under [offset, end) (all mapped). */
  #activate(arena: Arena, offset: number, end: number): void {
    const pages = arena.pages;
    const last = arena.endPage(end);
    for (let p = arena.firstPage(offset); p < last; ) {
      const c = pages[p]!;
      if (c.live++ === 0) this.#store.unmarkIdle(c);
      p = c.firstPage + c.pages;
    }
  }

  /** Count a live block gone from every chunk under [offset, end). */
  #deactivate(arena: Arena, offset: number, end: number): void {
    const pages = arena.pages;
    const last = arena.endPage(end);
    for (let p = arena.firstPage(offset); p < last; ) {
      const c = pages[p]!;
      if (--c.live === 0) this.#store.markIdle(c);
      p = c.firstPage + c.pages;
    }
  }

  #budget(extraRequested: number): number {
    const peak = Math.max(this.#stats.peakRequestedBytes, this.#stats.requestedBytes + extraRequested);
    return Math.max(this.#minBudget, Math.ceil(peak * (1 + this.#slack)));
  }

  /**
   * Map every unmapped page under [offset, end) (Note [vmmkit allocator],
   * points 2 and 4), then count the block over every chunk there. All or
   * nothing: a failure unmaps what this call mapped, releases what it
   * created, pools the rest, and throws.
   */
  #mapFor(arena: Arena, offset: number, end: number, requested: number): void {
    const store = this.#store;
    const budget = this.#budget(requested);
    const p0 = arena.firstPage(offset);
    const p1 = arena.endPage(end);
    const pageSize = this.#pageSize;
    const runs: number[] = [];
    // Chunks already mapped under the block are counted first, so that no reclaim below can take them.
    const activated: Chunk[] = [];
    for (let p = p0; p < p1; ) {
      const c = arena.pages[p];
      if (c !== undefined) {
        if (c.live++ === 0) store.unmarkIdle(c);
        activated.push(c);
        p = c.firstPage + c.pages;
      } else {
        let q = p + 1;
        while (q < p1 && arena.pages[q] === undefined) q++;
        runs.push(p, q);
        p = q;
      }
    }
    const taken: Taken[] = [];
    const mapped: Chunk[] = [];
    const events: SegmentEvent[] = [];
    try {
      for (let r = 0; r < runs.length; r += 2) {
        const p = runs[r];
        let q = runs[r + 1];
        if (arena.maxChunkPages > 1 && q === p1 && q - p < this.#prefetch) {
          // Map ahead past the block's end, into unmapped free space, while under the prefetch budget.
          let ahead = p + this.#prefetch;
          if (store.held + (ahead - p) * pageSize > budget * this.#prefetchFactor) ahead = q;
          while (q < ahead && q < arena.pages.length && arena.pages[q] === undefined) q++;
        }
        let page = p;
        while (page < q) {
          // One handle for the whole run (up to the arena's largest): 3 driver calls per growth.
          const t = this.#obtain(Math.min(q - page, arena.maxChunkPages), budget);
          taken.push(t);
          arena.map(t.chunk, page);
          mapped.push(t.chunk);
          page += t.chunk.pages;
        }
        arena.grant(p, q, this.#access);
        events.push({
          action: 'segment_map',
          address: arena.base + p * pageSize,
          size: (q - p) * pageSize,
          stream: arena.stream,
        });
      }
    } catch (e) {
      const rt = this.#runtime;
      for (let i = mapped.length - 1; i >= 0; i--) {
        const c = mapped[i];
        rt.quietly(() => arena.unmap(c));
      }
      for (const t of taken) {
        const c = t.chunk;
        if (c.arena !== undefined) continue; // could not be unmapped; stays (the runtime reported why)
        if (t.created) rt.quietly(() => store.release(c));
        else store.putPooled(c);
      }
      for (const c of activated) if (--c.live === 0) store.markIdle(c);
      throw e;
    }
    for (const c of mapped) {
      if (c.firstPage < p1) c.live = 1;
      else store.markIdle(c);
    }
    if (this.#onEvent !== undefined) for (const ev of events) this.#onEvent(ev);
  }

  /**
   * An unmapped chunk of at most `pages` pages for a run that needs that
   * many (point 4): pooled, else created while under the budget, else an
   * idle chunk moved, else created after trimming.
   */
  #obtain(pages: number, budget: number): Taken {
    const store = this.#store;
    const pooled = store.takePooled(pages);
    if (pooled !== undefined) return { chunk: pooled, created: false };
    const bytes = pages * this.#pageSize;
    if (store.held + bytes > budget) {
      // Past the hard budget even the working set (recently idle chunks) is moved.
      const hard = store.held + bytes > budget * this.#hardFactor;
      const minAge = hard ? 0 : this.#minIdleAge;
      const idle = store.largestIdle(pages, minAge);
      if (idle !== undefined) {
        this.#unmapIdle(idle);
        return { chunk: idle, created: false };
      }
      this.#trim(budget - bytes, minAge);
    }
    try {
      return { chunk: store.create(pages), created: true };
    } catch (e) {
      if (!isVmmError(e) || e.kind !== 'out-of-memory') throw e;
      // N6 (h): give back everything cached and try once more.
      this.#trim(0);
      return { chunk: store.create(pages), created: true };
    }
  }

  /** Unmap an idle chunk (it stays held, unmapped); on failure it stays idle and mapped. */
  #unmapIdle(c: Chunk): void {
    if (this.#synced !== this.#epoch) {
      this.#runtime.synchronize(this.device);
      this.#synced = this.#epoch;
    }
    const arena = c.arena!;
    const address = arena.base + c.firstPage * this.#pageSize;
    this.#store.unmarkIdle(c);
    try {
      arena.unmap(c);
    } catch (e) {
      this.#store.markIdle(c);
      throw e;
    }
    this.#onEvent?.({ action: 'segment_unmap', address, size: c.bytes, stream: arena.stream });
  }

  /** Release pooled, then idle chunks (largest first) until held <= `limit` or none is left. */
  #trim(limit: number, minAge = 0): void {
    const store = this.#store;
    while (store.held > limit) {
      const p = store.takeAnyPooled();
      if (p !== undefined) {
        try {
          store.release(p);
        } catch (e) {
          store.putPooled(p);
          throw e;
        }
        continue;
      }
      const c = store.largestIdle(Number.POSITIVE_INFINITY, minAge);
      if (c === undefined) return;
      this.#unmapIdle(c);
      try {
        store.release(c);
      } catch (e) {
        store.putPooled(c);
        throw e;
      }
    }
  }

  // --- free and emptyCache -----------------------------------------------------------

  free(address: number): void {
    const b = this.#live.get(address);
    if (b === undefined) throw vmmError('invalid-value', `0x${address.toString(16)} is not a live block`);
    const arena = b.arena;
    this.#deactivate(arena, b.offset, b.end);
    const s = this.#stats;
    s.allocatedBytes -= b.size;
    s.requestedBytes -= b.requested;
    s.liveBlocks--;
    this.#live.delete(address);
    arena.give(b);
  }

  emptyCache(): void {
    if (this.#disposed) return;
    this.#epoch++;
    let first: unknown;
    try {
      this.#trim(0);
    } catch (e) {
      first = e;
    }
    for (const [stream, pair] of this.#arenas) {
      for (let k = 0; k < pair.length; k++) {
        const a = pair[k];
        if (a === undefined || a.liveBlocks > 0 || a.mappedChunks > 0) continue;
        try {
          this.#runtime.free(a.reservation);
          pair[k] = undefined;
        } catch (e) {
          first ??= e;
        }
      }
      if (pair.every((a) => a === undefined)) this.#arenas.delete(stream);
    }
    if (first !== undefined) throw first;
  }

  // --- teardown ----------------------------------------------------------------------

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const rt = this.#runtime;
    const store = this.#store;
    rt.quietly(() => rt.synchronize(this.device));
    for (const c of [...store.all]) {
      const arena = c.arena;
      if (arena !== undefined) rt.quietly(() => arena.unmap(c));
      rt.quietly(() => store.release(c));
    }
    for (const pair of this.#arenas.values()) {
      for (const a of pair) if (a !== undefined) rt.quietly(() => rt.free(a.reservation));
    }
    this.#arenas.clear();
    this.#live.clear();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}
