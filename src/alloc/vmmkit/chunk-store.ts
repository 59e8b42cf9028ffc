import type { PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import type { Arena } from './arena.js';

/**
 * One physical allocation (one driver handle) of whole pages, any number of
 * them. It is in one of three states: mapped in an arena and overlapped by
 * live blocks (`live` > 0); mapped but overlapped by none (idle: its memory
 * could be unmapped and used elsewhere); or unmapped, waiting in the pool.
 */
export class Chunk {
  /** The arena it is mapped in, undefined while pooled. */
  arena: Arena | undefined;
  /** Its first page in that arena. */
  firstPage = -1;
  /** The chunk mapped on the page right after its last, if any: a block's chunks are walked without a lookup each. */
  after: Chunk | undefined;
  /** Live blocks overlapping its pages. */
  live = 0;
  /** The store's clock when it last became idle. */
  idleSince = 0;
  /** Neighbours in the idle list (oldest first); `idle` says whether it is in the list. */
  idle = false;
  olderIdle: Chunk | undefined;
  newerIdle: Chunk | undefined;
  constructor(
    readonly allocation: PhysicalAllocation,
    readonly pages: number,
  ) {}

  get bytes(): number {
    return this.allocation.size;
  }
}

/**
 * The physical memory an allocator holds, by state: what it created and has
 * not released (held), mapped chunks no live block overlaps (idle, one list
 * oldest first), and unmapped chunks (the pool). Idle and pooled chunks are
 * looked for only when the allocator must grow past its budget, so a scan
 * of these lists is off the cache-hit path.
 */
export class ChunkStore {
  /** Bytes created and not released: the allocator's reserved bytes. */
  held = 0;
  peakHeld = 0;
  /** Every chunk created and not released. */
  readonly all = new Set<Chunk>();
  /** Bytes of idle chunks and of pooled chunks (the part of `held` no live block uses). */
  idleBytes = 0;
  poolBytes = 0;
  /** Advanced by the allocator once per malloc: idle ages are counted in mallocs. */
  clock = 0;
  /** Creates and releases done, for reports. */
  creates = 0;
  releases = 0;
  /**
   * Steps over the arenas' page books: chunk and run lookups, and runs
   * walked (Note [Page books by range] in arena.ts). Bounded by handles and
   * blocks touched, never by pages; the tests read it.
   */
  bookSteps = 0;
  readonly #pool: Chunk[] = [];
  #oldest: Chunk | undefined;
  #newest: Chunk | undefined;
  readonly #props;

  constructor(
    readonly runtime: Runtime,
    readonly device: number,
    readonly pageSize: number,
  ) {
    this.#props = { location: { type: 'device' as const, id: device }, handleTypes: 0, uncached: false };
  }

  /** Create a chunk of `pages` pages; throws the runtime's VmmError (out-of-memory) unchanged. */
  create(pages: number): Chunk {
    const a = this.runtime.create(pages * this.pageSize, this.#props);
    this.held += a.size;
    if (this.held > this.peakHeld) this.peakHeld = this.held;
    this.creates++;
    const c = new Chunk(a, pages);
    this.all.add(c);
    return c;
  }

  /** Give an unmapped chunk's memory back to the driver. */
  release(c: Chunk): void {
    this.runtime.release(c.allocation);
    this.all.delete(c);
    this.held -= c.bytes;
    this.releases++;
  }

  /** The largest pooled chunk of at most `maxPages` pages, removed from the pool; undefined if none. */
  takePooled(maxPages: number): Chunk | undefined {
    let best = -1;
    const pool = this.#pool;
    for (let i = 0; i < pool.length; i++)
      if (pool[i].pages <= maxPages && (best < 0 || pool[i].pages > pool[best].pages)) best = i;
    if (best < 0) return undefined;
    const c = pool[best];
    pool[best] = pool[pool.length - 1];
    pool.pop();
    this.poolBytes -= c.bytes;
    return c;
  }

  putPooled(c: Chunk): void {
    this.#pool.push(c);
    this.poolBytes += c.bytes;
  }

  /** The largest pooled chunk, for trimming; undefined if the pool is empty. */
  takeAnyPooled(): Chunk | undefined {
    return this.takePooled(Number.POSITIVE_INFINITY);
  }

  markIdle(c: Chunk): void {
    c.idleSince = this.clock;
    c.idle = true;
    const last = this.#newest;
    c.olderIdle = last;
    c.newerIdle = undefined;
    if (last !== undefined) last.newerIdle = c;
    else this.#oldest = c;
    this.#newest = c;
    this.idleBytes += c.bytes;
  }

  unmarkIdle(c: Chunk): void {
    if (!c.idle) return;
    c.idle = false;
    if (c.olderIdle !== undefined) c.olderIdle.newerIdle = c.newerIdle;
    else this.#oldest = c.newerIdle;
    if (c.newerIdle !== undefined) c.newerIdle.olderIdle = c.olderIdle;
    else this.#newest = c.olderIdle;
    c.olderIdle = undefined;
    c.newerIdle = undefined;
    this.idleBytes -= c.bytes;
  }

  /** Count a new live block over every chunk under [offset, end) of `arena` (all mapped). */
  activate(arena: Arena, offset: number, end: number): void {
    const last = arena.endPage(end);
    for (let c = arena.chunkAt(arena.firstPage(offset))!; ; c = c.after!) {
      if (c.live++ === 0) this.unmarkIdle(c);
      if (c.firstPage + c.pages >= last) return;
      this.bookSteps++;
    }
  }

  /** Count a live block gone from every chunk under [offset, end) of `arena`. */
  deactivate(arena: Arena, offset: number, end: number): void {
    const last = arena.endPage(end);
    for (let c = arena.chunkAt(arena.firstPage(offset))!; ; c = c.after!) {
      if (--c.live === 0) this.markIdle(c);
      if (c.firstPage + c.pages >= last) return;
      this.bookSteps++;
    }
  }

  /**
   * The largest chunk of at most `maxPages` pages idle for `minAge` mallocs
   * or more (the oldest among equals), still marked idle; undefined if none.
   */
  largestIdle(maxPages: number, minAge = 0): Chunk | undefined {
    let best: Chunk | undefined;
    for (let c = this.#oldest; c !== undefined && this.clock - c.idleSince >= minAge; c = c.newerIdle)
      if (c.pages <= maxPages && (best === undefined || c.pages > best.pages)) best = c;
    return best;
  }

  /** Every idle chunk (still marked idle), oldest first. */
  idleChunks(): Chunk[] {
    const out: Chunk[] = [];
    for (let c = this.#oldest; c !== undefined; c = c.newerIdle) out.push(c);
    return out;
  }
}
