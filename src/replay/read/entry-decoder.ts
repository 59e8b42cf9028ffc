/**
 * Note [Trace entries from the bytes]: nearly all of a big snapshot is its
 * trace entries, each a dict Python's pickler writes the same way: EMPTY_DICT,
 * its memo entry, MARK, then key and value pairs and SETITEMS, the keys
 * memoized strings read back by BINGET, the numbers BININT or LONG1, the
 * frames a memoized list or a new list of memoized frame dicts. Read opcode
 * by opcode, an entry is some twenty trips through the reader's switch and
 * stack; the EntryDecoder reads that shape straight from the bytes into the
 * device's columns, the frames into the stack table, with no value made for
 * the entry. The reader offers it every EMPTY_DICT whose dict will be an
 * item of a device's trace in order (snapshot-reader.ts, fastDict). It
 * changes nothing until the whole entry is read and found good, and gives up
 * (the reader then reads the entry the general way, which says what is
 * wrong) on anything else: an opcode or value it does not expect, a field
 * that would fail its check, a frame dict not met before, a
 * frames list not yet interned, an entry the general way would leave out
 * (workspace entries). Protocol 4's FRAME headers, which may fall between
 * any two opcodes, it steps over. A chunk's end inside the entry it reports
 * as such (CUT), and the reader reads the entry again once the next chunk
 * came (Note [A dict cut by a chunk's end]). So both ways give the same
 * snapshot and the same errors. A way out costs more than its entry: the rest of its
 * batch (up to 1000 entries) is read the general way too, since rows must
 * be added in the order the list takes them.
 */

import {
  CUT,
  type FastDict,
  type Memo,
  Op,
  readLong,
  STREAMED,
  type StackValue,
  type StringCache,
} from './pickle/index.js';
import { Action, actionCode, type TraceBuilder } from './snapshot.js';
import { FrameRecord, FramesList, STACK_HASH_SEED, StackRef, type StackTable, stackHash } from './stacks.js';

const MARK = Op.MARK;
const SETITEMS = Op.SETITEMS;
const EMPTY_DICT = Op.EMPTY_DICT;
const EMPTY_LIST = Op.EMPTY_LIST;
const APPEND = Op.APPEND;
const APPENDS = Op.APPENDS;
const MEMOIZE = Op.MEMOIZE;
const BINPUT = Op.BINPUT;
const LONG_BINPUT = Op.LONG_BINPUT;
const BINGET = Op.BINGET;
const LONG_BINGET = Op.LONG_BINGET;
const SHORT_BINUNICODE = Op.SHORT_BINUNICODE;
const BININT = Op.BININT;
const BININT1 = Op.BININT1;
const BININT2 = Op.BININT2;
const LONG1 = Op.LONG1;
const NONE = Op.NONE;
const NEWTRUE = Op.NEWTRUE;
const NEWFALSE = Op.NEWFALSE;
/** Protocol 4's frame header (FRAME and an 8-byte length): it may come between any two opcodes and means nothing here. */
const FRAME = Op.FRAME;
const FRAME_BYTES = 9;

/** The memo keeps nothing of an entry: its own memo index is put as not kept. */
const NOT_KEPT_ENTRY: unique symbol = Symbol('entry');
/** The entry's new frames list: its memo index gets the list's StackRef once interned. */
const NEW_FRAMES: unique symbol = Symbol('frames');
/** What #value gives when it cannot read a value. */
const FAIL: unique symbol = Symbol('fail');

/** Memo indices below this one have their meaning cached (Note [What a memo index stands for]). */
const MEMO_CACHE = 1 << 16;
const TWO_21 = 2 ** 21;
const TWO_32 = 2 ** 32;

/** Memo puts an entry may make before they are done (an entry, its new strings and frames list). */
const MAX_PUTS = 16;

/** Where an entry read from the bytes goes, and what stands for it on the reader's stack. */
export interface EntryTarget {
  readonly builder: TraceBuilder;
  /** Pushed for each entry read; the target takes it in order (its row was added already). */
  readonly marker: StackValue;
  /** Entries made for the target's list (each must reach it). */
  made: number;
}

/** A key's field, as a bit of the fields seen; F_OTHER (a key no allocator reads) may come any number of times. */
const F_ACTION = 1;
const F_ADDR = 2;
const F_SIZE = 4;
const F_STREAM = 8;
const F_TIME = 16;
const F_FREE = 32;
const F_FRAMES = 64;
const F_OTHER = 128;

function fieldOfKey(key: string): number {
  switch (key) {
    case 'action':
      return F_ACTION;
    case 'addr':
      return F_ADDR;
    case 'size':
      return F_SIZE;
    case 'stream':
      return F_STREAM;
    case 'time_us':
      return F_TIME;
    case 'device_free':
      return F_FREE;
    case 'frames':
      return F_FRAMES;
    default:
      return F_OTHER;
  }
}

/** Whether `op` memoizes the value before it. */
function isPut(op: number): boolean {
  return op === MEMOIZE || op === BINPUT || op === LONG_BINPUT;
}

/** The 4-byte little-endian index of a LONG_BINGET or LONG_BINPUT at buf[p..]. */
function u32(buf: Buffer, p: number): number {
  return (buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16) | (buf[p + 3] << 24)) >>> 0;
}

export class EntryDecoder implements FastDict {
  /** Set by the shape before each read. */
  target: EntryTarget | undefined;
  /** Entries read so far. */
  entries = 0;
  readonly #putIndex = new Int32Array(MAX_PUTS);
  readonly #putValue: (StackValue | typeof NOT_KEPT_ENTRY | typeof NEW_FRAMES)[] = new Array(MAX_PUTS);
  #puts = 0;
  /** The memo's count as the puts so far would leave it. */
  #count = 0;
  #frames = new Int32Array(64);
  /** The value #value read, and the position after it. */
  #v: StackValue | typeof FAIL = FAIL;
  /** An int #value read is here, not in #v (no number boxed per field): #isNumber says which. */
  #number = 0;
  #isNumber = false;
  /** The hash of the frames #newFrames read (StackTable.internHashed). */
  #hash = 0;
  /**
   * Note [What a memo index stands for]: the keys of every entry, its action
   * and its frames' items are memo reads of the same few hundred strings and
   * frame dicts, met in the first entries, so their meaning is kept by memo
   * index (for the first MEMO_CACHE indices), a number each, plus one (0:
   * not known yet): a key's field, an action's code, a frame dict's frame.
   * A memo read then costs an array read, not a memo lookup, a string
   * switch and a map lookup. What the memo says of an index changes only if
   * the pickle sets that index again (legal, never written by Python): the
   * caches are cleared then (Memo.overwrites).
   */
  readonly #frameOfEntry = new Int32Array(MEMO_CACHE);
  readonly #fieldOfEntry = new Uint8Array(MEMO_CACHE);
  readonly #actionOfEntry = new Uint8Array(MEMO_CACHE);
  #overwrites = -1;

  constructor(readonly stacks: StackTable) {}

  read(
    buf: Buffer,
    pos: number,
    end: number,
    memo: Memo,
    strings: StringCache,
    values: StackValue[],
  ): number {
    const target = this.target;
    if (target === undefined) return -1;
    if (memo.overwrites !== this.#overwrites) this.#forget(memo);
    this.#puts = 0;
    this.#count = memo.count;
    let p = this.#memoOps(buf, pos, end, memo, NOT_KEPT_ENTRY);
    if (p < 0) return p;
    if (p >= end) return CUT;
    if (buf[p] !== MARK) return -1;
    p++;
    const fieldOf = this.#fieldOfEntry;
    let seen = 0;
    let code = -1;
    let addr = 0;
    let size = 0;
    let stream = 0;
    let time = Number.NaN;
    let free = 0;
    let stackIndex = -1;
    let newFrames = -1;
    for (;;) {
      if (p < end && buf[p] === FRAME) p += FRAME_BYTES;
      if (p >= end) return CUT;
      const op = buf[p];
      if (op === SETITEMS) {
        p++;
        break;
      }
      // The key: after the first entry, a memo read of a string whose field is known by its memo index.
      let field: number;
      if (op === BINGET || op === LONG_BINGET) {
        const q = op === BINGET ? p + 2 : p + 5;
        if (q > end) return CUT;
        const index = op === BINGET ? buf[p + 1] : u32(buf, p + 1);
        field = index < MEMO_CACHE ? fieldOf[index] : 0;
        if (field === 0) {
          const key = memo.get(index);
          if (typeof key !== 'string') return -1;
          field = fieldOfKey(key);
          if (index < MEMO_CACHE) fieldOf[index] = field;
        }
        // The same value memoized again (legal, never written by Python): left to the general way.
        if (q < end && isPut(buf[q])) return -1;
        p = q;
      } else {
        p = this.#value(buf, p, end, memo, strings);
        if (p < 0) return p;
        if (this.#isNumber) return -1;
        const key = this.#v;
        if (typeof key !== 'string') return -1;
        field = fieldOfKey(key);
      }
      if (field !== F_OTHER) {
        // A key twice: the general way keeps the last value (and its frames lists pending); not worth a path here.
        if ((seen & field) !== 0) return -1;
        seen |= field;
      }
      if (p < end && buf[p] === FRAME) p += FRAME_BYTES;
      if (p >= end) return CUT;
      const valueOp = buf[p];
      if (field === F_FRAMES && valueOp === EMPTY_LIST) {
        p = this.#newFrames(buf, p + 1, end, memo);
        if (p < 0) return p;
        newFrames = this.#v as number;
        continue;
      }
      if (field === F_ACTION && (valueOp === BINGET || valueOp === LONG_BINGET)) {
        // A memo read of an action met before: its code known by its memo index.
        const q = valueOp === BINGET ? p + 2 : p + 5;
        if (q > end) return CUT;
        const index = valueOp === BINGET ? buf[p + 1] : u32(buf, p + 1);
        let known = index < MEMO_CACHE ? this.#actionOfEntry[index] : 0;
        if (known === 0) {
          const v = memo.get(index);
          const c = typeof v === 'string' ? actionCode(v) : undefined;
          if (c === undefined) return -1;
          known = c + 1;
          if (index < MEMO_CACHE) this.#actionOfEntry[index] = known;
        }
        if (q < end && isPut(buf[q])) return -1;
        code = known - 1;
        p = q;
        continue;
      }
      p = this.#value(buf, p, end, memo, strings);
      if (p < 0) return p;
      if (this.#isNumber) {
        const x = this.#number;
        if (field === F_ADDR) addr = x;
        else if (field === F_SIZE) size = x;
        else if (field === F_STREAM) stream = x;
        else if (field === F_TIME) time = x;
        else if (field === F_FREE) free = x;
        else if (field !== F_OTHER) return -1;
        continue;
      }
      const v = this.#v as StackValue;
      switch (field) {
        case F_OTHER:
          // A field no allocator reads (compile_context, user_metadata): dropped, as the general way drops it.
          break;
        case F_ACTION: {
          const c = typeof v === 'string' ? actionCode(v) : undefined;
          if (c === undefined) return -1;
          code = c;
          break;
        }
        case F_FRAMES:
          if (v instanceof StackRef) stackIndex = v.index;
          else if (v instanceof FramesList && v.settled) stackIndex = v.stack;
          else return -1;
          break;
        case F_TIME:
          if (typeof v === 'number') time = v;
          else if (v !== null) return -1;
          break;
        default: {
          // A number from the memo (Python memoizes none, but a pickle may).
          if (typeof v !== 'number') return -1;
          if (field === F_ADDR) addr = v;
          else if (field === F_SIZE) size = v;
          else if (field === F_STREAM) stream = v;
          else free = v;
        }
      }
    }
    // Nothing may change the dict once read: what comes next must be another entry or the list taking it.
    const at = p < end && buf[p] === FRAME ? p + FRAME_BYTES : p;
    if (at >= end) return CUT;
    const follow = buf[at];
    if (follow !== EMPTY_DICT && follow !== APPENDS && follow !== APPEND) return -1;
    // The checks of addEntry (snapshot.ts), as a way out instead of an error.
    if (code < 0) return -1;
    if (code === Action.oom) {
      // device_free, else addr, else 0 (Module.cpp writes device_free in place of an address).
      if ((seen & F_FREE) !== 0) addr = free;
      else if ((seen & F_ADDR) === 0) addr = 0;
    } else if ((seen & F_ADDR) === 0) return -1;
    if (addr < 0 || (seen & F_SIZE) === 0 || size < 0) return -1;
    // All good: now the memo, the stack table and the columns.
    if (newFrames >= 0) stackIndex = this.stacks.internHashed(this.#frames, newFrames, this.#hash);
    const ref = newFrames >= 0 ? this.stacks.refOf(stackIndex, newFrames) : undefined;
    for (let k = 0; k < this.#puts; k++) {
      const v = this.#putValue[k];
      const index = this.#putIndex[k];
      if (v === NOT_KEPT_ENTRY) memo.putNotKept(index);
      else if (v === NEW_FRAMES) memo.put(index, ref!);
      else memo.put(index, v);
      this.#putValue[k] = undefined as unknown as StackValue;
    }
    target.made++;
    this.entries++;
    target.builder.columns.push(code, addr, size, stream, time, stackIndex);
    values.push(target.marker);
    return p;
  }

  /** The memo overwrote an entry: what the caches say of memo indices may no longer hold. */
  #forget(memo: Memo): void {
    this.#frameOfEntry.fill(0);
    this.#fieldOfEntry.fill(0);
    this.#actionOfEntry.fill(0);
    this.#overwrites = memo.overwrites;
  }

  /**
   * The memo opcodes after a value (MEMOIZE, BINPUT, LONG_BINPUT), noted to
   * be done with the entry; -1 where one would overwrite an entry (legal,
   * but left to the general way) or reach too far.
   */
  #memoOps(
    buf: Buffer,
    p: number,
    end: number,
    memo: Memo,
    v: StackValue | typeof NOT_KEPT_ENTRY | typeof NEW_FRAMES,
  ): number {
    while (p < end) {
      const op = buf[p];
      let index: number;
      if (op === FRAME) {
        p += FRAME_BYTES;
        continue;
      }
      if (op === MEMOIZE) {
        index = this.#count;
        p += 1;
      } else if (op === BINPUT) {
        if (p + 2 > end) return CUT;
        index = buf[p + 1];
        p += 2;
      } else if (op === LONG_BINPUT) {
        if (p + 5 > end) return CUT;
        index = (buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24)) >>> 0;
        if (index > this.#count + 65536) return -1;
        p += 5;
      } else return p;
      if (this.#puts === MAX_PUTS || memo.has(index)) return -1;
      for (let k = 0; k < this.#puts; k++) if (this.#putIndex[k] === index) return -1;
      this.#putIndex[this.#puts] = index;
      this.#putValue[this.#puts++] = v;
      this.#count++;
    }
    return p;
  }

  /**
   * One plain value (a memo read, a short string, an int, None, a bool) and
   * its memo opcodes: an int into #number (#isNumber), anything else into #v.
   */
  #value(buf: Buffer, p: number, end: number, memo: Memo, strings: StringCache): number {
    if (p < end && buf[p] === FRAME) p += FRAME_BYTES;
    if (p + 2 > end) return CUT;
    const op = buf[p];
    let v: StackValue | undefined;
    let x = 0;
    let isNumber = true;
    switch (op) {
      case BININT1:
        x = buf[p + 1];
        p += 2;
        break;
      case BININT2:
        if (p + 3 > end) return CUT;
        x = buf[p + 1] | (buf[p + 2] << 8);
        p += 3;
        break;
      case BININT:
        if (p + 5 > end) return CUT;
        x = buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24);
        p += 5;
        break;
      case LONG1: {
        const n = buf[p + 1];
        const q = p + 2;
        if (n > 8) return -1;
        if (q + n > end) return CUT;
        if (n > 0 && buf[q + n - 1] >= 0x80) {
          // Negative: rare in a snapshot, read the general way's way.
          const y = readLong(buf, q, n);
          if (typeof y !== 'number') return -1;
          x = y;
        } else {
          let hi = 0;
          for (let i = n - 1; i >= 4; i--) hi = hi * 256 + buf[q + i];
          // Beyond 2^53 it is a bigint, which the general way keeps or refuses by field.
          if (hi >= TWO_21) return -1;
          let lo = 0;
          for (let i = Math.min(n, 4) - 1; i >= 0; i--) lo = lo * 256 + buf[q + i];
          x = hi * TWO_32 + lo;
        }
        p = q + n;
        break;
      }
      default: {
        isNumber = false;
        switch (op) {
          case BINGET:
            v = memo.get(buf[p + 1]) as StackValue | undefined;
            p += 2;
            break;
          case LONG_BINGET:
            if (p + 5 > end) return CUT;
            v = memo.get((buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24)) >>> 0) as
              | StackValue
              | undefined;
            p += 5;
            break;
          case SHORT_BINUNICODE: {
            const n = buf[p + 1];
            if (p + 2 + n > end) return CUT;
            v = strings.decode(buf, p + 2, n);
            p += 2 + n;
            break;
          }
          case NONE:
            v = null;
            p += 1;
            break;
          case NEWTRUE:
            v = true;
            p += 1;
            break;
          case NEWFALSE:
            v = false;
            p += 1;
            break;
          default:
            return -1;
        }
        // No memo entry (or a streamed one): the general way says what is wrong.
        if (v === undefined || (v as unknown) === STREAMED) return -1;
      }
    }
    this.#isNumber = isNumber;
    if (isNumber) this.#number = x;
    else this.#v = v!;
    if (p >= end) return p;
    const next = buf[p];
    if (next !== MEMOIZE && next !== BINPUT && next !== LONG_BINPUT && next !== FRAME) return p;
    return this.#memoOps(buf, p, end, memo, isNumber ? x : v!);
  }

  /**
   * A new frames list (`p` just past its EMPTY_LIST): its memo opcodes, then
   * its items, each a memo read of a frame dict interned before, in batches
   * (MARK ... APPENDS) or one by APPEND. Their frame indices go to #frames,
   * their count to #v, their hash to #hash.
   */
  #newFrames(buf: Buffer, p: number, end: number, memo: Memo): number {
    p = this.#memoOps(buf, p, end, memo, NEW_FRAMES);
    if (p < 0) return p;
    const frameOf = this.#frameOfEntry;
    let frames = this.#frames;
    let n = 0;
    let h = STACK_HASH_SEED;
    for (;;) {
      if (p < end && buf[p] === FRAME) p += FRAME_BYTES;
      if (p >= end) return CUT;
      const op = buf[p];
      const batch = op === MARK;
      if (batch) p++;
      else if (op !== BINGET && op !== LONG_BINGET) break;
      for (;;) {
        if (p >= end) return CUT;
        const item = buf[p];
        let index: number;
        if (item === BINGET) {
          if (p + 2 > end) return CUT;
          index = buf[p + 1];
          p += 2;
        } else if (item === LONG_BINGET) {
          if (p + 5 > end) return CUT;
          index = u32(buf, p + 1);
          p += 5;
        } else if (item === FRAME) {
          p += FRAME_BYTES;
          continue;
        } else if (batch && item === APPENDS) {
          p++;
          break;
        } else return -1;
        let f = index < MEMO_CACHE ? frameOf[index] - 1 : -1;
        if (f < 0) {
          const frame = memo.get(index);
          if (!(frame instanceof FrameRecord) || frame.index < 0) return -1;
          f = frame.index;
          if (index < MEMO_CACHE) frameOf[index] = f + 1;
        }
        if (n === frames.length) {
          const grown = new Int32Array(n * 2);
          grown.set(frames);
          this.#frames = frames = grown;
        }
        frames[n++] = f;
        h = stackHash(h, f);
        if (!batch) {
          if (p >= end) return CUT;
          if (buf[p] !== APPEND) return -1;
          p++;
          break;
        }
      }
    }
    this.#v = n;
    this.#hash = h;
    return p;
  }
}
