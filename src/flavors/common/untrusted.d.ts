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
import type { Box } from '../../c-api/arguments.js';
/** True for an out box the call can write without running caller code (see the Note). */
export declare function isWritableBox(x: unknown): x is Box<unknown>;
/** Write a box that passed isWritableBox; false if a Proxy refused it after all. */
export declare function writeBox<T>(box: Box<T>, value: T): boolean;
/**
 * Write a box's own value back to it: unobservable for an ordinary object,
 * and a Proxy that refuses writes says so now. For a call whose work cannot
 * be undone once done (an exported shareable token).
 */
export declare function probeBox(box: Box<unknown>): boolean;
/**
 * Write two boxes or neither: the second is probed before the first is
 * written, and if it still refuses, the first gets its old value back.
 */
export declare function writeBoxes<A, B>(first: Box<A>, a: A, second: Box<B>, b: B): boolean;
/** The fields of a caller's struct, each read once into a plain object; undefined if it is no object or a read throws. */
export declare function readFields<K extends string>(
  x: unknown,
  keys: readonly K[],
): Partial<Record<K, unknown>> | undefined;
/** Which fields of a struct to copy: a name, or a name and the fields of the struct it holds. */
export type StructShape = readonly (string | readonly [string, StructShape])[];
/**
 * A plain copy of a caller's struct with the fields `shape` names, each read
 * once (nested structs copied the same way; a nested field that is no object
 * is kept as it is, so a missing location stays missing); undefined if `x` is
 * no object or any read throws.
 */
export declare function readStruct<T>(x: unknown, shape: StructShape): T | undefined;
/** The fields of a location struct (CUmemLocation, hipMemLocation, aclrtMemLocation). */
export declare const LOCATION_SHAPE: StructShape;
/** An access descriptor's fields (CUmemAccessDesc, hipMemAccessDesc, aclrtMemAccessDesc). */
export declare const ACCESS_DESC_SHAPE: StructShape;
/** CUmemAllocationProp's and hipMemAllocationProp's fields. */
export declare const ALLOCATION_PROP_SHAPE: StructShape;
/**
 * The most elements a call reads from a caller's list. A C caller's count
 * past its array reads past the end; here a Proxy can claim any length and
 * answer every index, so a count above this is refused instead of read.
 */
export declare const MAX_LIST_LENGTH = 4096;
/** The first `count` elements of a caller's array-like (an array or typed array), read once; undefined if a read throws. */
export declare function readArrayLike(x: unknown, count: number): unknown[] | 'short' | undefined;
/**
 * The first `count` elements of a caller's array (fewer when it is
 * shorter), read once, Array.isArray included (it throws on a revoked
 * Proxy); 'not-array' for anything else or a read that throws.
 */
export declare function readList(x: unknown, count: number): unknown[] | 'not-array';
/** True for a real Uint8Array (a subclass included), by its internal slots. */
export declare function isHostBuffer(x: unknown): x is Uint8Array;
/**
 * A plain Uint8Array over exactly the bytes of the caller's Uint8Array
 * (length 0 when its buffer is detached), or undefined for anything else.
 */
export declare function hostBytes(x: unknown): Uint8Array | undefined;
/** A caller's value for a message; never throws, never runs the value's code. */
export declare function show(x: unknown): string;
