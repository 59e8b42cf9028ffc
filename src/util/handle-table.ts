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
