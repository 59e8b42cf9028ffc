/** Page-locked host memory of every front end (cuMemAllocHost, hipHostMalloc, aclrtMallocHost). */
import type { Box } from './args.js';
import { isHostBuffer, writeBox } from './untrusted.js';

/**
 * Note [Host buffers]: cuMemAllocHost / hipHostMalloc / aclrtMallocHost
 * memory is a host buffer (a Uint8Array) the front end remembers until it is
 * freed. The simulator has no host page table, so the buffer has no device
 * address (no cuMemHostGetDevicePointer, no hipHostMallocMapped pointer to
 * use on a device) and is not drawn from the simulated machine's host pool:
 * what the calls model is their argument rules and the free-once lifetime.
 *
 * Over the real driver the buffer is the same JavaScript memory, not
 * page-locked memory from the driver's cuMemAllocHost, by choice: a
 * Uint8Array over driver memory stays usable after cuMemFreeHost, and a
 * touch then ends the process (a view cannot be revoked), which the
 * contract forbids; and the CUDA backend's async copies rely on pageable
 * host memory, for which the driver finishes a DtoH before returning.
 * Only speed is lost (the driver stages pageable copies). The conformance
 * cases host.* call the driver's own cuMemAllocHost through the raw binding
 * (createRawCuda, which does hand out views over pinned memory), and the
 * CUDA front end answers every code as it did: size 0 succeeds, a second
 * free, an interior pointer or pageable memory is CUDA_ERROR_INVALID_VALUE.
 */
export class HostBuffers {
  /** Live buffers, with the flags they were allocated with (cuMemHostGetFlags, hipHostGetFlags). */
  readonly #live = new WeakMap<Uint8Array, number>();

  /**
   * A buffer of `size` bytes written to `box`: the buffer, 'out-of-memory'
   * when the JavaScript engine cannot hold it, or 'unwritable' when the box
   * refused it (nothing is kept then).
   */
  allocate(
    box: Box<Uint8Array | null>,
    size: number,
    flags = 0,
  ): Uint8Array | 'out-of-memory' | 'unwritable' {
    let buffer: Uint8Array;
    try {
      buffer = new Uint8Array(size);
    } catch {
      return 'out-of-memory';
    }
    if (!writeBox(box, buffer)) return 'unwritable';
    this.#live.set(buffer, flags);
    return buffer;
  }

  /** The flags a live buffer of this process was allocated with, or undefined for anything else. */
  flagsOf(p: unknown): number | undefined {
    return isHostBuffer(p) ? this.#live.get(p) : undefined;
  }

  /** Take back a live buffer of this process; false for anything else, or one freed already. */
  free(p: unknown): boolean {
    return isHostBuffer(p) && this.#live.delete(p);
  }
}
