import { type Box, type Size } from '../common/args.js';
import { type FlavorOptions, VendorProcess } from '../common/process.js';
/** aclrtMemLocation */
export interface aclrtMemLocation {
  id: number;
  type: number;
}
/** aclrtPhysicalMemProp */
export interface aclrtPhysicalMemProp {
  handleType: number;
  allocationType: number;
  memAttr: number;
  location: aclrtMemLocation;
  reserve?: bigint | number;
}
/** aclrtMemAccessDesc (rsv is accepted and ignored, as the documentation asks for zeros). */
export interface aclrtMemAccessDesc {
  flags: number;
  location: aclrtMemLocation;
  rsv?: ArrayLike<number>;
}
/** void* on the device side, aclrtDrvMemHandle, aclrtStream: opaque pointers, 0 for NULL. */
type Pointer = bigint | number | null | undefined;
/** What aclrtMemcpy's void* dst / const void* src can be here: a device address or a host buffer. */
type MemcpyPointer = Pointer | Uint8Array;
/** The function names of the ACL flavour (for tracing, parity and documentation). */
export declare const ACL_FUNCTIONS: readonly [
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
  'aclrtGetMemInfo',
  'aclGetRecentErrMsg',
];
/** Options of createAcl: as every flavour's, with one Ascend 910B as the default machine. */
export type AclOptions = FlavorOptions;
/**
 * One process using Ascend's ACL runtime: every method has the C name and
 * argument order and returns the aclError. ACL's own argument checks (null
 * pointers, zero sizes, reserved flags) come first and answer
 * ACL_ERROR_INVALID_PARAM, as CANN's acl layer does before it calls the
 * runtime; the runtime's rules follow with its 107xxx / 207xxx codes; the
 * work is done by core.
 *
 * Note [ACL's size-less calls]: aclrtUnmapMem(virPtr) and
 * aclrtReleaseMemAddress(virPtr) take no size. The flavour looks the size up
 * in core (mappingAt / reservationAt) and requires virPtr to be exactly the
 * start of what aclrtMapMem / aclrtReserveMemAddress returned.
 */
export declare class AclFlavor extends VendorProcess {
  #private;
  constructor(options?: AclOptions);
  /**
   * End the process (Note [ACL after dispose]): everything it holds goes, and
   * every later call answers ACL_ERROR_UNINITIALIZE. Never throws.
   */
  dispose(): void;
  aclInit(configPath?: string | null): number;
  aclFinalize(): number;
  aclrtSetDevice(deviceId: number): number;
  /** The device aclrtSetDevice made current; ACL_ERROR_RT_CONTEXT_NULL before one is set. */
  aclrtGetDevice(deviceId: Box<number>): number;
  aclrtGetDeviceCount(count: Box<number>): number;
  /** Undo one aclrtSetDevice; at the last, the device's streams are destroyed (their work finishes first). */
  aclrtResetDevice(deviceId: number): number;
  /**
   * alignment is reserved (0); expectPtr is honoured exactly or the call
   * fails, as CANN documents for a user-chosen address; flags 0 or 1 (page
   * size hint, accepted by the acl layer).
   */
  aclrtReserveMemAddress(
    virPtr: Box<bigint>,
    size: Size,
    alignment: Size,
    expectPtr: Pointer,
    flags: Size,
  ): number;
  aclrtReleaseMemAddress(virPtr: Pointer): number;
  aclrtMallocPhysical(handle: Box<bigint>, size: Size, propArg: aclrtPhysicalMemProp, flags: Size): number;
  /** Drop this handle; memory still mapped lives on until its last aclrtUnmapMem (core's refcount). */
  aclrtFreePhysical(handle: Pointer): number;
  aclrtMapMem(virPtr: Pointer, size: Size, offset: Size, handle: Pointer, flags: Size): number;
  aclrtUnmapMem(virPtr: Pointer): number;
  /**
   * virPtr and size must be exactly one aclrtMapMem's (CANN's documentation).
   * CANN documents only READWRITE as supported today; NONE and READ, which
   * aclrtMemAccessFlags defines, are simulated too.
   */
  aclrtMemSetAccess(virPtr: Pointer, size: Size, desc: readonly aclrtMemAccessDesc[], count: Size): number;
  aclrtMemGetAccess(virPtr: Pointer, locationArg: aclrtMemLocation, flag: Box<number>): number;
  /** A new reference to the handle mapped at any address inside a mapping; undo with aclrtFreePhysical. */
  aclrtMemRetainAllocationHandle(virPtr: Pointer, handle: Box<bigint>): number;
  aclrtMemGetAllocationGranularity(
    propArg: aclrtPhysicalMemProp,
    option: number,
    granularity: Box<number>,
  ): number;
  aclrtMemGetAllocationPropertiesFromHandle(handle: Pointer, prop: Box<aclrtPhysicalMemProp>): number;
  /**
   * flags: ACL_RT_VMM_EXPORT_FLAG_DEFAULT (importers must be named with
   * aclrtMemSetPidToShareableHandle) or ..._DISABLE_PID_VALIDATION. A handle
   * is exported at most once (CANN: handle and shareableHandle are one to one).
   */
  aclrtMemExportToShareableHandle(
    handle: Pointer,
    handleType: number,
    flags: Size,
    shareableHandle: Box<bigint>,
  ): number;
  /** Name the processes (by aclrtDeviceGetBareTgid's pid) that may import; called by the exporter. */
  aclrtMemSetPidToShareableHandle(shareableHandle: Size, pid: ArrayLike<number> | null, pidNum: Size): number;
  /** A handle in this process to memory another process exported. deviceId names the device it is used on. */
  aclrtMemImportFromShareableHandle(shareableHandle: Size, deviceId: number, handle: Box<bigint>): number;
  aclrtDeviceGetBareTgid(pid: Box<number>): number;
  /**
   * size rounds up to 32 bytes and gains 32 bytes of padding (none for the
   * 1 GiB huge-page policies), as CANN documents; core then maps whole
   * granules, so the padding shows when it crosses a 2 MiB boundary.
   */
  aclrtMalloc(devPtr: Box<bigint>, size: Size, policy: number): number;
  aclrtFree(devPtr: Pointer): number;
  aclrtGetMemInfo(attr: number, free: Box<number>, total: Box<number>): number;
  aclrtMemcpy(dst: MemcpyPointer, destMax: Size, src: MemcpyPointer, count: Size, kind: number): number;
  aclrtMemcpyAsync(
    dst: MemcpyPointer,
    destMax: Size,
    src: MemcpyPointer,
    count: Size,
    kind: number,
    stream: Pointer,
  ): number;
  aclrtMemset(devPtr: Pointer, maxCount: Size, value: number, count: Size): number;
  /** aclrtMemset on a stream (NULL: the default stream). */
  aclrtMemsetAsync(devPtr: Pointer, maxCount: Size, value: number, count: Size, stream: Pointer): number;
  aclrtCreateStream(stream: Box<bigint>): number;
  /** A NULL stream is the default stream: its work is everything submitted synchronously, so only the device's streams remain. */
  aclrtSynchronizeStream(stream: Pointer): number;
  aclrtDestroyStream(stream: Pointer): number;
  aclrtSynchronizeDevice(): number;
  /** The description of this process's most recent failed call, cleared by reading; null when there is none. */
  aclGetRecentErrMsg(): string | null;
}
/** aclrtMalloc's accounted size: up to a multiple of 32, plus the padding. */
export declare function aclMallocSize(size: number, padding?: number): number;
/** A process using Ascend ACL, on a simulated machine (default: one Ascend 910B). */
export declare function createAcl(options?: AclOptions): AclFlavor;
