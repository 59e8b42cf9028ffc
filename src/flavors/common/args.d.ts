/**
 * Argument conversion shared by the C-shaped flavours. C callers pass 64-bit
 * integers; here they arrive as bigint or number and become plain numbers
 * (or -1 when no valid non-negative integer below 2^53 was given, which no
 * rule accepts).
 */
import type { Box } from '../../c-api/arguments.js';

export type { Box, Size } from '../../c-api/arguments.js';
/** A non-negative integer argument as a number, or -1 if it is not one. */
export declare function toCount(x: unknown): number;
/** A C int argument (may be negative), or NaN if it is not an integer. */
export declare function toInt(x: unknown): number;
/** True for a usable out-parameter (C's non-NULL pointer) that the call can write (Note [Untrusted arguments]). */
export declare const isBox: (x: unknown) => x is Box<unknown>;
/** True for a struct argument that is present (C's non-NULL struct pointer). */
export declare function isStruct<T>(x: T): x is NonNullable<T> & object;
export { isPowerOfTwo } from '../../util/integers.js';
export {
  ACCESS_DESC_SHAPE,
  ALLOCATION_PROP_SHAPE,
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
  writeBox,
  writeBoxes,
} from './untrusted.js';
/**
 * Converts device addresses (or handles) between the API's bigint and
 * core's number, remembering the last pair. Note [Address memo]: the commonest pointer
 * argument is the one the previous call returned (reserve, then map, set
 * access, unmap and free at that address), and each conversion costs about
 * as much as a map lookup, so one remembered pair removes most of them.
 * Per flavour instance: no module state.
 */
export declare class BigIntMemo {
  #private;
  toBigInt(n: number): bigint;
  /** Like toCount. */
  toNumber(x: unknown): number;
}
