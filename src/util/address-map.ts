/**
 * A hash map from addresses (non-negative integers up to 2^53) to values,
 * for lookups by exact address only (no order): a caching allocator's
 * handed-out blocks, which every free looks up and removes.
 *
 * Note [Address hash map]: a JS Map keyed by addresses past 2^31 boxes each
 * key as a heap number and hashes it as a double; this table keeps the keys
 * in a Float64Array, probes linearly from a multiplicative hash of the
 * address's 512-byte unit (allocators' addresses are multiples of 512, so
 * the low bits say nothing), and removes by shifting the entries after a
 * removed one back (no tombstones: Note [Backward-shift delete]), so a
 * lookup never walks past more than the entries that collide with it. At
 * most half full: it doubles first.
 */
import { fillsGap } from './backward-shift.js';

const EMPTY = -1;
const MIN_CAPACITY = 64;

export class AddressMap<V> {
  #keys = new Float64Array(MIN_CAPACITY).fill(EMPTY);
  #values: (V | undefined)[] = new Array(MIN_CAPACITY).fill(undefined);
  #mask = MIN_CAPACITY - 1;
  /** 32 less log2 of the capacity: the hash's top bits are the slot. */
  #shift = 32 - Math.log2(MIN_CAPACITY);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(key: number): V | undefined {
    const keys = this.#keys;
    const mask = this.#mask;
    for (let i = home(key, this.#shift); ; i = (i + 1) & mask) {
      const k = keys[i];
      if (k === key) return this.#values[i];
      if (k === EMPTY) return undefined;
    }
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  set(key: number, value: V): void {
    if (2 * (this.#size + 1) > this.#keys.length) this.#grow();
    const keys = this.#keys;
    const mask = this.#mask;
    for (let i = home(key, this.#shift); ; i = (i + 1) & mask) {
      const k = keys[i];
      if (k === key) {
        this.#values[i] = value;
        return;
      }
      if (k === EMPTY) {
        keys[i] = key;
        this.#values[i] = value;
        this.#size++;
        return;
      }
    }
  }

  delete(key: number): boolean {
    const keys = this.#keys;
    const values = this.#values;
    const mask = this.#mask;
    let i = home(key, this.#shift);
    for (; ; i = (i + 1) & mask) {
      const k = keys[i];
      if (k === key) break;
      if (k === EMPTY) return false;
    }
    // Note [Backward-shift delete]
    for (let j = (i + 1) & mask; keys[j] !== EMPTY; j = (j + 1) & mask) {
      if (!fillsGap(i, home(keys[j], this.#shift), j)) continue;
      keys[i] = keys[j];
      values[i] = values[j];
      i = j;
    }
    keys[i] = EMPTY;
    values[i] = undefined;
    this.#size--;
    return true;
  }

  /** The values, in no particular order. */
  values(): V[] {
    const out: V[] = [];
    const keys = this.#keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) out.push(this.#values[i] as V);
    return out;
  }

  clear(): void {
    this.#keys = new Float64Array(MIN_CAPACITY).fill(EMPTY);
    this.#values = new Array(MIN_CAPACITY).fill(undefined);
    this.#mask = MIN_CAPACITY - 1;
    this.#shift = 32 - Math.log2(MIN_CAPACITY);
    this.#size = 0;
  }

  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    const capacity = 2 * keys.length;
    this.#keys = new Float64Array(capacity).fill(EMPTY);
    this.#values = new Array(capacity).fill(undefined);
    this.#mask = capacity - 1;
    this.#shift--;
    this.#size = 0;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) this.set(keys[i], values[i] as V);
  }
}

/**
 * Where `key` is looked for first: the top bits of a multiplicative hash of
 * its 512-byte unit (Note [Address hash map]; the top bits, as segments'
 * addresses share their low ones).
 */
function home(key: number, shift: number): number {
  return Math.imul((key / 512) >>> 0, 0x9e3779b1) >>> shift;
}
