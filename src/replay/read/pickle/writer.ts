/**
 * A pickle writer for the values the reader gives (value.ts), so that a
 * replayed run can be saved as a snapshot that Python and PyTorch's
 * memory_viz open.
 *
 * It writes what CPython's pickler writes for the same data, with two
 * choices of its own: no FRAME opcodes (optional in protocol 4), and strings
 * memoized by content rather than by object. Lists and dicts are written in
 * batches of 1000 items as CPython does; memory_viz's reader depends on it
 * (it spreads each APPENDS batch into one call). memory_viz reads protocols 2
 * to 4 and no bytes opcodes, so the default is protocol 4. Integral numbers
 * are written as ints: a Python float with an integral value read by
 * unpickle comes back as an int.
 *
 * PickleStreamWriter writes a pickle too big to hold as it goes, through a
 * callback, with CPython's own choices where the in-memory writer differs:
 * FRAME opcodes of about 64 KiB from protocol 4 (as _pickle.c frames), and
 * the opcodes a caller picks one by one, so that a generated snapshot is
 * shaped as PyTorch's `_dump_snapshot` leaves it (a new string memoized for
 * every event's 'N/A', one list per event's frames).
 */
import { Op } from './opcodes.js';
import { PickleError, PickleTuple, type PickleValue } from './value.js';

export interface PickleWriteOptions {
  /** 2 to 5; default 4. Protocol 2 cannot hold bytes. */
  readonly protocol?: number;
}

const BATCH = 1000;
const MAX_DEPTH = 1000;

/** Pickle one value. */
export function pickle(value: PickleValue, options: PickleWriteOptions = {}): Buffer {
  const protocol = options.protocol ?? 4;
  if (!Number.isInteger(protocol) || protocol < 2 || protocol > 5) {
    throw new PickleError('unpicklable', `protocol ${protocol} is not 2 to 5`, 0);
  }
  const w = new PickleWriter(protocol);
  w.byte(Op.PROTO);
  w.byte(protocol);
  w.value(value, 0);
  w.byte(Op.STOP);
  return w.result();
}

const FRAME_HEADER = 9;
/** CPython's _FRAME_SIZE_TARGET, and its _FRAME_SIZE_MIN below which a frame gets no header. */
const FRAME_TARGET = 64 * 1024;
const FRAME_MIN = 4;
/** The stream writer hands on its bytes in pieces of about this size. */
const FLUSH_AT = 1 << 20;

/**
 * A pickle written through `write` as it goes (see the header): open with
 * the constructor, write the value's opcodes with `value` or one by one,
 * and finish with `stop`. Each call writes whole opcodes.
 */
export class PickleStreamWriter {
  readonly #w: PickleWriter;

  constructor(write: (bytes: Uint8Array) => void, options: PickleWriteOptions = {}) {
    const protocol = options.protocol ?? 4;
    if (!Number.isInteger(protocol) || protocol < 2 || protocol > 5) {
      throw new PickleError('unpicklable', `protocol ${protocol} is not 2 to 5`, 0);
    }
    this.#w = new PickleWriter(protocol, write);
    this.#w.byte(Op.PROTO);
    this.#w.byte(protocol);
    this.#w.startFraming();
  }

  /** Any value, shared objects and repeated strings memoized (as `pickle` writes it). */
  value(v: PickleValue): this {
    this.#w.value(v, 0);
    return this.#w.boundary(this);
  }

  /** A string memoized by content (BINGET after the first), or written anew and memoized when `fresh`. */
  string(s: string, fresh = false): this {
    this.#w.string(s, fresh);
    return this.#w.boundary(this);
  }

  /** EMPTY_DICT and MEMOIZE: the memo index it has. */
  emptyDict(): number {
    this.#w.byte(Op.EMPTY_DICT);
    const index = this.#w.memoize();
    this.#w.boundary(this);
    return index;
  }

  /** EMPTY_LIST and MEMOIZE: the memo index it has. */
  emptyList(): number {
    this.#w.byte(Op.EMPTY_LIST);
    const index = this.#w.memoize();
    this.#w.boundary(this);
    return index;
  }

  /** BINGET or LONG_BINGET of a memo index. */
  get(index: number): this {
    this.#w.get(index);
    return this.#w.boundary(this);
  }

  /** MARK, APPEND, APPENDS, SETITEM, SETITEMS. */
  op(
    opcode: typeof Op.MARK | typeof Op.APPEND | typeof Op.APPENDS | typeof Op.SETITEM | typeof Op.SETITEMS,
  ): this {
    this.#w.byte(opcode);
    return this.#w.boundary(this);
  }

  /** Bytes written so far. */
  get offset(): number {
    return this.#w.offset;
  }

  /** STOP, and hand on what is left. */
  stop(): void {
    this.#w.byte(Op.STOP);
    this.#w.finish();
  }
}

class PickleWriter {
  #buf = Buffer.allocUnsafe(1 << 16);
  #len = 0;
  /** Where the open frame's header goes; -1 when not framing. */
  #frameStart = -1;
  /** Bytes already handed on. */
  #flushed = 0;
  readonly #strings = new Map<string, number>();
  readonly #objects = new Map<object, number>();
  #memoCount = 0;

  constructor(
    readonly protocol: number,
    readonly out?: (bytes: Uint8Array) => void,
  ) {}

  result(): Buffer {
    return Buffer.from(this.#buf.subarray(0, this.#len));
  }

  get offset(): number {
    return this.#flushed + this.#len;
  }

  /** From protocol 4, frames begin after PROTO (as CPython's framer starts). */
  startFraming(): void {
    if (this.protocol < 4) return;
    this.#room(FRAME_HEADER);
    this.#frameStart = this.#len;
    this.#len += FRAME_HEADER;
  }

  /** Between opcodes: close the frame when it is big enough, and hand bytes on. */
  boundary<T>(self: T): T {
    if (this.#frameStart >= 0) {
      if (this.#len - this.#frameStart - FRAME_HEADER >= FRAME_TARGET) {
        this.#closeFrame();
        if (this.#len >= FLUSH_AT) this.#flush();
        this.startFraming();
      }
    } else if (this.out !== undefined && this.#len >= FLUSH_AT) this.#flush();
    return self;
  }

  finish(): void {
    if (this.#frameStart >= 0) this.#closeFrame();
    this.#flush();
  }

  #closeFrame(): void {
    const start = this.#frameStart;
    const size = this.#len - start - FRAME_HEADER;
    if (size >= FRAME_MIN) {
      this.#buf[start] = Op.FRAME;
      this.#buf.writeBigUInt64LE(BigInt(size), start + 1);
    } else {
      this.#buf.copyWithin(start, start + FRAME_HEADER, this.#len);
      this.#len -= FRAME_HEADER;
    }
    this.#frameStart = -1;
  }

  #flush(): void {
    if (this.#len === 0) return;
    this.out!(this.#buf.subarray(0, this.#len));
    this.#flushed += this.#len;
    this.#len = 0;
  }

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.#buf.copy(next, 0, 0, this.#len);
    this.#buf = next;
  }

  byte(b: number): void {
    this.#room(1);
    this.#buf[this.#len++] = b;
  }

  #u32(op: number, n: number): void {
    this.#room(5);
    this.#buf[this.#len] = op;
    this.#buf.writeUInt32LE(n, this.#len + 1);
    this.#len += 5;
  }

  #u64(op: number, n: number): void {
    this.#room(9);
    this.#buf[this.#len] = op;
    this.#buf.writeBigUInt64LE(BigInt(n), this.#len + 1);
    this.#len += 9;
  }

  /** Remember the value just written under the next memo index. */
  memoize(): number {
    const index = this.#memoCount++;
    if (this.protocol >= 4) this.byte(Op.MEMOIZE);
    else if (index < 256) {
      this.byte(Op.BINPUT);
      this.byte(index);
    } else this.#u32(Op.LONG_BINPUT, index);
    return index;
  }

  get(index: number): void {
    if (index < 256) {
      this.byte(Op.BINGET);
      this.byte(index);
    } else this.#u32(Op.LONG_BINGET, index);
  }

  value(v: PickleValue, depth: number): void {
    if (depth > MAX_DEPTH) throw new PickleError('unpicklable', `nested deeper than ${MAX_DEPTH}`, this.#len);
    if (v === null) this.byte(Op.NONE);
    else if (typeof v === 'boolean') this.byte(v ? Op.NEWTRUE : Op.NEWFALSE);
    else if (typeof v === 'number') {
      // -0 is a float in Python too (-0.0); as an int it would come back as 0.
      if (Number.isSafeInteger(v) && !Object.is(v, -0)) this.#int(v);
      else this.#float(v);
    } else if (typeof v === 'bigint') this.#long(v);
    else if (typeof v === 'string') this.string(v);
    else if (typeof v !== 'object') {
      throw new PickleError('unpicklable', `a ${typeof v} cannot be pickled`, this.#len);
    } else {
      const seen = this.#objects.get(v);
      if (seen !== undefined) this.get(seen);
      else if (v instanceof Uint8Array) this.#bytes(v);
      else if (v instanceof PickleTuple) this.#tuple(v, depth);
      else if (Array.isArray(v)) {
        this.byte(Op.EMPTY_LIST);
        this.#objects.set(v, this.memoize());
        this.#items(v, depth);
      } else {
        this.byte(Op.EMPTY_DICT);
        this.#objects.set(v, this.memoize());
        this.#pairs(v instanceof Map ? [...v.entries()] : Object.entries(v), depth);
      }
    }
  }

  #items(list: readonly PickleValue[], depth: number): void {
    for (let start = 0; start < list.length; start += BATCH) {
      const stop = Math.min(list.length, start + BATCH);
      if (stop - start === 1) {
        this.value(list[start], depth + 1);
        this.byte(Op.APPEND);
        continue;
      }
      this.byte(Op.MARK);
      for (let i = start; i < stop; i++) this.value(list[i], depth + 1);
      this.byte(Op.APPENDS);
    }
  }

  #pairs(entries: readonly (readonly [PickleValue, PickleValue])[], depth: number): void {
    for (let start = 0; start < entries.length; start += BATCH) {
      const stop = Math.min(entries.length, start + BATCH);
      const one = stop - start === 1;
      if (!one) this.byte(Op.MARK);
      for (let i = start; i < stop; i++) {
        this.value(entries[i][0], depth + 1);
        this.value(entries[i][1], depth + 1);
      }
      this.byte(one ? Op.SETITEM : Op.SETITEMS);
    }
  }

  #tuple(t: PickleTuple, depth: number): void {
    const n = t.items.length;
    if (n === 0) {
      this.byte(Op.EMPTY_TUPLE);
      return;
    }
    if (n > 3) this.byte(Op.MARK);
    for (const x of t.items) this.value(x, depth + 1);
    this.byte(n === 1 ? Op.TUPLE1 : n === 2 ? Op.TUPLE2 : n === 3 ? Op.TUPLE3 : Op.TUPLE);
    this.#objects.set(t, this.memoize());
  }

  #int(v: number): void {
    if (v >= 0 && v < 256) {
      this.byte(Op.BININT1);
      this.byte(v);
    } else if (v >= 0 && v < 65536) {
      this.#room(3);
      this.#buf[this.#len] = Op.BININT2;
      this.#buf.writeUInt16LE(v, this.#len + 1);
      this.#len += 3;
    } else if (v >= -0x8000_0000 && v <= 0x7fff_ffff) {
      this.#room(5);
      this.#buf[this.#len] = Op.BININT;
      this.#buf.writeInt32LE(v, this.#len + 1);
      this.#len += 5;
    } else if (v > 0) {
      // LONG1 with the fewest bytes that keep the sign bit clear, as CPython's encode_long.
      this.#room(11);
      this.#buf[this.#len] = Op.LONG1;
      const at = this.#len + 2;
      let n = 0;
      let rest = v;
      while (rest > 0) {
        this.#buf[at + n++] = rest % 256;
        rest = Math.floor(rest / 256);
      }
      if (this.#buf[at + n - 1] & 0x80) this.#buf[at + n++] = 0;
      this.#buf[this.#len + 1] = n;
      this.#len = at + n;
    } else this.#long(BigInt(v));
  }

  #long(v: bigint): void {
    const bytes = encodeLong(v);
    if (bytes.length < 256) {
      this.#room(2 + bytes.length);
      this.#buf[this.#len++] = Op.LONG1;
      this.#buf[this.#len++] = bytes.length;
    } else {
      this.#room(5 + bytes.length);
      this.#buf[this.#len] = Op.LONG4;
      this.#buf.writeInt32LE(bytes.length, this.#len + 1);
      this.#len += 5;
    }
    this.#buf.set(bytes, this.#len);
    this.#len += bytes.length;
  }

  #float(v: number): void {
    this.#room(9);
    this.#buf[this.#len] = Op.BINFLOAT;
    this.#buf.writeDoubleBE(v, this.#len + 1);
    this.#len += 9;
  }

  string(s: string, fresh = false): void {
    const seen = fresh ? undefined : this.#strings.get(s);
    if (seen !== undefined) {
      this.get(seen);
      return;
    }
    const n = Buffer.byteLength(s, 'utf8');
    if (n < 256 && this.protocol >= 4) {
      this.#room(2 + n);
      this.#buf[this.#len++] = Op.SHORT_BINUNICODE;
      this.#buf[this.#len++] = n;
    } else if (n <= 0xffff_ffff) {
      this.#room(5 + n);
      this.#u32(Op.BINUNICODE, n);
    } else {
      this.#room(9 + n);
      this.#u64(Op.BINUNICODE8, n);
    }
    this.#len += this.#buf.write(s, this.#len, 'utf8');
    this.#strings.set(s, this.memoize());
  }

  #bytes(b: Uint8Array): void {
    if (this.protocol < 3) throw new PickleError('unpicklable', 'protocol 2 cannot hold bytes', this.#len);
    if (b.length < 256) {
      this.#room(2 + b.length);
      this.#buf[this.#len++] = Op.SHORT_BINBYTES;
      this.#buf[this.#len++] = b.length;
    } else if (b.length <= 0xffff_ffff) {
      this.#room(5 + b.length);
      this.#u32(Op.BINBYTES, b.length);
    } else {
      this.#room(9 + b.length);
      this.#u64(Op.BINBYTES8, b.length);
    }
    this.#buf.set(b, this.#len);
    this.#len += b.length;
    this.#objects.set(b, this.memoize());
  }
}

/** Two's-complement little-endian bytes, as few as keep the sign (CPython's encode_long). */
export function encodeLong(v: bigint): Uint8Array {
  if (v === 0n) return new Uint8Array(0);
  const out: number[] = [];
  let rest = v;
  // Emit bytes until what is left is only sign extension of the last byte's top bit.
  for (;;) {
    const byte = Number(rest & 0xffn);
    out.push(byte);
    rest >>= 8n;
    if ((rest === 0n && (byte & 0x80) === 0) || (rest === -1n && (byte & 0x80) !== 0)) break;
  }
  return Uint8Array.from(out);
}
