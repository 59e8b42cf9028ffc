import { vmmError } from '../../core/errors.js';
import { OrderedMap } from '../../util/ordered-map.js';

interface FreeRange {
  start: number;
  size: number;
}

/**
 * A process's virtual address space: the free ranges between reservations,
 * handed out lowest-address first so the same calls give the same addresses.
 *
 * Note [First fit, coalesced]: freed ranges merge with their neighbours, so
 * a reserve/free cycle returns the same address every time and the free list
 * stays as short as the fragmentation the program causes.
 */
export class VaAllocator {
  readonly #free = new OrderedMap<FreeRange>();

  constructor(
    readonly start: number,
    readonly end: number,
  ) {
    this.#free.set(start, { start, size: end - start });
  }

  /** Reserve `size` bytes aligned to `alignment` (a power of two); at `hint` if that range is free. */
  allocate(size: number, alignment: number, hint: number): number {
    if (hint !== 0) {
      const f = this.#free.floor(hint);
      if (f !== undefined && hint + size <= f.start + f.size) {
        this.#carve(f, hint, size);
        return hint;
      }
    }
    for (let f = this.#free.first(); f !== undefined; f = this.#free.higher(f.start)) {
      const base = alignUp(f.start, alignment);
      if (base + size <= f.start + f.size) {
        this.#carve(f, base, size);
        return base;
      }
    }
    throw vmmError('out-of-memory', `no free virtual range of ${size} bytes`);
  }

  release(base: number, size: number): void {
    let start = base;
    let end = base + size;
    const before = this.#free.floor(base);
    if (before !== undefined && before.start + before.size === base) {
      start = before.start;
      this.#free.delete(before.start);
    }
    const after = this.#free.get(end);
    if (after !== undefined) {
      end = after.start + after.size;
      this.#free.delete(after.start);
    }
    this.#free.set(start, { start, size: end - start });
  }

  /** Number of free ranges (fragmentation). */
  get fragments(): number {
    return this.#free.size;
  }

  #carve(f: FreeRange, base: number, size: number): void {
    const fEnd = f.start + f.size;
    if (base > f.start) f.size = base - f.start;
    else this.#free.delete(f.start);
    if (base + size < fEnd) this.#free.set(base + size, { start: base + size, size: fEnd - base - size });
  }
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}
