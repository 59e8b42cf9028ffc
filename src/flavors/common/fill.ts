/** Sets of 16- and 32-bit values (cuMemsetD16/D32, hipMemsetD32) over core's byte operations. */
import { rangeUsable } from '../../core/address-book.js';
import type { Runtime } from '../../core/runtime.js';
import { Access } from '../../core/types.js';
import { internalError } from './error-table.js';

/**
 * Fill `count` elements of `width` bytes at va with `value` (little-endian,
 * truncated to the width, as C's unsigned short / unsigned int). A value
 * whose bytes are all equal is core's fill; any other is one write of the
 * pattern, which core checks whole before it writes a byte, so a refused
 * call writes nothing. Above 64 MiB the pattern is written in 1 MiB pieces
 * after checking that every byte is mapped and writable by `device`.
 */
export function fillWide(
  runtime: Runtime,
  device: number,
  va: number,
  value: number,
  count: number,
  width: 2 | 4,
  stream = 0,
): void {
  const bytes = patternBytes(value, width);
  const total = count * width;
  if (bytes.every((b) => b === bytes[0])) {
    runtime.fill(device, va, bytes[0] ?? 0, total, stream);
    return;
  }
  const pattern = (n: number) => {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = bytes[i % width] ?? 0;
    return out;
  };
  if (total <= WHOLE_PATTERN_LIMIT) {
    runtime.write(device, va, pattern(total), stream);
    return;
  }
  // Every byte mapped and writable, or core's own refusal (a fill of a range it refuses writes nothing).
  // A capture takes the pieces as they are: a set's range is checked at launch (checkCapturedHostCopy).
  if (
    runtime.captures.captureOf(stream) === undefined &&
    !rangeUsable(runtime, device, va, total, Access.ReadWrite)
  ) {
    runtime.fill(device, va, 0, total, stream);
    throw internalError('a range core accepted was not mapped writable');
  }
  const piece = pattern(1 << 20);
  for (let at = 0; at < total; at += piece.length) {
    const n = Math.min(piece.length, total - at);
    runtime.write(device, va + at, n === piece.length ? piece : piece.subarray(0, n), stream);
  }
}

const WHOLE_PATTERN_LIMIT = 64 * 1024 * 1024;

/** A D16 or D32 set's value as its little-endian bytes, truncated to the width as C's unsigned short / unsigned int. */
export function patternBytes(value: number, width: 2 | 4): number[] {
  const v = width === 2 ? value & 0xffff : value >>> 0;
  return [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff].slice(0, width);
}
