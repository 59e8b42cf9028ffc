import { vmmError } from '../../core/errors.js';
import { OrderedMap } from '../../util/ordered-map.js';

/** A free range [start, end), keyed in the map by its end. */
interface FreeRange {
  start: number;
  readonly end: number;
}

/**
 * A process's virtual address space: the free ranges between reservations,
 * handed out lowest-address first so the same calls give the same addresses.
 *
 * Note [First fit, keyed by end]: freed ranges merge with their neighbours,
 * so a reserve/free cycle returns the same address every time and the free
 * list stays as short as the fragmentation the program causes. Ranges are
 * keyed by their end address: carving from the front of a range and giving
 * back the piece just before one only move its start, which changes no key,
 * so the common reserve/free pattern touches the map not at all.
 */
export class VaAllocator {
  readonly #free = new OrderedMap<FreeRange>();

  constructor(
    readonly start: number,
    readonly end: number,
  ) {
    this.#free.set(end, { start, end });
  }

  /** Reserve `size` bytes aligned to `alignment` (a power of two); at `hint` if that range is free. */
  allocate(size: number, alignment: number, hint: number): number {
    if (hint !== 0) {
      const f = this.#free.higher(hint);
      if (f !== undefined && f.start <= hint && hint + size <= f.end) {
        this.#carve(f, hint, size);
        return hint;
      }
    }
    for (let f = this.#free.first(); f !== undefined; f = this.#free.higher(f.end)) {
      const base = Math.ceil(f.start / alignment) * alignment;
      if (base + size <= f.end) {
        this.#carve(f, base, size);
        return base;
      }
    }
    throw vmmError('out-of-memory', `no free virtual range of ${size} bytes`);
  }

  /**
   * Reserve `size` bytes at the lowest base at or above `from` aligned to
   * `alignment` (a power of two) where they are free; -1, changing nothing,
   * when there is none. The driver's heaps place this way (Note [Driver VA
   * placement] in driver-va.ts): `from` is the hint, or 0.
   */
  allocateFrom(size: number, alignment: number, from: number): number {
    let f = from <= this.start ? this.#free.first() : this.#free.higher(from);
    for (; f !== undefined; f = this.#free.higher(f.end)) {
      const start = Math.max(f.start, from);
      const base = start % alignment === 0 ? start : Math.ceil(start / alignment) * alignment;
      if (base + size <= f.end) {
        this.#carve(f, base, size);
        return base;
      }
    }
    return -1;
  }

  /** Reserve exactly [base, base + size) if it is free; false, changing nothing, if not. */
  take(base: number, size: number): boolean {
    const f = this.#free.higher(base);
    if (f === undefined || f.start > base || base + size > f.end) return false;
    this.#carve(f, base, size);
    return true;
  }

  /** Whether nothing is allocated: the whole range is one free range. */
  get allFree(): boolean {
    if (this.#free.size !== 1) return false;
    const f = this.#free.first()!;
    return f.start === this.start && f.end === this.end;
  }

  release(base: number, size: number): void {
    const end = base + size;
    const before = this.#free.get(base);
    const after = this.#free.higher(end);
    const start = before === undefined ? base : before.start;
    if (before !== undefined) this.#free.delete(base);
    if (after !== undefined && after.start === end) after.start = start;
    else this.#free.set(end, { start, end });
  }

  /** Number of free ranges (fragmentation). */
  get fragments(): number {
    return this.#free.size;
  }

  #carve(f: FreeRange, base: number, size: number): void {
    const start = f.start;
    if (base + size < f.end) f.start = base + size;
    else this.#free.delete(f.end);
    if (base > start) this.#free.set(base, { start, end: base });
  }
}
