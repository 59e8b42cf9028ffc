import type { CUmemAccessDesc, CUmemAllocationProp, CUmemLocation } from '../../c-api/cuda-structs.js';
import { type ErrorKind, isVmmError } from '../../core/errors.js';
import type { Mapping, PhysicalAllocation, Reservation } from '../../core/objects.js';
import type { AccessDescriptor, ReserveOptions } from '../../core/runtime.js';
import { instrument } from '../../core/trace.js';
import { Access, type AllocationProperties, type Location } from '../../core/types.js';
import { isMultipleOf } from '../../util/integers.js';
import {
  BigIntMemo,
  type Box,
  hostBytes,
  isBox,
  isHostBuffer,
  isPowerOfTwo,
  isStruct,
  LOCATION_SHAPE,
  MAX_LIST_LENGTH,
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
import { type FlavorOptions, VendorProcess } from '../common/process.js';
import { probeBox } from '../common/untrusted.js';
import { deviceAttribute } from './attributes.js';
import * as C from './constants.js';
import { CUDA_ERROR_TABLE } from './error-table.js';
import { cudaLayers } from './layers.js';
import { copyAcross } from './peer-copy.js';

export type {
  CUmemAccessDesc,
  CUmemAllocationFlags,
  CUmemAllocationProp,
  CUmemLocation,
} from '../../c-api/cuda-structs.js';

type CUdeviceptr = bigint | number;
type CUhandle = bigint | number;

const ACCESS_FLAGS = new Set([
  C.CU_MEM_ACCESS_FLAGS_PROT_NONE,
  C.CU_MEM_ACCESS_FLAGS_PROT_READ,
  C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
]);
const WINDOWS_HANDLE_TYPES = C.CU_MEM_HANDLE_TYPE_WIN32 | C.CU_MEM_HANDLE_TYPE_WIN32_KMT;
/** NUMA nodes of the simulated host (CU_MEM_LOCATION_TYPE_HOST_NUMA ids 0 to this - 1). */
const HOST_NUMA_NODES = 1;
/** Context handles are opaque; these are deterministic per device. */
const CONTEXT_BASE = 0xc0_0000n;
const STREAM_BASE = 0x5_0000n;
/** Created contexts and events: opaque handles, never reused in a process. */
const CREATED_CONTEXT_BASE = 0xcc_0000_0000n;
const EVENT_BASE = 0xe_0000_0000n;
const EVENT_FLAG_BITS = C.CU_EVENT_BLOCKING_SYNC | C.CU_EVENT_DISABLE_TIMING | C.CU_EVENT_INTERPROCESS;
const CTX_SCHED_MASK = 7;
const CTX_FLAG_BITS = 0xff;

/** The function names of the CUDA flavour (for tracing, parity and documentation). */
export const CUDA_FUNCTIONS = [
  'cuInit',
  'cuDriverGetVersion',
  'cuDeviceGet',
  'cuDeviceGetCount',
  'cuDeviceGetName',
  'cuDeviceTotalMem',
  'cuDeviceGetAttribute',
  'cuDeviceCanAccessPeer',
  'cuDevicePrimaryCtxRetain',
  'cuDevicePrimaryCtxRelease',
  'cuCtxSetCurrent',
  'cuCtxGetCurrent',
  'cuCtxGetDevice',
  'cuCtxSynchronize',
  'cuCtxCreate',
  'cuCtxDestroy',
  'cuCtxEnablePeerAccess',
  'cuCtxDisablePeerAccess',
  'cuMemGetAllocationGranularity',
  'cuMemAddressReserve',
  'cuMemAddressFree',
  'cuMemCreate',
  'cuMemRelease',
  'cuMemMap',
  'cuMemUnmap',
  'cuMemSetAccess',
  'cuMemGetAccess',
  'cuMemGetAddressRange',
  'cuPointerGetAttribute',
  'cuPointerGetAttributes',
  'cuMemRetainAllocationHandle',
  'cuMemGetAllocationPropertiesFromHandle',
  'cuMemExportToShareableHandle',
  'cuMemImportFromShareableHandle',
  'cuMemAlloc',
  'cuMemFree',
  'cuMemGetInfo',
  'cuMemAllocHost',
  'cuMemFreeHost',
  'cuMemcpyHtoD',
  'cuMemcpyDtoH',
  'cuMemcpyDtoD',
  'cuMemcpyPeer',
  'cuMemcpyHtoDAsync',
  'cuMemcpyDtoHAsync',
  'cuMemcpyDtoDAsync',
  'cuMemsetD8',
  'cuMemsetD8Async',
  'cuMemsetD16',
  'cuMemsetD32',
  'cuStreamCreate',
  'cuStreamSynchronize',
  'cuStreamDestroy',
  'cuStreamIsCapturing',
  'cuThreadExchangeStreamCaptureMode',
  'cuEventCreate',
  'cuEventRecord',
  'cuEventRecordWithFlags',
  'cuEventQuery',
  'cuEventSynchronize',
  'cuEventDestroy',
  'cuEventElapsedTime',
  'cuStreamWaitEvent',
  'cuGetErrorName',
  'cuGetErrorString',
] as const;

/**
 * One process using the CUDA driver API: every method has the C name and
 * argument order and returns the CUresult. Checks run in the driver's order
 * and answer with the driver's codes; the work is done by core.
 */
export class CudaFlavor extends VendorProcess {
  #initialized = false;
  /** Set by dispose(): the process is gone (Note [CUDA after dispose]). */
  #gone = false;
  /** Primary contexts retained, per device ordinal: retain count. */
  readonly #primaryRefs: number[];
  /** The calling thread's current context: a device ordinal, or -1. */
  #current = -1;
  /** The calling thread's stream capture mode (cuThreadExchangeStreamCaptureMode). */
  #captureMode: number = C.CU_STREAM_CAPTURE_MODE_GLOBAL;
  readonly #streams = new Map<bigint, number>();
  /** Live events by core id: creation flags, and whether ever recorded (cuEventElapsedTime's rules). */
  readonly #events = new Map<number, { readonly flags: number; recorded: boolean }>();
  /** Contexts cuCtxCreate made, by handle (Note [Created contexts]). */
  readonly #created = new Map<bigint, CreatedContext>();
  #nextContext = 1n;
  /** The current context's handle (0n: none); #current is its device. */
  #currentContext = 0n;
  /** Contexts below the current one on the thread's context stack (cuCtxCreate pushes). */
  readonly #contextStack: bigint[] = [];
  readonly #props = new Map<number, AllocationProperties | number>();
  readonly #descriptors = new DescriptorCache();
  readonly #addresses = new BigIntMemo();
  readonly #handleMemo = new BigIntMemo();
  /** The allocation whose handle the flavour handed out last (Note [Last handle]). */
  #lastAllocation: PhysicalAllocation | undefined;
  /** CUDA mappings core holds as several pieces, by piece (Note [Mappings past a reservation's end]). */
  readonly #spans = new Map<Mapping, Span>();
  /** Reservations the flavour made for spans; the program never sees them. */
  readonly #hidden = new Set<Reservation>();
  /**
   * Note [Host buffers]: cuMemAllocHost / hipHostMalloc memory is a host
   * buffer (a Uint8Array) the flavour remembers until it is freed. The
   * simulator has no host page table, so the buffer has no device address
   * (no cuMemHostGetDevicePointer, no hipHostMallocMapped pointer to use on a
   * device) and is not drawn from the simulated machine's host pool: what
   * the calls model is their argument rules and the free-once lifetime.
   *
   * Over the real driver the buffer is the same JavaScript memory, not
   * page-locked memory from the driver's cuMemAllocHost, by choice: a
   * Uint8Array over driver memory stays usable after cuMemFreeHost, and a
   * touch then ends the process (a view cannot be revoked), which the
   * contract forbids; and the CUDA backend's async copies rely on pageable
   * host memory, for which the driver finishes a DtoH before returning.
   * Only speed is lost (the driver stages pageable copies). The conformance
   * cases host.* call the driver's own cuMemAllocHost through the raw binding
   * (createRawCuda, which does hand out views over pinned memory), and this
   * front end answers every code as it did: size 0 succeeds, a second free,
   * an interior pointer or pageable memory is CUDA_ERROR_INVALID_VALUE.
   */
  readonly #hostBuffers = new WeakSet<Uint8Array>();
  /** The size each cuMemAlloc asked for, which the driver's ranges report (Note [Pointer ranges]). */
  readonly #requestedSizes = new WeakMap<Reservation, number>();
  /** Peer access enabled, as current device * device count + peer device (cuCtxEnablePeerAccess). */
  readonly #peerAccess = new Set<number>();
  /** allocFlags given at cuMemCreate, when any is set: core does not interpret them, the driver reports them. */
  readonly #allocFlags = new WeakMap<
    PhysicalAllocation,
    Required<NonNullable<CUmemAllocationProp['allocFlags']>>
  >();

  constructor(options: FlavorOptions = {}) {
    super(options, {
      vendor: 'CUDA',
      table: CUDA_ERROR_TABLE,
      success: C.CUDA_SUCCESS,
      unknown: C.CUDA_ERROR_UNKNOWN,
    });
    this.#primaryRefs = this.runtime.devices.map(() => 0);
    if (options.tracer)
      instrument(
        this,
        'flavor',
        options.tracer,
        [...CUDA_FUNCTIONS, 'dispose'],
        cudaLayers(this.runtime.backend.kind),
      );
  }

  /**
   * End the process (Note [CUDA after dispose]): everything it holds goes, and
   * every later call answers CUDA_ERROR_DEINITIALIZED. Never throws.
   */
  override dispose(): void {
    this.#gone = true;
    this.#initialized = false;
    this.#setCurrent(0n, -1);
    super.dispose();
  }

  // --- initialisation, devices, contexts ---------------------------------------------

  cuInit(flags: number): number {
    if (this.#gone) return C.CUDA_ERROR_DEINITIALIZED;
    if (toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    this.#initialized = true;
    return C.CUDA_SUCCESS;
  }

  cuDriverGetVersion(version: Box<number>): number {
    if (!isBox(version)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(version, C.SIMULATED_DRIVER_VERSION) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuDeviceGet(device: Box<number>, ordinal: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(device)) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(ordinal))) return C.CUDA_ERROR_INVALID_DEVICE;
    return writeBox(device, toInt(ordinal)) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuDeviceGetCount(count: Box<number>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(count)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(count, this.runtime.devices.length) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuDeviceGetName(name: Box<string>, len: number, dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(name) || toInt(len) <= 0) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(dev))) return C.CUDA_ERROR_INVALID_DEVICE;
    // The C call writes at most len - 1 characters and a terminating NUL.
    return writeBox(name, this.runtime.devices[toInt(dev)].name.slice(0, toInt(len) - 1))
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuDeviceTotalMem(bytes: Box<number>, dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(bytes)) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(dev))) return C.CUDA_ERROR_INVALID_DEVICE;
    return writeBox(bytes, this.runtime.devices[toInt(dev)].totalMemory)
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_INVALID_VALUE;
  }

  /** A device attribute (Note [Device attributes]); one cuda.h defines but vmmkit does not know is INVALID_VALUE. */
  cuDeviceGetAttribute(pi: Box<number>, attrib: number, dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(pi)) return C.CUDA_ERROR_INVALID_VALUE;
    // The device is checked first (attribute.badDevice: a bad device with a bad attribute is INVALID_DEVICE).
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    const a = typeof attrib === 'number' ? attrib : Number.NaN;
    if (!Number.isInteger(a) || a < 1) return C.CUDA_ERROR_INVALID_VALUE;
    // Over a real driver, the part's own answers (Note [Driver device facts] in the CUDA backend).
    const info = this.runtime.devices[d];
    const value = info.driverAttributes ? info.driverAttributes.get(a) : deviceAttribute(info.name, a);
    if (value === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(pi, value) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * Whether `dev` can map `peerDev`'s memory.
   *
   * Note [Peer access]: on the simulated machine every device can be granted
   * access to every other device's memory (cuMemSetAccess / hipMemSetAccess
   * for a peer succeed, and that peer's copies then read it), so the answer is
   * 1 for two different devices; a device is not its own peer, 0, as both
   * drivers answer. Over the real driver the answer is the driver's own, read
   * once per pair when the backend opens the devices (DeviceInfo.peers).
   * cuCtxEnablePeerAccess / hipDeviceEnablePeerAccess keep the drivers' rules
   * and record the grant per direction, but the grant changes nothing: on the
   * drivers it opens a peer's cuMemAlloc / hipMalloc memory to this device's
   * kernels, and the simulator has no kernels. One known difference stays: a
   * cuMemcpyDtoD to or from another device's cuMemAlloc memory is refused here (core
   * grants one-step memory to its own device only), where the driver, with
   * unified addressing, copies it; cuMemcpyPeer copies it here as there.
   */
  cuDeviceCanAccessPeer(canAccessPeer: Box<number>, dev: number, peerDev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(canAccessPeer)) return C.CUDA_ERROR_INVALID_VALUE;
    const d = toInt(dev);
    const peer = toInt(peerDev);
    if (!this.runtime.isDevice(d) || !this.runtime.isDevice(peer)) return C.CUDA_ERROR_INVALID_DEVICE;
    return writeBox(canAccessPeer, canReachPeer(this.runtime.devices, d, peer) ? 1 : 0)
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuDevicePrimaryCtxRetain(ctx: Box<bigint>, dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    if (!writeBox(ctx, contextHandle(d))) return C.CUDA_ERROR_INVALID_VALUE;
    this.#primaryRefs[d]++;
    return C.CUDA_SUCCESS;
  }

  cuDevicePrimaryCtxRelease(dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    if (this.#primaryRefs[d] === 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.#primaryRefs[d]--;
    return C.CUDA_SUCCESS;
  }

  cuCtxSetCurrent(ctx: bigint | number | null): number {
    if (!this.#initialized) return this.#uninitialized();
    if (ctx === null || ctx === 0 || ctx === 0n) {
      this.#setCurrent(0n, -1);
      return C.CUDA_SUCCESS;
    }
    // A context handle as a bigint or a number (the types say both): a retained primary or a created one.
    const d = this.#contextDevice(ctx);
    if (d < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.#setCurrent(typeof ctx === 'bigint' ? ctx : BigInt(ctx), d);
    return C.CUDA_SUCCESS;
  }

  cuCtxGetCurrent(ctx: Box<bigint>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(ctx, this.#currentContext) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuCtxGetDevice(device: Box<number>): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (!isBox(device)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(device, this.#current) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuCtxSynchronize(): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.codes.run(() => this.runtime.synchronize(this.#current));
  }

  // --- virtual memory management ---------------------------------------------------------

  /**
   * Let the current context reach `peerContext`'s memory. The rules are the
   * driver's (flags 0, a valid peer, a device is not its own peer, once
   * only); the grant itself is recorded and changes nothing else (Note
   * [Peer access]: VMM memory is reached through cuMemSetAccess, and
   * cuMemcpyPeer needs no peer access).
   */
  cuCtxEnablePeerAccess(peerContext: bigint | number, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (toCount(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const peer = this.#contextDevice(peerContext);
    if (peer < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (!canReachPeer(this.runtime.devices, this.#current, peer)) return C.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    const key = this.#current * this.runtime.devices.length + peer;
    if (this.#peerAccess.has(key)) return C.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    this.#peerAccess.add(key);
    return C.CUDA_SUCCESS;
  }

  cuCtxDisablePeerAccess(peerContext: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const peer = this.#contextDevice(peerContext);
    if (peer < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    const key = this.#current * this.runtime.devices.length + peer;
    return this.#peerAccess.delete(key) ? C.CUDA_SUCCESS : C.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  }

  cuMemGetAllocationGranularity(granularity: Box<number>, prop: CUmemAllocationProp, option: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const copy = readAllocationProp<CUmemAllocationProp>(prop);
    if (!isBox(granularity) || copy === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const opt = toInt(option);
    if (opt !== C.CU_MEM_ALLOC_GRANULARITY_MINIMUM && opt !== C.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    // The driver checks only the option: a bad device id, allocation type, location type or handle
    // type still answers 0 with the granularity (granularity.badDeviceId, .badAllocationType,
    // .badLocationType, .withHandleTypes, .hostNuma). The device named, else the current one, decides.
    const loc = copy.location;
    const named =
      isStruct(loc) && loc.type === C.CU_MEM_LOCATION_TYPE_DEVICE && this.runtime.isDevice(loc.id);
    const d = this.runtime.devices[named ? loc.id : Math.max(this.#current, 0)];
    const value =
      opt === C.CU_MEM_ALLOC_GRANULARITY_MINIMUM ? d.minimumGranularity : d.recommendedGranularity;
    return writeBox(granularity, value) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuMemAddressReserve(
    ptr: Box<bigint>,
    size: Size,
    alignment: Size,
    addr: CUdeviceptr,
    flags: number,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    const n = toCount(size);
    const align = toCount(alignment);
    // Not through the address memo: the hint (usually 0) would displace the pointer about to be returned.
    const hint = toCount(addr);
    const g = this.runtime.vaGranularity;
    if (!isBox(ptr) || align < 0 || hint < 0 || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    if (align !== 0 && !isPowerOfTwo(align)) return C.CUDA_ERROR_INVALID_VALUE;
    // A size past 2^53 that is a multiple of the granularity is simply too much VA (reserve.enormous2pow62).
    if (n < 0) return isLargeMultiple(size, g) ? C.CUDA_ERROR_OUT_OF_MEMORY : C.CUDA_ERROR_INVALID_VALUE;
    if (n === 0 || !isMultipleOf(n, g)) return C.CUDA_ERROR_INVALID_VALUE;
    // Documented as "a hint only", but a hint not aligned to the granularity, or to a larger requested
    // alignment, is refused (reserve.hintMisaligned, reserve.hintWithAlignment).
    if (hint !== 0 && !isMultipleOf(hint, Math.max(align, g))) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      const options = align === 0 && hint === 0 ? NO_RESERVE_OPTIONS : { alignment: align, hint };
      const r = this.runtime.reserve(n, options);
      if (writeBox(ptr, this.#addresses.toBigInt(r.base))) return C.CUDA_SUCCESS;
      this.runtime.free(r);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemAddressFree(ptr: CUdeviceptr, size: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = this.#addresses.toNumber(ptr);
    const n = toCount(size);
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.size !== n || r.origin !== 'vmm' || this.#isHidden(r))
      return C.CUDA_ERROR_INVALID_VALUE;
    try {
      this.runtime.free(r);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemCreate(handle: Box<bigint>, size: Size, prop: CUmemAllocationProp, flags: number): number {
    if (!this.#initialized) return this.#uninitialized();
    // One read of each field, into a plain copy (Note [Untrusted arguments]).
    const copy = readAllocationProp<CUmemAllocationProp>(prop);
    if (!isBox(handle) || copy === undefined || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const checked = this.#checkProp(copy);
    if (typeof checked === 'number') return checked;
    const n = toCount(size);
    const g =
      this.runtime.devices[checked.location.type === 'device' ? checked.location.id : 0].minimumGranularity;
    if (n <= 0 || !isMultipleOf(n, g)) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      const a = this.runtime.create(n, checked);
      const f = copy.allocFlags;
      if (isStruct(f) && (f.compressionType || f.gpuDirectRDMACapable || f.usage)) {
        // Reported back by cuMemGetAllocationPropertiesFromHandle (create.gpuDirectRDMACapable).
        this.#allocFlags.set(a, {
          compressionType: toInt(f.compressionType ?? 0) || 0,
          gpuDirectRDMACapable: toInt(f.gpuDirectRDMACapable ?? 0) || 0,
          usage: toInt(f.usage ?? 0) || 0,
        });
      }
      if (writeBox(handle, this.#handleValue(a))) return C.CUDA_SUCCESS;
      this.runtime.release(a);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemRelease(handle: CUhandle): number {
    if (!this.#initialized) return this.#uninitialized();
    // The driver crashes on a bogus or dead handle (release.bogusHandles); we answer INVALID_VALUE.
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      this.runtime.release(a);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemMap(ptr: CUdeviceptr, size: Size, offset: Size, handle: CUhandle, flags: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = this.#addresses.toNumber(ptr);
    const n = toCount(size);
    const off = toCount(offset);
    if (va <= 0 || n <= 0 || off < 0 || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    // The driver maps whole allocations only (one of unknown size: its first map tells it, Note [Foreign memory sizes]).
    if (off !== 0 || (a.sizeKnown && n !== a.size)) return C.CUDA_ERROR_NOT_SUPPORTED;
    if (this.#hidden.size === 0) {
      // Note [Core first]: a map inside one reservation is core's map exactly.
      try {
        this.runtime.map(va, n, a, 0);
        return C.CUDA_SUCCESS;
      } catch (e) {
        if (!isKind(e, 'not-reserved')) return this.codes.code(e);
      }
    }
    // Only the start must lie in a reservation the program made (map.outsideAnyReservation,
    // alloc.mapOverAllocPointer); the rest may run past its end (Note [Mappings past a reservation's end]).
    const r = this.runtime.reservationContaining(va);
    if (r === undefined || r.origin !== 'vmm' || this.#isHidden(r)) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      if (va + n <= r.end) this.runtime.map(va, n, a, 0);
      else return this.#mapAcross(va, n, a);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemUnmap(ptr: CUdeviceptr, size: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = this.#addresses.toNumber(ptr);
    const n = toCount(size);
    if (va <= 0 || n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const end = va + n;
    if (this.#spans.size === 0) {
      // Note [Core first]: whole mappings, no hole, none of cuMemAlloc's: core's unmap exactly.
      try {
        this.runtime.unmap(va, n);
        return C.CUDA_SUCCESS;
      } catch (e) {
        if (!isKind(e, 'not-mapped')) return this.codes.code(e);
      }
    }
    try {
      // One whole mapping that is no span's piece.
      const one = this.runtime.mappingAt(va);
      if (
        one !== undefined &&
        one.va === va &&
        one.end === end &&
        one.reservation.origin === 'vmm' &&
        (this.#spans.size === 0 || !this.#spans.has(one))
      ) {
        this.runtime.unmap(va, n);
        return C.CUDA_SUCCESS;
      }
      // Only an address outside every reservation (unmap.unreserved) or in cuMemAlloc memory
      // (alloc.unmapOnAllocPointer) is refused up front.
      const r = this.runtime.reservationContaining(va);
      if (r === undefined || r.origin !== 'vmm' || this.#isHidden(r)) return C.CUDA_ERROR_INVALID_VALUE;
      // The driver unmaps every mapping inside the range and tolerates holes, ranges with nothing
      // mapped (even misaligned ones) and a second unmap: all 0 (unmap.rangeWithHole, unmap.twice,
      // unmap.reservedUnmapped, unmap.misalignedInReservedUnmapped, unmap.sizeLargerThanMapping).
      // It refuses only to split a mapping, size 0 at a mapping included (unmap.partOfMapping,
      // unmap.startMidMapping, unmap.sizeZero, unmap.misaligned).
      const found = this.runtime.mappingsIn(va, Math.max(n, 1));
      const mappings = this.#spans.size === 0 ? found : this.#withWholeSpans(found);
      // cuMemAlloc memory is never unmapped by cuMemUnmap, even when the range reaches it.
      for (const m of mappings)
        if (m.va < va || m.end > end || m.reservation.origin !== 'vmm') return C.CUDA_ERROR_INVALID_VALUE;
      if (mappings.length === 0) return C.CUDA_SUCCESS;
      this.#unmapRuns(mappings);
      if (this.#spans.size !== 0) this.#forgetSpans(mappings);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemSetAccess(ptr: CUdeviceptr, size: Size, desc: readonly CUmemAccessDesc[], count: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = this.#addresses.toNumber(ptr);
    const n = toCount(size);
    const k = toCount(count);
    if (va <= 0 || n <= 0 || k <= 0 || k > MAX_LIST_LENGTH) return C.CUDA_ERROR_INVALID_VALUE;
    let descriptors: readonly AccessDescriptor[] = [];
    let forHost = false;
    let hostFlags: Access = 0;
    // Each field of the caller's list is read once, into locals, and a throwing read is a bad
    // argument (Note [Untrusted arguments]); no copy is allocated on this hot path.
    let flags: unknown;
    let type: unknown;
    let id: unknown;
    try {
      if (!Array.isArray(desc) || !(desc.length >= k)) return C.CUDA_ERROR_INVALID_VALUE;
    } catch {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    for (let i = 0; i < k; i++) {
      try {
        const d: unknown = desc[i];
        if (!isStruct(d)) return C.CUDA_ERROR_INVALID_VALUE;
        const { location } = d as CUmemAccessDesc;
        flags = (d as CUmemAccessDesc).flags;
        if (!isStruct(location)) return C.CUDA_ERROR_INVALID_VALUE;
        type = location.type;
        id = location.id;
      } catch {
        return C.CUDA_ERROR_INVALID_VALUE;
      }
      if (!ACCESS_FLAGS.has(flags as number)) return C.CUDA_ERROR_INVALID_VALUE;
      if (type === C.CU_MEM_LOCATION_TYPE_HOST || type === C.CU_MEM_LOCATION_TYPE_HOST_NUMA) {
        forHost = true;
        hostFlags = flags as Access;
        continue;
      }
      if (type !== C.CU_MEM_LOCATION_TYPE_DEVICE) return C.CUDA_ERROR_INVALID_VALUE;
      // A bad device id is INVALID_VALUE here, not INVALID_DEVICE (setAccess.badDeviceId).
      if (!this.runtime.isDevice(id as number)) return C.CUDA_ERROR_INVALID_VALUE;
      const one = this.#descriptors.get(id as number, flags as Access);
      descriptors = k === 1 ? one : [...descriptors, one[0]];
    }
    if (this.#spans.size === 0 && !forHost) {
      // Note [Core first]: whole mappings with no hole, none of cuMemAlloc's: core's setAccess exactly.
      try {
        this.runtime.setAccess(va, n, descriptors);
        return C.CUDA_SUCCESS;
      } catch (e) {
        if (!isKind(e, 'not-mapped')) return this.codes.code(e);
      }
    }
    const end = va + n;
    const first = this.runtime.mappingAt(va);
    if (first === undefined || first.va !== va || first.reservation.origin !== 'vmm')
      return C.CUDA_ERROR_INVALID_VALUE;
    let reach = first.end;
    if (reach !== end || this.#spans.size !== 0) {
      // The range must start at a mapping's start and end at a mapping's end; holes between are
      // accepted, but only the mappings before the first hole get access (setAccess.rangeWithHole,
      // setAccess.holeInMiddleOfThree, setAccess.rangeStartingInHole, setAccess.rangeEndingInUnmapped).
      const last = this.runtime.mappingAt(end - 1);
      if (last === undefined || last.end !== end) return C.CUDA_ERROR_INVALID_VALUE;
      if (this.#spans.size !== 0) {
        const firstSpan = this.#spans.get(first);
        const lastSpan = this.#spans.get(last);
        if (firstSpan !== undefined && firstSpan.pieces[0] !== first) return C.CUDA_ERROR_INVALID_VALUE;
        if (lastSpan !== undefined && lastSpan.pieces[lastSpan.pieces.length - 1] !== last)
          return C.CUDA_ERROR_INVALID_VALUE;
      }
      for (let m: Mapping | undefined = first; m !== undefined && m.end < end; ) {
        m = this.runtime.nextMapping(m);
        if (m !== undefined) reach = m.end;
      }
    }
    if (forHost) {
      // A host location is not supported on device memory (setAccess.locationHost); on host memory
      // it is the CPU's grant (Note [Host access]), which cuMemGetAccess does not report
      // (setAccess.hostAllocationHostLocation: the H200 answers 3 before and after).
      for (
        let m: Mapping | undefined = first;
        m !== undefined && m.va < reach;
        m = this.runtime.nextMapping(m)
      ) {
        if (m.allocation.props.location.type === 'device') return C.CUDA_ERROR_NOT_SUPPORTED;
      }
    }
    try {
      this.runtime.setAccess(va, reach - va, descriptors, forHost ? hostFlags : undefined);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemGetAccess(flags: Box<number>, location: CUmemLocation, ptr: CUdeviceptr): number {
    if (!this.#initialized) return this.#uninitialized();
    const loc = readStruct<CUmemLocation>(location, LOCATION_SHAPE);
    if (!isBox(flags) || loc === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const type = loc.type;
    const host = type === C.CU_MEM_LOCATION_TYPE_HOST || type === C.CU_MEM_LOCATION_TYPE_HOST_NUMA;
    if (!host && type !== C.CU_MEM_LOCATION_TYPE_DEVICE) return C.CUDA_ERROR_INVALID_VALUE;
    if (!host && !this.runtime.isDevice(loc.id)) return C.CUDA_ERROR_INVALID_DEVICE;
    const m = this.runtime.mappingAt(this.#addresses.toNumber(ptr));
    if (m === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    if (m.reservation.origin === 'malloc') {
      // cuMemAlloc memory is no VMM mapping: 0 with no flags (getAccess.cuMemAllocPointer).
      return writeBox(flags, C.CU_MEM_ACCESS_FLAGS_PROT_NONE) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
    } else if (host) {
      // The host answers read-write, on device and host memory alike, whatever was set
      // (getAccess.hostLocation, setAccess.hostAllocationHostLocation).
      return writeBox(flags, C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        ? C.CUDA_SUCCESS
        : C.CUDA_ERROR_INVALID_VALUE;
    } else {
    }
    return writeBox(flags, m.accessOf(loc.id)) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * The range of the allocation holding `dptr` (Note [Pointer ranges]); either
   * out box may be null. CUDA_ERROR_NOT_FOUND for an address that nothing is
   * mapped at, as the driver answers.
   */
  cuMemGetAddressRange(pbase: Box<bigint> | null, psize: Box<number> | null, dptr: CUdeviceptr): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (
      (pbase !== null && pbase !== undefined && !isBox(pbase)) ||
      (psize !== null && psize !== undefined && !isBox(psize))
    )
      return C.CUDA_ERROR_INVALID_VALUE;
    const range = this.#rangeOf(this.#addresses.toNumber(dptr));
    // VMM memory no device may access yet is not found (addressRange.vmmNoAccess).
    if (range === undefined || !range.accessible) return C.CUDA_ERROR_NOT_FOUND;
    const out: Box<number | bigint>[] = [];
    const values: (number | bigint)[] = [];
    if (pbase !== null && pbase !== undefined) {
      out.push(pbase);
      values.push(this.#addresses.toBigInt(range.base));
    }
    if (psize !== null && psize !== undefined) {
      out.push(psize);
      values.push(range.size);
    }
    return writeAllBoxes(out, values) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * One attribute of the memory at `ptr` (Note [Pointer ranges]): an address
   * nothing is mapped at is CUDA_ERROR_INVALID_VALUE, as is an attribute
   * vmmkit does not answer.
   */
  cuPointerGetAttribute(data: Box<number | bigint>, attribute: number, ptr: CUdeviceptr): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const a = typeof attribute === 'number' ? attribute : Number.NaN;
    if (!isBox(data) || !POINTER_ATTRIBUTES.has(a)) return C.CUDA_ERROR_INVALID_VALUE;
    const va = this.#addresses.toNumber(ptr);
    const range = this.#rangeOf(va);
    if (range === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const value = this.#pointerAttribute(a, va, range);
    if (value === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(data, value) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * Several attributes at once. Unlike cuPointerGetAttribute, an address
   * nothing is mapped at is no error: every attribute gets its NULL value (0),
   * as the driver documents. Every argument is checked before any box is written.
   */
  cuPointerGetAttributes(
    numAttributes: number,
    attributes: readonly number[],
    data: readonly Box<number | bigint>[],
    ptr: CUdeviceptr,
  ): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(numAttributes);
    if (n <= 0 || n > MAX_LIST_LENGTH) return C.CUDA_ERROR_INVALID_VALUE;
    const names = readList(attributes, n);
    const boxes = readList(data, n);
    if (names === 'not-array' || boxes === 'not-array' || names.length < n || boxes.length < n)
      return C.CUDA_ERROR_INVALID_VALUE;
    for (let i = 0; i < n; i++) {
      const a = names[i];
      if (typeof a !== 'number' || !POINTER_ATTRIBUTES.has(a) || !isBox(boxes[i]))
        return C.CUDA_ERROR_INVALID_VALUE;
    }
    const va = this.#addresses.toNumber(ptr);
    const range = this.#rangeOf(va);
    const values = names.map((a) =>
      range === undefined ? nullAttribute(a as number) : this.#pointerAttribute(a as number, va, range),
    );
    // One attribute the memory cannot answer fails the call (pointer.vmmNoAccess's device pointer).
    if (values.includes(undefined)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeAllBoxes(boxes as Box<number | bigint>[], values as (number | bigint)[])
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuMemRetainAllocationHandle(handle: Box<bigint>, addr: CUdeviceptr): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(handle)) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      const a = this.runtime.retain(this.#addresses.toNumber(addr));
      if (writeBox(handle, this.#handleValue(a))) return C.CUDA_SUCCESS;
      this.runtime.release(a);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemGetAllocationPropertiesFromHandle(prop: Box<CUmemAllocationProp>, handle: CUhandle): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(prop)) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const { location, handleTypes } = a.props;
    return writeBox(prop, {
      type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
      // An imported handle reports no requested types (import.sameProcess).
      requestedHandleTypes: a.origin === 'imported' ? C.CU_MEM_HANDLE_TYPE_NONE : handleTypes,
      location: {
        // Host memory reads back as HOST_NUMA, even when created as HOST (create.host).
        type: location.type === 'device' ? C.CU_MEM_LOCATION_TYPE_DEVICE : C.CU_MEM_LOCATION_TYPE_HOST_NUMA,
        id: location.id,
      },
      win32HandleMetaData: 0n,
      allocFlags: { ...(this.#allocFlags.get(a) ?? NO_ALLOC_FLAGS) },
    })
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuMemExportToShareableHandle(
    shareable: Box<number>,
    handle: CUhandle,
    handleType: number,
    flags: number,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(shareable) || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const type = toInt(handleType);
    if ((a.props.handleTypes & type) === 0 || type !== C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    try {
      const fd = this.runtime.exportFd(a);
      if (writeBox(shareable, fd)) return C.CUDA_SUCCESS;
      this.#unexport(fd);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemImportFromShareableHandle(
    handle: Box<bigint>,
    osHandle: number | bigint,
    shHandleType: number,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(handle)) return C.CUDA_ERROR_INVALID_VALUE;
    if (toInt(shHandleType) !== C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return C.CUDA_ERROR_INVALID_VALUE;
    // A descriptor that is not open (or -1) gives UNKNOWN, through the error table's invalid-fd
    // (import.bogusFd, import.afterFdClosed).
    try {
      const a = this.runtime.importFd(toCount(osHandle));
      if (writeBox(handle, this.#handleValue(a))) return C.CUDA_SUCCESS;
      this.runtime.release(a);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  // --- the one-step path --------------------------------------------------------------------

  cuMemAlloc(dptr: Box<bigint>, bytesize: Size): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(bytesize);
    if (!isBox(dptr) || n <= 0) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      const r = this.runtime.malloc(this.#current, n);
      if (writeBox(dptr, this.#addresses.toBigInt(r.base))) {
        if (n !== r.size) this.#requestedSizes.set(r, n);
        this.#owner()?.allocations.add(r.base);
        return C.CUDA_SUCCESS;
      }
      this.runtime.mfree(r.base);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuMemFree(dptr: CUdeviceptr): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const va = this.#addresses.toNumber(dptr);
    if (va === 0) return C.CUDA_SUCCESS;
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc') return C.CUDA_ERROR_INVALID_VALUE;
    try {
      this.runtime.mfree(va);
      for (const c of this.#created.values()) c.allocations.delete(va);
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
  cuMemAllocHost(pp: Box<Uint8Array | null>, bytesize: Size): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(bytesize);
    // Size 0 succeeds with a buffer of no bytes, freed once like any other (host.allocSize0AndNullBox).
    if (!isBox(pp) || n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    let buffer: Uint8Array;
    try {
      buffer = new Uint8Array(n);
    } catch {
      return C.CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!writeBox(pp, buffer)) return C.CUDA_ERROR_INVALID_VALUE;
    this.#hostBuffers.add(buffer);
    this.#owner()?.hostBuffers.add(buffer);
    return C.CUDA_SUCCESS;
  }

  /** Free a cuMemAllocHost buffer; anything else, or one freed already, is CUDA_ERROR_INVALID_VALUE. */
  cuMemFreeHost(p: Uint8Array): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (!isHostBuffer(p) || !this.#hostBuffers.delete(p)) return C.CUDA_ERROR_INVALID_VALUE;
    for (const c of this.#created.values()) c.hostBuffers.delete(p);
    return C.CUDA_SUCCESS;
  }

  cuMemGetInfo(free: Box<number>, total: Box<number>): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (!isBox(free) || !isBox(total)) return C.CUDA_ERROR_INVALID_VALUE;
    const info = this.runtime.memoryInfo(this.#current);
    return writeBoxes(free, info.free, total, info.total) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  // --- copies and sets ------------------------------------------------------------------------

  cuMemcpyHtoD(dstDevice: CUdeviceptr, srcHost: Uint8Array, byteCount: Size): number {
    return this.#htod(dstDevice, srcHost, byteCount, 0n);
  }

  cuMemcpyDtoH(dstHost: Uint8Array, srcDevice: CUdeviceptr, byteCount: Size): number {
    return this.#dtoh(dstHost, srcDevice, byteCount, 0n);
  }

  cuMemcpyDtoD(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, byteCount: Size): number {
    return this.#dtod(dstDevice, srcDevice, byteCount, 0n);
  }

  /**
   * Copy between two contexts' devices (peer-copy.ts): each side is read or
   * written through its own context's device, so no peer access is needed,
   * as on the driver. A context that is not a retained primary context is
   * CUDA_ERROR_INVALID_CONTEXT.
   */
  cuMemcpyPeer(
    dstDevice: CUdeviceptr,
    dstContext: bigint | number,
    srcDevice: CUdeviceptr,
    srcContext: bigint | number,
    byteCount: Size,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    // A NULL context is the current one (peer.memcpyPeerNullContext).
    const to = isNullContext(dstContext) ? this.#current : this.#contextDevice(dstContext);
    const from = isNullContext(srcContext) ? this.#current : this.#contextDevice(srcContext);
    if (to < 0 || from < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    const n = toCount(byteCount);
    if (n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    return this.codes.run(() =>
      copyAcross(
        this.runtime,
        to,
        this.#addresses.toNumber(dstDevice),
        from,
        this.#addresses.toNumber(srcDevice),
        n,
      ),
    );
  }

  cuMemcpyHtoDAsync(
    dstDevice: CUdeviceptr,
    srcHost: Uint8Array,
    byteCount: Size,
    hStream: bigint | number,
  ): number {
    return this.#htod(dstDevice, srcHost, byteCount, hStream);
  }

  #htod(dstDevice: CUdeviceptr, srcHost: Uint8Array, byteCount: Size, hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(byteCount);
    // The caller's bytes, by the view's internal slots (Note [Untrusted arguments]).
    const bytes = hostBytes(srcHost);
    if (bytes === undefined || n < 0 || n > bytes.length) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.codes.run(() =>
      this.runtime.write(this.#current, this.#addresses.toNumber(dstDevice), bytes.subarray(0, n), stream),
    );
  }

  cuMemcpyDtoHAsync(
    dstHost: Uint8Array,
    srcDevice: CUdeviceptr,
    byteCount: Size,
    hStream: bigint | number,
  ): number {
    return this.#dtoh(dstHost, srcDevice, byteCount, hStream);
  }

  #dtoh(dstHost: Uint8Array, srcDevice: CUdeviceptr, byteCount: Size, hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(byteCount);
    const bytes = hostBytes(dstHost);
    if (bytes === undefined || n < 0 || n > bytes.length) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.codes.run(() =>
      this.runtime.read(this.#current, this.#addresses.toNumber(srcDevice), bytes.subarray(0, n), stream),
    );
  }

  cuMemcpyDtoDAsync(
    dstDevice: CUdeviceptr,
    srcDevice: CUdeviceptr,
    byteCount: Size,
    hStream: bigint | number,
  ): number {
    return this.#dtod(dstDevice, srcDevice, byteCount, hStream);
  }

  #dtod(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, byteCount: Size, hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(byteCount);
    if (n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.codes.run(() =>
      this.runtime.copy(
        this.#current,
        this.#addresses.toNumber(dstDevice),
        this.#addresses.toNumber(srcDevice),
        n,
        stream,
      ),
    );
  }

  cuMemsetD8(dstDevice: CUdeviceptr, uc: number, n: Size): number {
    return this.#memset(dstDevice, uc, n, 0n);
  }

  cuMemsetD8Async(dstDevice: CUdeviceptr, uc: number, n: Size, hStream: bigint | number): number {
    return this.#memset(dstDevice, uc, n, hStream);
  }

  /** N 16-bit values; the destination must be 2-byte aligned. */
  cuMemsetD16(dstDevice: CUdeviceptr, us: number, n: Size): number {
    return this.#memsetWide(dstDevice, us, n, 2);
  }

  /** N 32-bit values; the destination must be 4-byte aligned. */
  cuMemsetD32(dstDevice: CUdeviceptr, ui: number, n: Size): number {
    return this.#memsetWide(dstDevice, ui, n, 4);
  }

  /** cuMemsetD16 and D32: `count` elements of `width` bytes, little-endian, through core's write (or fill when every byte is the same). */
  #memsetWide(dstDevice: CUdeviceptr, value: number, n: Size, width: 2 | 4): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const count = toCount(n);
    const va = this.#addresses.toNumber(dstDevice);
    if (count < 0 || !Number.isInteger(value) || count * width > Number.MAX_SAFE_INTEGER)
      return C.CUDA_ERROR_INVALID_VALUE;
    // Nothing to set is a success, aligned or not (memset.alignment).
    if (count === 0) return C.CUDA_SUCCESS;
    if (va > 0 && va % width !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    return this.codes.run(() => fillWide(this.runtime, this.#current, va, value, count, width));
  }

  #memset(dstDevice: CUdeviceptr, uc: number, n: Size, hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const count = toCount(n);
    if (count < 0 || !Number.isInteger(uc)) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.codes.run(() =>
      this.runtime.fill(this.#current, this.#addresses.toNumber(dstDevice), uc, count, stream),
    );
  }

  // --- streams -------------------------------------------------------------------------------------

  cuStreamCreate(phStream: Box<bigint>, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const f = toInt(flags);
    if (!isBox(phStream) || (f !== C.CU_STREAM_DEFAULT && f !== C.CU_STREAM_NON_BLOCKING)) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    try {
      const id = this.runtime.createStream(this.#current);
      const h = STREAM_BASE + BigInt(id);
      if (!writeBox(phStream, h)) {
        this.runtime.destroyStream(id);
        return C.CUDA_ERROR_INVALID_VALUE;
      }
      this.#streams.set(h, id);
      this.#owner()?.streams.add(h);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuStreamSynchronize(hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.codes.run(() =>
      stream === 0 ? this.runtime.synchronize(this.#current) : this.runtime.synchronizeStream(stream),
    );
  }

  cuStreamDestroy(hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const stream = this.#stream(hStream);
    if (stream <= 0) return C.CUDA_ERROR_INVALID_HANDLE;
    // Note [Destroying a busy stream]
    // cuStreamDestroy returns at once and the stream goes when its queued work is done; a
    // failure of that work is the work's, not the destroy's. Core runs the work and throws its
    // failure with the stream already gone: that is a success here. A refusal that left the
    // stream in place (a disposed runtime) changed nothing and is answered.
    try {
      this.runtime.destroyStream(stream);
    } catch (e) {
      if (this.runtime.hasStream(stream)) return this.codes.code(e);
    }
    this.#streams.delete(BigInt(hStream));
    for (const c of this.#created.values()) c.streams.delete(BigInt(hStream));
    return C.CUDA_SUCCESS;
  }

  /** Nothing captures in vmmkit: every valid stream answers CU_STREAM_CAPTURE_STATUS_NONE. */
  cuStreamIsCapturing(hStream: bigint | number, captureStatus: Box<number>): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (!isBox(captureStatus)) return C.CUDA_ERROR_INVALID_VALUE;
    // A destroyed stream is CUDA_ERROR_INVALID_CONTEXT here, not INVALID_HANDLE (capture.isCapturingDestroyedStream).
    if (this.#stream(hStream) < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    return writeBox(captureStatus, C.CU_STREAM_CAPTURE_STATUS_NONE)
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * Swap the calling thread's capture mode: `mode.value` in, the previous
   * mode out. No capture ever runs here, so the mode only round-trips, as a
   * caching allocator's "relaxed while I allocate" guard expects.
   */
  cuThreadExchangeStreamCaptureMode(mode: Box<number>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(mode)) return C.CUDA_ERROR_INVALID_VALUE;
    let wanted: unknown;
    try {
      wanted = mode.value;
    } catch {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    // The driver takes any int and hands it back at the next exchange (capture.exchangeModeBadValues):
    // an int is swapped in, anything else is no C int.
    if (typeof wanted !== 'number' || !Number.isInteger(wanted) || wanted < -(2 ** 31) || wanted >= 2 ** 31)
      return C.CUDA_ERROR_INVALID_VALUE;
    if (!writeBox(mode, this.#captureMode)) return C.CUDA_ERROR_INVALID_VALUE;
    this.#captureMode = wanted;
    return C.CUDA_SUCCESS;
  }

  // --- created contexts (Note [Created contexts]) -------------------------------------------

  /**
   * A new context on `dev`, made current (pushed on the thread's stack). The
   * flags are the driver's: one scheduling choice and the other CU_CTX_* bits.
   */
  cuCtxCreate(pctx: Box<bigint>, flags: number, dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const f = toInt(flags);
    if (!isBox(pctx) || !(f >= 0) || f > CTX_FLAG_BITS || (f & ~CTX_FLAG_BITS) !== 0) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    const sched = f & CTX_SCHED_MASK;
    if (
      sched !== 0 &&
      sched !== C.CU_CTX_SCHED_SPIN &&
      sched !== C.CU_CTX_SCHED_YIELD &&
      sched !== C.CU_CTX_SCHED_BLOCKING_SYNC
    )
      return C.CUDA_ERROR_INVALID_VALUE;
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    const h = CREATED_CONTEXT_BASE + this.#nextContext;
    if (!writeBox(pctx, h)) return C.CUDA_ERROR_INVALID_VALUE;
    this.#nextContext++;
    this.#created.set(h, {
      device: d,
      streams: new Set(),
      events: new Set(),
      allocations: new Set(),
      hostBuffers: new Set(),
    });
    if (this.#currentContext !== 0n) this.#contextStack.push(this.#currentContext);
    this.#setCurrent(h, d);
    return C.CUDA_SUCCESS;
  }

  /**
   * Destroy a context cuCtxCreate made, with its streams, events, cuMemAlloc
   * and cuMemAllocHost memory (Note [Created contexts]); VMM memory stays. A
   * primary context is not destroyed this way: CUDA_ERROR_INVALID_CONTEXT.
   */
  cuCtxDestroy(ctx: bigint | number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (ctx === 0 || ctx === 0n || ctx === null || ctx === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const h = typeof ctx === 'bigint' ? ctx : Number.isSafeInteger(ctx) ? BigInt(ctx) : -1n;
    const c = this.#created.get(h);
    if (c === undefined) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.runtime.quietly(() => this.runtime.synchronize(c.device));
    for (const e of c.events) this.runtime.quietly(() => this.#dropEvent(e));
    for (const s of c.streams) {
      const id = this.#streams.get(s);
      this.#streams.delete(s);
      if (id !== undefined) this.runtime.quietly(() => this.runtime.destroyStream(id));
    }
    for (const va of c.allocations) this.runtime.quietly(() => this.runtime.mfree(va));
    for (const b of c.hostBuffers) this.#hostBuffers.delete(b);
    this.#created.delete(h);
    const below = this.#contextStack.filter((x) => x !== h);
    this.#contextStack.length = 0;
    this.#contextStack.push(...below);
    if (this.#currentContext === h) {
      const next = this.#contextStack.pop() ?? 0n;
      this.#setCurrent(next, next === 0n ? -1 : this.#contextDevice(next));
    }
    return C.CUDA_SUCCESS;
  }

  #setCurrent(ctx: bigint, device: number): void {
    this.#currentContext = ctx;
    this.#current = device;
  }

  /** The created context that is current, whose resources a create call records; undefined for a primary one. */
  #owner(): CreatedContext | undefined {
    return this.#created.size === 0 ? undefined : this.#created.get(this.#currentContext);
  }

  // --- events (Note [CUDA events]) ------------------------------------------------------------

  cuEventCreate(phEvent: Box<bigint>, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const f = toInt(flags);
    if (!isBox(phEvent) || !(f >= 0) || (f & ~EVENT_FLAG_BITS) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    // An interprocess event must not time (cuEventCreate's documentation).
    if ((f & C.CU_EVENT_INTERPROCESS) !== 0 && (f & C.CU_EVENT_DISABLE_TIMING) === 0)
      return C.CUDA_ERROR_INVALID_VALUE;
    if (!probeBox(phEvent)) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      const id = this.runtime.createEvent(this.#current, {
        timing: (f & C.CU_EVENT_DISABLE_TIMING) === 0,
      });
      if (!writeBox(phEvent, EVENT_BASE + BigInt(id))) {
        this.runtime.destroyEvent(id);
        return C.CUDA_ERROR_INVALID_VALUE;
      }
      this.#events.set(id, { flags: f, recorded: false });
      this.#owner()?.events.add(id);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuEventRecord(hEvent: bigint | number, hStream: bigint | number): number {
    return this.#record(hEvent, hStream, C.CU_EVENT_RECORD_DEFAULT);
  }

  /** CU_EVENT_RECORD_EXTERNAL belongs under stream capture, which never runs here: CUDA_ERROR_ILLEGAL_STATE, as on the H200. */
  cuEventRecordWithFlags(hEvent: bigint | number, hStream: bigint | number, flags: number): number {
    return this.#record(hEvent, hStream, flags);
  }

  #record(hEvent: bigint | number, hStream: bigint | number, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const f = toInt(flags);
    if (f !== C.CU_EVENT_RECORD_DEFAULT && f !== C.CU_EVENT_RECORD_EXTERNAL)
      return C.CUDA_ERROR_INVALID_VALUE;
    const id = this.#event(hEvent);
    const stream = this.#stream(hStream);
    if (id < 0) return this.#badEvent(id);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    // Event and stream of one context (the NULL stream: the current one's): else an invalid handle.
    const device = stream === 0 ? this.#current : this.runtime.streamDevice(stream);
    if (device !== this.runtime.eventDevice(id)) return C.CUDA_ERROR_INVALID_HANDLE;
    // An external record belongs in a graph being captured; outside capture the H200 answers ILLEGAL_STATE.
    if (f === C.CU_EVENT_RECORD_EXTERNAL) return C.CUDA_ERROR_ILLEGAL_STATE;
    const result = this.codes.run(() => this.runtime.recordEvent(id, stream));
    if (result === C.CUDA_SUCCESS) this.#events.get(id)!.recorded = true;
    return result;
  }

  /** CUDA_SUCCESS when the recorded work is done (or nothing was recorded), CUDA_ERROR_NOT_READY while not. */
  cuEventQuery(hEvent: bigint | number): number {
    if (!this.#initialized) return this.#uninitialized();
    const id = this.#event(hEvent);
    if (id < 0) return this.#badEvent(id);
    try {
      return this.runtime.queryEvent(id) ? C.CUDA_SUCCESS : C.CUDA_ERROR_NOT_READY;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  cuEventSynchronize(hEvent: bigint | number): number {
    if (!this.#initialized) return this.#uninitialized();
    const id = this.#event(hEvent);
    if (id < 0) return this.#badEvent(id);
    return this.codes.run(() => this.runtime.synchronizeEvent(id));
  }

  /** Destroying an event whose work is still queued is allowed: the work is not affected. */
  cuEventDestroy(hEvent: bigint | number): number {
    if (!this.#initialized) return this.#uninitialized();
    const id = this.#event(hEvent);
    if (id < 0) return this.#badEvent(id);
    const result = this.codes.run(() => this.#dropEvent(id));
    if (result === C.CUDA_SUCCESS) for (const c of this.#created.values()) c.events.delete(id);
    return result;
  }

  #dropEvent(id: number): void {
    this.runtime.destroyEvent(id);
    this.#events.delete(id);
  }

  /**
   * The time between two completed timing events: the driver's over the real
   * backend; 0 ms on the simulator, which models no time (Note [CUDA events]).
   */
  cuEventElapsedTime(pMilliseconds: Box<number>, hStart: bigint | number, hEnd: bigint | number): number {
    if (!this.#initialized) return this.#uninitialized();
    // A NULL pMilliseconds is INVALID_HANDLE on the H200, even between two good events (event.elapsedTime).
    if (!isBox(pMilliseconds)) return C.CUDA_ERROR_INVALID_HANDLE;
    const start = this.#event(hStart);
    const end = this.#event(hEnd);
    if (start < 0 || end < 0) return this.#badEvent(Math.min(start, end));
    const a = this.#events.get(start)!;
    const b = this.#events.get(end)!;
    if (((a.flags | b.flags) & C.CU_EVENT_DISABLE_TIMING) !== 0) return C.CUDA_ERROR_INVALID_HANDLE;
    if (!a.recorded || !b.recorded) return C.CUDA_ERROR_INVALID_HANDLE;
    let ms: number;
    try {
      if (!this.runtime.queryEvent(start) || !this.runtime.queryEvent(end)) return C.CUDA_ERROR_NOT_READY;
      ms = this.runtime.elapsedTime(start, end);
    } catch (e) {
      return this.codes.code(e);
    }
    return writeBox(pMilliseconds, ms) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /** Work queued on hStream from now on waits for hEvent's recorded work (an event of any context). */
  cuStreamWaitEvent(hStream: bigint | number, hEvent: bigint | number, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const stream = this.#stream(hStream);
    const id = this.#event(hEvent);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    if (id < 0) return this.#badEvent(id);
    const f = toInt(flags);
    if (f !== C.CU_EVENT_WAIT_DEFAULT && f !== C.CU_EVENT_WAIT_EXTERNAL) return C.CUDA_ERROR_INVALID_VALUE;
    // An external wait belongs in a graph being captured; outside capture the H200 answers ILLEGAL_STATE.
    if (f === C.CU_EVENT_WAIT_EXTERNAL) return C.CUDA_ERROR_ILLEGAL_STATE;
    return this.codes.run(() => this.runtime.streamWaitEvent(stream, id));
  }

  /**
   * An event handle (a bigint or a number) as core's event id; -1 if it names
   * no live event of this process, -2 if it names one this process destroyed.
   */
  #event(h: bigint | number): number {
    const key =
      typeof h === 'bigint' ? h : typeof h === 'number' && Number.isSafeInteger(h) ? BigInt(h) : -1n;
    const id = key - EVENT_BASE;
    if (id <= 0n || id > BigInt(Number.MAX_SAFE_INTEGER)) return -1;
    if (this.#events.has(Number(id))) return Number(id);
    return this.runtime.eventDestroyed(Number(id)) ? -2 : -1;
  }

  /**
   * What a call answers for an event #event refused. The H200 answers
   * CUDA_ERROR_CONTEXT_IS_DESTROYED to a query and a second destroy of a
   * destroyed event (event.destroyedHandle: it reads the context through the
   * freed event), and the other event calls are taken to do the same; a value
   * that was never an event is CUDA_ERROR_INVALID_HANDLE.
   */
  #badEvent(id: number): number {
    return id === -2 ? C.CUDA_ERROR_CONTEXT_IS_DESTROYED : C.CUDA_ERROR_INVALID_HANDLE;
  }

  // --- errors ----------------------------------------------------------------------------------------

  cuGetErrorName(error: number, pStr: Box<string | null>): number {
    if (!isBox(pStr)) return C.CUDA_ERROR_INVALID_VALUE;
    const entry = C.CUDA_RESULTS.get(toInt(error));
    if (!writeBox(pStr, entry?.[0] ?? null)) return C.CUDA_ERROR_INVALID_VALUE;
    return entry === undefined ? C.CUDA_ERROR_INVALID_VALUE : C.CUDA_SUCCESS;
  }

  cuGetErrorString(error: number, pStr: Box<string | null>): number {
    if (!isBox(pStr)) return C.CUDA_ERROR_INVALID_VALUE;
    const entry = C.CUDA_RESULTS.get(toInt(error));
    if (!writeBox(pStr, entry?.[1] ?? null)) return C.CUDA_ERROR_INVALID_VALUE;
    return entry === undefined ? C.CUDA_ERROR_INVALID_VALUE : C.CUDA_SUCCESS;
  }

  // --- helpers -----------------------------------------------------------------------------------------

  /** What a call answers before cuInit, and after dispose (Note [CUDA after dispose]). */
  /**
   * Note [Pointer ranges]: what cuMemGetAddressRange and the pointer
   * attributes answer, as the H200 answered them (conformance cases
   * addressRange.* and pointer.*, recorded on driver 580):
   *  - cuMemAlloc memory: the allocation, of the size the program asked for
   *    (1 MiB + 1 byte answers 1 MiB + 1, though core holds 2 MiB), through
   *    both calls; its context is the one current at the allocation.
   *  - VMM memory: cuMemGetAddressRange answers the one cuMemMap that mapped
   *    the address (two adjacent handles are two ranges), and CUDA_ERROR_NOT_FOUND
   *    until some device has been granted access to it, as for an address
   *    nothing is mapped at. The pointer attributes' range
   *    (RANGE_START_ADDR, RANGE_SIZE) is the whole reservation instead, and
   *    their context is NULL: VMM memory belongs to no context. Without
   *    access, every attribute but DEVICE_POINTER still answers.
   *  - A cuMemMap past a reservation's end is one range, all its pieces together.
   *  - cuPointerGetAttributes on an address that is no CUDA memory answers
   *    each attribute's NULL value, the device ordinal CU_DEVICE_INVALID (-2).
   * The other attributes recorded there (BUFFER_ID, MEMORY_BLOCK_ID nonzero
   * ids; ACCESS_FLAGS; ALLOWED_HANDLE_TYPES; the legacy-IPC and GPUDirect
   * RDMA flags, 1 for cuMemAlloc memory and as created for VMM memory;
   * MAPPING_SIZE and MAPPING_BASE_ADDR, the mapping) are answered alike;
   * HOST_POINTER is CUDA_ERROR_INVALID_VALUE for device memory, as there.
   */
  #rangeOf(va: number): PointerRange | undefined {
    if (va <= 0) return undefined;
    const m = this.runtime.mappingAt(va);
    if (m === undefined) return undefined;
    if (m.reservation.origin === 'malloc') {
      const size = this.#requestedSizes.get(m.reservation) ?? m.size;
      return { base: m.va, size, mapping: m, accessible: true, malloc: true };
    }
    const accessible = this.runtime.devices.some((d) => m.accessOf(d.ordinal) !== 0);
    const span = this.#spans.size === 0 ? undefined : this.#spans.get(m);
    if (span === undefined) return { base: m.va, size: m.size, mapping: m, accessible, malloc: false };
    const first = span.pieces[0];
    const last = span.pieces[span.pieces.length - 1];
    return { base: first.va, size: last.end - first.va, mapping: m, accessible, malloc: false };
  }

  /** The value of pointer attribute `a` at `va`, inside `range`; undefined where the driver refuses it. */
  #pointerAttribute(a: number, va: number, range: PointerRange): number | bigint | undefined {
    const { mapping, malloc } = range;
    const allocation = mapping.allocation;
    const location = allocation.props.location;
    switch (a) {
      case C.CU_POINTER_ATTRIBUTE_CONTEXT:
        return malloc ? contextHandle(location.type === 'device' ? location.id : this.#current) : 0n;
      case C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        return location.type === 'device' ? C.CU_MEMORYTYPE_DEVICE : C.CU_MEMORYTYPE_HOST;
      case C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        return range.accessible ? this.#addresses.toBigInt(va) : undefined;
      case C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return location.type === 'device' ? location.id : this.#current;
      case C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        return this.#addresses.toBigInt(malloc ? range.base : mapping.reservation.base);
      case C.CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        return malloc ? range.size : mapping.reservation.size;
      case C.CU_POINTER_ATTRIBUTE_MAPPED:
        return 1;
      case C.CU_POINTER_ATTRIBUTE_BUFFER_ID:
      case C.CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return allocation.id + 1;
      case C.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        return malloc ? 1 : 0;
      case C.CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        return allocation.props.handleTypes;
      case C.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        return malloc ? 1 : (this.#allocFlags.get(allocation)?.gpuDirectRDMACapable ?? 0);
      case C.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        return this.#current < 0 ? 0 : mapping.accessOf(this.#current);
      case C.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return 0n;
      case C.CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        return malloc ? mapping.size : range.size;
      case C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        return this.#addresses.toBigInt(range.base);
      default:
        // CU_POINTER_ATTRIBUTE_IS_MANAGED and SYNC_MEMOPS: no managed memory, no synchronous memops.
        return 0;
    }
  }

  /** The device of a retained primary context's handle, or -1. */
  #contextDevice(ctx: unknown): number {
    const created =
      this.#created.size === 0
        ? undefined
        : this.#created.get(
            typeof ctx === 'bigint' ? ctx : Number.isSafeInteger(ctx) ? BigInt(ctx as number) : -1n,
          );
    if (created !== undefined) return created.device;
    const d =
      typeof ctx === 'bigint'
        ? Number(ctx - CONTEXT_BASE)
        : typeof ctx === 'number' && Number.isSafeInteger(ctx)
          ? ctx - Number(CONTEXT_BASE)
          : Number.NaN;
    return this.runtime.isDevice(d) && this.#primaryRefs[d] > 0 ? d : -1;
  }

  #uninitialized(): number {
    return this.#gone ? C.CUDA_ERROR_DEINITIALIZED : C.CUDA_ERROR_NOT_INITIALIZED;
  }

  /**
   * Take back an fd exported a moment ago whose box refused it: the fd is
   * closed, so nothing stays held (the allocation's export count in core
   * keeps the one, which no CUDA rule reads).
   */
  #unexport(fd: number): void {
    try {
      this.runtime.closeFd(fd);
    } catch (e) {
      this.report('could not close an fd whose box refused it', e);
    }
  }

  /** Unmap these mappings (address order, none split), one core unmap per run of adjacent ones. */
  #unmapRuns(mappings: readonly Mapping[]): void {
    for (let i = 0; i < mappings.length; ) {
      const start = mappings[i].va;
      let end = mappings[i].end;
      for (i++; i < mappings.length && mappings[i].va === end; i++) end = mappings[i].end;
      this.runtime.unmap(start, end - start);
    }
  }

  #needContext(): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#current === -1 ? C.CUDA_ERROR_INVALID_CONTEXT : C.CUDA_SUCCESS;
  }

  /** Validate a CUmemAllocationProp in the driver's order; a CUresult if it is bad. */
  #checkProp(prop: CUmemAllocationProp): AllocationProperties | number {
    // Note [Property cache]: programs pass the same few properties over and over. The answer for a
    // given (type, location, handle types) never changes in a process, so it is worked out once and
    // kept, error codes included: allocations share one frozen properties object, and a create call
    // allocates nothing to check its argument.
    const loc = prop.location;
    const t = prop.type;
    const h = prop.requestedHandleTypes ?? 0;
    if (
      isStruct(loc) &&
      isSmall(t, 16) &&
      isSmall(h, 256) &&
      isSmall(loc.type, 16) &&
      isSmall(loc.id, 4096)
    ) {
      const key = ((t * 16 + loc.type) * 256 + h) * 4096 + loc.id;
      let cached = this.#props.get(key);
      if (cached === undefined) {
        const parsed = this.#parseProp(prop);
        this.#props.set(key, (cached = typeof parsed === 'number' ? parsed : Object.freeze(parsed)));
      }
      return cached;
    }
    return this.#parseProp(prop);
  }

  #parseProp(prop: CUmemAllocationProp): AllocationProperties | number {
    if (prop.type !== C.CU_MEM_ALLOCATION_TYPE_PINNED) return C.CUDA_ERROR_INVALID_VALUE;
    // A C enum: a number, never a bigint (issue 10 H).
    const requested = prop.requestedHandleTypes ?? 0;
    let types = typeof requested === 'number' ? toInt(requested) : Number.NaN;
    if (!(types >= 0)) return C.CUDA_ERROR_INVALID_VALUE;
    // Windows handles on Linux: INVALID_VALUE (create.handleTypeWin32); fabric handles need an IMEX
    // channel the H200 machine lacks: NOT_PERMITTED (create.handleTypeFabric).
    if ((types & WINDOWS_HANDLE_TYPES) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    if ((types & C.CU_MEM_HANDLE_TYPE_FABRIC) !== 0) return C.CUDA_ERROR_NOT_PERMITTED;
    // Unknown bits are accepted and dropped (create.handleTypeInvalidBits, create.invalidBitsThenProperties).
    types &= C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    const loc = prop.location;
    if (!isStruct(loc)) return C.CUDA_ERROR_INVALID_VALUE;
    let location: Location;
    if (loc.type === C.CU_MEM_LOCATION_TYPE_DEVICE) {
      if (!this.runtime.isDevice(loc.id)) return C.CUDA_ERROR_INVALID_DEVICE;
      location = { type: 'device', id: loc.id };
    } else if (loc.type === C.CU_MEM_LOCATION_TYPE_HOST) {
      // HOST memory cannot be exported as a POSIX fd (create.hostWithPosixFd); its id is ignored.
      if (types !== 0) return C.CUDA_ERROR_INVALID_VALUE;
      location = { type: 'host', id: 0 };
    } else if (loc.type === C.CU_MEM_LOCATION_TYPE_HOST_NUMA) {
      // A NUMA node the host lacks is INVALID_VALUE (create.hostNumaBadId).
      const id = toInt(loc.id);
      if (!(id >= 0 && id < HOST_NUMA_NODES)) return C.CUDA_ERROR_INVALID_VALUE;
      location = { type: 'host', id };
    } else {
      // HOST_NUMA_CURRENT included (create.hostNumaCurrent).
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    return { location, handleTypes: types, uncached: false };
  }

  /** A reservation the flavour made to hold part of a span. */
  #isHidden(r: Reservation): boolean {
    return this.#hidden.size !== 0 && this.#hidden.has(r);
  }

  /** Map `a` at [va, va + n), which runs past the end of the reservation holding va. See the Note. */
  #mapAcross(va: number, n: number, a: PhysicalAllocation): number {
    const g = this.runtime.vaGranularity;
    if (!isMultipleOf(va, g)) return C.CUDA_ERROR_INVALID_VALUE;
    const end = va + n;
    // Plan the pieces before changing anything: one per reservation crossed, one per free gap.
    const plan: { at: number; size: number; reservation: Reservation | undefined }[] = [];
    for (let at = va; at < end; ) {
      const r = this.runtime.reservationContaining(at);
      let stop: number;
      if (r !== undefined) {
        // Another span's hidden range is mapped already: an overlap, as in map.overlapPartial.
        if (r.origin !== 'vmm' || this.#isHidden(r)) return C.CUDA_ERROR_INVALID_VALUE;
        stop = Math.min(r.end, end);
      } else {
        stop = at + g;
        while (stop < end && this.runtime.reservationContaining(stop) === undefined) stop += g;
      }
      plan.push({ at, size: stop - at, reservation: r });
      at = stop;
    }
    const pieces: Mapping[] = [];
    const hidden: Reservation[] = [];
    try {
      for (const p of plan) {
        if (p.reservation === undefined) {
          const r = this.runtime.reserve(p.size, { hint: p.at, exact: true });
          hidden.push(r);
          // The free VA lies outside what the simulated process can reserve there.
          if (r.base !== p.at) throw new RangeError('free VA past the reservation could not be held');
        }
        pieces.push(this.runtime.map(p.at, p.size, a, p.at - va));
      }
    } catch (e) {
      // Undo what was done (a multi-step operation changes nothing when a step fails).
      try {
        this.#unmapRuns(pieces);
        for (const r of hidden) this.runtime.free(r);
      } catch (undo) {
        this.report('could not undo a partial cuMemMap', undo);
      }
      return e instanceof RangeError ? C.CUDA_ERROR_INVALID_VALUE : this.codes.code(e);
    }
    const span: Span = { pieces, hidden };
    for (const m of pieces) this.#spans.set(m, span);
    for (const r of hidden) this.#hidden.add(r);
    return C.CUDA_SUCCESS;
  }

  /** The mappings given, each with every other piece of its span, in address order. */
  #withWholeSpans(mappings: readonly Mapping[]): Mapping[] {
    const out: Mapping[] = [];
    const seen = new Set<Span>();
    for (const m of mappings) {
      const span = this.#spans.get(m);
      if (span === undefined) out.push(m);
      else if (!seen.has(span)) {
        seen.add(span);
        out.push(...span.pieces);
      }
    }
    return out.sort((x, y) => x.va - y.va);
  }

  /** After unmapping: drop the spans of these mappings and give back their hidden reservations. */
  #forgetSpans(unmapped: readonly Mapping[]): void {
    for (const m of unmapped) {
      const span = this.#spans.get(m);
      if (span === undefined) continue;
      for (const p of span.pieces) this.#spans.delete(p);
      for (const r of span.hidden) {
        this.#hidden.delete(r);
        try {
          this.runtime.free(r);
        } catch (e) {
          this.report('could not free the hidden reservation of a span', e);
        }
      }
    }
  }

  /**
   * The handle value the program sees for `a`: core's id as a bigint. Core
   * never hands an id out twice in a process, so a released handle's value
   * stays invalid for good; the flavour keeps no table of its own, only the
   * last allocation it handed out (Note [Last handle]).
   */
  #handleValue(a: PhysicalAllocation): bigint {
    this.#lastAllocation = a;
    return this.#handleMemo.toBigInt(a.id);
  }

  /**
   * Note [Last handle]: the handle a call names is most often the one the
   * previous create, retain or import returned (map it, then release it). The
   * flavour remembers that allocation and, when the same value comes back,
   * asks the allocation itself whether it is still live in this process
   * (owner and handle references, kept by core) instead of looking the value
   * up. Any other value, or that one once released, goes to core's lookup.
   */
  #allocation(handle: CUhandle): PhysicalAllocation | undefined {
    const id = this.#handleMemo.toNumber(handle);
    if (id < 0) return undefined;
    const last = this.#lastAllocation;
    if (last !== undefined && last.id === id && last.owner === this.runtime && last.handleRefs > 0)
      return last;
    return this.runtime.allocation(id);
  }

  /** A stream handle (a bigint or a number) as core's stream id (0 for the default stream), or -1 if unknown. */
  #stream(h: bigint | number): number {
    if (h === 0n || h === 0 || h === null || h === undefined) return 0;
    if (isSpecialStream(h)) return 0;
    const key = typeof h === 'bigint' ? h : Number.isSafeInteger(h) ? BigInt(h) : undefined;
    return key === undefined ? -1 : (this.#streams.get(key) ?? -1);
  }
}

/**
 * Note [Mappings past a reservation's end]
 * The H200's cuMemMap checks only that a mapping starts inside a reservation:
 * it may run past that reservation's end, into free VA or into the next
 * reservation, and the bytes there are usable after setAccess
 * (map.pastReservationEnd, map.pastReservationEndIntoFreedRange,
 * map.pastReservationEndIntoNextReservation, map.spanningTwoReservations).
 * Core keeps every mapping inside one reservation (invariant 2 in
 * runtime.ts), so the flavour holds such a CUDA mapping as a span: one core
 * mapping per reservation it crosses, each at its offset into the same
 * handle, with a hidden reservation for any free VA it runs into. Unmap takes
 * a span whole (or refuses, as it refuses to split any mapping), setAccess
 * treats it as one mapping, and the hidden reservations go with it.
 */
/**
 * Note [Core first]
 * cuMemMap, cuMemUnmap and cuMemSetAccess accept more than core does (a map
 * past its reservation's end, an unmap or setAccess over holes), but their
 * common case is exactly core's operation: a map inside one reservation, an
 * unmap or setAccess over whole adjacent mappings. So while no span exists
 * (Note [Mappings past a reservation's end]) each hands its range to core
 * first, and only when core refuses the range itself (not-reserved,
 * not-mapped: it changed nothing, runtime.ts invariant 1) works out the
 * driver's wider answer. Core refuses cuMemAlloc memory there too, so the
 * common call makes no lookup of its own: one lookup of the range in all.
 */

/**
 * Note [CUDA after dispose]
 * A disposed CudaFlavor is a process whose driver has shut down: every call
 * answers CUDA_ERROR_DEINITIALIZED (4, "driver shutting down") and changes
 * nothing, cuInit included (a disposed process cannot come back). Core's
 * 'not-initialized' kind (a call on a disposed Runtime) maps to the same
 * code. Three calls keep answering, as the driver's do without any
 * initialisation: cuDriverGetVersion (documented to work before cuInit),
 * cuGetErrorName and cuGetErrorString (tables, no driver state).
 */

/**
 * Note [Created contexts]
 * cuCtxCreate makes a context of its own on a device and pushes it on the
 * calling thread's context stack (the current context goes below it).
 * Everything a call does for "the current context" it does for that
 * context's device, as with a primary context; what the created context adds
 * is ownership. The streams, events, cuMemAlloc and cuMemAllocHost memory
 * made while it is current are its, and cuCtxDestroy releases them all
 * (after finishing the device's work), as the driver's documentation says;
 * VMM memory (cuMemCreate, cuMemMap) is not a context's and stays. If the
 * destroyed context was current, the one below it on the stack becomes
 * current (none: no context). A handle of a destroyed context, or of
 * anything it owned, is never valid again (handles are not reused).
 * A primary context cannot be destroyed here: cuCtxDestroy answers
 * CUDA_ERROR_INVALID_CONTEXT for one, which is this model's choice (the
 * documentation does not say what the driver answers; the conformance case
 * ctx.destroyPrimary records it). One thread only: a context current to
 * "other threads" does not arise.
 *
 * Note [CUDA events]
 * Events are core's (Note [Events] in src/backend/backend.ts): a record
 * marks the work queued so far on a stream, cuEventQuery answers
 * CUDA_SUCCESS once it has run (or when the event was never recorded) and
 * CUDA_ERROR_NOT_READY (600) before, which is "not yet", not a failure;
 * cuStreamWaitEvent orders later work on a stream after it. The flavour keeps
 * what the driver's rules need: the creation flags (an INTERPROCESS event
 * must also DISABLE_TIMING) and whether an event was ever recorded
 * (cuEventElapsedTime answers CUDA_ERROR_INVALID_HANDLE otherwise, as for
 * an event made with CU_EVENT_DISABLE_TIMING). Any other event is a timing
 * event of the backend (they cost more to record, as on the driver), so
 * over the real driver the time is the driver's; the simulator models no
 * time: there two completed events are 0 ms apart. Event and stream of
 * cuEventRecord must be of one context (device), else
 * CUDA_ERROR_INVALID_HANDLE; cuStreamWaitEvent takes an event of any.
 */

interface CreatedContext {
  readonly device: number;
  readonly streams: Set<bigint>;
  readonly events: Set<number>;
  readonly allocations: Set<number>;
  readonly hostBuffers: Set<Uint8Array>;
}

interface Span {
  readonly pieces: readonly Mapping[];
  readonly hidden: readonly Reservation[];
}

const NO_ALLOC_FLAGS = Object.freeze({ compressionType: 0, gpuDirectRDMACapable: 0, usage: 0 });

/**
 * Note [Special streams]
 * cuda.h's CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) are valid
 * wherever a CUstream is taken. The legacy stream is the NULL stream of the
 * default (legacy) semantics: it waits for every blocking stream and they for
 * it. The per-thread stream is a thread's own default stream, ordered with
 * the legacy one. A simulated process has one thread and runs work on core's
 * stream 0 after everything queued on every stream (SimProcess#submit), which
 * is the legacy semantics; both handles are that stream here, so work on
 * either is at least as ordered as on the driver. Neither can be destroyed
 * (CUDA_ERROR_INVALID_HANDLE, as for the NULL stream). HIP's
 * hipStreamPerThread (2) is the same stream for the same reason, and ACL's
 * default stream is its NULL stream (null, undefined, 0 or 0n).
 */
function isSpecialStream(h: bigint | number): boolean {
  return h === C.CU_STREAM_LEGACY || h === C.CU_STREAM_PER_THREAD || h === 1 || h === 2;
}

/** A VmmError of this kind. */
function isKind(e: unknown, kind: ErrorKind): boolean {
  return isVmmError(e) && e.kind === kind;
}

/** A size given as a bigint above 2^53 that is a positive multiple of `granularity`. */
function isLargeMultiple(size: unknown, granularity: number): boolean {
  return typeof size === 'bigint' && size > 0n && size % BigInt(granularity) === 0n;
}

/** The common reserve: no alignment beyond the granularity, no address hint. */
const NO_RESERVE_OPTIONS: ReserveOptions = Object.freeze({ alignment: 0, hint: 0 });

/** An integer in [0, limit). */
function isSmall(x: unknown, limit: number): x is number {
  return typeof x === 'number' && x >= 0 && x < limit && Number.isInteger(x);
}

/** One-descriptor lists per (device, access), so a setAccess call allocates nothing. */
class DescriptorCache {
  readonly #lists: (readonly AccessDescriptor[])[] = [];
  get(device: number, access: Access): readonly AccessDescriptor[] {
    const key = device * 4 + access;
    let list = this.#lists[key];
    // Typed readonly, not frozen: V8 iterates a frozen array on a slow path (2.4x slower setAccess).
    if (list === undefined) this.#lists[key] = list = [{ device, access }];
    return list;
  }
}

/** What #rangeOf finds at an address (Note [Pointer ranges]). */
interface PointerRange {
  /** cuMemGetAddressRange's range: the allocation, or the mapping. */
  readonly base: number;
  readonly size: number;
  readonly mapping: Mapping;
  /** Some device may access it (VMM memory nobody may access is not found). */
  readonly accessible: boolean;
  /** cuMemAlloc memory. */
  readonly malloc: boolean;
}

/** The pointer attributes vmmkit answers (Note [Pointer ranges]). */
const POINTER_ATTRIBUTES: ReadonlySet<number> = new Set([
  C.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
  C.CU_POINTER_ATTRIBUTE_BUFFER_ID,
  C.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
  C.CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
  C.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE,
  C.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
  C.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
  C.CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
  C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
  C.CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID,
  C.CU_POINTER_ATTRIBUTE_CONTEXT,
  C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
  C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
  C.CU_POINTER_ATTRIBUTE_IS_MANAGED,
  C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
  C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
  C.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
  C.CU_POINTER_ATTRIBUTE_MAPPED,
]);

/**
 * Write every box or none (Note [Untrusted arguments]): each is probed and its
 * old value read first; if a write is refused all the same, the boxes already
 * written get their old values back.
 */
function writeAllBoxes(
  boxes: readonly Box<number | bigint>[],
  values: readonly (number | bigint)[],
): boolean {
  const old: unknown[] = [];
  try {
    for (const b of boxes) {
      if (!probeBox(b)) return false;
      old.push(b.value);
    }
  } catch {
    return false;
  }
  for (let i = 0; i < boxes.length; i++) {
    if (writeBox(boxes[i], values[i])) continue;
    for (let j = 0; j < i; j++) writeBox(boxes[j], old[j] as number | bigint);
    return false;
  }
  return true;
}

/** What cuPointerGetAttributes writes for an address that is no CUDA memory: the attribute's NULL value. */
function nullAttribute(a: number): number | bigint {
  if (a === C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return C.CU_DEVICE_INVALID;
  return a === C.CU_POINTER_ATTRIBUTE_CONTEXT ||
    a === C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
    a === C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
    a === C.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE ||
    a === C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR
    ? 0n
    : 0;
}

/** C's NULL context, as a bigint or a number. */
function isNullContext(ctx: unknown): boolean {
  return ctx === 0n || ctx === 0 || ctx === null;
}

function contextHandle(device: number): bigint {
  return CONTEXT_BASE + BigInt(device);
}

/** A process using the CUDA driver API, on a simulated machine (default) or real NVIDIA hardware. */
export function createCuda(options: FlavorOptions = {}): CudaFlavor {
  return new CudaFlavor(options);
}

export { Access };
