import { isVmmError } from '../../core/errors.js';
import type { Mapping, PhysicalAllocation } from '../../core/objects.js';
import { instrument } from '../../core/trace.js';
import type { Access, Location } from '../../core/types.js';
import { isMultipleOf } from '../../util/integers.js';
import {
  ACCESS_DESC_SHAPE,
  type Box,
  hostBytes,
  isBox,
  isHostBuffer,
  isPowerOfTwo,
  isStruct,
  LOCATION_SHAPE,
  readAllocationProp,
  readList,
  readStruct,
  type Size,
  toCount,
  toInt,
  writeBox,
  writeBoxes,
} from '../common/args.js';
import { fillWide } from '../common/fill.js';
import { canReachPeer } from '../common/peers.js';
import { type FlavorOptions, VendorProcess, withDefaultDevices } from '../common/process.js';
import { probeBox } from '../common/untrusted.js';
import { copyAcross } from '../common/peer-copy.js';
import * as C from './constants.js';
import { HIP_ERROR_TABLE } from './error-table.js';
import { hipLayers } from './layers.js';
import { deviceProperties, hipDeviceAttribute, type hipDeviceProp_t } from './properties.js';

/** hipMemLocation */
export interface hipMemLocation {
  type: number;
  id: number;
}

/** hipMemAllocationProp (win32HandleMetaData and allocFlags are kept and reported, not interpreted). */
export interface hipMemAllocationProp {
  type: number;
  requestedHandleTypes: number;
  location: hipMemLocation;
  win32HandleMetaData?: bigint | number;
  allocFlags?: { compressionType?: number; gpuDirectRDMACapable?: number; usage?: number };
}

/** hipMemAccessDesc */
export interface hipMemAccessDesc {
  location: hipMemLocation;
  flags: number;
}

/** A device pointer (void*): null, a number or a bigint. */
export type { hipDeviceProp_t } from './properties.js';

/** hipPointerAttribute_t (ROCm 6): what hipPointerGetAttributes writes, pointers as bigints. */
export interface hipPointerAttribute_t {
  readonly type: number;
  readonly device: number;
  readonly devicePointer: bigint;
  readonly hostPointer: bigint;
  readonly isManaged: number;
  readonly allocationFlags: number;
}

type HipPtr = bigint | number | null;
/** An opaque handle (hipMemGenericAllocationHandle_t, hipStream_t). */
type HipHandle = bigint | number | null;
/** A hipMemcpy operand: a host buffer, or a device pointer. */
type HipMemory = Uint8Array | HipPtr;

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
const MEMCPY_KINDS = new Set([
  C.hipMemcpyHostToHost,
  C.hipMemcpyHostToDevice,
  C.hipMemcpyDeviceToHost,
  C.hipMemcpyDeviceToDevice,
  C.hipMemcpyDefault,
  C.hipMemcpyDeviceToDeviceNoCU,
]);
/** Every hipHostMalloc flag bit HIP defines. */
const HOST_MALLOC_FLAGS =
  C.hipHostMallocPortable |
  C.hipHostMallocMapped |
  C.hipHostMallocWriteCombined |
  C.hipHostMallocNumaUser |
  C.hipHostMallocCoherent |
  C.hipHostMallocNonCoherent;
/** Granularity of host-located VMM memory: the CPU agent's page. */
const HOST_GRANULARITY = 4096;
/** Stream handles are opaque; these are deterministic per process. */
const STREAM_BASE = 0x6_0000n;
/** hipEvent_t handles: opaque, never reused in a process. */
const HIP_EVENT_BASE = 0x7e_0000_0000n;
const HIP_EVENT_RELEASE_BITS =
  C.hipEventReleaseToDevice | C.hipEventReleaseToSystem | C.hipEventDisableSystemFence;
const HIP_EVENT_FLAG_BITS =
  C.hipEventBlockingSync | C.hipEventDisableTiming | C.hipEventInterprocess | HIP_EVENT_RELEASE_BITS;
/** The simulated machine of a HIP process that names none. */
const HIP_DEFAULT_DEVICES = ['MI300X'] as const;

/** The function names of the HIP flavour (for tracing, parity and documentation). */
export const HIP_FUNCTIONS = [
  'hipInit',
  'hipGetDeviceCount',
  'hipSetDevice',
  'hipGetDevice',
  'hipDeviceGet',
  'hipDeviceCanAccessPeer',
  'hipDeviceEnablePeerAccess',
  'hipDeviceDisablePeerAccess',
  'hipGetDeviceProperties',
  'hipDeviceGetAttribute',
  'hipRuntimeGetVersion',
  'hipDeviceSynchronize',
  'hipMemGetAllocationGranularity',
  'hipMemAddressReserve',
  'hipMemAddressFree',
  'hipMemCreate',
  'hipMemRelease',
  'hipMemMap',
  'hipMemUnmap',
  'hipMemSetAccess',
  'hipMemGetAccess',
  'hipMemGetAddressRange',
  'hipPointerGetAttributes',
  'hipMemRetainAllocationHandle',
  'hipMemGetAllocationPropertiesFromHandle',
  'hipMemExportToShareableHandle',
  'hipMemImportFromShareableHandle',
  'hipMalloc',
  'hipFree',
  'hipMemGetInfo',
  'hipHostMalloc',
  'hipHostFree',
  'hipMemcpy',
  'hipMemcpyAsync',
  'hipMemcpyHtoD',
  'hipMemcpyDtoH',
  'hipMemcpyDtoD',
  'hipMemcpyPeer',
  'hipMemset',
  'hipMemsetAsync',
  'hipMemsetD32',
  'hipStreamCreate',
  'hipStreamCreateWithFlags',
  'hipStreamSynchronize',
  'hipStreamDestroy',
  'hipEventCreate',
  'hipEventCreateWithFlags',
  'hipEventRecord',
  'hipEventQuery',
  'hipEventSynchronize',
  'hipEventDestroy',
  'hipEventElapsedTime',
  'hipStreamWaitEvent',
  'hipDeviceReset',
  'hipGetLastError',
  'hipPeekAtLastError',
  'hipGetErrorName',
  'hipGetErrorString',
] as const;

/**
 * One process using the HIP runtime API: every method has the C name and
 * argument order and returns the hipError_t. The checks are those of ROCm's
 * hip_vm.cpp, in its order and with its codes; the work is done by core.
 *
 * Note [HIP handle lifetime]: HIP keeps one reference count per
 * GenericAllocation (1 at create/import, +1 per map and retain, -1 per
 * release and per unmapped chunk), which is core's PhysicalAllocation.refCount.
 * One difference stays: core invalidates the handle value once every handle
 * reference is released, even while mappings keep the memory alive; in HIP
 * the pointer stays usable (strictly, using it is undefined behaviour).
 */
export class HipFlavor extends VendorProcess {
  /** The calling thread's current device (hipSetDevice). */
  #current = 0;
  /** Stream handle -> core stream id and the device it was created on. */
  readonly #streams = new Map<bigint, { id: number; device: number }>();
  /** Live events by core id: creation flags, and whether ever recorded (hipEventElapsedTime's rules). */
  readonly #events = new Map<number, { readonly flags: number; recorded: boolean }>();
  /** The last failure a call answered (Note [HIP last error]). */
  #lastError: number = C.hipSuccess;
  /** Buffers hipHostMalloc handed out and hipHostFree has not taken back. */
  readonly #hostBuffers = new WeakSet<Uint8Array>();
  /** Peer access enabled, as current device * device count + peer device (hipDeviceEnablePeerAccess). */
  readonly #peerAccess = new Set<number>();
  /** The hipMemAllocationProp each allocation reports (GenericAllocation::GetProperties). */
  readonly #props = new WeakMap<PhysicalAllocation, hipMemAllocationProp>();

  /** On the simulator the machine is one AMD Instinct MI300X unless options name devices or a machine to join. */
  constructor(options: FlavorOptions = {}) {
    super(withDefaultDevices(options, HIP_DEFAULT_DEVICES), {
      vendor: 'HIP',
      table: HIP_ERROR_TABLE,
      success: C.hipSuccess,
      unknown: C.hipErrorUnknown,
    });
    this.#recordErrors();
    if (options.tracer)
      instrument(
        this,
        'flavor',
        options.tracer,
        [...HIP_FUNCTIONS, 'dispose'],
        hipLayers(this.runtime.backend.kind),
      );
  }

  // --- initialisation and devices ------------------------------------------------------

  /** HIP initialises on first use; hipInit only checks its flags. */
  hipInit(flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return toInt(flags) === 0 ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  hipGetDeviceCount(count: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(count)) return C.hipErrorInvalidValue;
    return writeBox(count, this.runtime.devices.length) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  hipSetDevice(deviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    this.#current = d;
    return C.hipSuccess;
  }

  hipGetDevice(deviceId: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(deviceId)) return C.hipErrorInvalidValue;
    return writeBox(deviceId, this.#current) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** The device handle of `ordinal` (HIP's hipDevice_t is the ordinal itself). */
  hipDeviceGet(device: Box<number>, ordinal: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(device)) return C.hipErrorInvalidValue;
    const d = toInt(ordinal);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    return writeBox(device, d) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * Let the current device reach `peerDeviceId`'s memory: flags 0, a device
   * other than the current one, once only. Recorded; it changes nothing else
   * (the CUDA flavour's Note [Peer access]).
   */
  hipDeviceEnablePeerAccess(peerDeviceId: number, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (toCount(flags) !== 0) return C.hipErrorInvalidValue;
    const peer = toInt(peerDeviceId);
    if (!this.runtime.isDevice(peer) || peer === this.#current) return C.hipErrorInvalidDevice;
    if (!canReachPeer(this.runtime.devices, this.#current, peer)) return C.hipErrorInvalidDevice;
    const key = this.#current * this.runtime.devices.length + peer;
    if (this.#peerAccess.has(key)) return C.hipErrorPeerAccessAlreadyEnabled;
    this.#peerAccess.add(key);
    return C.hipSuccess;
  }

  hipDeviceDisablePeerAccess(peerDeviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const peer = toInt(peerDeviceId);
    if (!this.runtime.isDevice(peer)) return C.hipErrorInvalidDevice;
    const key = this.#current * this.runtime.devices.length + peer;
    return this.#peerAccess.delete(key) ? C.hipSuccess : C.hipErrorPeerAccessNotEnabled;
  }

  /** One device attribute (Note [HIP device properties]); one vmmkit does not answer is hipErrorInvalidValue. */
  hipDeviceGetAttribute(pi: Box<number>, attr: number, deviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(pi)) return C.hipErrorInvalidValue;
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    const a = typeof attr === 'number' && Number.isInteger(attr) ? attr : Number.NaN;
    const info = this.runtime.devices[d];
    const value = hipDeviceAttribute(info.name, a, info.driverAttributes);
    if (value === undefined) return C.hipErrorInvalidValue;
    return writeBox(pi, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** The fields VMM programs read (Note [HIP device properties]); a part with no published row is hipErrorInvalidValue. */
  hipGetDeviceProperties(prop: Box<hipDeviceProp_t>, deviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(prop)) return C.hipErrorInvalidValue;
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    const info = this.runtime.devices[d];
    const value = deviceProperties(info.name, info.totalMemory, info.driverAttributes);
    if (value === undefined) return C.hipErrorInvalidValue;
    return writeBox(prop, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * Whether `deviceId` can map `peerDeviceId`'s memory: every other device on
   * the simulated machine, never itself (0); over the real driver, the
   * driver's answer (the CUDA flavour's Note [Peer access]).
   */
  hipDeviceCanAccessPeer(canAccessPeer: Box<number>, deviceId: number, peerDeviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(canAccessPeer)) return C.hipErrorInvalidValue;
    const d = toInt(deviceId);
    const peer = toInt(peerDeviceId);
    if (!this.runtime.isDevice(d) || !this.runtime.isDevice(peer)) return C.hipErrorInvalidDevice;
    return writeBox(canAccessPeer, canReachPeer(this.runtime.devices, d, peer) ? 1 : 0)
      ? C.hipSuccess
      : C.hipErrorInvalidValue;
  }

  /** HIP_VERSION of the simulated runtime (C.SIMULATED_HIP_RUNTIME_VERSION). */
  hipRuntimeGetVersion(runtimeVersion: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(runtimeVersion)) return C.hipErrorInvalidValue;
    return writeBox(runtimeVersion, C.SIMULATED_HIP_RUNTIME_VERSION) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  hipDeviceSynchronize(): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.codes.run(() => this.runtime.synchronize(this.#current));
  }

  // --- virtual memory management (hip_vm.cpp) -----------------------------------------------

  hipMemGetAllocationGranularity(
    granularity: Box<number>,
    propArg: hipMemAllocationProp,
    option: number,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const opt = toInt(option);
    // One read of each field, into a plain copy (Note [Untrusted arguments]).
    const copy = readAllocationProp<hipMemAllocationProp>(propArg);
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
    const d = this.runtime.devices[this.#current];
    const value =
      opt === C.hipMemAllocationGranularityMinimum ? d.minimumGranularity : d.recommendedGranularity;
    return writeBox(granularity, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  hipMemAddressReserve(ptr: Box<bigint>, size: Size, alignment: Size, addr: HipPtr, flags: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(ptr) || toInt(flags) !== 0) return C.hipErrorInvalidValue;
    const n = toCount(size);
    const align = toCount(alignment);
    // Device 0's minimum granularity: one reservation serves every device.
    if (n <= 0 || !isMultipleOf(n, this.runtime.vaGranularity)) return C.hipErrorInvalidValue;
    if (align < 0 || (align !== 0 && !isPowerOfTwo(align))) return C.hipErrorInvalidValue;
    const hint = Math.max(0, toCount(addr ?? 0));
    try {
      const r = this.runtime.reserve(n, { alignment: align, hint });
      if (writeBox(ptr, BigInt(r.base))) return C.hipSuccess;
      this.runtime.free(r);
      return C.hipErrorInvalidValue;
    } catch (e) {
      // virtualAlloc returning null is answered with hipErrorOutOfMemory.
      return isVmmError(e) ? C.hipErrorOutOfMemory : this.codes.code(e);
    }
  }

  /**
   * Size is checked for zero and otherwise ignored: the reservation is found
   * from the pointer. A pointer inside (not at the base of) a reservation is
   * found too, but virtualFree then fails, as it does while anything is
   * still mapped: hipErrorUnknown (Note [HIP in-use is Unknown]).
   */
  hipMemAddressFree(devPtr: HipPtr, size: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const va = toCount(devPtr ?? 0);
    const n = toCount(size);
    if (va <= 0 || n <= 0) return C.hipErrorInvalidValue;
    const r = this.runtime.reservationContaining(va);
    if (r === undefined || r.origin !== 'vmm') return C.hipErrorInvalidValue;
    if (r.base !== va || r.mappingCount > 0) return C.hipErrorUnknown;
    return this.codes.run(() => this.runtime.free(r));
  }

  hipMemCreate(handle: Box<bigint>, size: Size, propArg: hipMemAllocationProp, flags: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const n = toCount(size);
    // One read of each field, into a plain copy: what is validated is what is stored (issue 10 E).
    const copy = readAllocationProp<hipMemAllocationProp>(propArg);
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
      if (!(Number.isInteger(id) && id >= 0 && id < C.SIMULATED_HOST_NUMA_NODES))
        return C.hipErrorInvalidValue;
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
    try {
      const a = this.runtime.create(n, {
        location,
        handleTypes,
        uncached: prop.type === C.hipMemAllocationTypeUncached,
      });
      if (!writeBox(handle, BigInt(a.id))) {
        this.runtime.release(a);
        return C.hipErrorInvalidValue;
      }
      this.#props.set(a, copyProp(prop));
      return C.hipSuccess;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  hipMemRelease(handle: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const a = this.#allocation(handle);
    if (a === undefined) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.release(a));
  }

  /** Maps [ptr, ptr + size) to the start of the allocation; the mapping holds one reference (ga->retain). */
  hipMemMap(ptr: HipPtr, size: Size, offset: Size, handle: HipHandle, flags: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const va = toCount(ptr ?? 0);
    const n = toCount(size);
    const h = toCount(handle ?? 0);
    if (va <= 0 || h <= 0 || n <= 0 || toCount(offset) !== 0 || toInt(flags) !== 0) {
      return C.hipErrorInvalidValue;
    }
    const a = this.runtime.allocation(h);
    if (a === undefined) return C.hipErrorInvalidValue;
    // Host-backed memory is mapped through the current device (VmmOwnerDeviceIndex).
    const owner = a.props.location.type === 'device' ? a.props.location.id : this.#current;
    if (!isMultipleOf(n, this.runtime.devices[owner].minimumGranularity)) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.map(va, n, a, 0));
  }

  /**
   * Unmaps whole chunks (Note [ValidateSubBufferCoverage]); every stream is
   * synchronised first (core's unmap does, as SyncAllStreams), then each
   * chunk is unmapped and drops its allocation reference.
   */
  hipMemUnmap(ptr: HipPtr, size: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
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
  hipMemSetAccess(
    ptr: HipPtr,
    size: Size,
    desc: readonly hipMemAccessDesc[] | hipMemAccessDesc | null,
    count: Size,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
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
      if (
        type === C.hipMemLocationTypeHostNuma &&
        !(Number.isInteger(id) && id >= 0 && id < C.SIMULATED_HOST_NUMA_NODES)
      ) {
        return C.hipErrorInvalidValue;
      }
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

  hipMemGetAccess(flags: Box<number>, locationArg: hipMemLocation, ptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
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

  /**
   * The range of the allocation holding `dptr` (Note [HIP pointer ranges]):
   * hipErrorNotFound for an address nothing is mapped at, as ROCm's
   * hipMemGetAddressRange answers when it finds no memory object.
   */
  hipMemGetAddressRange(pbase: Box<bigint>, psize: Box<number>, dptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(pbase) || !isBox(psize)) return C.hipErrorInvalidValue;
    const m = this.#mappingOf(dptr);
    if (m === undefined) return C.hipErrorNotFound;
    return writeBoxes(pbase, BigInt(m.va), psize, m.size) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * The memory type, device and pointers of `ptr` (Note [HIP pointer
   * ranges]). An address that is no HIP memory is hipErrorInvalidValue: ROCm
   * documents the CUDA-before-11 behaviour, not hipMemoryTypeUnregistered.
   */
  hipPointerGetAttributes(attributes: Box<hipPointerAttribute_t>, ptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(attributes)) return C.hipErrorInvalidValue;
    const m = this.#mappingOf(ptr);
    if (m === undefined) return C.hipErrorInvalidValue;
    const location = m.allocation.props.location;
    const device = location.type === 'device';
    const address = BigInt(toCount(ptr ?? 0));
    const value: hipPointerAttribute_t = Object.freeze({
      type: device ? C.hipMemoryTypeDevice : C.hipMemoryTypeHost,
      device: device ? location.id : this.#current,
      devicePointer: address,
      hostPointer: device ? 0n : address,
      isManaged: 0,
      allocationFlags: 0,
    });
    return writeBox(attributes, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** A new reference to the allocation mapped at any address inside a VMM mapping; none for hipMalloc memory. */
  hipMemRetainAllocationHandle(handle: Box<bigint>, addr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const va = toCount(addr ?? 0);
    if (!isBox(handle) || va <= 0) return C.hipErrorInvalidValue;
    try {
      const a = this.runtime.retain(va);
      if (writeBox(handle, BigInt(a.id))) return C.hipSuccess;
      this.runtime.release(a);
      return C.hipErrorInvalidValue;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  hipMemGetAllocationPropertiesFromHandle(prop: Box<hipMemAllocationProp>, handle: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const a = this.#allocation(handle);
    if (toCount(handle ?? 0) <= 0 || !isBox(prop) || a === undefined) return C.hipErrorInvalidValue;
    return writeBox(prop, copyProp(this.#propsOf(a))) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * Writes an int file descriptor. The handle type must equal the
   * requestedHandleTypes given at create, exactly (hip_vm.cpp compares with
   * !=, not as a bit set). The simulated machine has no fabric: a fabric
   * export fails as ROCr's would without one (hipErrorInvalidValue).
   */
  hipMemExportToShareableHandle(
    shareableHandle: Box<number>,
    handle: HipHandle,
    handleType: number,
    flags: Size,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (toInt(flags) !== 0 || toCount(handle ?? 0) <= 0) return C.hipErrorInvalidValue;
    if (!isBox(shareableHandle)) return C.hipErrorInvalidValue;
    const a = this.#allocation(handle);
    if (a === undefined) return C.hipErrorInvalidValue;
    const type = toInt(handleType);
    if (this.#propsOf(a).requestedHandleTypes !== type) return C.hipErrorInvalidValue;
    if (type !== C.hipMemHandleTypePosixFileDescriptor) return C.hipErrorInvalidValue;
    try {
      const fd = this.runtime.exportFd(a);
      if (writeBox(shareableHandle, fd)) return C.hipSuccess;
      this.runtime.closeFd(fd);
      return C.hipErrorInvalidValue;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /** Takes the fd value itself (C passes the int cast to void*); a new handle to the same memory. */
  hipMemImportFromShareableHandle(handle: Box<bigint>, osHandle: HipHandle, shHandleType: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const fd = toCount(osHandle ?? 0);
    if (!isBox(handle) || fd === 0) return C.hipErrorInvalidValue;
    const type = toInt(shHandleType);
    if (type !== C.hipMemHandleTypePosixFileDescriptor || fd < 0) return C.hipErrorInvalidValue;
    try {
      const a = this.runtime.importFd(fd);
      const { location } = a.props;
      if (!writeBox(handle, BigInt(a.id))) {
        this.runtime.release(a);
        return C.hipErrorInvalidValue;
      }
      this.#props.set(a, {
        type: C.hipMemAllocationTypePinned,
        requestedHandleTypes: type,
        location: {
          type: location.type === 'device' ? C.hipMemLocationTypeDevice : C.hipMemLocationTypeHost,
          id: location.type === 'device' ? location.id : 0,
        },
      });
      return C.hipSuccess;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  // --- the one-step path --------------------------------------------------------------------

  /** Size 0 gives a null pointer and success, as HIP does. */
  hipMalloc(ptr: Box<bigint>, size: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const n = toCount(size);
    if (!isBox(ptr) || n < 0) return C.hipErrorInvalidValue;
    if (n === 0) {
      return writeBox(ptr, 0n) ? C.hipSuccess : C.hipErrorInvalidValue;
    }
    try {
      const r = this.runtime.malloc(this.#current, n);
      if (writeBox(ptr, BigInt(r.base))) return C.hipSuccess;
      this.runtime.mfree(r.base);
      return C.hipErrorInvalidValue;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /** hipFree(NULL) succeeds; anything but a hipMalloc pointer is hipErrorInvalidValue. */
  hipFree(ptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const va = toCount(ptr ?? 0);
    if (va === 0) return C.hipSuccess;
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc') return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.mfree(va));
  }

  /**
   * Pinned host memory (the CUDA flavour's Note [Host buffers]): size 0 gives
   * NULL and succeeds, as hipMalloc does; a flag HIP does not define, or both
   * coherent and non-coherent, is hipErrorInvalidValue.
   */
  hipHostMalloc(ptr: Box<Uint8Array | null>, size: Size, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const n = toCount(size);
    const f = toCount(flags);
    if (!isBox(ptr) || n < 0 || f < 0 || f > 0xffff_ffff || (f & ~HOST_MALLOC_FLAGS) !== 0)
      return C.hipErrorInvalidValue;
    const coherence = C.hipHostMallocCoherent | C.hipHostMallocNonCoherent;
    if ((f & coherence) === coherence) return C.hipErrorInvalidValue;
    if (n === 0) return writeBox(ptr, null) ? C.hipSuccess : C.hipErrorInvalidValue;
    let buffer: Uint8Array;
    try {
      buffer = new Uint8Array(n);
    } catch {
      return C.hipErrorOutOfMemory;
    }
    if (!writeBox(ptr, buffer)) return C.hipErrorInvalidValue;
    this.#hostBuffers.add(buffer);
    return C.hipSuccess;
  }

  /** hipHostFree(NULL) succeeds; anything but a live hipHostMalloc buffer is hipErrorInvalidValue. */
  hipHostFree(ptr: Uint8Array | null): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (ptr === null || ptr === undefined || ptr === (0 as never) || ptr === (0n as never))
      return C.hipSuccess;
    if (!isHostBuffer(ptr) || !this.#hostBuffers.delete(ptr)) return C.hipErrorInvalidValue;
    return C.hipSuccess;
  }

  hipMemGetInfo(free: Box<number>, total: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(free) || !isBox(total)) return C.hipErrorInvalidValue;
    const info = this.runtime.memoryInfo(this.#current);
    return writeBoxes(free, info.free, total, info.total) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  // --- copies and sets ------------------------------------------------------------------------

  /** Host operands are Uint8Arrays, device operands pointers; hipMemcpyDefault infers the direction from them. */
  hipMemcpy(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#memcpy(dst, src, sizeBytes, kind, 0n);
  }

  hipMemcpyAsync(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number, stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#memcpy(dst, src, sizeBytes, kind, stream);
  }

  /** hipMemcpy with the direction in the name: the operands must be what it says. */
  hipMemcpyHtoD(dst: HipPtr, src: Uint8Array, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#memcpy(dst, src, sizeBytes, C.hipMemcpyHostToDevice, 0n);
  }

  hipMemcpyDtoH(dst: Uint8Array, src: HipPtr, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#memcpy(dst, src, sizeBytes, C.hipMemcpyDeviceToHost, 0n);
  }

  hipMemcpyDtoD(dst: HipPtr, src: HipPtr, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#memcpy(dst, src, sizeBytes, C.hipMemcpyDeviceToDevice, 0n);
  }

  /**
   * Copy from `srcDeviceId`'s view of `src` to `dstDeviceId`'s view of `dst`
   * (the CUDA flavour's peer-copy.ts): no peer access needed, as in ROCm,
   * which stages the copy when the devices cannot reach each other.
   */
  hipMemcpyPeer(dst: HipPtr, dstDeviceId: number, src: HipPtr, srcDeviceId: number, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const to = toInt(dstDeviceId);
    const from = toInt(srcDeviceId);
    if (!this.runtime.isDevice(to) || !this.runtime.isDevice(from)) return C.hipErrorInvalidDevice;
    const n = toCount(sizeBytes);
    if (n < 0) return C.hipErrorInvalidValue;
    return this.codes.run(() => copyAcross(this.runtime, to, toCount(dst ?? 0), from, toCount(src ?? 0), n));
  }

  /** `count` 32-bit values (little-endian); the destination must be 4-byte aligned. */
  hipMemsetD32(dst: HipPtr, value: number, count: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const n = toCount(count);
    const va = toCount(dst ?? 0);
    if (n < 0 || !Number.isInteger(value) || n * 4 > Number.MAX_SAFE_INTEGER) return C.hipErrorInvalidValue;
    if (n === 0) return C.hipSuccess;
    if (va <= 0 || va % 4 !== 0) return C.hipErrorInvalidValue;
    return this.codes.run(() => fillWide(this.runtime, this.#current, va, value, n, 4));
  }

  hipMemset(dst: HipPtr, value: number, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#memset(dst, value, sizeBytes, 0n);
  }

  hipMemsetAsync(dst: HipPtr, value: number, sizeBytes: Size, stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#memset(dst, value, sizeBytes, stream);
  }

  // --- streams -------------------------------------------------------------------------------------

  hipStreamCreate(stream: Box<bigint>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(stream)) return C.hipErrorInvalidValue;
    const device = this.#current;
    try {
      const id = this.runtime.createStream(device);
      const h = STREAM_BASE + BigInt(id);
      if (!writeBox(stream, h)) {
        this.runtime.destroyStream(id);
        return C.hipErrorInvalidValue;
      }
      this.#streams.set(h, { id, device });
      return C.hipSuccess;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /** flags: hipStreamDefault or hipStreamNonBlocking (a blocking stream is what every stream is here). */
  hipStreamCreateWithFlags(stream: Box<bigint>, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const f = toInt(flags);
    if (f !== C.hipStreamDefault && f !== C.hipStreamNonBlocking) return C.hipErrorInvalidValue;
    return this.hipStreamCreate(stream);
  }

  /** The null stream (0) waits for the current device's work. */
  hipStreamSynchronize(stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const s = this.#stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    return this.codes.run(() =>
      s.id === 0 ? this.runtime.synchronize(this.#current) : this.runtime.synchronizeStream(s.id),
    );
  }

  hipStreamDestroy(stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const s = this.#stream(stream);
    if (s === undefined || s.id === 0) return C.hipErrorInvalidHandle;
    // Gone even when its queued work failed (Note [Destroying a busy stream], cuda.ts).
    try {
      this.runtime.destroyStream(s.id);
    } catch (e) {
      if (this.runtime.hasStream(s.id)) return this.codes.code(e);
    }
    this.#streams.delete(BigInt(stream as bigint));
    return C.hipSuccess;
  }

  // --- events (Note [HIP events]) ---------------------------------------------------------------------

  hipEventCreate(event: Box<bigint>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#createEvent(event, C.hipEventDefault);
  }

  /**
   * clr's rules (hip_event.cpp): only the known flag bits, at most one of the
   * release / system-fence flags, and hipEventInterprocess only with
   * hipEventDisableTiming; else hipErrorInvalidValue.
   */
  hipEventCreateWithFlags(event: Box<bigint>, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(event)) return C.hipErrorInvalidValue;
    const f =
      typeof flags === 'number' && Number.isInteger(flags) && flags >= 0 && flags <= 0xffff_ffff ? flags : -1;
    if (f < 0 || (f & ~HIP_EVENT_FLAG_BITS) !== 0) return C.hipErrorInvalidValue;
    const release = f & HIP_EVENT_RELEASE_BITS;
    if ((release & (release - 1)) !== 0) return C.hipErrorInvalidValue;
    if ((f & C.hipEventInterprocess) !== 0 && (f & C.hipEventDisableTiming) === 0)
      return C.hipErrorInvalidValue;
    return this.#createEvent(event, f);
  }

  /** ihipEventCreateWithFlags: an event of the current device, its box written or nothing made. */
  #createEvent(event: Box<bigint>, f: number): number {
    if (!isBox(event) || !probeBox(event)) return C.hipErrorInvalidValue;
    try {
      const id = this.runtime.createEvent(this.#current, {
        timing: (f & C.hipEventDisableTiming) === 0,
      });
      if (!writeBox(event, HIP_EVENT_BASE + BigInt(id))) {
        this.runtime.destroyEvent(id);
        return C.hipErrorInvalidValue;
      }
      this.#events.set(id, { flags: f, recorded: false });
      return C.hipSuccess;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  hipEventRecord(event: HipHandle, stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const id = this.#event(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    const s = this.#stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    // An event records only on a stream of its own device (hipErrorInvalidResourceHandle, 400).
    if (s.device !== this.runtime.eventDevice(id)) return C.hipErrorInvalidResourceHandle;
    const result = this.codes.run(() => this.runtime.recordEvent(id, s.id));
    if (result === C.hipSuccess) this.#events.get(id)!.recorded = true;
    return result;
  }

  /** hipSuccess when the recorded work is done (or nothing was recorded), hipErrorNotReady (600) while not. */
  hipEventQuery(event: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const id = this.#event(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    try {
      return this.runtime.queryEvent(id) ? C.hipSuccess : C.hipErrorNotReady;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  hipEventSynchronize(event: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const id = this.#event(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    return this.codes.run(() => this.runtime.synchronizeEvent(id));
  }

  /** NULL: hipErrorInvalidHandle; an event no longer in the process's set (destroyed): hipErrorContextIsDestroyed, as clr answers. */
  hipEventDestroy(event: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (event === null || event === undefined || event === 0 || event === 0n) return C.hipErrorInvalidHandle;
    const id = this.#event(event);
    if (id < 0) return C.hipErrorContextIsDestroyed;
    const result = this.codes.run(() => this.runtime.destroyEvent(id));
    if (result === C.hipSuccess) this.#events.delete(id);
    return result;
  }

  /** The time between two completed timing events: the driver's over a real backend, 0 ms on the simulator (Note [HIP events]). */
  hipEventElapsedTime(ms: Box<number>, start: HipHandle, stop: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(ms)) return C.hipErrorInvalidValue;
    const a = this.#event(start);
    const b = this.#event(stop);
    if (a < 0 || b < 0) return C.hipErrorInvalidHandle;
    if (this.runtime.eventDevice(a) !== this.runtime.eventDevice(b)) return C.hipErrorInvalidResourceHandle;
    const ea = this.#events.get(a)!;
    const eb = this.#events.get(b)!;
    if (((ea.flags | eb.flags) & C.hipEventDisableTiming) !== 0) return C.hipErrorInvalidHandle;
    if (!ea.recorded || !eb.recorded) return C.hipErrorInvalidHandle;
    let elapsed: number;
    try {
      if (!this.runtime.queryEvent(a) || !this.runtime.queryEvent(b)) return C.hipErrorNotReady;
      elapsed = this.runtime.elapsedTime(a, b);
    } catch (e) {
      return this.codes.code(e);
    }
    return writeBox(ms, elapsed) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** Later work on `stream` waits for the event's recorded work; flags hipEventWaitDefault (0) or hipEventWaitExternal (1). */
  hipStreamWaitEvent(stream: HipHandle, event: HipHandle, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const id = this.#event(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    const s = this.#stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    const f = toInt(flags);
    if (f !== 0 && f !== 1) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.streamWaitEvent(s.id, id));
  }

  /** An event handle as core's event id, or -1 if it names no live event of this process. */
  #event(h: HipHandle): number {
    const key =
      typeof h === 'bigint' ? h : typeof h === 'number' && Number.isSafeInteger(h) ? BigInt(h) : -1n;
    const id = key - HIP_EVENT_BASE;
    if (id <= 0n || id > BigInt(Number.MAX_SAFE_INTEGER)) return -1;
    return this.#events.has(Number(id)) ? Number(id) : -1;
  }

  /**
   * Release every resource of the current device in this process (Note
   * [Device reset] in core): its work finished, its streams and events
   * destroyed, its memory (hipMalloc and VMM) unmapped and released, the
   * reservations that held it freed. The process goes on: later calls work.
   */
  hipDeviceReset(): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const device = this.#current;
    const result = this.codes.run(() => this.runtime.resetDevice(device));
    if (result !== C.hipSuccess) return result;
    for (const [h, s] of this.#streams) if (!this.runtime.hasStream(s.id)) this.#streams.delete(h);
    for (const id of this.#events.keys())
      if (this.runtime.eventDevice(id) === undefined) this.#events.delete(id);
    for (const key of this.#peerAccess) {
      const n = this.runtime.devices.length;
      if (Math.floor(key / n) === device || key % n === device) this.#peerAccess.delete(key);
    }
    return C.hipSuccess;
  }

  // --- errors ----------------------------------------------------------------------------------------

  /** The last error any call of this process answered, then hipSuccess again (Note [HIP last error]). */
  hipGetLastError(): number {
    const e = this.#lastError;
    this.#lastError = C.hipSuccess;
    return e;
  }

  /** The last error, left in place. */
  hipPeekAtLastError(): number {
    return this.#lastError;
  }

  /** The enumerator's name; "hipErrorUnknown" for a value HIP does not know. */
  hipGetErrorName(hipError: number): string {
    return C.HIP_ERRORS.get(toInt(hipError))?.[0] ?? 'hipErrorUnknown';
  }

  hipGetErrorString(hipError: number): string {
    return C.HIP_ERRORS.get(toInt(hipError))?.[1] ?? 'unknown error';
  }

  // --- helpers -----------------------------------------------------------------------------------------

  /**
   * Note [HIP last error]: HIP keeps, per thread, the last error any API call
   * returned; hipGetLastError reads and clears it, hipPeekAtLastError reads
   * it, and a successful call leaves it alone. Each call of this instance is
   * wrapped to record a failing answer (one thread per process here).
   */
  #recordErrors(): void {
    const methods = this as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of HIP_FUNCTIONS) {
      if (name === 'hipGetLastError' || name === 'hipPeekAtLastError') continue;
      const method = methods[name];
      if (typeof method !== 'function') continue;
      // Fixed arguments, not a rest array: V8 calls through this without allocating (no HIP call takes more than 6).
      methods[name] = (a?: unknown, b?: unknown, c?: unknown, d?: unknown, e?: unknown, f?: unknown) => {
        const result = method.call(this, a, b, c, d, e, f);
        if (typeof result === 'number' && result !== C.hipSuccess) this.#lastError = result;
        return result;
      };
    }
  }

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
  #mappingOf(ptr: HipPtr): Mapping | undefined {
    const va = toCount(ptr ?? 0);
    return va <= 0 ? undefined : this.runtime.mappingAt(va);
  }

  /** After dispose() the process is gone (Note [HIP after dispose]). */
  #gone(): boolean {
    return this.runtime.disposed;
  }

  /**
   * Note [ValidateSubBufferCoverage]: hip_vm.cpp finds the chunk (mapping)
   * that contains ptr and measures the range from that chunk's start, not
   * from ptr: the range must not pass the reservation's end, and `size`
   * must equal the sizes of whole consecutive chunks from there (no hole, no
   * partial last chunk). So a ptr inside a chunk with size a whole number of
   * chunks is accepted and acts on whole chunks; hipMalloc memory is not
   * VMM memory and is refused. The first chunk's start, from which core's
   * unmap and setAccess act on [start, start + size); -1 (hipErrorInvalidValue)
   * if the chunks do not cover it. The walk visits only the chunks in range.
   */
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

  #memcpy(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number, stream: HipHandle): number {
    const n = toCount(sizeBytes);
    if (n < 0) return C.hipErrorInvalidValue;
    if (n === 0) return C.hipSuccess;
    const k = toInt(kind);
    if (!MEMCPY_KINDS.has(k)) return C.hipErrorInvalidMemcpyDirection;
    // Host operands by the views' internal slots, as plain views of the same bytes (Note [Untrusted arguments]).
    const dstBytes = hostBytes(dst);
    const srcBytes = hostBytes(src);
    const dstHost = dstBytes !== undefined;
    const srcHost = srcBytes !== undefined;
    const dstVa = dstHost ? 0 : toCount(dst ?? 0);
    const srcVa = srcHost ? 0 : toCount(src ?? 0);
    if ((!dstHost && dstVa <= 0) || (!srcHost && srcVa <= 0)) return C.hipErrorInvalidValue;
    if (k !== C.hipMemcpyDefault) {
      const wantDstHost = k === C.hipMemcpyHostToHost || k === C.hipMemcpyDeviceToHost;
      const wantSrcHost = k === C.hipMemcpyHostToHost || k === C.hipMemcpyHostToDevice;
      if (dstHost !== wantDstHost || srcHost !== wantSrcHost) return C.hipErrorInvalidValue;
    }
    if ((dstBytes !== undefined && dstBytes.length < n) || (srcBytes !== undefined && srcBytes.length < n))
      return C.hipErrorInvalidValue;
    const s = this.#stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    const device = s.id === 0 ? this.#current : s.device;
    if (dstBytes !== undefined && srcBytes !== undefined) {
      dstBytes.set(srcBytes.subarray(0, n));
      return C.hipSuccess;
    }
    if (srcBytes !== undefined)
      return this.codes.run(() => this.runtime.write(device, dstVa, srcBytes.subarray(0, n), s.id));
    if (dstBytes !== undefined)
      return this.codes.run(() => this.runtime.read(device, srcVa, dstBytes.subarray(0, n), s.id));
    return this.codes.run(() => this.runtime.copy(device, dstVa, srcVa, n, s.id));
  }

  #memset(dst: HipPtr, value: number, sizeBytes: Size, stream: HipHandle): number {
    const n = toCount(sizeBytes);
    const va = toCount(dst ?? 0);
    if (n < 0 || !Number.isInteger(toInt(value))) return C.hipErrorInvalidValue;
    if (n === 0) return C.hipSuccess;
    if (va <= 0) return C.hipErrorInvalidValue;
    const s = this.#stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    const device = s.id === 0 ? this.#current : s.device;
    return this.codes.run(() => this.runtime.fill(device, va, toInt(value), n, s.id));
  }

  #allocation(handle: HipHandle): PhysicalAllocation | undefined {
    const id = toCount(handle ?? 0);
    return id <= 0 ? undefined : this.runtime.allocation(id);
  }

  /** What GenericAllocation::GetProperties reports: the prop given at create (or made at import). */
  #propsOf(a: PhysicalAllocation): hipMemAllocationProp {
    const known = this.#props.get(a);
    if (known !== undefined) return known;
    const { location, handleTypes, uncached } = a.props;
    return {
      type: uncached ? C.hipMemAllocationTypeUncached : C.hipMemAllocationTypePinned,
      requestedHandleTypes: handleTypes,
      location: {
        type: location.type === 'device' ? C.hipMemLocationTypeDevice : C.hipMemLocationTypeHost,
        id: location.type === 'device' ? location.id : 0,
      },
    };
  }

  /** A stream handle as core's stream id (0 for the null stream) and its device, or undefined if unknown. */
  #stream(h: HipHandle): { id: number; device: number } | undefined {
    if (h === null || h === undefined || h === 0 || h === 0n) return { id: 0, device: this.#current };
    // hipStreamPerThread: the current device's default stream here (Note [Special streams], cuda.ts).
    if (h === C.hipStreamPerThread || h === 2) return { id: 0, device: this.#current };
    const key =
      typeof h === 'bigint' ? h : typeof h === 'number' && Number.isSafeInteger(h) ? BigInt(h) : undefined;
    return key === undefined ? undefined : this.#streams.get(key);
  }
}

/**
 * Note [HIP events]
 * Events are core's (Note [Events] in src/backend/backend.ts), with clr's
 * rules in front (hip_event.cpp): the creation flags; hipEventRecord on a
 * stream of another device is hipErrorInvalidResourceHandle (400); NULL
 * events are hipErrorInvalidHandle (400), and a destroyed one given to
 * hipEventDestroy again is hipErrorContextIsDestroyed (709), as clr's event
 * set answers (other calls on a destroyed event dereference freed memory
 * in clr; here they answer hipErrorInvalidHandle). hipEventQuery answers
 * hipErrorNotReady (600) while the recorded work has not run: "not yet", not
 * a failure. hipEventElapsedTime keeps clr's order (NULL ms, NULL events,
 * different devices, then disabled timing, never recorded, not complete);
 * an event made without hipEventDisableTiming is a timing event of the
 * backend, so over a real driver the time is the driver's; the simulator
 * models no time, so there two completed events are 0 ms apart.
 */

/**
 * Note [HIP after dispose]
 * A disposed HipFlavor is a process whose runtime has been torn down: every
 * call answers hipErrorDeinitialized (4, "driver shutting down") and changes
 * nothing, the queries that never reach core (hipGetDeviceCount,
 * hipGetDevice, hipMemGetAllocationGranularity) included. HIP itself has no
 * uninitialised state to report (it initialises on first use), so
 * hipErrorNotInitialized is never the answer; core's 'not-initialized' kind
 * (a call on a disposed Runtime) maps to hipErrorDeinitialized too.
 * hipGetErrorName and hipGetErrorString keep answering: they return strings,
 * not codes, and read only a table.
 */

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
  const items = list;
  const out: (hipMemAccessDesc | undefined)[] = [];
  for (let i = 0; i < count; i++) {
    const d = readStruct<hipMemAccessDesc>(items[i], ACCESS_DESC_SHAPE);
    if (d === undefined && items[i] !== undefined && typeof items[i] === 'object' && items[i] !== null)
      return undefined;
    out.push(d);
  }
  return out;
}

function isAllocationType(t: unknown): boolean {
  return t === C.hipMemAllocationTypePinned || t === C.hipMemAllocationTypeUncached;
}

function copyProp(p: hipMemAllocationProp): hipMemAllocationProp {
  return {
    type: p.type,
    requestedHandleTypes: p.requestedHandleTypes ?? C.hipMemHandleTypeNone,
    location: { type: p.location.type, id: p.location.id },
    win32HandleMetaData: p.win32HandleMetaData ?? 0n,
    allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0, ...p.allocFlags },
  };
}

/**
 * A process using the HIP runtime API. On the simulator the machine is one
 * AMD Instinct MI300X unless options name devices or a machine to join.
 */
export function createHip(options: FlavorOptions = {}): HipFlavor {
  return new HipFlavor(options);
}
