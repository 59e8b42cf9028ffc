import { type Arena, MEDIUM, SMALL } from './arena.js';
import type { Block } from './block.js';
import type { ChunkStore } from './chunk-store.js';

/** What an allocator holds and where, for analysis (bench/vmmkit-traces.ts): each arena's blocks and mapped pages, and unmapped held bytes. */
export interface MemoryLayout {
  readonly pageSize: number;
  readonly arenas: readonly {
    readonly stream: number;
    readonly kind: 'small' | 'medium' | 'large';
    /** Every block, live or free, in address order (absolute addresses). */
    readonly blocks: readonly { address: number; size: number; requested: number; live: boolean }[];
    /** Whether the page at `address` (a page boundary in the arena) is mapped. */
    mappedPage(address: number): boolean;
    /** The handles mapped there: where, how many pages, live blocks over them, mallocs since they became idle (-1: not idle). */
    readonly chunks: readonly { address: number; pages: number; live: number; idleFor: number }[];
  }[];
  /** Bytes held in unmapped handles (the pool). */
  readonly pooledBytes: number;
}

/** Where the held memory is now, arena by arena (for analysis; walks every block). */
export function describeLayout(
  arenasByStream: ReadonlyMap<number, readonly (Arena | undefined)[]>,
  store: ChunkStore,
  pageSize: number,
): MemoryLayout {
  const arenas: MemoryLayout['arenas'][number][] = [];
  for (const [stream, list] of arenasByStream) {
    for (const a of list) {
      if (a === undefined) continue;
      const blocks: { address: number; size: number; requested: number; live: boolean }[] = [];
      let b: Block | undefined = a.firstBlock;
      for (; b !== undefined; b = b.next)
        blocks.push({ address: a.base + b.offset, size: b.size, requested: b.requested, live: b.live });
      const page = pageSize;
      const chunks: { address: number; pages: number; live: number; idleFor: number }[] = [];
      for (const c of a.chunks()) {
        const idleFor = c.idle ? store.clock - c.idleSince : -1;
        chunks.push({ address: a.base + c.firstPage * page, pages: c.pages, live: c.live, idleFor });
      }
      arenas.push({
        chunks,
        stream,
        kind: a.kind === SMALL ? 'small' : a.kind === MEDIUM ? 'medium' : 'large',
        blocks,
        mappedPage: (address) => a.chunkAt(Math.floor((address - a.base) / page)) !== undefined,
      });
    }
  }
  return { pageSize, arenas, pooledBytes: store.poolBytes };
}
