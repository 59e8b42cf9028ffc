/** Page-locked host memory of every front end (cuMemAllocHost, hipHostMalloc, aclrtMallocHost), and its device addresses. */
import { rangeHolding } from '../../util/address-ranges.js';
import type { Box } from './args.js';
import { hostBytes, isHostBuffer, writeBox } from './untrusted.js';

/**
 * Note [Host buffers]: cuMemAllocHost / hipHostMalloc / aclrtMallocHost
 * memory is a host buffer (a Uint8Array) the front end remembers until it is
 * freed. It is not drawn from the simulated machine's host pool: what the
 * calls model is their argument rules, the free-once lifetime, and the
 * device address (Note [Host device pointers]).
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
 *
 * Note [Host device pointers]: with unified addressing (every 64-bit CUDA
 * and ROCm platform) the device pointer of page-locked host memory is its
 * host address: the CUDA docs say so of cuMemHostGetDevicePointer under
 * CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING ("the device pointer ... is the
 * same as the host pointer"), and ROCm clr's hipHostGetDevicePointer answers
 * the pinned block's device address plus the offset into it. A Uint8Array
 * has no address, so each buffer gets one here: its own range, page-aligned
 * with a free page after it, in a window from 2^52 on, above the 47 bits of
 * a Linux process's address space, so no device address of the simulator or
 * of the real driver can fall inside it. That one address is the buffer's
 * host and device pointer, for every call that takes a pointer: the copies
 * and sets reach the buffer's bytes through it, and the pointer attributes
 * answer it (pointers.ts). A freed buffer's range is never handed out again.
 */
const HOST_WINDOW = 2 ** 52;
const PAGE = 4096;

/** A live buffer: the bytes, the flags it was made with, and its addresses [start, end). */
export interface HostBuffer {
  readonly bytes: Uint8Array;
  readonly flags: number;
  readonly start: number;
  /** start + the buffer's length. */
  readonly end: number;
}

export class HostBuffers {
  /** Live buffers by their own Uint8Array (cuMemHostGetFlags, hipHostGetFlags). */
  readonly #byView = new Map<Uint8Array, HostBuffer>();
  /** Live buffers by the memory under them, for views inside one (an interior host pointer). */
  readonly #byStorage = new Map<ArrayBufferLike, HostBuffer>();
  /** Live buffers in address order (addresses only grow, so a new one goes last). */
  readonly #ordered: HostBuffer[] = [];
  #next = HOST_WINDOW;

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
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(size);
    } catch {
      return 'out-of-memory';
    }
    if (!writeBox(box, bytes)) return 'unwritable';
    const entry: HostBuffer = { bytes, flags, start: this.#next, end: this.#next + size };
    // Its pages, and one free page: one past the end is no other buffer's.
    this.#next += Math.ceil(Math.max(size, 1) / PAGE) * PAGE + PAGE;
    this.#byView.set(bytes, entry);
    this.#byStorage.set(bytes.buffer, entry);
    this.#ordered.push(entry);
    return bytes;
  }

  /** The flags a live buffer of this process was allocated with, or undefined for anything else. */
  flagsOf(p: unknown): number | undefined {
    return isHostBuffer(p) ? this.#byView.get(p)?.flags : undefined;
  }

  /**
   * The address of host pointer `p`: a live buffer, or a view that starts
   * inside one (an interior pointer: the buffer's address plus the offset);
   * undefined for anything else (pageable memory, a freed buffer, a view
   * starting at the end, a buffer of no bytes).
   */
  addressOf(p: unknown): number | undefined {
    const view = hostBytes(p);
    if (view === undefined) return undefined;
    const entry = this.#byStorage.get(view.buffer);
    // Each buffer has memory of its own, from offset 0; one of no bytes has no device pointer
    // (hostPtr.size0 on the H200: CUDA_ERROR_INVALID_VALUE), as no offset lies inside it.
    if (entry === undefined) return undefined;
    return view.byteOffset < entry.bytes.length ? entry.start + view.byteOffset : undefined;
  }

  /** The live buffer whose bytes hold `address`, and the offset of it; undefined outside every one. */
  at(address: number): { buffer: HostBuffer; offset: number } | undefined {
    if (address < HOST_WINDOW) return undefined;
    const b = rangeHolding(this.#ordered, address);
    return b === undefined ? undefined : { buffer: b, offset: address - b.start };
  }

  /** Take back a live buffer of this process; false for anything else, or one freed already. */
  free(p: unknown): boolean {
    if (!isHostBuffer(p)) return false;
    const entry = this.#byView.get(p);
    if (entry === undefined) return false;
    this.#byView.delete(p);
    this.#byStorage.delete(entry.bytes.buffer);
    const list = this.#ordered;
    list.splice(list.indexOf(entry), 1);
    return true;
  }
}
