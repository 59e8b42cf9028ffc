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
  /** The store's clock when it last became idle. */
  idleSince = 0;
  /** Neighbours in its class's idle list (oldest first); `idle` says whether it is in the list. */
  idle = false;
  olderIdle: Chunk | undefined;
  newerIdle: Chunk | undefined;
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
  /** Advanced by the allocator once per malloc: idle ages are counted in mallocs. */
  clock = 0;
  /** Creates and releases done, for reports. */
  creates = 0;
  releases = 0;
  readonly #pool: Chunk[][];
  /** Per class, the idle list's oldest and newest chunk. */
  readonly #oldest: (Chunk | undefined)[];
  readonly #newest: (Chunk | undefined)[];
  readonly #idleCount: number[];
  readonly #props;

  constructor(
    readonly runtime: Runtime,
    readonly device: number,
    readonly pageSize: number,
    readonly maxClass: number,
  ) {
    this.#pool = Array.from({ length: maxClass + 1 }, () => []);
    this.#oldest = new Array(maxClass + 1).fill(undefined);
    this.#newest = new Array(maxClass + 1).fill(undefined);
    this.#idleCount = new Array(maxClass + 1).fill(0);
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
    c.idleSince = this.clock;
    c.idle = true;
    const k = c.cls;
    const last = this.#newest[k];
    c.olderIdle = last;
    c.newerIdle = undefined;
    if (last !== undefined) last.newerIdle = c;
    else this.#oldest[k] = c;
    this.#newest[k] = c;
    this.#idleCount[k]++;
    this.idleBytes += c.bytes;
  }

  unmarkIdle(c: Chunk): void {
    if (!c.idle) return;
    c.idle = false;
    const k = c.cls;
    if (c.olderIdle !== undefined) c.olderIdle.newerIdle = c.newerIdle;
    else this.#oldest[k] = c.newerIdle;
    if (c.newerIdle !== undefined) c.newerIdle.olderIdle = c.olderIdle;
    else this.#newest[k] = c.olderIdle;
    c.olderIdle = undefined;
    c.newerIdle = undefined;
    this.#idleCount[k]--;
    this.idleBytes -= c.bytes;
  }

  /** The chunk of class `cls` idle longest, if it has been idle for `minAge` mallocs; still marked idle. */
  oldestIdle(cls: number, minAge = 0): Chunk | undefined {
    const c = this.#oldest[cls];
    return c !== undefined && this.clock - c.idleSince >= minAge ? c : undefined;
  }

  /** An idle chunk (idle `minAge` mallocs or more) of the largest class that has one, for trimming. */
  largestIdle(minAge = 0): Chunk | undefined {
    for (let k = this.maxClass; k >= 0; k--) {
      const c = this.oldestIdle(k, minAge);
      if (c !== undefined) return c;
    }
    return undefined;
  }

  /** Whether some pooled chunk, or chunk idle `minAge` mallocs, is smaller than class `cls` (a need could be split to use it). */
  hasSmaller(cls: number, minAge = 0): boolean {
    for (let k = 0; k < cls; k++)
      if (this.#pool[k].length > 0 || this.oldestIdle(k, minAge) !== undefined) return true;
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
    for (const first of this.#oldest) for (let c = first; c !== undefined; c = c.newerIdle) out.push(c);
    return out;
  }
}
