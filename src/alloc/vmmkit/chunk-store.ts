import type { PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import type { Arena } from './arena.js';

/**
 * One physical allocation (one driver handle) of 2^cls pages. It is in one
 * of three states: mapped in an arena and overlapped by live blocks
 * (`live` > 0); mapped but overlapped by none (idle: its memory could be
 * unmapped and used elsewhere); or unmapped, waiting in the pool.
 */
export class Chunk {
  /** The arena it is mapped in, undefined while pooled. */
  arena: Arena | undefined;
  /** Its first page in that arena. */
  firstPage = -1;
  /** Live blocks overlapping its pages. */
  live = 0;
  constructor(
    readonly allocation: PhysicalAllocation,
    readonly cls: number,
    readonly pages: number,
  ) {}

  get bytes(): number {
    return this.allocation.size;
  }
}

/**
 * The physical memory an allocator holds, by state: what it created and has
 * not released (held), mapped chunks no live block overlaps (idle), and
 * unmapped chunks (the pool), each kept per size class so that a need of
 * 2^k pages finds a chunk of exactly that size in O(1).
 */
export class ChunkStore {
  /** Bytes created and not released: the allocator's reserved bytes. */
  held = 0;
  peakHeld = 0;
  /** Every chunk created and not released. */
  readonly all = new Set<Chunk>();
  /** Bytes of idle chunks and of pooled chunks (the part of `held` no live block uses). */
  idleBytes = 0;
  poolBytes = 0;
  /** Creates and releases done, for reports. */
  creates = 0;
  releases = 0;
  readonly #pool: Chunk[][];
  readonly #idle: Set<Chunk>[];
  readonly #props;

  constructor(
    readonly runtime: Runtime,
    readonly device: number,
    readonly pageSize: number,
    readonly maxClass: number,
  ) {
    this.#pool = Array.from({ length: maxClass + 1 }, () => []);
    this.#idle = Array.from({ length: maxClass + 1 }, () => new Set<Chunk>());
    this.#props = { location: { type: 'device' as const, id: device }, handleTypes: 0, uncached: false };
  }

  /** Create a chunk of 2^cls pages; throws the runtime's VmmError (out-of-memory) unchanged. */
  create(cls: number): Chunk {
    const pages = 2 ** cls;
    const a = this.runtime.create(pages * this.pageSize, this.#props);
    this.held += a.size;
    if (this.held > this.peakHeld) this.peakHeld = this.held;
    this.creates++;
    const c = new Chunk(a, cls, pages);
    this.all.add(c);
    return c;
  }

  /** Give an unmapped chunk's memory back to the driver. */
  release(c: Chunk): void {
    this.runtime.release(c.allocation);
    this.all.delete(c);
    this.held -= c.bytes;
    this.releases++;
  }

  pooled(cls: number): number {
    return this.#pool[cls].length;
  }

  takePooled(cls: number): Chunk | undefined {
    const c = this.#pool[cls].pop();
    if (c !== undefined) this.poolBytes -= c.bytes;
    return c;
  }

  putPooled(c: Chunk): void {
    this.#pool[c.cls].push(c);
    this.poolBytes += c.bytes;
  }

  /** A pooled chunk of the largest class, for trimming; undefined if the pool is empty. */
  takeAnyPooled(): Chunk | undefined {
    for (let k = this.maxClass; k >= 0; k--) if (this.#pool[k].length > 0) return this.takePooled(k);
    return undefined;
  }

  markIdle(c: Chunk): void {
    this.#idle[c.cls].add(c);
    this.idleBytes += c.bytes;
  }

  unmarkIdle(c: Chunk): void {
    if (this.#idle[c.cls].delete(c)) this.idleBytes -= c.bytes;
  }

  /** The chunk of class `cls` idle longest, still marked idle; undefined if none. */
  oldestIdle(cls: number): Chunk | undefined {
    const set = this.#idle[cls];
    return set.size === 0 ? undefined : set.values().next().value;
  }

  /** An idle chunk of the largest class that has one, for trimming. */
  largestIdle(): Chunk | undefined {
    for (let k = this.maxClass; k >= 0; k--) {
      const c = this.oldestIdle(k);
      if (c !== undefined) return c;
    }
    return undefined;
  }

  /** Whether some pooled or idle chunk is smaller than class `cls` (a need could be split to use it). */
  hasSmaller(cls: number): boolean {
    for (let k = 0; k < cls; k++) if (this.#pool[k].length > 0 || this.#idle[k].size > 0) return true;
    return false;
  }

  /** Every pooled chunk, removed from the pool. */
  drainPool(): Chunk[] {
    const out: Chunk[] = [];
    for (const list of this.#pool) while (list.length > 0) out.push(list.pop()!);
    this.poolBytes = 0;
    return out;
  }

  /** Every idle chunk (still marked idle). */
  idleChunks(): Chunk[] {
    const out: Chunk[] = [];
    for (const set of this.#idle) for (const c of set) out.push(c);
    return out;
  }
}
