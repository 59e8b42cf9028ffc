import { isVmmError } from '../../core/errors.js';
import type { SegmentPlacement } from '../allocator.js';
import { Block } from './block.js';
import type { BlockPool } from './block-pool.js';
import type { HeldMemory } from './held-memory.js';
import { cudaMallocCountAssert } from './private-pool.js';

/**
 * The native path (expandable_segments:False): every segment is one
 * one-step allocation (runtime.malloc, PyTorch's cudaMalloc) of alloc_size
 * bytes, asked for where the recorded placement puts it when one is given,
 * and given back whole (runtime.mfree) by release_block.
 */
export class NativeSegments {
  /** One-step segments held: size by base address. */
  readonly #segments = new Map<number, number>();

  constructor(
    readonly memory: HeldMemory,
    readonly placement: SegmentPlacement | undefined,
  ) {}

  /** N6 (f) alloc_block's native part: a new segment as one free block; undefined on the driver's out-of-memory. */
  allocBlock(pool: BlockPool, stream: number, allocSize: number): Block | undefined {
    const mem = this.memory;
    let base: number;
    try {
      const hint = this.placement?.addressFor(allocSize);
      base = mem.runtime.malloc(mem.device, allocSize, hint === undefined ? {} : { hint }).base;
    } catch (e) {
      if (isVmmError(e) && e.kind === 'out-of-memory') return undefined;
      throw e;
    }
    this.#segments.set(base, allocSize);
    if (pool.owner !== undefined) pool.owner.cudaMallocCount++; // P4
    mem.bytes += allocSize;
    mem.stats.addReserved(allocSize); // N11
    mem.stats.segments++;
    mem.stats.deviceAllocs++;
    mem.emit('segment_alloc', base, allocSize, stream);
    return new Block(base, allocSize, stream, pool, undefined);
  }

  /** Native segment back to the driver (release_block). */
  releaseBlock(b: Block): void {
    const mem = this.memory;
    const owner = b.pool.owner;
    if (owner !== undefined && owner.cudaMallocCount <= 0) throw cudaMallocCountAssert(owner);
    mem.runtime.mfree(b.ptr);
    if (owner !== undefined) owner.cudaMallocCount--; // P4
    b.pool.erase(b);
    this.#segments.delete(b.ptr);
    mem.bytes -= b.size;
    mem.stats.reservedBytes -= b.size;
    mem.stats.segments--;
    mem.stats.deviceFrees++;
    mem.emit('segment_free', b.ptr, b.size, b.stream);
  }

  /** Hold a start segment made at `base` (Note [Restoring a start state]). */
  adoptStart(base: number, size: number, stream: number): void {
    const mem = this.memory;
    this.#segments.set(base, size);
    mem.bytes += size;
    mem.stats.addReserved(size);
    mem.emit('segment_alloc', base, size, stream);
  }

  /** Give every segment back. Never throws. */
  dispose(): void {
    const rt = this.memory.runtime;
    for (const base of this.#segments.keys()) rt.quietly(() => rt.mfree(base));
    this.#segments.clear();
  }
}
