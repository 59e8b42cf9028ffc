import { type AclFlavor, type aclrtPhysicalMemProp, createAcl } from '../../../src/flavors/acl/acl.js';
import * as C from '../../../src/flavors/acl/constants.js';
import type { FlavorOptions } from '../../../src/flavors/common/process.js';

export const MiB = 1024 * 1024;
/** ACL's 2 MiB granularity on an Ascend 910B. */
export const G = 2 * MiB;

export function prop(over: Partial<aclrtPhysicalMemProp> = {}, device = 0): aclrtPhysicalMemProp {
  return {
    handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
    allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
    memAttr: C.ACL_HBM_MEM_HUGE,
    location: { id: device, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
    reserve: 0,
    ...over,
  };
}

/** A process after aclInit and aclrtSetDevice(0). */
export function ready(options: FlavorOptions = {}): AclFlavor {
  const acl = createAcl(options);
  expectOk(acl.aclInit(null));
  expectOk(acl.aclrtSetDevice(0));
  return acl;
}

export function expectOk(code: number): void {
  if (code !== C.ACL_SUCCESS) throw new Error(`expected ACL_SUCCESS, got ${code}`);
}

export function reserve(acl: AclFlavor, size = 4 * G): bigint {
  const p = { value: 0n };
  expectOk(acl.aclrtReserveMemAddress(p, size, 0, null, 0));
  return p.value;
}

export function mallocPhysical(acl: AclFlavor, size = G, device = 0): bigint {
  const h = { value: 0n };
  expectOk(acl.aclrtMallocPhysical(h, size, prop({}, device), 0));
  return h.value;
}

export const RW = (device = 0) => [
  {
    flags: C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE,
    location: { id: device, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
  },
];

/** Reserve, allocate, map and grant read-write: a ready range of `size` bytes. */
export function mapped(acl: AclFlavor, size = G): { va: bigint; handle: bigint } {
  const va = reserve(acl, size);
  const handle = mallocPhysical(acl, size);
  expectOk(acl.aclrtMapMem(va, size, 0, handle, 0));
  expectOk(acl.aclrtMemSetAccess(va, size, RW(), 1));
  return { va, handle };
}

export function pattern(n: number, seed = 1): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 17) & 0xff;
  return b;
}
