/**
 * The checked layer over the raw driver (driver.ts): each call's CUresult
 * becomes core's VmmError, through one table, with a message naming the
 * driver function and the CUresult. Nothing else happens here: no vmmkit
 * rules, no bookkeeping. Out-parameters are reused typed arrays and struct
 * arguments are encoded into reused byte buffers (Note [Out-parameters as
 * typed arrays], driver-api.ts): the calls on the hot path allocate nothing,
 * and koffi copies nothing, passing the buffers' own addresses.
 */
import { type ErrorKind, VmmError } from '../../core/errors.js';
import { type CycleCalls, chooseCycleCalls, SCRATCH } from './cycle-calls.js';
import type { CudaDriver } from './driver.js';
import { type DecodedProp, type DriverSymbol, decodeProp, STRUCT_LAYOUT } from './driver-api.js';

const CUDA_ERROR_NOT_READY = 600;

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
  [719, 'CUDA_ERROR_LAUNCH_FAILED'],
  [800, 'CUDA_ERROR_NOT_PERMITTED'],
  [801, 'CUDA_ERROR_NOT_SUPPORTED'],
  [999, 'CUDA_ERROR_UNKNOWN'],
]);

/**
 * CUresult -> core's error kind, for the codes whose meaning does not depend
 * on the call (Note [CUresult kinds per call]). A code not listed here or
 * for its call in CALL_KINDS becomes 'invalid-value' (its name still in the
 * message, and the number in CudaDriverError.result).
 */
export const CU_RESULT_KINDS: ReadonlyMap<number, ErrorKind> = new Map<number, ErrorKind>([
  [1, 'invalid-value'],
  [2, 'out-of-memory'],
  [3, 'not-initialized'],
  [4, 'not-initialized'],
  [100, 'invalid-device'],
  [101, 'invalid-device'],
  [201, 'invalid-context'],
  [500, 'invalid-value'],
  [700, 'access-denied'],
  [719, 'device-fault'],
  [709, 'invalid-context'],
  [800, 'permission-denied'],
  [801, 'not-supported'],
]);

/** The driver calls whose only handle argument is a CUstream (CudaDriverError's function names). */
const STREAM_CALLS = [
  'cuStreamSynchronize',
  'cuStreamDestroy',
  'cuMemcpyHtoDAsync',
  'cuMemcpyDtoHAsync',
  'cuMemcpyDtoDAsync',
  'cuMemsetD8Async',
] as const;

const INVALID_STREAM: ReadonlyMap<number, ErrorKind> = new Map([[400, 'invalid-stream']]);

/** The event calls: their handle is checked by the backend's own table first, so 400 names the event. */
const EVENT_CALLS = [
  'cuEventRecord',
  'cuEventQuery',
  'cuEventSynchronize',
  'cuEventDestroy',
  'cuStreamWaitEvent',
  'cuEventElapsedTime',
] as const;

const INVALID_EVENT: ReadonlyMap<number, ErrorKind> = new Map([[400, 'invalid-event']]);

/**
 * Note [CUresult kinds per call]
 * Two codes mean something only in the light of the call that gave them, so
 * they are read per call, never for every call:
 *  - CUDA_ERROR_UNKNOWN (999) is what cuMemImportFromShareableHandle answers
 *    for a descriptor that is not open (conformance cases import.bogusFd,
 *    import.afterFdClosed): 'invalid-fd' there. From any other call it says
 *    only that the driver failed, and stays the fallback.
 *  - CUDA_ERROR_INVALID_HANDLE (400) is "invalid resource handle": from a
 *    call whose only handle argument is a stream, that stream
 *    ('invalid-stream'). The H200 transcript has no case of it; the stream
 *    calls' documentation is the ground. Elsewhere the handle could be a
 *    context, a memory handle or a stream, so it stays the fallback.
 * A call not named here reads CU_RESULT_KINDS alone.
 */
const CALL_KINDS: Readonly<Record<string, ReadonlyMap<number, ErrorKind>>> = {
  cuMemImportFromShareableHandle: new Map([[999, 'invalid-fd']]),
  ...Object.fromEntries(STREAM_CALLS.map((fn) => [fn, INVALID_STREAM])),
  ...Object.fromEntries(EVENT_CALLS.map((fn) => [fn, INVALID_EVENT])),
};

/** The kind of error `code` is when driver function `fn` returns it. */
export function cuResultKind(fn: string, code: number): ErrorKind {
  return CALL_KINDS[fn]?.get(code) ?? CU_RESULT_KINDS.get(code) ?? 'invalid-value';
}

export function cuResultName(code: number): string {
  return CU_RESULT_NAMES.get(code) ?? `CUresult ${code}`;
}

/**
 * A driver call that failed: a VmmError that also says which function and
 * which CUresult, and carries the CUresult as the CUDA driver's code (Note
 * [Driver codes] in core), which the CUDA front end answers as it is.
 */
export class CudaDriverError extends VmmError {
  constructor(
    readonly fn: string,
    readonly result: number,
    detail = '',
  ) {
    super(
      cuResultKind(fn, result),
      `${fn} returned ${cuResultName(result)} (${result})${detail ? `: ${detail}` : ''}`,
      { vendor: 'CUDA', code: result },
    );
  }
}

type Raw = (...args: unknown[]) => number;
/** A 64-bit value as the driver gave it: a number when exact, a bigint above 2^53. */
export type U64 = number | bigint;

export type PropOut = DecodedProp;

const CU_MEM_ALLOCATION_TYPE_PINNED = 1;
const CU_MEM_LOCATION_TYPE_DEVICE = 1;
const CU_MEM_LOCATION_TYPE_HOST = 2;
const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
const TWO_32 = 4294967296;
/** A high word at or above this makes a 64-bit value too large for an exact number. */
const HIGH_WORD_LIMIT = 0x200000;
const PROP = STRUCT_LAYOUT.CUmemAllocationProp;
const DESC = STRUCT_LAYOUT.CUmemAccessDesc;
const LOC = STRUCT_LAYOUT.CUmemLocation;

/** Word indices into the cycle's scratch (SCRATCH) of its out-parameter and struct fields. */
const OUT = SCRATCH.out >> 2;
const PROP_AT = {
  type: (SCRATCH.prop + PROP.type) >> 2,
  requestedHandleTypes: (SCRATCH.prop + PROP.requestedHandleTypes) >> 2,
  locationType: (SCRATCH.prop + PROP['location.type']) >> 2,
  locationId: (SCRATCH.prop + PROP['location.id']) >> 2,
} as const;
const DESC_AT = {
  locationType: (SCRATCH.desc + DESC['location.type']) >> 2,
  locationId: (SCRATCH.desc + DESC['location.id']) >> 2,
  flags: (SCRATCH.desc + DESC.flags) >> 2,
} as const;

/** The 64-bit out slot at word `at` (its 32-bit words, and itself): a number when exact, else a bigint. */
function u64Of(words: Uint32Array, at: number, slot: BigUint64Array): U64 {
  const hi = words[at + 1];
  return hi < HIGH_WORD_LIMIT ? hi * TWO_32 + words[at] : slot[0];
}

/** The 64-bit out slot at word `at` as a number (sizes and addresses, below 2^53). */
function numberOf(words: Uint32Array, at: number): number {
  return words[at + 1] * TWO_32 + words[at];
}

/**
 * The driver functions vmmkit's backend calls, each throwing a
 * CudaDriverError instead of returning a code. Method names drop the `_v2`
 * suffixes; arguments are the C ones without the out-parameter, and structs
 * are given by the fields vmmkit sets. The cycle's seven calls go through
 * CycleCalls (Note [Fast cycle calls]): their out-parameter and structs live
 * in its scratch bytes, whichever form serves them.
 */
export class CheckedCuda {
  readonly #d: { readonly [K in DriverSymbol]: Raw };
  readonly #cycle: CycleCalls;
  /** Which form serves the cycle's calls: V8 fast calls through the addon, or koffi. */
  readonly cycleCalls: 'fast' | 'koffi';
  /** Why the fast form does not serve them, where it does not. */
  readonly cycleCallsWhy: string | undefined;
  /** The addon's count of fast calls (always 0 in the koffi form). */
  readonly #fastCount: BigUint64Array;
  readonly #ctxGetCurrent: Raw;
  /** Out-parameters (Note [Out-parameters as typed arrays]): 64-bit slots, read back as 32-bit words. */
  readonly #out64 = new BigUint64Array(2);
  readonly #out64b = new BigUint64Array(this.#out64.buffer, 8, 1);
  readonly #outWords = new Uint32Array(this.#out64.buffer);
  readonly #outInt = new Int32Array(this.#out64.buffer, 0, 1);
  readonly #outF32 = new Float32Array(1);
  /**
   * The cycle's scratch bytes as 32-bit words, its one view for the cycle's
   * calls (Note [Cold lines] in src/core/runtime.ts): the out-parameter at
   * OUT, the encoded CUmemAllocationProp at PROP_AT (type PINNED, three
   * fields rewritten per call, the rest zero) and CUmemAccessDesc at DESC_AT
   * (one device per call, as the Backend asks). A signed field stored here
   * keeps its bits.
   */
  readonly #cycleWords: Uint32Array;
  /** The out-parameter as a 64-bit slot, for a handle above 2^53. */
  readonly #cycleOut64: BigUint64Array;
  /** The encoded CUmemAllocationProp as bytes, for cuMemGetAllocationGranularity (koffi). */
  readonly #prop: Uint8Array;
  /** The encoded CUmemLocation. */
  readonly #loc = new Uint8Array(8);
  readonly #locWords = new Int32Array(this.#loc.buffer);
  readonly #propOut = new Uint8Array(32);
  readonly #name = Buffer.alloc(256);
  readonly #shareable = Buffer.alloc(64);

  /** `fastCalls: false` keeps the cycle's calls on koffi even where the addon is built. */
  constructor(
    readonly driver: CudaDriver,
    options: { readonly fastCalls?: boolean } = {},
  ) {
    const d = driver as unknown as { readonly [K in DriverSymbol]: Raw };
    this.#d = d;
    const chosen = chooseCycleCalls(driver, options.fastCalls ?? true);
    this.#cycle = chosen.calls;
    this.cycleCalls = chosen.form;
    this.cycleCallsWhy = chosen.why;
    const scratch = chosen.calls.scratch;
    this.#cycleWords = new Uint32Array(scratch);
    this.#cycleOut64 = new BigUint64Array(scratch, SCRATCH.out, 1);
    this.#prop = new Uint8Array(scratch, SCRATCH.prop, 32);
    this.#fastCount = new BigUint64Array(scratch, SCRATCH.fastCount, 1);
    this.#ctxGetCurrent = d.cuCtxGetCurrent;
    this.#cycleWords[PROP_AT.type] = CU_MEM_ALLOCATION_TYPE_PINNED;
    this.#cycleWords[DESC_AT.locationType] = CU_MEM_LOCATION_TYPE_DEVICE;
    this.#locWords[LOC.type >> 2] = CU_MEM_LOCATION_TYPE_DEVICE;
  }

  /** The cycle calls that optimised code made as fast calls, so far (Note [Fast cycle calls]). */
  get fastCallCount(): number {
    return Number(this.#fastCount[0]);
  }

  #check(fn: string, code: number): void {
    if (code !== 0) throw new CudaDriverError(fn, code);
  }

  /** The first 64-bit out slot: a number when exact, else a bigint. */
  #u64(): U64 {
    return u64Of(this.#outWords, 0, this.#out64);
  }

  /** The first 64-bit out slot as a number (sizes and addresses, below 2^53). */
  #number(): number {
    return numberOf(this.#outWords, 0);
  }

  /** The reused CUmemAllocationProp (type PINNED) with these fields. */
  #encodeProp(locationType: number, id: number, handleTypes: number): Uint8Array {
    const w = this.#cycleWords;
    w[PROP_AT.requestedHandleTypes] = handleTypes;
    w[PROP_AT.locationType] = locationType;
    w[PROP_AT.locationId] = id;
    return this.#prop;
  }

  init(): void {
    this.#check('cuInit', this.#d.cuInit(0));
  }
  driverVersion(): number {
    this.#check('cuDriverGetVersion', this.#d.cuDriverGetVersion(this.#outInt));
    return this.#outInt[0];
  }
  deviceGet(ordinal: number): number {
    this.#check('cuDeviceGet', this.#d.cuDeviceGet(this.#outInt, ordinal));
    return this.#outInt[0];
  }
  deviceCount(): number {
    this.#check('cuDeviceGetCount', this.#d.cuDeviceGetCount(this.#outInt));
    return this.#outInt[0];
  }
  deviceName(dev: number): string {
    const buf = this.#name;
    buf.fill(0);
    this.#check('cuDeviceGetName', this.#d.cuDeviceGetName(buf, buf.length, dev));
    const end = buf.indexOf(0);
    return buf.toString('utf8', 0, end < 0 ? buf.length : end);
  }
  /** A device attribute's value, or undefined where the driver refuses the attribute number. */
  deviceAttribute(attribute: number, dev: number): number | undefined {
    return this.#d.cuDeviceGetAttribute(this.#outInt, attribute, dev) === 0 ? this.#outInt[0] : undefined;
  }
  canAccessPeer(dev: number, peerDev: number): boolean {
    this.#check('cuDeviceCanAccessPeer', this.#d.cuDeviceCanAccessPeer(this.#outInt, dev, peerDev));
    return this.#outInt[0] !== 0;
  }
  deviceTotalMem(dev: number): number {
    this.#check('cuDeviceTotalMem', this.#d.cuDeviceTotalMem_v2(this.#out64, dev));
    return this.#number();
  }
  primaryCtxRetain(dev: number): U64 {
    this.#check('cuDevicePrimaryCtxRetain', this.#d.cuDevicePrimaryCtxRetain(this.#out64, dev));
    return this.#u64();
  }
  primaryCtxRelease(dev: number): void {
    this.#check('cuDevicePrimaryCtxRelease', this.#d.cuDevicePrimaryCtxRelease_v2(dev));
  }
  ctxSetCurrent(ctx: U64): void {
    this.#check('cuCtxSetCurrent', this.#d.cuCtxSetCurrent(ctx));
  }
  ctxGetCurrent(): U64 {
    this.#check('cuCtxGetCurrent', this.#ctxGetCurrent(this.#out64));
    return this.#u64();
  }
  ctxSynchronize(): void {
    this.#check('cuCtxSynchronize', this.#d.cuCtxSynchronize());
  }
  /** The granularity of PINNED memory at (locationType, id) with these handle types. */
  granularity(locationType: number, id: number, handleTypes: number, option: number): number {
    const prop = this.#encodeProp(locationType, id, handleTypes);
    this.#check(
      'cuMemGetAllocationGranularity',
      this.#d.cuMemGetAllocationGranularity(this.#out64, prop, option),
    );
    return this.#number();
  }
  addressReserve(size: number, alignment: number, addr: number): number {
    const code = this.#cycle.cuMemAddressReserve(size, alignment, addr, 0);
    if (code !== 0) throw new CudaDriverError('cuMemAddressReserve', code);
    return numberOf(this.#cycleWords, OUT);
  }
  addressFree(ptr: number, size: number): void {
    const code = this.#cycle.cuMemAddressFree(ptr, size);
    if (code !== 0) throw new CudaDriverError('cuMemAddressFree', code);
  }
  /** cuMemCreate of PINNED memory at (locationType, id) with these handle types. */
  create(size: number, locationType: number, id: number, handleTypes: number): U64 {
    this.#encodeProp(locationType, id, handleTypes);
    const code = this.#cycle.cuMemCreate(size, 0);
    if (code !== 0) throw new CudaDriverError('cuMemCreate', code);
    return u64Of(this.#cycleWords, OUT, this.#cycleOut64);
  }
  release(handle: U64): void {
    const code = this.#cycle.cuMemRelease(handle);
    if (code !== 0) throw new CudaDriverError('cuMemRelease', code);
  }
  map(ptr: number, size: number, offset: number, handle: U64): void {
    const code = this.#cycle.cuMemMap(ptr, size, offset, handle, 0);
    if (code !== 0) throw new CudaDriverError('cuMemMap', code);
  }
  unmap(ptr: number, size: number): void {
    const code = this.#cycle.cuMemUnmap(ptr, size);
    if (code !== 0) throw new CudaDriverError('cuMemUnmap', code);
  }
  /** Set one device's access (CU_MEM_LOCATION_TYPE_DEVICE) over [ptr, ptr + size). */
  setAccess(ptr: number, size: number, device: number, flags: number): void {
    const w = this.#cycleWords;
    w[DESC_AT.locationId] = device;
    w[DESC_AT.flags] = flags;
    const code = this.#cycle.cuMemSetAccess(ptr, size);
    if (code !== 0) throw new CudaDriverError('cuMemSetAccess', code);
  }
  /** cuMemSetAccess for the CPU: one descriptor of location type HOST (its id is ignored). */
  setHostAccess(ptr: number, size: number, flags: number): void {
    const w = this.#cycleWords;
    w[DESC_AT.locationType] = CU_MEM_LOCATION_TYPE_HOST;
    w[DESC_AT.locationId] = 0;
    w[DESC_AT.flags] = flags;
    const code = this.#cycle.cuMemSetAccess(ptr, size);
    w[DESC_AT.locationType] = CU_MEM_LOCATION_TYPE_DEVICE;
    if (code !== 0) throw new CudaDriverError('cuMemSetAccess', code);
  }
  getAccess(device: number, ptr: number): number {
    this.#locWords[LOC.id >> 2] = device;
    this.#check('cuMemGetAccess', this.#d.cuMemGetAccess(this.#out64, this.#loc, ptr));
    return this.#number();
  }
  retainAllocationHandle(ptr: number): U64 {
    this.#check('cuMemRetainAllocationHandle', this.#d.cuMemRetainAllocationHandle(this.#out64, ptr));
    return this.#u64();
  }
  propertiesFromHandle(handle: U64): PropOut {
    const out = this.#propOut;
    out.fill(0);
    this.#check(
      'cuMemGetAllocationPropertiesFromHandle',
      this.#d.cuMemGetAllocationPropertiesFromHandle(out, handle),
    );
    return decodeProp(out);
  }
  /** Export as a POSIX file descriptor (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR). */
  exportFd(handle: U64): number {
    this.#shareable.fill(0);
    this.#check(
      'cuMemExportToShareableHandle',
      this.#d.cuMemExportToShareableHandle(
        this.#shareable,
        handle,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        0,
      ),
    );
    return this.#shareable.readInt32LE(0);
  }
  importFd(fd: number): U64 {
    this.#check(
      'cuMemImportFromShareableHandle',
      this.#d.cuMemImportFromShareableHandle(this.#out64, fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
    );
    return this.#u64();
  }
  memGetInfo(): { free: number; total: number } {
    this.#check('cuMemGetInfo', this.#d.cuMemGetInfo_v2(this.#out64, this.#out64b));
    const w = this.#outWords;
    return { free: w[1] * TWO_32 + w[0], total: w[3] * TWO_32 + w[2] };
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
    this.#check('cuStreamCreate', this.#d.cuStreamCreate(this.#out64, flags));
    return this.#u64();
  }
  streamSynchronize(stream: U64): void {
    this.#check('cuStreamSynchronize', this.#d.cuStreamSynchronize(stream));
  }
  streamDestroy(stream: U64): void {
    this.#check('cuStreamDestroy', this.#d.cuStreamDestroy_v2(stream));
  }
  /** cuEventCreate: CU_EVENT_DISABLE_TIMING for a marker, 0 for a timing event. */
  eventCreate(flags: number): U64 {
    this.#check('cuEventCreate', this.#d.cuEventCreate(this.#out64, flags));
    return this.#u64();
  }
  eventRecord(event: U64, stream: U64): void {
    this.#check('cuEventRecord', this.#d.cuEventRecord(event, stream));
  }
  /** Whether the event's work is done: CUDA_ERROR_NOT_READY is "not yet", not a failure. */
  eventQuery(event: U64): boolean {
    const code = this.#d.cuEventQuery(event);
    if (code === CUDA_ERROR_NOT_READY) return false;
    this.#check('cuEventQuery', code);
    return true;
  }
  eventSynchronize(event: U64): void {
    this.#check('cuEventSynchronize', this.#d.cuEventSynchronize(event));
  }
  eventDestroy(event: U64): void {
    this.#check('cuEventDestroy', this.#d.cuEventDestroy_v2(event));
  }
  streamWaitEvent(stream: U64, event: U64): void {
    this.#check('cuStreamWaitEvent', this.#d.cuStreamWaitEvent(stream, event, 0));
  }
  /** Milliseconds between two completed timing events' records. */
  eventElapsedTime(start: U64, end: U64): number {
    this.#check('cuEventElapsedTime', this.#d.cuEventElapsedTime(this.#outF32, start, end));
    return this.#outF32[0];
  }
}
