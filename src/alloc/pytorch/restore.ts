import { isVmmError } from '../../core/errors.js';
import type { Transaction } from '../../core/transaction.js';
import type { AddressMap } from '../../util/address-map.js';
import type { StartSegment } from '../allocator.js';
import { AllocatorArgumentError, AllocatorOutOfMemoryError } from '../errors.js';
import { Block } from './block.js';
import type { BlockPool } from './block-pool.js';
import { ExpandableSegment } from './expandable-segment.js';
import type { HeldMemory } from './held-memory.js';
import { LARGE_BUFFER, MIN_BLOCK_SIZE, SMALL_BUFFER } from './sizes.js';
import type { PytorchStats } from './stats.js';

/**
 * Note [Restoring a start state]: a snapshot that starts mid-run
 * (replay/start-state.ts) gives the recorded allocator's segments at the
 * first event, with the blocks live and free in each. They are made here
 * the way PyTorch made them: a native segment is one one-step malloc of
 * its size (its cudaMalloc), asked for at its recorded address; an
 * expandable segment is a reserved range of this device's size (E3) with
 * the pages mapped at the start mapped at their offsets (E5). Then the
 * blocks are laid over them as PyTorch's Block list would be: linked in
 * address order (so the split state, is_split, and merging on free come
 * out as PyTorch's), free mapped blocks in their pool (the free list by
 * size), the unmapped gaps of an expandable range as unmapped blocks, the
 * live blocks handed out. Reserved is the segments' bytes (mapped bytes
 * for expandable ones), allocated and requested the live blocks' (N8,
 * N11); the peaks start there. The driver calls come first, in one
 * transaction (any failure takes back what was made and is thrown); the
 * bookkeeping after them cannot fail. Each segment made is reported as a
 * segment_alloc or segment_map, so a listener sees the memory taken. The
 * cap (Note [Memory limit]) is not applied: the start is what PyTorch
 * held, and the cap acts from the next malloc on. Ages for garbage
 * collection start at 0 (N10; the snapshot has none).
 */

/** A start segment's memory once made: its base, and its expandable segment (undefined for a native one). */
export interface MadeSegment {
  readonly base: number;
  readonly segment: ExpandableSegment | undefined;
}

/** A start segment this model can hold: blocks tiling its memory, sizes as PyTorch's are. Throws AllocatorArgumentError. */
export function checkStartSegment(
  seg: StartSegment,
  name: string,
  expandable: boolean,
  memory: HeldMemory,
): void {
  const where = `${name}: start segment 0x${seg.address.toString(16)}`;
  const g = Math.max(memory.runtime.device(memory.device).minimumGranularity, memory.runtime.vaGranularity);
  const page = seg.pool === 'small' ? SMALL_BUFFER : LARGE_BUFFER;
  const ranges = expandable ? seg.mapped : [{ address: seg.address, size: seg.size }];
  if (!Number.isSafeInteger(seg.address) || !Number.isSafeInteger(seg.size) || seg.size <= 0)
    throw new AllocatorArgumentError(`${where}: address or size is not a byte count`);
  if (!expandable && seg.size % g !== 0)
    throw new AllocatorArgumentError(`${where}: ${seg.size} bytes is not a multiple of ${g}`);
  let k = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const r of ranges) {
    const offset = r.address - seg.address;
    if (
      r.address <= end ||
      offset < 0 ||
      offset + r.size > seg.size ||
      r.size <= 0 ||
      (expandable && (offset % page !== 0 || r.size % page !== 0))
    )
      throw new AllocatorArgumentError(
        `${where}: mapped range 0x${r.address.toString(16)} (${r.size} bytes) is not whole pages in order`,
      );
    let at = r.address;
    let freeBefore = false;
    for (; k < seg.blocks.length && at < r.address + r.size; k++) {
      const b = seg.blocks[k];
      const free = b.blockId < 0;
      if (
        b.address !== at ||
        !Number.isSafeInteger(b.size) ||
        b.size <= 0 ||
        b.size % MIN_BLOCK_SIZE !== 0 ||
        (free
          ? b.requestedSize !== 0
          : !(Number.isSafeInteger(b.blockId) && b.requestedSize > 0 && b.requestedSize <= b.size))
      )
        throw new AllocatorArgumentError(
          `${where}: block 0x${b.address.toString(16)} does not tile it as a block of PyTorch's would`,
        );
      if (free && freeBefore)
        throw new AllocatorArgumentError(
          `${where}: free blocks side by side at 0x${b.address.toString(16)} (PyTorch merges them)`,
        );
      freeBefore = free;
      at += b.size;
    }
    if (at !== r.address + r.size)
      throw new AllocatorArgumentError(
        `${where}: its blocks do not cover 0x${r.address.toString(16)} (${r.size} bytes)`,
      );
    end = r.address + r.size;
  }
  if (k !== seg.blocks.length) throw new AllocatorArgumentError(`${where}: blocks outside its memory`);
}

/** The driver's part of one start segment, undone by `tx` if a later one fails. */
export function makeStartSegment(
  seg: StartSegment,
  tx: Transaction,
  name: string,
  expandable: boolean,
  memory: HeldMemory,
): MadeSegment {
  const rt = memory.runtime;
  const device = memory.device;
  if (!expandable) {
    let base: number;
    try {
      base = rt.malloc(device, seg.size, { hint: seg.address }).base;
    } catch (e) {
      if (isVmmError(e) && e.kind === 'out-of-memory')
        throw new AllocatorOutOfMemoryError(seg.size, device, 0, 0);
      throw e;
    }
    tx.undo(() => rt.mfree(base));
    return { base, segment: undefined };
  }
  const es = ExpandableSegment.reserve(
    rt,
    device,
    seg.stream,
    seg.pool === 'small' ? SMALL_BUFFER : LARGE_BUFFER,
  );
  tx.undo(() => es.dispose());
  const last = seg.mapped[seg.mapped.length - 1];
  if (last !== undefined && last.address + last.size - seg.address > es.size)
    throw new AllocatorArgumentError(
      `${name}: start segment 0x${seg.address.toString(16)} maps past this device's ${es.size}-byte range`,
    );
  for (const r of seg.mapped) {
    const begin = es.pageLeft(es.base + (r.address - seg.address));
    if (!es.mapPages(begin, begin + r.size / es.pageSize))
      throw new AllocatorOutOfMemoryError(r.size, device, 0, 0);
  }
  return { base: es.base, segment: es };
}

/** Lay one start segment's blocks over its memory, made at `made.base`; pushes the live blocks' addresses. */
export function layStartBlocks(
  seg: StartSegment,
  made: MadeSegment,
  pool: BlockPool,
  active: AddressMap<Block>,
  stats: PytorchStats,
  out: number[],
): void {
  const es = made.segment;
  const delta = made.base - seg.address;
  let prev: Block | undefined;
  let cursor = made.base;
  const link = (b: Block) => {
    b.splice(prev, undefined);
    prev = b;
  };
  const unmapped = (from: number, to: number) => {
    const u = new Block(from, to - from, seg.stream, pool, es);
    u.mapped = false;
    link(u);
    pool.insertUnmapped(u);
  };
  for (const sb of seg.blocks) {
    const ptr = sb.address + delta;
    if (ptr > cursor) unmapped(cursor, ptr);
    const b = new Block(ptr, sb.size, seg.stream, pool, es);
    link(b);
    if (sb.blockId >= 0) {
      b.allocated = true;
      b.requestedSize = sb.requestedSize;
      active.set(ptr, b);
      stats.addAllocated(sb.size, sb.requestedSize);
      out.push(ptr);
    } else pool.insert(b);
    cursor = ptr + sb.size;
  }
  if (es !== undefined && cursor < es.end) unmapped(cursor, es.end);
}
