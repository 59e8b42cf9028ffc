/**
 * An ordered map from integer keys (addresses) to values, each key with an
 * optional end (for ranges [key, end)), for address-space bookkeeping with up
 * to millions of entries.
 *
 * Note [Chunked sorted arrays]: keys live in sorted chunks of at most
 * CAPACITY entries, with one array of each chunk's first key above them. A
 * lookup is two binary searches; an insert or delete moves at most CAPACITY
 * entries of one chunk, so cost stays nearly flat from a thousand entries to
 * millions, without the pointer chasing and per-node allocation of a tree.
 * A chunk is one typed array of (key, end, value index) triples, the values
 * themselves in a slot table, so that move is a loop over numbers: moving
 * object references instead would pay a GC write barrier per element. Range
 * queries (containing, intersects) read only the chunk, never the value
 * objects of neighbouring ranges: with a million ranges those objects are
 * cold, and one cache miss each would dominate the cost.
 */
const CAPACITY = 64;

/** Entry i is data[3i] (key), data[3i + 1] (end), data[3i + 2] (index of its value in the slot table). */
const STRIDE = 3;

class Chunk {
  /** Entries interleaved, so the probe that finds a key has its end and value index in the same cache line. */
  readonly data = new Float64Array(CAPACITY * STRIDE);
  length = 0;
}

export class OrderedMap<V> {
  #chunks: Chunk[] = [new Chunk()];
  /** First key of each chunk (the first chunk's entry is never compared). */
  #firsts: number[] = [0];
  readonly #values: (V | undefined)[] = [];
  readonly #freeSlots: number[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Index of the chunk that would hold `key`: the last whose first key is <= key (0 if none). */
  #chunkFor(key: number): number {
    const firsts = this.#firsts;
    // The last chunk whose first key is <= key (the first chunk's is never compared).
    return firsts.length === 1 ? 0 : Math.max(0, searchFrom(firsts, firsts.length, key + 1) - 1);
  }

  /**
   * Note [Finger]: the position of the key last set or looked up exactly is
   * kept until the next change. Address-space code asks about the address
   * it just touched again and again (map it, set its access, unmap it), and
   * a hit skips both binary searches.
   */
  #fingerKey = Number.NaN;
  #fingerChunk: Chunk | undefined;
  #fingerIndex = 0;
  #fingerCi = 0;

  #point(ci: number, c: Chunk, i: number, key: number): void {
    this.#fingerCi = ci;
    this.#fingerChunk = c;
    this.#fingerIndex = i;
    this.#fingerKey = key;
  }

  get(key: number): V | undefined {
    if (key === this.#fingerKey) return this.#values[this.#fingerChunk!.data[STRIDE * this.#fingerIndex + 2]];
    const c = this.#chunks[this.#chunkFor(key)];
    const i = lowerBound(c, key);
    return i < c.length && c.data[STRIDE * i] === key ? this.#values[c.data[STRIDE * i + 2]] : undefined;
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  /** Set the value at `key`; `end` (default: key) makes it the range [key, end) for range queries. */
  set(key: number, value: V, end = key): void {
    const ci = this.#chunkFor(key);
    const c = this.#chunks[ci];
    const i = lowerBound(c, key);
    if (i < c.length && c.data[STRIDE * i] === key) {
      this.#values[c.data[STRIDE * i + 2]] = value;
      c.data[STRIDE * i + 1] = end;
      this.#point(ci, c, i, key);
      return;
    }
    const slot = this.#freeSlots.pop() ?? this.#values.length;
    this.#values[slot] = value;
    if (c.length === CAPACITY) {
      this.#fingerKey = Number.NaN;
      this.#split(ci);
      this.set(key, value, end);
      // The recursive set took a slot of its own.
      this.#values[slot] = undefined;
      this.#freeSlots.push(slot);
      return;
    }
    shiftRight(c, i);
    c.data[STRIDE * i] = key;
    c.data[STRIDE * i + 1] = end;
    c.data[STRIDE * i + 2] = slot;
    c.length++;
    if (i === 0) this.#firsts[ci] = key;
    this.#size++;
    this.#point(ci, c, i, key);
  }

  #split(ci: number): void {
    const c = this.#chunks[ci];
    const half = CAPACITY >> 1;
    const right = new Chunk();
    right.data.set(c.data.subarray(STRIDE * half, STRIDE * c.length));
    right.length = c.length - half;
    c.length = half;
    this.#chunks.splice(ci + 1, 0, right);
    this.#firsts.splice(ci + 1, 0, right.data[0]);
  }

  delete(key: number): boolean {
    const hit = key === this.#fingerKey;
    const ci = hit ? this.#fingerCi : this.#chunkFor(key);
    const c = hit ? this.#fingerChunk! : this.#chunks[ci];
    const i = hit ? this.#fingerIndex : lowerBound(c, key);
    if (i === c.length || c.data[STRIDE * i] !== key) return false;
    this.#fingerKey = Number.NaN;
    // An integer, so the free list stays an array of small integers (a double's would box each pop).
    const slot = c.data[STRIDE * i + 2] | 0;
    this.#values[slot] = undefined;
    this.#freeSlots.push(slot);
    shiftLeft(c, i);
    c.length--;
    this.#size--;
    if (c.length === 0 && this.#chunks.length > 1) {
      // An emptied chunk goes, unless it is the only one.
      this.#chunks.splice(ci, 1);
      this.#firsts.splice(ci, 1);
    } else if (i === 0 && c.length > 0) {
      this.#firsts[ci] = c.data[0];
    }
    return true;
  }

  /** The value with the greatest key <= `key`. */
  floor(key: number): V | undefined {
    const c = this.#floorChunk(key);
    return c === undefined ? undefined : this.#values[c.data[STRIDE * this.#at + 2]];
  }

  /** The value of the range [key, end) that contains `point`. */
  containing(point: number): V | undefined {
    const c = this.#floorChunk(point);
    return c !== undefined && point < c.data[STRIDE * this.#at + 1]
      ? this.#values[c.data[STRIDE * this.#at + 2]]
      : undefined;
  }

  /** Whether any range [key, end) intersects [start, end). */
  intersects(start: number, end: number): boolean {
    const c = this.#floorChunk(end - 1);
    return c !== undefined && c.data[STRIDE * this.#at + 1] > start;
  }

  /** Position found by #floorChunk (saves allocating a pair). */
  #at = 0;

  /** The chunk holding the greatest key <= `key`, with its index in #at; undefined if none. */
  #floorChunk(key: number): Chunk | undefined {
    if (key === this.#fingerKey) {
      this.#at = this.#fingerIndex;
      return this.#fingerChunk;
    }
    let ci = this.#chunkFor(key);
    let c = this.#chunks[ci];
    let i = upperBound(c, key) - 1;
    // Only the first chunk can be empty or start above `key`; step back over an empty one.
    while (i < 0) {
      if (ci === 0) return undefined;
      c = this.#chunks[--ci];
      i = c.length - 1;
    }
    this.#at = i;
    return c;
  }

  /** The value with the least key >= `key`. */
  ceiling(key: number): V | undefined {
    let ci = this.#chunkFor(key);
    let c = this.#chunks[ci];
    let i = lowerBound(c, key);
    while (i === c.length) {
      if (++ci === this.#chunks.length) return undefined;
      c = this.#chunks[ci];
      i = 0;
    }
    return this.#values[c.data[STRIDE * i + 2]];
  }

  /** The value with the least key > `key`. */
  higher(key: number): V | undefined {
    let ci = this.#chunkFor(key);
    let c = this.#chunks[ci];
    let i = upperBound(c, key);
    while (i === c.length) {
      if (++ci === this.#chunks.length) return undefined;
      c = this.#chunks[ci];
      i = 0;
    }
    return this.#values[c.data[STRIDE * i + 2]];
  }

  /** The value with the least key. */
  first(): V | undefined {
    for (const c of this.#chunks) if (c.length > 0) return this.#values[c.data[2]];
    return undefined;
  }

  /** Values in key order (a snapshot: the map may change while it is iterated). */
  *values(): IterableIterator<V> {
    const out: V[] = [];
    for (const c of this.#chunks)
      for (let i = 0; i < c.length; i++) out.push(this.#values[c.data[STRIDE * i + 2]] as V);
    yield* out;
  }

  clear(): void {
    this.#fingerKey = Number.NaN;
    this.#chunks = [new Chunk()];
    this.#firsts = [0];
    this.#values.length = 0;
    this.#freeSlots.length = 0;
    this.#size = 0;
  }
}

/**
 * Open a gap at entry i. A plain loop: TypedArray.prototype.copyWithin's call
 * overhead exceeds the work at these sizes, and most moves are a few entries.
 */
function shiftRight(c: Chunk, i: number): void {
  const data = c.data;
  for (let j = STRIDE * c.length + STRIDE - 1, stop = STRIDE * i + STRIDE; j >= stop; j--)
    data[j] = data[j - STRIDE];
}

/** Close the gap at entry i. */
function shiftLeft(c: Chunk, i: number): void {
  const data = c.data;
  for (let j = STRIDE * i, stop = STRIDE * (c.length - 1); j < stop; j++) data[j] = data[j + STRIDE];
}

function lowerBound(c: Chunk, key: number): number {
  return searchFrom(c.data, c.length, key, STRIDE);
}

/** Keys are integers, so the first key > key is the first key >= key + 1. */
function upperBound(c: Chunk, key: number): number {
  return searchFrom(c.data, c.length, key + 1, STRIDE);
}

/**
 * The first index in sorted `keys[0, length)` whose key is >= `key`.
 *
 * Note [Interpolation search]: with a million ranges the chunks are cold, and
 * each probe of a binary search is a cache miss. Addresses are spread fairly
 * evenly, so the first probe goes where the key would sit if they were, and
 * the search gallops outwards from there: two or three probes for evenly
 * spread keys, never more than about twice a binary search's for any others.
 */
function searchFrom(keys: ArrayLike<number>, length: number, key: number, stride = 1): number {
  if (length === 0 || key <= keys[0]) return 0;
  const first = keys[0];
  const last = keys[stride * (length - 1)];
  if (key > last) return length;
  // Here keys[0] < key <= last, so the answer is in [1, length - 1].
  let g = Math.floor(((key - first) / (last - first)) * (length - 1));
  if (g < 1) g = 1;
  let lo: number;
  let hi: number;
  if (keys[stride * g] < key) {
    // Gallop right: the answer is after g.
    let step = 1;
    lo = g + 1;
    while (lo + step - 1 < length - 1 && keys[stride * (lo + step - 1)] < key) step <<= 1;
    hi = Math.min(lo + step - 1, length - 1);
  } else {
    // Gallop left: the answer is g or before.
    let step = 1;
    hi = g;
    while (hi - step >= 1 && keys[stride * (hi - step)] >= key) step <<= 1;
    lo = Math.max(hi - step, 1);
  }
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keys[stride * mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
