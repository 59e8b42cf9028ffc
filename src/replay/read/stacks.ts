/**
 * A snapshot's stacks, interned (Note [Interned stacks]).
 *
 * Note [Interned stacks]: PyTorch records a stack (a list of frame dicts,
 * innermost first) with each trace entry, segment and block. Its pickle
 * shares what PyTorch's symbolizer shared: one dict per distinct frame, one
 * list per captured traceback (an alloc's list is its block's list, and a
 * free_completed may reuse its free_requested's). Content-equal stacks still
 * come as separate lists (every call of the same line captures anew), so a
 * long job's file holds millions of lists but a few thousand distinct stacks.
 * The table keeps each distinct frame once (its strings interned too) and
 * each distinct stack once, as frame indices; an event holds only the stack's
 * index. Lists are recognised by identity first (a shared list is interned
 * once), then by content (a hash of the frame indices, then a comparison).
 * A stack's index is the order it was first met, reading trace entries in
 * device order and then segments, so every way of reading a snapshot numbers
 * them alike.
 */
import { DictSink, isPickleDict, ListSink, type Memo, type StackValue, Streamed } from './pickle/index.js';
import { fieldName, integer, wrongType } from './snapshot-checks.js';

/** One frame of a stack, as PyTorch's symbolizer gives it. */
export interface SnapshotFrame {
  readonly filename: string;
  readonly name: string;
  /**
   * A bigint beyond 2^53: real snapshots carry 2^64 - 1 (a missing line, -1,
   * written unsigned, as on a Python 3.13 frame of fixture cs336-ctx128-
   * forward). No allocator reads a line, so it is kept as it came.
   */
  readonly line: number | bigint;
}

/** A stack's hash: stackHash folded over its frame indices from STACK_HASH_SEED (FNV-1a on whole indices). */
export const STACK_HASH_SEED = 0x811c9dc5;

export function stackHash(h: number, frame: number): number {
  return Math.imul(h ^ frame, 0x01000193);
}

/** Not interned yet. */
const UNSET = -2;

/** An interned stack, as a memo entry of a settled frames list gives it back (-1: no frames). */
export class StackRef extends Streamed {
  #memo: Memo | undefined;
  #handle = -1;

  constructor(
    readonly index: number,
    readonly length: number,
  ) {
    super();
  }

  override memoized(index: number, memo: Memo): void {
    memo.putShared(index, this.handle(memo));
  }

  /** Its handle in `memo`'s shared values (one memo per reading). */
  handle(memo: Memo): number {
    if (this.#memo !== memo) {
      this.#memo = memo;
      this.#handle = memo.share(this);
    }
    return this.#handle;
  }

  describe(): string {
    return `a list of ${this.length}`;
  }
}

/**
 * A 'frames' list as the streaming reader fills it: its items until the
 * entry, block or segment that holds it settles it into a stack index; then
 * the memo entries that named it give the shared StackRef instead.
 */
export class FramesList extends ListSink {
  /** Whether it was settled into a stack (then `stack` is its index). */
  get settled(): boolean {
    return this.stack !== UNSET;
  }

  items: StackValue[] = [];
  stack = UNSET;
  #memo: Memo | undefined;
  #indices: number[] | undefined;
  #length = 0;

  append(value: StackValue): void {
    this.items.push(value);
  }

  override appendAll(items: readonly StackValue[], from: number, to: number): void {
    if (this.items.length === 0) this.items = items.slice(from, to);
    else for (let i = from; i < to; i++) this.items.push(items[i]);
  }

  get length(): number {
    return this.stack === UNSET ? this.items.length : this.#length;
  }

  override memoized(index: number, memo: Memo): void {
    if (this.stack !== UNSET) {
      memo.putKept(index, this);
      return;
    }
    memo.putPending(index, this);
    this.#memo = memo;
    (this.#indices ??= []).push(index);
  }

  settle(ref: StackRef): void {
    this.stack = ref.index;
    this.#length = this.items.length;
    this.items = [];
    const memo = this.#memo;
    if (memo === undefined || this.#indices === undefined) return;
    for (const index of this.#indices) memo.putShared(index, ref.handle(memo));
    this.#indices = undefined;
  }
}

/** A frame dict as the streaming reader fills it; the memo keeps it (frames are shared). */
export class FrameRecord extends DictSink {
  filename: StackValue | undefined;
  name: StackValue | undefined;
  line: StackValue | undefined;
  /** It had a key that is not a string: a plain reading would make it a Map, which is no frame. */
  odd = false;
  index = -1;

  set(key: StackValue, value: StackValue): void {
    if (key === 'filename') this.filename = value;
    else if (key === 'name') this.name = value;
    else if (key === 'line') this.line = value;
    else if (typeof key !== 'string') this.odd = true;
  }

  override memoized(index: number, memo: Memo): void {
    memo.putKept(index, this);
  }
}

export class StackTable {
  readonly #frames: SnapshotFrame[] = [];
  readonly #frameOf = new Map<object, number>();
  readonly #frameByContent = new Map<string, number>();
  readonly #strings = new Map<string, string>();
  readonly #listOf = new Map<object, number>();
  /** Stack s is #flat[#start[s] .. #start[s + 1]). */
  #flat = new Int32Array(4096);
  #start = new Int32Array(256);
  #count = 0;
  /** First stack of each hash, then the next one of the same hash. */
  readonly #bucket = new Map<number, number>();
  #next = new Int32Array(256);
  #scratch = new Int32Array(64);
  /** StackRef of stack s at s + 1 (-1, no frames, at 0). */
  readonly #refs: (StackRef | undefined)[] = [];

  /** The stack of a 'frames' value at `where[i]` (`where` when i < 0): -1 when absent or empty. */
  of(value: StackValue | undefined, where: string, i: number): number {
    if (value === undefined) return -1;
    if (value instanceof FramesList) {
      if (value.stack !== UNSET) return value.stack;
      const s = this.#intern(value.items, where, i);
      value.settle(this.#ref(s, value.items.length));
      return s;
    }
    if (value instanceof StackRef) return value.index;
    if (Array.isArray(value)) {
      const known = this.#listOf.get(value);
      if (known !== undefined) return known;
      const s = this.#intern(value, where, i);
      this.#listOf.set(value, s);
      return s;
    }
    throw wrongType(value, fieldName(where, i, 'frames'), 'a list');
  }

  get frames(): readonly SnapshotFrame[] {
    return this.#frames;
  }

  /** Each stack its frame indices (views into one buffer). */
  stacks(): Int32Array[] {
    const flat = this.#flat.slice(0, this.#start[this.#count]);
    const out: Int32Array[] = [];
    for (let s = 0; s < this.#count; s++) out.push(flat.subarray(this.#start[s], this.#start[s + 1]));
    return out;
  }

  #ref(s: number, length: number): StackRef {
    let ref = this.#refs[s + 1];
    if (ref === undefined) this.#refs[s + 1] = ref = new StackRef(s, s < 0 ? 0 : length);
    return ref;
  }

  #intern(items: readonly StackValue[], where: string, i: number): number {
    const n = items.length;
    if (n === 0) return -1;
    if (this.#scratch.length < n) this.#scratch = new Int32Array(Math.max(n, this.#scratch.length * 2));
    const scratch = this.#scratch;
    let h = STACK_HASH_SEED;
    for (let k = 0; k < n; k++) {
      const v = items[k];
      // Most frames are records met before: their index is all it takes.
      const f = v instanceof FrameRecord && v.index >= 0 ? v.index : this.#frame(v, where, i, k);
      scratch[k] = f;
      h = stackHash(h, f);
    }
    return this.#find(scratch, n, h);
  }

  /**
   * The stack of frames `indices[0..n)` (indices into `frames`, each one
   * given by a FrameRecord already interned), added if new, `hash` being
   * stackHash folded over them: the entry decoder's way in, which folds it
   * as it reads them (Note [Trace entries from the bytes]).
   */
  internHashed(indices: Int32Array, n: number, hash: number): number {
    if (n === 0) return -1;
    return this.#find(indices, n, hash);
  }

  /** The StackRef of stack s (of n frames), that memo entries of its settled lists give. */
  refOf(s: number, n: number): StackRef {
    return this.#ref(s, n);
  }

  #find(scratch: Int32Array, n: number, h: number): number {
    const flat = this.#flat;
    const start = this.#start;
    const first = this.#bucket.get(h);
    for (let s = first ?? -1; s >= 0; s = this.#next[s]) {
      const from = start[s];
      if (start[s + 1] - from !== n) continue;
      let k = 0;
      while (k < n && flat[from + k] === scratch[k]) k++;
      if (k === n) return s;
    }
    return this.#add(scratch, n, h, first);
  }

  #add(scratch: Int32Array, n: number, hash: number, first: number | undefined): number {
    const s = this.#count++;
    if (this.#start.length < s + 2) {
      this.#start = grow(this.#start, s + 2);
      this.#next = grow(this.#next, s + 2);
    }
    const from = this.#start[s];
    if (this.#flat.length < from + n) this.#flat = grow(this.#flat, from + n);
    this.#flat.set(scratch.subarray(0, n), from);
    this.#start[s + 1] = from + n;
    this.#next[s] = first ?? -1;
    this.#bucket.set(hash, s);
    return s;
  }

  #frame(v: StackValue, where: string, i: number, k: number): number {
    if (v instanceof FrameRecord) {
      if (v.index >= 0) return v.index;
      if (v.odd) throw wrongType(v, frameName(where, i, k), 'a dict');
      v.index = this.#frameIndex(v.filename, v.name, v.line, where, i, k);
      return v.index;
    }
    if (!isPickleDict(v)) throw wrongType(v, frameName(where, i, k), 'a dict');
    let f = this.#frameOf.get(v);
    if (f === undefined) {
      f = this.#frameIndex(v.filename, v.name, v.line, where, i, k);
      this.#frameOf.set(v, f);
    }
    return f;
  }

  #frameIndex(
    filename: StackValue | undefined,
    name: StackValue | undefined,
    line: StackValue | undefined,
    where: string,
    i: number,
    k: number,
  ): number {
    if (typeof filename !== 'string')
      throw wrongType(filename, `${frameName(where, i, k)}.filename`, 'a string');
    if (typeof name !== 'string') throw wrongType(name, `${frameName(where, i, k)}.name`, 'a string');
    const n = typeof line === 'bigint' ? line : integer(line, frameName(where, i, k), -1, 'line');
    const content = `${n}\u0000${filename}\u0000${name}`;
    let f = this.#frameByContent.get(content);
    if (f === undefined) {
      f =
        this.#frames.push({
          filename: this.#internString(filename),
          name: this.#internString(name),
          line: n,
        }) - 1;
      this.#frameByContent.set(content, f);
    }
    return f;
  }

  #internString(s: string): string {
    const known = this.#strings.get(s);
    if (known !== undefined) return known;
    this.#strings.set(s, s);
    return s;
  }
}

function frameName(where: string, i: number, k: number): string {
  return `${fieldName(where, i, 'frames')}[${k}]`;
}

function grow(a: Int32Array, atLeast: number): Int32Array<ArrayBuffer> {
  let size = a.length * 2;
  while (size < atLeast) size *= 2;
  const out = new Int32Array(size);
  out.set(a);
  return out;
}
