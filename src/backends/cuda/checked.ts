/**
 * The checked layer over the raw driver (driver.ts): each call's CUresult
 * becomes core's VmmError, through one table, with a message naming the
 * driver function and the CUresult. Nothing else happens here: no vmmkit
 * rules, no bookkeeping. Out-parameter arrays are reused, so the calls on the
 * hot path allocate nothing of their own (koffi marshals into them in place).
 */
import { type ErrorKind, VmmError } from '../../core/errors.js';
import type { CudaDriver } from './driver.js';
import type { DriverSymbol } from './driver-api.js';

/** CUresult numbers and names vmmkit meets (cuda.h). */
export const CU_RESULT_NAMES: ReadonlyMap<number, string> = new Map([
  [0, 'CUDA_SUCCESS'],
  [1, 'CUDA_ERROR_INVALID_VALUE'],
  [2, 'CUDA_ERROR_OUT_OF_MEMORY'],
  [3, 'CUDA_ERROR_NOT_INITIALIZED'],
  [4, 'CUDA_ERROR_DEINITIALIZED'],
  [100, 'CUDA_ERROR_NO_DEVICE'],
  [101, 'CUDA_ERROR_INVALID_DEVICE'],
  [201, 'CUDA_ERROR_INVALID_CONTEXT'],
  [400, 'CUDA_ERROR_INVALID_HANDLE'],
  [500, 'CUDA_ERROR_NOT_FOUND'],
  [600, 'CUDA_ERROR_NOT_READY'],
  [700, 'CUDA_ERROR_ILLEGAL_ADDRESS'],
  [709, 'CUDA_ERROR_CONTEXT_IS_DESTROYED'],
  [800, 'CUDA_ERROR_NOT_PERMITTED'],
  [801, 'CUDA_ERROR_NOT_SUPPORTED'],
  [999, 'CUDA_ERROR_UNKNOWN'],
]);

/**
 * CUresult -> core's error kind: the one table of the checked layer. A code
 * not listed becomes 'invalid-value' (its name still in the message).
 * CUDA_ERROR_UNKNOWN is what cuMemImportFromShareableHandle answers for a
 * descriptor that is not open (conformance case import.bogusFd), the only
 * place vmmkit meets it.
 */
export const CU_RESULT_KINDS: ReadonlyMap<number, ErrorKind> = new Map<number, ErrorKind>([
  [1, 'invalid-value'],
  [2, 'out-of-memory'],
  [3, 'not-initialized'],
  [4, 'not-initialized'],
  [100, 'invalid-device'],
  [101, 'invalid-device'],
  [201, 'invalid-context'],
  [400, 'invalid-stream'],
  [500, 'invalid-value'],
  [700, 'access-denied'],
  [709, 'invalid-context'],
  [800, 'permission-denied'],
  [801, 'not-supported'],
  [999, 'invalid-fd'],
]);

export function cuResultName(code: number): string {
  return CU_RESULT_NAMES.get(code) ?? `CUresult ${code}`;
}

/** A driver call that failed: a VmmError that also says which function and which CUresult. */
export class CudaDriverError extends VmmError {
  constructor(
    readonly fn: string,
    readonly result: number,
    detail = '',
  ) {
    super(
      CU_RESULT_KINDS.get(result) ?? 'invalid-value',
      `${fn} returned ${cuResultName(result)} (${result})${detail ? `: ${detail}` : ''}`,
    );
  }
}

type Raw = (...args: unknown[]) => number;
/** A 64-bit value as the driver gave it: a number when exact, a bigint above 2^53. */
export type U64 = number | bigint;

/** Shapes koffi encodes for the driver's structs (driver-api.ts). */
interface LocationIn {
  type: number;
  id: number;
}
export interface PropIn {
  type: number;
  requestedHandleTypes: number;
  location: LocationIn;
  win32HandleMetaData: number;
  allocFlags: { compressionType: number; gpuDirectRDMACapable: number; usage: number; reserved: number[] };
}
export interface PropOut {
  type: number;
  requestedHandleTypes: number;
  location: LocationIn;
}

/** A fresh CUmemAllocationProp, zeroed but for what is given. */
export function makeProp(locationType: number, id: number, handleTypes: number): PropIn {
  return {
    type: 1, // CU_MEM_ALLOCATION_TYPE_PINNED
    requestedHandleTypes: handleTypes,
    location: { type: locationType, id },
    win32HandleMetaData: 0,
    allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0, reserved: [0, 0, 0, 0] },
  };
}

function u64(v: unknown): U64 {
  if (typeof v === 'bigint') return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  return v as number;
}

/**
 * The driver functions vmmkit's backend calls, each throwing a
 * CudaDriverError instead of returning a code. Method names drop the `_v2`
 * suffixes; arguments are the C ones without the out-parameter.
 */
export class CheckedCuda {
  readonly #d: { readonly [K in DriverSymbol]: Raw };
  readonly #out: unknown[] = [0];
  readonly #out2: unknown[] = [0];
  readonly #name = Buffer.alloc(256);
  readonly #shareable = Buffer.alloc(64);
  /** One access descriptor, rewritten per cuMemSetAccess (one device per call, as the Backend asks). */
  readonly #desc = [{ location: { type: 1, id: 0 }, flags: 0 }];
  readonly #loc: LocationIn = { type: 1, id: 0 };

  constructor(readonly driver: CudaDriver) {
    this.#d = driver as unknown as { readonly [K in DriverSymbol]: Raw };
  }

  #check(fn: string, code: number): void {
    if (code !== 0) throw new CudaDriverError(fn, code);
  }

  init(): void {
    this.#check('cuInit', this.#d.cuInit(0));
  }
  driverVersion(): number {
    this.#check('cuDriverGetVersion', this.#d.cuDriverGetVersion(this.#out));
    return Number(this.#out[0]);
  }
  deviceGet(ordinal: number): number {
    this.#check('cuDeviceGet', this.#d.cuDeviceGet(this.#out, ordinal));
    return Number(this.#out[0]);
  }
  deviceCount(): number {
    this.#check('cuDeviceGetCount', this.#d.cuDeviceGetCount(this.#out));
    return Number(this.#out[0]);
  }
  deviceName(dev: number): string {
    const buf = this.#name;
    buf.fill(0);
    this.#check('cuDeviceGetName', this.#d.cuDeviceGetName(buf, buf.length, dev));
    const end = buf.indexOf(0);
    return buf.toString('utf8', 0, end < 0 ? buf.length : end);
  }
  deviceTotalMem(dev: number): number {
    this.#check('cuDeviceTotalMem', this.#d.cuDeviceTotalMem_v2(this.#out, dev));
    return Number(this.#out[0]);
  }
  primaryCtxRetain(dev: number): U64 {
    this.#check('cuDevicePrimaryCtxRetain', this.#d.cuDevicePrimaryCtxRetain(this.#out, dev));
    return u64(this.#out[0]);
  }
  primaryCtxRelease(dev: number): void {
    this.#check('cuDevicePrimaryCtxRelease', this.#d.cuDevicePrimaryCtxRelease_v2(dev));
  }
  ctxSetCurrent(ctx: U64): void {
    this.#check('cuCtxSetCurrent', this.#d.cuCtxSetCurrent(ctx));
  }
  ctxGetCurrent(): U64 {
    this.#check('cuCtxGetCurrent', this.#d.cuCtxGetCurrent(this.#out));
    return u64(this.#out[0]);
  }
  ctxSynchronize(): void {
    this.#check('cuCtxSynchronize', this.#d.cuCtxSynchronize());
  }
  granularity(prop: PropIn, option: number): number {
    this.#check(
      'cuMemGetAllocationGranularity',
      this.#d.cuMemGetAllocationGranularity(this.#out, prop, option),
    );
    return Number(this.#out[0]);
  }
  addressReserve(size: number, alignment: number, addr: number): number {
    this.#check('cuMemAddressReserve', this.#d.cuMemAddressReserve(this.#out, size, alignment, addr, 0));
    return Number(this.#out[0]);
  }
  addressFree(ptr: number, size: number): void {
    this.#check('cuMemAddressFree', this.#d.cuMemAddressFree(ptr, size));
  }
  create(size: number, prop: PropIn): U64 {
    this.#check('cuMemCreate', this.#d.cuMemCreate(this.#out, size, prop, 0));
    return u64(this.#out[0]);
  }
  release(handle: U64): void {
    this.#check('cuMemRelease', this.#d.cuMemRelease(handle));
  }
  map(ptr: number, size: number, offset: number, handle: U64): void {
    this.#check('cuMemMap', this.#d.cuMemMap(ptr, size, offset, handle, 0));
  }
  unmap(ptr: number, size: number): void {
    this.#check('cuMemUnmap', this.#d.cuMemUnmap(ptr, size));
  }
  /** Set one device's access (CU_MEM_LOCATION_TYPE_DEVICE) over [ptr, ptr + size). */
  setAccess(ptr: number, size: number, device: number, flags: number): void {
    const desc = this.#desc[0];
    desc.location.id = device;
    desc.flags = flags;
    this.#check('cuMemSetAccess', this.#d.cuMemSetAccess(ptr, size, this.#desc, 1));
  }
  getAccess(device: number, ptr: number): number {
    this.#loc.id = device;
    this.#check('cuMemGetAccess', this.#d.cuMemGetAccess(this.#out, this.#loc, ptr));
    return Number(this.#out[0]);
  }
  retainAllocationHandle(ptr: number): U64 {
    this.#check('cuMemRetainAllocationHandle', this.#d.cuMemRetainAllocationHandle(this.#out, ptr));
    return u64(this.#out[0]);
  }
  propertiesFromHandle(handle: U64): PropOut {
    const prop: Record<string, unknown> = {};
    this.#check(
      'cuMemGetAllocationPropertiesFromHandle',
      this.#d.cuMemGetAllocationPropertiesFromHandle(prop, handle),
    );
    const loc = prop.location as LocationIn;
    return {
      type: prop.type as number,
      requestedHandleTypes: prop.requestedHandleTypes as number,
      location: { type: loc.type, id: loc.id },
    };
  }
  /** Export as a POSIX file descriptor (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR). */
  exportFd(handle: U64): number {
    this.#shareable.fill(0);
    this.#check(
      'cuMemExportToShareableHandle',
      this.#d.cuMemExportToShareableHandle(this.#shareable, handle, 1, 0),
    );
    return this.#shareable.readInt32LE(0);
  }
  importFd(fd: number): U64 {
    this.#check('cuMemImportFromShareableHandle', this.#d.cuMemImportFromShareableHandle(this.#out, fd, 1));
    return u64(this.#out[0]);
  }
  memGetInfo(): { free: number; total: number } {
    this.#check('cuMemGetInfo', this.#d.cuMemGetInfo_v2(this.#out, this.#out2));
    return { free: Number(this.#out[0]), total: Number(this.#out2[0]) };
  }
  memcpyHtoD(dst: number, src: Uint8Array, n: number): void {
    this.#check('cuMemcpyHtoD', this.#d.cuMemcpyHtoD_v2(dst, src, n));
  }
  memcpyDtoH(dst: Uint8Array, src: number, n: number): void {
    this.#check('cuMemcpyDtoH', this.#d.cuMemcpyDtoH_v2(dst, src, n));
  }
  memcpyDtoD(dst: number, src: number, n: number): void {
    this.#check('cuMemcpyDtoD', this.#d.cuMemcpyDtoD_v2(dst, src, n));
  }
  memcpyHtoDAsync(dst: number, src: Uint8Array, n: number, stream: U64): void {
    this.#check('cuMemcpyHtoDAsync', this.#d.cuMemcpyHtoDAsync_v2(dst, src, n, stream));
  }
  memcpyDtoHAsync(dst: Uint8Array, src: number, n: number, stream: U64): void {
    this.#check('cuMemcpyDtoHAsync', this.#d.cuMemcpyDtoHAsync_v2(dst, src, n, stream));
  }
  memcpyDtoDAsync(dst: number, src: number, n: number, stream: U64): void {
    this.#check('cuMemcpyDtoDAsync', this.#d.cuMemcpyDtoDAsync_v2(dst, src, n, stream));
  }
  memsetD8(dst: number, value: number, n: number): void {
    this.#check('cuMemsetD8', this.#d.cuMemsetD8_v2(dst, value, n));
  }
  memsetD8Async(dst: number, value: number, n: number, stream: U64): void {
    this.#check('cuMemsetD8Async', this.#d.cuMemsetD8Async(dst, value, n, stream));
  }
  streamCreate(flags: number): U64 {
    this.#check('cuStreamCreate', this.#d.cuStreamCreate(this.#out, flags));
    return u64(this.#out[0]);
  }
  streamSynchronize(stream: U64): void {
    this.#check('cuStreamSynchronize', this.#d.cuStreamSynchronize(stream));
  }
  streamDestroy(stream: U64): void {
    this.#check('cuStreamDestroy', this.#d.cuStreamDestroy_v2(stream));
  }
}
