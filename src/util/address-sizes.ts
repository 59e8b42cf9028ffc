/**
 * A set of address ranges keyed by start address, each with its size: what a
 * backend holds (reservations, mappings) so that dispose can give it back.
 *
 * Note [No Map on the cycle]: a Map of numbers that gains and loses one key
 * per call, as the VMM cycle does, fills its entry area with deleted entries
 * and rebuilds it every few calls: an allocation and a call into V8's
 * runtime (about 55 ns per set and delete here, warm; this table 13 ns). Beside a real driver
 * call, which leaves the caches cold, such a call into the runtime costs
 * several times that. This table is open addressing over one typed array of
 * (key, size) pairs: a set or delete is a probe and a store, and only growth
 * allocates. Keys are non-negative integers below 2^53 (addresses).
 */
const EMPTY = -1;
/** A deleted slot: probes pass over it, sets reuse it. */
const GONE = -2;
const TWO_32 = 4294967296;

export class AddressSizes {
  /** Slot i is pairs[2i] (the key, or EMPTY / GONE) and pairs[2i + 1] (its size). */
  #pairs: Float64Array;
  #mask: number;
  #size = 0;
  /** Slots holding GONE. */
  #gone = 0;

  constructor(capacity = 16) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(8, capacity * 2)));
    this.#pairs = new Float64Array(slots * 2).fill(EMPTY);
    this.#mask = slots - 1;
  }

  get size(): number {
    return this.#size;
  }

  /**
   * The first slot to probe for `key`: its two 32-bit words combined, then mixed so that every bit moves
   * the low bits kept (murmur3's finaliser): addresses share their low bits, 2 MiB-aligned ones 21 of them.
   */
  #home(key: number): number {
    let h = (key >>> 0) ^ Math.imul((key / TWO_32) >>> 0, 0x9e3779b1);
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return (h ^ (h >>> 16)) & this.#mask;
  }

  /** The slot holding `key`, or -1. */
  #find(key: number): number {
    const pairs = this.#pairs;
    for (let i = this.#home(key); ; i = (i + 1) & this.#mask) {
      const k = pairs[2 * i];
      if (k === key) return i;
      if (k === EMPTY) return -1;
    }
  }

  get(key: number): number | undefined {
    const i = this.#find(key);
    return i < 0 ? undefined : this.#pairs[2 * i + 1];
  }

  has(key: number): boolean {
    return this.#find(key) >= 0;
  }

  set(key: number, size: number): void {
    const pairs = this.#pairs;
    let reuse = -1;
    for (let i = this.#home(key); ; i = (i + 1) & this.#mask) {
      const k = pairs[2 * i];
      if (k === key) {
        pairs[2 * i + 1] = size;
        return;
      }
      if (k === GONE && reuse < 0) reuse = i;
      else if (k === EMPTY) {
        if (reuse >= 0) this.#gone--;
        const slot = reuse >= 0 ? reuse : i;
        pairs[2 * slot] = key;
        pairs[2 * slot + 1] = size;
        this.#size++;
        // At most half the slots in use or deleted, so every probe meets an EMPTY soon.
        if (2 * (this.#size + this.#gone) > this.#mask + 1) this.#rebuild();
        return;
      }
    }
  }

  delete(key: number): boolean {
    return this.take(key) >= 0;
  }

  /** Delete `key`, answering its size (-1 if absent): a get and a delete in one probe. */
  take(key: number): number {
    const i = this.#find(key);
    if (i < 0) return -1;
    const pairs = this.#pairs;
    const size = pairs[2 * i + 1];
    // A slot whose successor is EMPTY ends every probe through it: it can be EMPTY itself.
    if (pairs[2 * ((i + 1) & this.#mask)] === EMPTY) pairs[2 * i] = EMPTY;
    else {
      pairs[2 * i] = GONE;
      this.#gone++;
    }
    this.#size--;
    return size;
  }

  clear(): void {
    this.#pairs.fill(EMPTY);
    this.#size = 0;
    this.#gone = 0;
  }

  /** Every (key, size), in no particular order; a copy, so the caller may change the table meanwhile. */
  entries(): [number, number][] {
    const out: [number, number][] = [];
    const pairs = this.#pairs;
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] >= 0) out.push([pairs[i], pairs[i + 1]]);
    return out;
  }

  /** Rehash into a table sized for what is live: twice the slots when over a quarter are live. */
  #rebuild(): void {
    const old = this.#pairs;
    const slots = this.#mask + 1;
    const next = 4 * this.#size > slots ? slots * 2 : slots;
    this.#pairs = new Float64Array(next * 2).fill(EMPTY);
    this.#mask = next - 1;
    this.#size = 0;
    this.#gone = 0;
    for (let i = 0; i < old.length; i += 2) if (old[i] >= 0) this.set(old[i], old[i + 1]);
  }
}
