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
 *    which the call answers as a missing struct. The allocation properties,
 *    on every create's path, are read into a reader the flavor keeps
 *    (AllocationPropReader) instead, set only after the last read, so a
 *    getter calling back in cannot mix two calls' fields;
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

import type { Box } from '../../c-api/arguments.js';

/** True for an out box the call can write without running caller code (see the Note). */
export function isWritableBox(x: unknown): x is Box<unknown> {
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
export function writeBox<T>(box: Box<T>, value: T): boolean {
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
export function probeBox(box: Box<unknown>): boolean {
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
export function writeBoxes<A, B>(first: Box<A>, a: A, second: Box<B>, b: B): boolean {
  if (!probeBox(second)) return false;
  let old: unknown;
  try {
    old = first.value;
  } catch {
    return false;
  }
  if (!writeBox(first, a)) return false;
  if (writeBox(second, b)) return true;
  writeBox(first, old as A);
  return false;
}

/**
 * Write every box or none: each is probed and its old value read first; if a
 * write is refused all the same, the boxes already written get their old
 * values back.
 */
export function writeAllBoxes<T>(boxes: readonly Box<T>[], values: readonly T[]): boolean {
  const old: unknown[] = [];
  try {
    for (const b of boxes) {
      if (!probeBox(b)) return false;
      old.push(b.value);
    }
  } catch {
    return false;
  }
  for (let i = 0; i < boxes.length; i++) {
    if (writeBox(boxes[i], values[i])) continue;
    for (let j = 0; j < i; j++) writeBox(boxes[j], old[j] as T);
    return false;
  }
  return true;
}

/**
 * Hand out what a call just made through the caller's box, or take it back
 * when the box refuses the write (a Proxy that passed isWritableBox): true
 * if written. The allocating calls' last step, so a refused box leaves
 * nothing made.
 */
export function writeOrTakeBack<T>(box: Box<T>, value: T, takeBack: () => void): boolean {
  if (writeBox(box, value)) return true;
  takeBack();
  return false;
}

/** The fields of a caller's struct, each read once into a plain object; undefined if it is no object or a read throws. */
export function readFields<K extends string>(
  x: unknown,
  keys: readonly K[],
): Partial<Record<K, unknown>> | undefined {
  if (typeof x !== 'object' || x === null) return undefined;
  try {
    const out: Partial<Record<K, unknown>> = {};
    for (const k of keys) out[k] = (x as Record<K, unknown>)[k];
    return out;
  } catch {
    return undefined;
  }
}

/** Which fields of a struct to copy: a name, or a name and the fields of the struct it holds. */
export type StructShape = readonly (string | readonly [string, StructShape])[];

/**
 * A plain copy of a caller's struct with the fields `shape` names, each read
 * once (nested structs copied the same way; a nested field that is no object
 * is kept as it is, so a missing location stays missing); undefined if `x` is
 * no object or any read throws.
 */
export function readStruct<T>(x: unknown, shape: StructShape): T | undefined {
  if (typeof x !== 'object' || x === null) return undefined;
  try {
    return copyStruct(x, shape) as T;
  } catch {
    return undefined;
  }
}

function copyStruct(x: object, shape: StructShape): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of shape) {
    if (typeof field === 'string') out[field] = (x as Record<string, unknown>)[field];
    else {
      const v = (x as Record<string, unknown>)[field[0]];
      out[field[0]] = typeof v === 'object' && v !== null ? copyStruct(v, field[1]) : v;
    }
  }
  return out;
}

/** The fields of a location struct (CUmemLocation, hipMemLocation, aclrtMemLocation). */
export const LOCATION_SHAPE: StructShape = ['type', 'id'];
/** An access descriptor's fields (CUmemAccessDesc, hipMemAccessDesc, aclrtMemAccessDesc). */
export const ACCESS_DESC_SHAPE: StructShape = ['flags', ['location', LOCATION_SHAPE]];
/**
 * CUmemAllocationProp or hipMemAllocationProp (the same fields), each read
 * once, in struct order (the location's and allocFlags' fields too), into
 * this reader's own fields. Creating memory is on every allocator's hot
 * path, so a flavor keeps one reader and its create allocates no copy
 * (Note [Property cache] in src/flavors/cuda/handles.ts); copy() is the
 * plain copy readStruct would make, for the calls that keep one. A field
 * that is no object (a missing location) is kept as it is.
 */
export class AllocationPropReader {
  type: unknown = undefined;
  requestedHandleTypes: unknown = undefined;
  /** Whether location is an object; then locationType and locationId hold its fields, else location itself. */
  locationIsStruct = false;
  location: unknown = undefined;
  locationType: unknown = undefined;
  locationId: unknown = undefined;
  win32HandleMetaData: unknown = undefined;
  /** Whether allocFlags is an object; then the three fields below hold its fields, else allocFlags itself. */
  allocFlagsIsStruct = false;
  allocFlags: unknown = undefined;
  compressionType: unknown = undefined;
  gpuDirectRDMACapable: unknown = undefined;
  usage: unknown = undefined;

  /**
   * Read `x`; false if it is no object or a read throws (then every field is
   * undefined). The fields are set only after the last read of the caller's
   * struct, so a getter that calls back into the flavor cannot leave this
   * read with fields of another.
   */
  read(x: unknown): boolean {
    if (typeof x !== 'object' || x === null) {
      this.#clear();
      return false;
    }
    let type: unknown;
    let requestedHandleTypes: unknown;
    let loc: unknown;
    let locType: unknown;
    let locId: unknown;
    let win32: unknown;
    let f: unknown;
    let compressionType: unknown;
    let gpuDirectRDMACapable: unknown;
    let usage: unknown;
    try {
      const p = x as Record<string, unknown>;
      type = p.type;
      requestedHandleTypes = p.requestedHandleTypes;
      loc = p.location;
      if (typeof loc === 'object' && loc !== null) {
        locType = (loc as Record<string, unknown>).type;
        locId = (loc as Record<string, unknown>).id;
      }
      win32 = p.win32HandleMetaData;
      f = p.allocFlags;
      if (typeof f === 'object' && f !== null) {
        compressionType = (f as Record<string, unknown>).compressionType;
        gpuDirectRDMACapable = (f as Record<string, unknown>).gpuDirectRDMACapable;
        usage = (f as Record<string, unknown>).usage;
      }
    } catch {
      this.#clear();
      return false;
    }
    this.type = type;
    this.requestedHandleTypes = requestedHandleTypes;
    this.locationIsStruct = typeof loc === 'object' && loc !== null;
    this.location = this.locationIsStruct ? undefined : loc;
    this.locationType = locType;
    this.locationId = locId;
    this.win32HandleMetaData = win32;
    this.allocFlagsIsStruct = typeof f === 'object' && f !== null;
    this.allocFlags = this.allocFlagsIsStruct ? undefined : f;
    this.compressionType = compressionType;
    this.gpuDirectRDMACapable = gpuDirectRDMACapable;
    this.usage = usage;
    return true;
  }

  /** What was read, as a plain copy. */
  copy<T>(): T {
    return {
      type: this.type,
      requestedHandleTypes: this.requestedHandleTypes,
      location: this.locationIsStruct ? { type: this.locationType, id: this.locationId } : this.location,
      win32HandleMetaData: this.win32HandleMetaData,
      allocFlags: this.allocFlagsIsStruct
        ? {
            compressionType: this.compressionType,
            gpuDirectRDMACapable: this.gpuDirectRDMACapable,
            usage: this.usage,
          }
        : this.allocFlags,
    } as T;
  }

  /** Every field undefined, as after a read that failed. */
  #clear(): void {
    this.type = this.requestedHandleTypes = this.location = this.locationType = this.locationId = undefined;
    this.win32HandleMetaData = this.allocFlags = undefined;
    this.compressionType = this.gpuDirectRDMACapable = this.usage = undefined;
    this.locationIsStruct = this.allocFlagsIsStruct = false;
  }
}

/**
 * The most elements a call reads from a caller's list. A C caller's count
 * past its array reads past the end; here a Proxy can claim any length and
 * answer every index, so a count above this is refused instead of read.
 */
export const MAX_LIST_LENGTH = 4096;

/** The first `count` elements of a caller's array-like (an array or typed array), read once; undefined if a read throws. */
export function readArrayLike(x: unknown, count: number): unknown[] | 'short' | undefined {
  if (typeof x !== 'object' || x === null || count > MAX_LIST_LENGTH) return undefined;
  try {
    const length = (x as ArrayLike<unknown>).length;
    if (typeof length !== 'number') return undefined;
    if (!(length >= count)) return 'short';
    const out = new Array<unknown>(count);
    for (let i = 0; i < count; i++) out[i] = (x as ArrayLike<unknown>)[i];
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
export function readList(x: unknown, count: number): unknown[] | 'not-array' {
  if (count > MAX_LIST_LENGTH) return 'not-array';
  try {
    if (!Array.isArray(x)) return 'not-array';
    const length = x.length;
    const n = Math.min(length, count);
    const out = new Array<unknown>(n);
    for (let i = 0; i < n; i++) out[i] = x[i];
    return out;
  } catch {
    return 'not-array';
  }
}

// %TypedArray%.prototype's getters read a view's internal slots, whatever its own properties say.
const TYPED_ARRAY_PROTOTYPE = Object.getPrototypeOf(Uint8Array.prototype) as object;
const getter = (name: PropertyKey) =>
  Object.getOwnPropertyDescriptor(TYPED_ARRAY_PROTOTYPE, name)?.get as (this: unknown) => unknown;
const typeTagOf = getter(Symbol.toStringTag);
const bufferOf = getter('buffer') as (this: unknown) => ArrayBufferLike;
const byteOffsetOf = getter('byteOffset') as (this: unknown) => number;
const byteLengthOf = getter('byteLength') as (this: unknown) => number;

/** True for a real Uint8Array (a subclass included), by its internal slots. */
export function isHostBuffer(x: unknown): x is Uint8Array {
  return ArrayBuffer.isView(x) && typeTagOf.call(x) === 'Uint8Array';
}

/**
 * A plain Uint8Array over exactly the bytes of the caller's Uint8Array
 * (length 0 when its buffer is detached), or undefined for anything else.
 */
export function hostBytes(x: unknown): Uint8Array | undefined {
  if (!isHostBuffer(x)) return undefined;
  const length = byteLengthOf.call(x);
  if (length === 0) return new Uint8Array(0);
  return new Uint8Array(bufferOf.call(x), byteOffsetOf.call(x), length);
}

/** A caller's value for a message; never throws, never runs the value's code. */
export function show(x: unknown): string {
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
