/** HIP's virtual memory management calls, with the checks of ROCm's hip_vm.cpp in its order. */
import type { Mapping, PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import type { Access, Location } from '../../core/types.js';
import { isMultipleOf } from '../../util/integers.js';
import {
  ACCESS_DESC_SHAPE,
  AllocationPropReader,
  type Box,
  isBox,
  isPowerOfTwo,
  isStruct,
  LOCATION_SHAPE,
  readList,
  readStruct,
  type Size,
  toCount,
  toInt,
  writeBox,
  writeOrTakeBack,
} from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import type { HipAllocations } from './allocations.js';
import * as C from './constants.js';
import type { HipHandle, HipPtr, hipMemAccessDesc, hipMemAllocationProp, hipMemLocation } from './structs.js';
import type { HipThread } from './thread.js';

const LOCATION_TYPES = new Set([
  C.hipMemLocationTypeDevice,
  C.hipMemLocationTypeHost,
  C.hipMemLocationTypeHostNuma,
  C.hipMemLocationTypeHostNumaCurrent,
]);
const ACCESS_FLAGS = new Set([
  C.hipMemAccessFlagsProtNone,
  C.hipMemAccessFlagsProtRead,
  C.hipMemAccessFlagsProtReadWrite,
]);
/** Granularity of host-located VMM memory: the CPU agent's page. */
const HOST_GRANULARITY = 4096;

/**
 * Note [ValidateSubBufferCoverage]: hip_vm.cpp finds the chunk (mapping)
 * that contains ptr and measures the range from that chunk's start, not
 * from ptr: the range must not pass the reservation's end, and `size`
 * must equal the sizes of whole consecutive chunks from there (no hole, no
 * partial last chunk). So a ptr inside a chunk with size a whole number of
 * chunks is accepted and acts on whole chunks; hipMalloc memory is not
 * VMM memory and is refused. coverage() answers the first chunk's start,
 * from which core's unmap and setAccess act on [start, start + size); -1
 * (hipErrorInvalidValue) if the chunks do not cover it. The walk visits only
 * the chunks in range.
 */
export class HipVmm {
  /** hipMemAllocationProp arguments are read into this, then copied (AllocationPropReader). */
  readonly #prop = new AllocationPropReader();

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly thread: HipThread,
    readonly allocations: HipAllocations,
  ) {}

  /** The caller's hipMemAllocationProp read once into a plain copy (Note [Untrusted arguments]); undefined if a read throws. */
  #readProp(propArg: unknown): hipMemAllocationProp | undefined {
    return this.#prop.read(propArg) ? this.#prop.copy<hipMemAllocationProp>() : undefined;
  }

  granularity(granularity: Box<number>, propArg: hipMemAllocationProp, option: number): number {
    const opt = toInt(option);
    // One read of each field, into a plain copy (Note [Untrusted arguments]).
    const copy = this.#readProp(propArg);
    const prop = copy ?? ({} as hipMemAllocationProp);
    if (
      !isBox(granularity) ||
      copy === undefined ||
      !isAllocationType(prop.type) ||
      !isStruct(prop.location) ||
      !LOCATION_TYPES.has(prop.location.type) ||
      (prop.location.type === C.hipMemLocationTypeDevice && !this.runtime.isDevice(prop.location.id)) ||
      (opt !== C.hipMemAllocationGranularityMinimum && opt !== C.hipMemAllocationGranularityRecommended)
    ) {
      return C.hipErrorInvalidValue;
    }
    if (prop.location.type !== C.hipMemLocationTypeDevice) {
      return writeBox(granularity, HOST_GRANULARITY) ? C.hipSuccess : C.hipErrorInvalidValue;
    }
    // hip_vm.cpp reads the current device's info, not location.id's.
    const d = this.runtime.devices[this.thread.device];
    const value =
      opt === C.hipMemAllocationGranularityMinimum ? d.minimumGranularity : d.recommendedGranularity;
    return writeBox(granularity, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  reserve(ptr: Box<bigint>, size: Size, alignment: Size, addr: HipPtr, flags: Size): number {
    if (!isBox(ptr) || toInt(flags) !== 0) return C.hipErrorInvalidValue;
    const n = toCount(size);
    const align = toCount(alignment);
    // Device 0's minimum granularity: one reservation serves every device.
    if (n <= 0 || !isMultipleOf(n, this.runtime.vaGranularity)) return C.hipErrorInvalidValue;
    if (align < 0 || (align !== 0 && !isPowerOfTwo(align))) return C.hipErrorInvalidValue;
    const hint = Math.max(0, toCount(addr ?? 0));
    try {
      const r = this.runtime.reserve(n, { alignment: align, hint });
      return writeOrTakeBack(ptr, BigInt(r.base), () => this.runtime.free(r))
        ? C.hipSuccess
        : C.hipErrorInvalidValue;
    } catch (e) {
      // virtualAlloc returning null is answered with hipErrorOutOfMemory, whatever core's kind.
      return this.codes.codeAs(e, C.hipErrorOutOfMemory);
    }
  }

  /**
   * Size is checked for zero and otherwise ignored: the reservation is found
   * from the pointer. A pointer inside (not at the base of) a reservation is
   * found too, but virtualFree then fails, as it does while anything is
   * still mapped: hipErrorUnknown (Note [HIP in-use is Unknown]).
   */
  addressFree(devPtr: HipPtr, size: Size): number {
    const va = toCount(devPtr ?? 0);
    const n = toCount(size);
    if (va <= 0 || n <= 0) return C.hipErrorInvalidValue;
    const r = this.runtime.reservationContaining(va);
    if (r === undefined || r.origin !== 'vmm') return C.hipErrorInvalidValue;
    if (r.base !== va || r.mappingCount > 0) return C.hipErrorUnknown;
    return this.codes.run(() => this.runtime.free(r));
  }

  create(handle: Box<bigint>, size: Size, propArg: hipMemAllocationProp, flags: Size): number {
    const n = toCount(size);
    // One read of each field, into a plain copy: what is validated is what is stored (issue 10 E).
    const copy = this.#readProp(propArg);
    const prop = copy ?? ({} as hipMemAllocationProp);
    if (
      !isBox(handle) ||
      n <= 0 ||
      toInt(flags) !== 0 ||
      copy === undefined ||
      !isAllocationType(prop.type) ||
      !isStruct(prop.location) ||
      !LOCATION_TYPES.has(prop.location.type)
    ) {
      return C.hipErrorInvalidValue;
    }
    const { type, id } = prop.location;
    let location: Location;
    if (type === C.hipMemLocationTypeDevice) {
      if (!this.runtime.isDevice(id)) return C.hipErrorInvalidDevice;
      location = { type: 'device', id };
    } else if (type === C.hipMemLocationTypeHostNuma) {
      if (!isHostNumaNode(id)) return C.hipErrorInvalidValue;
      location = { type: 'host', id };
    } else {
      location = { type: 'host', id: 0 };
    }
    // A C enum: a number, never a bigint (issue 10 H).
    const requested = prop.requestedHandleTypes ?? 0;
    if (typeof requested !== 'number') return C.hipErrorInvalidValue;
    const handleTypes = toInt(requested);
    if (
      handleTypes !== C.hipMemHandleTypeNone &&
      handleTypes !== C.hipMemHandleTypePosixFileDescriptor &&
      handleTypes !== C.hipMemHandleTypeFabric
    ) {
      return C.hipErrorNotSupported;
    }
    // maxPhysicalMemAllocSize_ is the device's memory; host pools are checked when allocating.
    if (location.type === 'device' && n > this.runtime.devices[location.id].totalMemory) {
      return C.hipErrorOutOfMemory;
    }
    // Note: the granularity is not checked here, only memBaseAddrAlign_ (hipMemMap checks granularity).
    if (!isMultipleOf(n, C.HIP_MEM_BASE_ADDR_ALIGN)) return C.hipErrorInvalidValue;
    // hip_vm.cpp allocates device memory through the *current* device's context while recording
    // location.id as the owner; vmmkit places it on location.id (the same on one device).
    const uncached = prop.type === C.hipMemAllocationTypeUncached;
    return this.codes.handOut(
      handle,
      () => this.runtime.create(n, { location, handleTypes, uncached }),
      (a) => BigInt(a.id),
      (a) => this.runtime.release(a),
      C.hipErrorInvalidValue,
      (a) => this.allocations.created(a, prop),
    );
  }

  release(handle: HipHandle): number {
    const a = this.allocations.allocation(handle);
    if (a === undefined) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.release(a));
  }

  /** Maps [ptr, ptr + size) to the start of the allocation; the mapping holds one reference (ga->retain). */
  map(ptr: HipPtr, size: Size, offset: Size, handle: HipHandle, flags: Size): number {
    const va = toCount(ptr ?? 0);
    const n = toCount(size);
    const h = toCount(handle ?? 0);
    if (va <= 0 || h <= 0 || n <= 0 || toCount(offset) !== 0 || toInt(flags) !== 0) {
      return C.hipErrorInvalidValue;
    }
    const a = this.runtime.allocation(h);
    if (a === undefined) return C.hipErrorInvalidValue;
    // Host-backed memory is mapped through the current device (VmmOwnerDeviceIndex).
    const owner = a.props.location.type === 'device' ? a.props.location.id : this.thread.device;
    if (!isMultipleOf(n, this.runtime.devices[owner].minimumGranularity)) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.map(va, n, a, 0));
  }

  /**
   * Unmaps whole chunks (Note [ValidateSubBufferCoverage]); every stream is
   * synchronised first (core's unmap does, as SyncAllStreams), then each
   * chunk is unmapped and drops its allocation reference.
   */
  unmap(ptr: HipPtr, size: Size): number {
    const va = toCount(ptr ?? 0);
    const n = toCount(size);
    if (va <= 0 || n <= 0) return C.hipErrorInvalidValue;
    const start = this.#coverage(va, n);
    if (start < 0) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.unmap(start, n));
  }

  /**
   * Descriptors are applied one by one, as hip_vm.cpp does: a bad descriptor
   * fails the call after the earlier ones took effect. `desc` may be an
   * array or, for count 1, a single descriptor (C's `&desc`).
   */
  setAccess(
    ptr: HipPtr,
    size: Size,
    desc: readonly hipMemAccessDesc[] | hipMemAccessDesc | null,
    count: Size,
  ): number {
    const va = toCount(ptr ?? 0);
    const n = toCount(size);
    const c = toCount(count);
    // The caller's list (or single descriptor) read once into plain copies (Note [Untrusted arguments]).
    const descs = readDescriptors(desc, c);
    if (va <= 0 || n <= 0 || descs === undefined || c <= 0) return C.hipErrorInvalidValue;
    const start = this.#coverage(va, n);
    if (start < 0) return C.hipErrorInvalidValue;
    for (let i = 0; i < c; i++) {
      const d = descs[i];
      if (!isStruct(d) || !isStruct(d.location) || !LOCATION_TYPES.has(d.location.type)) {
        return C.hipErrorInvalidValue;
      }
      const { type, id } = d.location;
      if (type === C.hipMemLocationTypeDevice && !this.runtime.isDevice(id)) return C.hipErrorInvalidValue;
      if (type === C.hipMemLocationTypeHostNuma && !isHostNumaNode(id)) return C.hipErrorInvalidValue;
      if (!ACCESS_FLAGS.has(d.flags)) return C.hipErrorInvalidValue;
      if (type !== C.hipMemLocationTypeDevice) {
        // The CPU agent's access: granted on host-located memory (Note [Host access]); on device
        // memory the descriptor is accepted and changes nothing (host copies go through a device).
        if (!this.#allHostLocated(start, n)) continue;
        const code = this.codes.run(() => this.runtime.setAccess(start, n, [], d.flags as Access));
        if (code !== C.hipSuccess) return code;
        continue;
      }
      const code = this.codes.run(() =>
        this.runtime.setAccess(start, n, [{ device: id, access: d.flags as Access }]),
      );
      if (code !== C.hipSuccess) return code;
    }
    return C.hipSuccess;
  }

  /** Whether every mapping of [va, va + size) holds host-located memory. */
  #allHostLocated(va: number, size: number): boolean {
    for (
      let m = this.runtime.mappingAt(va);
      m !== undefined && m.va < va + size;
      m = this.runtime.nextMapping(m)
    )
      if (m.allocation.props.location.type !== 'host') return false;
    return true;
  }

  getAccess(flags: Box<number>, locationArg: hipMemLocation, ptr: HipPtr): number {
    const va = toCount(ptr ?? 0);
    const location = readStruct<hipMemLocation>(locationArg, LOCATION_SHAPE);
    if (
      !isBox(flags) ||
      location === undefined ||
      va <= 0 ||
      location.type !== C.hipMemLocationTypeDevice ||
      !this.runtime.isDevice(location.id)
    ) {
      return C.hipErrorInvalidValue;
    }
    const m = this.runtime.mappingAt(va);
    if (m === undefined || m.reservation.origin !== 'vmm') return C.hipErrorInvalidValue;
    return writeBox(flags, m.accessOf(location.id)) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** A new reference to the allocation mapped at any address inside a VMM mapping; none for hipMalloc memory. */
  retain(handle: Box<bigint>, addr: HipPtr): number {
    const va = toCount(addr ?? 0);
    if (!isBox(handle) || va <= 0) return C.hipErrorInvalidValue;
    return this.#handOutAllocation(handle, () => this.runtime.retain(va));
  }

  /** A handle core just made (a retain, an import) to the caller's box, or released again if it refuses. */
  #handOutAllocation(
    handle: Box<bigint>,
    make: () => PhysicalAllocation,
    kept?: (a: PhysicalAllocation) => void,
  ) {
    return this.codes.handOut(
      handle,
      make,
      (a) => BigInt(a.id),
      (a) => this.runtime.release(a),
      C.hipErrorInvalidValue,
      kept,
    );
  }

  properties(prop: Box<hipMemAllocationProp>, handle: HipHandle): number {
    const a = this.allocations.allocation(handle);
    if (toCount(handle ?? 0) <= 0 || !isBox(prop) || a === undefined) return C.hipErrorInvalidValue;
    return writeBox(prop, this.allocations.reported(a)) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * Writes an int file descriptor. The handle type must equal the
   * requestedHandleTypes given at create, exactly (hip_vm.cpp compares with
   * !=, not as a bit set). The simulated machine has no fabric: a fabric
   * export fails as ROCr's would without one (hipErrorInvalidValue).
   */
  exportFd(shareableHandle: Box<number>, handle: HipHandle, handleType: number, flags: Size): number {
    if (toInt(flags) !== 0 || toCount(handle ?? 0) <= 0) return C.hipErrorInvalidValue;
    if (!isBox(shareableHandle)) return C.hipErrorInvalidValue;
    const a = this.allocations.allocation(handle);
    if (a === undefined) return C.hipErrorInvalidValue;
    const type = toInt(handleType);
    if (this.allocations.propsOf(a).requestedHandleTypes !== type) return C.hipErrorInvalidValue;
    if (type !== C.hipMemHandleTypePosixFileDescriptor) return C.hipErrorInvalidValue;
    return this.codes.handOut(
      shareableHandle,
      () => this.runtime.exportFd(a),
      (fd) => fd,
      (fd) => this.runtime.closeFd(fd),
      C.hipErrorInvalidValue,
    );
  }

  /** Takes the fd value itself (C passes the int cast to void*); a new handle to the same memory. */
  importFd(handle: Box<bigint>, osHandle: HipHandle, shHandleType: number): number {
    const fd = toCount(osHandle ?? 0);
    if (!isBox(handle) || fd === 0) return C.hipErrorInvalidValue;
    const type = toInt(shHandleType);
    if (type !== C.hipMemHandleTypePosixFileDescriptor || fd < 0) return C.hipErrorInvalidValue;
    return this.#handOutAllocation(
      handle,
      () => this.runtime.importFd(fd),
      (a) => this.allocations.imported(a, type),
    );
  }

  /** The first chunk's start of a whole-chunk range, or -1 (Note [ValidateSubBufferCoverage]). */
  #coverage(va: number, size: number): number {
    const first = this.runtime.mappingAt(va);
    if (first === undefined || first.reservation.origin !== 'vmm') return -1;
    const end = first.va + size;
    if (end > first.reservation.end) return -1;
    let m: Mapping | undefined = first;
    while (m.end < end) {
      m = this.runtime.nextMapping(m);
      if (m === undefined) return -1;
    }
    return m.end === end ? first.va : -1;
  }
}

/** hipMemSetAccess's descriptors: an array, or for C's `&desc` one struct; plain copies of the first `count`, or undefined. */
function readDescriptors(desc: unknown, count: number): (hipMemAccessDesc | undefined)[] | undefined {
  if (count <= 0) return undefined;
  const list = readList(desc, count);
  if (list === 'not-array') {
    const one = readStruct<hipMemAccessDesc>(desc, ACCESS_DESC_SHAPE);
    // The single struct stands for element 0; the loop finds nothing past it.
    return one === undefined ? undefined : [one];
  }
  // Past a short array's end are holes, which the loop refuses when it reaches them.
  const out: (hipMemAccessDesc | undefined)[] = [];
  for (let i = 0; i < count; i++) {
    const d = readStruct<hipMemAccessDesc>(list[i], ACCESS_DESC_SHAPE);
    if (d === undefined && list[i] !== undefined && typeof list[i] === 'object' && list[i] !== null)
      return undefined;
    out.push(d);
  }
  return out;
}

function isAllocationType(t: unknown): boolean {
  return t === C.hipMemAllocationTypePinned || t === C.hipMemAllocationTypeUncached;
}

/** A NUMA node of the simulated host. */
function isHostNumaNode(id: unknown): boolean {
  return Number.isInteger(id) && (id as number) >= 0 && (id as number) < C.SIMULATED_HOST_NUMA_NODES;
}
