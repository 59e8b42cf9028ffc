import { OrderedMap } from '../../util/ordered-map.js';
import type { Arena } from './arena.js';

/**
 * A piece of an arena's address range, live or free. The blocks of an arena
 * tile its whole range in address order (prev/next), so the free neighbours
 * a freed block merges with are one step away, as in PyTorch's allocator.
 */
export class Block {
  prev: Block | undefined;
  next: Block | undefined;
  /** Whether the block is handed out. */
  live = false;
  /** Bytes the caller asked for (live blocks). */
  requested = 0;
  /** Position in its free-index bucket (free blocks). */
  slot = -1;
  constructor(
    readonly arena: Arena,
    /** Offset of the block from its arena's base. */
    public offset: number,
    public size: number,
  ) {}

  get end(): number {
    return this.offset + this.size;
  }
}

/**
 * The free blocks of one size, as a binary heap by offset: best fit takes
 * the lowest address among equals, as PyTorch's (stream, size, address)
 * order does, which keeps live blocks packed toward the start of an arena.
 */
class Bucket {
  readonly heap: Block[] = [];
  constructor(readonly size: number) {}

  push(b: Block): void {
    const h = this.heap;
    b.slot = h.length;
    h.push(b);
    this.#up(b.slot);
  }

  remove(b: Block): void {
    const h = this.heap;
    const i = b.slot;
    const last = h.pop()!;
    b.slot = -1;
    if (last === b) return;
    h[i] = last;
    last.slot = i;
    this.#up(i);
    this.#down(last.slot);
  }

  #up(i: number): void {
    const h = this.heap;
    const x = h[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = h[parent];
      if (p.offset <= x.offset) break;
      h[i] = p;
      p.slot = i;
      i = parent;
    }
    h[i] = x;
    x.slot = i;
  }

  #down(i: number): void {
    const h = this.heap;
    const n = h.length;
    const x = h[i];
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && h[c + 1].offset < h[c].offset) c++;
      if (h[c].offset >= x.offset) break;
      h[i] = h[c];
      h[i].slot = i;
      i = c;
    }
    h[i] = x;
    x.slot = i;
  }
}

/**
 * Free blocks by size, for best fit: the smallest free block at least as
 * large as a request, found with one ordered lookup (no scan), the lowest
 * address among blocks of that size.
 */
export class FreeIndex {
  readonly #bySize = new OrderedMap<Bucket>();
  #count = 0;

  get size(): number {
    return this.#count;
  }

  add(b: Block): void {
    let bucket = this.#bySize.get(b.size);
    if (bucket === undefined) {
      bucket = new Bucket(b.size);
      this.#bySize.set(b.size, bucket);
    }
    bucket.push(b);
    this.#count++;
  }

  remove(b: Block): void {
    const bucket = this.#bySize.get(b.size)!;
    bucket.remove(b);
    if (bucket.heap.length === 0) this.#bySize.delete(bucket.size);
    this.#count--;
  }

  /** The best fit for `size` bytes (not removed), or undefined. */
  bestFit(size: number): Block | undefined {
    return this.#bySize.ceiling(size)?.heap[0];
  }
}
