/**
 * An ordered map from integer keys (addresses) to values, for address-space
 * bookkeeping with up to millions of entries.
 *
 * Note [Chunked sorted arrays]: keys live in sorted chunks of at most
 * 2 * CHUNK entries, with one array of each chunk's first key above them. A
 * lookup is two binary searches; an insert or delete moves at most 2 * CHUNK
 * entries, so cost stays nearly flat from a thousand entries to millions,
 * without the pointer chasing (and per-node allocation) of a balanced tree.
 * Values are objects that know their own key, so lookups return the value
 * alone and allocate nothing.
 */
const CHUNK = 128;

export class OrderedMap<V> {
  #keys: number[][] = [];
  #values: V[][] = [];
  #firsts: number[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Index of the chunk that would hold `key`: the last whose first key is <= key (0 if none). */
  #chunkFor(key: number): number {
    const firsts = this.#firsts;
    let lo = 0;
    let hi = firsts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (firsts[mid] <= key) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  get(key: number): V | undefined {
    if (this.#size === 0) return undefined;
    const c = this.#chunkFor(key);
    const keys = this.#keys[c];
    const i = lowerBound(keys, key);
    return i < keys.length && keys[i] === key ? this.#values[c][i] : undefined;
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  set(key: number, value: V): void {
    if (this.#size === 0) {
      this.#keys.push([key]);
      this.#values.push([value]);
      this.#firsts.push(key);
      this.#size = 1;
      return;
    }
    const c = this.#chunkFor(key);
    const keys = this.#keys[c];
    const values = this.#values[c];
    const i = lowerBound(keys, key);
    if (i < keys.length && keys[i] === key) {
      values[i] = value;
      return;
    }
    if (i === keys.length) {
      keys.push(key);
      values.push(value);
    } else {
      keys.splice(i, 0, key);
      values.splice(i, 0, value);
    }
    if (i === 0) this.#firsts[c] = key;
    this.#size++;
    if (keys.length > 2 * CHUNK) {
      this.#keys.splice(c + 1, 0, keys.splice(CHUNK));
      this.#values.splice(c + 1, 0, values.splice(CHUNK));
      this.#firsts.splice(c + 1, 0, this.#keys[c + 1][0]);
    }
  }

  delete(key: number): boolean {
    if (this.#size === 0) return false;
    const c = this.#chunkFor(key);
    const keys = this.#keys[c];
    const i = lowerBound(keys, key);
    if (i === keys.length || keys[i] !== key) return false;
    if (i === keys.length - 1) {
      keys.pop();
      this.#values[c].pop();
    } else {
      keys.splice(i, 1);
      this.#values[c].splice(i, 1);
    }
    this.#size--;
    if (keys.length === 0) {
      this.#keys.splice(c, 1);
      this.#values.splice(c, 1);
      this.#firsts.splice(c, 1);
    } else if (i === 0) {
      this.#firsts[c] = keys[0];
    }
    return true;
  }

  /** The value with the greatest key <= `key`. */
  floor(key: number): V | undefined {
    if (this.#size === 0) return undefined;
    const c = this.#chunkFor(key);
    const i = upperBound(this.#keys[c], key) - 1;
    return i >= 0 ? this.#values[c][i] : undefined;
  }

  /** The value with the least key >= `key`. */
  ceiling(key: number): V | undefined {
    if (this.#size === 0) return undefined;
    let c = this.#chunkFor(key);
    let i = lowerBound(this.#keys[c], key);
    if (i === this.#keys[c].length) {
      c++;
      i = 0;
      if (c === this.#keys.length) return undefined;
    }
    return this.#values[c][i];
  }

  /** The value with the least key > `key`. */
  higher(key: number): V | undefined {
    return key === Number.MAX_SAFE_INTEGER ? undefined : this.ceiling(key + 1);
  }

  /** The value with the least key. */
  first(): V | undefined {
    return this.#size === 0 ? undefined : this.#values[0][0];
  }

  *values(): IterableIterator<V> {
    for (const chunk of this.#values) yield* chunk.slice();
  }

  clear(): void {
    this.#keys = [];
    this.#values = [];
    this.#firsts = [];
    this.#size = 0;
  }
}

function lowerBound(keys: number[], key: number): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function upperBound(keys: number[], key: number): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keys[mid] <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
