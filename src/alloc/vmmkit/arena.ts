import type { Reservation } from '../../core/objects.js';
import type { AccessDescriptor, Runtime } from '../../core/runtime.js';
import { Block, FreeIndex } from './block.js';
import type { Chunk } from './chunk-store.js';

/** The size classes of blocks, as an arena's `kind` (VmmkitOptions' smallSize and mediumSize divide them). */
export const SMALL = 0;
export const MEDIUM = 1;
export const LARGE = 2;

/**
 * One stream's address range for one size class of blocks (small, medium or large):
 * a reservation tiled by blocks, with physical chunks mapped behind the
 * pages that need them. Which chunk backs each page is one array lookup
 * (`pages`), so finding the chunks under a block costs one step per chunk.
 */
export class Arena {
  readonly base: number;
  readonly size: number;
  readonly pages: (Chunk | undefined)[];
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
  ) {
    this.base = reservation.base;
    this.size = reservation.size;
    this.pages = new Array(Math.floor(this.size / pageSize)).fill(undefined);
    const all = new Block(this, 0, this.size);
    this.firstBlock = all;
    this.free.add(all);
  }

  /** Map `c` at page `page` (no access yet: the caller grants a whole run at once). */
  map(c: Chunk, page: number): void {
    this.runtime.map(this.base + page * this.pageSize, c.bytes, c.allocation, 0);
    for (let p = page; p < page + c.pages; p++) this.pages[p] = c;
    c.arena = this;
    c.firstPage = page;
    this.mappedChunks++;
  }

  unmap(c: Chunk): void {
    this.runtime.unmap(this.base + c.firstPage * this.pageSize, c.bytes);
    for (let p = c.firstPage; p < c.firstPage + c.pages; p++) this.pages[p] = undefined;
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

  /** Whether every page [offset, end) touches is mapped (the cache-hit test: one step per chunk). */
  mappedAll(offset: number, end: number): boolean {
    const pages = this.pages;
    const last = this.endPage(end);
    for (let p = this.firstPage(offset); p < last; ) {
      const c = pages[p];
      if (c === undefined) return false;
      p = c.firstPage + c.pages;
    }
    return true;
  }

  /** Whether every page [offset, end) touches is mapped and already under a live block. */
  pinnedAll(offset: number, end: number): boolean {
    const pages = this.pages;
    const last = this.endPage(end);
    for (let p = this.firstPage(offset); p < last; ) {
      const c = pages[p];
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
