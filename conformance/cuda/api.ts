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

export interface Box<T> {
  value: T;
}
export type Size = number | bigint;

export type { CUmemAccessDesc, CUmemAllocationProp, CUmemLocation } from '../../src/flavors/cuda/cuda.js';

import type { CUmemAccessDesc, CUmemAllocationProp, CUmemLocation } from '../../src/flavors/cuda/cuda.js';

export interface CudaApi {
  cuInit(flags: number): number;
  cuDriverGetVersion(version: Box<number>): number;
  cuDeviceGet(device: Box<number>, ordinal: number): number;
  cuDeviceGetCount(count: Box<number>): number;
  cuDeviceGetName(name: Box<string>, len: number, dev: number): number;
  cuDeviceTotalMem(bytes: Box<number>, dev: number): number;
  cuDevicePrimaryCtxRetain(ctx: Box<bigint>, dev: number): number;
  cuDevicePrimaryCtxRelease(dev: number): number;
  cuCtxSetCurrent(ctx: bigint): number;
  cuCtxGetCurrent(ctx: Box<bigint>): number;
  cuCtxSynchronize(): number;
  cuMemGetAllocationGranularity(granularity: Box<number>, prop: CUmemAllocationProp, option: number): number;
  cuMemAddressReserve(ptr: Box<bigint>, size: Size, alignment: Size, addr: Size, flags: Size): number;
  cuMemAddressFree(ptr: Size, size: Size): number;
  cuMemCreate(handle: Box<bigint>, size: Size, prop: CUmemAllocationProp, flags: Size): number;
  cuMemRelease(handle: Size): number;
  cuMemMap(ptr: Size, size: Size, offset: Size, handle: Size, flags: Size): number;
  cuMemUnmap(ptr: Size, size: Size): number;
  cuMemSetAccess(ptr: Size, size: Size, descs: readonly CUmemAccessDesc[], count: Size): number;
  cuMemGetAccess(flags: Box<number>, location: CUmemLocation, ptr: Size): number;
  cuMemRetainAllocationHandle(handle: Box<bigint>, ptr: Size): number;
  cuMemGetAllocationPropertiesFromHandle(prop: Box<CUmemAllocationProp>, handle: Size): number;
  cuMemExportToShareableHandle(shareable: Box<number>, handle: Size, handleType: number, flags: Size): number;
  cuMemImportFromShareableHandle(handle: Box<bigint>, osHandle: number, handleType: number): number;
  cuMemAlloc(ptr: Box<bigint>, size: Size): number;
  cuMemFree(ptr: Size): number;
  cuMemGetInfo(free: Box<number>, total: Box<number>): number;
  cuMemcpyHtoD(dst: Size, src: Uint8Array, n: Size): number;
  cuMemcpyDtoH(dst: Uint8Array, src: Size, n: Size): number;
  cuMemcpyDtoD(dst: Size, src: Size, n: Size): number;
  cuMemcpyHtoDAsync(dst: Size, src: Uint8Array, n: Size, stream: Size): number;
  cuMemcpyDtoHAsync(dst: Uint8Array, src: Size, n: Size, stream: Size): number;
  cuMemcpyDtoDAsync(dst: Size, src: Size, n: Size, stream: Size): number;
  cuMemsetD8(ptr: Size, value: number, n: Size): number;
  cuMemsetD8Async(ptr: Size, value: number, n: Size, stream: Size): number;
  cuStreamCreate(stream: Box<bigint>, flags: number): number;
  cuStreamSynchronize(stream: Size): number;
  cuStreamDestroy(stream: Size): number;
  cuGetErrorName(code: number, str: Box<string>): number;
  cuGetErrorString(code: number, str: Box<string>): number;
}

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
  CUDA_ERROR_NOT_SUPPORTED,
  CUDA_ERROR_OUT_OF_MEMORY,
  CUDA_ERROR_UNKNOWN,
  CUDA_SUCCESS,
} from '../../src/flavors/cuda/constants.js';
