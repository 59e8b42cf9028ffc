import type { CUmemAccessDesc, CUmemAllocationProp, CUmemLocation } from '../../c-api/cuda-structs.js';
import { Access } from '../../core/types.js';
import { type Box, type Size } from '../common/args.js';
import { type FlavorOptions, VendorProcess } from '../common/process.js';

export type {
  CUmemAccessDesc,
  CUmemAllocationFlags,
  CUmemAllocationProp,
  CUmemLocation,
} from '../../c-api/cuda-structs.js';

type CUdeviceptr = bigint | number;
type CUhandle = bigint | number;
/** The function names of the CUDA flavour (for tracing, parity and documentation). */
export declare const CUDA_FUNCTIONS: readonly [
  'cuInit',
  'cuDriverGetVersion',
  'cuDeviceGet',
  'cuDeviceGetCount',
  'cuDeviceGetName',
  'cuDeviceTotalMem',
  'cuDeviceGetAttribute',
  'cuDevicePrimaryCtxRetain',
  'cuDevicePrimaryCtxRelease',
  'cuCtxSetCurrent',
  'cuCtxGetCurrent',
  'cuCtxGetDevice',
  'cuCtxSynchronize',
  'cuMemGetAllocationGranularity',
  'cuMemAddressReserve',
  'cuMemAddressFree',
  'cuMemCreate',
  'cuMemRelease',
  'cuMemMap',
  'cuMemUnmap',
  'cuMemSetAccess',
  'cuMemGetAccess',
  'cuMemRetainAllocationHandle',
  'cuMemGetAllocationPropertiesFromHandle',
  'cuMemExportToShareableHandle',
  'cuMemImportFromShareableHandle',
  'cuMemAlloc',
  'cuMemFree',
  'cuMemGetInfo',
  'cuMemcpyHtoD',
  'cuMemcpyDtoH',
  'cuMemcpyDtoD',
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
  'cuGetErrorName',
  'cuGetErrorString',
];
/**
 * One process using the CUDA driver API: every method has the C name and
 * argument order and returns the CUresult. Checks run in the driver's order
 * and answer with the driver's codes; the work is done by core.
 */
export declare class CudaFlavor extends VendorProcess {
  #private;
  constructor(options?: FlavorOptions);
  /**
   * End the process (Note [CUDA after dispose]): everything it holds goes, and
   * every later call answers CUDA_ERROR_DEINITIALIZED. Never throws.
   */
  dispose(): void;
  cuInit(flags: number): number;
  cuDriverGetVersion(version: Box<number>): number;
  cuDeviceGet(device: Box<number>, ordinal: number): number;
  cuDeviceGetCount(count: Box<number>): number;
  cuDeviceGetName(name: Box<string>, len: number, dev: number): number;
  cuDeviceTotalMem(bytes: Box<number>, dev: number): number;
  /** A device attribute (Note [Device attributes]); one cuda.h defines but vmmkit does not know is INVALID_VALUE. */
  cuDeviceGetAttribute(pi: Box<number>, attrib: number, dev: number): number;
  cuDevicePrimaryCtxRetain(ctx: Box<bigint>, dev: number): number;
  cuDevicePrimaryCtxRelease(dev: number): number;
  cuCtxSetCurrent(ctx: bigint | number | null): number;
  cuCtxGetCurrent(ctx: Box<bigint>): number;
  cuCtxGetDevice(device: Box<number>): number;
  cuCtxSynchronize(): number;
  cuMemGetAllocationGranularity(granularity: Box<number>, prop: CUmemAllocationProp, option: number): number;
  cuMemAddressReserve(
    ptr: Box<bigint>,
    size: Size,
    alignment: Size,
    addr: CUdeviceptr,
    flags: number,
  ): number;
  cuMemAddressFree(ptr: CUdeviceptr, size: Size): number;
  cuMemCreate(handle: Box<bigint>, size: Size, prop: CUmemAllocationProp, flags: number): number;
  cuMemRelease(handle: CUhandle): number;
  cuMemMap(ptr: CUdeviceptr, size: Size, offset: Size, handle: CUhandle, flags: number): number;
  cuMemUnmap(ptr: CUdeviceptr, size: Size): number;
  cuMemSetAccess(ptr: CUdeviceptr, size: Size, desc: readonly CUmemAccessDesc[], count: Size): number;
  cuMemGetAccess(flags: Box<number>, location: CUmemLocation, ptr: CUdeviceptr): number;
  cuMemRetainAllocationHandle(handle: Box<bigint>, addr: CUdeviceptr): number;
  cuMemGetAllocationPropertiesFromHandle(prop: Box<CUmemAllocationProp>, handle: CUhandle): number;
  cuMemExportToShareableHandle(
    shareable: Box<number>,
    handle: CUhandle,
    handleType: number,
    flags: number,
  ): number;
  cuMemImportFromShareableHandle(
    handle: Box<bigint>,
    osHandle: number | bigint,
    shHandleType: number,
  ): number;
  cuMemAlloc(dptr: Box<bigint>, bytesize: Size): number;
  cuMemFree(dptr: CUdeviceptr): number;
  cuMemGetInfo(free: Box<number>, total: Box<number>): number;
  cuMemcpyHtoD(dstDevice: CUdeviceptr, srcHost: Uint8Array, byteCount: Size): number;
  cuMemcpyDtoH(dstHost: Uint8Array, srcDevice: CUdeviceptr, byteCount: Size): number;
  cuMemcpyDtoD(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, byteCount: Size): number;
  cuMemcpyHtoDAsync(
    dstDevice: CUdeviceptr,
    srcHost: Uint8Array,
    byteCount: Size,
    hStream: bigint | number,
  ): number;
  cuMemcpyDtoHAsync(
    dstHost: Uint8Array,
    srcDevice: CUdeviceptr,
    byteCount: Size,
    hStream: bigint | number,
  ): number;
  cuMemcpyDtoDAsync(
    dstDevice: CUdeviceptr,
    srcDevice: CUdeviceptr,
    byteCount: Size,
    hStream: bigint | number,
  ): number;
  cuMemsetD8(dstDevice: CUdeviceptr, uc: number, n: Size): number;
  cuMemsetD8Async(dstDevice: CUdeviceptr, uc: number, n: Size, hStream: bigint | number): number;
  /** N 16-bit values; the destination must be 2-byte aligned. */
  cuMemsetD16(dstDevice: CUdeviceptr, us: number, n: Size): number;
  /** N 32-bit values; the destination must be 4-byte aligned. */
  cuMemsetD32(dstDevice: CUdeviceptr, ui: number, n: Size): number;
  cuStreamCreate(phStream: Box<bigint>, flags: number): number;
  cuStreamSynchronize(hStream: bigint | number): number;
  cuStreamDestroy(hStream: bigint | number): number;
  /** Nothing captures in vmmkit: every valid stream answers CU_STREAM_CAPTURE_STATUS_NONE. */
  cuStreamIsCapturing(hStream: bigint | number, captureStatus: Box<number>): number;
  /**
   * Swap the calling thread's capture mode: `mode.value` in, the previous
   * mode out. No capture ever runs here, so the mode only round-trips, as a
   * caching allocator's "relaxed while I allocate" guard expects.
   */
  cuThreadExchangeStreamCaptureMode(mode: Box<number>): number;
  cuGetErrorName(error: number, pStr: Box<string | null>): number;
  cuGetErrorString(error: number, pStr: Box<string | null>): number;
}
/** A process using the CUDA driver API, on a simulated machine (default) or real NVIDIA hardware. */
export declare function createCuda(options?: FlavorOptions): CudaFlavor;
export { Access };
