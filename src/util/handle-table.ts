/**
 * A table of live objects under small integer handles, as a kernel's fd
 * table or a driver's handle table: lookups are an array index, and freed
 * handles are handed out again (last freed, first reused), so handle values
 * stay small and deterministic.
 */
export class HandleTable<V> {
  readonly #slots: (V | undefined)[];
  readonly #free: number[] = [];
  #size = 0;

  /** @param first the lowest handle value handed out (0 is reserved as "no handle" by default). */
  constructor(readonly first = 1) {
    this.#slots = new Array(first).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  /** The handle the next add() will return. */
  peek(): number {
    return this.#free.length > 0 ? this.#free[this.#free.length - 1] : this.#slots.length;
  }

  add(value: V): number {
    const h = this.#free.pop() ?? this.#slots.length;
    this.#slots[h] = value;
    this.#size++;
    return h;
  }

  get(handle: number): V | undefined {
    return handle >= this.first ? this.#slots[handle] : undefined;
  }

  remove(handle: number): boolean {
    if (this.get(handle) === undefined) return false;
    this.#slots[handle] = undefined;
    this.#free.push(handle);
    this.#size--;
    return true;
  }

  *values(): IterableIterator<V> {
    for (const v of this.#slots) if (v !== undefined) yield v;
  }
}

/**
 * A handle table whose values are never handed out twice (core's handle
 * values, Note [Handle values] in src/core/allocations.ts), at an array index's
 * cost. A handle is `generation * SLOTS + slot`: slots are reused, last freed
 * first, and each reuse bumps the slot's generation, so a stale value names
 * the right slot with the wrong generation and finds nothing. (A Map keyed by
 * a counter does the same at about 45 ns per insert or delete once deletes
 * pile up in it; this is an array store.) A slot whose generation would pass
 * 2^53 / SLOTS is retired instead of reused.
 */
export class GenerationalHandleTable<V> {
  static readonly SLOTS = 2 ** 24;
  static readonly #MAX_GENERATION = Math.floor(Number.MAX_SAFE_INTEGER / GenerationalHandleTable.SLOTS) - 1;
  /** Slot 0 is never used, so no handle is 0. */
  readonly #slots: (V | undefined)[] = [undefined];
  readonly #generations: number[] = [0];
  readonly #free: number[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The handle the next add() will return. */
  peek(): number {
    const slot = this.#free.length > 0 ? this.#free[this.#free.length - 1] : this.#slots.length;
    return (this.#generations[slot] ?? 0) * GenerationalHandleTable.SLOTS + slot;
  }

  add(value: V): number {
    let slot = this.#free.pop();
    if (slot === undefined) {
      slot = this.#slots.length;
      if (slot >= GenerationalHandleTable.SLOTS) throw new RangeError('too many live handles');
      this.#slots.push(undefined);
      this.#generations.push(0);
    }
    this.#slots[slot] = value;
    this.#size++;
    return this.#generations[slot] * GenerationalHandleTable.SLOTS + slot;
  }

  get(handle: number): V | undefined {
    if (!(handle > 0) || !Number.isSafeInteger(handle)) return undefined;
    const generation = Math.floor(handle / GenerationalHandleTable.SLOTS);
    const slot = handle - generation * GenerationalHandleTable.SLOTS;
    return this.#generations[slot] === generation ? this.#slots[slot] : undefined;
  }

  /** Whether `handle` was handed out once and has been removed since (a stale value, not a made-up one). */
  isStale(handle: number): boolean {
    if (!(handle > 0) || !Number.isSafeInteger(handle)) return false;
    const generation = Math.floor(handle / GenerationalHandleTable.SLOTS);
    const slot = handle - generation * GenerationalHandleTable.SLOTS;
    return slot > 0 && slot < this.#slots.length && generation < this.#generations[slot];
  }

  remove(handle: number): boolean {
    if (this.get(handle) === undefined) return false;
    // No % on large values (Note [No % on addresses]): the generation is divided out.
    const slot = handle - Math.floor(handle / GenerationalHandleTable.SLOTS) * GenerationalHandleTable.SLOTS;
    this.#slots[slot] = undefined;
    this.#size--;
    if (++this.#generations[slot] <= GenerationalHandleTable.#MAX_GENERATION) this.#free.push(slot);
    return true;
  }

  *values(): IterableIterator<V> {
    for (const v of this.#slots) if (v !== undefined) yield v;
  }

  /** Live (handle, value) pairs, in slot order. */
  *entries(): IterableIterator<[number, V]> {
    for (let slot = 1; slot < this.#slots.length; slot++) {
      const v = this.#slots[slot];
      if (v !== undefined) yield [this.#generations[slot] * GenerationalHandleTable.SLOTS + slot, v];
    }
  }
}
