import { watchAnswers } from '../common/answers.js';
import { type Box, isBox, type Size, show, toCount, toInt, writeBox } from '../common/args.js';
import { type FlavorProcess, VendorProcess } from '../common/process.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import { AclCopies } from './copies.js';
import { AclDevices } from './devices.js';
import { ACL_ERRORS } from './error-table.js';
import { aclLayers } from './layers.js';
import { AclOneStep } from './one-step.js';
import { AclPhysicalMemory } from './physical-memory.js';
import { AclSharing } from './sharing.js';
import { ACL_EVENT_DEFAULT_FLAGS, AclStreams, eventFlags } from './streams.js';
import type {
  aclrtMemAccessDesc,
  aclrtMemLocation,
  aclrtPhysicalMemProp,
  MemcpyPointer,
  Pointer,
} from './structs.js';
import { AclVmm } from './vmm.js';

export { aclMallocSize } from './one-step.js';
export type { aclrtMemAccessDesc, aclrtMemLocation, aclrtPhysicalMemProp } from './structs.js';

/** The function names of the ACL flavor (for tracing, parity and documentation). */
export const ACL_FUNCTIONS = [
  'aclInit',
  'aclFinalize',
  'aclrtSetDevice',
  'aclrtGetDeviceCount',
  'aclrtGetDevice',
  'aclrtResetDevice',
  'aclrtReserveMemAddress',
  'aclrtReleaseMemAddress',
  'aclrtMallocPhysical',
  'aclrtFreePhysical',
  'aclrtMapMem',
  'aclrtMemMapNoAccess',
  'aclrtUnmapMem',
  'aclrtMemSetAccess',
  'aclrtMemGetAccess',
  'aclrtMemRetainAllocationHandle',
  'aclrtMemGetAllocationGranularity',
  'aclrtMemGetAllocationPropertiesFromHandle',
  'aclrtMemExportToShareableHandle',
  'aclrtMemSetPidToShareableHandle',
  'aclrtMemImportFromShareableHandle',
  'aclrtDeviceGetBareTgid',
  'aclrtMalloc',
  'aclrtFree',
  'aclrtMemcpy',
  'aclrtMemcpyAsync',
  'aclrtMemset',
  'aclrtMemsetAsync',
  'aclrtCreateStream',
  'aclrtSynchronizeStream',
  'aclrtDestroyStream',
  'aclrtSynchronizeDevice',
  'aclrtCreateEvent',
  'aclrtCreateEventWithFlag',
  'aclrtRecordEvent',
  'aclrtQueryEventStatus',
  'aclrtSynchronizeEvent',
  'aclrtStreamWaitEvent',
  'aclrtResetEvent',
  'aclrtDestroyEvent',
  'aclrtGetMemInfo',
  'aclrtMallocHost',
  'aclrtFreeHost',
  'aclrtDestroyStreamForce',
  'aclrtResetDeviceForce',
  'aclrtCreateContext',
  'aclrtDestroyContext',
  'aclrtSetCurrentContext',
  'aclrtGetCurrentContext',
  'aclrtDeviceCanAccessPeer',
  'aclrtDeviceEnablePeerAccess',
  'aclrtDeviceDisablePeerAccess',
  'aclrtIpcMemGetExportKey',
  'aclrtIpcMemSetImportPid',
  'aclrtIpcMemImportByKey',
  'aclrtIpcMemClose',
  'aclrtMemExportToShareableHandleV2',
  'aclrtMemSetPidToShareableHandleV2',
  'aclrtMemImportFromShareableHandleV2',
  'aclGetRecentErrMsg',
] as const;

/**
 * One process using Ascend's ACL runtime: every method has the C name and
 * argument order and returns the aclError. Each checks the process first
 * (initialised, a device set where CANN needs one), then hands the call to
 * the module of its concern, whose checks follow CANN's layers: ACL's own
 * (null pointers, zero sizes, reserved flags) first with
 * ACL_ERROR_INVALID_PARAM, as CANN's acl layer does before it calls the
 * runtime, then the runtime's with its 107xxx / 207xxx codes; the work is
 * done by core. Every refusal says why (codes.ts, aclGetRecentErrMsg).
 */
export class AclFlavor<M = unknown> extends VendorProcess<M> {
  /** The process's codes as ACL's factory, which keeps each failure's message (codes.ts). */
  readonly #aclCodes = this.codes as AclCodes;
  readonly #devices = new AclDevices(this.runtime, this.#aclCodes);
  readonly #physical = new AclPhysicalMemory(this.runtime, this.#aclCodes);
  readonly #vmm = new AclVmm(this.runtime, this.#aclCodes, this.#devices, this.#physical);
  readonly #sharing = new AclSharing(this.runtime, this.#aclCodes, this.#devices, this.#physical);
  readonly #oneStep = new AclOneStep(this.runtime, this.#aclCodes, this.#devices, this.#sharing);
  readonly #streams = new AclStreams(this.runtime, this.#aclCodes, this.#devices, this.report);
  readonly #copies = new AclCopies(this.runtime, this.#aclCodes, this.#devices, this.#streams);

  /** An ACL front end over `process` (createAcl in src/entry makes one, on one simulated Ascend 910B by default). */
  constructor(process: FlavorProcess<M>) {
    super(process, ACL_ERRORS);
    const codes = this.#aclCodes;
    watchAnswers(
      this,
      ACL_FUNCTIONS.filter((name) => name !== 'aclGetRecentErrMsg'),
      { before: () => codes.begin(), after: (name, answer) => codes.answered(name, answer) },
    );
    this.traceCalls(process.tracer, ACL_FUNCTIONS, aclLayers);
  }

  /**
   * End the process (Note [ACL after dispose]): everything it holds goes, and
   * every later call answers ACL_ERROR_UNINITIALIZE. Never throws.
   */
  override dispose(): void {
    this.#devices.dispose();
    super.dispose();
  }

  // --- initialisation and devices (devices.ts) ---------------------------------------------------

  aclInit(configPath?: string | null): number {
    if (this.#devices.gone) return this.#uninitialized();
    if (configPath !== undefined && configPath !== null && typeof configPath !== 'string')
      return this.#aclCodes.bad(C.ACL_ERROR_INVALID_PARAM, 'configPath is not a string');
    if (this.#devices.initialized)
      return this.#aclCodes.bad(C.ACL_ERROR_REPEAT_INITIALIZE, 'aclInit was already called');
    this.#devices.initialized = true;
    return C.ACL_SUCCESS;
  }

  /** aclFinalize resets every device the process still holds. */
  aclFinalize(): number {
    if (this.#devices.gone) return this.#uninitialized();
    if (!this.#devices.initialized)
      return this.#aclCodes.bad(C.ACL_ERROR_REPEAT_FINALIZE, 'aclInit was not called');
    for (const d of this.#devices.finalize()) this.aclrtResetDevice(d);
    this.#devices.finalized();
    return C.ACL_SUCCESS;
  }

  aclrtSetDevice(deviceId: number): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    const bad = this.#devices.badDevice(deviceId);
    if (bad !== undefined) return bad;
    this.#devices.setDevice(toInt(deviceId));
    return C.ACL_SUCCESS;
  }

  /** The device aclrtSetDevice made current; ACL_ERROR_RT_CONTEXT_NULL before one is set. */
  aclrtGetDevice(deviceId: Box<number>): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(deviceId)) return this.#aclCodes.bad(C.ACL_ERROR_INVALID_PARAM, 'deviceId is NULL');
    return writeBox(deviceId, this.#devices.current) ? C.ACL_SUCCESS : this.#aclCodes.unwritable();
  }

  aclrtGetDeviceCount(count: Box<number>): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    if (!isBox(count)) return this.#aclCodes.bad(C.ACL_ERROR_INVALID_PARAM, 'count is NULL');
    return writeBox(count, this.runtime.devices.length) ? C.ACL_SUCCESS : this.#aclCodes.unwritable();
  }

  /**
   * Undo one aclrtSetDevice; at the last, the device's streams and events are
   * destroyed (their work finishes first). A count already 0 is refused
   * (Note [Resetting a reset device]).
   */
  aclrtResetDevice(deviceId: number): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    const bad = this.#devices.badDevice(deviceId);
    if (bad !== undefined) return bad;
    const d = toInt(deviceId);
    if (!this.#devices.held(d))
      return this.#aclCodes.bad(
        C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR,
        'the device was not set or is reset already',
      );
    if (this.#devices.release(d)) this.#streams.dropDevice(d);
    return C.ACL_SUCCESS;
  }

  /** aclrtResetDevice whatever the aclrtSetDevice count above 0: the device's resources go now. */
  aclrtResetDeviceForce(deviceId: number): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    const bad = this.#devices.badDevice(deviceId);
    if (bad !== undefined) return bad;
    const d = toInt(deviceId);
    this.#devices.releaseAll(d);
    return this.aclrtResetDevice(d);
  }

  /** A context on deviceId, made the calling thread's current one (as CANN does). */
  aclrtCreateContext(context: Box<bigint>, deviceId: number): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#devices.createContext(context, deviceId);
  }

  /** Only aclrtCreateContext's contexts are destroyed; a device's default one goes with aclrtResetDevice. */
  aclrtDestroyContext(context: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#devices.destroyContext(context);
  }

  aclrtSetCurrentContext(context: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#devices.setCurrentContext(context);
  }

  /** The current context: the one set or created last, or the current device's default one. */
  aclrtGetCurrentContext(context: Box<bigint>): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#devices.getCurrentContext(context);
  }

  /** 1 when both devices exist and differ (every pair of simulated devices can exchange data). */
  aclrtDeviceCanAccessPeer(canAccessPeer: Box<number>, deviceId: number, peerDeviceId: number): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#devices.canAccessPeer(canAccessPeer, deviceId, peerDeviceId);
  }

  /** peerDeviceId may not be the current device; flags are reserved (0). Note [ACL peer access]. */
  aclrtDeviceEnablePeerAccess(peerDeviceId: number, flags: Size): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#devices.enablePeer(peerDeviceId, flags);
  }

  aclrtDeviceDisablePeerAccess(peerDeviceId: number): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#devices.disablePeer(peerDeviceId);
  }

  // --- virtual addresses, mappings, access (vmm.ts) -------------------------------------------

  /** size only needs to be non-zero (Note [ACL reservation sizes]); expectPtr is taken exactly (Note [ACL expectPtr]). */
  aclrtReserveMemAddress(
    virPtr: Box<bigint>,
    size: Size,
    alignment: Size,
    expectPtr: Pointer,
    flags: Size,
  ): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.reserve(virPtr, size, alignment, expectPtr, flags);
  }

  /** No size: the reservation starting at virPtr (Note [ACL's size-less calls]), once nothing is mapped in it. */
  aclrtReleaseMemAddress(virPtr: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.releaseAddress(virPtr);
  }

  /** Map and grant the memory's own device read-write (Note [ACL map grants access]). */
  aclrtMapMem(virPtr: Pointer, size: Size, offset: Size, handle: Pointer, flags: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.map(virPtr, size, offset, handle, flags, true);
  }

  /**
   * aclrtMapMem without the grant: no device may touch the range until
   * aclrtMemSetAccess. The prototype is taken to be aclrtMapMem's (the
   * reference describes it by contrast with aclrtMapMem; unsure of any
   * further argument rule, so aclrtMapMem's are applied).
   */
  aclrtMemMapNoAccess(virPtr: Pointer, size: Size, offset: Size, handle: Pointer, flags: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.map(virPtr, size, offset, handle, flags, false);
  }

  aclrtUnmapMem(virPtr: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.unmap(virPtr);
  }

  /** Exactly one aclrtMapMem's range, flags READWRITE, HOST or DEVICE locations (Note [ACL host access]). */
  aclrtMemSetAccess(virPtr: Pointer, size: Size, desc: readonly aclrtMemAccessDesc[], count: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.setAccess(virPtr, size, desc, count);
  }

  /** The mapping's access from one device, or from the host (Note [ACL host access]). */
  aclrtMemGetAccess(virPtr: Pointer, locationArg: aclrtMemLocation, flag: Box<number>): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.getAccess(virPtr, locationArg, flag);
  }

  /** A new reference to the handle mapped at any address inside a mapping; undo with aclrtFreePhysical. */
  aclrtMemRetainAllocationHandle(virPtr: Pointer, handle: Box<bigint>): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#vmm.retain(virPtr, handle);
  }

  // --- physical memory (physical-memory.ts) ------------------------------------------------------

  aclrtMallocPhysical(handle: Box<bigint>, size: Size, propArg: aclrtPhysicalMemProp, flags: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#physical.mallocPhysical(handle, size, propArg, flags);
  }

  aclrtMemGetAllocationGranularity(
    propArg: aclrtPhysicalMemProp,
    option: number,
    granularity: Box<number>,
  ): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#physical.granularity(propArg, option, granularity);
  }

  /** Drop this handle; memory still mapped lives on until its last aclrtUnmapMem (core's refcount). */
  aclrtFreePhysical(handle: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#physical.freePhysical(handle);
  }

  aclrtMemGetAllocationPropertiesFromHandle(handle: Pointer, prop: Box<aclrtPhysicalMemProp>): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#physical.properties(handle, prop);
  }

  // --- sharing between processes (sharing.ts) ------------------------------------------------------

  /** flags: DEFAULT (importers named with aclrtMemSetPidToShareableHandle) or DISABLE_PID_VALIDATION; once per handle. */
  aclrtMemExportToShareableHandle(
    handle: Pointer,
    handleType: number,
    flags: Size,
    shareableHandle: Box<bigint>,
  ): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#sharing.exportShareable(handle, handleType, flags, shareableHandle);
  }

  /** Name the processes (by aclrtDeviceGetBareTgid's pid) that may import; called by the exporter. */
  aclrtMemSetPidToShareableHandle(
    shareableHandle: Size,
    pid: ArrayLike<number> | null,
    pidNum: Size,
  ): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#sharing.allowPids(shareableHandle, pid, pidNum);
  }

  /** A handle in this process to memory another process exported. deviceId names the device it is used on. */
  aclrtMemImportFromShareableHandle(shareableHandle: Size, deviceId: number, handle: Box<bigint>): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#sharing.importShareable(shareableHandle, deviceId, handle);
  }

  aclrtDeviceGetBareTgid(pid: Box<number>): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    if (!isBox(pid)) return this.#aclCodes.bad(C.ACL_ERROR_INVALID_PARAM, 'pid is NULL');
    return writeBox(pid, this.runtime.pid) ? C.ACL_SUCCESS : this.#aclCodes.unwritable();
  }

  /** Share aclrtMalloc memory by a key (Note [ACL IPC keys]); each call makes a new key. */
  aclrtIpcMemGetExportKey(devPtr: Pointer, size: Size, key: Box<string>, len: Size, flags: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#sharing.exportKey(devPtr, size, key, len, flags);
  }

  /** Name the processes that may import a key exported with ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT. */
  aclrtIpcMemSetImportPid(key: string, pid: ArrayLike<number> | null, num: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#sharing.allowKeyPids(key, pid, num);
  }

  /** Map the memory behind a key into this process, read-write for the current device, until aclrtIpcMemClose. */
  aclrtIpcMemImportByKey(devPtr: Box<bigint>, key: string, flags: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#sharing.importKey(devPtr, key, flags);
  }

  /** In an importer: unmap its oldest import of the key. In the exporter: withdraw the key. */
  aclrtIpcMemClose(key: string): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#sharing.closeKey(key);
  }

  /**
   * aclrtMemExportToShareableHandle with a share type (Note [ACL fabric
   * handles]): DEFAULT works as the first version, writing the token to
   * *shareableHandle; FABRIC (across servers) answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
   */
  aclrtMemExportToShareableHandleV2(
    handle: Pointer,
    flags: Size,
    shareType: number,
    shareableHandle: Box<bigint>,
  ): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    const refused = this.#sharing.shareType(shareType);
    if (refused !== undefined) return refused;
    return this.aclrtMemExportToShareableHandle(handle, C.ACL_MEM_HANDLE_TYPE_NONE, flags, shareableHandle);
  }

  /** shareableHandle points to the exported value (a box here). */
  aclrtMemSetPidToShareableHandleV2(
    shareableHandle: Box<bigint>,
    shareType: number,
    pid: ArrayLike<number> | null,
    pidNum: Size,
  ): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    if (!isBox(shareableHandle))
      return this.#aclCodes.bad(C.ACL_ERROR_INVALID_PARAM, 'shareableHandle is NULL');
    const refused = this.#sharing.shareType(shareType);
    if (refused !== undefined) return refused;
    return this.aclrtMemSetPidToShareableHandle(shareableHandle.value, pid, pidNum);
  }

  /** The handle is made for the current device (the first version names one; this one does not). */
  aclrtMemImportFromShareableHandleV2(
    shareableHandle: Box<bigint>,
    shareType: number,
    flags: Size,
    handle: Box<bigint>,
  ): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(shareableHandle))
      return this.#aclCodes.bad(C.ACL_ERROR_INVALID_PARAM, 'shareableHandle is NULL');
    if (toCount(flags) !== 0)
      return this.#aclCodes.bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const refused = this.#sharing.shareType(shareType);
    if (refused !== undefined) return refused;
    return this.aclrtMemImportFromShareableHandle(shareableHandle.value, this.#devices.current, handle);
  }

  // --- the one-step path (one-step.ts) ------------------------------------------------------------------

  /** size rounds up to 32 bytes and gains 32 bytes of padding (none for the 1 GiB huge-page policies). */
  aclrtMalloc(devPtr: Box<bigint>, size: Size, policy: number): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#oneStep.malloc(devPtr, size, policy);
  }

  aclrtFree(devPtr: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#oneStep.free(devPtr);
  }

  aclrtGetMemInfo(attr: number, free: Box<number>, total: Box<number>): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#oneStep.memInfo(attr, free, total);
  }

  /** Page-locked host memory (Note [Host buffers]): a host buffer that aclrtMemcpy takes as a host pointer. */
  aclrtMallocHost(hostPtr: Box<Uint8Array | null>, size: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#oneStep.mallocHost(hostPtr, size);
  }

  aclrtFreeHost(hostPtr: Uint8Array | Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#oneStep.freeHost(hostPtr);
  }

  // --- copies and sets (copies.ts) -------------------------------------------------------------------------

  aclrtMemcpy(dst: MemcpyPointer, destMax: Size, src: MemcpyPointer, count: Size, kind: number): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#copies.memcpy(null, dst, destMax, src, count, kind);
  }

  aclrtMemcpyAsync(
    dst: MemcpyPointer,
    destMax: Size,
    src: MemcpyPointer,
    count: Size,
    kind: number,
    stream: Pointer,
  ): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#copies.memcpy(stream, dst, destMax, src, count, kind);
  }

  aclrtMemset(devPtr: Pointer, maxCount: Size, value: number, count: Size): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#copies.memset(null, devPtr, maxCount, value, count);
  }

  /** aclrtMemset on a stream (NULL: the default stream). */
  aclrtMemsetAsync(devPtr: Pointer, maxCount: Size, value: number, count: Size, stream: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#copies.memset(stream, devPtr, maxCount, value, count);
  }

  // --- streams and events (streams.ts, Note [ACL events]) ------------------------------------------------

  aclrtCreateStream(stream: Box<bigint>): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#streams.create(stream);
  }

  /** A NULL stream is the default stream: only the device's streams remain to wait for. */
  aclrtSynchronizeStream(stream: Pointer): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#streams.synchronize(stream);
  }

  aclrtDestroyStream(stream: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#streams.destroy(stream, false);
  }

  /**
   * Destroy a stream without waiting for it: its unfinished tasks are
   * dropped, as CANN documents, so a queued copy or set never writes. Over
   * the real NVIDIA driver, which cannot drop work, they finish instead
   * (Note [Forced stream destroy], backend.ts).
   */
  aclrtDestroyStreamForce(stream: Pointer): number {
    if (!this.#devices.initialized) return this.#uninitialized();
    return this.#streams.destroy(stream, true);
  }

  aclrtSynchronizeDevice(): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#aclCodes.run(() => this.runtime.synchronize(this.#devices.current));
  }

  /** An event usable for every event call (stream waits and resets included). */
  aclrtCreateEvent(event: Box<bigint>): number {
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#streams.createEvent(event, ACL_EVENT_DEFAULT_FLAGS);
  }

  /** flag: a bitmap of ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS, ACL_EVENT_TIME_LINE. */
  aclrtCreateEventWithFlag(event: Box<bigint>, flag: number): number {
    const f = eventFlags(flag);
    if (f < 0) {
      if (!this.#devices.initialized) return this.#uninitialized();
      return this.#aclCodes.bad(
        C.ACL_ERROR_INVALID_PARAM,
        `flag ${show(flag)} is not a bitmap of ACL_EVENT_* flags`,
      );
    }
    const code = this.#devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#streams.createEvent(event, f);
  }

  /** Record on `stream` (NULL: the default stream), which must be of the event's device. */
  aclrtRecordEvent(event: Pointer, stream: Pointer): number {
    const found = this.#event(event);
    return typeof found === 'number' ? found : this.#streams.record(found[0], found[1], stream);
  }

  /** ACL_EVENT_RECORDED_STATUS_COMPLETE once recorded work has run; NOT_READY before, and for an event never recorded. */
  aclrtQueryEventStatus(event: Pointer, status: Box<number>): number {
    const found = this.#event(event);
    return typeof found === 'number' ? found : this.#streams.query(found[0], found[1], status);
  }

  aclrtSynchronizeEvent(event: Pointer): number {
    const found = this.#event(event);
    if (typeof found === 'number') return found;
    return this.#aclCodes.run(() => this.runtime.synchronizeEvent(found[0]));
  }

  /** Later work on `stream` waits for the event's recorded work; the event needs ACL_EVENT_SYNC. */
  aclrtStreamWaitEvent(stream: Pointer, event: Pointer): number {
    const found = this.#event(event);
    return typeof found === 'number' ? found : this.#streams.waitEvent(stream, found[0], found[1]);
  }

  /** Back to "never recorded" (Note [ACL events]: at once, not in stream order); the event needs ACL_EVENT_SYNC. */
  aclrtResetEvent(event: Pointer, stream: Pointer): number {
    const found = this.#event(event);
    return typeof found === 'number' ? found : this.#streams.reset(found[1], stream);
  }

  aclrtDestroyEvent(event: Pointer): number {
    const found = this.#event(event);
    if (typeof found === 'number') return found;
    return this.#aclCodes.run(() => this.#streams.events.destroy(found[0]));
  }

  /** A live event of this process with its state, or the code refusing the call. */
  #event(h: Pointer): ReturnType<AclStreams['event']> {
    const code = this.#devices.needDevice();
    return code !== C.ACL_SUCCESS ? code : this.#streams.event(h);
  }

  // --- errors ----------------------------------------------------------------------------------------------

  /** The description of this process's most recent failed call, cleared by reading; null when there is none. */
  aclGetRecentErrMsg(): string | null {
    return this.#aclCodes.takeRecent();
  }

  #uninitialized(): number {
    return this.#devices.uninitialized();
  }
}

/**
 * Note [ACL after dispose]
 * CANN has one code for a process whose runtime is not up:
 * ACL_ERROR_UNINITIALIZE (100001), what every call answers after
 * aclFinalize. A disposed AclFlavor answers it to every call, aclInit and
 * aclFinalize included (a disposed process cannot be initialised again),
 * changes nothing, and aclGetRecentErrMsg says the process was disposed.
 * aclGetRecentErrMsg itself keeps answering: it reads the process's last
 * message and has no code to give. Core's 'not-initialized' kind (a call on
 * a disposed Runtime) maps to the same code (error-table.ts).
 *
 * Note [Resetting a reset device]
 * aclrtResetDevice takes one off the device's aclrtSetDevice count and
 * releases its resources when that reaches 0; a reset of a device whose
 * count is already 0 (never set, or reset already) is an error by CANN's
 * aclrtResetDeviceForce page (8.0.0: "calling aclrtResetDevice or
 * aclrtResetDeviceForce again will report an error"), for either reset. The
 * runtime's code says which: Runtime::PrimaryContextRelease answers
 * RT_ERROR_CONTEXT_DEL when its count cannot go down (TryDecRef fails, or a
 * forced reset finds 0), which acl maps to ACL_ERROR_RT_CONTEXT_RELEASE_ERROR
 * (507007); that is the answer here, after the device id's check.
 */

/**
 * Note [ACL calls of ported programs]
 * NPU caching allocators, sleep-mode allocators and framework VMM adapters
 * call more than the VMM entries: pinned host buffers (aclrtMallocHost),
 * forced stream and device teardown, explicit contexts, peer access, IPC by
 * key and the V2 shareable-handle calls. Each is here with CANN's prototype
 * and argument rules as its reference states them; where a rule's code is
 * not documented the closest runtime code is used (ACL_ERROR_RT_PARAM_INVALID
 * for a handle or key this process does not know). What the simulated part
 * lacks answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT: fabric handles.
 */
