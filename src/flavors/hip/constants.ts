/**
 * HIP's numbers, under their C names (ROCm's hip_runtime_api.h and
 * driver_types.h; every value checked against the headers).
 */

// hipError_t
export const hipSuccess = 0;
export const hipErrorInvalidValue = 1;
export const hipErrorOutOfMemory = 2;
/** Deprecated alias of hipErrorOutOfMemory. */
export const hipErrorMemoryAllocation = 2;
export const hipErrorNotInitialized = 3;
/** Deprecated alias of hipErrorNotInitialized. */
export const hipErrorInitializationError = 3;
export const hipErrorDeinitialized = 4;
export const hipErrorInvalidDevicePointer = 17;
export const hipErrorInvalidMemcpyDirection = 21;
export const hipErrorNoDevice = 100;
export const hipErrorInvalidDevice = 101;
export const hipErrorInvalidContext = 201;
export const hipErrorAlreadyMapped = 208;
export const hipErrorNotMapped = 211;
export const hipErrorInvalidHandle = 400;
/** Deprecated alias of hipErrorInvalidHandle. */
export const hipErrorInvalidResourceHandle = 400;
export const hipErrorNotFound = 500;
export const hipErrorNotReady = 600;
export const hipErrorIllegalAddress = 700;
export const hipErrorPeerAccessAlreadyEnabled = 704;
export const hipErrorPeerAccessNotEnabled = 705;
export const hipErrorContextIsDestroyed = 709;
export const hipErrorNotSupported = 801;
/** hipErrorIllegalState and stream capture's codes (hip_runtime_api.h). */
export const hipErrorIllegalState = 401;
export const hipErrorStreamCaptureUnsupported = 900;
export const hipErrorStreamCaptureInvalidated = 901;
export const hipErrorStreamCaptureMerge = 902;
export const hipErrorStreamCaptureUnmatched = 903;
export const hipErrorStreamCaptureUnjoined = 904;
export const hipErrorStreamCaptureIsolation = 905;
export const hipErrorStreamCaptureImplicit = 906;
export const hipErrorCapturedEvent = 907;
export const hipErrorStreamCaptureWrongThread = 908;
export const hipErrorUnknown = 999;

/** hipError_t -> [name, description], as hipGetErrorName / hipGetErrorString give them. */
export const HIP_ERRORS: ReadonlyMap<number, readonly [string, string]> = new Map([
  [hipSuccess, ['hipSuccess', 'no error']],
  [hipErrorInvalidValue, ['hipErrorInvalidValue', 'invalid argument']],
  [hipErrorOutOfMemory, ['hipErrorOutOfMemory', 'out of memory']],
  [hipErrorNotInitialized, ['hipErrorNotInitialized', 'initialization error']],
  [hipErrorDeinitialized, ['hipErrorDeinitialized', 'driver shutting down']],
  [hipErrorInvalidDevicePointer, ['hipErrorInvalidDevicePointer', 'invalid device pointer']],
  [hipErrorInvalidMemcpyDirection, ['hipErrorInvalidMemcpyDirection', 'invalid copy direction for memcpy']],
  [hipErrorNoDevice, ['hipErrorNoDevice', 'no ROCm-capable device is detected']],
  [hipErrorInvalidDevice, ['hipErrorInvalidDevice', 'invalid device ordinal']],
  [hipErrorInvalidContext, ['hipErrorInvalidContext', 'invalid device context']],
  [hipErrorAlreadyMapped, ['hipErrorAlreadyMapped', 'resource already mapped']],
  [hipErrorNotMapped, ['hipErrorNotMapped', 'resource not mapped']],
  [hipErrorInvalidHandle, ['hipErrorInvalidHandle', 'invalid resource handle']],
  [hipErrorNotFound, ['hipErrorNotFound', 'named symbol not found']],
  [hipErrorNotReady, ['hipErrorNotReady', 'device not ready']],
  [hipErrorIllegalAddress, ['hipErrorIllegalAddress', 'an illegal memory access was encountered']],
  [hipErrorPeerAccessAlreadyEnabled, ['hipErrorPeerAccessAlreadyEnabled', 'peer access is already enabled']],
  [hipErrorPeerAccessNotEnabled, ['hipErrorPeerAccessNotEnabled', 'peer access has not been enabled']],
  [hipErrorContextIsDestroyed, ['hipErrorContextIsDestroyed', 'context is destroyed']],
  [hipErrorNotSupported, ['hipErrorNotSupported', 'operation not supported']],
  [hipErrorIllegalState, ['hipErrorIllegalState', 'the operation cannot be performed in the present state']],
  [
    hipErrorStreamCaptureUnsupported,
    ['hipErrorStreamCaptureUnsupported', 'operation not permitted when stream is capturing'],
  ],
  [
    hipErrorStreamCaptureInvalidated,
    ['hipErrorStreamCaptureInvalidated', 'operation failed due to a previous error during capture'],
  ],
  [
    hipErrorStreamCaptureMerge,
    ['hipErrorStreamCaptureMerge', 'operation would result in a merge of separate capture sequences'],
  ],
  [
    hipErrorStreamCaptureUnmatched,
    ['hipErrorStreamCaptureUnmatched', 'capture was not ended in the same stream as it began'],
  ],
  [hipErrorStreamCaptureUnjoined, ['hipErrorStreamCaptureUnjoined', 'capturing stream has unjoined work']],
  [
    hipErrorStreamCaptureIsolation,
    ['hipErrorStreamCaptureIsolation', 'dependency created on uncaptured work in another stream'],
  ],
  [
    hipErrorStreamCaptureImplicit,
    [
      'hipErrorStreamCaptureImplicit',
      'operation would make the legacy stream depend on a capturing blocking stream',
    ],
  ],
  [
    hipErrorCapturedEvent,
    ['hipErrorCapturedEvent', 'operation not permitted on an event last recorded in a capturing stream'],
  ],
  [
    hipErrorStreamCaptureWrongThread,
    [
      'hipErrorStreamCaptureWrongThread',
      'attempt to terminate a thread-local capture sequence from another thread',
    ],
  ],
  [hipErrorUnknown, ['hipErrorUnknown', 'unknown error']],
]);

// hipMemAllocationType
export const hipMemAllocationTypeInvalid = 0;
export const hipMemAllocationTypePinned = 1;
/** AMD extension: fine-grained, uncached memory. */
export const hipMemAllocationTypeUncached = 0x40000000;
export const hipMemAllocationTypeMax = 0x7fffffff;
// hipMemLocationType
export const hipMemLocationTypeInvalid = 0;
export const hipMemLocationTypeNone = 0;
export const hipMemLocationTypeDevice = 1;
export const hipMemLocationTypeHost = 2;
export const hipMemLocationTypeHostNuma = 3;
export const hipMemLocationTypeHostNumaCurrent = 4;
// hipMemAllocationHandleType
export const hipMemHandleTypeNone = 0;
export const hipMemHandleTypePosixFileDescriptor = 1;
export const hipMemHandleTypeWin32 = 2;
export const hipMemHandleTypeWin32Kmt = 4;
export const hipMemHandleTypeFabric = 8;
// hipMemAccessFlags
export const hipMemAccessFlagsProtNone = 0;
export const hipMemAccessFlagsProtRead = 1;
export const hipMemAccessFlagsProtReadWrite = 3;
// hipMemAllocationGranularity_flags
export const hipMemAllocationGranularityMinimum = 0;
export const hipMemAllocationGranularityRecommended = 1;
// hipMemcpyKind
export const hipMemcpyHostToHost = 0;
export const hipMemcpyHostToDevice = 1;
export const hipMemcpyDeviceToHost = 2;
export const hipMemcpyDeviceToDevice = 3;
export const hipMemcpyDefault = 4;
/** AMD extension: device-to-device through a copy engine rather than a kernel. */
export const hipMemcpyDeviceToDeviceNoCU = 1024;
// hipStreamCreateWithFlags flags
export const hipStreamDefault = 0;
export const hipStreamNonBlocking = 1;
/** hipStreamCaptureMode and hipStreamCaptureStatus (hip_runtime_api.h). */
export const hipStreamCaptureModeGlobal = 0;
export const hipStreamCaptureModeThreadLocal = 1;
export const hipStreamCaptureModeRelaxed = 2;
export const hipStreamCaptureStatusNone = 0;
export const hipStreamCaptureStatusActive = 1;
export const hipStreamCaptureStatusInvalidated = 2;
/** The implicit per-thread stream, ((hipStream_t)2) in hip_runtime_api.h. */
export const hipStreamPerThread = 2n;
// hipEventCreateWithFlags flags (hip_runtime_api.h)
export const hipEventDefault = 0;
export const hipEventBlockingSync = 1;
export const hipEventDisableTiming = 2;
export const hipEventInterprocess = 4;
export const hipEventDisableSystemFence = 0x2000_0000;
export const hipEventReleaseToDevice = 0x4000_0000;
export const hipEventReleaseToSystem = 0x8000_0000;

/**
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN on ROCm devices, in bytes: hipMemCreate
 * checks its size against this, not against the granularity (hip_vm.cpp).
 */
export const HIP_MEM_BASE_ADDR_ALIGN = 2048;
/** Host NUMA nodes the simulated machine has (hipMemLocationTypeHostNuma ids below this are valid). */
export const SIMULATED_HOST_NUMA_NODES = 1;
/**
 * What hipRuntimeGetVersion answers: HIP_VERSION's encoding (major * 10,000,000
 * + minor * 100,000 + patch) of 6.2.0. A simulated runtime's number, not a
 * build's: programs compare it with a minimum, and any ROCm 6 passes.
 */
export const SIMULATED_HIP_RUNTIME_VERSION = 60_200_000;
// hipMemoryType (hipPointerAttribute_t.type), the ones vmmkit answers
export const hipMemoryTypeHost = 1;
export const hipMemoryTypeDevice = 2;
// hipHostMalloc flags (hip_runtime_api.h)
export const hipHostMallocDefault = 0x0;
export const hipHostMallocPortable = 0x1;
export const hipHostMallocMapped = 0x2;
export const hipHostMallocWriteCombined = 0x4;
export const hipHostMallocNumaUser = 0x20000000;
export const hipHostMallocCoherent = 0x40000000;
export const hipHostMallocNonCoherent = 0x80000000;
// hipDeviceAttribute_t (ROCm 6's hip_runtime_api.h numbering), the ones vmmkit answers
export const hipDeviceAttributeComputeMode = 6;
export const hipDeviceAttributeComputeCapabilityMajor = 23;
export const hipDeviceAttributeComputeCapabilityMinor = 61;
export const hipDeviceAttributeMultiprocessorCount = 63;
export const hipDeviceAttributeVirtualMemoryManagementSupported = 89;
/** hipComputeModeDefault */
export const hipComputeModeDefault = 0;
