import type { Arena } from './arena.js';
import type { Block } from './block.js';

/** Where a block can go on mapped pages: an arena, a free block in it, and the offset to place at. */
export interface MappedFit {
  readonly arena: Arena;
  readonly block: Block;
  readonly offset: number;
}

/**
 * The smallest free extent that lies wholly on mapped pages and holds
 * `size` bytes (lowest address among equals), in `own` or, for a small
 * block, in `up`, its stream's next arena up (large, or medium where there
 * is one) (point 5 of Note [vmmkit allocator]): its block and the offset to
 * place at. Walks every block of those arenas, so it runs only on a miss,
 * which costs driver calls anyway.
 */
export function mappedFit(own: Arena, up: Arena | undefined, size: number): MappedFit | undefined {
  let best: MappedFit | undefined;
  let bestSize = Number.POSITIVE_INFINITY;
  const page = own.pageSize;
  for (const a of up === undefined ? [own] : [own, up]) {
    if (a.mappedChunks === 0) continue;
    for (let b: Block | undefined = a.firstBlock; b !== undefined; b = b.next) {
      if (b.live || b.size < size) continue;
      const end = b.end;
      // The mapped runs that meet the block, in page order: the one over its first page, else the next one.
      const first = a.firstPage(b.offset);
      for (
        let r = a.runAt(first) ?? a.runFrom(first);
        r !== undefined && r.start * page < end;
        r = a.runFrom(r.end)
      ) {
        const lo = Math.max(b.offset, r.start * page);
        const hi = Math.min(end, r.end * page);
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
