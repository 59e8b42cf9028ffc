/**
 * The ACL calls an allocator's operations become when a snapshot replays on
 * the ACL front end (Note [A runtime through a front end]): the life seed 2
 * writes and torch_npu's expandable segments make (issue 31):
 * aclrtReserveMemAddress, aclrtMallocPhysical (ACL_HBM_MEM_HUGE pages of the
 * device), aclrtMapMem, aclrtUnmapMem, aclrtFreePhysical and
 * aclrtReleaseMemAddress, with the arguments torch_npu's ExpandableSegment
 * passes (Ascend/pytorch, torch_npu/csrc/core/npu/NPUCachingAllocator.cpp);
 * the one-step path is aclrtMalloc / aclrtFree.
 * aclrtMapMem already grants the memory's own device read-write (Note [ACL
 * map grants access], vmm.ts), and torch_npu's segments call no
 * aclrtMemSetAccess, so a grant the map made is no call here; any other is
 * aclrtMemSetAccess over each mapping, which ACL takes one at a time.
 */
import type { AccessDescriptor } from '../../core/runtime.js';
import type { Access } from '../../core/types.js';
import { internalError } from '../common/error-table.js';
import { currentDevice, type VendorRoute } from '../common/routed-runtime.js';
import type { AclFlavor } from './acl.js';
import * as C from './constants.js';
import { ACL_ERROR_TABLE } from './error-table.js';

/** The route of `acl`, which it initialises (aclInit, aclrtSetDevice(0)) as a program would first. */
export function aclRoute(acl: AclFlavor): VendorRoute {
  const rt = acl.runtime;
  const started = acl.aclInit(null);
  if (started !== C.ACL_SUCCESS) throw internalError(`aclInit answered ${started}`);
  const onDevice = currentDevice(C.ACL_SUCCESS, (device) => acl.aclrtSetDevice(device));
  const set = onDevice(0);
  if (set !== C.ACL_SUCCESS) throw internalError(`aclrtSetDevice(0) answered ${set}`);
  /** Whether the device already has `access` over the whole range (what aclrtMapMem granted). */
  const granted = (va: number, size: number, descriptors: readonly AccessDescriptor[], host?: Access) =>
    host === undefined &&
    rt.mappingsIn(va, size).length > 0 &&
    descriptors.every((d) => rt.mappingsIn(va, size).every((m) => rt.getAccess(m.va, d.device) === d.access));
  return {
    vendor: 'ACL',
    table: ACL_ERROR_TABLE,
    success: C.ACL_SUCCESS,
    // A hint is ACL's expectPtr, which CANN takes exactly or refuses (Note [ACL expectPtr], vmm.ts),
    // where core would place the range elsewhere: a start restored at the recorded addresses gets them.
    // Flags 1, as torch_npu's ExpandableSegment reserves (NPUCachingAllocator.cpp: expectPtr NULL, flags 1).
    reserve: (base, size, options) =>
      acl.aclrtReserveMemAddress(base, size, options.alignment ?? 0, options.hint ?? 0, 1),
    create: (handle, size, props) =>
      acl.aclrtMallocPhysical(
        handle,
        size,
        {
          handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
          allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
          memAttr: C.ACL_HBM_MEM_HUGE,
          location: { type: C.ACL_MEM_LOCATION_TYPE_DEVICE, id: props.location.id },
        },
        0,
      ),
    map: (va, size, handle, offset) => acl.aclrtMapMem(BigInt(va), size, offset, BigInt(handle), 0),
    setAccess: (va, size, descriptors, host) => {
      if (granted(va, size, descriptors, host)) return C.ACL_SUCCESS;
      const desc = descriptors.map((d) => ({
        flags: d.access,
        location: { type: C.ACL_MEM_LOCATION_TYPE_DEVICE, id: d.device },
      }));
      for (const m of rt.mappingsIn(va, size)) {
        const code = acl.aclrtMemSetAccess(BigInt(m.va), m.size, desc, desc.length);
        if (code !== C.ACL_SUCCESS) return code;
      }
      return C.ACL_SUCCESS;
    },
    // ACL's unmap takes no size: one call per mapping in the range (Note [ACL's size-less calls]).
    unmap: (va, size) => {
      for (const m of rt.mappingsIn(va, size)) {
        const code = acl.aclrtUnmapMem(BigInt(m.va));
        if (code !== C.ACL_SUCCESS) return code;
      }
      return C.ACL_SUCCESS;
    },
    release: (handle) => acl.aclrtFreePhysical(BigInt(handle)),
    free: (base) => acl.aclrtReleaseMemAddress(BigInt(base)),
    malloc: (ptr, device, size) => {
      const code = onDevice(device);
      return code !== C.ACL_SUCCESS ? code : acl.aclrtMalloc(ptr, size, C.ACL_MEM_MALLOC_HUGE_FIRST);
    },
    mfree: (va) => acl.aclrtFree(BigInt(va)),
    describe: () => acl.aclGetRecentErrMsg() ?? 'no message',
    dispose: () => acl.dispose(),
  };
}
