/** Sets of 16- and 32-bit values (cuMemsetD16/D32, hipMemsetD32) over core's byte operations. */
import type { Runtime } from '../../core/runtime.js';
/**
 * Fill `count` elements of `width` bytes at va with `value` (little-endian,
 * truncated to the width, as C's unsigned short / unsigned int). A value
 * whose bytes are all equal is core's fill; any other is one write of the
 * pattern, which core checks whole before it writes a byte, so a refused
 * call writes nothing. Above 64 MiB the pattern is written in 1 MiB pieces
 * after checking that every byte is mapped and writable by `device`.
 */
export declare function fillWide(
  runtime: Runtime,
  device: number,
  va: number,
  value: number,
  count: number,
  width: 2 | 4,
): void;
