/**
 * PyTorch's size constants and rounding rules (docs/pytorch-allocators.md N1, N2, N4),
 * as c10/cuda/CUDACachingAllocator.cpp defines them.
 */

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** N1: every block is a multiple of this (kMinBlockSize). */
export const MIN_BLOCK_SIZE = 512;
/** N1: the largest request served by the small pool (kSmallSize). */
export const SMALL_SIZE = MiB;
/** N1: small-pool segments (kSmallBuffer), and the small pool's expandable page (E2). */
export const SMALL_BUFFER = 2 * MiB;
/** N1: requests below this take a whole LARGE_BUFFER segment (kMinLargeAlloc). */
export const MIN_LARGE_ALLOC = 10 * MiB;
/** N1: larger segments are a multiple of this (kRoundLarge). */
export const ROUND_LARGE = 2 * MiB;
/** N1: mid-size segments (kLargeBuffer), and the large pool's expandable page (E2). */
export const LARGE_BUFFER = 20 * MiB;
/** N2: roundup_power2_divisions has one entry per power of two from 1 MiB to 32 GiB and above. */
export const ROUNDUP_INTERVALS = 16;

/**
 * floor(log2(n)) for a positive safe integer, from the count of leading
 * zero bits (Math.log2 rounds near 2^k from below, and is slower: this is
 * on every request's rounding).
 */
export function floorLog2(n: number): number {
  // Dividing by 2^32 is exact, so the high word's floor is too.
  return n < 0x100000000 ? 31 - Math.clz32(n) : 63 - Math.clz32(Math.floor(n / 0x100000000));
}

/** 2 ** k for every k a safe integer's floorLog2 can be, looked up: `**` is a call to Math.pow, and this is on every rounded request. */
const POWERS_OF_TWO: readonly number[] = Object.freeze(Array.from({ length: 64 }, (_, k) => 2 ** k));

export function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** floorLog2(n) === n;
}

/** N2: which roundup_power2_divisions interval a size falls in (clamp(floor(log2 size) - 20, 0, 15)). */
export function roundupInterval(size: number): number {
  return Math.min(Math.max(floorLog2(size) - 20, 0), ROUNDUP_INTERVALS - 1);
}

/**
 * N2, roundup_power2_next_division: round `size` up to the next of
 * `divisions` equal steps between the powers of two around it.
 */
export function roundUpToPowerOfTwoDivision(size: number, divisions: number): number {
  const log = floorLog2(size);
  const floor = POWERS_OF_TWO[log];
  if (floor === size) return size;
  // divisions is a power of two, so this is floor >> log2(divisions).
  const step = Math.floor(floor / POWERS_OF_TWO[floorLog2(divisions)]);
  if (step === 0) return floor * 2;
  const down = Math.floor(size / step) * step;
  return down === size ? size : down + step;
}

/**
 * N2, round_size: the block size a request of `size` bytes needs, given the
 * per-interval divisions (an entry of 0 or 1 means plain 512-byte rounding).
 */
export function roundSize(size: number, divisions: readonly number[], anyDivisions: boolean): number {
  if (size < MIN_BLOCK_SIZE) return MIN_BLOCK_SIZE;
  if (anyDivisions) {
    const d = divisions[roundupInterval(size)];
    if (d > 1 && size > MIN_BLOCK_SIZE * d) return roundUpToPowerOfTwoDivision(size, d);
  }
  return Math.ceil(size / MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE;
}

/** N4, get_allocation_size: the segment a rounded request makes when nothing cached fits. */
export function allocationSize(size: number): number {
  if (size <= SMALL_SIZE) return SMALL_BUFFER;
  if (size < MIN_LARGE_ALLOC) return LARGE_BUFFER;
  return Math.ceil(size / ROUND_LARGE) * ROUND_LARGE;
}
