// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import { isVmmError, vmmError } from '../../core/errors.js';
import type { Reservation } from '../../core/objects.js';
import type { AccessDescriptor, Runtime } from '../../core/runtime.js';
import { Access } from '../../core/types.js';
import {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type AllocatorStats,
  type CachingAllocator,
  type FreeMemory,
  type SegmentEvent,
} from '../allocator.js';
import { AllocatorArgumentError } from '../errors.js';
import { transaction } from '../transactions.js';
import { Arena } from './arena.js';
import type { Block } from './block.js';
import { type Chunk, ChunkStore } from './chunk-store.js';

/**
 * Note [vmmkit allocator]
 *
 * What is counted: reserved = physical memory held (created, not released),
 * idle and pooled chunks included. The requirement: peak reserved / peak
 * requested strictly below PyTorch's expandable segments (ES) on every
 * recorded H200 trace, at most 2x its estimated driver time
 * (test/alloc/vmmkit/h200-traces.test.ts). On the H200 each create,
 * setAccess and unmap costs about the same per handle whatever its size, up
 * to tens of MiB (bench/results/h200-driver-costs.json), so driver time is
 * the number of handles touched, and memory is what is held:
 *
 * 1. Placement as ES: one reservation (arena) per stream and size class,
 *    blocks tiling it, best fit by size over free blocks mapped or not
 *    (one ordered lookup, lowest address among equals, as PyTorch orders
 *    its pools), the low end of a free block kept (N8), split at 512 B,
 *    free neighbours merged, requests rounded as PyTorch rounds them (N2,
 *    512 B). A block never leaves its stream's arena, so no block crosses
 *    streams before it is freed (N5).
 * 2. Size classes: small (<= 1 MiB) and large, as ES's pools; a medium
 *    arena (mediumSize) is optional and off.
 * 3. One handle per growth: the unmapped pages a block needs (a run) get
 *    one chunk of exactly that many pages (up to maxChunkPages; single
 *    pages in the small arena), so a growth is create + map + setAccess,
 *    as ES's is. Each chunk counts the live blocks over it; at 0 it is
 *    idle (mapped, no live block). Freeing never calls the driver; a cache
 *    hit makes no call.
 * 4. Budgets, from the peak requested so far P (including the request):
 *    while held + need <= (1 + slack) P the run is created; past it a
 *    pooled chunk is used, or the largest chunk that fits among those idle
 *    for minIdleAge mallocs is unmapped and mapped here (GMLake's
 *    stitching), and only then is it created (after releasing old idle
 *    chunks to make room). A run that ends a block and is followed by
 *    unmapped free space is mapped ahead to prefetchPages while held stays
 *    within (1 + prefetchSlack) P: ES's 20 MiB large-pool granularity is
 *    what keeps its growths few, and this is the same saving without ES's
 *    frontier waste at the peak.
 * 5. Growth is the last resort (mappedFirst 'grow'): a small block whose
 *    own best fit would create memory past the budget (no pooled chunk
 *    covers it) first takes the smallest free extent on mapped pages of its
 *    own arena or of its stream's next arena up (large, or medium where
 *    there is one), placed at the extent's high end; no driver call. Why
 *    each part:
 *    - mapped memory that fits costs no driver time and no memory, while
 *      creating costs both, so it comes first; past the budget is exactly
 *      when creating would raise the peak.
 *    - small blocks only: large blocks in the small arena would span
 *      single-page handles that small blocks recycle.
 *    - at the high end: large blocks are carved off low ends (N8), so the
 *      low part of the hole stays one piece for them.
 *    - gated by the budget rather than on every miss ('miss'): on every
 *      miss small blocks spread over the large arena while there is no
 *      pressure.
 *    No constant is new; the budget is point 4's. The cost: a miss that
 *    reaches this point walks the blocks of two arenas (a cache hit does not).
 * 6. Slivers (fillSlivers, off): a small block first tries the free part of
 *    a page a large block of its stream pins. alignWholePages (off): a
 *    block of whole pages starts on a page boundary when it can.
 * 7. Unmapping idle memory waits for the device first (once per malloc or
 *    emptyCache), as ES synchronises before it unmaps (E7).
 * 8. A driver out-of-memory releases every pooled and idle chunk and tries
 *    once more (N6 h); a malloc that still fails unmaps and releases what
 *    it mapped and created (chunks it took from elsewhere stay, pooled)
 *    and throws AllocatorOutOfMemoryError. emptyCache releases pooled and
 *    idle chunks and frees arenas with no live block.
 * 9. A memory limit (AllocatorContext.memoryLimit, the cap PyTorch's
 *    set_per_process_memory_fraction sets) bounds what is held, checked
 *    where memory is created, as PyTorch checks it before the driver
 *    (N6 f): a creation that would pass it first releases pooled chunks,
 *    then idle ones, largest first, whatever their age (point 8's release,
 *    made before the driver is asked rather than after it refused), and
 *    fails as a driver out-of-memory would if what is held still does not
 *    leave room; mapping ahead (point 4) stops at the limit. The limit
 *    counts the pages a growth needs, not PyTorch's segment sizes: this
 *    allocator takes memory a run of pages at a time.
 *
 * Why not more stitching: at the peaks the extra memory is free whole pages,
 * not rounding or partial pages, and those pages rarely form whole idle
 * handles (a hole's pages belong to handles a live neighbour also covers),
 * so moving handles cannot reclaim them; only one-page handles could, at a
 * driver call per page, which costs more driver time than the requirement
 * allows. Hence one handle per run (point 3) and mapping ahead (point 4).
 *
 * The constants (slack, prefetchPages, prefetchSlack, minIdleAge) are values
 * chosen by measurement on traces/h200 and checked on traces/h200-heldout,
 * not derived from the cost model, and the margins are small: a new trace
 * may not keep them. How they were chosen, what was tried and dropped and
 * the ratios measured: docs/vmmkit-allocator-log.md; today's figures:
 * `node dist/bench/vmmkit-traces.js`.
 */
export interface VmmkitOptions {
  /** Held memory may grow to (1 + slack) x peak requested before memory is moved instead of created (0.01). */
  readonly slack?: number;
  /** Rounded requests up to this go to the small arena (1 MiB, PyTorch's kSmallSize). */
  readonly smallSize?: number;
  /** Rounded requests up to this (and above smallSize) go to a medium arena (default 1 MiB: none); larger ones to the large arena. */
  readonly mediumSize?: number;
  /** The largest chunk, in pages (512: 1 GiB at 2 MiB pages); a power of two. A longer run takes several. */
  readonly maxChunkPages?: number;
  /** Below the budget, a run at the end of a large arena is mapped ahead to this many pages (8). */
  readonly prefetchPages?: number;
  /** Mapping ahead is allowed while held stays within (1 + prefetchSlack) x peak requested (0.1). */
  readonly prefetchSlack?: number;
  /** Small and medium blocks first try free space on pages large blocks already pin (false; point 6 of the Note). */
  readonly fillSlivers?: boolean;
  /** A large block of whole pages starts on a page boundary when its free block allows (false; point 6). */
  readonly alignWholePages?: boolean;
  /** Budget floor in bytes: held memory below this is never moved (0). */
  readonly minBudget?: number;
  /**
   * Past (1 + hardSlack) x peak requested, any idle chunk is moved, however
   * recently idle (default: never).
   */
  readonly hardSlack?: number;
  /** Over the budget, only chunks idle for this many mallocs are moved or released (1000): younger ones are the working set. 0: memory first. */
  readonly minIdleAge?: number;
  /**
   * When a miss first takes free space on mapped pages, in its arena or (small blocks) its
   * stream's next one up (large, or medium where there is one) (point 5 of the Note): 'grow' (default) when it would otherwise create memory past
   * the budget, 'miss' on every miss, 'never'.
   */
  readonly mappedFirst?: 'grow' | 'miss' | 'never';
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
    /** The handles mapped there: where, how many pages, live blocks over them, mallocs since they became idle (-1: not idle). */
    readonly chunks: readonly { address: number; pages: number; live: number; idleFor: number }[];
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
  readonly #mappedFirst: 'grow' | 'miss' | 'never';
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
  /** Advanced per malloc and emptyCache; the device was synchronised in epoch #synced (point 7). */
  #epoch = 0;
  #synced = -1;
  /** Point 9: the most bytes held; Infinity without a limit. */
  readonly #limit: number;

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
    if (!(slack >= 0) || !Number.isFinite(slack))
      throw new AllocatorArgumentError(`slack ${slack} is not >= 0`);
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
    this.#mappedFirst = options.mappedFirst ?? 'grow';
    const hardSlack = options.hardSlack ?? Number.POSITIVE_INFINITY;
    if (!(hardSlack >= slack))
      throw new AllocatorArgumentError(`hardSlack ${hardSlack} is below slack ${slack}`);
    this.#hardFactor = (1 + hardSlack) / (1 + slack);
    const prefetchSlack = options.prefetchSlack ?? 0.1;
    if (!(prefetchSlack >= 0)) throw new AllocatorArgumentError(`prefetchSlack ${prefetchSlack} is not >= 0`);
    this.#prefetchFactor = (1 + prefetchSlack) / (1 + slack);
    this.#access = [{ device: context.device, access: Access.ReadWrite }];
    this.#maxChunkPages = maxChunkPages;
    this.#store = new ChunkStore(rt, context.device, this.#pageSize);
    const limit = context.memoryLimit;
    if (limit !== undefined && !isCount(limit)) throw vmmError('invalid-value', `memoryLimit ${limit}`);
    this.#limit = limit ?? Number.POSITIVE_INFINITY;
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
        const chunks: { address: number; pages: number; live: number; idleFor: number }[] = [];
        for (let p = 0; p < a.pages.length; p++) {
          const c = a.pages[p];
          if (c === undefined || c.firstPage !== p) continue;
          const idleFor = c.idle ? this.#store.clock - c.idleSince : -1;
          chunks.push({ address: a.base + p * page, pages: c.pages, live: c.live, idleFor });
        }
        arenas.push({
          chunks,
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
    return this.#serve(size, stream);
  }

  /** malloc's work once its arguments are checked and the clocks advanced. */
  #serve(size: number, stream: number): number {
    const rounded = size <= MIN_BLOCK ? MIN_BLOCK : Math.ceil(size / MIN_BLOCK) * MIN_BLOCK;
    const kind = rounded <= this.#smallSize ? SMALL : rounded <= this.#mediumSize ? MEDIUM : LARGE;
    let arena: Arena | undefined;
    let fit: Block | undefined;
    if (kind !== LARGE && this.#fillSlivers) {
      // Point 6 of the Note: a small block first tries the free tail of a page a large block already pins.
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
      arena = this.#arenas.get(stream)?.[kind];
      if (arena === undefined) return this.#serveInNewArena(size, stream, kind);
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
    if (
      this.#mappedFirst !== 'never' &&
      !this.#mappedAll(arena, offset, offset + rounded) &&
      (this.#mappedFirst === 'miss' || this.#wouldGrow(arena, offset, offset + rounded, size))
    ) {
      // Point 5 of the Note: growth is the last resort; free space already mapped comes first.
      const m = this.#mappedFit(stream, arena, rounded);
      if (m !== undefined) {
        arena = m.arena;
        fit = m.block;
        offset = m.offset;
      }
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
    return new AllocatorOutOfMemoryError(
      size,
      this.device,
      this.#store.held,
      this.#stats.allocatedBytes,
      this.#freeMemory(),
      Number.isFinite(this.#limit) ? this.#limit : undefined,
    );
  }

  /**
   * Held memory no live block uses, for an OOM's message: each free
   * block's extent on mapped pages, and each pooled (unmapped) chunk, is a
   * piece. Walks every block; only when throwing.
   */
  #freeMemory(): FreeMemory {
    let freeBytes = 0;
    let freePieces = 0;
    let largestFreeBytes = 0;
    const piece = (n: number) => {
      freeBytes += n;
      freePieces++;
      if (n > largestFreeBytes) largestFreeBytes = n;
    };
    const page = this.#pageSize;
    for (const list of this.#arenas.values()) {
      for (const a of list) {
        if (a === undefined || a.mappedChunks === 0) continue;
        const runs = this.#mappedRuns(a);
        for (let b: Block | undefined = a.firstBlock; b !== undefined; b = b.next) {
          if (b.live) continue;
          for (let k = 0; k < runs.length; k += 2) {
            const lo = Math.max(b.offset, runs[k] * page);
            const hi = Math.min(b.end, runs[k + 1] * page);
            if (hi > lo) piece(hi - lo);
          }
        }
      }
    }
    for (const c of this.#store.all) if (c.arena === undefined) piece(c.bytes);
    return { freeBytes, freePieces, largestFreeBytes };
  }

  /**
   * A malloc whose stream has no arena of its kind yet: the arena's
   * reservation and the rest of the malloc are one transaction, so a malloc
   * that fails after it (no room, a driver step) gives the arena back.
   */
  #serveInNewArena(size: number, stream: number, kind: number): number {
    return transaction(this.#runtime, (tx) => {
      let r: Reservation;
      try {
        r = this.#runtime.reserve(this.#arenaSize, { alignment: this.#pageSize });
      } catch (e) {
        throw this.#oom(size, e);
      }
      const maxPages =
        kind === SMALL ? 1 : kind === MEDIUM ? Math.min(4, this.#maxChunkPages) : this.#maxChunkPages;
      const a = new Arena(this.#runtime, r, this.#pageSize, stream, kind, maxPages);
      let arenas = this.#arenas.get(stream);
      if (arenas === undefined) {
        arenas = [undefined, undefined, undefined];
        this.#arenas.set(stream, arenas);
      }
      arenas[kind] = a;
      tx.undo(() => this.#dropArena(a));
      return this.#serve(size, stream);
    });
  }

  /** Give an empty arena's range back and forget it (it stays, usable, if the range will not go). */
  #dropArena(a: Arena): void {
    this.#runtime.free(a.reservation);
    const arenas = this.#arenas.get(a.stream)!;
    arenas[a.kind] = undefined;
    if (arenas.every((x) => x === undefined)) this.#arenas.delete(a.stream);
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

  /** Whether mapping [offset, end) would create memory past the budget (no pooled chunk covers its unmapped pages). */
  #wouldGrow(arena: Arena, offset: number, end: number, requested: number): boolean {
    let need = 0;
    const pages = arena.pages;
    const last = arena.endPage(end);
    for (let p = arena.firstPage(offset); p < last; p++) if (pages[p] === undefined) need++;
    const bytes = need * this.#pageSize;
    return this.#store.poolBytes < bytes && this.#store.held + bytes > this.#budget(requested);
  }

  /**
   * The smallest free extent that lies wholly on mapped pages and holds
   * `size` bytes (lowest address among equals), in `own` or, for a small
   * block, in its stream's next arena up (large, or medium where there is one) (point 5 of the Note): its
   * block and the offset to place at. Walks every block of those arenas,
   * so it runs only on a miss, which costs driver calls anyway.
   */
  #mappedFit(
    stream: number,
    own: Arena,
    size: number,
  ): { arena: Arena; block: Block; offset: number } | undefined {
    // The next class up: a medium arena, where there is one, exists to keep smaller blocks off large pages.
    const large =
      own.kind === SMALL
        ? this.#arenas.get(stream)?.[this.#mediumSize > this.#smallSize ? MEDIUM : LARGE]
        : undefined;
    let best: { arena: Arena; block: Block; offset: number } | undefined;
    let bestSize = Number.POSITIVE_INFINITY;
    const page = this.#pageSize;
    for (const a of large === undefined ? [own] : [own, large]) {
      if (a.mappedChunks === 0) continue;
      // Mapped runs of the arena, in page order.
      const runs = this.#mappedRuns(a);
      let r = 0;
      for (let b: Block | undefined = a.firstBlock; b !== undefined && r < runs.length; b = b.next) {
        if (b.live || b.size < size) continue;
        const end = b.end;
        while (r < runs.length && runs[r + 1] * page <= b.offset) r += 2;
        for (let k = r; k < runs.length && runs[k] * page < end; k += 2) {
          const lo = Math.max(b.offset, runs[k] * page);
          const hi = Math.min(end, runs[k + 1] * page);
          const n = hi - lo;
          if (n >= size && n < bestSize) {
            bestSize = n;
            // In the large arena, at the extent's high end: large blocks are carved off low ends, so that part stays whole.
            best = { arena: a, block: b, offset: a === own ? lo : hi - size };
          }
        }
      }
    }
    return best;
  }

  /** The arena's mapped pages as [first, end) page pairs in order (a run may span several chunks). */
  #mappedRuns(a: Arena): number[] {
    const starts: number[] = [];
    for (const c of this.#store.all) if (c.arena === a) starts.push(c.firstPage);
    starts.sort((x, y) => x - y);
    const runs: number[] = [];
    for (const p of starts) {
      const end = p + a.pages[p]!.pages;
      if (runs.length > 0 && runs[runs.length - 1] === p) runs[runs.length - 1] = end;
      else runs.push(p, end);
    }
    return runs;
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
   * nothing (a Transaction): a failure unmaps what this call mapped,
   * releases what it created, pools the rest, and throws. Idle chunks it
   * moved stay pooled, and what trimming released stays released: cached
   * memory, no longer held for nothing.
   */
  #mapFor(arena: Arena, offset: number, end: number, requested: number): void {
    const store = this.#store;
    const budget = this.#budget(requested);
    const p0 = arena.firstPage(offset);
    const p1 = arena.endPage(end);
    const pageSize = this.#pageSize;
    const mapped: Chunk[] = [];
    const events: SegmentEvent[] = [];
    transaction(this.#runtime, (tx) => {
      const runs: number[] = [];
      // Chunks already mapped under the block are counted first, so that no reclaim below can take them.
      for (let p = p0; p < p1; ) {
        const c = arena.pages[p];
        if (c !== undefined) {
          if (c.live++ === 0) store.unmarkIdle(c);
          tx.undo(() => {
            if (--c.live === 0) store.markIdle(c);
          });
          p = c.firstPage + c.pages;
        } else {
          let q = p + 1;
          while (q < p1 && arena.pages[q] === undefined) q++;
          runs.push(p, q);
          p = q;
        }
      }
      for (let r = 0; r < runs.length; r += 2) {
        const p = runs[r];
        let q = runs[r + 1];
        if (arena.maxChunkPages > 1 && q === p1 && q - p < this.#prefetch) {
          // Map ahead past the block's end, into unmapped free space, while under the prefetch budget (and the limit, point 9).
          let ahead = p + this.#prefetch;
          const extra = (ahead - p) * pageSize;
          if (store.held + extra > Math.min(budget * this.#prefetchFactor, this.#limit)) ahead = q;
          while (q < ahead && q < arena.pages.length && arena.pages[q] === undefined) q++;
        }
        let page = p;
        while (page < q) {
          // One handle for the whole run (up to the arena's largest): 3 driver calls per growth.
          const t = this.#obtain(Math.min(q - page, arena.maxChunkPages), budget);
          tx.undo(() => this.#putBack(t));
          arena.map(t.chunk, page);
          tx.undo(() => arena.unmap(t.chunk));
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
    });
    for (const c of mapped) {
      if (c.firstPage < p1) c.live = 1;
      else store.markIdle(c);
    }
    if (this.#onEvent !== undefined) for (const ev of events) this.#onEvent(ev);
  }

  /** Undo of #obtain for a failed #mapFor: a chunk it created goes back to the driver, any other to the pool. */
  #putBack(t: Taken): void {
    const c = t.chunk;
    if (c.arena !== undefined) return; // could not be unmapped; stays (the runtime reported why)
    if (!t.created) {
      this.#store.putPooled(c);
      return;
    }
    try {
      this.#store.release(c);
    } catch (e) {
      this.#store.putPooled(c);
      throw e;
    }
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
      return { chunk: this.#create(pages), created: true };
    } catch (e) {
      if (!isVmmError(e) || e.kind !== 'out-of-memory') throw e;
      // N6 (h): give back everything cached and try once more.
      this.#trim(0);
      return { chunk: this.#create(pages), created: true };
    }
  }

  /** store.create within the limit (point 9): cached chunks go first; past it, the driver's out-of-memory. */
  #create(pages: number): Chunk {
    const store = this.#store;
    const bytes = pages * this.#pageSize;
    if (store.held + bytes > this.#limit) {
      this.#trim(this.#limit - bytes);
      if (store.held + bytes > this.#limit)
        throw vmmError(
          'out-of-memory',
          `${bytes} more bytes would pass the memory limit (${store.held} of ${this.#limit} held)`,
        );
    }
    return store.create(pages);
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
