import type { Arena } from './arena.js';
import type { Block } from './block.js';
import type { ChunkStore } from './chunk-store.js';

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
export function mappedFit(
  own: Arena,
  up: Arena | undefined,
  size: number,
  store: ChunkStore,
): MappedFit | undefined {
  let best: MappedFit | undefined;
  let bestSize = Number.POSITIVE_INFINITY;
  const page = own.pageSize;
  for (const a of up === undefined ? [own] : [own, up]) {
    if (a.mappedChunks === 0) continue;
    // Mapped runs of the arena, in page order.
    const runs = mappedRuns(a, store);
    let r = 0;
    for (let b: Block | undefined = a.firstBlock; b !== undefined && r < runs.length; b = b.next) {
      if (b.live || b.size < size) continue;
      const end = b.end;
      while (r < runs.length && runs[r + 1] * page <= b.offset) r += 2;
      for (let k = r; k < runs.length && runs[k] * page < end; k += 2) {
        const lo = Math.max(b.offset, runs[k] * page);
        const hi = Math.min(end, runs[k + 1] * page);
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

/** The arena's mapped pages as [first, end) page pairs in order (a run may span several chunks). */
export function mappedRuns(a: Arena, store: ChunkStore): number[] {
  const starts: number[] = [];
  for (const c of store.all) if (c.arena === a) starts.push(c.firstPage);
  starts.sort((x, y) => x - y);
  const runs: number[] = [];
  for (const p of starts) {
    const end = p + a.pages[p]!.pages;
    if (runs.length > 0 && runs[runs.length - 1] === p) runs[runs.length - 1] = end;
    else runs.push(p, end);
  }
  return runs;
}
