/**
 * Note [One list of driver functions]
 *
 * Every CUDA driver entry point vmmkit calls is declared here and nowhere
 * else, as a koffi prototype string, in the spirit of PyTorch's
 * ExpandableSegment DRIVER_API list. The `_v2` suffixes are the real exported
 * symbols (cuda.h #defines the plain names to them); the table key is the
 * exported symbol. Out-parameters are `_Out_`, and struct arguments are
 * declared as their structs, so a caller may pass plain one-element arrays and
 * objects (the conformance recorder does, to hand the driver exactly what a
 * case asks); vmmkit's own hot path passes typed arrays instead (Note
 * [Out-parameters as typed arrays]). Host buffers are plain `uint8_t *`, so the
 * driver reads and writes the Uint8Array's own bytes.
 *
 * Types follow cuda.h on LP64 Linux: CUdevice is int, CUdeviceptr and
 * CUmemGenericAllocationHandle are unsigned long long, CUcontext and CUstream
 * are pointers (declared as uintptr_t so they travel as plain integers), and
 * every enum is an int.
 */
import type { TypeObject } from 'koffi';
import { koffi as loadKoffi } from './koffi.js';

/** Struct declarations, each made once per koffi instance (koffi keeps names globally). */
export interface DriverTypes {
  readonly CUmemLocation: TypeObject;
  readonly CUmemAllocationProp: TypeObject;
  readonly CUmemAccessDesc: TypeObject;
}

/** Sizes measured on the H200 (DESIGN.md, "Real NVIDIA backend"). */
export const STRUCT_SIZES = { CUmemLocation: 8, CUmemAllocationProp: 32, CUmemAccessDesc: 12 } as const;

/**
 * Note [Out-parameters as typed arrays]
 *
 * koffi hands any TypedArray to a pointer parameter as the address of its own
 * bytes: no copy in, no copy back, whatever the pointee type or the `_Out_`
 * qualifier says. A plain array or object instead costs a heap block, an
 * element-by-element (or field-by-field) encode, a reference and a decode
 * after the call: measured on a do-nothing libcuda stand-in, the
 * reserve/create/map/setAccess/unmap/release/free cycle cost 3.0 us of FFI
 * with `_Out_` arrays and struct objects, 0.5 us with typed arrays. So the
 * checked layer (checked.ts) passes a reused BigUint64Array (or Int32Array)
 * for each out-parameter and reads it after the call, and encodes each struct
 * argument into a reused Uint8Array at the byte offsets below (checked against
 * koffi's own layout of the declared structs at load). The declarations keep
 * their real types and `_Out_`, so plain arrays and objects still work for
 * callers that want koffi to marshal (createRawCuda, the conformance cases).
 * 64-bit scalar arguments (CUdeviceptr, handles, sizes) travel as numbers:
 * koffi takes a number or a bigint at the same cost, and vmmkit's addresses
 * are numbers below 2^53.
 */
export const STRUCT_LAYOUT = {
  CUmemLocation: { type: 0, id: 4 },
  CUmemAllocationProp: {
    type: 0,
    requestedHandleTypes: 4,
    'location.type': 8,
    'location.id': 12,
    win32HandleMetaData: 16,
    'allocFlags.compressionType': 24,
    'allocFlags.gpuDirectRDMACapable': 25,
    'allocFlags.usage': 26,
  },
  CUmemAccessDesc: { 'location.type': 0, 'location.id': 4, flags: 8 },
} as const;

/** A CUmemAllocationProp's fields as vmmkit reads them back (cuMemGetAllocationPropertiesFromHandle). */
export interface DecodedProp {
  type: number;
  requestedHandleTypes: number;
  location: { type: number; id: number };
  allocFlags: { compressionType: number; gpuDirectRDMACapable: number; usage: number };
}

/** Decode an encoded CUmemAllocationProp (32 bytes, STRUCT_LAYOUT). */
export function decodeProp(bytes: Uint8Array): DecodedProp {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const L = STRUCT_LAYOUT.CUmemAllocationProp;
  return {
    type: v.getInt32(L.type, true),
    requestedHandleTypes: v.getInt32(L.requestedHandleTypes, true),
    location: { type: v.getInt32(L['location.type'], true), id: v.getInt32(L['location.id'], true) },
    allocFlags: {
      compressionType: v.getUint8(L['allocFlags.compressionType']),
      gpuDirectRDMACapable: v.getUint8(L['allocFlags.gpuDirectRDMACapable']),
      usage: v.getUint16(L['allocFlags.usage'], true),
    },
  };
}

/** Decode an encoded CUmemAccessDesc (12 bytes, STRUCT_LAYOUT). */
export function decodeAccessDesc(bytes: Uint8Array): {
  location: { type: number; id: number };
  flags: number;
} {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const L = STRUCT_LAYOUT.CUmemAccessDesc;
  return {
    location: { type: v.getInt32(L['location.type'], true), id: v.getInt32(L['location.id'], true) },
    flags: v.getInt32(L.flags, true),
  };
}

/** Decode an encoded CUmemLocation (8 bytes, STRUCT_LAYOUT). */
export function decodeLocation(bytes: Uint8Array): { type: number; id: number } {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { type: v.getInt32(0, true), id: v.getInt32(4, true) };
}

let declared: DriverTypes | undefined;

/**
 * Declare the structs (idempotent: koffi's type names are process-wide, so a
 * second declaration under the same name would throw). This is a cache of
 * immutable type objects, not mutable state of any machine.
 */
export function declareDriverTypes(): DriverTypes {
  if (declared) return declared;
  const koffi = loadKoffi();
  const CUmemLocation = koffi.struct('CUmemLocation', { type: 'int', id: 'int' });
  const CUmemAllocationFlags = koffi.struct('CUmemAllocationProp_allocFlags', {
    compressionType: 'uchar',
    gpuDirectRDMACapable: 'uchar',
    usage: 'ushort',
    reserved: koffi.array('uchar', 4),
  });
  const CUmemAllocationProp = koffi.struct('CUmemAllocationProp', {
    type: 'int',
    requestedHandleTypes: 'int',
    location: CUmemLocation,
    win32HandleMetaData: 'uintptr_t',
    allocFlags: CUmemAllocationFlags,
  });
  const CUmemAccessDesc = koffi.struct('CUmemAccessDesc', { location: CUmemLocation, flags: 'int' });
  koffi.alias('CUresult', 'int');
  koffi.alias('CUdevice', 'int');
  koffi.alias('CUdeviceptr', 'uint64_t');
  koffi.alias('CUmemGenericAllocationHandle', 'uint64_t');
  koffi.alias('CUcontext', 'uintptr_t');
  koffi.alias('CUstream', 'uintptr_t');
  koffi.alias('CUevent', 'uintptr_t');
  const types = { CUmemLocation, CUmemAllocationProp, CUmemAccessDesc };
  for (const [name, size] of Object.entries(STRUCT_SIZES)) {
    const actual = koffi.sizeof(types[name as keyof typeof STRUCT_SIZES]);
    if (actual !== size) throw new Error(`koffi declares ${name} as ${actual} bytes, cuda.h says ${size}`);
  }
  for (const [name, fields] of Object.entries(STRUCT_LAYOUT)) {
    for (const [path, offset] of Object.entries(fields)) {
      let type: TypeObject = types[name as keyof typeof STRUCT_LAYOUT];
      let at = 0;
      for (const member of path.split('.')) {
        at += koffi.offsetof(type, member);
        type = type.members![member].type;
      }
      if (at !== offset)
        throw new Error(`koffi puts ${name}.${path} at byte ${at}, vmmkit encodes it at ${offset}`);
    }
  }
  declared = types;
  return types;
}

/** The driver functions vmmkit uses, by exported symbol. */
export const DRIVER_API = {
  cuInit: 'CUresult cuInit(unsigned int flags)',
  cuDriverGetVersion: 'CUresult cuDriverGetVersion(_Out_ int *driverVersion)',
  cuDeviceGet: 'CUresult cuDeviceGet(_Out_ CUdevice *device, int ordinal)',
  cuDeviceGetCount: 'CUresult cuDeviceGetCount(_Out_ int *count)',
  cuDeviceGetName: 'CUresult cuDeviceGetName(uint8_t *name, int len, CUdevice dev)',
  cuDeviceTotalMem_v2: 'CUresult cuDeviceTotalMem_v2(_Out_ size_t *bytes, CUdevice dev)',
  cuDeviceGetAttribute: 'CUresult cuDeviceGetAttribute(_Out_ int *pi, int attrib, CUdevice dev)',
  cuDeviceCanAccessPeer:
    'CUresult cuDeviceCanAccessPeer(_Out_ int *canAccessPeer, CUdevice dev, CUdevice peerDev)',
  cuDevicePrimaryCtxRetain: 'CUresult cuDevicePrimaryCtxRetain(_Out_ CUcontext *pctx, CUdevice dev)',
  cuDevicePrimaryCtxRelease_v2: 'CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)',
  cuDevicePrimaryCtxGetState:
    'CUresult cuDevicePrimaryCtxGetState(CUdevice dev, _Out_ unsigned int *flags, _Out_ int *active)',
  cuDevicePrimaryCtxReset_v2: 'CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)',
  cuCtxSetCurrent: 'CUresult cuCtxSetCurrent(CUcontext ctx)',
  cuCtxGetCurrent: 'CUresult cuCtxGetCurrent(_Out_ CUcontext *pctx)',
  cuCtxGetDevice: 'CUresult cuCtxGetDevice(_Out_ CUdevice *device)',
  cuCtxSynchronize: 'CUresult cuCtxSynchronize()',
  // New in CUDA 13.0, beside the unchanged plain names: the context as an argument (NULL: the current one). Optional.
  cuCtxGetDevice_v2: 'CUresult cuCtxGetDevice_v2(_Out_ CUdevice *device, CUcontext ctx)',
  cuCtxSynchronize_v2: 'CUresult cuCtxSynchronize_v2(CUcontext ctx)',
  cuCtxPushCurrent_v2: 'CUresult cuCtxPushCurrent_v2(CUcontext ctx)',
  cuCtxPopCurrent_v2: 'CUresult cuCtxPopCurrent_v2(_Out_ CUcontext *pctx)',
  // The v2 shape (pctx, flags, dev): CUDA 13's cuda.h maps cuCtxCreate to _v4, but libcuda keeps exporting _v2.
  cuCtxCreate_v2: 'CUresult cuCtxCreate_v2(_Out_ CUcontext *pctx, unsigned int flags, CUdevice dev)',
  // CUDA 13.0's shape. CUctxCreateParams (24 bytes) is passed as its bytes, built by the raw binding:
  // execAffinityParams at 0 (a pointer to 8-byte CUexecAffinityParams: int type, unsigned val),
  // numExecAffinityParams at 8, cigParams at 16 (a pointer to int sharedDataType, void *sharedData at 8).
  // Optional: a driver before 13.0 lacks it, and calls answer CUDA_ERROR_NOT_FOUND (OPTIONAL_SYMBOLS).
  cuCtxCreate_v4:
    'CUresult cuCtxCreate_v4(_Out_ CUcontext *pctx, uint8_t *ctxCreateParams, unsigned int flags, CUdevice dev)',
  cuCtxDestroy_v2: 'CUresult cuCtxDestroy_v2(CUcontext ctx)',
  cuCtxEnablePeerAccess: 'CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int flags)',
  cuCtxDisablePeerAccess: 'CUresult cuCtxDisablePeerAccess(CUcontext peerContext)',
  cuMemGetAllocationGranularity:
    'CUresult cuMemGetAllocationGranularity(_Out_ size_t *granularity, const CUmemAllocationProp *prop, int option)',
  cuMemAddressReserve:
    'CUresult cuMemAddressReserve(_Out_ CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)',
  cuMemAddressFree: 'CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)',
  cuMemCreate:
    'CUresult cuMemCreate(_Out_ CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags)',
  cuMemRelease: 'CUresult cuMemRelease(CUmemGenericAllocationHandle handle)',
  cuMemMap:
    'CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags)',
  cuMemUnmap: 'CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)',
  cuMemSetAccess:
    'CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)',
  cuMemGetAccess:
    'CUresult cuMemGetAccess(_Out_ unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)',
  cuMemRetainAllocationHandle:
    'CUresult cuMemRetainAllocationHandle(_Out_ CUmemGenericAllocationHandle *handle, CUdeviceptr addr)',
  cuMemGetAllocationPropertiesFromHandle:
    'CUresult cuMemGetAllocationPropertiesFromHandle(_Out_ CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)',
  // The shareable handle is an int (POSIX fd) or 64 bytes (fabric): the caller passes a 64-byte buffer.
  cuMemExportToShareableHandle:
    'CUresult cuMemExportToShareableHandle(uint8_t *shareableHandle, CUmemGenericAllocationHandle handle, int handleType, unsigned long long flags)',
  // For a POSIX fd, C passes (void *)(uintptr_t)fd: the fd travels as the pointer's value.
  cuMemImportFromShareableHandle:
    'CUresult cuMemImportFromShareableHandle(_Out_ CUmemGenericAllocationHandle *handle, uintptr_t osHandle, int shHandleType)',
  cuMemAlloc_v2: 'CUresult cuMemAlloc_v2(_Out_ CUdeviceptr *dptr, size_t bytesize)',
  cuMemFree_v2: 'CUresult cuMemFree_v2(CUdeviceptr dptr)',
  cuMemGetInfo_v2: 'CUresult cuMemGetInfo_v2(_Out_ size_t *free, _Out_ size_t *total)',
  // Either out-parameter may be NULL (null here).
  cuMemGetAddressRange_v2:
    'CUresult cuMemGetAddressRange_v2(_Out_ CUdeviceptr *pbase, _Out_ size_t *psize, CUdeviceptr dptr)',
  // The attribute's type decides how many bytes the driver writes (1 to 8): the caller passes 8 zeroed bytes.
  cuPointerGetAttribute: 'CUresult cuPointerGetAttribute(uint8_t *data, int attribute, CUdeviceptr ptr)',
  // data is an array of numAttributes pointers, each to the bytes of one attribute's value (passed as addresses).
  cuPointerGetAttributes:
    'CUresult cuPointerGetAttributes(unsigned int numAttributes, const int *attributes, const uint64_t *data, CUdeviceptr ptr)',
  // Page-locked host memory: *pp is a host address (read back as a bigint), freed by cuMemFreeHost.
  cuMemAllocHost_v2: 'CUresult cuMemAllocHost_v2(_Out_ uint64_t *pp, size_t bytesize)',
  cuMemFreeHost: 'CUresult cuMemFreeHost(void *p)',
  cuMemHostAlloc: 'CUresult cuMemHostAlloc(_Out_ uint64_t *pp, size_t bytesize, unsigned int Flags)',
  cuMemHostGetFlags: 'CUresult cuMemHostGetFlags(_Out_ unsigned int *pFlags, void *p)',
  // The host pointer travels as its address (a pinned buffer's, a JS buffer's own bytes', or a number).
  cuMemHostGetDevicePointer_v2:
    'CUresult cuMemHostGetDevicePointer_v2(_Out_ CUdeviceptr *pdptr, uintptr_t p, unsigned int Flags)',
  // Unified addressing: host operands travel as their addresses (a pinned buffer's, or a JS buffer's own bytes).
  cuMemcpy: 'CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)',
  cuMemcpyAsync:
    'CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)',
  cuMemcpyHtoD_v2: 'CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const uint8_t *src, size_t n)',
  cuMemcpyDtoH_v2: 'CUresult cuMemcpyDtoH_v2(uint8_t *dst, CUdeviceptr src, size_t n)',
  cuMemcpyDtoD_v2: 'CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)',
  cuMemcpyPeer:
    'CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t n)',
  cuMemcpyHtoDAsync_v2:
    'CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const uint8_t *src, size_t n, CUstream stream)',
  // Only pageable (JS) host memory is passed, for which the driver completes DtoH before returning.
  cuMemcpyDtoHAsync_v2:
    'CUresult cuMemcpyDtoHAsync_v2(uint8_t *dst, CUdeviceptr src, size_t n, CUstream stream)',
  cuMemcpyDtoDAsync_v2:
    'CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)',
  cuMemsetD8_v2: 'CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n)',
  cuMemsetD16_v2: 'CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short value, size_t n)',
  cuMemsetD32_v2: 'CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t n)',
  cuMemsetD8Async:
    'CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream)',
  cuStreamCreate: 'CUresult cuStreamCreate(_Out_ CUstream *stream, unsigned int flags)',
  cuStreamSynchronize: 'CUresult cuStreamSynchronize(CUstream stream)',
  cuStreamQuery: 'CUresult cuStreamQuery(CUstream hStream)',
  cuStreamDestroy_v2: 'CUresult cuStreamDestroy_v2(CUstream stream)',
  cuStreamIsCapturing: 'CUresult cuStreamIsCapturing(CUstream stream, _Out_ int *captureStatus)',
  // The mode goes in and the previous mode comes back through the same int.
  cuThreadExchangeStreamCaptureMode: 'CUresult cuThreadExchangeStreamCaptureMode(_Inout_ int *mode)',
  cuEventCreate: 'CUresult cuEventCreate(_Out_ CUevent *phEvent, unsigned int Flags)',
  cuEventRecord: 'CUresult cuEventRecord(CUevent hEvent, CUstream hStream)',
  cuEventRecordWithFlags:
    'CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)',
  // CUDA_SUCCESS when the marked work is done, CUDA_ERROR_NOT_READY (600) while it is not: not a failure.
  cuEventQuery: 'CUresult cuEventQuery(CUevent hEvent)',
  cuEventSynchronize: 'CUresult cuEventSynchronize(CUevent hEvent)',
  cuEventDestroy_v2: 'CUresult cuEventDestroy_v2(CUevent hEvent)',
  cuEventElapsedTime: 'CUresult cuEventElapsedTime(_Out_ float *pMilliseconds, CUevent hStart, CUevent hEnd)',
  // CUDA 12.8's: cuda.h 13.0 maps cuEventElapsedTime to it. Optional: an older libcuda lacks it.
  cuEventElapsedTime_v2:
    'CUresult cuEventElapsedTime_v2(_Out_ float *pMilliseconds, CUevent hStart, CUevent hEnd)',
  cuStreamWaitEvent: 'CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)',
  cuMemsetD16Async:
    'CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, CUstream stream)',
  cuMemsetD32Async:
    'CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream)',
  // Stream capture (Note [Stream capture] in src/core/graphs.ts). CUgraph, CUgraphExec and CUgraphNode
  // are pointers, passed as uintptr_t. cuda.h 13.0 maps cuStreamBeginCapture to _v2,
  // cuStreamGetCaptureInfo to _v3 and cuGraphInstantiate to cuGraphInstantiateWithFlags.
  cuStreamBeginCapture_v2: 'CUresult cuStreamBeginCapture_v2(CUstream hStream, int mode)',
  cuStreamEndCapture: 'CUresult cuStreamEndCapture(CUstream hStream, _Out_ uintptr_t *phGraph)',
  // Every out-parameter may be NULL; dependencies_out and edgeData_out are always NULL here.
  cuStreamGetCaptureInfo_v3:
    'CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, _Out_ int *captureStatus_out, _Out_ uint64_t *id_out, _Out_ uintptr_t *graph_out, _Out_ uintptr_t *dependencies_out, _Out_ uintptr_t *edgeData_out, _Out_ size_t *numDependencies_out)',
  cuGraphInstantiateWithFlags:
    'CUresult cuGraphInstantiateWithFlags(_Out_ uintptr_t *phGraphExec, uintptr_t hGraph, unsigned long long flags)',
  cuGraphLaunch: 'CUresult cuGraphLaunch(uintptr_t hGraphExec, CUstream hStream)',
  cuGraphDestroy: 'CUresult cuGraphDestroy(uintptr_t hGraph)',
  cuGraphExecDestroy: 'CUresult cuGraphExecDestroy(uintptr_t hGraphExec)',
  // With nodes NULL, *numNodes comes back as the graph's node count.
  cuGraphGetNodes: 'CUresult cuGraphGetNodes(uintptr_t hGraph, uintptr_t *nodes, _Inout_ size_t *numNodes)',
  cuGetErrorName: 'CUresult cuGetErrorName(CUresult error, _Out_ const char **str)',
  cuGetErrorString: 'CUresult cuGetErrorString(CUresult error, _Out_ const char **str)',
} as const;

export type DriverSymbol = keyof typeof DRIVER_API;

/** Symbols an older libcuda may lack: bound when present, else answering CUDA_ERROR_NOT_FOUND (500). */
export const OPTIONAL_SYMBOLS: ReadonlySet<DriverSymbol> = new Set([
  'cuCtxCreate_v4',
  'cuEventElapsedTime_v2',
  'cuCtxGetDevice_v2',
  'cuCtxSynchronize_v2',
]);
