/**
 * CANN's own layers for an ACL process, as its public sources name them
 * (CANN's runtime and its open driver, read for this table; the exact chain
 * moves between CANN versions, so treat the inner frames as one version's):
 *
 *   acl  libascendcl: aclrt* (seed 2)
 *   rts  the runtime: its rt* API (rtReserveMemAddress, rtMapMem, ...) and
 *        NpuDriver::*, its one wrapper per driver call. The ApiDecorator /
 *        ApiImpl(Vmm) classes between the two only check and log and are left out.
 *   hal  the driver's user-mode library: halMem* (ascend_hal)
 *   svm  the driver's shared-virtual-memory module behind halMem*: vmm_* (svm_vmm.c)
 *
 * Unsure, and said where it matters below: which svm path an imported handle
 * takes (vmm_cross_app_mmap instead of vmm_single_app_mmap), what halMemSetAccess
 * does inside (not in the sources read: vmmkit's own device events stay), and the
 * one-step aclrtMalloc's inner frames.
 */
import type { RuntimeDescription } from '../../core/runtime.js';
import type { VendorLayers } from '../../core/trace.js';
import { type VendorView } from '../common/layers.js';
export declare const ACL_LAYERS: VendorLayers;
/**
 * The state in ACL's words: reserved virtual address ranges (virPtr), the
 * physical handles (aclrtDrvMemHandle) mapped into them, and each handle's
 * references. A handle freed while mapped is still listed (0 handle
 * references) until its last unmap, as aclrtFreePhysical defers the free.
 */
export declare function formatAclState(d: RuntimeDescription): string;
/** ACL's table for a process on `backend` (on the real NVIDIA driver the primitives are libcuda calls). */
export declare function aclLayers(backend: 'sim' | 'cuda'): VendorLayers;
export declare const ACL_VIEW: VendorView;
