/**
 * What the pickle reader gives and the writer takes: Python's values as
 * JavaScript ones.
 *
 *   None -> null, bool -> boolean, int -> number (bigint when it is not a
 *   safe integer), float -> number, str -> string, bytes -> Uint8Array,
 *   list -> Array, tuple -> PickleTuple, dict -> PickleDict (a plain object)
 *   when every key is a string, else a Map.
 *
 * Note [Dicts as plain objects]: a snapshot has a million small dicts whose
 * keys are always the same few strings. Plain objects filled in the same key
 * order share one hidden class, so they are small and fast to read; a Map
 * per event would cost several times the memory. A dict that turns out to
 * have a key that is not a string becomes a Map (see the reader).
 */
export type PickleValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | PickleValue[]
  | PickleTuple
  | PickleDict
  | Map<PickleValue, PickleValue>;

export interface PickleDict {
  [key: string]: PickleValue;
}

/** A Python tuple: kept apart from lists so that writing it back gives a tuple. */
export class PickleTuple {
  constructor(readonly items: readonly PickleValue[]) {}
}

/** A plain object that stands for a dict (not an array, tuple, Map or bytes). */
export function isPickleDict(v: unknown): v is PickleDict {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof PickleTuple) &&
    !(v instanceof Map) &&
    !(v instanceof Uint8Array)
  );
}

// PickleError lives in replay's errors module; re-exported here, where it was.
export { PickleError } from '../../errors.js';
