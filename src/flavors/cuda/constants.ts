/** The CUDA driver API's numbers, under their C names (cuda.h). */

export const CUDA_SUCCESS = 0;
export const CUDA_ERROR_INVALID_VALUE = 1;
export const CUDA_ERROR_OUT_OF_MEMORY = 2;
export const CUDA_ERROR_NOT_INITIALIZED = 3;
export const CUDA_ERROR_DEINITIALIZED = 4;
export const CUDA_ERROR_NO_DEVICE = 100;
export const CUDA_ERROR_INVALID_DEVICE = 101;
export const CUDA_ERROR_INVALID_IMAGE = 200;
export const CUDA_ERROR_INVALID_CONTEXT = 201;
export const CUDA_ERROR_ALREADY_MAPPED = 208;
export const CUDA_ERROR_NOT_MAPPED = 211;
export const CUDA_ERROR_INVALID_HANDLE = 400;
export const CUDA_ERROR_ILLEGAL_STATE = 401;
export const CUDA_ERROR_NOT_FOUND = 500;
export const CUDA_ERROR_NOT_READY = 600;
export const CUDA_ERROR_ILLEGAL_ADDRESS = 700;
export const CUDA_ERROR_NOT_PERMITTED = 800;
export const CUDA_ERROR_NOT_SUPPORTED = 801;
/** Stream capture's CUresults (cuda.h 13.0). */
export const CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;
export const CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;
export const CUDA_ERROR_STREAM_CAPTURE_MERGE = 902;
export const CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903;
export const CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904;
export const CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905;
export const CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906;
export const CUDA_ERROR_CAPTURED_EVENT = 907;
export const CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908;
export const CUDA_ERROR_TIMEOUT = 909;
export const CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910;
/** Work faulted on the device: every later call of its contexts answers it (Note [Faulted devices]). */
export const CUDA_ERROR_LAUNCH_FAILED = 719;
export const CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217;
export const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;
export const CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705;
export const CUDA_ERROR_CONTEXT_IS_DESTROYED = 709;
/** cuCtxCreate with execution affinity the device (here: no MPS) cannot give. */
export const CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY = 224;
export const CUDA_ERROR_UNKNOWN = 999;

/** CUresult -> [name, the driver's description], as cuGetErrorName / cuGetErrorString give them. */
export const CUDA_RESULTS: ReadonlyMap<number, readonly [string, string]> = new Map([
  [CUDA_SUCCESS, ['CUDA_SUCCESS', 'no error']],
  [CUDA_ERROR_INVALID_VALUE, ['CUDA_ERROR_INVALID_VALUE', 'invalid argument']],
  [CUDA_ERROR_OUT_OF_MEMORY, ['CUDA_ERROR_OUT_OF_MEMORY', 'out of memory']],
  [CUDA_ERROR_NOT_INITIALIZED, ['CUDA_ERROR_NOT_INITIALIZED', 'initialization error']],
  [CUDA_ERROR_DEINITIALIZED, ['CUDA_ERROR_DEINITIALIZED', 'driver shutting down']],
  [CUDA_ERROR_NO_DEVICE, ['CUDA_ERROR_NO_DEVICE', 'no CUDA-capable device is detected']],
  [CUDA_ERROR_INVALID_DEVICE, ['CUDA_ERROR_INVALID_DEVICE', 'invalid device ordinal']],
  [CUDA_ERROR_INVALID_IMAGE, ['CUDA_ERROR_INVALID_IMAGE', 'device kernel image is invalid']],
  [CUDA_ERROR_INVALID_CONTEXT, ['CUDA_ERROR_INVALID_CONTEXT', 'invalid device context']],
  [CUDA_ERROR_ALREADY_MAPPED, ['CUDA_ERROR_ALREADY_MAPPED', 'resource already mapped']],
  [CUDA_ERROR_NOT_MAPPED, ['CUDA_ERROR_NOT_MAPPED', 'resource not mapped']],
  [CUDA_ERROR_INVALID_HANDLE, ['CUDA_ERROR_INVALID_HANDLE', 'invalid resource handle']],
  [CUDA_ERROR_ILLEGAL_STATE, ['CUDA_ERROR_ILLEGAL_STATE', 'invalid resource state']],
  [CUDA_ERROR_NOT_FOUND, ['CUDA_ERROR_NOT_FOUND', 'named symbol not found']],
  [CUDA_ERROR_NOT_READY, ['CUDA_ERROR_NOT_READY', 'device not ready']],
  [CUDA_ERROR_ILLEGAL_ADDRESS, ['CUDA_ERROR_ILLEGAL_ADDRESS', 'an illegal memory access was encountered']],
  [CUDA_ERROR_NOT_PERMITTED, ['CUDA_ERROR_NOT_PERMITTED', 'operation not permitted']],
  [CUDA_ERROR_NOT_SUPPORTED, ['CUDA_ERROR_NOT_SUPPORTED', 'operation not supported']],
  // Stream capture's: the strings are modelled until capture.errorNames records the H200's.
  [
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    ['CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED', 'operation not permitted when stream is capturing'],
  ],
  [
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    ['CUDA_ERROR_STREAM_CAPTURE_INVALIDATED', 'operation failed due to a previous error during capture'],
  ],
  [
    CUDA_ERROR_STREAM_CAPTURE_MERGE,
    ['CUDA_ERROR_STREAM_CAPTURE_MERGE', 'operation would result in a merge of separate capture sequences'],
  ],
  [
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
    ['CUDA_ERROR_STREAM_CAPTURE_UNMATCHED', 'capture was not ended in the same stream as it began'],
  ],
  [
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
    ['CUDA_ERROR_STREAM_CAPTURE_UNJOINED', 'capturing stream has unjoined work'],
  ],
  [
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
    ['CUDA_ERROR_STREAM_CAPTURE_ISOLATION', 'dependency created on uncaptured work in another stream'],
  ],
  [
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
    [
      'CUDA_ERROR_STREAM_CAPTURE_IMPLICIT',
      'operation would make the legacy stream depend on a capturing blocking stream',
    ],
  ],
  [
    CUDA_ERROR_CAPTURED_EVENT,
    ['CUDA_ERROR_CAPTURED_EVENT', 'operation not permitted on an event last recorded in a capturing stream'],
  ],
  [
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
    [
      'CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD',
      'attempt to terminate a thread-local capture sequence from another thread',
    ],
  ],
  [CUDA_ERROR_TIMEOUT, ['CUDA_ERROR_TIMEOUT', 'wait operation timed out']],
  [
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
    [
      'CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE',
      'the graph update was not performed because it included changes which violated constraints specific to instantiated graph update',
    ],
  ],
  [CUDA_ERROR_LAUNCH_FAILED, ['CUDA_ERROR_LAUNCH_FAILED', 'unspecified launch failure']],
  [
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
    ['CUDA_ERROR_PEER_ACCESS_UNSUPPORTED', 'peer access is not supported between these two devices'],
  ],
  [
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
    ['CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED', 'peer access is already enabled'],
  ],
  [
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
    ['CUDA_ERROR_PEER_ACCESS_NOT_ENABLED', 'peer access has not been enabled'],
  ],
  [CUDA_ERROR_CONTEXT_IS_DESTROYED, ['CUDA_ERROR_CONTEXT_IS_DESTROYED', 'context is destroyed']],
  [
    CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
    ['CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY', 'the provided execution affinity is not supported'],
  ],
  [CUDA_ERROR_UNKNOWN, ['CUDA_ERROR_UNKNOWN', 'unknown error']],
]);

// CUmemAllocationType
export const CU_MEM_ALLOCATION_TYPE_INVALID = 0;
export const CU_MEM_ALLOCATION_TYPE_PINNED = 1;
// CUmemLocationType
export const CU_MEM_LOCATION_TYPE_INVALID = 0;
export const CU_MEM_LOCATION_TYPE_DEVICE = 1;
export const CU_MEM_LOCATION_TYPE_HOST = 2;
export const CU_MEM_LOCATION_TYPE_HOST_NUMA = 3;
export const CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4;
// CUmemAllocationHandleType
export const CU_MEM_HANDLE_TYPE_NONE = 0;
export const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
export const CU_MEM_HANDLE_TYPE_WIN32 = 2;
export const CU_MEM_HANDLE_TYPE_WIN32_KMT = 4;
export const CU_MEM_HANDLE_TYPE_FABRIC = 8;
// CUmemAccess_flags
export const CU_MEM_ACCESS_FLAGS_PROT_NONE = 0;
export const CU_MEM_ACCESS_FLAGS_PROT_READ = 1;
export const CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
// CUmemAllocationGranularity_flags
export const CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0;
export const CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1;
// cuStreamCreate flags
export const CU_STREAM_DEFAULT = 0;
export const CU_STREAM_NON_BLOCKING = 1;
/** Special CUstream handles, valid wherever a CUstream is taken (cuda.h). */
export const CU_STREAM_LEGACY = 0x1n;
export const CU_STREAM_PER_THREAD = 0x2n;
// CUevent_flags, CUevent_record_flags, CUevent_wait_flags (cuda.h)
export const CU_EVENT_DEFAULT = 0;
export const CU_EVENT_BLOCKING_SYNC = 1;
export const CU_EVENT_DISABLE_TIMING = 2;
export const CU_EVENT_INTERPROCESS = 4;
export const CU_EVENT_RECORD_DEFAULT = 0;
export const CU_EVENT_RECORD_EXTERNAL = 1;
export const CU_EVENT_WAIT_DEFAULT = 0;
export const CU_EVENT_WAIT_EXTERNAL = 1;
// CUctx_flags (cuda.h): the scheduling choices (one of, in the low 3 bits) and the other bits
export const CU_CTX_SCHED_AUTO = 0;
export const CU_CTX_SCHED_SPIN = 1;
export const CU_CTX_SCHED_YIELD = 2;
export const CU_CTX_SCHED_BLOCKING_SYNC = 4;
export const CU_CTX_MAP_HOST = 8;
export const CU_CTX_LMEM_RESIZE_TO_MAX = 0x10;
export const CU_CTX_COREDUMP_ENABLE = 0x20;
export const CU_CTX_USER_COREDUMP_ENABLE = 0x40;
export const CU_CTX_SYNC_MEMOPS = 0x80;
/** cuMemHostAlloc's flags. */
export const CU_MEMHOSTALLOC_PORTABLE = 0x01;
export const CU_MEMHOSTALLOC_DEVICEMAP = 0x02;
export const CU_MEMHOSTALLOC_WRITECOMBINED = 0x04;
/** CUexecAffinityType: the one execution affinity cuda.h 13.0 defines (a CUexecAffinityParam's type). */
export const CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0;
/** CUcigDataType: what a CUctxCigParam's sharedData is. */
export const CIG_DATA_TYPE_D3D12_COMMAND_QUEUE = 1;
export const CIG_DATA_TYPE_NV_BLOB = 2;

/** The driver version the simulator reports (CUDA 13.0, as driver 580 on the H200). */
export const SIMULATED_DRIVER_VERSION = 13000;

/** CUdevice_attribute (cuda.h): the ones vmmkit answers (attributes.ts). */
export const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
export const CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20;
export const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
export const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
export const CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;
export const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103;
export const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED = 104;
export const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED = 105;
export const CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED = 107;
export const CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110;
export const CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116;
export const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 128;
/** One past the last attribute of CUDA 13's cuda.h (CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED = 143). */
export const CU_DEVICE_ATTRIBUTE_MAX = 144;
/** CUcomputemode */
export const CU_COMPUTE_MODE_DEFAULT = 0;
/** CUstreamCaptureStatus and CUstreamCaptureMode */
export const CU_STREAM_CAPTURE_STATUS_NONE = 0;
export const CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;
export const CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2;
export const CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
export const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
export const CU_STREAM_CAPTURE_MODE_RELAXED = 2;

// CUpointer_attribute (cuda.h): the ones vmmkit answers.
export const CU_POINTER_ATTRIBUTE_CONTEXT = 1;
export const CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
export const CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;
export const CU_POINTER_ATTRIBUTE_HOST_POINTER = 4;
export const CU_POINTER_ATTRIBUTE_IS_MANAGED = 8;
export const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
export const CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11;
export const CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12;
export const CU_POINTER_ATTRIBUTE_MAPPED = 13;
export const CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6;
export const CU_POINTER_ATTRIBUTE_BUFFER_ID = 7;
export const CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10;
export const CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES = 14;
export const CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE = 15;
export const CU_POINTER_ATTRIBUTE_ACCESS_FLAGS = 16;
export const CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17;
export const CU_POINTER_ATTRIBUTE_MAPPING_SIZE = 18;
export const CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR = 19;
export const CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID = 20;
/** CU_DEVICE_INVALID (cuda.h): the device ordinal of memory that is no CUDA memory. */
export const CU_DEVICE_INVALID = -2;

// CUmemorytype
export const CU_MEMORYTYPE_HOST = 1;
export const CU_MEMORYTYPE_DEVICE = 2;
