/**
 * HIP's numbers, under their C names (ROCm's hip_runtime_api.h and
 * driver_types.h; every value checked against the headers).
 */
export declare const hipSuccess = 0;
export declare const hipErrorInvalidValue = 1;
export declare const hipErrorOutOfMemory = 2;
/** Deprecated alias of hipErrorOutOfMemory. */
export declare const hipErrorMemoryAllocation = 2;
export declare const hipErrorNotInitialized = 3;
/** Deprecated alias of hipErrorNotInitialized. */
export declare const hipErrorInitializationError = 3;
export declare const hipErrorDeinitialized = 4;
export declare const hipErrorInvalidDevicePointer = 17;
export declare const hipErrorInvalidMemcpyDirection = 21;
export declare const hipErrorNoDevice = 100;
export declare const hipErrorInvalidDevice = 101;
export declare const hipErrorInvalidContext = 201;
export declare const hipErrorAlreadyMapped = 208;
export declare const hipErrorNotMapped = 211;
export declare const hipErrorInvalidHandle = 400;
/** Deprecated alias of hipErrorInvalidHandle. */
export declare const hipErrorInvalidResourceHandle = 400;
export declare const hipErrorNotFound = 500;
export declare const hipErrorNotReady = 600;
export declare const hipErrorIllegalAddress = 700;
export declare const hipErrorContextIsDestroyed = 709;
export declare const hipErrorNotSupported = 801;
export declare const hipErrorUnknown = 999;
/** hipError_t -> [name, description], as hipGetErrorName / hipGetErrorString give them. */
export declare const HIP_ERRORS: ReadonlyMap<number, readonly [string, string]>;
export declare const hipMemAllocationTypeInvalid = 0;
export declare const hipMemAllocationTypePinned = 1;
/** AMD extension: fine-grained, uncached memory. */
export declare const hipMemAllocationTypeUncached = 1073741824;
export declare const hipMemAllocationTypeMax = 2147483647;
export declare const hipMemLocationTypeInvalid = 0;
export declare const hipMemLocationTypeNone = 0;
export declare const hipMemLocationTypeDevice = 1;
export declare const hipMemLocationTypeHost = 2;
export declare const hipMemLocationTypeHostNuma = 3;
export declare const hipMemLocationTypeHostNumaCurrent = 4;
export declare const hipMemHandleTypeNone = 0;
export declare const hipMemHandleTypePosixFileDescriptor = 1;
export declare const hipMemHandleTypeWin32 = 2;
export declare const hipMemHandleTypeWin32Kmt = 4;
export declare const hipMemHandleTypeFabric = 8;
export declare const hipMemAccessFlagsProtNone = 0;
export declare const hipMemAccessFlagsProtRead = 1;
export declare const hipMemAccessFlagsProtReadWrite = 3;
export declare const hipMemAllocationGranularityMinimum = 0;
export declare const hipMemAllocationGranularityRecommended = 1;
export declare const hipMemcpyHostToHost = 0;
export declare const hipMemcpyHostToDevice = 1;
export declare const hipMemcpyDeviceToHost = 2;
export declare const hipMemcpyDeviceToDevice = 3;
export declare const hipMemcpyDefault = 4;
/** AMD extension: device-to-device through a copy engine rather than a kernel. */
export declare const hipMemcpyDeviceToDeviceNoCU = 1024;
export declare const hipStreamDefault = 0;
export declare const hipStreamNonBlocking = 1;
/** The implicit per-thread stream, ((hipStream_t)2) in hip_runtime_api.h. */
export declare const hipStreamPerThread = 2n;
/**
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN on ROCm devices, in bytes: hipMemCreate
 * checks its size against this, not against the granularity (hip_vm.cpp).
 */
export declare const HIP_MEM_BASE_ADDR_ALIGN = 2048;
/** Host NUMA nodes the simulated machine has (hipMemLocationTypeHostNuma ids below this are valid). */
export declare const SIMULATED_HOST_NUMA_NODES = 1;
/**
 * What hipRuntimeGetVersion answers: HIP_VERSION's encoding (major * 10,000,000
 * + minor * 100,000 + patch) of 6.2.0. A simulated runtime's number, not a
 * build's: programs compare it with a minimum, and any ROCm 6 passes.
 */
export declare const SIMULATED_HIP_RUNTIME_VERSION = 60200000;
