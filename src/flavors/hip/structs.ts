/** hip_runtime_api.h's structs and opaque types as the HIP front end takes them. */

/** hipMemLocation */
export interface hipMemLocation {
  type: number;
  id: number;
}

/** hipMemAllocationProp (win32HandleMetaData and allocFlags are kept and reported, not interpreted). */
export interface hipMemAllocationProp {
  type: number;
  requestedHandleTypes: number;
  location: hipMemLocation;
  win32HandleMetaData?: bigint | number;
  allocFlags?: { compressionType?: number; gpuDirectRDMACapable?: number; usage?: number };
}

/** hipMemAccessDesc */
export interface hipMemAccessDesc {
  location: hipMemLocation;
  flags: number;
}

/** hipPointerAttribute_t (ROCm 6): what hipPointerGetAttributes writes, pointers as bigints. */
export interface hipPointerAttribute_t {
  readonly type: number;
  readonly device: number;
  readonly devicePointer: bigint;
  readonly hostPointer: bigint;
  readonly isManaged: number;
  readonly allocationFlags: number;
}

/** A device pointer (void*): null, a number or a bigint. */
export type HipPtr = bigint | number | null;
/** An opaque handle (hipMemGenericAllocationHandle_t, hipStream_t, hipEvent_t). */
export type HipHandle = bigint | number | null;
/** A hipMemcpy operand: a host buffer, or a device pointer. */
export type HipMemory = Uint8Array | HipPtr;
