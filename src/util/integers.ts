/**
 * Integer tests on addresses and sizes (non-negative integers below 2^53).
 *
 * Note [No % on addresses]: `x % g` on a number above 2^31 is a floating-point
 * remainder (fmod), about 17 ns; floor-divide-multiply is about 1 ns and
 * exact for every integer below 2^53, and the hot path tests alignment
 * several times per call.
 */
export function isMultipleOf(x: number, g: number): boolean {
  return Math.floor(x / g) * g === x;
}

export function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}

/** A non-negative safe integer: a size, count or address. */
export function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}
