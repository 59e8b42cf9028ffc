/** HIP's one-step memory: hipMalloc / hipFree, and pinned host buffers (hipHostMalloc / hipHostFree). */
import type { Runtime } from '../../core/runtime.js';
import { type Box, isBox, isNull, type Size, toCount, writeBox, writeBoxes } from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import type { HostBuffers } from '../common/host-buffers.js';
import * as C from './constants.js';
import type { HipPtr } from './structs.js';
import type { HipThread } from './thread.js';

/** Every hipHostMalloc flag bit HIP defines. */
const HOST_MALLOC_FLAGS =
  C.hipHostMallocPortable |
  C.hipHostMallocMapped |
  C.hipHostMallocWriteCombined |
  C.hipHostMallocNumaUser |
  C.hipHostMallocCoherent |
  C.hipHostMallocNonCoherent;

export class HipOneStep {
  constructor(
    readonly hostBuffers: HostBuffers,
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly thread: HipThread,
  ) {}

  /** Size 0 gives a null pointer and success, as HIP does. */
  malloc(ptr: Box<bigint>, size: Size): number {
    const n = toCount(size);
    if (!isBox(ptr) || n < 0) return C.hipErrorInvalidValue;
    if (n === 0) return writeBox(ptr, 0n) ? C.hipSuccess : C.hipErrorInvalidValue;
    return this.codes.handOut(
      ptr,
      () => this.runtime.malloc(this.thread.device, n),
      (r) => BigInt(r.base),
      (r) => this.runtime.mfree(r.base),
      C.hipErrorInvalidValue,
    );
  }

  /** hipFree(NULL) succeeds; anything but a hipMalloc pointer is hipErrorInvalidValue. */
  free(ptr: HipPtr): number {
    const va = toCount(ptr ?? 0);
    if (va === 0) return C.hipSuccess;
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc') return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.mfree(va));
  }

  /**
   * Pinned host memory (Note [Host buffers]): size 0 gives NULL and
   * succeeds, as hipMalloc does; a flag HIP does not define, or both
   * coherent and non-coherent, is hipErrorInvalidValue.
   */
  hostMalloc(ptr: Box<Uint8Array | null>, size: Size, flags: number): number {
    const n = toCount(size);
    const f = toCount(flags);
    if (!isBox(ptr) || n < 0 || f < 0 || f > 0xffff_ffff || (f & ~HOST_MALLOC_FLAGS) !== 0)
      return C.hipErrorInvalidValue;
    const coherence = C.hipHostMallocCoherent | C.hipHostMallocNonCoherent;
    if ((f & coherence) === coherence) return C.hipErrorInvalidValue;
    if (n === 0) return writeBox(ptr, null) ? C.hipSuccess : C.hipErrorInvalidValue;
    const buffer = this.hostBuffers.allocate(ptr, n, f);
    if (buffer === 'out-of-memory') return C.hipErrorOutOfMemory;
    return buffer === 'unwritable' ? C.hipErrorInvalidValue : C.hipSuccess;
  }

  /** hipHostGetFlags: the flags of a live hipHostMalloc buffer (a size-0 one is NULL: none). */
  hostGetFlags(flagsPtr: Box<number>, hostPtr: Uint8Array): number {
    if (!isBox(flagsPtr)) return C.hipErrorInvalidValue;
    const flags = this.hostBuffers.flagsOf(hostPtr);
    if (flags === undefined) return C.hipErrorInvalidValue;
    return writeBox(flagsPtr, flags) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * hipHostGetDevicePointer, as ROCm clr's hip_memory.cpp answers it: a NULL
   * out-parameter or flags other than 0 is hipErrorInvalidValue; else the
   * memory object holding hostPointer gives its device address plus the
   * offset into it, and no memory object hipErrorInvalidValue. A host buffer
   * (or a view or an address inside one) answers its address (Note [Host
   * device pointers]); hipMalloc memory is a memory object too, and so is a
   * hipMemMap'd range from the map on (clr's rocvirtual.cpp adds it to the
   * same map), so a device pointer into either answers itself.
   */
  hostDevicePointer(devicePointer: Box<bigint>, hostPointer: unknown, flags: number): number {
    if (!isBox(devicePointer) || toCount(flags) !== 0) return C.hipErrorInvalidValue;
    let address: number | undefined;
    if (typeof hostPointer === 'bigint' || typeof hostPointer === 'number') {
      const va = toCount(hostPointer);
      if (this.hostBuffers.at(va) !== undefined || (va > 0 && this.runtime.mappingAt(va) !== undefined))
        address = va;
    } else address = this.hostBuffers.addressOf(hostPointer);
    if (address === undefined) return C.hipErrorInvalidValue;
    return writeBox(devicePointer, BigInt(address)) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** hipHostFree(NULL) succeeds; anything but a live hipHostMalloc buffer is hipErrorInvalidValue. */
  hostFree(ptr: Uint8Array | null): number {
    if (isNull(ptr)) return C.hipSuccess;
    return this.hostBuffers.free(ptr) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  info(free: Box<number>, total: Box<number>): number {
    if (!isBox(free) || !isBox(total)) return C.hipErrorInvalidValue;
    const info = this.runtime.memoryInfo(this.thread.device);
    return writeBoxes(free, info.free, total, info.total) ? C.hipSuccess : C.hipErrorInvalidValue;
  }
}
