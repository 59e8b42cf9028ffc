import type { Reservation } from '../../core/objects.js';
import type { AccessDescriptor, Runtime } from '../../core/runtime.js';
import { OrderedMap } from '../../util/ordered-map.js';
import { Block, FreeIndex } from './block.js';
import type { Chunk } from './chunk-store.js';

/** The size classes of blocks, as an arena's `kind` (VmmkitOptions' smallSize and mediumSize divide them). */
export const SMALL = 0;
export const MEDIUM = 1;
export const LARGE = 2;

/** Pages [start, end) of an arena mapped without a gap (one or more adjacent chunks). */
export interface PageRun {
  readonly start: number;
  readonly end: number;
}

/**
 * One stream's address range for one size class of blocks (small, medium or large):
 * a reservation tiled by blocks, with physical chunks mapped behind the
 * pages that need them. Note [Page books by range]: the arena keeps its
 * mapped chunks and its mapped runs as ranges of pages in ordered maps, never
 * an entry per page. An arena spans the device's memory, which is 48 million
 * pages on a 4 KiB-granularity MI300X, so anything per page (an array of
 * pages, a loop over a block's pages) costs seconds and gigabytes there that
 * the H200's 2 MiB pages hide. Finding the chunks under a block costs one
 * lookup, then a step per chunk along `Chunk.after` (the chunk mapped on the
 * next page), and whether a block is wholly mapped one lookup; the
 * store's `bookSteps` counts these steps (test/alloc/vmmkit/page-books.test.ts).
 */
export class Arena {
  readonly base: number;
  readonly size: number;
  /** Pages in the arena's range. */
  readonly pageCount: number;
  /** Mapped chunks by first page, each the range [firstPage, firstPage + pages). */
  readonly #chunks = new OrderedMap<Chunk>();
  /** Mapped runs by first page: adjacent chunks merged. */
  readonly #runs = new OrderedMap<PageRun>();
  readonly free = new FreeIndex();
  /** Live blocks in the arena. */
  liveBlocks = 0;
  /** The block at offset 0 (blocks tile the arena; the first never merges away). */
  readonly firstBlock: Block;
  /** Chunks mapped in the arena. */
  mappedChunks = 0;

  constructor(
    readonly runtime: Runtime,
    readonly reservation: Reservation,
    readonly pageSize: number,
    readonly stream: number,
    /** Size class of its blocks: SMALL, MEDIUM or LARGE (see VmmkitOptions). */
    readonly kind: number,
    /** The most pages one of its chunks has. */
    readonly maxChunkPages: number,
    /** Counts the steps over the page books (ChunkStore.bookSteps). */
    readonly books: { bookSteps: number },
  ) {
    this.base = reservation.base;
    this.size = reservation.size;
    this.pageCount = Math.floor(this.size / pageSize);
    const all = new Block(this, 0, this.size);
    this.firstBlock = all;
    this.free.add(all);
  }

  /** Map `c` at page `page` (no access yet: the caller grants a whole run at once). */
  map(c: Chunk, page: number): void {
    this.runtime.map(this.base + page * this.pageSize, c.bytes, c.allocation, 0);
    const end = page + c.pages;
    this.#chunks.set(page, c, end);
    // Link it with the chunks mapped right before and after it.
    const prev = page > 0 ? this.#chunks.containing(page - 1) : undefined;
    if (prev !== undefined) prev.after = c;
    c.after = this.#chunks.get(end);
    // Join the runs that end where it starts and start where it ends.
    const before = page > 0 ? this.#runs.containing(page - 1) : undefined;
    const after = this.#runs.get(end);
    this.books.bookSteps += 5;
    if (after !== undefined) this.#runs.delete(end);
    const run = { start: before?.start ?? page, end: after?.end ?? end };
    this.#runs.set(run.start, run, run.end);
    c.arena = this;
    c.firstPage = page;
    this.mappedChunks++;
  }

  unmap(c: Chunk): void {
    this.runtime.unmap(this.base + c.firstPage * this.pageSize, c.bytes);
    const page = c.firstPage;
    const end = page + c.pages;
    this.#chunks.delete(page);
    const prev = page > 0 ? this.#chunks.containing(page - 1) : undefined;
    if (prev !== undefined) prev.after = undefined;
    c.after = undefined;
    // Split its run into what lies before it and what lies after it.
    const run = this.#runs.containing(page)!;
    this.books.bookSteps += 3;
    if (run.start < page) this.#runs.set(run.start, { start: run.start, end: page }, page);
    else this.#runs.delete(run.start);
    if (end < run.end) this.#runs.set(end, { start: end, end: run.end }, run.end);
    c.arena = undefined;
    c.firstPage = -1;
    this.mappedChunks--;
  }

  grant(firstPage: number, endPage: number, access: readonly AccessDescriptor[]): void {
    this.runtime.setAccess(
      this.base + firstPage * this.pageSize,
      (endPage - firstPage) * this.pageSize,
      access,
    );
  }

  /** The chunk mapped over page `page`, or undefined (one lookup). */
  chunkAt(page: number): Chunk | undefined {
    this.books.bookSteps++;
    return this.#chunks.containing(page);
  }

  /** The first page at or after `page` where a chunk starts (pageCount if none). */
  nextChunkStart(page: number): number {
    this.books.bookSteps++;
    return this.#chunks.ceiling(page)?.firstPage ?? this.pageCount;
  }

  /** Mapped chunks in page order. */
  chunks(): IterableIterator<Chunk> {
    return this.#chunks.values();
  }

  /** The mapped run over page `page`, or undefined. */
  runAt(page: number): PageRun | undefined {
    this.books.bookSteps++;
    return this.#runs.containing(page);
  }

  /** The first mapped run starting at or after `page`, or undefined. */
  runFrom(page: number): PageRun | undefined {
    this.books.bookSteps++;
    return this.#runs.ceiling(page);
  }

  /** The arena's mapped pages as [first, end) page pairs in order (a run may span several chunks). */
  mappedRuns(): number[] {
    const out: number[] = [];
    for (const r of this.#runs.values()) out.push(r.start, r.end);
    this.books.bookSteps += out.length / 2;
    return out;
  }

  /** How many pages of [p0, p1) no chunk backs (one step per run). */
  unmappedPages(p0: number, p1: number): number {
    let n = 0;
    for (let p = p0; p < p1; ) {
      const r = this.runAt(p);
      if (r !== undefined) {
        p = r.end;
        continue;
      }
      const q = Math.min(p1, this.runFrom(p)?.start ?? p1);
      n += q - p;
      p = q;
    }
    return n;
  }

  /** Whether every page [offset, end) touches is mapped (the cache-hit test: one lookup). */
  mappedAll(offset: number, end: number): boolean {
    const p0 = this.firstPage(offset);
    const p1 = this.endPage(end);
    if (p0 >= p1) return true;
    const r = this.runAt(p0);
    return r !== undefined && r.end >= p1;
  }

  /** Whether every page [offset, end) touches is mapped and already under a live block. */
  pinnedAll(offset: number, end: number): boolean {
    const last = this.endPage(end);
    for (let p = this.firstPage(offset); p < last; ) {
      const c = this.chunkAt(p);
      if (c === undefined || c.live === 0) return false;
      p = c.firstPage + c.pages;
    }
    return true;
  }

  /** Page index of the first and one past the last page that [offset, end) touches. */
  firstPage(offset: number): number {
    return Math.floor(offset / this.pageSize);
  }

  endPage(end: number): number {
    return Math.ceil(end / this.pageSize);
  }

  /**
   * Carve `size` bytes off the low end of free block `b` (PyTorch keeps the
   * low address, N8); the rest, if any, stays free. Returns the live block.
   */
  take(b: Block, size: number): Block {
    this.free.remove(b);
    if (b.size > size) {
      const rest = new Block(this, b.offset + size, b.size - size);
      rest.prev = b;
      rest.next = b.next;
      if (b.next !== undefined) b.next.prev = rest;
      b.next = rest;
      b.size = size;
      this.free.add(rest);
    }
    b.live = true;
    this.liveBlocks++;
    return b;
  }

  /**
   * Carve `size` bytes at `offset` out of free block `b` (offset inside it):
   * the free space before it stays free as its own block (see take).
   */
  takeAt(b: Block, offset: number, size: number): Block {
    if (offset === b.offset) return this.take(b, size);
    this.free.remove(b);
    const rest = new Block(this, offset, b.end - offset);
    rest.prev = b;
    rest.next = b.next;
    if (b.next !== undefined) b.next.prev = rest;
    b.next = rest;
    b.size = offset - b.offset;
    this.free.add(b);
    this.free.add(rest);
    return this.take(rest, size);
  }

  /** Return a live block, merged with free neighbours. */
  give(b: Block): void {
    b.live = false;
    b.requested = 0;
    this.liveBlocks--;
    const p = b.prev;
    if (p !== undefined && !p.live) {
      this.free.remove(p);
      p.size += b.size;
      p.next = b.next;
      if (b.next !== undefined) b.next.prev = p;
      b = p;
    }
    const n = b.next;
    if (n !== undefined && !n.live) {
      this.free.remove(n);
      b.size += n.size;
      b.next = n.next;
      if (n.next !== undefined) n.next.prev = b;
    }
    this.free.add(b);
  }
}
