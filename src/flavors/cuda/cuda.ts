import type {
  CUmemAccessDesc,
  CUmemAllocationProp,
  CUmemLocation,
  CuCtxCreateArguments,
} from '../../c-api/cuda-structs.js';
import { Access } from '../../core/types.js';
import {
  BigIntMemo,
  type Box,
  handleKey,
  isBox,
  isNull,
  type Size,
  toInt,
  writeBox,
} from '../common/args.js';
import { HostBuffers } from '../common/host-buffers.js';
import { type FlavorProcess, VendorProcess } from '../common/process.js';
import { CudaCapture } from './capture.js';
import type { CudaCodes } from './codes.js';
import * as C from './constants.js';
import { type CUctxCreateParams, checkContextParams } from './context-params.js';
import { ContextTeardown } from './context-teardown.js';
import { CudaContexts, contextFlags } from './contexts.js';
import { CudaCopies } from './copies.js';
import { CudaDevices, errorText } from './devices.js';
import { CUDA_ERRORS } from './error-table.js';
import { CUDA_FUNCTIONS } from './functions.js';
import { CudaHandles } from './handles.js';
import { cudaLayers } from './layers.js';
import { CudaOneStep } from './one-step.js';
import { CudaPeerAccess } from './peer-access.js';
import { CudaPointers } from './pointers.js';
import { CudaSpans } from './spans.js';
import { CudaStreams } from './streams.js';
import { CudaVmm } from './vmm.js';

export type {
  CUmemAccessDesc,
  CUmemAllocationFlags,
  CUmemAllocationProp,
  CUmemLocation,
} from '../../c-api/cuda-structs.js';
export { CUDA_FUNCTIONS } from './functions.js';

import type { CUcontext, CUdeviceptr, CUevent, CUhandle, CUstream } from './handle-types.js';

/**
 * One process using the CUDA driver API: every method has the C name and
 * argument order and returns the CUresult. Each checks the process first
 * (initialised, a current context where the driver needs one), then hands
 * the call to the module of its concern, which checks the rest in the
 * driver's order and answers with the driver's codes; the work is done by
 * core.
 */
export class CudaFlavor<M = unknown> extends VendorProcess<M> {
  #initialized = false;
  /** Set by dispose(): the process is gone (Note [CUDA after dispose]). */
  #gone = false;
  readonly #addresses = new BigIntMemo();
  readonly #devices = new CudaDevices(this.runtime, this.codes);
  readonly #contexts = new CudaContexts(this.runtime);
  readonly #handles = new CudaHandles(this.runtime);
  readonly #spans = new CudaSpans(this.runtime, this.codes);
  readonly #vmm = new CudaVmm(
    this.runtime,
    this.codes,
    this.report,
    this.#contexts,
    this.#handles,
    this.#spans,
    this.#addresses,
  );
  /** Page-locked host memory (Note [Host buffers]), which the pointers and copies reach by its address. */
  readonly #hostBuffers = new HostBuffers();
  readonly #pointers = new CudaPointers(
    this.#hostBuffers,
    this.runtime,
    this.#contexts,
    this.#handles,
    this.#spans,
    this.#addresses,
  );
  readonly #oneStep = new CudaOneStep(
    this.#hostBuffers,
    this.runtime,
    this.codes,
    this.#contexts,
    this.#pointers,
    this.#addresses,
  );
  readonly #streams = new CudaStreams(this.runtime, this.codes, this.#contexts);
  readonly #teardown = new ContextTeardown(this.runtime, this.#contexts, this.#streams, this.#hostBuffers);
  readonly #copies = new CudaCopies(
    this.#hostBuffers,
    this.runtime,
    this.codes,
    this.#contexts,
    this.#streams,
    this.#addresses,
  );
  readonly #capture = new CudaCapture(this.runtime, this.codes, this.#streams, this.#contexts);
  /** Peer access enabled from the current device (cuCtxEnablePeerAccess, Note [Peer access]). */
  readonly #peerAccess = new CudaPeerAccess(this.runtime, this.#contexts);

  /** A CUDA front end over `process` (createCuda in src/entry makes one on the simulator or the driver). */
  constructor(process: FlavorProcess<M>) {
    super(process, CUDA_ERRORS);
    // A fault the backend names no device for (the real driver's 719) is the current context's device's.
    // CUDA_ERRORS' factory is a CudaCodes, which tells of each device fault (Note [Faulted devices]).
    (this.codes as CudaCodes).onDeviceFault = (d) => this.#contexts.fault(d ?? this.#contexts.device);
    this.traceCalls(process.tracer, CUDA_FUNCTIONS, cudaLayers);
  }

  /**
   * End the process (Note [CUDA after dispose]): everything it holds goes, and
   * every later call answers CUDA_ERROR_DEINITIALIZED. Never throws.
   */
  override dispose(): void {
    this.#gone = true;
    this.#initialized = false;
    this.#contexts.setCurrent(0n, -1);
    super.dispose();
  }

  // --- initialisation, devices, contexts ---------------------------------------------

  cuInit(flags: number): number {
    if (this.#gone) return C.CUDA_ERROR_DEINITIALIZED;
    if (toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    this.#initialized = true;
    return C.CUDA_SUCCESS;
  }

  cuDriverGetVersion(version: Box<number>): number {
    if (!isBox(version)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(version, C.SIMULATED_DRIVER_VERSION) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuDeviceGet(device: Box<number>, ordinal: number): number {
    return this.#initialized ? this.#devices.get(device, ordinal) : this.#uninitialized();
  }

  cuDeviceGetCount(count: Box<number>): number {
    return this.#initialized ? this.#devices.count(count) : this.#uninitialized();
  }

  cuDeviceGetName(name: Box<string>, len: number, dev: number): number {
    return this.#initialized ? this.#devices.name(name, len, dev) : this.#uninitialized();
  }

  cuDeviceTotalMem(bytes: Box<number>, dev: number): number {
    return this.#initialized ? this.#devices.totalMem(bytes, dev) : this.#uninitialized();
  }

  /** A device attribute (Note [Device attributes]); one cuda.h defines but vmmkit does not know is INVALID_VALUE. */
  cuDeviceGetAttribute(pi: Box<number>, attrib: number, dev: number): number {
    return this.#initialized ? this.#devices.attribute(pi, attrib, dev) : this.#uninitialized();
  }

  /** Whether `dev` can map `peerDev`'s memory (Note [Peer access]). */
  cuDeviceCanAccessPeer(canAccessPeer: Box<number>, dev: number, peerDev: number): number {
    return this.#initialized
      ? this.#devices.canAccessPeer(canAccessPeer, dev, peerDev)
      : this.#uninitialized();
  }

  cuDevicePrimaryCtxRetain(ctx: Box<bigint>, dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    return this.#contexts.retainPrimary(ctx, d);
  }

  cuDevicePrimaryCtxRelease(dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    const code = this.#contexts.releasePrimary(d);
    // The last release destroys it, as a reset does (Note [Destroying a primary context]).
    if (code === C.CUDA_SUCCESS && !this.#contexts.primaryRetained(d)) this.#teardown.resetPrimary(d);
    return code;
  }

  /** cuDevicePrimaryCtxGetState(dev, flags, active) (Note [Destroying a primary context]). */
  cuDevicePrimaryCtxGetState(dev: number, flags: Box<number>, active: Box<number>): number {
    const d = this.#device(dev);
    if (d < 0) return d === -1 ? C.CUDA_ERROR_INVALID_DEVICE : this.#uninitialized();
    if (!isBox(flags) || !isBox(active)) return C.CUDA_ERROR_INVALID_VALUE;
    return this.#contexts.primaryState(d, flags, active);
  }

  /** Destroy the primary context of `dev` with what it owns; its retain count stays (Note [Destroying a primary context]). */
  cuDevicePrimaryCtxReset(dev: number): number {
    const d = this.#device(dev);
    if (d < 0) return d === -1 ? C.CUDA_ERROR_INVALID_DEVICE : this.#uninitialized();
    this.#teardown.resetPrimary(d);
    return C.CUDA_SUCCESS;
  }

  cuCtxSetCurrent(ctx: bigint | number | null): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#contexts.makeCurrent(ctx);
  }

  /** Push a context on the thread's stack, current (Note [The context stack]). */
  cuCtxPushCurrent(ctx: CUcontext): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#contexts.push(ctx);
  }

  /** Pop the current context into `pctx`; the one below it becomes current (Note [The context stack]). */
  cuCtxPopCurrent(pctx: Box<bigint> | null): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#contexts.pop(pctx);
  }

  cuCtxGetCurrent(ctx: Box<bigint>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(ctx, this.#contexts.handle) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /** A destroyed primary context current still names its device (primaryDestroy.resetReleases). */
  cuCtxGetDevice(device: Box<number>): number {
    const code = this.#needCurrent();
    if (code !== C.CUDA_SUCCESS && code !== C.CUDA_ERROR_CONTEXT_IS_DESTROYED) return code;
    if (!isBox(device)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(device, this.#contexts.namedDevice()) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  cuCtxSynchronize(): number {
    const code = this.#needContext() || this.#capture.guard('device-sync');
    if (code !== C.CUDA_SUCCESS) return code;
    return this.codes.run(() => this.runtime.synchronize(this.#contexts.device));
  }

  /** CUDA 13.0's: the device of `ctx`, destroyed or not (Note [Context-taking calls of CUDA 13.0]). */
  cuCtxGetDevice_v2(device: Box<number>, ctx: CUcontext): number {
    if (!this.#initialized) return this.#uninitialized();
    const d = this.#contexts.contextV2Device(ctx);
    if (d < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (!isBox(device)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(device, d) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /** CUDA 13.0's: wait for `ctx`'s device; a destroyed context is 709 (Note [Context-taking calls of CUDA 13.0]). */
  cuCtxSynchronize_v2(ctx: CUcontext): number {
    if (!this.#initialized) return this.#uninitialized();
    const d = this.#contexts.contextV2Device(ctx);
    if (d < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (this.#contexts.isDestroyed(ctx)) return C.CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (this.#contexts.faulted(d)) return C.CUDA_ERROR_LAUNCH_FAILED;
    return this.codes.run(() => this.runtime.synchronize(d));
  }

  /**
   * A new context on `dev`, made current (Note [Created contexts]), in either
   * header's form (Note [Context creation parameters]): CUDA 13.0's
   * cuCtxCreate(pctx, ctxCreateParams, flags, dev), or the three arguments
   * (pctx, flags, dev) of earlier headers.
   */
  cuCtxCreate(pctx: Box<bigint>, ...rest: CuCtxCreateArguments): number {
    // Each form calls #createContext itself: a traced call is one span, not one inside another.
    return rest.length === 3
      ? this.#createContext(pctx, rest[0], rest[1] as number, rest[2] as number)
      : this.#createContext(pctx, null, rest[0] as number, rest[1] as number);
  }

  /** cuCtxCreate in the three-argument shape of cuda.h before 13.0 (libcuda's cuCtxCreate_v2). */
  cuCtxCreate_v2(pctx: Box<bigint>, flags: number, dev: number): number {
    return this.#createContext(pctx, null, flags, dev);
  }

  /** cuCtxCreate as cuda.h 13.0 declares it: NULL ctxCreateParams is a regular context. */
  cuCtxCreate_v4(
    pctx: Box<bigint>,
    ctxCreateParams: CUctxCreateParams | null,
    flags: number,
    dev: number,
  ): number {
    return this.#createContext(pctx, ctxCreateParams, flags, dev);
  }

  #createContext(pctx: Box<bigint>, ctxCreateParams: unknown, flags: number, dev: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(pctx) || contextFlags(flags) < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const params = checkContextParams(ctxCreateParams);
    if (params !== C.CUDA_SUCCESS) return params;
    return this.#contexts.create(pctx, toInt(dev));
  }

  /**
   * Destroy a context cuCtxCreate made, with its streams, events, cuMemAlloc
   * and page-locked host memory (Note [Created contexts]); VMM memory stays.
   * A primary context is refused, CUDA_ERROR_INVALID_CONTEXT, as on the H200
   * (Note [Destroying a primary context]).
   */
  cuCtxDestroy(ctx: CUcontext): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNull(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    const h = handleKey(ctx) ?? -1n;
    const c = this.#contexts.created(h);
    if (c === undefined) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.#teardown.release(c, c.device);
    this.#contexts.remove(h);
    return C.CUDA_SUCCESS;
  }

  /**
   * Let the current context reach `peerContext`'s memory. The rules are the
   * driver's (flags 0, a valid peer, a device is not its own peer, once
   * only); the grant itself is recorded and changes nothing else (Note
   * [Peer access]: VMM memory is reached through cuMemSetAccess, and
   * cuMemcpyPeer needs no peer access).
   */
  cuCtxEnablePeerAccess(peerContext: CUcontext, flags: number): number {
    return this.#needContext() || this.#peerAccess.enable(peerContext, flags);
  }

  cuCtxDisablePeerAccess(peerContext: CUcontext): number {
    return this.#needContext() || this.#peerAccess.disable(peerContext);
  }

  // --- virtual memory management (vmm.ts) ---------------------------------------------------------

  cuMemGetAllocationGranularity(granularity: Box<number>, prop: CUmemAllocationProp, option: number): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.granularity(granularity, prop, option);
  }

  cuMemAddressReserve(
    ptr: Box<bigint>,
    size: Size,
    alignment: Size,
    addr: CUdeviceptr,
    flags: number,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.reserve(ptr, size, alignment, addr, flags);
  }

  cuMemAddressFree(ptr: CUdeviceptr, size: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.addressFree(ptr, size);
  }

  cuMemCreate(handle: Box<bigint>, size: Size, prop: CUmemAllocationProp, flags: number): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.create(handle, size, prop, flags);
  }

  cuMemRelease(handle: CUhandle): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.release(handle);
  }

  cuMemMap(ptr: CUdeviceptr, size: Size, offset: Size, handle: CUhandle, flags: number): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.map(ptr, size, offset, handle, flags);
  }

  cuMemUnmap(ptr: CUdeviceptr, size: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.unmap(ptr, size);
  }

  cuMemSetAccess(ptr: CUdeviceptr, size: Size, desc: readonly CUmemAccessDesc[], count: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.setAccess(ptr, size, desc, count);
  }

  cuMemGetAccess(flags: Box<number>, location: CUmemLocation, ptr: CUdeviceptr): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.getAccess(flags, location, ptr);
  }

  /** The range of the allocation holding `dptr` (Note [Pointer ranges]); either out box may be null. */
  cuMemGetAddressRange(pbase: Box<bigint> | null, psize: Box<number> | null, dptr: CUdeviceptr): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#pointers.addressRange(pbase, psize, dptr);
  }

  /** One attribute of the memory at `ptr`, which may be a host buffer: C's (CUdeviceptr)hostPointer (Note [Pointer ranges]). */
  cuPointerGetAttribute(
    data: Box<number | bigint>,
    attribute: number,
    ptr: CUdeviceptr | Uint8Array,
  ): number {
    const code = this.#needCurrent();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#pointers.attribute(data, attribute, ptr);
  }

  /** Several attributes at once; an address that is no CUDA memory answers each one's NULL value. */
  cuPointerGetAttributes(
    numAttributes: number,
    attributes: readonly number[],
    data: readonly Box<number | bigint>[],
    ptr: CUdeviceptr,
  ): number {
    const code = this.#needCurrent();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#pointers.attributes(numAttributes, attributes, data, ptr);
  }

  cuMemRetainAllocationHandle(handle: Box<bigint>, addr: CUdeviceptr): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.retain(handle, addr);
  }

  cuMemGetAllocationPropertiesFromHandle(prop: Box<CUmemAllocationProp>, handle: CUhandle): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.properties(prop, handle);
  }

  cuMemExportToShareableHandle(
    shareable: Box<number>,
    handle: CUhandle,
    handleType: number,
    flags: number,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.exportFd(shareable, handle, handleType, flags);
  }

  cuMemImportFromShareableHandle(
    handle: Box<bigint>,
    osHandle: number | bigint,
    shHandleType: number,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#vmm.importFd(handle, osHandle, shHandleType);
  }

  // --- the one-step path (one-step.ts) ------------------------------------------------------------

  cuMemAlloc(dptr: Box<bigint>, bytesize: Size): number {
    const code = this.#needContext() || this.#capture.guard('unsafe');
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#oneStep.alloc(dptr, bytesize);
  }

  cuMemFree(dptr: CUdeviceptr): number {
    const code = this.#needContext() || this.#capture.guard('unsafe');
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#oneStep.free(dptr);
  }

  /** Page-locked host memory (Note [Host buffers]), which the copies take as a host side. */
  cuMemAllocHost(pp: Box<Uint8Array | null>, bytesize: Size): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#oneStep.allocHost(pp, bytesize);
  }

  /** cuMemAllocHost with flags (CU_MEMHOSTALLOC_*), kept for cuMemHostGetFlags (one-step.ts). */
  cuMemHostAlloc(pp: Box<Uint8Array | null>, bytesize: Size, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#oneStep.hostAlloc(pp, bytesize, flags);
  }

  /** The flags a live cuMemHostAlloc / cuMemAllocHost buffer was made with. */
  cuMemHostGetFlags(pFlags: Box<number>, p: Uint8Array): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#oneStep.hostGetFlags(pFlags, p);
  }

  /** The device pointer of page-locked host memory: its address (one-step.ts, Note [Host device pointers]). */
  cuMemHostGetDevicePointer(pdptr: Box<bigint>, p: Uint8Array | CUdeviceptr, flags: number): number {
    return this.#needContext() || this.#oneStep.hostDevicePointer(pdptr, p, flags);
  }

  /** cuMemHostGetDevicePointer by the symbol cuda.h maps it to (12.x and 13.0 alike), past the tracer (one span a call). */
  cuMemHostGetDevicePointer_v2(pdptr: Box<bigint>, p: Uint8Array | CUdeviceptr, flags: number): number {
    return this.#needContext() || this.#oneStep.hostDevicePointer(pdptr, p, flags);
  }

  /** Free a cuMemAllocHost buffer; anything else, or one freed already, is CUDA_ERROR_INVALID_VALUE. */
  cuMemFreeHost(p: Uint8Array): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#oneStep.freeHost(p);
  }

  cuMemGetInfo(free: Box<number>, total: Box<number>): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#oneStep.info(free, total);
  }

  // --- copies and sets (copies.ts) -----------------------------------------------------------------

  // The synchronous calls are their async ones on the NULL stream, called past the tracer (one span a call).

  /** Unified addressing: the direction from the operands (a host buffer, or a device pointer). */
  cuMemcpy(dst: CUdeviceptr | Uint8Array, src: CUdeviceptr | Uint8Array, byteCount: Size): number {
    const code = this.#needContext() || this.#capture.onStream(0n);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.unified(dst, src, byteCount, 0n);
  }

  cuMemcpyAsync(
    dst: CUdeviceptr | Uint8Array,
    src: CUdeviceptr | Uint8Array,
    byteCount: Size,
    hStream: CUstream,
  ): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.unified(dst, src, byteCount, hStream);
  }

  cuMemcpyHtoD(dstDevice: CUdeviceptr, srcHost: Uint8Array, byteCount: Size): number {
    const code = this.#needContext() || this.#capture.onStream(0n);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.htod(dstDevice, srcHost, byteCount, 0n);
  }

  cuMemcpyDtoH(dstHost: Uint8Array, srcDevice: CUdeviceptr, byteCount: Size): number {
    const code = this.#needContext() || this.#capture.onStream(0n);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.dtoh(dstHost, srcDevice, byteCount, 0n);
  }

  cuMemcpyDtoD(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, byteCount: Size): number {
    const code = this.#needContext() || this.#capture.onStream(0n);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.dtod(dstDevice, srcDevice, byteCount, 0n);
  }

  /** Copy between two contexts' devices, no peer access needed (copies.ts). */
  cuMemcpyPeer(
    dstDevice: CUdeviceptr,
    dstContext: CUcontext,
    srcDevice: CUdeviceptr,
    srcContext: CUcontext,
    byteCount: Size,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#copies.peer(dstDevice, dstContext, srcDevice, srcContext, byteCount);
  }

  cuMemcpyHtoDAsync(dstDevice: CUdeviceptr, srcHost: Uint8Array, byteCount: Size, hStream: CUstream): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.htod(dstDevice, srcHost, byteCount, hStream);
  }

  cuMemcpyDtoHAsync(dstHost: Uint8Array, srcDevice: CUdeviceptr, byteCount: Size, hStream: CUstream): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.dtoh(dstHost, srcDevice, byteCount, hStream);
  }

  cuMemcpyDtoDAsync(
    dstDevice: CUdeviceptr,
    srcDevice: CUdeviceptr,
    byteCount: Size,
    hStream: CUstream,
  ): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.dtod(dstDevice, srcDevice, byteCount, hStream);
  }

  cuMemsetD8(dstDevice: CUdeviceptr, uc: number, n: Size): number {
    const code = this.#needContext() || this.#capture.onStream(0n);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.memset(dstDevice, uc, n, 0n);
  }

  cuMemsetD8Async(dstDevice: CUdeviceptr, uc: number, n: Size, hStream: CUstream): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.memset(dstDevice, uc, n, hStream);
  }

  /** N 16-bit values; the destination must be 2-byte aligned. */
  cuMemsetD16(dstDevice: CUdeviceptr, us: number, n: Size): number {
    const code = this.#needContext() || this.#capture.onStream(0n);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.memsetWide(dstDevice, us, n, 2);
  }

  /** N 32-bit values; the destination must be 4-byte aligned. */
  cuMemsetD32(dstDevice: CUdeviceptr, ui: number, n: Size): number {
    const code = this.#needContext() || this.#capture.onStream(0n);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#copies.memsetWide(dstDevice, ui, n, 4);
  }

  // --- streams and events (streams.ts, Note [CUDA events]) --------------------------------------

  cuStreamCreate(phStream: Box<bigint>, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#streams.create(phStream, flags);
  }

  cuStreamSynchronize(hStream: CUstream): number {
    const code = this.#needStream(hStream) || this.#capture.onSynchronize(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#streams.synchronize(hStream);
  }

  cuStreamDestroy(hStream: CUstream): number {
    const code = this.#needStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#streams.destroy(hStream);
  }

  /** CUDA_SUCCESS once the stream's work has run, else CUDA_ERROR_NOT_READY; a capturing stream's: capture.ts. */
  cuStreamQuery(hStream: CUstream): number {
    const code = this.#needStream(hStream) || this.#capture.onSynchronize(hStream, true);
    return code !== C.CUDA_SUCCESS ? code : this.#streams.queryStream(hStream);
  }

  cuStreamIsCapturing(hStream: CUstream, captureStatus: Box<number>): number {
    return this.#needStream(hStream) || this.#capture.isCapturing(hStream, captureStatus);
  }

  /** Swap the calling thread's capture mode (capture.ts): the mode given in, the previous one out. */
  cuThreadExchangeStreamCaptureMode(mode: Box<number>): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#capture.exchangeMode(mode);
  }

  cuEventCreate(phEvent: Box<bigint>, flags: number): number {
    const code = this.#needContext();
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#streams.createEvent(phEvent, flags);
  }

  cuEventRecord(hEvent: CUevent, hStream: CUstream): number {
    return this.#record(hEvent, hStream, C.CU_EVENT_RECORD_DEFAULT);
  }

  /** CU_EVENT_RECORD_EXTERNAL belongs under stream capture: outside one, CUDA_ERROR_ILLEGAL_STATE, as on the H200. */
  cuEventRecordWithFlags(hEvent: CUevent, hStream: CUstream, flags: number): number {
    return this.#record(hEvent, hStream, flags);
  }

  /** Both records, past the tracer (one span a call); in capture a record is a step of the graph. */
  #record(hEvent: CUevent, hStream: CUstream, flags: number): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#streams.record(hEvent, hStream, flags);
  }

  /** CUDA_SUCCESS when the recorded work is done (or nothing was recorded), CUDA_ERROR_NOT_READY while not. */
  cuEventQuery(hEvent: CUevent): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#capture.onEvent(hEvent) || this.#streams.query(hEvent);
  }

  cuEventSynchronize(hEvent: CUevent): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#capture.onEvent(hEvent) || this.#streams.synchronizeEvent(hEvent);
  }

  /** Destroying an event whose work is still queued is allowed: the work is not affected. */
  cuEventDestroy(hEvent: CUevent): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#streams.destroyEvent(hEvent);
  }

  /** The time between two completed timing events: the driver's over the real backend, 0 ms on the simulator. */
  cuEventElapsedTime(pMilliseconds: Box<number>, hStart: CUevent, hEnd: CUevent): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#streams.elapsedTime(pMilliseconds, hStart, hEnd);
  }

  /** cuda.h 13.0's cuEventElapsedTime (CUDA 12.8's _v2): the same rules and answers. */
  cuEventElapsedTime_v2(pMilliseconds: Box<number>, hStart: CUevent, hEnd: CUevent): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#streams.elapsedTime(pMilliseconds, hStart, hEnd);
  }

  /** Work queued on hStream from now on waits for hEvent's recorded work (an event of any context). */
  cuStreamWaitEvent(hStream: CUstream, hEvent: CUevent, flags: number): number {
    const code = this.#needStream(hStream) || this.#capture.onEvent(hEvent, hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    return this.#streams.waitEvent(hStream, hEvent, flags);
  }

  cuMemsetD16Async(dstDevice: CUdeviceptr, us: number, n: Size, hStream: CUstream): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    return code || this.#copies.memsetWide(dstDevice, us, n, 2, hStream);
  }

  cuMemsetD32Async(dstDevice: CUdeviceptr, ui: number, n: Size, hStream: CUstream): number {
    const code = this.#needStream(hStream) || this.#capture.onStream(hStream);
    return code || this.#copies.memsetWide(dstDevice, ui, n, 4, hStream);
  }

  // --- stream capture (capture.ts, Note [Stream capture] in src/core/graphs.ts) ------------------------

  cuStreamBeginCapture(hStream: CUstream, mode: number): number {
    return this.#needStream(hStream) || this.#capture.begin(hStream, mode);
  }

  /** cuda.h 13.0's cuStreamBeginCapture: the same call. */
  cuStreamBeginCapture_v2(hStream: CUstream, mode: number): number {
    return this.#needStream(hStream) || this.#capture.begin(hStream, mode);
  }

  cuStreamEndCapture(hStream: CUstream, phGraph: Box<bigint> | null): number {
    return this.#needStream(hStream) || this.#capture.end(hStream, phGraph);
  }

  /** cuda.h 13.0's shape (cuStreamGetCaptureInfo_v3); no dependency or edge arrays are given back. */
  cuStreamGetCaptureInfo(
    hStream: CUstream,
    status: Box<number> | null,
    id: Box<bigint> | null,
    graph: Box<bigint> | null,
    _dependencies: null,
    _edgeData: null,
    numDependencies: Box<number> | null,
  ): number {
    return this.#needStream(hStream) || this.#capture.info(hStream, status, id, graph, numDependencies);
  }

  /** cuda.h 13.0's cuGraphInstantiate is cuGraphInstantiateWithFlags. */
  cuGraphInstantiate(phGraphExec: Box<bigint> | null, hGraph: CUhandle, flags: Size): number {
    return this.#needContext() || this.#capture.instantiate(phGraphExec, hGraph, flags);
  }

  cuGraphInstantiateWithFlags(phGraphExec: Box<bigint> | null, hGraph: CUhandle, flags: Size): number {
    return this.#needContext() || this.#capture.instantiate(phGraphExec, hGraph, flags);
  }

  cuGraphLaunch(hGraphExec: CUhandle, hStream: CUstream): number {
    return this.#needStream(hStream) || this.#capture.launch(hGraphExec, hStream);
  }

  // The graph destroys and cuGraphGetNodes still answer on a faulted device (Note [Faulted devices]).

  cuGraphDestroy(hGraph: CUhandle): number {
    return this.#needCurrent() || this.#capture.destroyGraph(hGraph);
  }

  cuGraphExecDestroy(hGraphExec: CUhandle): number {
    return this.#needCurrent() || this.#capture.destroyExec(hGraphExec);
  }

  /** Only the count: `nodes` is NULL. */
  cuGraphGetNodes(hGraph: CUhandle, _nodes: null, numNodes: Box<number> | null): number {
    return this.#needCurrent() || this.#capture.nodes(hGraph, numNodes);
  }

  // --- errors ----------------------------------------------------------------------------------------

  cuGetErrorName(error: number, pStr: Box<string | null>): number {
    return errorText(error, pStr, 0);
  }

  cuGetErrorString(error: number, pStr: Box<string | null>): number {
    return errorText(error, pStr, 1);
  }

  // --- the process's state ------------------------------------------------------------------------

  /** What a call answers before cuInit, and after dispose (Note [CUDA after dispose]). */
  #uninitialized(): number {
    return this.#gone ? C.CUDA_ERROR_DEINITIALIZED : C.CUDA_ERROR_NOT_INITIALIZED;
  }

  /** A current context that can run work: none (201), destroyed (709), or its device faulted (719, Note [Faulted devices]). */
  #needContext(): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#contexts.usableCode();
  }

  /** #needContext, and CUDA_ERROR_LAUNCH_FAILED when `hStream` is of another device that faulted (Note [Faulted devices]). */
  #needStream(hStream: CUstream): number {
    return this.#needContext() || this.#streams.faultCode(hStream);
  }

  /** A current context, faulted or not, for the calls that still answer on a faulted device (Note [Faulted devices]). */
  #needCurrent(): number {
    if (!this.#initialized) return this.#uninitialized();
    return this.#contexts.currentCode();
  }

  /** A device ordinal argument: the device, -1 if there is none such, -2 before cuInit. */
  #device(dev: number): number {
    if (!this.#initialized) return -2;
    const d = toInt(dev);
    return this.runtime.isDevice(d) ? d : -1;
  }
}

/**
 * Note [CUDA after dispose]
 * A disposed CudaFlavor is a process whose driver has shut down: every call
 * answers CUDA_ERROR_DEINITIALIZED (4, "driver shutting down") and changes
 * nothing, cuInit included (a disposed process cannot come back). Core's
 * 'not-initialized' kind (a call on a disposed Runtime) maps to the same
 * code. Three calls keep answering, as the driver's do without any
 * initialisation: cuDriverGetVersion (documented to work before cuInit),
 * cuGetErrorName and cuGetErrorString (tables, no driver state).
 */

export { Access };
