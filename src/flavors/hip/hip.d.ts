import { type Box, type Size } from '../common/args.js';
import { type FlavorOptions, VendorProcess } from '../common/process.js';
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
  allocFlags?: {
    compressionType?: number;
    gpuDirectRDMACapable?: number;
    usage?: number;
  };
}
/** hipMemAccessDesc */
export interface hipMemAccessDesc {
  location: hipMemLocation;
  flags: number;
}
/** A device pointer (void*): null, a number or a bigint. */
type HipPtr = bigint | number | null;
/** An opaque handle (hipMemGenericAllocationHandle_t, hipStream_t). */
type HipHandle = bigint | number | null;
/** A hipMemcpy operand: a host buffer, or a device pointer. */
type HipMemory = Uint8Array | HipPtr;
/** The function names of the HIP flavour (for tracing, parity and documentation). */
export declare const HIP_FUNCTIONS: readonly [
  'hipInit',
  'hipGetDeviceCount',
  'hipSetDevice',
  'hipGetDevice',
  'hipDeviceGet',
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
  'hipMemRetainAllocationHandle',
  'hipMemGetAllocationPropertiesFromHandle',
  'hipMemExportToShareableHandle',
  'hipMemImportFromShareableHandle',
  'hipMalloc',
  'hipFree',
  'hipMemGetInfo',
  'hipMemcpy',
  'hipMemcpyAsync',
  'hipMemcpyHtoD',
  'hipMemcpyDtoH',
  'hipMemcpyDtoD',
  'hipMemset',
  'hipMemsetAsync',
  'hipMemsetD32',
  'hipStreamCreate',
  'hipStreamCreateWithFlags',
  'hipStreamSynchronize',
  'hipStreamDestroy',
  'hipGetLastError',
  'hipPeekAtLastError',
  'hipGetErrorName',
  'hipGetErrorString',
];
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
export declare class HipFlavor extends VendorProcess {
  #private;
  /** On the simulator the machine is one AMD Instinct MI300X unless options name devices or a machine to join. */
  constructor(options?: FlavorOptions);
  /** HIP initialises on first use; hipInit only checks its flags. */
  hipInit(flags: number): number;
  hipGetDeviceCount(count: Box<number>): number;
  hipSetDevice(deviceId: number): number;
  hipGetDevice(deviceId: Box<number>): number;
  /** The device handle of `ordinal` (HIP's hipDevice_t is the ordinal itself). */
  hipDeviceGet(device: Box<number>, ordinal: number): number;
  /** HIP_VERSION of the simulated runtime (C.SIMULATED_HIP_RUNTIME_VERSION). */
  hipRuntimeGetVersion(runtimeVersion: Box<number>): number;
  hipDeviceSynchronize(): number;
  hipMemGetAllocationGranularity(
    granularity: Box<number>,
    propArg: hipMemAllocationProp,
    option: number,
  ): number;
  hipMemAddressReserve(ptr: Box<bigint>, size: Size, alignment: Size, addr: HipPtr, flags: Size): number;
  /**
   * Size is checked for zero and otherwise ignored: the reservation is found
   * from the pointer. A pointer inside (not at the base of) a reservation is
   * found too, but virtualFree then fails, as it does while anything is
   * still mapped: hipErrorUnknown (Note [HIP in-use is Unknown]).
   */
  hipMemAddressFree(devPtr: HipPtr, size: Size): number;
  hipMemCreate(handle: Box<bigint>, size: Size, propArg: hipMemAllocationProp, flags: Size): number;
  hipMemRelease(handle: HipHandle): number;
  /** Maps [ptr, ptr + size) to the start of the allocation; the mapping holds one reference (ga->retain). */
  hipMemMap(ptr: HipPtr, size: Size, offset: Size, handle: HipHandle, flags: Size): number;
  /**
   * Unmaps whole chunks (Note [ValidateSubBufferCoverage]); every stream is
   * synchronised first (core's unmap does, as SyncAllStreams), then each
   * chunk is unmapped and drops its allocation reference.
   */
  hipMemUnmap(ptr: HipPtr, size: Size): number;
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
  ): number;
  hipMemGetAccess(flags: Box<number>, locationArg: hipMemLocation, ptr: HipPtr): number;
  /** A new reference to the allocation mapped at any address inside a VMM mapping; none for hipMalloc memory. */
  hipMemRetainAllocationHandle(handle: Box<bigint>, addr: HipPtr): number;
  hipMemGetAllocationPropertiesFromHandle(prop: Box<hipMemAllocationProp>, handle: HipHandle): number;
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
  ): number;
  /** Takes the fd value itself (C passes the int cast to void*); a new handle to the same memory. */
  hipMemImportFromShareableHandle(handle: Box<bigint>, osHandle: HipHandle, shHandleType: number): number;
  /** Size 0 gives a null pointer and success, as HIP does. */
  hipMalloc(ptr: Box<bigint>, size: Size): number;
  /** hipFree(NULL) succeeds; anything but a hipMalloc pointer is hipErrorInvalidValue. */
  hipFree(ptr: HipPtr): number;
  hipMemGetInfo(free: Box<number>, total: Box<number>): number;
  /** Host operands are Uint8Arrays, device operands pointers; hipMemcpyDefault infers the direction from them. */
  hipMemcpy(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number): number;
  hipMemcpyAsync(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number, stream: HipHandle): number;
  /** hipMemcpy with the direction in the name: the operands must be what it says. */
  hipMemcpyHtoD(dst: HipPtr, src: Uint8Array, sizeBytes: Size): number;
  hipMemcpyDtoH(dst: Uint8Array, src: HipPtr, sizeBytes: Size): number;
  hipMemcpyDtoD(dst: HipPtr, src: HipPtr, sizeBytes: Size): number;
  /** `count` 32-bit values (little-endian); the destination must be 4-byte aligned. */
  hipMemsetD32(dst: HipPtr, value: number, count: Size): number;
  hipMemset(dst: HipPtr, value: number, sizeBytes: Size): number;
  hipMemsetAsync(dst: HipPtr, value: number, sizeBytes: Size, stream: HipHandle): number;
  hipStreamCreate(stream: Box<bigint>): number;
  /** flags: hipStreamDefault or hipStreamNonBlocking (a blocking stream is what every stream is here). */
  hipStreamCreateWithFlags(stream: Box<bigint>, flags: number): number;
  /** The null stream (0) waits for the current device's work. */
  hipStreamSynchronize(stream: HipHandle): number;
  hipStreamDestroy(stream: HipHandle): number;
  /** The last error any call of this process answered, then hipSuccess again (Note [HIP last error]). */
  hipGetLastError(): number;
  /** The last error, left in place. */
  hipPeekAtLastError(): number;
  /** The enumerator's name; "hipErrorUnknown" for a value HIP does not know. */
  hipGetErrorName(hipError: number): string;
  hipGetErrorString(hipError: number): string;
}
/**
 * A process using the HIP runtime API. On the simulator the machine is one
 * AMD Instinct MI300X unless options name devices or a machine to join.
 */
export declare function createHip(options?: FlavorOptions): HipFlavor;
