import type { AddressMap } from '../../util/address-map.js';
import type { Block } from './block.js';
import type { BlockPool } from './block-pool.js';
import type { PrivatePools } from './private-pool.js';

/** One segment as a snapshot's `segments` list shows it (docs/pytorch-allocators.md T4, E8). */
export interface SegmentSnapshot {
  readonly address: number;
  readonly totalSize: number;
  readonly stream: number;
  readonly segmentType: 'small' | 'large';
  readonly isExpandable: boolean;
  /** Its pool (segment_pool_id, P1): 0 for the default pool, else the number malloc was given. */
  readonly pool: number;
  readonly blocks: readonly BlockSnapshot[];
}

export interface BlockSnapshot {
  readonly address: number;
  readonly size: number;
  readonly requestedSize: number;
  readonly state: 'active_allocated' | 'inactive';
}

/**
 * The segments and their blocks, as torch.cuda.memory._snapshot() lists
 * them (T4; E8 for expandable), in address order: among every block, free
 * in a pool (the default ones, then each private pool's) or handed out, each
 * run of mapped blocks that starts with no mapped block before it is one
 * segment.
 */
export function snapshotSegments(
  large: BlockPool,
  small: BlockPool,
  privatePools: PrivatePools,
  active: AddressMap<Block>,
): SegmentSnapshot[] {
  const all: Block[] = [...large.blocksInOrder(), ...small.blocksInOrder()];
  for (const p of privatePools.all()) all.push(...p.large.blocksInOrder(), ...p.small.blocksInOrder());
  all.push(...active.values());
  const out: SegmentSnapshot[] = [];
  for (const head of all) {
    if (head.prev?.mapped) continue;
    const blocks: BlockSnapshot[] = [];
    let total = 0;
    for (let b: Block | undefined = head; b?.mapped; b = b.next) {
      blocks.push({
        address: b.ptr,
        size: b.size,
        requestedSize: b.requestedSize,
        state: b.allocated ? 'active_allocated' : 'inactive',
      });
      total += b.size;
    }
    out.push({
      address: head.ptr,
      totalSize: total,
      stream: head.stream,
      segmentType: head.pool.isSmall ? 'small' : 'large',
      isExpandable: head.segment !== undefined,
      pool: head.pool.owner?.id ?? 0,
      blocks,
    });
  }
  return out.sort((a, b) => a.address - b.address);
}
