/**
 * The C-shaped CUDA surface the conformance cases call. It is structural: the
 * raw driver object (src/backends/cuda/driver.ts, createRawCuda) and vmmkit's
 * simulated CUDA flavour (createCuda) both satisfy it, so one set of cases
 * records the real driver's answers and checks the simulator against them.
 *
 * Every method has the C name and argument order and returns the numeric
 * CUresult. Out-parameters are boxes `{ value }`; device pointers, handles,
 * contexts and streams are bigints; sizes accept number or bigint.
 */

export type { RawCuda as CudaApi } from '../../src/backends/cuda/driver.js';
/** The surface is the raw binding's (src/backends/cuda/driver.ts); its types are declared once, in src/c-api. */
export type { Box, Size } from '../../src/c-api/arguments.js';
export type { CUmemAccessDesc, CUmemAllocationProp, CUmemLocation } from '../../src/c-api/cuda-structs.js';

// The enum values (cuda.h), from the one list in the CUDA flavour.
export {
  CU_MEM_ACCESS_FLAGS_PROT_NONE,
  CU_MEM_ACCESS_FLAGS_PROT_READ,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
  CU_MEM_ALLOC_GRANULARITY_MINIMUM,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
  CU_MEM_ALLOCATION_TYPE_INVALID,
  CU_MEM_ALLOCATION_TYPE_PINNED,
  CU_MEM_HANDLE_TYPE_FABRIC,
  CU_MEM_HANDLE_TYPE_NONE,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
  CU_MEM_HANDLE_TYPE_WIN32,
  CU_MEM_HANDLE_TYPE_WIN32_KMT,
  CU_MEM_LOCATION_TYPE_DEVICE,
  CU_MEM_LOCATION_TYPE_HOST,
  CU_MEM_LOCATION_TYPE_HOST_NUMA,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
  CU_MEM_LOCATION_TYPE_INVALID,
  CU_STREAM_DEFAULT,
  CU_STREAM_NON_BLOCKING,
  CUDA_ERROR_INVALID_DEVICE,
  CUDA_ERROR_INVALID_VALUE,
  CUDA_ERROR_LAUNCH_FAILED,
  CUDA_ERROR_NOT_SUPPORTED,
  CUDA_ERROR_OUT_OF_MEMORY,
  CUDA_ERROR_UNKNOWN,
  CUDA_SUCCESS,
} from '../../src/flavors/cuda/constants.js';
