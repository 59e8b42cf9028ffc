import type { Machine } from '../../backends/sim/machine.js';
import type { PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { instrument } from '../../core/trace.js';
import { Access, type AllocationProperties, type Location } from '../../core/types.js';
import { type Box, isBox, isHostBuffer, isPowerOfTwo, isStruct, toCount, toInt } from '../common/args.js';
import { codeFor } from '../common/error-table.js';
import { type FlavorOptions, startProcess } from '../common/process.js';
import * as C from './constants.js';
import { CUDA_ERROR_TABLE } from './error-table.js';

/** CUmemLocation */
export interface CUmemLocation {
  type: number;
  id: number;
}

/** CUmemAllocationProp (allocFlags and win32HandleMetaData are accepted and reported, not interpreted). */
export interface CUmemAllocationProp {
  type: number;
  requestedHandleTypes: number;
  location: CUmemLocation;
  win32HandleMetaData?: bigint | number;
  allocFlags?: { compressionType?: number; gpuDirectRDMACapable?: number; usage?: number };
}

/** CUmemAccessDesc */
export interface CUmemAccessDesc {
  location: CUmemLocation;
  flags: number;
}

type CUdeviceptr = bigint | number;
type CUhandle = bigint | number;
type Size = bigint | number;

const ACCESS_FLAGS = new Set([
  C.CU_MEM_ACCESS_FLAGS_PROT_NONE,
  C.CU_MEM_ACCESS_FLAGS_PROT_READ,
  C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
]);
const KNOWN_HANDLE_TYPES =
  C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
  C.CU_MEM_HANDLE_TYPE_WIN32 |
  C.CU_MEM_HANDLE_TYPE_WIN32_KMT |
  C.CU_MEM_HANDLE_TYPE_FABRIC;
/** Handle types this (Linux) machine can export. */
const LINUX_HANDLE_TYPES = C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | C.CU_MEM_HANDLE_TYPE_FABRIC;
/** Context handles are opaque; these are deterministic per device. */
const CONTEXT_BASE = 0xc0_0000n;
const STREAM_BASE = 0x5_0000n;

/** The function names of the CUDA flavour (for tracing, parity and documentation). */
export const CUDA_FUNCTIONS = [
  'cuInit',
  'cuDriverGetVersion',
  'cuDeviceGet',
  'cuDeviceGetCount',
  'cuDeviceGetName',
  'cuDeviceTotalMem',
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
  'cuStreamCreate',
  'cuStreamSynchronize',
  'cuStreamDestroy',
  'cuGetErrorName',
  'cuGetErrorString',
] as const;

/**
 * One process using the CUDA driver API: every method has the C name and
 * argument order and returns the CUresult. Checks run in the driver's order
 * and answer with the driver's codes; the work is done by core.
 */
export class CudaFlavor {
  readonly runtime: Runtime;
  /** The simulated machine this process runs on (undefined on real hardware). */
  readonly machine: Machine | undefined;
  /** The last unexpected internal error (a vmmkit bug), for debugging; calls answered it with CUDA_ERROR_UNKNOWN. */
  lastInternalError: unknown;
  #initialized = false;
  /** Primary contexts retained, per device ordinal: retain count. */
  readonly #primaryRefs: number[];
  /** The calling thread's current context: a device ordinal, or -1. */
  #current = -1;
  readonly #streams = new Map<bigint, number>();
  readonly #report: (message: string, error?: unknown) => void;

  constructor(options: FlavorOptions = {}) {
    const p = startProcess(options);
    this.runtime = p.runtime;
    this.machine = p.machine;
    this.#report = p.report;
    this.#primaryRefs = this.runtime.devices.map(() => 0);
    if (options.tracer) instrument(this, 'flavor', options.tracer, CUDA_FUNCTIONS);
  }

  /** This process's pid on its machine. */
  get pid(): number {
    return this.runtime.pid;
  }

  // --- initialisation, devices, contexts ---------------------------------------------

  cuInit(flags: number): number {
    if (toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    this.#initialized = true;
    return C.CUDA_SUCCESS;
  }

  cuDriverGetVersion(version: Box<number>): number {
    if (!isBox(version)) return C.CUDA_ERROR_INVALID_VALUE;
    version.value = C.SIMULATED_DRIVER_VERSION;
    return C.CUDA_SUCCESS;
  }

  cuDeviceGet(device: Box<number>, ordinal: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(device)) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(ordinal))) return C.CUDA_ERROR_INVALID_DEVICE;
    device.value = toInt(ordinal);
    return C.CUDA_SUCCESS;
  }

  cuDeviceGetCount(count: Box<number>): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(count)) return C.CUDA_ERROR_INVALID_VALUE;
    count.value = this.runtime.devices.length;
    return C.CUDA_SUCCESS;
  }

  cuDeviceGetName(name: Box<string>, len: number, dev: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(name) || toInt(len) <= 0) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(dev))) return C.CUDA_ERROR_INVALID_DEVICE;
    // The C call writes at most len - 1 characters and a terminating NUL.
    name.value = this.runtime.devices[toInt(dev)].name.slice(0, toInt(len) - 1);
    return C.CUDA_SUCCESS;
  }

  cuDeviceTotalMem(bytes: Box<number>, dev: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(bytes)) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(dev))) return C.CUDA_ERROR_INVALID_DEVICE;
    bytes.value = this.runtime.devices[toInt(dev)].totalMemory;
    return C.CUDA_SUCCESS;
  }

  cuDevicePrimaryCtxRetain(ctx: Box<bigint>, dev: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    this.#primaryRefs[d]++;
    ctx.value = contextHandle(d);
    return C.CUDA_SUCCESS;
  }

  cuDevicePrimaryCtxRelease(dev: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    if (this.#primaryRefs[d] === 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.#primaryRefs[d]--;
    return C.CUDA_SUCCESS;
  }

  cuCtxSetCurrent(ctx: bigint | number | null): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (ctx === null || ctx === 0 || ctx === 0n) {
      this.#current = -1;
      return C.CUDA_SUCCESS;
    }
    const d = typeof ctx === 'bigint' ? Number(ctx - CONTEXT_BASE) : Number.NaN;
    if (!this.runtime.isDevice(d) || this.#primaryRefs[d] === 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.#current = d;
    return C.CUDA_SUCCESS;
  }

  cuCtxGetCurrent(ctx: Box<bigint>): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    ctx.value = this.#current === -1 ? 0n : contextHandle(this.#current);
    return C.CUDA_SUCCESS;
  }

  cuCtxGetDevice(device: Box<number>): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (!isBox(device)) return C.CUDA_ERROR_INVALID_VALUE;
    device.value = this.#current;
    return C.CUDA_SUCCESS;
  }

  cuCtxSynchronize(): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#run(() => this.runtime.synchronize(this.#current));
  }

  // --- virtual memory management ---------------------------------------------------------

  cuMemGetAllocationGranularity(granularity: Box<number>, prop: CUmemAllocationProp, option: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(granularity) || !isStruct(prop)) return C.CUDA_ERROR_INVALID_VALUE;
    const opt = toInt(option);
    if (opt !== C.CU_MEM_ALLOC_GRANULARITY_MINIMUM && opt !== C.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    const checked = this.#checkProp(prop);
    if (typeof checked === 'number') return checked;
    const d = this.runtime.devices[checked.location.type === 'device' ? checked.location.id : 0];
    granularity.value =
      opt === C.CU_MEM_ALLOC_GRANULARITY_MINIMUM ? d.minimumGranularity : d.recommendedGranularity;
    return C.CUDA_SUCCESS;
  }

  cuMemAddressReserve(
    ptr: Box<bigint>,
    size: Size,
    alignment: Size,
    addr: CUdeviceptr,
    flags: number,
  ): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    const n = toCount(size);
    const align = toCount(alignment);
    const hint = toCount(addr);
    if (!isBox(ptr) || n <= 0 || align < 0 || hint < 0 || toInt(flags) !== 0)
      return C.CUDA_ERROR_INVALID_VALUE;
    if (align !== 0 && !isPowerOfTwo(align)) return C.CUDA_ERROR_INVALID_VALUE;
    if (n % this.runtime.vaGranularity !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      ptr.value = BigInt(this.runtime.reserve(n, { alignment: align, hint }).base);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemAddressFree(ptr: CUdeviceptr, size: Size): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    const va = toCount(ptr);
    const n = toCount(size);
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.size !== n || r.origin !== 'vmm') return C.CUDA_ERROR_INVALID_VALUE;
    try {
      this.runtime.free(r);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemCreate(handle: Box<bigint>, size: Size, prop: CUmemAllocationProp, flags: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(handle) || !isStruct(prop) || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const checked = this.#checkProp(prop);
    if (typeof checked === 'number') return checked;
    const n = toCount(size);
    const g =
      this.runtime.devices[checked.location.type === 'device' ? checked.location.id : 0].minimumGranularity;
    if (n <= 0 || n % g !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      handle.value = BigInt(this.runtime.create(n, checked).id);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemRelease(handle: CUhandle): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      this.runtime.release(a);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemMap(ptr: CUdeviceptr, size: Size, offset: Size, handle: CUhandle, flags: number): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    const va = toCount(ptr);
    const n = toCount(size);
    const off = toCount(offset);
    if (va <= 0 || n <= 0 || off < 0 || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    // The driver maps whole allocations only.
    if (off !== 0 || n !== a.size) return C.CUDA_ERROR_NOT_SUPPORTED;
    try {
      this.runtime.map(va, n, a, 0);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemUnmap(ptr: CUdeviceptr, size: Size): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    const va = toCount(ptr);
    const n = toCount(size);
    if (va <= 0 || n <= 0) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      const mappings = this.runtime.wholeMappings(va, n);
      if (mappings[0].reservation.origin !== 'vmm') return C.CUDA_ERROR_INVALID_VALUE;
      this.runtime.unmapMappings(mappings);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemSetAccess(ptr: CUdeviceptr, size: Size, desc: readonly CUmemAccessDesc[], count: Size): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    const va = toCount(ptr);
    const n = toCount(size);
    const k = toCount(count);
    if (va <= 0 || n <= 0 || k <= 0 || !Array.isArray(desc) || desc.length < k)
      return C.CUDA_ERROR_INVALID_VALUE;
    const descriptors: { device: number; access: Access }[] = [];
    for (let i = 0; i < k; i++) {
      const d = desc[i];
      if (!isStruct(d) || !isStruct(d.location) || !ACCESS_FLAGS.has(d.flags))
        return C.CUDA_ERROR_INVALID_VALUE;
      if (d.location.type !== C.CU_MEM_LOCATION_TYPE_DEVICE) return C.CUDA_ERROR_INVALID_VALUE;
      if (!this.runtime.isDevice(d.location.id)) return C.CUDA_ERROR_INVALID_DEVICE;
      descriptors.push({ device: d.location.id, access: d.flags as Access });
    }
    try {
      this.runtime.setAccess(va, n, descriptors);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemGetAccess(flags: Box<number>, location: CUmemLocation, ptr: CUdeviceptr): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(flags) || !isStruct(location)) return C.CUDA_ERROR_INVALID_VALUE;
    if (location.type !== C.CU_MEM_LOCATION_TYPE_DEVICE) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(location.id)) return C.CUDA_ERROR_INVALID_DEVICE;
    const m = this.runtime.mappingAt(toCount(ptr));
    if (m === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    flags.value = m.accessOf(location.id);
    return C.CUDA_SUCCESS;
  }

  cuMemRetainAllocationHandle(handle: Box<bigint>, addr: CUdeviceptr): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(handle)) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      handle.value = BigInt(this.runtime.retain(toCount(addr)).id);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemGetAllocationPropertiesFromHandle(prop: Box<CUmemAllocationProp>, handle: CUhandle): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isStruct(prop)) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const { location, handleTypes } = a.props;
    prop.value = {
      type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: handleTypes,
      location: {
        type: location.type === 'device' ? C.CU_MEM_LOCATION_TYPE_DEVICE : C.CU_MEM_LOCATION_TYPE_HOST,
        id: location.id,
      },
      win32HandleMetaData: 0n,
      allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0 },
    };
    return C.CUDA_SUCCESS;
  }

  cuMemExportToShareableHandle(
    shareable: Box<number>,
    handle: CUhandle,
    handleType: number,
    flags: number,
  ): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(shareable) || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.#allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const type = toInt(handleType);
    if ((a.props.handleTypes & type) === 0 || type !== C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    try {
      shareable.value = this.runtime.exportFd(a);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemImportFromShareableHandle(
    handle: Box<bigint>,
    osHandle: number | bigint,
    shHandleType: number,
  ): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    if (!isBox(handle)) return C.CUDA_ERROR_INVALID_VALUE;
    if (toInt(shHandleType) !== C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      handle.value = BigInt(this.runtime.importFd(toCount(osHandle)).id);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  // --- the one-step path --------------------------------------------------------------------

  cuMemAlloc(dptr: Box<bigint>, bytesize: Size): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(bytesize);
    if (!isBox(dptr) || n <= 0) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      dptr.value = BigInt(this.runtime.malloc(this.#current, n).base);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemFree(dptr: CUdeviceptr): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const va = toCount(dptr);
    if (va === 0) return C.CUDA_SUCCESS;
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc') return C.CUDA_ERROR_INVALID_VALUE;
    try {
      this.runtime.mfree(va);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  cuMemGetInfo(free: Box<number>, total: Box<number>): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    if (!isBox(free) || !isBox(total)) return C.CUDA_ERROR_INVALID_VALUE;
    const info = this.runtime.memoryInfo(this.#current);
    free.value = info.free;
    total.value = info.total;
    return C.CUDA_SUCCESS;
  }

  // --- copies and sets ------------------------------------------------------------------------

  cuMemcpyHtoD(dstDevice: CUdeviceptr, srcHost: Uint8Array, byteCount: Size): number {
    return this.cuMemcpyHtoDAsync(dstDevice, srcHost, byteCount, 0n);
  }

  cuMemcpyDtoH(dstHost: Uint8Array, srcDevice: CUdeviceptr, byteCount: Size): number {
    return this.cuMemcpyDtoHAsync(dstHost, srcDevice, byteCount, 0n);
  }

  cuMemcpyDtoD(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, byteCount: Size): number {
    return this.cuMemcpyDtoDAsync(dstDevice, srcDevice, byteCount, 0n);
  }

  cuMemcpyHtoDAsync(
    dstDevice: CUdeviceptr,
    srcHost: Uint8Array,
    byteCount: Size,
    hStream: bigint | number,
  ): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(byteCount);
    if (!isHostBuffer(srcHost) || n < 0 || n > srcHost.length) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.#run(() =>
      this.runtime.write(this.#current, toCount(dstDevice), srcHost.subarray(0, n), stream),
    );
  }

  cuMemcpyDtoHAsync(
    dstHost: Uint8Array,
    srcDevice: CUdeviceptr,
    byteCount: Size,
    hStream: bigint | number,
  ): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(byteCount);
    if (!isHostBuffer(dstHost) || n < 0 || n > dstHost.length) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.#run(() =>
      this.runtime.read(this.#current, toCount(srcDevice), dstHost.subarray(0, n), stream),
    );
  }

  cuMemcpyDtoDAsync(
    dstDevice: CUdeviceptr,
    srcDevice: CUdeviceptr,
    byteCount: Size,
    hStream: bigint | number,
  ): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const n = toCount(byteCount);
    if (n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.#run(() =>
      this.runtime.copy(this.#current, toCount(dstDevice), toCount(srcDevice), n, stream),
    );
  }

  cuMemsetD8(dstDevice: CUdeviceptr, uc: number, n: Size): number {
    return this.cuMemsetD8Async(dstDevice, uc, n, 0n);
  }

  cuMemsetD8Async(dstDevice: CUdeviceptr, uc: number, n: Size, hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const count = toCount(n);
    if (count < 0 || !Number.isInteger(uc)) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.#run(() => this.runtime.fill(this.#current, toCount(dstDevice), uc, count, stream));
  }

  // --- streams -------------------------------------------------------------------------------------

  cuStreamCreate(phStream: Box<bigint>, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const f = toInt(flags);
    if (!isBox(phStream) || (f !== C.CU_STREAM_DEFAULT && f !== C.CU_STREAM_NON_BLOCKING)) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    return this.#run(() => {
      const id = this.runtime.createStream(this.#current);
      const h = STREAM_BASE + BigInt(id);
      this.#streams.set(h, id);
      phStream.value = h;
    });
  }

  cuStreamSynchronize(hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const stream = this.#stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.#run(() =>
      stream === 0 ? this.runtime.synchronize(this.#current) : this.runtime.synchronizeStream(stream),
    );
  }

  cuStreamDestroy(hStream: bigint | number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    const stream = this.#stream(hStream);
    if (stream <= 0) return C.CUDA_ERROR_INVALID_HANDLE;
    this.#streams.delete(BigInt(hStream));
    return this.#run(() => this.runtime.destroyStream(stream));
  }

  // --- errors ----------------------------------------------------------------------------------------

  cuGetErrorName(error: number, pStr: Box<string | null>): number {
    if (!isBox(pStr)) return C.CUDA_ERROR_INVALID_VALUE;
    const entry = C.CUDA_RESULTS.get(toInt(error));
    pStr.value = entry?.[0] ?? null;
    return entry === undefined ? C.CUDA_ERROR_INVALID_VALUE : C.CUDA_SUCCESS;
  }

  cuGetErrorString(error: number, pStr: Box<string | null>): number {
    if (!isBox(pStr)) return C.CUDA_ERROR_INVALID_VALUE;
    const entry = C.CUDA_RESULTS.get(toInt(error));
    pStr.value = entry?.[1] ?? null;
    return entry === undefined ? C.CUDA_ERROR_INVALID_VALUE : C.CUDA_SUCCESS;
  }

  /** End the process: everything it holds is released, as at exit. Never throws. */
  dispose(): void {
    this.runtime.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  // --- helpers -----------------------------------------------------------------------------------------

  #needContext(): number {
    if (!this.#initialized) return C.CUDA_ERROR_NOT_INITIALIZED;
    return this.#current === -1 ? C.CUDA_ERROR_INVALID_CONTEXT : C.CUDA_SUCCESS;
  }

  /** Validate a CUmemAllocationProp in the driver's order; a CUresult if it is bad. */
  #checkProp(prop: CUmemAllocationProp): AllocationProperties | number {
    if (prop.type !== C.CU_MEM_ALLOCATION_TYPE_PINNED) return C.CUDA_ERROR_INVALID_VALUE;
    const types = toInt(prop.requestedHandleTypes ?? 0);
    if (!(types >= 0) || (types & ~KNOWN_HANDLE_TYPES) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    if ((types & ~LINUX_HANDLE_TYPES) !== 0) return C.CUDA_ERROR_NOT_SUPPORTED;
    const loc = prop.location;
    if (!isStruct(loc)) return C.CUDA_ERROR_INVALID_VALUE;
    let location: Location;
    if (loc.type === C.CU_MEM_LOCATION_TYPE_DEVICE) {
      if (!this.runtime.isDevice(loc.id)) return C.CUDA_ERROR_INVALID_DEVICE;
      location = { type: 'device', id: loc.id };
    } else if (loc.type === C.CU_MEM_LOCATION_TYPE_HOST || loc.type === C.CU_MEM_LOCATION_TYPE_HOST_NUMA) {
      location = { type: 'host', id: loc.type === C.CU_MEM_LOCATION_TYPE_HOST ? 0 : toCount(loc.id) };
      if (location.id < 0) return C.CUDA_ERROR_INVALID_VALUE;
    } else {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    return { location, handleTypes: types, uncached: false };
  }

  #allocation(handle: CUhandle): PhysicalAllocation | undefined {
    const id = toCount(handle);
    return id < 0 ? undefined : this.runtime.allocation(id);
  }

  /** A stream handle as core's stream id (0 for the default stream), or -1 if unknown. */
  #stream(h: bigint | number): number {
    if (h === 0n || h === 0 || h === null || h === undefined) return 0;
    if (typeof h !== 'bigint') return -1;
    return this.#streams.get(h) ?? -1;
  }

  #run(work: () => void): number {
    try {
      work();
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  #code(e: unknown): number {
    return codeFor(CUDA_ERROR_TABLE, e, C.CUDA_ERROR_UNKNOWN, (err) => {
      this.lastInternalError = err;
      this.#report('internal error in a CUDA call', err);
    });
  }
}

function contextHandle(device: number): bigint {
  return CONTEXT_BASE + BigInt(device);
}

/** A process using the CUDA driver API, on a simulated machine (default) or real NVIDIA hardware. */
export function createCuda(options: FlavorOptions = {}): CudaFlavor {
  return new CudaFlavor(options);
}

export { Access };
