/** CUDA's one-step memory: cuMemAlloc / cuMemFree, and page-locked host buffers (cuMemAllocHost / cuMemFreeHost). */
import type { Runtime } from '../../core/runtime.js';
import {
  type BigIntMemo,
  type Box,
  isBox,
  type Size,
  toCount,
  writeBox,
  writeBoxes,
} from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import type { HostBuffers } from '../common/host-buffers.js';
import * as C from './constants.js';
import type { CudaContexts } from './contexts.js';
import type { CUdeviceptr } from './handle-types.js';
import type { CudaPointers } from './pointers.js';

/** cuMemHostAlloc's flag bits (cuda.h's CU_MEMHOSTALLOC_*). */
const HOST_ALLOC_FLAGS =
  C.CU_MEMHOSTALLOC_PORTABLE | C.CU_MEMHOSTALLOC_DEVICEMAP | C.CU_MEMHOSTALLOC_WRITECOMBINED;

export class CudaOneStep {
  constructor(
    readonly hostBuffers: HostBuffers,
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly contexts: CudaContexts,
    readonly pointers: CudaPointers,
    readonly addresses: BigIntMemo,
  ) {}

  alloc(dptr: Box<bigint>, bytesize: Size): number {
    const n = toCount(bytesize);
    if (!isBox(dptr) || n <= 0) return C.CUDA_ERROR_INVALID_VALUE;
    return this.codes.handOut(
      dptr,
      () => this.runtime.malloc(this.contexts.device, n),
      (r) => this.addresses.toBigInt(r.base),
      (r) => this.runtime.mfree(r.base),
      C.CUDA_ERROR_INVALID_VALUE,
      (r) => {
        this.pointers.requested(r, n);
        this.contexts.owner()?.allocations.add(r.base);
      },
    );
  }

  free(dptr: CUdeviceptr): number {
    const va = this.addresses.toNumber(dptr);
    if (va === 0) return C.CUDA_SUCCESS;
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc') return C.CUDA_ERROR_INVALID_VALUE;
    try {
      this.runtime.mfree(va);
      for (const c of this.contexts.allOwners()) c.allocations.delete(va);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /**
   * Page-locked host memory (Note [Host buffers]): a host buffer of `bytesize`
   * bytes, which the copies take as a host side. CUDA_ERROR_OUT_OF_MEMORY when
   * the JavaScript engine cannot hold it.
   */
  allocHost(pp: Box<Uint8Array | null>, bytesize: Size, flags = 0): number {
    const n = toCount(bytesize);
    // Size 0 succeeds with a buffer of no bytes, freed once like any other (host.allocSize0AndNullBox).
    if (!isBox(pp) || n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const buffer = this.hostBuffers.allocate(pp, n, flags);
    if (buffer === 'out-of-memory') return C.CUDA_ERROR_OUT_OF_MEMORY;
    if (buffer === 'unwritable') return C.CUDA_ERROR_INVALID_VALUE;
    this.contexts.owner()?.hostBuffers.add(buffer);
    this.pointers.hostAllocated(buffer);
    return C.CUDA_SUCCESS;
  }

  /**
   * cuMemHostAlloc: cuMemAllocHost with flags, any of CU_MEMHOSTALLOC_PORTABLE,
   * DEVICEMAP and WRITECOMBINED (another bit is CUDA_ERROR_INVALID_VALUE), kept
   * for cuMemHostGetFlags. The buffer is a host buffer as cuMemAllocHost's
   * (Note [Host buffers]): DEVICEMAP gives it no device address here.
   */
  hostAlloc(pp: Box<Uint8Array | null>, bytesize: Size, flags: number): number {
    const f = toCount(flags);
    if (f < 0 || (f & ~HOST_ALLOC_FLAGS) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    return this.allocHost(pp, bytesize, f);
  }

  /**
   * The flags of a live cuMemHostAlloc / cuMemAllocHost buffer (else
   * CUDA_ERROR_INVALID_VALUE): those it was made with, and DEVICEMAP always,
   * as the H200 answers (host.hostAllocFlags: 0 reads 2, PORTABLE 3,
   * WRITECOMBINED 6, cuMemAllocHost 2): under unified addressing every
   * page-locked host allocation is mapped into the device's space.
   */
  hostGetFlags(pFlags: Box<number>, p: Uint8Array): number {
    if (!isBox(pFlags)) return C.CUDA_ERROR_INVALID_VALUE;
    const flags = this.hostBuffers.flagsOf(p);
    if (flags === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const answered = flags | C.CU_MEMHOSTALLOC_DEVICEMAP;
    return writeBox(pFlags, answered) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * cuMemHostGetDevicePointer (cuda.h maps the name to _v2 in 12.x and 13.0):
   * the device pointer of page-locked host memory, its address (Note [Host
   * device pointers]), which cuPointerGetAttribute's DEVICE_POINTER answers
   * too. `p` is a live buffer, a view inside one (the interior device
   * pointer), or an address inside one (under unified addressing the host
   * pointer is that address). The CUDA docs: Flags must be 0, and the memory
   * one cuMemHostAlloc or cuMemHostRegister made; under unified addressing
   * every page-locked allocation is mapped, DEVICEMAP or not (as
   * cuMemHostGetFlags answers). Anything else, a freed buffer, NULL `p` or a
   * NULL box is CUDA_ERROR_INVALID_VALUE.
   */
  hostDevicePointer(pdptr: Box<bigint>, p: unknown, flags: number): number {
    if (!isBox(pdptr) || toCount(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const address = this.hostAddress(p);
    if (address === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(pdptr, this.addresses.toBigInt(address)) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * The address of host pointer `p` (a buffer, a view in one, or an address
   * in one); undefined if no live buffer holds it. VMM memory some device
   * may access answers itself: the H200 answers 0 for a mapped, read-write
   * reservation (hostPtr.badArguments' vmmMemory; the pointer it wrote was
   * not recorded, taken to be the address, as DEVICE_POINTER answers it)
   * and CUDA_ERROR_INVALID_VALUE for cuMemAlloc memory.
   */
  hostAddress(p: unknown): number | undefined {
    if (typeof p !== 'bigint' && typeof p !== 'number') return this.hostBuffers.addressOf(p);
    const va = this.addresses.toNumber(p);
    // Inside a live buffer the address asked is the buffer's address plus its offset: itself.
    if (this.hostBuffers.at(va) !== undefined) return va;
    const m = va > 0 ? this.runtime.mappingAt(va) : undefined;
    if (m === undefined || m.reservation.origin === 'malloc') return undefined;
    return m.accessBits !== 0 ? va : undefined;
  }

  /** Free a cuMemAllocHost buffer; anything else, or one freed already, is CUDA_ERROR_INVALID_VALUE. */
  freeHost(p: Uint8Array): number {
    if (!this.hostBuffers.free(p)) return C.CUDA_ERROR_INVALID_VALUE;
    for (const c of this.contexts.allOwners()) c.hostBuffers.delete(p);
    return C.CUDA_SUCCESS;
  }

  info(free: Box<number>, total: Box<number>): number {
    if (!isBox(free) || !isBox(total)) return C.CUDA_ERROR_INVALID_VALUE;
    const info = this.runtime.memoryInfo(this.contexts.device);
    return writeBoxes(free, info.free, total, info.total) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }
}
