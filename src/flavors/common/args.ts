/**
 * Argument conversion shared by the C-shaped flavors. C callers pass 64-bit
 * integers; here they arrive as bigint or number and become plain numbers
 * (or -1 when no valid non-negative integer below 2^53 was given, which no
 * rule accepts).
 */

import type { Box } from '../../c-api/arguments.js';
import { isWritableBox } from './untrusted.js';

export type { Box, Size } from '../../c-api/arguments.js';

const MAX = BigInt(Number.MAX_SAFE_INTEGER);

/** A non-negative integer argument as a number, or -1 if it is not one. */
export function toCount(x: unknown): number {
  if (typeof x === 'number') return Number.isSafeInteger(x) && x >= 0 ? x : -1;
  if (typeof x === 'bigint') {
    // Exact: any bigint above 2^53 - 1 converts to 2^53 or more.
    const n = Number(x);
    return n >= 0 && n <= Number.MAX_SAFE_INTEGER ? n : -1;
  }
  return -1;
}

/** A C int argument (may be negative), or NaN if it is not an integer. */
export function toInt(x: unknown): number {
  if (typeof x === 'number') return Number.isInteger(x) ? x : Number.NaN;
  if (typeof x === 'bigint') return x >= -MAX && x <= MAX ? Number(x) : Number.NaN;
  return Number.NaN;
}

/** True for a usable out-parameter (C's non-NULL pointer) that the call can write (Note [Untrusted arguments]). */
export const isBox: (x: unknown) => x is Box<unknown> = isWritableBox;

/** True for a struct argument that is present (C's non-NULL struct pointer). */
export function isStruct<T>(x: T): x is NonNullable<T> & object {
  return typeof x === 'object' && x !== null;
}

export { isPowerOfTwo } from '../../util/integers.js';
export {
  ACCESS_DESC_SHAPE,
  AllocationPropReader,
  hostBytes,
  isHostBuffer,
  LOCATION_SHAPE,
  MAX_LIST_LENGTH,
  probeBox,
  readArrayLike,
  readFields,
  readList,
  readStruct,
  type StructShape,
  show,
  writeAllBoxes,
  writeBox,
  writeBoxes,
  writeOrTakeBack,
} from './untrusted.js';

/**
 * Converts device addresses (or handles) between the API's bigint and
 * core's number, remembering the last pair. Note [Address memo]: the commonest pointer
 * argument is the one the previous call returned (reserve, then map, set
 * access, unmap and free at that address), and each conversion costs about
 * as much as a map lookup, so one remembered pair removes most of them.
 * Per flavor instance: no module state.
 *
 * Note [Handle steps]: handle values the flavor hands out grow by the same
 * step from one create to the next (core's generational handles, one slot
 * reused), and BigInt(n) is a call into V8's runtime, which beside a real
 * driver call runs with cold caches. So a new value one step past the last
 * is the last bigint plus the step's, an inline addition; both are exact
 * (safe integers, their difference exact too).
 */
export class BigIntMemo {
  #big = -1n;
  #num = -1;
  #step = 0;
  #stepBig: bigint | undefined;

  toBigInt(n: number): bigint {
    if (n === this.#num) return this.#big;
    const step = n - this.#num;
    // #big is always BigInt(#num) (-1n and -1 at first), so adding the step's bigint gives BigInt(n).
    // The step's bigint is made at its first repeat: values that do not step evenly cost one BigInt each.
    if (step === this.#step) {
      this.#stepBig ??= BigInt(step);
      this.#big += this.#stepBig;
    } else {
      this.#big = BigInt(n);
      this.#step = step;
      this.#stepBig = undefined;
    }
    this.#num = n;
    return this.#big;
  }

  /** Like toCount. */
  toNumber(x: unknown): number {
    if (x === this.#big) return this.#num;
    const n = toCount(x);
    if (n >= 0 && typeof x === 'bigint') {
      this.#big = x;
      this.#num = n;
    }
    return n;
  }
}

/** A C handle (a bigint, or a number the types allow) as a bigint key; undefined for anything else. */
export function handleKey(h: unknown): bigint | undefined {
  if (typeof h === 'bigint') return h;
  return typeof h === 'number' && Number.isSafeInteger(h) ? BigInt(h) : undefined;
}

/** C's NULL for a pointer or handle: null, undefined, 0 or 0n. */
export function isNull(p: unknown): p is null | undefined | 0 | 0n {
  return p === null || p === undefined || p === 0 || p === 0n;
}
