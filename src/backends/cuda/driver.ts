/**
 * The raw CUDA driver: libcuda loaded through koffi, one JS function per entry
 * of DRIVER_API, and `createRawCuda`, a C-shaped object with the same method
 * signatures as vmmkit's CUDA flavor that passes every call straight to the
 * driver. No vmmkit logic lives here: the conformance cases run against this
 * object on the GPU to record what the real driver answers.
 */

import type { LibraryHandle } from 'koffi';
import type { Box, Size } from '../../c-api/arguments.js';
import type {
  CUctxCreateParams,
  CUmemAccessDesc,
  CUmemAllocationFlags,
  CUmemAllocationProp,
  CUmemLocation,
  CuCtxCreateArguments,
} from '../../c-api/cuda-structs.js';
import {
  DRIVER_API,
  type DriverSymbol,
  type DriverTypes,
  declareDriverTypes,
  OPTIONAL_SYMBOLS,
} from './driver-api.js';
import { koffi } from './koffi.js';
import type { ProcessMemory } from './process-memory.js';

/** Thrown when no CUDA driver library can be loaded (no NVIDIA driver on this machine). */
export class CudaDriverUnavailableError extends Error {
  override readonly name = 'CudaDriverUnavailableError';
  constructor(
    readonly librariesTried: readonly string[],
    readonly reasons: readonly string[],
  ) {
    super(
      `CUDA driver unavailable: could not load ${librariesTried.map((p, i) => `${p} (${reasons[i]})`).join(', ')}`,
    );
  }
}

export const DEFAULT_LIBRARY_PATHS: readonly string[] = ['libcuda.so.1', 'libcuda.so'];

type RawFunction = (...args: unknown[]) => number;

/** One raw function per declared driver symbol; each returns the CUresult number. */
export type CudaDriver = { readonly [K in DriverSymbol]: RawFunction } & {
  /** The library path that loaded. */
  readonly libraryPath: string;
  readonly types: DriverTypes;
  /**
   * A stand-in for libcuda (conformance/gpu/fake-driver.ts) whose addresses
   * are not this process's memory plays the CPU's loads and stores too;
   * libcuda itself has none, and the backend then uses libc's.
   */
  readonly processMemory?: ProcessMemory;
  /** A declared function's address in the loaded library (Note [Fast cycle calls]); a stand-in has none. */
  readonly symbolAddress?: (symbol: DriverSymbol) => bigint;
};

/** Load libcuda and bind every function of DRIVER_API. */
export function loadCudaDriver(libraryPaths: readonly string[] = DEFAULT_LIBRARY_PATHS): CudaDriver {
  const reasons: string[] = [];
  let lib: LibraryHandle | undefined;
  let libraryPath = '';
  for (const path of libraryPaths) {
    try {
      lib = koffi().load(path);
      libraryPath = path;
      break;
    } catch (e) {
      reasons.push(e instanceof Error ? e.message : String(e));
    }
  }
  if (!lib) throw new CudaDriverUnavailableError(libraryPaths, reasons);
  const types = declareDriverTypes();
  const loaded = lib;
  const symbolAddress = (symbol: DriverSymbol): bigint => koffi().address(loaded.symbol(symbol));
  const fns: Record<string, unknown> = { libraryPath, types, symbolAddress };
  for (const [symbol, prototype] of Object.entries(DRIVER_API)) {
    try {
      fns[symbol] = lib.func(prototype);
    } catch (e) {
      if (!OPTIONAL_SYMBOLS.has(symbol as DriverSymbol)) throw e;
      fns[symbol] = () => CUDA_ERROR_NOT_FOUND;
    }
  }
  return fns as CudaDriver;
}

/** The driver, or undefined where there is none (no GPU, no libcuda): for code and tests that may run without one. */
export function findCudaDriver(libraryPaths?: readonly string[]): CudaDriver | undefined {
  try {
    return loadCudaDriver(libraryPaths);
  } catch (e) {
    if (e instanceof CudaDriverUnavailableError) return undefined;
    throw e;
  }
}

/** The C-shaped CUDA surface, as vmmkit's CUDA flavor and the raw driver both offer it. */
export interface RawCuda {
  cuInit(flags: number): number;
  cuDriverGetVersion(version: Box<number>): number;
  cuDeviceGet(device: Box<number>, ordinal: number): number;
  cuDeviceGetCount(count: Box<number>): number;
  cuDeviceGetName(name: Box<string>, len: number, dev: number): number;
  cuDeviceTotalMem(bytes: Box<number>, dev: number): number;
  cuDeviceGetAttribute(pi: Box<number> | null, attrib: number, dev: number): number;
  cuDeviceCanAccessPeer(canAccessPeer: Box<number> | null, dev: number, peerDev: number): number;
  cuDevicePrimaryCtxRetain(ctx: Box<bigint>, dev: number): number;
  cuDevicePrimaryCtxRelease(dev: number): number;
  cuDevicePrimaryCtxGetState(dev: number, flags: Box<number> | null, active: Box<number> | null): number;
  cuDevicePrimaryCtxReset(dev: number): number;
  cuCtxSetCurrent(ctx: bigint): number;
  cuCtxGetCurrent(ctx: Box<bigint>): number;
  cuCtxGetDevice(device: Box<number> | null): number;
  cuCtxSynchronize(): number;
  /** CUDA 13.0's: the device of `ctx`, the current context's for NULL (cuda.h keeps cuCtxGetDevice as it was). */
  cuCtxGetDevice_v2(device: Box<number> | null, ctx: bigint): number;
  /** CUDA 13.0's: wait for `ctx`'s work, the current context's for NULL. */
  cuCtxSynchronize_v2(ctx: bigint): number;
  cuCtxPushCurrent(ctx: bigint): number;
  cuCtxPopCurrent(pctx: Box<bigint> | null): number;
  cuCtxCreate(pctx: Box<bigint>, ...args: CuCtxCreateArguments): number;
  cuCtxCreate_v2(pctx: Box<bigint>, flags: number, dev: number): number;
  cuCtxCreate_v4(
    pctx: Box<bigint>,
    ctxCreateParams: CUctxCreateParams | null,
    flags: number,
    dev: number,
  ): number;
  cuCtxDestroy(ctx: bigint): number;
  cuCtxEnablePeerAccess(peerContext: bigint, flags: number): number;
  cuCtxDisablePeerAccess(peerContext: bigint): number;
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
  /** Either box may be null, as either pointer may be NULL in C. */
  cuMemGetAddressRange(pbase: Box<bigint> | null, psize: Box<number> | null, dptr: Size): number;
  /** Pointer-valued attributes come back as bigints, the others as numbers (pointerAttributeValue). */
  /** ptr may be a host buffer, passed as its address, as C passes (CUdeviceptr)hostPointer. */
  cuPointerGetAttribute(data: Box<number | bigint> | null, attribute: number, ptr: Size | Uint8Array): number;
  cuPointerGetAttributes(
    numAttributes: number,
    attributes: readonly number[],
    data: readonly Box<number | bigint>[],
    ptr: Size,
  ): number;
  cuMemAllocHost(pp: Box<Uint8Array | null> | null, bytesize: Size): number;
  cuMemFreeHost(p: Uint8Array): number;
  cuMemHostAlloc(pp: Box<Uint8Array | null> | null, bytesize: Size, flags: number): number;
  cuMemHostGetFlags(pFlags: Box<number> | null, p: Uint8Array): number;
  /** cuda.h (12.x and 13.0) maps the plain name to _v2; a host pointer is a buffer or, under UVA, its address. */
  cuMemHostGetDevicePointer(pdptr: Box<bigint> | null, p: Uint8Array | Size, flags: number): number;
  cuMemHostGetDevicePointer_v2(pdptr: Box<bigint> | null, p: Uint8Array | Size, flags: number): number;
  cuMemcpy(dst: Size | Uint8Array, src: Size | Uint8Array, n: Size): number;
  cuMemcpyAsync(dst: Size | Uint8Array, src: Size | Uint8Array, n: Size, stream: Size): number;
  cuMemcpyHtoD(dst: Size, src: Uint8Array, n: Size): number;
  cuMemcpyDtoH(dst: Uint8Array, src: Size, n: Size): number;
  cuMemcpyDtoD(dst: Size, src: Size, n: Size): number;
  cuMemcpyPeer(dst: Size, dstContext: bigint, src: Size, srcContext: bigint, n: Size): number;
  cuMemcpyHtoDAsync(dst: Size, src: Uint8Array, n: Size, stream: Size): number;
  cuMemcpyDtoHAsync(dst: Uint8Array, src: Size, n: Size, stream: Size): number;
  cuMemcpyDtoDAsync(dst: Size, src: Size, n: Size, stream: Size): number;
  cuMemsetD8(ptr: Size, value: number, n: Size): number;
  cuMemsetD8Async(ptr: Size, value: number, n: Size, stream: Size): number;
  cuMemsetD16(ptr: Size, value: number, n: Size): number;
  cuMemsetD32(ptr: Size, value: number, n: Size): number;
  cuStreamCreate(stream: Box<bigint>, flags: number): number;
  cuStreamSynchronize(stream: Size): number;
  cuStreamQuery(stream: Size): number;
  cuStreamDestroy(stream: Size): number;
  cuStreamIsCapturing(stream: Size, captureStatus: Box<number> | null): number;
  cuThreadExchangeStreamCaptureMode(mode: Box<number> | null): number;
  cuEventCreate(phEvent: Box<bigint>, flags: number): number;
  cuEventRecord(hEvent: Size, hStream: Size): number;
  cuEventRecordWithFlags(hEvent: Size, hStream: Size, flags: number): number;
  cuEventQuery(hEvent: Size): number;
  cuEventSynchronize(hEvent: Size): number;
  cuEventDestroy(hEvent: Size): number;
  cuEventElapsedTime(pMilliseconds: Box<number>, hStart: Size, hEnd: Size): number;
  cuEventElapsedTime_v2(pMilliseconds: Box<number>, hStart: Size, hEnd: Size): number;
  cuStreamWaitEvent(hStream: Size, hEvent: Size, flags: number): number;
  cuMemsetD16Async(ptr: Size, value: number, n: Size, stream: Size): number;
  cuMemsetD32Async(ptr: Size, value: number, n: Size, stream: Size): number;
  /** cuda.h 13.0's cuStreamBeginCapture is cuStreamBeginCapture_v2: both names, one call. */
  cuStreamBeginCapture(stream: Size, mode: number): number;
  cuStreamBeginCapture_v2(stream: Size, mode: number): number;
  cuStreamEndCapture(stream: Size, graph: Box<bigint> | null): number;
  /** cuda.h 13.0's shape (cuStreamGetCaptureInfo_v3); the dependency and edge arrays are not read: pass null. */
  cuStreamGetCaptureInfo(
    stream: Size,
    captureStatus: Box<number> | null,
    id: Box<bigint> | null,
    graph: Box<bigint> | null,
    dependencies: null,
    edgeData: null,
    numDependencies: Box<number> | null,
  ): number;
  /** cuda.h 13.0's cuGraphInstantiate is cuGraphInstantiateWithFlags: both names, one call. */
  cuGraphInstantiate(exec: Box<bigint> | null, graph: Size, flags: Size): number;
  cuGraphInstantiateWithFlags(exec: Box<bigint> | null, graph: Size, flags: Size): number;
  cuGraphLaunch(exec: Size, stream: Size): number;
  cuGraphDestroy(graph: Size): number;
  cuGraphExecDestroy(exec: Size): number;
  /** Only the count: nodes is NULL. */
  cuGraphGetNodes(graph: Size, nodes: null, numNodes: Box<number> | null): number;
  cuGetErrorName(code: number, str: Box<string>): number;
  cuGetErrorString(code: number, str: Box<string>): number;
}

/**
 * Note [Unsigned reads]
 * CUdeviceptr, size_t, handles, contexts, streams and events are unsigned
 * 64-bit values in C, and the raw binding reads each back from a
 * BigUint64Array slot the driver writes in place (koffi passes a typed
 * array's own bytes): an address at or above 2^63 comes back as that bigint,
 * never negative, and a size above 2^53 as a bigint (toSize). The checked
 * layer reads the same slots as two unsigned 32-bit words (checked.ts).
 * cuMemGetAddressRange's slots start as the boxes' values, so an
 * out-parameter the driver leaves unwritten keeps the box's value, as a C
 * caller's variable would: a case can tell "not written" from NULL.
 */
function asU64(v: unknown): bigint {
  if (typeof v === 'bigint') return BigInt.asUintN(64, v);
  return typeof v === 'number' && Number.isSafeInteger(v) ? BigInt.asUintN(64, BigInt(v)) : 0n;
}

/** What cuGetProcAddress answers for a symbol the driver lacks. */
const CUDA_ERROR_NOT_FOUND = 500;

/**
 * A CUctxCreateParams as C lays it out (driver-api.ts, cuCtxCreate_v4), with
 * the arrays its pointers name; undefined for NULL. The caller keeps the
 * result alive across the call (the bytes hold the arrays' addresses).
 */
function contextParamBytes(
  p: CUctxCreateParams | null | undefined,
): { params: Buffer; affinity: Buffer; cig: Buffer } | undefined {
  if (p === null || p === undefined) return undefined;
  const params = Buffer.alloc(24);
  const entries = p.execAffinityParams ?? [];
  const affinity = Buffer.alloc(Math.max(1, entries.length) * 8);
  entries.forEach((e, i) => {
    affinity.writeInt32LE(e.type, i * 8);
    affinity.writeUInt32LE(e.param?.smCount?.val ?? 0, i * 8 + 4);
  });
  const cig = Buffer.alloc(16);
  if (p.execAffinityParams) params.writeBigUInt64LE(koffi().address(affinity), 0);
  params.writeInt32LE(p.numExecAffinityParams ?? 0, 8);
  if (p.cigParams) {
    cig.writeInt32LE(p.cigParams.sharedDataType, 0);
    cig.writeBigUInt64LE(BigInt(p.cigParams.sharedData ?? 0), 8);
    params.writeBigUInt64LE(koffi().address(cig), 16);
  }
  return { params, affinity, cig };
}

/** A size from C: a number when exact, else a bigint. */
function toSize(v: unknown): number {
  if (typeof v === 'bigint')
    return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : (v as unknown as number);
  return Number(v);
}
function toBig(v: unknown): bigint {
  return typeof v === 'bigint' ? v : BigInt(v as number);
}

/** cuda.h's CUpointer_attribute values whose data is a pointer (CUcontext, addresses, a pool handle). */
const POINTER_VALUED_ATTRIBUTES: ReadonlySet<number> = new Set([1, 3, 4, 11, 17, 19]);
const CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
/** Bytes given to the driver for one pointer attribute's value: the largest (P2P tokens) is 16. */
const ATTRIBUTE_BYTES = 64;

/**
 * A pointer attribute's value as the driver wrote it into zeroed bytes: a
 * bigint for a pointer, a signed int for the device ordinal, an unsigned int
 * for the memory type, a 64-bit unsigned number for the rest (booleans, sizes,
 * masks and ids, of 1 to 8 bytes, all read right from zeroed little-endian bytes).
 */
export function pointerAttributeValue(attribute: number, bytes: Buffer): number | bigint {
  if (POINTER_VALUED_ATTRIBUTES.has(attribute)) return bytes.readBigUInt64LE(0);
  if (attribute === CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return bytes.readInt32LE(0);
  if (attribute === CU_POINTER_ATTRIBUTE_MEMORY_TYPE) return bytes.readUInt32LE(0);
  return toSize(bytes.readBigUInt64LE(0));
}

/** Copy a caller's prop into the reusable struct object, zero-filling what it leaves out. */
function fillProp(dst: Record<string, unknown>, src: CUmemAllocationProp): Record<string, unknown> {
  dst.type = src.type;
  dst.requestedHandleTypes = src.requestedHandleTypes ?? 0;
  const loc = dst.location as CUmemLocation;
  loc.type = src.location?.type ?? 0;
  loc.id = src.location?.id ?? 0;
  dst.win32HandleMetaData = src.win32HandleMetaData ?? 0;
  const f = dst.allocFlags as Record<string, unknown>;
  f.compressionType = src.allocFlags?.compressionType ?? 0;
  f.gpuDirectRDMACapable = src.allocFlags?.gpuDirectRDMACapable ?? 0;
  f.usage = src.allocFlags?.usage ?? 0;
  return dst;
}

/**
 * A C-shaped object over the real driver, with the method signatures of
 * vmmkit's CUDA flavor. Out-parameter arrays and the struct scratch objects
 * are reused across calls, so the common calls allocate little.
 */
export function createRawCuda(driver: CudaDriver): RawCuda {
  const d = driver;
  const out: unknown[] = [0];
  // Addresses, sizes and handles come back through 64-bit unsigned slots (Note [Unsigned reads]).
  const u64 = new BigUint64Array(2);
  const u64b = new BigUint64Array(u64.buffer, 8, 1);
  // Strings need their own array: koffi writes into a string element in place instead of replacing it.
  const outStr: unknown[] = [null];
  const errorText = (fn: RawFunction, code: number, box: Box<string>): number => {
    outStr[0] = null;
    return setOk(fn(code, outStr), box, () => String(outStr[0]));
  };
  const propIn: Record<string, unknown> = {
    type: 0,
    requestedHandleTypes: 0,
    location: { type: 0, id: 0 },
    win32HandleMetaData: 0,
    allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0, reserved: [0, 0, 0, 0] },
  };
  const locIn: CUmemLocation = { type: 0, id: 0 };
  // Calls cuda.h exports under two names (the plain one #defined to the versioned symbol): one function each.
  // The plain libcuda export of cuMemHostGetDevicePointer is the 32-bit CUdeviceptr form of CUDA before 3.2.
  const hostDevicePointer: RawCuda['cuMemHostGetDevicePointer'] = (box, p, flags) =>
    setIfBox(d.cuMemHostGetDevicePointer_v2(orNull(box, u64), addressOf(p), flags), box, () => u64[0]!);
  const beginCapture: RawCuda['cuStreamBeginCapture'] = (stream, mode) =>
    d.cuStreamBeginCapture_v2(stream, mode);
  const instantiate: RawCuda['cuGraphInstantiate'] = (box, graph, flags) =>
    setIfBox(d.cuGraphInstantiateWithFlags(orNull(box, u64), graph, flags), box, () => u64[0]!);
  const shareable = Buffer.alloc(64);
  const attributeBytes = Buffer.alloc(ATTRIBUTE_BYTES);
  /** Host addresses of the buffers cuMemAllocHost handed out (a 0-byte view has no address of its own). */
  const hostAddresses = new WeakMap<Uint8Array, bigint>();
  const setOk = <T>(code: number, box: Box<T>, value: () => T): number => {
    if (code === 0) box.value = value();
    return code;
  };
  // For the calls added for ported programs, a null box is passed as C's NULL, so the cases can ask
  // the driver what a NULL out-parameter gives.
  const orNull = <T, S>(box: Box<T> | null, slot: S): S | null => (box === null ? null : slot);
  const setIfBox = <T>(code: number, box: Box<T> | null, value: () => T): number => {
    if (code === 0 && box !== null) box.value = value();
    return code;
  };
  /** A pinned buffer the driver handed out (cuMemAllocHost, cuMemHostAlloc) as a view over it, remembered by address. */
  const hostView = (code: number, box: Box<Uint8Array | null> | null, bytesize: Size): number => {
    if (code === 0 && box !== null) {
      const address = u64[0]!;
      const n = Number(bytesize);
      const view = n > 0 ? new Uint8Array(koffi().view(address, n)) : new Uint8Array(0);
      hostAddresses.set(view, address);
      box.value = view;
    }
    return code;
  };
  /** A unified-addressing operand: a device pointer as it is, a host buffer as its address. */
  const addressOf = (p: Size | Uint8Array): Size =>
    p instanceof Uint8Array
      ? (hostAddresses.get(p) ?? koffi().address(Buffer.from(p.buffer, p.byteOffset, p.byteLength)))
      : p;
  const createV2 = (box: Box<bigint> | null, flags: number, dev: number): number =>
    setIfBox(d.cuCtxCreate_v2(orNull(box, u64), flags, dev), box, () => u64[0]!);
  const createV4 = (
    box: Box<bigint> | null,
    params: CUctxCreateParams | null,
    flags: number,
    dev: number,
  ): number => {
    // c holds the arrays its bytes point at; the call is synchronous and calls no JavaScript.
    const c = contextParamBytes(params);
    return setIfBox(d.cuCtxCreate_v4(orNull(box, u64), c?.params ?? null, flags, dev), box, () => u64[0]!);
  };
  return {
    cuInit: (flags) => d.cuInit(flags),
    cuDriverGetVersion: (box) => setOk(d.cuDriverGetVersion(out), box, () => Number(out[0])),
    cuDeviceGet: (box, ordinal) => setOk(d.cuDeviceGet(out, ordinal), box, () => Number(out[0])),
    cuDeviceGetCount: (box) => setOk(d.cuDeviceGetCount(out), box, () => Number(out[0])),
    cuDeviceGetName: (box, len, dev) => {
      const buf = Buffer.alloc(Math.max(0, len));
      return setOk(d.cuDeviceGetName(buf, len, dev), box, () => {
        const end = buf.indexOf(0);
        return buf.toString('utf8', 0, end < 0 ? buf.length : end);
      });
    },
    cuDeviceTotalMem: (box, dev) => setOk(d.cuDeviceTotalMem_v2(u64, dev), box, () => toSize(u64[0])),
    cuDeviceGetAttribute: (box, attrib, dev) =>
      setIfBox(d.cuDeviceGetAttribute(orNull(box, out), attrib, dev), box, () => Number(out[0])),
    cuDeviceCanAccessPeer: (box, dev, peerDev) =>
      setIfBox(d.cuDeviceCanAccessPeer(orNull(box, out), dev, peerDev), box, () => Number(out[0])),
    cuCtxEnablePeerAccess: (peer, flags) => d.cuCtxEnablePeerAccess(peer, flags),
    cuCtxDisablePeerAccess: (peer) => d.cuCtxDisablePeerAccess(peer),
    cuDevicePrimaryCtxRetain: (box, dev) => setOk(d.cuDevicePrimaryCtxRetain(u64, dev), box, () => u64[0]!),
    cuDevicePrimaryCtxRelease: (dev) => d.cuDevicePrimaryCtxRelease_v2(dev),
    cuDevicePrimaryCtxGetState: (dev, flags, active) => {
      const slots: unknown[] = [0];
      const code = d.cuDevicePrimaryCtxGetState(dev, orNull(flags, out), orNull(active, slots));
      if (code === 0 && flags !== null) flags.value = Number(out[0]);
      if (code === 0 && active !== null) active.value = Number(slots[0]);
      return code;
    },
    cuDevicePrimaryCtxReset: (dev) => d.cuDevicePrimaryCtxReset_v2(dev),
    cuCtxSetCurrent: (ctx) => d.cuCtxSetCurrent(ctx),
    cuCtxGetCurrent: (box) => setOk(d.cuCtxGetCurrent(u64), box, () => u64[0]!),
    cuCtxGetDevice: (box) => setIfBox(d.cuCtxGetDevice(orNull(box, out)), box, () => Number(out[0])),
    cuCtxSynchronize: () => d.cuCtxSynchronize(),
    cuCtxGetDevice_v2: (box, ctx) =>
      setIfBox(d.cuCtxGetDevice_v2(orNull(box, out), ctx), box, () => Number(out[0])),
    cuCtxSynchronize_v2: (ctx) => d.cuCtxSynchronize_v2(ctx),
    cuCtxPushCurrent: (ctx) => d.cuCtxPushCurrent_v2(ctx),
    cuCtxPopCurrent: (box) => setIfBox(d.cuCtxPopCurrent_v2(orNull(box, u64)), box, () => u64[0]!),
    // Four arguments are CUDA 13.0's form, three the earlier headers' (Note [Context creation parameters]).
    cuCtxCreate: (box: Box<bigint>, ...rest: CuCtxCreateArguments) =>
      rest.length === 3
        ? createV4(box, rest[0] as CUctxCreateParams | null, rest[1] as number, rest[2] as number)
        : createV2(box, rest[0] as number, rest[1] as number),
    cuCtxCreate_v2: (box, flags, dev) => createV2(box, flags, dev),
    cuCtxCreate_v4: (box, params, flags, dev) => createV4(box, params, flags, dev),
    cuCtxDestroy: (ctx) => d.cuCtxDestroy_v2(ctx),
    cuMemGetAllocationGranularity: (box, prop, option) =>
      setOk(d.cuMemGetAllocationGranularity(u64, fillProp(propIn, prop), option), box, () => toSize(u64[0])),
    cuMemAddressReserve: (box, size, alignment, addr, flags) =>
      setOk(d.cuMemAddressReserve(u64, size, alignment, addr, flags), box, () => u64[0]!),
    cuMemAddressFree: (ptr, size) => d.cuMemAddressFree(ptr, size),
    cuMemCreate: (box, size, prop, flags) =>
      setOk(d.cuMemCreate(u64, size, fillProp(propIn, prop), flags), box, () => u64[0]!),
    cuMemRelease: (handle) => d.cuMemRelease(handle),
    cuMemMap: (ptr, size, offset, handle, flags) => d.cuMemMap(ptr, size, offset, handle, flags),
    cuMemUnmap: (ptr, size) => d.cuMemUnmap(ptr, size),
    cuMemSetAccess: (ptr, size, descs, count) => {
      // The driver reads `count` descriptors: never hand it fewer than that (pad with zeroed ones).
      const n = Number(count);
      let arr: readonly CUmemAccessDesc[] = descs;
      if (descs.length < n) {
        arr = [...descs];
        while ((arr as CUmemAccessDesc[]).length < n)
          (arr as CUmemAccessDesc[]).push({ location: { type: 0, id: 0 }, flags: 0 });
      }
      if (arr.length === 0) arr = [{ location: { type: 0, id: 0 }, flags: 0 }];
      return d.cuMemSetAccess(ptr, size, arr, count);
    },
    cuMemGetAccess: (box, location, ptr) => {
      locIn.type = location.type;
      locIn.id = location.id;
      return setOk(d.cuMemGetAccess(u64, locIn, ptr), box, () => Number(u64[0]));
    },
    cuMemRetainAllocationHandle: (box, ptr) =>
      setOk(d.cuMemRetainAllocationHandle(u64, ptr), box, () => u64[0]!),
    cuMemGetAllocationPropertiesFromHandle: (box, handle) => {
      const prop: Record<string, unknown> = {};
      return setOk(d.cuMemGetAllocationPropertiesFromHandle(prop, handle), box, () => {
        const loc = prop.location as CUmemLocation;
        const f = prop.allocFlags as CUmemAllocationFlags;
        return {
          type: prop.type as number,
          requestedHandleTypes: prop.requestedHandleTypes as number,
          location: { type: loc.type, id: loc.id },
          win32HandleMetaData: toBig(prop.win32HandleMetaData ?? 0),
          allocFlags: {
            compressionType: f.compressionType,
            gpuDirectRDMACapable: f.gpuDirectRDMACapable,
            usage: f.usage,
          },
        };
      });
    },
    cuMemExportToShareableHandle: (box, handle, handleType, flags) => {
      shareable.fill(0);
      // A POSIX fd is an int; other handle types are opaque bytes, of which the first int is shown.
      return setOk(d.cuMemExportToShareableHandle(shareable, handle, handleType, flags), box, () =>
        shareable.readInt32LE(0),
      );
    },
    cuMemImportFromShareableHandle: (box, osHandle, handleType) =>
      setOk(d.cuMemImportFromShareableHandle(u64, osHandle, handleType), box, () => u64[0]!),
    cuMemAlloc: (box, size) => setOk(d.cuMemAlloc_v2(u64, size), box, () => u64[0]!),
    cuMemFree: (ptr) => d.cuMemFree_v2(ptr),
    cuMemGetInfo: (freeBox, totalBox) => {
      const code = d.cuMemGetInfo_v2(u64, u64b);
      if (code === 0) {
        freeBox.value = toSize(u64[0]);
        totalBox.value = toSize(u64b[0]);
      }
      return code;
    },
    // What the driver leaves unwritten keeps the box's value, as C's variable would (Note [Unsigned reads]).
    cuMemGetAddressRange: (pbase, psize, dptr) => {
      const base = (u64[0] = asU64(pbase?.value));
      const size = (u64b[0] = asU64(psize?.value));
      const code = d.cuMemGetAddressRange_v2(pbase ? u64 : null, psize ? u64b : null, dptr);
      if (code === 0) {
        if (pbase && u64[0] !== base) pbase.value = u64[0]!;
        if (psize && u64b[0] !== size) psize.value = toSize(u64b[0]);
      }
      return code;
    },
    cuPointerGetAttribute: (box, attribute, ptr) => {
      attributeBytes.fill(0);
      return setIfBox(
        d.cuPointerGetAttribute(box === null ? null : attributeBytes, attribute, addressOf(ptr)),
        box,
        () => pointerAttributeValue(attribute, attributeBytes),
      );
    },
    cuPointerGetAttributes: (numAttributes, attributes, data, ptr) => {
      // C's arrays: the attribute numbers, and one pointer per value (NULL for a null box).
      const n = Math.max(0, Math.min(Number(numAttributes) | 0, attributes.length, data.length));
      const names = Int32Array.from(attributes.slice(0, Math.max(n, 1)));
      const values = Buffer.alloc(Math.max(n, 1) * ATTRIBUTE_BYTES);
      const pointers = new BigUint64Array(Math.max(n, 1));
      const base = koffi().address(values);
      for (let i = 0; i < n; i++) pointers[i] = data[i] ? base + BigInt(i * ATTRIBUTE_BYTES) : 0n;
      const code = d.cuPointerGetAttributes(numAttributes, names, pointers, ptr);
      if (code === 0) {
        for (let i = 0; i < n; i++) {
          const box = data[i];
          if (box) box.value = pointerAttributeValue(names[i]!, values.subarray(i * ATTRIBUTE_BYTES));
        }
      }
      return code;
    },
    cuMemAllocHost: (box, bytesize) =>
      hostView(d.cuMemAllocHost_v2(orNull(box, u64), bytesize), box, bytesize),
    cuMemHostAlloc: (box, bytesize, flags) =>
      hostView(d.cuMemHostAlloc(orNull(box, u64), bytesize, flags), box, bytesize),
    cuMemHostGetFlags: (box, p) =>
      // An unsigned int: the low 32 bits of the slot.
      setIfBox(d.cuMemHostGetFlags(orNull(box, u64), hostAddresses.get(p) ?? p), box, () =>
        Number(u64[0]! & 0xffff_ffffn),
      ),
    cuMemHostGetDevicePointer: hostDevicePointer,
    cuMemHostGetDevicePointer_v2: hostDevicePointer,
    cuMemcpy: (dst, src, n) => d.cuMemcpy(addressOf(dst), addressOf(src), n),
    cuMemcpyAsync: (dst, src, n, stream) => d.cuMemcpyAsync(addressOf(dst), addressOf(src), n, stream),
    // A buffer cuMemAllocHost gave is passed as its host address; any other Uint8Array as its own bytes' address.
    cuMemFreeHost: (p) => d.cuMemFreeHost(hostAddresses.get(p) ?? p),
    cuMemcpyHtoD: (dst, src, n) => d.cuMemcpyHtoD_v2(dst, src, n),
    cuMemcpyDtoH: (dst, src, n) => d.cuMemcpyDtoH_v2(dst, src, n),
    cuMemcpyDtoD: (dst, src, n) => d.cuMemcpyDtoD_v2(dst, src, n),
    cuMemcpyPeer: (dst, dstContext, src, srcContext, n) =>
      d.cuMemcpyPeer(dst, dstContext, src, srcContext, n),
    cuMemcpyHtoDAsync: (dst, src, n, stream) => d.cuMemcpyHtoDAsync_v2(dst, src, n, stream),
    cuMemcpyDtoHAsync: (dst, src, n, stream) => d.cuMemcpyDtoHAsync_v2(dst, src, n, stream),
    cuMemcpyDtoDAsync: (dst, src, n, stream) => d.cuMemcpyDtoDAsync_v2(dst, src, n, stream),
    cuMemsetD8: (ptr, value, n) => d.cuMemsetD8_v2(ptr, value, n),
    cuMemsetD8Async: (ptr, value, n, stream) => d.cuMemsetD8Async(ptr, value, n, stream),
    cuMemsetD16: (ptr, value, n) => d.cuMemsetD16_v2(ptr, value, n),
    cuMemsetD32: (ptr, value, n) => d.cuMemsetD32_v2(ptr, value, n),
    cuStreamCreate: (box, flags) => setOk(d.cuStreamCreate(u64, flags), box, () => u64[0]!),
    cuStreamSynchronize: (stream) => d.cuStreamSynchronize(stream),
    cuStreamQuery: (stream) => d.cuStreamQuery(stream),
    cuStreamDestroy: (stream) => d.cuStreamDestroy_v2(stream),
    cuStreamIsCapturing: (stream, box) =>
      setIfBox(d.cuStreamIsCapturing(stream, orNull(box, out)), box, () => Number(out[0])),
    cuThreadExchangeStreamCaptureMode: (box) => {
      const mode = [box === null ? 0 : box.value];
      return setIfBox(d.cuThreadExchangeStreamCaptureMode(orNull(box, mode)), box, () => Number(mode[0]));
    },
    cuEventCreate: (box, flags) => setIfBox(d.cuEventCreate(orNull(box, u64), flags), box, () => u64[0]!),
    cuEventRecord: (event, stream) => d.cuEventRecord(event, stream),
    cuEventRecordWithFlags: (event, stream, flags) => d.cuEventRecordWithFlags(event, stream, flags),
    cuEventQuery: (event) => d.cuEventQuery(event),
    cuEventSynchronize: (event) => d.cuEventSynchronize(event),
    cuEventDestroy: (event) => d.cuEventDestroy_v2(event),
    cuEventElapsedTime: (box, start, end) =>
      setIfBox(d.cuEventElapsedTime(orNull(box, out), start, end), box, () => Number(out[0])),
    cuEventElapsedTime_v2: (box, start, end) =>
      setIfBox(d.cuEventElapsedTime_v2(orNull(box, out), start, end), box, () => Number(out[0])),
    cuStreamWaitEvent: (stream, event, flags) => d.cuStreamWaitEvent(stream, event, flags),
    cuMemsetD16Async: (ptr, value, n, stream) => d.cuMemsetD16Async(ptr, value, n, stream),
    cuMemsetD32Async: (ptr, value, n, stream) => d.cuMemsetD32Async(ptr, value, n, stream),
    cuStreamBeginCapture: beginCapture,
    cuStreamBeginCapture_v2: beginCapture,
    cuStreamEndCapture: (stream, box) =>
      setIfBox(d.cuStreamEndCapture(stream, orNull(box, u64)), box, () => u64[0]!),
    cuStreamGetCaptureInfo: (stream, captureStatus, id, graph, _dependencies, _edgeData, numDependencies) => {
      const st = new Int32Array(1);
      const slots = new BigUint64Array(3);
      const code = d.cuStreamGetCaptureInfo_v3(
        stream,
        orNull(captureStatus, st),
        orNull(id, slots.subarray(0, 1)),
        orNull(graph, slots.subarray(1, 2)),
        null,
        null,
        orNull(numDependencies, slots.subarray(2, 3)),
      );
      if (code === 0) {
        if (captureStatus) captureStatus.value = st[0]!;
        if (id) id.value = slots[0]!;
        if (graph) graph.value = slots[1]!;
        if (numDependencies) numDependencies.value = toSize(slots[2]);
      }
      return code;
    },
    cuGraphInstantiate: instantiate,
    cuGraphInstantiateWithFlags: instantiate,
    cuGraphLaunch: (exec, stream) => d.cuGraphLaunch(exec, stream),
    cuGraphDestroy: (graph) => d.cuGraphDestroy(graph),
    cuGraphExecDestroy: (exec) => d.cuGraphExecDestroy(exec),
    cuGraphGetNodes: (graph, _nodes, box) => {
      u64[0] = 0n;
      return setIfBox(d.cuGraphGetNodes(graph, null, orNull(box, u64)), box, () => toSize(u64[0]));
    },
    cuGetErrorName: (code, box) => errorText(d.cuGetErrorName, code, box),
    cuGetErrorString: (code, box) => errorText(d.cuGetErrorString, code, box),
  };
}
