/**
 * The unpickler's memo (MEMOIZE, BINPUT, LONG_BINPUT store; BINGET,
 * LONG_BINGET read), and the containers a reader with a shape fills through
 * calls instead of building (Note [Snapshot-shaped reading] in reader.ts).
 *
 * Note [A compact memo]: Python's pickler memoizes every dict, list and
 * string it writes, so a snapshot of ten million events has tens of millions
 * of memo entries, most of them trace entries that no one refers to again.
 * The memo is therefore an Int32Array of codes, one per index, and the values
 * live in a side table: a value the memo keeps has an owned slot (strings one
 * slot per distinct content, since PyTorch writes the same 'N/A' as a new
 * string for every event), a streamed container is "not kept" (its code says
 * so, and nothing of it is held), a container still being filled is
 * "pending" (held in a slot that is freed, and used again, once its owner
 * settles it), and a value many entries share (an interned stack) is one
 * shared slot. Four bytes an entry, whatever it stood for.
 */
import type { PickleValue } from './value.js';

const EMPTY = -1;
const NOT_KEPT = -2;
/** Codes at or below this one name a slot (a pending or a shared value): SLOT - code is its index. */
const SLOT = -3;

/** What `Memo.get` gives for an entry whose container was streamed and not kept. */
export const STREAMED: unique symbol = Symbol('streamed');

/**
 * A container that a shape fills itself. The reader calls `memoized` when
 * the pickle memoizes it; by default the memo keeps nothing of it.
 */
export abstract class Streamed {
  memoized(index: number, memo: Memo): void {
    memo.putNotKept(index);
  }

  /** What a message calls it ("a list of 3", "a dict"). */
  abstract describe(): string;
}

/** A list that takes its items through `append` (APPEND, APPENDS). */
export abstract class ListSink extends Streamed {
  abstract append(value: StackValue): void;

  /** APPENDS: items[from..to) in order. */
  appendAll(items: readonly StackValue[], from: number, to: number): void {
    for (let i = from; i < to; i++) this.append(items[i]);
  }
  /** How many items it has taken. */
  abstract get length(): number;

  describe(): string {
    return `a list of ${this.length}`;
  }
}

/** A dict that takes its items through `set` (SETITEM, SETITEMS). */
export abstract class DictSink extends Streamed {
  abstract set(key: StackValue, value: StackValue): void;

  describe(): string {
    return 'a dict';
  }
}

/** A value as the reader's stack and memo hold it: plain data, or a shape's own. */
export type StackValue = PickleValue | Streamed;

export class Memo {
  /**
   * How far past the entries set so far an index may reach. Picklers number
   * entries in order; a gap is legal but a wide one is a bad length field
   * (a LONG_BINPUT of 2^32 - 1 would make a 16 GiB memo), so the memo grows
   * with what was read, not with what an index claims.
   */
  static readonly REACH = 1 << 16;
  #codes = new Int32Array(1024).fill(EMPTY);
  /** Dicts that became Maps (a key that is no string), and their Maps: see `replace`. */
  #replaced: Map<StackValue, StackValue> | undefined;
  readonly #values: StackValue[] = [];
  readonly #strings = new Map<string, number>();
  #lastString: string | undefined;
  #lastSlot = -1;
  /** Pending and shared values; freed pending slots are listed in #free. */
  readonly #slots: StackValue[] = [];
  readonly #free: number[] = [];
  /** Which slots hold pending values (freed when the entry is set again). */
  #pending = new Uint8Array(64);
  /** Entries set: the index the next MEMOIZE uses. */
  count = 0;
  /** Entries set again (to a new value): what a cache of entries' values checks to stay true. */
  overwrites = 0;

  /** Store `value` at `index`: a streamed container decides how (see Streamed). */
  put(index: number, value: StackValue): void {
    if (value instanceof Streamed) value.memoized(index, this);
    else this.putKept(index, value);
  }

  /** Keep `value`; one slot per distinct string. */
  putKept(index: number, value: StackValue): void {
    let slot: number | undefined;
    if (typeof value === 'string') {
      // The same string again (PyTorch's 'N/A' for every event) skips the lookup.
      if (value === this.#lastString) slot = this.#lastSlot;
      else {
        slot = this.#strings.get(value);
        if (slot === undefined) {
          slot = this.#values.push(value) - 1;
          this.#strings.set(value, slot);
        }
        this.#lastString = value;
        this.#lastSlot = slot;
      }
    } else slot = this.#values.push(value) - 1;
    this.#set(index, slot);
  }

  putNotKept(index: number): void {
    this.#set(index, NOT_KEPT);
  }

  /** Hold `value` until `putShared` replaces it (a container its owner will settle). */
  putPending(index: number, value: StackValue): void {
    const slot = this.#slot(value);
    if (slot >= this.#pending.length) {
      const grown = new Uint8Array(this.#pending.length * 2);
      grown.set(this.#pending);
      this.#pending = grown;
    }
    this.#pending[slot] = 1;
    this.#set(index, SLOT - slot);
  }

  /** A handle for a value that many entries will share. */
  share(value: StackValue): number {
    return this.#slot(value);
  }

  putShared(index: number, handle: number): void {
    this.#set(index, SLOT - handle);
  }

  #slot(value: StackValue): number {
    const free = this.#free.pop();
    if (free === undefined) return this.#slots.push(value) - 1;
    this.#slots[free] = value;
    return free;
  }

  /** Whether entry `index` was set. */
  has(index: number): boolean {
    return index < this.#codes.length && this.#codes[index] !== EMPTY;
  }

  /** The value at `index`: undefined when the memo has none, STREAMED when it was not kept. */
  get(index: number): StackValue | undefined | typeof STREAMED {
    if (index >= this.#codes.length) return undefined;
    const code = this.#codes[index];
    const v =
      code >= 0
        ? this.#values[code]
        : code === EMPTY
          ? undefined
          : code === NOT_KEPT
            ? STREAMED
            : this.#slots[SLOT - code];
    if (this.#replaced === undefined || typeof v !== 'object' || v === null) return v;
    return this.#replaced.get(v) ?? v;
  }

  /** From now on, entries holding `old` give `next` (a dict that became a Map). */
  replace(old: StackValue, next: StackValue): void {
    // Looked up as entries are read, not rewritten in place: a rewrite would scan the whole memo per dict.
    (this.#replaced ??= new Map()).set(old, next);
  }

  #set(index: number, code: number): void {
    let codes = this.#codes;
    if (index >= codes.length) {
      let size = codes.length * 2;
      while (size <= index) size *= 2;
      const grown = new Int32Array(size).fill(EMPTY);
      grown.set(codes);
      this.#codes = codes = grown;
    }
    const was = codes[index];
    if (was === EMPTY) this.count++;
    else this.overwrites++;
    if (was <= SLOT && this.#pending[SLOT - was] === 1) {
      // A pending value is held by this one entry: its slot is free again.
      const slot = SLOT - was;
      this.#pending[slot] = 0;
      this.#slots[slot] = null;
      this.#free.push(slot);
    }
    codes[index] = code;
  }
}
