/**
 * A map from numbers (addresses) to int32 values, for walks over millions of
 * events (trace-plan.ts gives every address it meets its block).
 *
 * Note [A flat address map]: a JavaScript Map keyed by addresses boxes each
 * key above 2^31 (a heap number per set) and chases a pointer per probe; a
 * plan's walk of a 7-million-event trace spent most of its time there. This
 * one keeps keys and values in two typed arrays, open addressing with linear
 * probing, nothing allocated per entry (a delete shifts the entries after
 * it back, so no tombstones: Note [Backward-shift delete]). Keys compare as
 * Map compares them (SameValueZero: 0 and -0 are one key, NaN is one key).
 */

import { fillsGap } from './backward-shift.js';
import { IntMapValueError } from './errors.js';

/** What `get` gives for a key not in the map; no value may be it. */
export const ABSENT = -0x80000000;

const MIN_CAPACITY = 1024;
const TWO_32 = 2 ** 32;

export class IntMap {
  #keys: Float64Array;
  /** ABSENT marks a free slot. */
  #values: Int32Array;
  #mask: number;
  #size = 0;
  /** NaN, which equals no key by ===, has its own place. */
  #nan = ABSENT;

  constructor(expected = 0) {
    let capacity = MIN_CAPACITY;
    while (capacity < expected * 2) capacity *= 2;
    this.#keys = new Float64Array(capacity);
    this.#values = new Int32Array(capacity).fill(ABSENT);
    this.#mask = capacity - 1;
  }

  get size(): number {
    return this.#size + (this.#nan === ABSENT ? 0 : 1);
  }

  /** The value at `key`, or ABSENT. */
  get(key: number): number {
    if (Number.isNaN(key)) return this.#nan;
    const keys = this.#keys;
    const values = this.#values;
    const mask = this.#mask;
    for (let i = hashOf(key) & mask; ; i = (i + 1) & mask) {
      const v = values[i];
      if (v === ABSENT || keys[i] === key) return v;
    }
  }

  has(key: number): boolean {
    return this.get(key) !== ABSENT;
  }

  set(key: number, value: number): void {
    if (value === ABSENT || value !== (value | 0))
      throw new IntMapValueError(`IntMap value ${value} is not an int32 other than ABSENT`);
    if (Number.isNaN(key)) {
      this.#nan = value;
      return;
    }
    if (2 * (this.#size + 1) > this.#values.length) this.#grow();
    this.#put(key, value);
  }

  /** Remove `key`; whether it was there. */
  delete(key: number): boolean {
    if (Number.isNaN(key)) {
      const had = this.#nan !== ABSENT;
      this.#nan = ABSENT;
      return had;
    }
    const keys = this.#keys;
    const values = this.#values;
    const mask = this.#mask;
    let i = hashOf(key) & mask;
    for (; ; i = (i + 1) & mask) {
      if (values[i] === ABSENT) return false;
      if (keys[i] === key) break;
    }
    // Note [Backward-shift delete]
    for (let j = (i + 1) & mask; values[j] !== ABSENT; j = (j + 1) & mask) {
      if (!fillsGap(i, hashOf(keys[j]) & mask, j)) continue;
      keys[i] = keys[j];
      values[i] = values[j];
      i = j;
    }
    values[i] = ABSENT;
    this.#size--;
    return true;
  }

  #put(key: number, value: number): void {
    const keys = this.#keys;
    const values = this.#values;
    const mask = this.#mask;
    for (let i = hashOf(key) & mask; ; i = (i + 1) & mask) {
      if (values[i] === ABSENT) {
        keys[i] = key;
        values[i] = value;
        this.#size++;
        return;
      }
      if (keys[i] === key) {
        values[i] = value;
        return;
      }
    }
  }

  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    this.#keys = new Float64Array(keys.length * 2);
    this.#values = new Int32Array(values.length * 2).fill(ABSENT);
    this.#mask = this.#values.length - 1;
    this.#size = 0;
    for (let i = 0; i < values.length; i++) if (values[i] !== ABSENT) this.#put(keys[i], values[i]);
  }
}

/** A hash of a number's integer part, mixed so that aligned addresses (low bits zero) spread. */
function hashOf(key: number): number {
  const lo = key >>> 0;
  const hi = Math.floor(key / TWO_32) | 0;
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
