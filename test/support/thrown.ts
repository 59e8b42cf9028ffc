import { expect } from 'vitest';

/**
 * The error `f` throws, asserted to be a `type` (the test fails where `f` throws something
 * else, or nothing: then with `nothing`, which says what was wrongly accepted).
 */
export function thrown<E extends Error>(
  f: () => unknown,
  type: abstract new (...args: never[]) => E,
  nothing = `expected a ${type.name}, nothing was thrown`,
): E {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(type);
    return e as E;
  }
  throw new Error(nothing);
}
