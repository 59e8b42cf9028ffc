/** ACL's one-step memory: aclrtMalloc / aclrtFree, aclrtGetMemInfo, and page-locked host buffers (aclrtMallocHost). */
import type { Runtime } from '../../core/runtime.js';
import { HandleType } from '../../core/types.js';
import {
  type Box,
  isBox,
  isHostBuffer,
  isNull,
  type Size,
  show,
  toCount,
  toInt,
  writeBoxes,
} from '../common/args.js';
import { HostBuffers } from '../common/host-buffers.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import type { AclDevices } from './devices.js';
import type { AclSharing } from './sharing.js';
import type { Pointer } from './structs.js';

/** aclrtGetMemInfo's attributes for device HBM (an Ascend 910B has no device DDR). */
const HBM_MEM_ATTRS = new Set([
  C.ACL_HBM_MEM,
  C.ACL_HBM_MEM_HUGE,
  C.ACL_HBM_MEM_NORMAL,
  C.ACL_HBM_MEM_P2P_HUGE,
  C.ACL_HBM_MEM_P2P_NORMAL,
  C.ACL_HBM_MEM_HUGE1G,
  C.ACL_HBM_MEM_P2P_HUGE1G,
]);

export class AclOneStep {
  readonly hostBuffers = new HostBuffers();

  constructor(
    readonly runtime: Runtime,
    readonly codes: AclCodes,
    readonly devices: AclDevices,
    readonly sharing: AclSharing,
  ) {}

  /**
   * size rounds up to 32 bytes and gains 32 bytes of padding (none for the
   * 1 GiB huge-page policies), as CANN documents; core then maps whole
   * granules, so the padding shows when it crosses a 2 MiB boundary.
   */
  malloc(devPtr: Box<bigint>, size: Size, policy: number): number {
    if (!isBox(devPtr)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    // Out-of-range policies are accepted (CANN: huge pages from 2 MiB, normal below).
    const base = toInt(policy) & 0xff;
    const padding =
      base === C.ACL_MEM_MALLOC_HUGE1G_ONLY || base === C.ACL_MEM_MALLOC_HUGE1G_ONLY_P2P
        ? 0
        : C.ACL_MALLOC_PADDING;
    const padded = aclMallocSize(n, padding);
    // Exportable, so that aclrtIpcMemGetExportKey can share it (Note [ACL IPC keys]).
    return this.codes.handOut(
      devPtr,
      () => this.runtime.malloc(this.devices.current, padded, { handleTypes: HandleType.PosixFd }),
      (r) => BigInt(r.base),
      (r) => this.runtime.mfree(r.base),
      () => this.codes.unwritable(),
    );
  }

  free(devPtr: Pointer): number {
    const va = toCount(devPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc')
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `0x${va.toString(16)} is not from aclrtMalloc`);
    if (this.sharing.importAt(va) !== undefined)
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        'memory imported by key is closed with aclrtIpcMemClose',
      );
    return this.codes.run(() => {
      this.runtime.mfree(va);
      // Core withdrew the memory's tokens with it (Note [ACL IPC keys]): its keys are gone.
      this.sharing.forgetExportsOf(va);
    });
  }

  memInfo(attr: number, free: Box<number>, total: Box<number>): number {
    if (!isBox(free) || !isBox(total))
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'free or total is NULL');
    const a = toInt(attr);
    if (!(a >= C.ACL_DDR_MEM && a <= C.ACL_MEM_P2P_HUGE1G))
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `attr ${show(attr)}`);
    if (!HBM_MEM_ATTRS.has(a) && a !== C.ACL_MEM_NORMAL && a !== C.ACL_MEM_HUGE && a !== C.ACL_MEM_HUGE1G) {
      // DDR on the device: an Ascend 910B has none.
      return writeBoxes(free, 0, total, 0) ? C.ACL_SUCCESS : this.codes.unwritable();
    }
    const info = this.runtime.memoryInfo(this.devices.current);
    return writeBoxes(free, info.free, total, info.total) ? C.ACL_SUCCESS : this.codes.unwritable();
  }

  /** Page-locked host memory (Note [Host buffers]): a host buffer of `size` bytes that aclrtMemcpy takes as a host pointer. */
  mallocHost(hostPtr: Box<Uint8Array | null>, size: Size): number {
    if (!isBox(hostPtr)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'hostPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    const buffer = this.hostBuffers.allocate(hostPtr, n);
    if (buffer === 'out-of-memory')
      return this.codes.bad(C.ACL_ERROR_RT_MEMORY_ALLOCATION, `${n} bytes of host memory are not available`);
    return buffer === 'unwritable' ? this.codes.unwritable() : C.ACL_SUCCESS;
  }

  freeHost(hostPtr: Uint8Array | Pointer): number {
    if (!isHostBuffer(hostPtr)) {
      if (isNull(hostPtr)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'hostPtr is NULL');
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `${show(hostPtr)} is not from aclrtMallocHost`);
    }
    if (!this.hostBuffers.free(hostPtr))
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        'the buffer is not from aclrtMallocHost, or was freed',
      );
    return C.ACL_SUCCESS;
  }
}

/** aclrtMalloc's accounted size: up to a multiple of 32, plus the padding. */
export function aclMallocSize(size: number, padding: number = C.ACL_MALLOC_PADDING): number {
  return Math.ceil(size / C.ACL_MALLOC_ALIGN) * C.ACL_MALLOC_ALIGN + padding;
}
