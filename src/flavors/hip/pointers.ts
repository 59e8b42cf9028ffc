/** What HIP answers about an address: hipMemGetAddressRange and hipPointerGetAttributes. */
import type { Mapping } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { type Box, isBox, toCount, writeBox, writeBoxes } from '../common/args.js';
import type { HostBuffers } from '../common/host-buffers.js';
import * as C from './constants.js';
import type { HipPtr, hipPointerAttribute_t } from './structs.js';
import type { HipThread } from './thread.js';

/**
 * Note [HIP pointer ranges]: hipMemGetAddressRange and hipPointerGetAttributes
 * look the address up among the mappings: a hipMalloc allocation (here the
 * granularity-rounded size core holds; ROCm may answer the requested size,
 * not checked on a real part), or the one hipMemMap chunk holding the
 * address, the unit hip_vm.cpp keeps per mapping (Note
 * [ValidateSubBufferCoverage]). Whether ROCm answers the whole reservation
 * for VMM memory, or anything for a reserved address with nothing mapped, is
 * not checked on a real part: vmmkit answers the chunk, as CUDA does, and
 * not found for an unmapped address.
 */
export class HipPointers {
  constructor(
    readonly hostBuffers: HostBuffers,
    readonly runtime: Runtime,
    readonly thread: HipThread,
  ) {}

  /** hipErrorNotFound for an address nothing is mapped at, as ROCm answers when it finds no memory object. */
  addressRange(pbase: Box<bigint>, psize: Box<number>, dptr: HipPtr): number {
    if (!isBox(pbase) || !isBox(psize)) return C.hipErrorInvalidValue;
    const m = this.#mappingOf(dptr);
    if (m === undefined) return C.hipErrorNotFound;
    return writeBoxes(pbase, BigInt(m.va), psize, m.size) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * An address that is no HIP memory is hipErrorInvalidValue: ROCm documents
   * the CUDA-before-11 behaviour, not hipMemoryTypeUnregistered.
   */
  attributes(attributes: Box<hipPointerAttribute_t>, ptr: HipPtr): number {
    if (!isBox(attributes)) return C.hipErrorInvalidValue;
    // Pinned host memory: host memory whose device and host pointers are its address (Note [Host device pointers]).
    const va = toCount(ptr ?? 0);
    const pinned = this.hostBuffers.at(va);
    const m = pinned === undefined ? this.#mappingOf(ptr) : undefined;
    if (pinned === undefined && m === undefined) return C.hipErrorInvalidValue;
    const location = m?.allocation.props.location;
    const device = location?.type === 'device';
    const address = BigInt(va);
    const value: hipPointerAttribute_t = Object.freeze({
      type: device ? C.hipMemoryTypeDevice : C.hipMemoryTypeHost,
      device: device ? location.id : this.thread.device,
      devicePointer: address,
      hostPointer: device ? 0n : address,
      isManaged: 0,
      allocationFlags: pinned?.buffer.flags ?? 0,
    });
    return writeBox(attributes, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  #mappingOf(ptr: HipPtr): Mapping | undefined {
    const va = toCount(ptr ?? 0);
    return va <= 0 ? undefined : this.runtime.mappingAt(va);
  }
}
