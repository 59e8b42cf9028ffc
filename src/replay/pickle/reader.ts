/**
 * A reader for what Python's pickle writes, protocols 2 to 5, limited to the
 * plain data a memory snapshot holds (see value.ts for the value mapping).
 * Anything that would run code (GLOBAL, REDUCE, BUILD, ...) is refused with a
 * PickleError naming the opcode and its offset.
 *
 * Note [Reading fast]: a million-event snapshot is tens of millions of
 * opcodes, so the loop keeps the cursor in a local, reads operands straight
 * from the bytes (a DataView only for floats and wide ints), and decodes short
 * ASCII strings through a small cache (StringCache) so that the same key read
 * a million times is one string, not a million. Python's own pickler
 * memoizes repeated strings and shared frame dicts, so most of a real
 * snapshot is BINGET, which costs an array read.
 */
import { describeOpcode, Op } from './opcodes.js';
import { type PickleDict, PickleError, PickleTuple, type PickleValue } from './value.js';

const EMPTY_TUPLE = Object.freeze(new PickleTuple(Object.freeze([])));

/** Unpickle one value from `data` (the whole pickle, already inflated). */
export function unpickle(data: Uint8Array): PickleValue {
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const end = buf.length;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const strings = new StringCache();
  const stack: PickleValue[] = [];
  const marks: number[] = [];
  const memo: PickleValue[] = [];
  let memoCount = 0;
  let pos = 0;

  const truncated = (at: number, op: number) =>
    new PickleError(
      'truncated',
      `the pickle is truncated: ${describeOpcode(op)} at offset ${at} needs bytes past the end (${end} bytes)`,
      at,
    );
  const malformed = (at: number, op: number, what: string) =>
    new PickleError('malformed', `malformed pickle: ${describeOpcode(op)} at offset ${at}: ${what}`, at);
  const popMark = (at: number, op: number): number => {
    const m = marks.pop();
    if (m === undefined) throw malformed(at, op, 'no MARK to pop');
    return m;
  };
  const pop = (at: number, op: number): PickleValue => {
    if (stack.length <= (marks.length > 0 ? marks[marks.length - 1] : 0))
      throw malformed(at, op, 'the stack is empty');
    return stack.pop()!;
  };
  const top = (at: number, op: number): PickleValue => {
    if (stack.length === 0) throw malformed(at, op, 'the stack is empty');
    return stack[stack.length - 1];
  };
  const fromMemo = (at: number, op: number, index: number): PickleValue => {
    const v = memo[index];
    if (v === undefined) throw malformed(at, op, `the memo has no entry ${index}`);
    return v;
  };
  const putMemo = (index: number, v: PickleValue) => {
    if (memo[index] === undefined) memoCount++;
    memo[index] = v;
  };
  /** Set stack[from..] as key, value pairs into the dict at stack[from - 1], then drop them. */
  const setItems = (at: number, op: number, from: number) => {
    if (from === 0) throw malformed(at, op, 'no dict below the MARK');
    if ((stack.length - from) % 2 !== 0) throw malformed(at, op, 'an odd number of keys and values');
    let d = stack[from - 1];
    for (let i = from; i < stack.length; i += 2) {
      const key = stack[i];
      if (typeof key === 'string' && isPlainObject(d)) {
        setOwn(d as PickleDict, key, stack[i + 1]);
      } else if (d instanceof Map) {
        d.set(key, stack[i + 1]);
      } else if (isPlainObject(d)) {
        d = toMap(d as PickleDict, memo, stack, from - 1);
        d.set(key, stack[i + 1]);
      } else {
        throw malformed(at, op, 'the object below the MARK is not a dict');
      }
    }
    stack.length = from;
  };

  if (end > 0 && buf[0] !== Op.PROTO) {
    throw new PickleError(
      'malformed',
      `not a pickle of protocol 2 or later (first byte 0x${buf[0].toString(16).padStart(2, '0')}, expected PROTO 0x80)`,
      0,
    );
  }

  for (;;) {
    if (pos >= end) {
      throw new PickleError(
        'truncated',
        `the pickle is truncated: no STOP before the end (${end} bytes)`,
        pos,
      );
    }
    const at = pos;
    const op = buf[pos++];
    switch (op) {
      case Op.PROTO: {
        if (pos + 1 > end) throw truncated(at, op);
        const version = buf[pos++];
        if (version < 2 || version > 5) throw malformed(at, op, `protocol ${version} is not 2 to 5`);
        break;
      }
      case Op.FRAME:
        // The frame's length: the whole pickle is in memory, so frames need no handling.
        if (pos + 8 > end) throw truncated(at, op);
        pos += 8;
        break;
      case Op.MARK:
        marks.push(stack.length);
        break;
      case Op.STOP: {
        if (stack.length === 0) throw malformed(at, op, 'the stack is empty');
        return stack[stack.length - 1];
      }
      case Op.EMPTY_DICT:
        stack.push({});
        break;
      case Op.EMPTY_LIST:
        stack.push([]);
        break;
      case Op.EMPTY_TUPLE:
        stack.push(EMPTY_TUPLE);
        break;
      case Op.MEMOIZE:
        putMemo(memoCount, top(at, op));
        break;
      case Op.BINPUT:
        if (pos + 1 > end) throw truncated(at, op);
        putMemo(buf[pos++], top(at, op));
        break;
      case Op.LONG_BINPUT:
        if (pos + 4 > end) throw truncated(at, op);
        putMemo(view.getUint32(pos, true), top(at, op));
        pos += 4;
        break;
      case Op.BINGET:
        if (pos + 1 > end) throw truncated(at, op);
        stack.push(fromMemo(at, op, buf[pos++]));
        break;
      case Op.LONG_BINGET:
        if (pos + 4 > end) throw truncated(at, op);
        stack.push(fromMemo(at, op, view.getUint32(pos, true)));
        pos += 4;
        break;
      case Op.SHORT_BINUNICODE: {
        if (pos + 1 > end) throw truncated(at, op);
        const n = buf[pos++];
        if (pos + n > end) throw truncated(at, op);
        stack.push(strings.decode(buf, pos, n));
        pos += n;
        break;
      }
      case Op.BINUNICODE: {
        if (pos + 4 > end) throw truncated(at, op);
        const n = view.getUint32(pos, true);
        pos += 4;
        if (pos + n > end) throw truncated(at, op);
        stack.push(strings.decode(buf, pos, n));
        pos += n;
        break;
      }
      case Op.BINUNICODE8: {
        if (pos + 8 > end) throw truncated(at, op);
        const n = Number(view.getBigUint64(pos, true));
        pos += 8;
        if (pos + n > end) throw truncated(at, op);
        stack.push(strings.decode(buf, pos, n));
        pos += n;
        break;
      }
      case Op.BININT1:
        if (pos + 1 > end) throw truncated(at, op);
        stack.push(buf[pos++]);
        break;
      case Op.BININT2:
        if (pos + 2 > end) throw truncated(at, op);
        stack.push(buf[pos] | (buf[pos + 1] << 8));
        pos += 2;
        break;
      case Op.BININT:
        if (pos + 4 > end) throw truncated(at, op);
        stack.push(view.getInt32(pos, true));
        pos += 4;
        break;
      case Op.LONG1: {
        if (pos + 1 > end) throw truncated(at, op);
        const n = buf[pos++];
        if (pos + n > end) throw truncated(at, op);
        stack.push(readLong(buf, pos, n));
        pos += n;
        break;
      }
      case Op.LONG4: {
        if (pos + 4 > end) throw truncated(at, op);
        const n = view.getInt32(pos, true);
        pos += 4;
        if (n < 0) throw malformed(at, op, `negative byte count ${n}`);
        if (pos + n > end) throw truncated(at, op);
        stack.push(readLong(buf, pos, n));
        pos += n;
        break;
      }
      case Op.BINFLOAT:
        if (pos + 8 > end) throw truncated(at, op);
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
      case Op.SHORT_BINBYTES: {
        if (pos + 1 > end) throw truncated(at, op);
        const n = buf[pos++];
        if (pos + n > end) throw truncated(at, op);
        stack.push(copyBytes(buf, pos, n));
        pos += n;
        break;
      }
      case Op.BINBYTES: {
        if (pos + 4 > end) throw truncated(at, op);
        const n = view.getUint32(pos, true);
        pos += 4;
        if (pos + n > end) throw truncated(at, op);
        stack.push(copyBytes(buf, pos, n));
        pos += n;
        break;
      }
      case Op.BINBYTES8: {
        if (pos + 8 > end) throw truncated(at, op);
        const n = Number(view.getBigUint64(pos, true));
        pos += 8;
        if (pos + n > end) throw truncated(at, op);
        stack.push(copyBytes(buf, pos, n));
        pos += n;
        break;
      }
      case Op.APPEND: {
        const v = pop(at, op);
        const list = top(at, op);
        if (!Array.isArray(list)) throw malformed(at, op, 'APPEND to something that is not a list');
        list.push(v);
        break;
      }
      case Op.APPENDS: {
        const from = popMark(at, op);
        const list = from > 0 ? stack[from - 1] : undefined;
        if (!Array.isArray(list)) throw malformed(at, op, 'no list below the MARK');
        for (let i = from; i < stack.length; i++) list.push(stack[i]);
        stack.length = from;
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
        stack.push(new PickleTuple([a]));
        break;
      }
      case Op.TUPLE2: {
        const b = pop(at, op);
        const a = pop(at, op);
        stack.push(new PickleTuple([a, b]));
        break;
      }
      case Op.TUPLE3: {
        const c = pop(at, op);
        const b = pop(at, op);
        const a = pop(at, op);
        stack.push(new PickleTuple([a, b, c]));
        break;
      }
      case Op.TUPLE: {
        const from = popMark(at, op);
        const items = stack.slice(from);
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
      default:
        throw new PickleError(
          'unsupported-opcode',
          `unsupported pickle opcode ${describeOpcode(op)} at offset ${at}: only plain data (dicts, lists, tuples, strings, numbers, bytes) is read`,
          at,
        );
    }
  }
}

function isPlainObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

/** Set an own property, '__proto__' included (assignment would change the prototype instead). */
function setOwn(d: PickleDict, key: string, value: PickleValue): void {
  if (key === '__proto__')
    Object.defineProperty(d, key, { value, writable: true, enumerable: true, configurable: true });
  else d[key] = value;
}

/**
 * A dict that met a key that is not a string becomes a Map holding what it
 * had. The memo and the stack slot that refer to it are pointed at the Map;
 * a dict that contains itself before its first such key keeps the old object
 * inside (no snapshot does that).
 */
function toMap(
  d: PickleDict,
  memo: PickleValue[],
  stack: PickleValue[],
  slot: number,
): Map<PickleValue, PickleValue> {
  const m = new Map<PickleValue, PickleValue>(Object.entries(d));
  for (let i = 0; i < memo.length; i++) if (memo[i] === d) memo[i] = m;
  stack[slot] = m;
  return m;
}

function copyBytes(buf: Buffer, pos: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  out.set(buf.subarray(pos, pos + n));
  return out;
}

const TWO_32 = 2 ** 32;
const TWO_21 = 2 ** 21;

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
  let b = 0n;
  for (let i = n - 1; i >= 0; i--) b = (b << 8n) | BigInt(buf[pos + i]);
  if (negative) b -= 1n << BigInt(8 * n);
  const asNumber = Number(b);
  return Number.isSafeInteger(asNumber) ? asNumber : b;
}

/**
 * Short ASCII strings by content: a hit gives back the string read before
 * (no new string, no decoding). Slots are overwritten on collision, so the
 * cache stays small however many distinct strings go by.
 */
class StringCache {
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
    const fresh = buf.toString('latin1', pos, pos + n);
    this.#slots[slot] = fresh;
    return fresh;
  }
}

function sameAscii(s: string, buf: Uint8Array, pos: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (s.charCodeAt(i) !== buf[pos + i]) return false;
  return true;
}
