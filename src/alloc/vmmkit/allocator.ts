// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import { isVmmError, vmmError } from '../../core/errors.js';
import type { Reservation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { isCount } from '../../util/integers.js';
import {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type AllocatorStats,
  type CachingAllocator,
  type FreeMemory,
} from '../allocator.js';
import { transaction } from '../transactions.js';
import { Arena, LARGE, MEDIUM, SMALL } from './arena.js';
import type { Block } from './block.js';
import { ChunkStore } from './chunk-store.js';
import { Growth } from './growth.js';
import { describeLayout, type MemoryLayout } from './layout.js';
import { mappedFit } from './mapped-fit.js';
import { resolveOptions, type VmmkitOptions, type VmmkitSettings } from './options.js';

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
const MIN_BLOCK = 512;

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

/**
 * vmmkit's caching allocator (Note [vmmkit allocator]). Placement, the
 * arenas and the stats are here; growth.ts gives unmapped pages their memory
 * under the budget and the limit, mapped-fit.ts finds free space on mapped
 * pages (point 5), options.ts fills in and checks the options, and
 * layout.ts describes what is held.
 */
export class VmmkitAllocator implements CachingAllocator {
  readonly name = 'vmmkit';
  readonly device: number;
  readonly #runtime: Runtime;
  readonly #store: ChunkStore;
  readonly #settings: VmmkitSettings;
  /** Where unmapped pages get their memory (points 3, 4, 7, 8 and 9). */
  readonly #growth: Growth;
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

  constructor(context: AllocatorContext, options: VmmkitOptions = {}) {
    const rt = context.runtime;
    const info = rt.device(context.device);
    this.device = context.device;
    this.#runtime = rt;
    const s = resolveOptions(options, info, rt.vaGranularity, context.memoryLimit);
    this.#settings = s;
    this.#store = new ChunkStore(rt, context.device, s.pageSize);
    this.#growth = new Growth(rt, context.device, this.#store, s, this.#stats, context.onSegmentEvent);
  }

  /** CachingAllocator.peakCapDemandBytes: what point 9's checks asked of the limit (growth.ts). */
  get peakCapDemandBytes(): number {
    return this.#growth.peakCapDemandBytes;
  }

  get stats(): AllocatorStats {
    const s = this.#stats;
    s.reservedBytes = this.#store.held;
    s.peakReservedBytes = this.#store.peakHeld;
    return s;
  }

  /** Driver work so far, for reports: chunks created and released; bookSteps: steps over the page books (Note [Page books by range]). */
  get chunkCounts(): {
    created: number;
    released: number;
    held: number;
    idleBytes: number;
    poolBytes: number;
    bookSteps: number;
  } {
    const st = this.#store;
    return {
      created: st.creates,
      released: st.releases,
      held: st.all.size,
      idleBytes: st.idleBytes,
      poolBytes: st.poolBytes,
      bookSteps: st.bookSteps,
    };
  }

  /** Where the held memory is now (for analysis; walks every block). */
  layout(): MemoryLayout {
    return describeLayout(this.#arenas, this.#store, this.#settings.pageSize);
  }

  // --- malloc ------------------------------------------------------------------------

  malloc(size: number, stream: number): number {
    if (this.#disposed) throw vmmError('not-initialized', 'the allocator was disposed');
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size} is not a size`);
    if (!Number.isSafeInteger(stream)) throw vmmError('invalid-value', `stream ${stream} is not a stream`);
    this.#store.clock++;
    this.#growth.advanceEpoch();
    return this.#serve(size, stream);
  }

  /** malloc's work once its arguments are checked and the clocks advanced. */
  #serve(size: number, stream: number): number {
    const settings = this.#settings;
    const rounded = size <= MIN_BLOCK ? MIN_BLOCK : Math.ceil(size / MIN_BLOCK) * MIN_BLOCK;
    const kind = rounded <= settings.smallSize ? SMALL : rounded <= settings.mediumSize ? MEDIUM : LARGE;
    let arena: Arena | undefined;
    let fit: Block | undefined;
    if (kind !== LARGE && settings.fillSlivers) {
      // Point 6 of the Note: a small block first tries the free tail of a page a large block already pins.
      const large = this.#arenas.get(stream)?.[LARGE];
      const f = large?.free.bestFit(rounded);
      if (
        f !== undefined &&
        f.size < 2 * settings.pageSize &&
        large!.pinnedAll(f.offset, f.offset + rounded)
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
    if (arena.kind === LARGE && settings.alignWholePages) {
      // Point 6 of the Note: a block of whole pages on a page boundary covers no more pages than it must.
      const page = settings.pageSize;
      const aligned = Math.ceil(offset / page) * page;
      if (
        aligned !== offset &&
        aligned + rounded <= fit!.end &&
        Math.floor(rounded / page) * page === rounded
      )
        offset = aligned;
    }
    if (
      settings.mappedFirst !== 'never' &&
      !arena.mappedAll(offset, offset + rounded) &&
      (settings.mappedFirst === 'miss' || this.#growth.wouldGrow(arena, offset, offset + rounded, size))
    ) {
      // Point 5 of the Note: growth is the last resort; free space already mapped comes first.
      const m = mappedFit(arena, this.#nextUp(stream, arena), rounded);
      if (m !== undefined) {
        arena = m.arena;
        fit = m.block;
        offset = m.offset;
      }
    }
    if (!arena.mappedAll(offset, offset + rounded)) {
      try {
        this.#growth.mapFor(arena, offset, offset + rounded, size);
      } catch (e) {
        throw this.#oom(size, e);
      }
    } else this.#store.activate(arena, offset, offset + rounded);
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
      Number.isFinite(this.#settings.limit) ? this.#settings.limit : undefined,
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
    const page = this.#settings.pageSize;
    for (const list of this.#arenas.values()) {
      for (const a of list) {
        if (a === undefined || a.mappedChunks === 0) continue;
        const runs = a.mappedRuns();
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
      const s = this.#settings;
      let r: Reservation;
      try {
        r = this.#runtime.reserve(s.arenaSize, { alignment: s.pageSize });
      } catch (e) {
        throw this.#oom(size, e);
      }
      const maxPages = kind === SMALL ? 1 : kind === MEDIUM ? Math.min(4, s.maxChunkPages) : s.maxChunkPages;
      const a = new Arena(this.#runtime, r, s.pageSize, stream, kind, maxPages, this.#store);
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

  /** A small block's next arena up in its stream (point 5): a medium arena, where there is one, exists to keep smaller blocks off large pages. */
  #nextUp(stream: number, own: Arena): Arena | undefined {
    const s = this.#settings;
    return own.kind === SMALL
      ? this.#arenas.get(stream)?.[s.mediumSize > s.smallSize ? MEDIUM : LARGE]
      : undefined;
  }

  // --- free and emptyCache -----------------------------------------------------------

  free(address: number): void {
    const b = this.#live.get(address);
    if (b === undefined) throw vmmError('invalid-value', `0x${address.toString(16)} is not a live block`);
    const arena = b.arena;
    this.#store.deactivate(arena, b.offset, b.end);
    const s = this.#stats;
    s.allocatedBytes -= b.size;
    s.requestedBytes -= b.requested;
    s.liveBlocks--;
    this.#live.delete(address);
    arena.give(b);
  }

  emptyCache(): void {
    if (this.#disposed) return;
    this.#growth.advanceEpoch();
    let first: unknown;
    try {
      this.#growth.trim(0);
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
