import { watchAnswers } from '../common/answers.js';
import { type Box, isBox, type Size, toCount, toInt, writeBox } from '../common/args.js';
import { HostBuffers } from '../common/host-buffers.js';
import { answerCanAccessPeer, canReachPeer, PeerGrants } from '../common/peers.js';
import { type FlavorProcess, VendorProcess } from '../common/process.js';
import { HipAllocations } from './allocations.js';
import { HIP_CAPTURE_FUNCTIONS, HipCapture } from './capture.js';
import * as C from './constants.js';
import { HipCopies } from './copies.js';
import { HIP_ERRORS } from './error-table.js';
import { hipLayers } from './layers.js';
import { HipOneStep } from './one-step.js';
import { HipPointers } from './pointers.js';
import { deviceProperties, hipDeviceAttribute, type hipDeviceProp_t } from './properties.js';
import { HipStreams } from './streams.js';
import type {
  HipHandle,
  HipMemory,
  HipPtr,
  hipMemAccessDesc,
  hipMemAllocationProp,
  hipMemLocation,
  hipPointerAttribute_t,
} from './structs.js';
import { HipThread } from './thread.js';
import { HipVmm } from './vmm.js';

export type { hipDeviceProp_t } from './properties.js';
export type {
  hipMemAccessDesc,
  hipMemAllocationProp,
  hipMemLocation,
  hipPointerAttribute_t,
} from './structs.js';

/** The function names of the HIP flavor (for tracing, parity and documentation). */
export const HIP_FUNCTIONS = [
  'hipInit',
  'hipGetDeviceCount',
  'hipSetDevice',
  'hipGetDevice',
  'hipDeviceGet',
  'hipDeviceCanAccessPeer',
  'hipDeviceEnablePeerAccess',
  'hipDeviceDisablePeerAccess',
  'hipGetDeviceProperties',
  'hipDeviceGetAttribute',
  'hipRuntimeGetVersion',
  'hipDeviceSynchronize',
  'hipMemGetAllocationGranularity',
  'hipMemAddressReserve',
  'hipMemAddressFree',
  'hipMemCreate',
  'hipMemRelease',
  'hipMemMap',
  'hipMemUnmap',
  'hipMemSetAccess',
  'hipMemGetAccess',
  'hipMemGetAddressRange',
  'hipPointerGetAttributes',
  'hipMemRetainAllocationHandle',
  'hipMemGetAllocationPropertiesFromHandle',
  'hipMemExportToShareableHandle',
  'hipMemImportFromShareableHandle',
  'hipMalloc',
  'hipFree',
  'hipMemGetInfo',
  'hipHostMalloc',
  'hipHostFree',
  'hipHostGetFlags',
  'hipHostGetDevicePointer',
  'hipMemcpy',
  'hipMemcpyAsync',
  'hipMemcpyHtoD',
  'hipMemcpyDtoH',
  'hipMemcpyDtoD',
  'hipMemcpyPeer',
  'hipMemset',
  'hipMemsetAsync',
  'hipMemsetD32',
  'hipStreamCreate',
  'hipStreamCreateWithFlags',
  'hipStreamSynchronize',
  'hipStreamDestroy',
  'hipEventCreate',
  'hipEventCreateWithFlags',
  'hipEventRecord',
  'hipEventQuery',
  'hipEventSynchronize',
  'hipEventDestroy',
  'hipEventElapsedTime',
  'hipStreamWaitEvent',
  ...HIP_CAPTURE_FUNCTIONS,
  'hipDeviceReset',
  'hipGetLastError',
  'hipPeekAtLastError',
  'hipGetErrorName',
  'hipGetErrorString',
] as const;

/**
 * One process using the HIP runtime API: every method has the C name and
 * argument order and returns the hipError_t. Each checks the process first,
 * then hands the call to the module of its concern, whose checks are those
 * of ROCm's hip_vm.cpp (and clr's), in its order and with its codes; the work
 * is done by core. Handles follow Note [HIP handle lifetime] (allocations.ts).
 */
export class HipFlavor<M = unknown> extends VendorProcess<M> {
  /** The calling thread's current device and last error (Note [HIP last error]). */
  readonly #thread = new HipThread();
  readonly #allocations = new HipAllocations(this.runtime);
  readonly #vmm = new HipVmm(this.runtime, this.codes, this.#thread, this.#allocations);
  /** Pinned host memory (Note [Host buffers]), which the pointers and copies reach by its address. */
  readonly #hostBuffers = new HostBuffers();
  readonly #pointers = new HipPointers(this.#hostBuffers, this.runtime, this.#thread);
  readonly #oneStep = new HipOneStep(this.#hostBuffers, this.runtime, this.codes, this.#thread);
  readonly #streams = new HipStreams(this.runtime, this.codes, this.#thread);
  readonly #copies = new HipCopies(this.#hostBuffers, this.runtime, this.codes, this.#thread, this.#streams);
  readonly #capture = new HipCapture(this.runtime, this.codes, this.#streams);
  /** Peer access enabled from the current device (hipDeviceEnablePeerAccess, Note [Peer access]). */
  readonly #peers = new PeerGrants(this.runtime.devices.length);

  /** A HIP front end over `process` (createHip in src/entry makes one, on one simulated MI300X by default). */
  constructor(process: FlavorProcess<M>) {
    super(process, HIP_ERRORS);
    const thread = this.#thread;
    const recorded = HIP_FUNCTIONS.filter(
      (name) => name !== 'hipGetLastError' && name !== 'hipPeekAtLastError',
    );
    watchAnswers(this, recorded, { after: (_name, answer) => thread.answered(answer) });
    this.traceCalls(process.tracer, HIP_FUNCTIONS, hipLayers);
  }

  // --- initialisation and devices ------------------------------------------------------

  /** HIP initialises on first use; hipInit only checks its flags. */
  hipInit(flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return toInt(flags) === 0 ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  hipGetDeviceCount(count: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(count)) return C.hipErrorInvalidValue;
    return writeBox(count, this.runtime.devices.length) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  hipSetDevice(deviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    this.#thread.device = d;
    return C.hipSuccess;
  }

  hipGetDevice(deviceId: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(deviceId)) return C.hipErrorInvalidValue;
    return writeBox(deviceId, this.#thread.device) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** The device handle of `ordinal` (HIP's hipDevice_t is the ordinal itself). */
  hipDeviceGet(device: Box<number>, ordinal: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(device)) return C.hipErrorInvalidValue;
    const d = toInt(ordinal);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    return writeBox(device, d) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /**
   * Let the current device reach `peerDeviceId`'s memory: flags 0, a device
   * other than the current one, once only. Recorded; it changes nothing else
   * (Note [Peer access]).
   */
  hipDeviceEnablePeerAccess(peerDeviceId: number, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (toCount(flags) !== 0) return C.hipErrorInvalidValue;
    const peer = toInt(peerDeviceId);
    const current = this.#thread.device;
    if (!this.runtime.isDevice(peer) || peer === current) return C.hipErrorInvalidDevice;
    if (!canReachPeer(this.runtime.devices, current, peer)) return C.hipErrorInvalidDevice;
    return this.#peers.enable(current, peer) ? C.hipSuccess : C.hipErrorPeerAccessAlreadyEnabled;
  }

  hipDeviceDisablePeerAccess(peerDeviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const peer = toInt(peerDeviceId);
    if (!this.runtime.isDevice(peer)) return C.hipErrorInvalidDevice;
    return this.#peers.disable(this.#thread.device, peer) ? C.hipSuccess : C.hipErrorPeerAccessNotEnabled;
  }

  /** One device attribute (Note [HIP device properties]); one vmmkit does not answer is hipErrorInvalidValue. */
  hipDeviceGetAttribute(pi: Box<number>, attr: number, deviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(pi)) return C.hipErrorInvalidValue;
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    const a = typeof attr === 'number' && Number.isInteger(attr) ? attr : Number.NaN;
    const value = hipDeviceAttribute(this.runtime.devices[d], a);
    if (value === undefined) return C.hipErrorInvalidValue;
    return writeBox(pi, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** The fields VMM programs read (Note [HIP device properties]); a part with no published row is hipErrorInvalidValue. */
  hipGetDeviceProperties(prop: Box<hipDeviceProp_t>, deviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(prop)) return C.hipErrorInvalidValue;
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d)) return C.hipErrorInvalidDevice;
    const value = deviceProperties(this.runtime.devices[d]);
    if (value === undefined) return C.hipErrorInvalidValue;
    return writeBox(prop, value) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  /** Whether `deviceId` can map `peerDeviceId`'s memory (Note [Peer access]). */
  hipDeviceCanAccessPeer(canAccessPeer: Box<number>, deviceId: number, peerDeviceId: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    if (!isBox(canAccessPeer)) return C.hipErrorInvalidValue;
    return answerCanAccessPeer(this.runtime, this.codes, canAccessPeer, deviceId, peerDeviceId);
  }

  /**
   * HIP_VERSION of the simulated runtime (C.SIMULATED_HIP_RUNTIME_VERSION),
   * after dispose too (Note [HIP after dispose]).
   */
  hipRuntimeGetVersion(runtimeVersion: Box<number>): number {
    if (!isBox(runtimeVersion)) return C.hipErrorInvalidValue;
    return writeBox(runtimeVersion, C.SIMULATED_HIP_RUNTIME_VERSION) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  hipDeviceSynchronize(): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.deviceSync() || this.codes.run(() => this.runtime.synchronize(this.#thread.device));
  }

  /**
   * Release every resource of the current device in this process (Note
   * [Device reset] in core): its work finished, its streams and events
   * destroyed, its memory (hipMalloc and VMM) unmapped and released, the
   * reservations that held it freed. The process goes on: later calls work.
   */
  hipDeviceReset(): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const device = this.#thread.device;
    const result = this.codes.run(() => this.runtime.resetDevice(device));
    if (result !== C.hipSuccess) return result;
    this.#streams.forgetReset();
    this.#peers.forgetTouching(device);
    return C.hipSuccess;
  }

  // --- virtual memory management (vmm.ts, hip_vm.cpp) -----------------------------------------------

  hipMemGetAllocationGranularity(
    granularity: Box<number>,
    propArg: hipMemAllocationProp,
    option: number,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.granularity(granularity, propArg, option);
  }

  hipMemAddressReserve(ptr: Box<bigint>, size: Size, alignment: Size, addr: HipPtr, flags: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.reserve(ptr, size, alignment, addr, flags);
  }

  /** Size is checked for zero and otherwise ignored: the reservation is found from the pointer. */
  hipMemAddressFree(devPtr: HipPtr, size: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.addressFree(devPtr, size);
  }

  hipMemCreate(handle: Box<bigint>, size: Size, propArg: hipMemAllocationProp, flags: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.create(handle, size, propArg, flags);
  }

  hipMemRelease(handle: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.release(handle);
  }

  /** Maps [ptr, ptr + size) to the start of the allocation; the mapping holds one reference (ga->retain). */
  hipMemMap(ptr: HipPtr, size: Size, offset: Size, handle: HipHandle, flags: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.map(ptr, size, offset, handle, flags);
  }

  /** Unmaps whole chunks (Note [ValidateSubBufferCoverage]), every stream synchronised first. */
  hipMemUnmap(ptr: HipPtr, size: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.unmap(ptr, size);
  }

  /** Descriptors applied one by one, as hip_vm.cpp does; `desc` may be one struct for count 1. */
  hipMemSetAccess(
    ptr: HipPtr,
    size: Size,
    desc: readonly hipMemAccessDesc[] | hipMemAccessDesc | null,
    count: Size,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.setAccess(ptr, size, desc, count);
  }

  hipMemGetAccess(flags: Box<number>, locationArg: hipMemLocation, ptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.getAccess(flags, locationArg, ptr);
  }

  /** The range of the allocation holding `dptr` (Note [HIP pointer ranges]). */
  hipMemGetAddressRange(pbase: Box<bigint>, psize: Box<number>, dptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#pointers.addressRange(pbase, psize, dptr);
  }

  /** The memory type, device and pointers of `ptr` (Note [HIP pointer ranges]). */
  hipPointerGetAttributes(attributes: Box<hipPointerAttribute_t>, ptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#pointers.attributes(attributes, ptr);
  }

  /** A new reference to the allocation mapped at any address inside a VMM mapping; none for hipMalloc memory. */
  hipMemRetainAllocationHandle(handle: Box<bigint>, addr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.retain(handle, addr);
  }

  hipMemGetAllocationPropertiesFromHandle(prop: Box<hipMemAllocationProp>, handle: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.properties(prop, handle);
  }

  /** Writes an int file descriptor; the handle type must equal the one requested at create. */
  hipMemExportToShareableHandle(
    shareableHandle: Box<number>,
    handle: HipHandle,
    handleType: number,
    flags: Size,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.exportFd(shareableHandle, handle, handleType, flags);
  }

  /** Takes the fd value itself (C passes the int cast to void*); a new handle to the same memory. */
  hipMemImportFromShareableHandle(handle: Box<bigint>, osHandle: HipHandle, shHandleType: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#vmm.importFd(handle, osHandle, shHandleType);
  }

  // --- the one-step path (one-step.ts) ----------------------------------------------------------------

  /** Size 0 gives a null pointer and success, as HIP does. */
  hipMalloc(ptr: Box<bigint>, size: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.unsafe() || this.#oneStep.malloc(ptr, size);
  }

  /** hipFree(NULL) succeeds; anything but a hipMalloc pointer is hipErrorInvalidValue. */
  hipFree(ptr: HipPtr): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.unsafe() || this.#oneStep.free(ptr);
  }

  /** Pinned host memory (Note [Host buffers]). */
  hipHostMalloc(ptr: Box<Uint8Array | null>, size: Size, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#oneStep.hostMalloc(ptr, size, flags);
  }

  /** The flags a live hipHostMalloc buffer was made with; anything else is hipErrorInvalidValue. */
  hipHostGetFlags(flagsPtr: Box<number>, hostPtr: Uint8Array): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#oneStep.hostGetFlags(flagsPtr, hostPtr);
  }

  /** The device pointer of pinned host memory: its address (one-step.ts, Note [Host device pointers]). */
  hipHostGetDevicePointer(
    devicePointer: Box<bigint>,
    hostPointer: Uint8Array | HipPtr,
    flags: number,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#oneStep.hostDevicePointer(devicePointer, hostPointer, flags);
  }

  /** hipHostFree(NULL) succeeds; anything but a live hipHostMalloc buffer is hipErrorInvalidValue. */
  hipHostFree(ptr: Uint8Array | null): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#oneStep.hostFree(ptr);
  }

  hipMemGetInfo(free: Box<number>, total: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#oneStep.info(free, total);
  }

  // --- copies and sets (copies.ts) ------------------------------------------------------------------------

  /** Host operands are Uint8Arrays, device operands pointers; hipMemcpyDefault infers the direction from them. */
  hipMemcpy(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.synchronous() || this.#copies.memcpy(dst, src, sizeBytes, kind, 0n);
  }

  hipMemcpyAsync(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number, stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#copies.memcpy(dst, src, sizeBytes, kind, stream);
  }

  /** hipMemcpy with the direction in the name: the operands must be what it says. */
  hipMemcpyHtoD(dst: HipPtr, src: Uint8Array, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const code = this.#capture.synchronous();
    return code || this.#copies.memcpy(dst, src, sizeBytes, C.hipMemcpyHostToDevice, 0n);
  }

  hipMemcpyDtoH(dst: Uint8Array, src: HipPtr, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const code = this.#capture.synchronous();
    return code || this.#copies.memcpy(dst, src, sizeBytes, C.hipMemcpyDeviceToHost, 0n);
  }

  hipMemcpyDtoD(dst: HipPtr, src: HipPtr, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const code = this.#capture.synchronous();
    return code || this.#copies.memcpy(dst, src, sizeBytes, C.hipMemcpyDeviceToDevice, 0n);
  }

  /** Copy from one device's view to another's, no peer access needed (copies.ts). */
  hipMemcpyPeer(dst: HipPtr, dstDeviceId: number, src: HipPtr, srcDeviceId: number, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.synchronous() || this.#copies.peer(dst, dstDeviceId, src, srcDeviceId, sizeBytes);
  }

  /** `count` 32-bit values (little-endian); the destination must be 4-byte aligned. */
  hipMemsetD32(dst: HipPtr, value: number, count: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.synchronous() || this.#copies.memsetD32(dst, value, count);
  }

  hipMemset(dst: HipPtr, value: number, sizeBytes: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.synchronous() || this.#copies.memset(dst, value, sizeBytes, 0n);
  }

  hipMemsetAsync(dst: HipPtr, value: number, sizeBytes: Size, stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#copies.memset(dst, value, sizeBytes, stream);
  }

  // --- streams and events (streams.ts, Note [HIP events]) ------------------------------------------------

  hipStreamCreate(stream: Box<bigint>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.create(stream);
  }

  /** flags: hipStreamDefault or hipStreamNonBlocking (a blocking stream is what every stream is here). */
  hipStreamCreateWithFlags(stream: Box<bigint>, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    const f = toInt(flags);
    if (f !== C.hipStreamDefault && f !== C.hipStreamNonBlocking) return C.hipErrorInvalidValue;
    return this.#streams.create(stream);
  }

  /** The null stream (0) waits for the current device's work. */
  hipStreamSynchronize(stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.onSynchronize(stream) || this.#streams.synchronize(stream);
  }

  hipStreamDestroy(stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.destroy(stream);
  }

  hipEventCreate(event: Box<bigint>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.createEvent(event, C.hipEventDefault);
  }

  /** clr's flag rules (streams.ts). */
  hipEventCreateWithFlags(event: Box<bigint>, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.createEventWithFlags(event, flags);
  }

  hipEventRecord(event: HipHandle, stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.record(event, stream);
  }

  /** hipSuccess when the recorded work is done (or nothing was recorded), hipErrorNotReady (600) while not. */
  hipEventQuery(event: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.onEvent(event) || this.#streams.query(event);
  }

  hipEventSynchronize(event: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.onEvent(event) || this.#streams.synchronizeEvent(event);
  }

  /** NULL: hipErrorInvalidHandle; a destroyed event: hipErrorContextIsDestroyed, as clr answers. */
  hipEventDestroy(event: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.destroyEvent(event);
  }

  /** The time between two completed timing events: the driver's over a real backend, 0 ms on the simulator. */
  hipEventElapsedTime(ms: Box<number>, start: HipHandle, stop: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.elapsedTime(ms, start, stop);
  }

  /** Later work on `stream` waits for the event's recorded work; flags hipEventWaitDefault (0) or hipEventWaitExternal (1). */
  hipStreamWaitEvent(stream: HipHandle, event: HipHandle, flags: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#streams.waitEvent(stream, event, flags);
  }

  // --- stream capture (capture.ts, Note [HIP capture rules]) -------------------------------------------

  hipStreamBeginCapture(stream: HipHandle, mode: number): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.begin(stream, mode);
  }

  hipStreamEndCapture(stream: HipHandle, pGraph: Box<bigint> | null): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.end(stream, pGraph);
  }

  hipStreamIsCapturing(stream: HipHandle, pCaptureStatus: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.isCapturing(stream, pCaptureStatus);
  }

  hipStreamGetCaptureInfo(stream: HipHandle, pCaptureStatus: Box<number>, pId: Box<bigint> | null): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.info(stream, pCaptureStatus, pId);
  }

  /** Only the three modes, unlike CUDA's driver (Note [HIP capture rules]). */
  hipThreadExchangeStreamCaptureMode(mode: Box<number>): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.exchangeMode(mode);
  }

  /** pErrorNode, pLogBuffer and bufferSize are not written, as clr writes none. */
  hipGraphInstantiate(
    pGraphExec: Box<bigint> | null,
    graph: HipHandle,
    _pErrorNode: unknown,
    _pLogBuffer: unknown,
    _bufferSize: Size,
  ): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.instantiate(pGraphExec, graph);
  }

  /** clr ignores the flags. */
  hipGraphInstantiateWithFlags(pGraphExec: Box<bigint> | null, graph: HipHandle, _flags: Size): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.instantiate(pGraphExec, graph);
  }

  hipGraphLaunch(graphExec: HipHandle, stream: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.launch(graphExec, stream);
  }

  hipGraphDestroy(graph: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.destroyGraph(graph);
  }

  hipGraphExecDestroy(graphExec: HipHandle): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.destroyExec(graphExec);
  }

  /** Only the count: `nodes` is NULL. */
  hipGraphGetNodes(graph: HipHandle, _nodes: null, numNodes: Box<number> | null): number {
    if (this.#gone()) return C.hipErrorDeinitialized;
    return this.#capture.nodes(graph, numNodes);
  }

  // --- errors ----------------------------------------------------------------------------------------

  /** The last error any call of this process answered, then hipSuccess again (Note [HIP last error]). */
  hipGetLastError(): number {
    const e = this.#thread.lastError;
    this.#thread.lastError = C.hipSuccess;
    return e;
  }

  /** The last error, left in place. */
  hipPeekAtLastError(): number {
    return this.#thread.lastError;
  }

  /** The enumerator's name; "hipErrorUnknown" for a value HIP does not know. */
  hipGetErrorName(hipError: number): string {
    return C.HIP_ERRORS.get(toInt(hipError))?.[0] ?? 'hipErrorUnknown';
  }

  hipGetErrorString(hipError: number): string {
    return C.HIP_ERRORS.get(toInt(hipError))?.[1] ?? 'unknown error';
  }

  /** After dispose() the process is gone (Note [HIP after dispose]). */
  #gone(): boolean {
    return this.runtime.disposed;
  }
}

/**
 * Note [HIP after dispose]
 * A disposed HipFlavor is a process whose runtime has been torn down: every
 * call answers hipErrorDeinitialized (4, "driver shutting down") and changes
 * nothing, the queries that never reach core (hipGetDeviceCount,
 * hipGetDevice, hipMemGetAllocationGranularity) included. HIP itself has no
 * uninitialised state to report (it initialises on first use), so
 * hipErrorNotInitialized is never the answer; core's 'not-initialized' kind
 * (a call on a disposed Runtime) maps to hipErrorDeinitialized too.
 * hipGetErrorName and hipGetErrorString keep answering: they return strings,
 * not codes, and read only a table. So does hipRuntimeGetVersion, as in clr
 * (hipamd/src/hip_context.cpp): it begins with HIP_INIT_API_NO_RETURN, which
 * neither returns when initialisation fails nor asks for a device, and then
 * writes the compile-time HIP_VERSION, so a runtime that cannot (or can no
 * longer) reach a device still answers it.
 */
