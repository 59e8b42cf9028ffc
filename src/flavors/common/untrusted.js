/**
 * Reading and writing what a caller passed, without trusting it.
 *
 * Note [Untrusted arguments]
 * A C caller passes bytes; a JavaScript caller passes objects, and an object
 * can run code when it is touched: a getter, a setter, a Proxy trap, a
 * subclass's `length`, a frozen or read-only `value`. The front ends promise
 * never to throw for bad input and never to change anything when a call
 * fails, so every touch of a caller's object goes through this file:
 *  - an out box is checked before any work (isWritableBox: an own writable
 *    data property `value`, or an extensible object with no accessor or
 *    read-only `value` up its prototype chain); the check itself runs no
 *    caller code for ordinary objects, only a Proxy's traps, which are
 *    caught. A Proxy can still pass the check and refuse the write, so the
 *    write after the work is writeBox (false instead of a throw), and the
 *    allocating calls undo their work when it fails;
 *  - a struct is read once, field by field, into a plain copy
 *    (readFields), so a getter runs once and a value cannot change between
 *    validation and use; a throwing getter or trap makes the copy undefined,
 *    which the call answers as a missing struct;
 *  - an array of structs is read once (readList), Array.isArray included (it
 *    throws on a revoked Proxy);
 *  - a host buffer is recognised by its internal slots, not its properties
 *    (hostBytes): ArrayBuffer.isView, the element type and byteLength read
 *    through %TypedArray%.prototype's getters, and what core gets is a plain
 *    Uint8Array over the same bytes, so no species constructor, overridden
 *    `length` or `subarray` of the caller runs;
 *  - a caller's value is formatted into a message only through show(), which
 *    never calls the value's own toString (a Symbol, an Object.create(null)).
 */
/** True for an out box the call can write without running caller code (see the Note). */
export function isWritableBox(x) {
  if (typeof x !== 'object' || x === null) return false;
  try {
    const own = Object.getOwnPropertyDescriptor(x, 'value');
    if (own !== undefined) return own.writable === true;
    if (!Object.isExtensible(x)) return false;
    for (let p = Object.getPrototypeOf(x); p !== null; p = Object.getPrototypeOf(p)) {
      const inherited = Object.getOwnPropertyDescriptor(p, 'value');
      // A setter up the chain would run caller code; a read-only value refuses the write.
      if (inherited !== undefined) return inherited.writable === true;
    }
    return true;
  } catch {
    return false;
  }
}
/** Write a box that passed isWritableBox; false if a Proxy refused it after all. */
export function writeBox(box, value) {
  try {
    box.value = value;
    return true;
  } catch {
    return false;
  }
}
/**
 * Write a box's own value back to it: unobservable for an ordinary object,
 * and a Proxy that refuses writes says so now. For a call whose work cannot
 * be undone once done (an exported shareable token).
 */
export function probeBox(box) {
  try {
    const v = box.value;
    box.value = v;
    return true;
  } catch {
    return false;
  }
}
/**
 * Write two boxes or neither: the second is probed before the first is
 * written, and if it still refuses, the first gets its old value back.
 */
export function writeBoxes(first, a, second, b) {
  if (!probeBox(second)) return false;
  let old;
  try {
    old = first.value;
  } catch {
    return false;
  }
  if (!writeBox(first, a)) return false;
  if (writeBox(second, b)) return true;
  writeBox(first, old);
  return false;
}
/** The fields of a caller's struct, each read once into a plain object; undefined if it is no object or a read throws. */
export function readFields(x, keys) {
  if (typeof x !== 'object' || x === null) return undefined;
  try {
    const out = {};
    for (const k of keys) out[k] = x[k];
    return out;
  } catch {
    return undefined;
  }
}
/**
 * A plain copy of a caller's struct with the fields `shape` names, each read
 * once (nested structs copied the same way; a nested field that is no object
 * is kept as it is, so a missing location stays missing); undefined if `x` is
 * no object or any read throws.
 */
export function readStruct(x, shape) {
  if (typeof x !== 'object' || x === null) return undefined;
  try {
    return copyStruct(x, shape);
  } catch {
    return undefined;
  }
}
function copyStruct(x, shape) {
  const out = {};
  for (const field of shape) {
    if (typeof field === 'string') out[field] = x[field];
    else {
      const v = x[field[0]];
      out[field[0]] = typeof v === 'object' && v !== null ? copyStruct(v, field[1]) : v;
    }
  }
  return out;
}
/** The fields of a location struct (CUmemLocation, hipMemLocation, aclrtMemLocation). */
export const LOCATION_SHAPE = ['type', 'id'];
/** An access descriptor's fields (CUmemAccessDesc, hipMemAccessDesc, aclrtMemAccessDesc). */
export const ACCESS_DESC_SHAPE = ['flags', ['location', LOCATION_SHAPE]];
/** CUmemAllocationProp's and hipMemAllocationProp's fields. */
export const ALLOCATION_PROP_SHAPE = [
  'type',
  'requestedHandleTypes',
  ['location', LOCATION_SHAPE],
  'win32HandleMetaData',
  ['allocFlags', ['compressionType', 'gpuDirectRDMACapable', 'usage']],
];
/**
 * The most elements a call reads from a caller's list. A C caller's count
 * past its array reads past the end; here a Proxy can claim any length and
 * answer every index, so a count above this is refused instead of read.
 */
export const MAX_LIST_LENGTH = 4096;
/** The first `count` elements of a caller's array-like (an array or typed array), read once; undefined if a read throws. */
export function readArrayLike(x, count) {
  if (typeof x !== 'object' || x === null || count > MAX_LIST_LENGTH) return undefined;
  try {
    const length = x.length;
    if (typeof length !== 'number') return undefined;
    if (!(length >= count)) return 'short';
    const out = new Array(count);
    for (let i = 0; i < count; i++) out[i] = x[i];
    return out;
  } catch {
    return undefined;
  }
}
/**
 * The first `count` elements of a caller's array (fewer when it is
 * shorter), read once, Array.isArray included (it throws on a revoked
 * Proxy); 'not-array' for anything else or a read that throws.
 */
export function readList(x, count) {
  if (count > MAX_LIST_LENGTH) return 'not-array';
  try {
    if (!Array.isArray(x)) return 'not-array';
    const length = x.length;
    const n = Math.min(length, count);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = x[i];
    return out;
  } catch {
    return 'not-array';
  }
}
// %TypedArray%.prototype's getters read a view's internal slots, whatever its own properties say.
const TYPED_ARRAY_PROTOTYPE = Object.getPrototypeOf(Uint8Array.prototype);
const getter = (name) => Object.getOwnPropertyDescriptor(TYPED_ARRAY_PROTOTYPE, name)?.get;
const typeTagOf = getter(Symbol.toStringTag);
const bufferOf = getter('buffer');
const byteOffsetOf = getter('byteOffset');
const byteLengthOf = getter('byteLength');
/** True for a real Uint8Array (a subclass included), by its internal slots. */
export function isHostBuffer(x) {
  return ArrayBuffer.isView(x) && typeTagOf.call(x) === 'Uint8Array';
}
/**
 * A plain Uint8Array over exactly the bytes of the caller's Uint8Array
 * (length 0 when its buffer is detached), or undefined for anything else.
 */
export function hostBytes(x) {
  if (!isHostBuffer(x)) return undefined;
  const length = byteLengthOf.call(x);
  if (length === 0) return new Uint8Array(0);
  return new Uint8Array(bufferOf.call(x), byteOffsetOf.call(x), length);
}
/** A caller's value for a message; never throws, never runs the value's code. */
export function show(x) {
  switch (typeof x) {
    case 'number':
    case 'bigint':
    case 'boolean':
    case 'undefined':
      return String(x);
    case 'string':
      return JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}...` : x);
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
    default:
      return x === null ? 'null' : 'an object';
  }
}
//# sourceMappingURL=untrusted.js.map
