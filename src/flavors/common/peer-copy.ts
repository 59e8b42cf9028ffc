/** Copies between two devices' memory (cuMemcpyPeer, hipMemcpyPeer) over core's reads and writes. */
import { rangeUsable } from '../../core/address-book.js';
import type { Runtime } from '../../core/runtime.js';
import { Access } from '../../core/types.js';
import { internalError } from './error-table.js';

/**
 * Copy `size` bytes from `src`, read through `srcDevice`, to `dst`, written
 * through `dstDevice`: the driver stages such a copy itself when the devices
 * have no peer access, so neither device needs access to the other's
 * memory. Up to 64 MiB it is one read and one write, each checked whole by
 * core before it moves a byte, so a refused copy writes nothing. Above that
 * it moves 1 MiB pieces, after checking that every source byte is mapped
 * readable by `srcDevice` and every destination byte writable by `dstDevice`;
 * where not, core's own refusal is thrown (an access-checked operation of
 * the whole range that changes nothing).
 */
export function copyAcross(
  runtime: Runtime,
  dstDevice: number,
  dst: number,
  srcDevice: number,
  src: number,
  size: number,
): void {
  if (size === 0) return;
  if (size <= WHOLE_COPY_LIMIT) {
    const staged = new Uint8Array(size);
    runtime.read(srcDevice, src, staged);
    runtime.write(dstDevice, dst, staged);
    return;
  }
  if (!rangeUsable(runtime, srcDevice, src, size, Access.Read)) {
    // Reading into a buffer of one byte per piece would still be a read: core refuses the range itself.
    runtime.copy(srcDevice, src, src, size);
    throw internalError('a source range core accepted was not mapped readable');
  }
  if (!rangeUsable(runtime, dstDevice, dst, size, Access.ReadWrite)) {
    runtime.fill(dstDevice, dst, 0, size);
    throw internalError('a destination range core accepted was not mapped writable');
  }
  const piece = new Uint8Array(PIECE);
  for (let at = 0; at < size; at += PIECE) {
    const n = Math.min(PIECE, size - at);
    const view = n === PIECE ? piece : piece.subarray(0, n);
    runtime.read(srcDevice, src + at, view);
    runtime.write(dstDevice, dst + at, view);
  }
}

const WHOLE_COPY_LIMIT = 64 * 1024 * 1024;
const PIECE = 1 << 20;
