// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import { vmmError } from '../core/errors.js';
import type { PhysicalAllocation, Reservation } from '../core/objects.js';
import type { AccessDescriptor, Runtime } from '../core/runtime.js';
import { Access } from '../core/types.js';
import { AllocatorArgumentError, GrowPastMaximumError } from './errors.js';
import { transaction } from './transactions.js';

/**
 * How big the next chunk of a growing buffer is.
 *
 * - geometric (default): the next chunk is `capacity * (factor - 1)` (factor
 *   2: the capacity doubles), at least `minChunk` and at least what the grow
 *   still lacks, at most `maxChunk`.
 * - fixed: every chunk is `chunkSize`; a grow takes as many as it needs.
 * - a function of (capacity, shortfall) giving the next chunk's bytes.
 *
 * Every answer is rounded up to the device's granularity and cut at the end
 * of the reservation.
 */
export type ChunkPolicy =
  | {
      readonly kind: 'geometric';
      readonly factor?: number;
      readonly minChunk?: number;
      readonly maxChunk?: number;
    }
  | { readonly kind: 'fixed'; readonly chunkSize: number }
  | ((capacity: number, shortfall: number) => number);

export interface GrowableBufferOptions {
  /** The largest size the buffer may grow to: the reservation is this, rounded up to the granularity. */
  readonly maxSize: number;
  /** The device whose memory backs the buffer (default 0). */
  readonly device?: number;
  /** Who may touch the buffer (default: `device` read-write); every chunk is granted exactly these. */
  readonly access?: readonly AccessDescriptor[];
  readonly policy?: ChunkPolicy;
  /** Grow to this size at creation (default 0). */
  readonly initialSize?: number;
  /** Alignment of the pointer (default: the granularity). */
  readonly alignment?: number;
}

/** One piece of physical memory mapped at `offset` from the buffer's pointer. */
interface Chunk {
  readonly offset: number;
  readonly size: number;
}

/**
 * Note [Why geometric chunks]: on the H200 a driver call costs about the same
 * whatever its size, up to large sizes, and cuMemSetAccess costs per handle
 * (bench/results/h200-driver-costs.json). Growing to 4 GiB in 2 MiB chunks is
 * 2048 handles, an order of magnitude slower than cuMemAlloc doubling plus a
 * copy. Doubling chunks instead (2, 2, 4, ..., 2048 MiB) makes 12 handles
 * whose sum is exactly the final 4 GiB, so the driver sees 12 creates and 12
 * grants, memory held never exceeds the size reached plus the last chunk
 * (the copy path holds old and new at once: 1.5x at the end), and the
 * pointer never moves. bench/gpu-grow.ts measures the three on the GPU
 * (bench/results/h200-grow.json; the README gives the figures).
 */
const DEFAULT_POLICY: ChunkPolicy = { kind: 'geometric', factor: 2 };

/**
 * One device pointer that never moves, over a reservation sized for the
 * maximum; physical memory is added (grow) and given back (shrink) in
 * chunks, each its own create + map, each granted the same access. Making
 * the buffer, a grow and a shrink are each all or nothing (a Transaction):
 * if any driver step fails, what the call did is taken back and the buffer
 * is as it was. Bad arguments are VmmErrors of kind invalid-value, or
 * AllocatorArgumentError where a size is out of the buffer's range
 * (GrowPastMaximumError past maxSize).
 */
export class GrowableBuffer implements Disposable {
  readonly #runtime: Runtime;
  readonly #reservation: Reservation;
  readonly #device: number;
  readonly #access: readonly AccessDescriptor[];
  readonly #policy: ChunkPolicy;
  readonly #granularity: number;
  readonly #chunks: Chunk[] = [];
  readonly #maxSize: number;
  #size = 0;
  #capacity = 0;
  #disposed = false;

  constructor(runtime: Runtime, options: GrowableBufferOptions) {
    const { maxSize, device = 0, initialSize = 0, alignment = 0 } = options;
    const info = runtime.device(device);
    if (!isCount(maxSize) || maxSize === 0)
      throw vmmError('invalid-value', `maxSize ${maxSize} is not a positive size`);
    if (!isCount(initialSize) || initialSize > maxSize)
      throw new AllocatorArgumentError(`initialSize ${initialSize} is not between 0 and maxSize ${maxSize}`);
    const access = options.access ?? [{ device, access: Access.ReadWrite }];
    for (const d of access) {
      runtime.device(d.device);
      if (d.access !== Access.None && d.access !== Access.Read && d.access !== Access.ReadWrite)
        throw vmmError('invalid-value', `access flags ${d.access}`);
    }
    const policy = options.policy ?? DEFAULT_POLICY;
    checkPolicy(policy);
    this.#runtime = runtime;
    this.#device = device;
    this.#access = access.map((d) => ({ device: d.device, access: d.access }));
    this.#policy = policy;
    this.#granularity = Math.max(info.minimumGranularity, runtime.vaGranularity);
    this.#maxSize = maxSize;
    this.#reservation = runtime.reserve(roundUp(maxSize, this.#granularity), { alignment });
    if (initialSize > 0) {
      transaction(runtime, (tx) => {
        tx.undo(() => runtime.free(this.#reservation));
        this.grow(initialSize);
      });
    }
  }

  /** The buffer's device address; the same for its whole life. */
  get pointer(): number {
    return this.#reservation.base;
  }

  /** Bytes the buffer holds now (as last grown or shrunk to). */
  get size(): number {
    return this.#size;
  }

  /** Bytes of physical memory mapped behind the pointer (>= size). */
  get capacity(): number {
    return this.#capacity;
  }

  get maxSize(): number {
    return this.#maxSize;
  }

  /** Chunks mapped now (each one physical allocation). */
  get chunkCount(): number {
    return this.#chunks.length;
  }

  /** The size of each mapped chunk, in address order. */
  chunkSizes(): number[] {
    return this.#chunks.map((c) => c.size);
  }

  get device(): number {
    return this.#device;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /**
   * Grow to `size` bytes in total (not by). Maps chunks until the capacity
   * covers it; bytes already in the buffer stay where they are.
   */
  grow(size: number): void {
    this.#checkLive();
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size} is not a size`);
    if (size < this.#size)
      throw new AllocatorArgumentError(`grow to ${size} is below the size ${this.#size}: shrink`);
    if (size > this.#maxSize) throw new GrowPastMaximumError(size, this.#maxSize);
    if (size <= this.#capacity) {
      this.#size = size;
      return;
    }
    const rt = this.#runtime;
    const base = this.#reservation.base;
    const end = this.#reservation.size;
    const props = {
      location: { type: 'device' as const, id: this.#device },
      handleTypes: 0,
      uncached: false,
    };
    const added: Chunk[] = [];
    const made: PhysicalAllocation[] = [];
    let capacity = this.#capacity;
    transaction(rt, (tx) => {
      while (capacity < size) {
        const wanted = this.#nextChunk(capacity, size - capacity);
        const chunkSize = Math.min(roundUp(wanted, this.#granularity), end - capacity);
        const a = rt.create(chunkSize, props);
        tx.undo(() => rt.release(a));
        const va = base + capacity;
        rt.map(va, chunkSize, a, 0);
        // Undone newest first: the unmap, then the release that gives the memory back.
        tx.undo(() => rt.unmap(va, chunkSize));
        made.push(a);
        added.push({ offset: capacity, size: chunkSize });
        capacity += chunkSize;
      }
      const from = this.#capacity;
      if (this.#access.length > 0) rt.setAccess(base + from, capacity - from, this.#access);
    });
    // The mappings hold the memory from now (no driver call): unmapping a chunk gives its memory back.
    for (const a of made) rt.release(a);
    for (const c of added) this.#chunks.push(c);
    this.#capacity = capacity;
    this.#size = size;
  }

  /**
   * Shrink to `size` bytes in total: every chunk that lies wholly at or above
   * the new size is unmapped, and its memory goes back to the driver. The
   * chunks go in one core unmap, itself a Transaction: if a step fails
   * before any memory is given back, the chunks are mapped back with their
   * access and bytes, the buffer is as it was, and the error is thrown; once
   * memory has gone the shrink stands, and a chunk that would not release is
   * reported and held by the runtime until its dispose (core's Note [Points
   * of no return]).
   */
  shrink(size: number): void {
    this.#checkLive();
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size} is not a size`);
    if (size > this.#size)
      throw new AllocatorArgumentError(`shrink to ${size} is above the size ${this.#size}: grow`);
    const chunks = this.#chunks;
    let keep = chunks.length;
    while (keep > 0 && chunks[keep - 1].offset >= size) keep--;
    if (keep < chunks.length) {
      const from = chunks[keep].offset;
      this.#runtime.unmap(this.#reservation.base + from, this.#capacity - from);
      chunks.length = keep;
      this.#capacity = from;
    }
    this.#size = size;
  }

  /** Unmap every chunk and free the reservation. Never throws; a failed step goes to the runtime's report hook. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const rt = this.#runtime;
    const base = this.#reservation.base;
    for (let i = this.#chunks.length - 1; i >= 0; i--) {
      const c = this.#chunks[i];
      rt.quietly(() => rt.unmap(base + c.offset, c.size));
    }
    this.#chunks.length = 0;
    this.#capacity = 0;
    this.#size = 0;
    rt.quietly(() => rt.free(this.#reservation));
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #checkLive(): void {
    if (this.#disposed) throw vmmError('not-initialized', 'the buffer was disposed');
  }

  #nextChunk(capacity: number, shortfall: number): number {
    const p = this.#policy;
    let n: number;
    if (typeof p === 'function') {
      n = p(capacity, shortfall);
      if (!isCount(n) || n === 0) throw vmmError('invalid-value', `chunk policy gave ${n} bytes`);
    } else if (p.kind === 'fixed') {
      n = p.chunkSize;
    } else {
      const factor = p.factor ?? 2;
      n = Math.max(Math.ceil(capacity * (factor - 1)), p.minChunk ?? this.#granularity, shortfall);
      if (p.maxChunk !== undefined) n = Math.min(n, p.maxChunk);
    }
    return n;
  }
}

function checkPolicy(p: ChunkPolicy): void {
  if (typeof p === 'function') return;
  if (p === null || typeof p !== 'object') throw new AllocatorArgumentError('policy is not a chunk policy');
  if (p.kind === 'fixed') {
    if (!isCount(p.chunkSize) || p.chunkSize === 0)
      throw vmmError('invalid-value', `chunkSize ${p.chunkSize} is not a positive size`);
    return;
  }
  if (p.kind !== 'geometric')
    throw new AllocatorArgumentError(`unknown chunk policy ${String((p as { kind: unknown }).kind)}`);
  const { factor = 2, minChunk, maxChunk } = p;
  if (!Number.isFinite(factor) || factor <= 1)
    throw new AllocatorArgumentError(`factor ${factor} is not above 1`);
  for (const [name, v] of [
    ['minChunk', minChunk],
    ['maxChunk', maxChunk],
  ] as const) {
    if (v !== undefined && (!isCount(v) || v === 0))
      throw vmmError('invalid-value', `${name} ${v} is not a positive size`);
  }
  if (minChunk !== undefined && maxChunk !== undefined && minChunk > maxChunk)
    throw new AllocatorArgumentError(`minChunk ${minChunk} is above maxChunk ${maxChunk}`);
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

function roundUp(n: number, g: number): number {
  return Math.ceil(n / g) * g;
}
