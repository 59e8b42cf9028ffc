import { isVmmError, vmmError } from '../../core/errors.js';
import type { AccessDescriptor, Runtime } from '../../core/runtime.js';
import { Access } from '../../core/types.js';
import type { AllocatorStats, SegmentEvent } from '../allocator.js';
import { transaction } from '../transactions.js';
import type { Arena } from './arena.js';
import type { Chunk, ChunkStore } from './chunk-store.js';
import type { VmmkitSettings } from './options.js';

/** Where a chunk used by a malloc in progress came from, for undo. */
interface Taken {
  readonly chunk: Chunk;
  readonly created: boolean;
}

/**
 * How an arena's unmapped pages get memory (points 3, 4, 7, 8 and 9 of Note
 * [vmmkit allocator] in allocator.ts): one chunk per run of pages, a pooled
 * one, else one created while under the budget, else an idle one moved,
 * else one created after trimming, always within the memory limit; a
 * driver out-of-memory releases what is cached and tries once more. The
 * budget follows the peak requested so far (the allocator's stats);
 * unmapping idle memory waits for the device once per epoch (a malloc or an
 * emptyCache).
 */
export class Growth {
  readonly #access: readonly AccessDescriptor[];
  /** Advanced per malloc and emptyCache; the device was synchronised in epoch #synced (point 7). */
  #epoch = 0;
  #synced = -1;
  #peakCapDemand = 0;

  constructor(
    readonly runtime: Runtime,
    readonly device: number,
    readonly store: ChunkStore,
    readonly settings: VmmkitSettings,
    /** The allocator's stats, read for the peak requested. */
    readonly stats: AllocatorStats,
    readonly onEvent: ((e: SegmentEvent) => void) | undefined,
  ) {
    this.#access = [{ device, access: Access.ReadWrite }];
  }

  /** The most held bytes any check asked the limit for (CachingAllocator.peakCapDemandBytes; point 9's two checks). */
  get peakCapDemandBytes(): number {
    return this.#peakCapDemand;
  }

  /** `bytes` held are asked of the limit: kept as the most asked, then whether the limit allows them. */
  #withinLimit(bytes: number): boolean {
    if (bytes > this.#peakCapDemand) this.#peakCapDemand = bytes;
    return bytes <= this.settings.limit;
  }

  /** A new malloc or emptyCache: the next unmap of idle memory waits for the device again (point 7). */
  advanceEpoch(): void {
    this.#epoch++;
  }

  /** Whether mapping [offset, end) would create memory past the budget (no pooled chunk covers its unmapped pages). */
  wouldGrow(arena: Arena, offset: number, end: number, requested: number): boolean {
    const need = arena.unmappedPages(arena.firstPage(offset), arena.endPage(end));
    const bytes = need * this.settings.pageSize;
    return this.store.poolBytes < bytes && this.store.held + bytes > this.budget(requested);
  }

  budget(extraRequested: number): number {
    const peak = Math.max(this.stats.peakRequestedBytes, this.stats.requestedBytes + extraRequested);
    return Math.max(this.settings.minBudget, Math.ceil(peak * (1 + this.settings.slack)));
  }

  /**
   * Map every unmapped page under [offset, end) (Note [vmmkit allocator],
   * points 2 and 4), then count the block over every chunk there. All or
   * nothing (a Transaction): a failure unmaps what this call mapped,
   * releases what it created, pools the rest, and throws. Idle chunks it
   * moved stay pooled, and what trimming released stays released: cached
   * memory, no longer held for nothing.
   */
  mapFor(arena: Arena, offset: number, end: number, requested: number): void {
    const store = this.store;
    const budget = this.budget(requested);
    const p0 = arena.firstPage(offset);
    const p1 = arena.endPage(end);
    const pageSize = this.settings.pageSize;
    const mapped: Chunk[] = [];
    const events: SegmentEvent[] = [];
    transaction(this.runtime, (tx) => {
      const runs: number[] = [];
      // Chunks already mapped under the block are counted first, so that no reclaim below can take them.
      for (let p = p0; p < p1; ) {
        const c = arena.chunkAt(p);
        if (c !== undefined) {
          if (c.live++ === 0) store.unmarkIdle(c);
          tx.undo(() => {
            if (--c.live === 0) store.markIdle(c);
          });
          p = c.firstPage + c.pages;
        } else {
          const q = Math.min(p1, arena.nextChunkStart(p + 1));
          runs.push(p, q);
          p = q;
        }
      }
      for (let r = 0; r < runs.length; r += 2) {
        const p = runs[r];
        let q = runs[r + 1];
        if (arena.maxChunkPages > 1 && q === p1 && q - p < this.settings.prefetchPages) {
          // Map ahead past the block's end, into unmapped free space, while under the prefetch budget (and the limit, point 9).
          let ahead = p + this.settings.prefetchPages;
          const extra = (ahead - p) * pageSize;
          const held = store.held + extra;
          if (held > budget * this.settings.prefetchFactor || !this.#withinLimit(held)) ahead = q;
          // Up to the next mapped chunk: none covers page q without starting there, since the run before q is unmapped.
          if (q < ahead) q = Math.max(q, Math.min(ahead, arena.pageCount, arena.nextChunkStart(q)));
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
    if (this.onEvent !== undefined) for (const ev of events) this.onEvent(ev);
  }

  /** Undo of #obtain for a failed #mapFor: a chunk it created goes back to the driver, any other to the pool. */
  #putBack(t: Taken): void {
    const c = t.chunk;
    if (c.arena !== undefined) return; // could not be unmapped; stays (the runtime reported why)
    if (!t.created) {
      this.store.putPooled(c);
      return;
    }
    try {
      this.store.release(c);
    } catch (e) {
      this.store.putPooled(c);
      throw e;
    }
  }

  /**
   * An unmapped chunk of at most `pages` pages for a run that needs that
   * many (point 4): pooled, else created while under the budget, else an
   * idle chunk moved, else created after trimming.
   */
  #obtain(pages: number, budget: number): Taken {
    const store = this.store;
    const pooled = store.takePooled(pages);
    if (pooled !== undefined) return { chunk: pooled, created: false };
    const bytes = pages * this.settings.pageSize;
    if (store.held + bytes > budget) {
      // Past the hard budget even the working set (recently idle chunks) is moved.
      const hard = store.held + bytes > budget * this.settings.hardFactor;
      const minAge = hard ? 0 : this.settings.minIdleAge;
      const idle = store.largestIdle(pages, minAge);
      if (idle !== undefined) {
        this.#unmapIdle(idle);
        return { chunk: idle, created: false };
      }
      this.trim(budget - bytes, minAge);
    }
    try {
      return { chunk: this.#create(pages), created: true };
    } catch (e) {
      if (!isVmmError(e) || e.kind !== 'out-of-memory') throw e;
      // N6 (h): give back everything cached and try once more.
      this.trim(0);
      return { chunk: this.#create(pages), created: true };
    }
  }

  /** store.create within the limit (point 9): cached chunks go first; past it, the driver's out-of-memory. */
  #create(pages: number): Chunk {
    const store = this.store;
    const bytes = pages * this.settings.pageSize;
    if (!this.#withinLimit(store.held + bytes)) {
      this.trim(this.settings.limit - bytes);
      if (store.held + bytes > this.settings.limit)
        throw vmmError(
          'out-of-memory',
          `${bytes} more bytes would pass the memory limit (${store.held} of ${this.settings.limit} held)`,
        );
    }
    return store.create(pages);
  }

  /** Unmap an idle chunk (it stays held, unmapped); on failure it stays idle and mapped. */
  #unmapIdle(c: Chunk): void {
    if (this.#synced !== this.#epoch) {
      this.runtime.synchronize(this.device);
      this.#synced = this.#epoch;
    }
    const arena = c.arena!;
    const address = arena.base + c.firstPage * this.settings.pageSize;
    this.store.unmarkIdle(c);
    try {
      arena.unmap(c);
    } catch (e) {
      this.store.markIdle(c);
      throw e;
    }
    this.onEvent?.({ action: 'segment_unmap', address, size: c.bytes, stream: arena.stream });
  }

  /** Release pooled, then idle chunks (largest first) until held <= `limit` or none is left. */
  trim(limit: number, minAge = 0): void {
    const store = this.store;
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
}
