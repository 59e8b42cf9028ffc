/**
 * A reader for what Python's pickle writes, protocols 2 to 5, limited to the
 * plain data a memory snapshot holds (see value.ts for the value mapping).
 * Anything that would run code (GLOBAL, REDUCE, BUILD, ...) is refused with a
 * PickleError naming the opcode and its offset.
 *
 * It reads a stream: `write` takes the bytes as they arrive, in chunks of any
 * size, and `end` gives the value. An opcode cut by a chunk's end waits, with
 * the bytes it has, until enough have come (it knows how many it needs once
 * its length field is in), so every byte is copied at most once more.
 *
 * Note [Reading fast]: a million-event snapshot is tens of millions of
 * opcodes, so the loop keeps the cursor in a local, reads operands straight
 * from the bytes (a DataView only for floats and wide ints), and decodes short
 * ASCII strings through a small cache (StringCache) so that the same key read
 * a million times is one string, not a million. Python's own pickler
 * memoizes repeated strings and shared frame dicts, so most of a real
 * snapshot is BINGET, which costs two array reads (Note [A compact memo]).
 * A shape may take a whole dict off the loop (fastDict): the snapshot
 * reader's trace entries, most of the opcodes (Note [Trace entries from the
 * bytes]), even where a chunk's end cuts one (Note [A dict cut by a chunk's
 * end]).
 *
 * Note [A dict cut by a chunk's end]: a fast dict that meets the end of the
 * bytes before its own end says so (CUT) rather than failing. The reader
 * then waits for the next chunk as it waits for any cut opcode: it keeps
 * the dict's bytes so far and, once the chunk comes, reads from a head of
 * those bytes and the chunk's first DICT_REACH bytes, only the opcodes that
 * start in the kept bytes, then goes on in the chunk itself where the head's
 * last opcode ended. Were the cut dict read opcode by opcode instead, its
 * whole batch would have to be (rows are added in the order the list takes
 * them): some 500 entries per chunk of 1 MiB, a tenth of a big snapshot's.
 * A dict still cut in the head (longer than DICT_REACH, or the chunk was
 * short), or at the end of the bytes, is read opcode by opcode, so a cut
 * never changes what is read, only how fast.
 *
 * Note [Snapshot-shaped reading]: a reader may be given a shape, which
 * chooses the container each EMPTY_LIST and EMPTY_DICT makes from where it
 * will go: the dict it is the value of and under which key, or the list it is
 * an item of. The reader works that out from the stack as Python's pickler
 * leaves it (a container's items follow it at once, key before value, in
 * batches behind a MARK): a string on top of the stack with a dict below it,
 * in the dict's own batch, is the key; otherwise the list owning the
 * innermost batch, or a list on top (APPEND of one item). The shape may
 * answer with a sink (memo.ts), which takes its items through calls: that is
 * how a snapshot's trace entries become typed-array rows as they are read,
 * with no dict per event. The guesses hold for what Python's pickler writes;
 * where a hand-made pickle proves one wrong (an item that lands elsewhere),
 * the sink that should have taken it, or the one that did, reports it.
 */
import { constants } from 'node:buffer';
import { DictSink, ListSink, Memo, STREAMED, type StackValue } from './memo.js';
import { describeOpcode, Op } from './opcodes.js';
import { type PickleDict, PickleError, PickleTuple, type PickleValue } from './value.js';

const EMPTY_TUPLE = Object.freeze(new PickleTuple(Object.freeze([])));

/**
 * Where a new container will go (Note [Snapshot-shaped reading]): `key` is set
 * when it is the value of `owner[key]`; otherwise `owner` is the list whose
 * batch it is in, and `top` the value on top of the stack (a list there may
 * take it by APPEND instead).
 */
export interface Place {
  readonly owner: StackValue | undefined;
  readonly key: string | undefined;
  readonly top: StackValue | undefined;
}

export interface PickleShape {
  list(place: Place): StackValue;
  dict(place: Place): StackValue;
  /**
   * A decoder for the dict an EMPTY_DICT starts here, given the stack as it
   * is (Note [Trace entries from the bytes]); undefined: the general way.
   */
  fastDict?(stack: readonly StackValue[], marks: readonly number[]): FastDict | undefined;
}

/**
 * Reads a whole dict straight from the bytes (Note [Trace entries from the
 * bytes]): `pos` is just past its EMPTY_DICT; it gives the position after
 * what it read, having pushed what stands for the dict on `stack`, or,
 * having changed nothing, -1 to have the reader read it opcode by opcode,
 * or CUT where the bytes end first (Note [A dict cut by a chunk's end]).
 */
export interface FastDict {
  read(buf: Buffer, pos: number, end: number, memo: Memo, strings: StringCache, stack: StackValue[]): number;
}

/** What FastDict.read gives where the bytes end inside the dict (Note [A dict cut by a chunk's end]). */
export const CUT = -2;

/** Bytes of the next chunk a cut dict is read with: far more than any trace entry Python writes. */
const DICT_REACH = 1 << 16;

/** Unpickle one value from `data` (the whole pickle, already inflated). */
export function unpickle(data: Uint8Array): PickleValue {
  const reader = new PickleReader();
  reader.write(data);
  return reader.end() as PickleValue;
}

/** An unpickler fed in chunks; with a shape, a snapshot-shaped one (Note [Snapshot-shaped reading]). */
export class PickleReader {
  readonly #shape: PickleShape | undefined;
  readonly #stack: StackValue[] = [];
  readonly #marks: number[] = [];
  readonly #memo = new Memo();
  readonly #strings = new StringCache();
  readonly #place = {
    owner: undefined as StackValue | undefined,
    key: undefined as string | undefined,
    top: undefined as StackValue | undefined,
  };
  /** Offset of the current buffer's first byte in the whole pickle. */
  #base = 0;
  /** An opcode cut by a chunk's end: its bytes so far, and how many it needs. */
  #partial: Buffer[] = [];
  #partialLength = 0;
  #need = 0;
  /** The cut bytes are a fast dict's (Note [A dict cut by a chunk's end]). */
  #cutDict = false;
  /** Reading a cut dict's head: a fast dict cut again is read opcode by opcode. */
  #retrying = false;
  #started = false;
  #done = false;
  #result: StackValue | undefined;

  constructor(shape?: PickleShape) {
    this.#shape = shape;
  }

  /** True once STOP was read; later bytes are ignored. */
  get done(): boolean {
    return this.#done;
  }

  /** Bytes taken so far. */
  get offset(): number {
    return this.#base + this.#partialLength;
  }

  /** Take the next bytes (kept only as copies); true when the pickle is complete (its STOP read). */
  write(chunk: Uint8Array): boolean {
    if (this.#done || chunk.length === 0) return this.#done;
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (!this.#started) {
      this.#started = true;
      if (buf[0] !== Op.PROTO) {
        throw new PickleError(
          'malformed',
          `not a pickle of protocol 2 or later (first byte 0x${buf[0].toString(16).padStart(2, '0')}, expected PROTO 0x80)`,
          0,
        );
      }
    }
    if (this.#partialLength > 0) {
      // Complete the cut opcode with the bytes it needs (a cut dict: DICT_REACH), then go on in the chunk itself.
      const had = this.#partialLength;
      const want = this.#cutDict ? Math.max(this.#need - had, DICT_REACH) : this.#need - had;
      const take = Math.min(buf.length, want);
      this.#partial.push(Buffer.from(buf.subarray(0, take)));
      this.#partialLength += take;
      if (this.#partialLength < this.#need) return false;
      const stopped = this.#runHead(had);
      if (this.#done) return true;
      // Cut again in the head: its tail waits, with the rest of the chunk after it.
      return this.write(buf.subarray(this.#partialLength > 0 ? take : stopped - had));
    }
    this.#run(buf, buf.length);
    return this.#done;
  }

  /**
   * The kept bytes and those added to them, run as one buffer up to the
   * first opcode that starts at or past `stop` (where the chunk takes over);
   * the position reached.
   */
  #runHead(stop: number): number {
    const head = Buffer.concat(this.#partial, this.#partialLength);
    this.#partial = [];
    this.#partialLength = 0;
    this.#retrying = this.#cutDict;
    this.#cutDict = false;
    try {
      return this.#run(head, stop);
    } finally {
      this.#retrying = false;
    }
  }

  /** The value, once every byte was written; a PickleError if the pickle stopped short. */
  end(): StackValue {
    // A dict the last chunk cut: no more bytes are coming, so it is read opcode by opcode now.
    if (this.#cutDict) this.#runHead(this.#partialLength);
    if (this.#done) return this.#result!;
    const total = this.#base + this.#partialLength;
    if (this.#partialLength > 0) {
      throw new PickleError(
        'truncated',
        `the pickle is truncated: ${describeOpcode(this.#partial[0][0])} at offset ${this.#base} needs bytes past the end (${total} bytes)`,
        this.#base,
      );
    }
    throw new PickleError(
      'truncated',
      `the pickle is truncated: no STOP before the end (${total} bytes)`,
      total,
    );
  }

  /** Keep buf[at..] until `need` bytes from `at` are in; -1, for #run to give. */
  #suspend(buf: Buffer, at: number, need: number): number {
    // A copy: the caller may reuse its chunk.
    this.#partial = [Buffer.from(buf.subarray(at))];
    this.#partialLength = buf.length - at;
    this.#need = need;
    this.#base += at;
    return -1;
  }

  #malformed(at: number, op: number, what: string): PickleError {
    const offset = this.#base + at;
    return new PickleError(
      'malformed',
      `malformed pickle: ${describeOpcode(op)} at offset ${offset}: ${what}`,
      offset,
    );
  }

  /**
   * Read the opcodes of `buf` that start before `stop`; the position after
   * the last, or -1 where one was cut (kept by #suspend) or STOP was read.
   */
  #run(buf: Buffer, stop: number): number {
    const end = buf.length;
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const stack = this.#stack;
    const marks = this.#marks;
    const memo = this.#memo;
    const strings = this.#strings;
    const shape = this.#shape;
    let pos = 0;

    const popMark = (at: number, op: number): number => {
      const m = marks.pop();
      if (m === undefined) throw this.#malformed(at, op, 'no MARK to pop');
      return m;
    };
    const pop = (at: number, op: number): StackValue => {
      if (stack.length <= (marks.length > 0 ? marks[marks.length - 1] : 0))
        throw this.#malformed(at, op, 'the stack is empty');
      return stack.pop()!;
    };
    const top = (at: number, op: number): StackValue => {
      if (stack.length === 0) throw this.#malformed(at, op, 'the stack is empty');
      return stack[stack.length - 1];
    };
    const fromMemo = (at: number, op: number, index: number): StackValue => {
      const v = memo.get(index);
      if (v === undefined) throw this.#malformed(at, op, `the memo has no entry ${index}`);
      if (v === STREAMED)
        throw this.#malformed(
          at,
          op,
          `memo entry ${index} is a part of the snapshot that is streamed, not kept`,
        );
      return v;
    };
    /** Append stack[from..] to the list at stack[from - 1], then drop them. */
    const appends = (at: number, op: number, list: StackValue, from: number) => {
      if (Array.isArray(list)) for (let i = from; i < stack.length; i++) list.push(stack[i] as PickleValue);
      else if (list instanceof ListSink) list.appendAll(stack, from, stack.length);
      else throw this.#malformed(at, op, 'no list below the MARK');
      stack.length = from;
    };
    /** Set stack[from..] as key, value pairs into the dict at stack[from - 1], then drop them. */
    const setItems = (at: number, op: number, from: number) => {
      if (from === 0) throw this.#malformed(at, op, 'no dict below the MARK');
      if ((stack.length - from) % 2 !== 0) throw this.#malformed(at, op, 'an odd number of keys and values');
      let d = stack[from - 1];
      if (d instanceof DictSink) {
        for (let i = from; i < stack.length; i += 2) d.set(stack[i], stack[i + 1]);
        stack.length = from;
        return;
      }
      for (let i = from; i < stack.length; i += 2) {
        const key = stack[i] as PickleValue;
        const value = stack[i + 1] as PickleValue;
        if (typeof key === 'string' && isPlainObject(d)) {
          setOwn(d as PickleDict, key, value);
        } else if (d instanceof Map) {
          d.set(key, value);
        } else if (isPlainObject(d)) {
          const m = new Map<PickleValue, PickleValue>(Object.entries(d as PickleDict));
          memo.replace(d, m);
          stack[from - 1] = d = m;
          m.set(key, value);
        } else {
          throw this.#malformed(at, op, 'the object below the MARK is not a dict');
        }
      }
      stack.length = from;
    };
    const place = (): Place => {
      const p = this.#place;
      const len = stack.length;
      const m = marks.length > 0 ? marks[marks.length - 1] : -1;
      const t = len > 0 ? stack[len - 1] : undefined;
      p.top = t;
      p.key = undefined;
      p.owner = undefined;
      if (typeof t === 'string') {
        // A key in its dict's batch (odd count past the MARK), or of a SETITEM.
        if (m >= 1 && m < len && isDictLike(stack[m - 1]) && (len - m) % 2 === 1) {
          p.owner = stack[m - 1];
          p.key = t;
          return p;
        }
        if (len >= 2 && len - 2 >= m && isDictLike(stack[len - 2])) {
          p.owner = stack[len - 2];
          p.key = t;
          return p;
        }
      }
      if (m >= 1 && m <= len && isListLike(stack[m - 1])) p.owner = stack[m - 1];
      else if (isListLike(t)) p.owner = t;
      return p;
    };

    for (;;) {
      if (pos >= stop) {
        this.#base += pos;
        return pos;
      }
      const at = pos;
      const op = buf[pos++];
      switch (op) {
        case Op.PROTO: {
          if (pos + 1 > end) return this.#suspend(buf, at, 2);
          const version = buf[pos++];
          if (version < 2 || version > 5) throw this.#malformed(at, op, `protocol ${version} is not 2 to 5`);
          break;
        }
        case Op.FRAME:
          // A frame's length: bytes come as they come, so frames need no handling.
          if (pos + 8 > end) return this.#suspend(buf, at, 9);
          pos += 8;
          break;
        case Op.MARK:
          marks.push(stack.length);
          break;
        case Op.STOP: {
          if (stack.length === 0) throw this.#malformed(at, op, 'the stack is empty');
          this.#result = stack[stack.length - 1];
          this.#done = true;
          this.#base += pos;
          return -1;
        }
        case Op.EMPTY_DICT: {
          if (shape === undefined) {
            stack.push({});
            break;
          }
          const fast = shape.fastDict?.(stack, marks);
          if (fast !== undefined) {
            const next = fast.read(buf, pos, end, memo, strings, stack);
            if (next >= 0) {
              pos = next;
              break;
            }
            if (next === CUT && !this.#retrying) {
              // Note [A dict cut by a chunk's end]: one byte more makes a head worth trying.
              this.#cutDict = true;
              return this.#suspend(buf, at, end - at + 1);
            }
          }
          stack.push(shape.dict(place()));
          break;
        }
        case Op.EMPTY_LIST:
          stack.push(shape === undefined ? [] : shape.list(place()));
          break;
        case Op.EMPTY_TUPLE:
          stack.push(EMPTY_TUPLE);
          break;
        case Op.MEMOIZE:
          memo.put(memo.count, top(at, op));
          break;
        case Op.BINPUT:
          if (pos + 1 > end) return this.#suspend(buf, at, 2);
          memo.put(buf[pos++], top(at, op));
          break;
        case Op.LONG_BINPUT: {
          if (pos + 4 > end) return this.#suspend(buf, at, 5);
          const index = view.getUint32(pos, true);
          if (index > memo.count + Memo.REACH)
            throw this.#malformed(at, op, `memo index ${index} is far past the ${memo.count} entries set`);
          memo.put(index, top(at, op));
          pos += 4;
          break;
        }
        case Op.BINGET:
          if (pos + 1 > end) return this.#suspend(buf, at, 2);
          stack.push(fromMemo(at, op, buf[pos++]));
          break;
        case Op.LONG_BINGET:
          if (pos + 4 > end) return this.#suspend(buf, at, 5);
          stack.push(fromMemo(at, op, view.getUint32(pos, true)));
          pos += 4;
          break;
        case Op.SHORT_BINUNICODE:
        case Op.BINUNICODE:
        case Op.BINUNICODE8:
        case Op.LONG1:
        case Op.LONG4:
        case Op.SHORT_BINBYTES:
        case Op.BINBYTES:
        case Op.BINBYTES8:
        case Op.BYTEARRAY8: {
          // Note [Sized opcodes]
          const w = lengthWidth(op);
          if (pos + w > end) return this.#suspend(buf, at, 1 + w);
          const n =
            w === 1
              ? buf[pos]
              : w === 4
                ? op === Op.LONG4
                  ? view.getInt32(pos, true)
                  : view.getUint32(pos, true)
                : Number(view.getBigUint64(pos, true));
          pos += w;
          if (n < 0) throw this.#malformed(at, op, `negative byte count ${n}`);
          // No string or buffer could hold it: said now, not after buffering the bytes it claims.
          if (n > MAX_STRING && (isString(op) || n > MAX_BYTES))
            throw this.#malformed(at, op, `${n} bytes are more than a JavaScript value can hold`);
          if (pos + n > end) return this.#suspend(buf, at, 1 + w + n);
          stack.push(
            isString(op)
              ? strings.decode(buf, pos, n)
              : op === Op.LONG1 || op === Op.LONG4
                ? readLong(buf, pos, n)
                : copyBytes(buf, pos, n), // a bytearray reads as bytes: the value mapping has one kind for both
          );
          pos += n;
          break;
        }
        case Op.BININT1:
          if (pos + 1 > end) return this.#suspend(buf, at, 2);
          stack.push(buf[pos++]);
          break;
        case Op.BININT2:
          if (pos + 2 > end) return this.#suspend(buf, at, 3);
          stack.push(buf[pos] | (buf[pos + 1] << 8));
          pos += 2;
          break;
        case Op.BININT:
          if (pos + 4 > end) return this.#suspend(buf, at, 5);
          stack.push(view.getInt32(pos, true));
          pos += 4;
          break;
        case Op.BINFLOAT:
          if (pos + 8 > end) return this.#suspend(buf, at, 9);
          stack.push(view.getFloat64(pos, false));
          pos += 8;
          break;
        case Op.NONE:
          stack.push(null);
          break;
        case Op.NEWTRUE:
          stack.push(true);
          break;
        case Op.NEWFALSE:
          stack.push(false);
          break;
        case Op.APPEND: {
          const v = pop(at, op);
          const list = top(at, op);
          if (Array.isArray(list)) list.push(v as PickleValue);
          else if (list instanceof ListSink) list.append(v);
          else throw this.#malformed(at, op, 'APPEND to something that is not a list');
          break;
        }
        case Op.APPENDS: {
          const from = popMark(at, op);
          if (from === 0) throw this.#malformed(at, op, 'no list below the MARK');
          appends(at, op, stack[from - 1], from);
          break;
        }
        case Op.SETITEM: {
          const value = pop(at, op);
          const key = pop(at, op);
          stack.push(key, value);
          setItems(at, op, stack.length - 2);
          break;
        }
        case Op.SETITEMS:
          setItems(at, op, popMark(at, op));
          break;
        case Op.TUPLE1: {
          const a = pop(at, op);
          stack.push(new PickleTuple([a as PickleValue]));
          break;
        }
        case Op.TUPLE2: {
          const b = pop(at, op);
          const a = pop(at, op);
          stack.push(new PickleTuple([a as PickleValue, b as PickleValue]));
          break;
        }
        case Op.TUPLE3: {
          const c = pop(at, op);
          const b = pop(at, op);
          const a = pop(at, op);
          stack.push(new PickleTuple([a as PickleValue, b as PickleValue, c as PickleValue]));
          break;
        }
        case Op.TUPLE: {
          const from = popMark(at, op);
          const items = stack.slice(from) as PickleValue[];
          stack.length = from;
          stack.push(new PickleTuple(items));
          break;
        }
        case Op.POP: {
          if (stack.length > (marks.length > 0 ? marks[marks.length - 1] : 0)) stack.length--;
          else popMark(at, op);
          break;
        }
        case Op.POP_MARK:
          stack.length = popMark(at, op);
          break;
        case Op.DUP:
          stack.push(top(at, op));
          break;
        default: {
          const offset = this.#base + at;
          throw new PickleError(
            'unsupported-opcode',
            `unsupported pickle opcode ${describeOpcode(op)} at offset ${offset}: only plain data (dicts, lists, tuples, strings, numbers, bytes) is read`,
            offset,
          );
        }
      }
    }
  }
}

function isPlainObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function isDictLike(v: unknown): boolean {
  return v instanceof DictSink || v instanceof Map || isPlainObject(v);
}

function isListLike(v: unknown): boolean {
  return Array.isArray(v) || v instanceof ListSink;
}

/** Set an own property, '__proto__' included (assignment would change the prototype instead). */
function setOwn(d: PickleDict, key: string, value: PickleValue): void {
  if (key === '__proto__')
    Object.defineProperty(d, key, { value, writable: true, enumerable: true, configurable: true });
  else d[key] = value;
}

function copyBytes(buf: Buffer, pos: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  out.set(buf.subarray(pos, pos + n));
  return out;
}

const MAX_STRING = constants.MAX_STRING_LENGTH;
const MAX_BYTES = constants.MAX_LENGTH;

function isString(op: number): boolean {
  return op === Op.SHORT_BINUNICODE || op === Op.BINUNICODE || op === Op.BINUNICODE8;
}

const TWO_32 = 2 ** 32;
const TWO_21 = 2 ** 21;

/**
 * Note [Sized opcodes]: nine opcodes carry a length and then that many bytes:
 * a str (SHORT_BINUNICODE, BINUNICODE, BINUNICODE8), an int (LONG1, LONG4) or
 * bytes (SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8). They differ only in
 * the length's width (1, 4 or 8 bytes; LONG4's alone is signed, and a
 * negative one is malformed) and in how the bytes decode, so one case reads
 * them all: wait for the length, then for the bytes (1 + width + n in all).
 */
function lengthWidth(op: number): 1 | 4 | 8 {
  switch (op) {
    case Op.SHORT_BINUNICODE:
    case Op.LONG1:
    case Op.SHORT_BINBYTES:
      return 1;
    case Op.BINUNICODE:
    case Op.LONG4:
    case Op.BINBYTES:
      return 4;
    default:
      return 8;
  }
}

/** A little-endian two's-complement integer of n bytes: a number when safe, else a bigint. */
export function readLong(buf: Uint8Array, pos: number, n: number): number | bigint {
  if (n === 0) return 0;
  const negative = (buf[pos + n - 1] & 0x80) !== 0;
  if (n <= 6) {
    // At most 48 bits: exact in a double.
    let v = 0;
    for (let i = n - 1; i >= 0; i--) v = v * 256 + buf[pos + i];
    return negative ? v - 2 ** (8 * n) : v;
  }
  if (n <= 8) {
    const lo = (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16) | (buf[pos + 3] << 24)) >>> 0;
    let hi = 0;
    for (let i = n - 1; i >= 4; i--) hi = hi * 256 + buf[pos + i];
    if (negative) hi -= 2 ** (8 * (n - 4));
    if (hi >= -TWO_21 && hi < TWO_21) {
      const v = hi * TWO_32 + lo;
      if (Number.isSafeInteger(v)) return v;
    }
  }
  // Through hex: shifting a bigint byte by byte would take time quadratic in n.
  let hex = '0x';
  for (let i = n - 1; i >= 0; i--) hex += HEX[buf[pos + i]];
  let b = BigInt(hex);
  if (negative) b -= 1n << BigInt(8 * n);
  const asNumber = Number(b);
  return Number.isSafeInteger(asNumber) ? asNumber : b;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * Short ASCII strings by content: a hit gives back the string read before
 * (no new string, no decoding). Slots are overwritten on collision, so the
 * cache stays small however many distinct strings go by.
 */
export class StringCache {
  static readonly MAX_LENGTH = 32;
  readonly #slots: (string | undefined)[] = new Array(4096).fill(undefined);

  decode(buf: Buffer, pos: number, n: number): string {
    if (n > StringCache.MAX_LENGTH) return buf.toString('utf8', pos, pos + n);
    let h = 0x811c9dc5;
    for (let i = 0; i < n; i++) {
      const c = buf[pos + i];
      if (c >= 0x80) return buf.toString('utf8', pos, pos + n);
      h = Math.imul(h ^ c, 0x01000193);
    }
    const slot = (h ^ (h >>> 15)) & 4095;
    const s = this.#slots[slot];
    if (s !== undefined && s.length === n && sameAscii(s, buf, pos, n)) return s;
    const fresh = internalize(buf.toString('latin1', pos, pos + n));
    this.#slots[slot] = fresh;
    return fresh;
  }
}

/**
 * The engine's own copy of `s` (a property name is one): comparing it with
 * a literal, as a shape's `switch (key)` does for every field of every
 * entry, is then a pointer comparison.
 */
function internalize(s: string): string {
  return Object.keys({ [s]: 0 })[0] ?? s;
}

function sameAscii(s: string, buf: Uint8Array, pos: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (s.charCodeAt(i) !== buf[pos + i]) return false;
  return true;
}
