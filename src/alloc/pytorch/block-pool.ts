import { AllocatorInternalError } from '../errors.js';
import type { Block } from './block.js';
import { PairSet } from './pair-set.js';
import type { PrivatePool } from './private-pool.js';

/**
 * One of PyTorch's `BlockPool`s (small or large, N3): the free blocks,
 * ordered by (stream, size, address) as BlockComparatorSize orders them,
 * and the unmapped ranges of expandable segments, ordered by (stream,
 * address) as BlockComparatorAddress does.
 *
 * Note [Pools per stream]: best fit never crosses streams (N5), so each
 * stream has its own set keyed by (size, address); a search is then a
 * lookup of the stream and one ceiling. Walks over the whole pool (release,
 * garbage collection) visit streams in ascending order, which is the order
 * of the single std::set PyTorch keeps.
 */
export class BlockPool {
  /** Free mapped blocks per stream, by (size, address). */
  readonly #blocks = new Map<number, PairSet<Block>>();
  /** Unmapped ranges of expandable segments per stream, by address. */
  readonly #unmapped = new Map<number, PairSet<Block>>();
  /**
   * The set of the stream last asked for (most traces use one or two
   * streams): a pool operation is a few steps, and a Map lookup of the
   * stream was one of them. Undefined until a set is made.
   */
  #lastStream = -1;
  #lastSet: PairSet<Block> | undefined;
  /** Calls of get_free_block on this pool while garbage collection is on (N10). */
  getFreeBlocksCallCount = 0;
  #size = 0;

  constructor(
    readonly isSmall: boolean,
    /** The private pool this pool belongs to (owner_PrivatePool); undefined for the default pools. */
    readonly owner: PrivatePool | undefined = undefined,
  ) {}

  /** Free mapped blocks in the pool. */
  get size(): number {
    return this.#size;
  }

  /** PyTorch's insert_into_blocks: the block's age starts now. */
  insert(b: Block): void {
    b.gcCountBase = this.getFreeBlocksCallCount;
    let set = this.#setOf(b.stream);
    if (set === undefined) {
      set = new PairSet<Block>();
      this.#blocks.set(b.stream, set);
      this.#lastStream = b.stream;
      this.#lastSet = set;
    }
    set.insert(b.size, b.ptr, b);
    this.#size++;
  }

  /** The free blocks of `stream`, if it has had any. */
  #setOf(stream: number): PairSet<Block> | undefined {
    if (stream === this.#lastStream) return this.#lastSet;
    const set = this.#blocks.get(stream);
    if (set !== undefined) {
      this.#lastStream = stream;
      this.#lastSet = set;
    }
    return set;
  }

  /** Remove a free block; its size and address must be as they were at insert. */
  erase(b: Block): void {
    if (this.#setOf(b.stream)?.delete(b.size, b.ptr) !== true)
      throw new AllocatorInternalError(`block 0x${b.ptr.toString(16)} (${b.size} bytes) is not in the pool`);
    this.#size--;
  }

  /** The smallest free block of `stream` with size >= `size` (lower_bound of (stream, size, 0)). */
  ceiling(stream: number, size: number): Block | undefined {
    return this.#setOf(stream)?.ceiling(size, 0);
  }

  /** The free block after `b` in (size, address) order, in b's stream. */
  after(b: Block): Block | undefined {
    return this.#setOf(b.stream)?.higher(b.size, b.ptr);
  }

  /** The largest free block of `stream` ordered below (size, 0). */
  below(stream: number, size: number): Block | undefined {
    return this.#setOf(stream)?.lower(size, 0);
  }

  /** The free block before `b` in (size, address) order, in b's stream. */
  before(b: Block): Block | undefined {
    return this.#setOf(b.stream)?.lower(b.size, b.ptr);
  }

  /** Every free mapped block in (stream, size, address) order, as a new array. */
  blocksInOrder(): Block[] {
    const out: Block[] = [];
    for (const stream of sortedKeys(this.#blocks)) out.push(...this.#blocks.get(stream)!.toArray());
    return out;
  }

  insertUnmapped(b: Block): void {
    let set = this.#unmapped.get(b.stream);
    if (set === undefined) this.#unmapped.set(b.stream, (set = new PairSet<Block>()));
    set.insert(b.ptr, 0, b);
  }

  eraseUnmapped(b: Block): void {
    if (this.#unmapped.get(b.stream)?.delete(b.ptr, 0) !== true)
      throw new AllocatorInternalError(`unmapped block 0x${b.ptr.toString(16)} is not in the pool`);
  }

  /** The unmapped blocks of `stream` in address order, as a new array. */
  unmappedOf(stream: number): Block[] {
    return this.#unmapped.get(stream)?.toArray() ?? [];
  }

  /** Every unmapped block, streams ascending, as a new array. */
  allUnmapped(): Block[] {
    const out: Block[] = [];
    for (const stream of sortedKeys(this.#unmapped)) out.push(...this.#unmapped.get(stream)!.toArray());
    return out;
  }

  clear(): void {
    this.#blocks.clear();
    this.#lastStream = -1;
    this.#lastSet = undefined;
    this.#unmapped.clear();
    this.#size = 0;
    this.getFreeBlocksCallCount = 0;
  }
}

/** Merge free `src` into `dst` if it is a free neighbour in the same state (try_merge_blocks). */
export function tryMerge(dst: Block, src: Block | undefined, pool: BlockPool): void {
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

function sortedKeys(m: Map<number, unknown>): number[] {
  return [...m.keys()].sort((a, b) => a - b);
}
