import type { BlockPool } from './block-pool.js';
import type { ExpandableSegment } from './expandable-segment.js';

/**
 * A contiguous piece of a segment, handed out or free: PyTorch's `Block`.
 * The blocks of one segment form a doubly linked list in address order
 * (prev/next), so freeing can merge a block with its free neighbours (N9).
 * Every field is set in the constructor, so all blocks share one shape.
 */
export class Block {
  /** The caller's unrounded request while allocated (N8); 0 when free. */
  requestedSize = 0;
  allocated = false;
  /** Whether pages back this range; always true outside expandable segments. */
  mapped = true;
  prev: Block | undefined = undefined;
  next: Block | undefined = undefined;
  /** The pool's get_free_block count when the block entered the pool (N10's age). */
  gcCountBase = 0;

  constructor(
    public ptr: number,
    public size: number,
    readonly stream: number,
    readonly pool: BlockPool,
    /** The expandable segment this block lies in; undefined for one-step segments. */
    readonly segment: ExpandableSegment | undefined,
  ) {}

  get isSplit(): boolean {
    return this.prev !== undefined || this.next !== undefined;
  }

  get end(): number {
    return this.ptr + this.size;
  }

  /** Link this block between `before` and `after` (either may be undefined). */
  splice(before: Block | undefined, after: Block | undefined): void {
    if (before !== undefined) before.next = this;
    this.prev = before;
    if (after !== undefined) after.prev = this;
    this.next = after;
  }
}
