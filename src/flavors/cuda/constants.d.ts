/** The CUDA driver API's numbers, under their C names (cuda.h). */
export declare const CUDA_SUCCESS = 0;
export declare const CUDA_ERROR_INVALID_VALUE = 1;
export declare const CUDA_ERROR_OUT_OF_MEMORY = 2;
export declare const CUDA_ERROR_NOT_INITIALIZED = 3;
export declare const CUDA_ERROR_DEINITIALIZED = 4;
export declare const CUDA_ERROR_NO_DEVICE = 100;
export declare const CUDA_ERROR_INVALID_DEVICE = 101;
export declare const CUDA_ERROR_INVALID_IMAGE = 200;
export declare const CUDA_ERROR_INVALID_CONTEXT = 201;
export declare const CUDA_ERROR_ALREADY_MAPPED = 208;
export declare const CUDA_ERROR_NOT_MAPPED = 211;
export declare const CUDA_ERROR_INVALID_HANDLE = 400;
export declare const CUDA_ERROR_NOT_FOUND = 500;
export declare const CUDA_ERROR_NOT_READY = 600;
export declare const CUDA_ERROR_ILLEGAL_ADDRESS = 700;
export declare const CUDA_ERROR_NOT_PERMITTED = 800;
export declare const CUDA_ERROR_NOT_SUPPORTED = 801;
export declare const CUDA_ERROR_UNKNOWN = 999;
/** CUresult -> [name, the driver's description], as cuGetErrorName / cuGetErrorString give them. */
export declare const CUDA_RESULTS: ReadonlyMap<number, readonly [string, string]>;
export declare const CU_MEM_ALLOCATION_TYPE_INVALID = 0;
export declare const CU_MEM_ALLOCATION_TYPE_PINNED = 1;
export declare const CU_MEM_LOCATION_TYPE_INVALID = 0;
export declare const CU_MEM_LOCATION_TYPE_DEVICE = 1;
export declare const CU_MEM_LOCATION_TYPE_HOST = 2;
export declare const CU_MEM_LOCATION_TYPE_HOST_NUMA = 3;
export declare const CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 4;
export declare const CU_MEM_HANDLE_TYPE_NONE = 0;
export declare const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
export declare const CU_MEM_HANDLE_TYPE_WIN32 = 2;
export declare const CU_MEM_HANDLE_TYPE_WIN32_KMT = 4;
export declare const CU_MEM_HANDLE_TYPE_FABRIC = 8;
export declare const CU_MEM_ACCESS_FLAGS_PROT_NONE = 0;
export declare const CU_MEM_ACCESS_FLAGS_PROT_READ = 1;
export declare const CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
export declare const CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0;
export declare const CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1;
export declare const CU_STREAM_DEFAULT = 0;
export declare const CU_STREAM_NON_BLOCKING = 1;
/** Special CUstream handles, valid wherever a CUstream is taken (cuda.h). */
export declare const CU_STREAM_LEGACY = 1n;
export declare const CU_STREAM_PER_THREAD = 2n;
/** The driver version the simulator reports (CUDA 13.0, as driver 580 on the H200). */
export declare const SIMULATED_DRIVER_VERSION = 13000;
/** CUdevice_attribute (cuda.h): the ones vmmkit answers (attributes.ts). */
export declare const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
export declare const CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20;
export declare const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
export declare const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
export declare const CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;
export declare const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103;
export declare const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED = 104;
export declare const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED = 105;
export declare const CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED = 107;
export declare const CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110;
export declare const CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116;
export declare const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 128;
/** One past the last attribute of CUDA 13's cuda.h (CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED = 143). */
export declare const CU_DEVICE_ATTRIBUTE_MAX = 144;
/** CUcomputemode */
export declare const CU_COMPUTE_MODE_DEFAULT = 0;
/** CUstreamCaptureStatus and CUstreamCaptureMode */
export declare const CU_STREAM_CAPTURE_STATUS_NONE = 0;
export declare const CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
export declare const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
export declare const CU_STREAM_CAPTURE_MODE_RELAXED = 2;
