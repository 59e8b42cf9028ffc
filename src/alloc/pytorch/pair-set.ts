/**
 * A sorted set of values keyed by a pair of integers (a, b), ordered by a
 * then b: the shape of PyTorch's `std::set<Block*>` pools, keyed by (size,
 * address) for free blocks and by (address, 0) for unmapped ones.
 *
 * Note [Chunked pair set]: as util/ordered-map.ts does for single keys,
 * entries live in sorted chunks of at most CAPACITY, with each chunk's first
 * key above them, so a lookup is two short binary searches and an insert or
 * delete moves at most one chunk's entries. A caching allocator looks a block
 * up and then removes exactly that block (best fit), so the position of the
 * last successful lookup is kept (the finger) and a delete of that key skips
 * both searches. Expandable segments' best fit looks at the next block too
 * (E6) before removing the first: `higher` from the finger steps to the next
 * entry without a search, and the position it left is kept as well, until
 * the set changes.
 */
/**
 * A caching allocator's free sets are short (tens of blocks per stream on
 * the committed traces and the million-event benchmark), and an insert or
 * delete moves half a chunk on average: a short chunk moves little, and a
 * long set only adds a step or two to the search of chunks. Measured with
 * the PyTorch model's replays (bench/advise.ts): 16 beat 64 and 8.
 */
const CAPACITY = 16;

class Chunk<V> {
  /** Keys interleaved: entry i is (keys[2i], keys[2i + 1]). */
  readonly keys = new Float64Array(2 * CAPACITY);
  readonly values: (V | undefined)[] = new Array(CAPACITY).fill(undefined);
  length = 0;
}

export class PairSet<V> {
  #chunks: Chunk<V>[] = [new Chunk<V>()];
  #size = 0;
  // The finger (Note [Chunked pair set]): valid while #fingerChunk is defined.
  #fingerChunk: Chunk<V> | undefined;
  #fingerCi = 0;
  #fingerIndex = 0;
  // The finger before `higher` stepped it on (Note [Chunked pair set]): valid while #behindChunk is defined.
  #behindChunk: Chunk<V> | undefined;
  #behindCi = 0;
  #behindIndex = 0;
  // Where #find left its answer, so the search returns no pair.
  #ci = 0;
  #i = 0;

  get size(): number {
    return this.#size;
  }

  /** Insert `value` under (a, b); the key must not be present. */
  insert(a: number, b: number, value: V): void {
    this.#fingerChunk = undefined;
    this.#behindChunk = undefined;
    let ci = this.#chunkFor(a, b);
    let c = this.#chunks[ci];
    if (c.length === CAPACITY) {
      this.#split(ci);
      if (compare(a, b, this.#chunks[ci + 1].keys[0], this.#chunks[ci + 1].keys[1]) >= 0) ci++;
      c = this.#chunks[ci];
    }
    const i = lowerBound(c, a, b);
    const keys = c.keys;
    const values = c.values;
    for (let j = c.length; j > i; j--) {
      keys[2 * j] = keys[2 * j - 2];
      keys[2 * j + 1] = keys[2 * j - 1];
      values[j] = values[j - 1];
    }
    keys[2 * i] = a;
    keys[2 * i + 1] = b;
    values[i] = value;
    c.length++;
    this.#size++;
  }

  /** Remove the entry (a, b); false when there is none. */
  delete(a: number, b: number): boolean {
    let c: Chunk<V>;
    let ci: number;
    let i: number;
    const f = this.#fingerChunk;
    const h = this.#behindChunk;
    if (f !== undefined && f.keys[2 * this.#fingerIndex] === a && f.keys[2 * this.#fingerIndex + 1] === b) {
      c = f;
      ci = this.#fingerCi;
      i = this.#fingerIndex;
    } else if (
      h !== undefined &&
      h.keys[2 * this.#behindIndex] === a &&
      h.keys[2 * this.#behindIndex + 1] === b
    ) {
      c = h;
      ci = this.#behindCi;
      i = this.#behindIndex;
    } else {
      ci = this.#chunkFor(a, b);
      c = this.#chunks[ci];
      i = lowerBound(c, a, b);
      if (i === c.length || c.keys[2 * i] !== a || c.keys[2 * i + 1] !== b) return false;
    }
    this.#fingerChunk = undefined;
    this.#behindChunk = undefined;
    const keys = c.keys;
    const values = c.values;
    const last = c.length - 1;
    for (let j = i; j < last; j++) {
      keys[2 * j] = keys[2 * j + 2];
      keys[2 * j + 1] = keys[2 * j + 3];
      values[j] = values[j + 1];
    }
    values[last] = undefined;
    c.length = last;
    this.#size--;
    if (last === 0 && this.#chunks.length > 1) this.#chunks.splice(ci, 1);
    return true;
  }

  /** The value with the least key >= (a, b). */
  ceiling(a: number, b: number): V | undefined {
    return this.#find(a, b, false) ? this.#hit() : undefined;
  }

  /** The value with the least key > (a, b). */
  higher(a: number, b: number): V | undefined {
    const f = this.#fingerChunk;
    if (f !== undefined && f.keys[2 * this.#fingerIndex] === a && f.keys[2 * this.#fingerIndex + 1] === b) {
      // From the finger: the next entry, in this chunk or the next non-empty one.
      let ci = this.#fingerCi;
      let i = this.#fingerIndex + 1;
      while (i === this.#chunks[ci].length) {
        if (++ci === this.#chunks.length) return undefined;
        i = 0;
      }
      this.#behindChunk = f;
      this.#behindCi = this.#fingerCi;
      this.#behindIndex = this.#fingerIndex;
      this.#point(ci, i);
      return this.#chunks[ci].values[i];
    }
    return this.#find(a, b, true) ? this.#hit() : undefined;
  }

  /** The value with the greatest key < (a, b). */
  lower(a: number, b: number): V | undefined {
    if (!this.#find(a, b, false)) {
      // Every key is below (a, b): the answer is the last one.
      return this.last();
    }
    let ci = this.#ci;
    let i = this.#i - 1;
    while (i < 0) {
      if (ci === 0) return undefined;
      i = this.#chunks[--ci].length - 1;
    }
    this.#point(ci, i);
    return this.#chunks[ci].values[i];
  }

  /** The value with the greatest key. */
  last(): V | undefined {
    for (let ci = this.#chunks.length - 1; ci >= 0; ci--) {
      const c = this.#chunks[ci];
      if (c.length > 0) {
        this.#point(ci, c.length - 1);
        return c.values[c.length - 1];
      }
    }
    return undefined;
  }

  /** The value with the least key. */
  first(): V | undefined {
    return this.ceiling(Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY);
  }

  /** Every value in key order, as a new array (callers may change the set while they walk it). */
  toArray(): V[] {
    const out: V[] = [];
    for (const c of this.#chunks) for (let i = 0; i < c.length; i++) out.push(c.values[i] as V);
    return out;
  }

  clear(): void {
    this.#chunks = [new Chunk<V>()];
    this.#size = 0;
    this.#fingerChunk = undefined;
    this.#behindChunk = undefined;
  }

  /** Position the search at the first key >= (a, b), or > it when `strict`; false if none. */
  #find(a: number, b: number, strict: boolean): boolean {
    let ci = this.#chunkFor(a, b);
    let c = this.#chunks[ci];
    let i = strict ? upperBound(c, a, b) : lowerBound(c, a, b);
    while (i === c.length) {
      if (++ci === this.#chunks.length) {
        this.#ci = ci;
        this.#i = 0;
        return false;
      }
      c = this.#chunks[ci];
      i = 0;
    }
    this.#ci = ci;
    this.#i = i;
    return true;
  }

  #hit(): V | undefined {
    this.#point(this.#ci, this.#i);
    return this.#chunks[this.#ci].values[this.#i];
  }

  #point(ci: number, i: number): void {
    this.#fingerChunk = this.#chunks[ci];
    this.#fingerCi = ci;
    this.#fingerIndex = i;
  }

  /** The last chunk whose first key is <= (a, b); 0 if none (chunk 0 may start above, or be empty). */
  #chunkFor(a: number, b: number): number {
    const chunks = this.#chunks;
    let lo = 1;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const k = chunks[mid].keys;
      if (compare(k[0], k[1], a, b) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  #split(ci: number): void {
    const c = this.#chunks[ci];
    const half = CAPACITY >> 1;
    const right = new Chunk<V>();
    right.keys.set(c.keys.subarray(2 * half, 2 * c.length));
    for (let j = half; j < c.length; j++) {
      right.values[j - half] = c.values[j];
      c.values[j] = undefined;
    }
    right.length = c.length - half;
    c.length = half;
    this.#chunks.splice(ci + 1, 0, right);
  }
}

function compare(a1: number, b1: number, a2: number, b2: number): number {
  return a1 !== a2 ? a1 - a2 : b1 - b2;
}

/** The first entry of `c` whose key is >= (a, b). */
function lowerBound<V>(c: Chunk<V>, a: number, b: number): number {
  const keys = c.keys;
  let lo = 0;
  let hi = c.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const ka = keys[2 * mid];
    if (ka < a || (ka === a && keys[2 * mid + 1] < b)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first entry of `c` whose key is > (a, b). */
function upperBound<V>(c: Chunk<V>, a: number, b: number): number {
  const keys = c.keys;
  let lo = 0;
  let hi = c.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const ka = keys[2 * mid];
    if (ka < a || (ka === a && keys[2 * mid + 1] <= b)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
