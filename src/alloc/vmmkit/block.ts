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

/** The free blocks of one size. */
class Bucket {
  readonly blocks: Block[] = [];
  constructor(readonly size: number) {}
}

/**
 * Free blocks by size, for best fit: the smallest free block at least as
 * large as a request, found with one ordered lookup (no scan). Blocks of one
 * size share a bucket; the most recently freed one is taken first (its pages
 * are the likeliest to be mapped still).
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
    b.slot = bucket.blocks.length;
    bucket.blocks.push(b);
    this.#count++;
  }

  remove(b: Block): void {
    const bucket = this.#bySize.get(b.size)!;
    const blocks = bucket.blocks;
    const last = blocks.pop()!;
    if (last !== b) {
      blocks[b.slot] = last;
      last.slot = b.slot;
    }
    b.slot = -1;
    if (blocks.length === 0) this.#bySize.delete(bucket.size);
    this.#count--;
  }

  /** The best fit for `size` bytes (not removed), or undefined. */
  bestFit(size: number): Block | undefined {
    const bucket = this.#bySize.ceiling(size);
    return bucket === undefined ? undefined : bucket.blocks[bucket.blocks.length - 1];
  }
}
