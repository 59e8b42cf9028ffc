/** acl_rt.h's structs and opaque types as the ACL front end takes them. */

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

/** void* on the device side, aclrtDrvMemHandle, aclrtStream, aclrtEvent, aclrtContext: opaque pointers, 0 for NULL. */
export type Pointer = bigint | number | null | undefined;

/** What aclrtMemcpy's void* dst / const void* src can be here: a device address or a host buffer. */
export type MemcpyPointer = Pointer | Uint8Array;
