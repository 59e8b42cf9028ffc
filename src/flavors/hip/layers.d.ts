/**
 * HIP's own layers (seed 1, sections 2.3, 4, 4.5, 4.6 and 7): what each
 * vmmkit span is in ROCm's stack, so a traced HIP process reads as a ROCm
 * engineer's breakpoints do:
 *
 *   hip     HIP runtime API, hip_vm.cpp (hip::GenericAllocation is the handle)
 *   rocclr  ROCclr's ROCm device, rocdevice.cpp (roc::Device::virtualAlloc, ...)
 *   rocr    ROCr: hsa_amd_vmem_* and core::Runtime::VMemory*
 *   thunk   libhsakmt (hsaKmt*), which issues the KFD ioctls
 *
 * ROCclr reaches ROCr through Hsa::vmem_*, dlsym'd pointers to the same
 * hsa_amd_vmem_* functions; they add no frame of their own and are left out.
 * Copies, sets and streams (hipMemcpy, hipMemset, hipStream*) are outside
 * seed 1's VMM path and keep vmmkit's generic names under the hip frame.
 *
 * Where vmmkit's order differs from ROCm's the table follows ROCm's frames and
 * says so: HIP takes the map reference (ga->retain) before virtualMap, vmmkit
 * counts it after the backend map; HIP always calls SyncAllStreams before an
 * unmap, vmmkit only waits when streams exist (same effect: no work in flight).
 */
import type { RuntimeDescription } from '../../core/runtime.js';
import type { VendorLayers } from '../../core/trace.js';
import { type VendorView } from '../common/layers.js';
export declare const HIP_LAYERS: VendorLayers;
/**
 * The state in seed 1's object model (section 2.3): each reservation is a
 * parent virtual amd::Memory (VA only), each mapping a sub-buffer cut from it
 * and cross-linked to the physical memory object of a hip::GenericAllocation,
 * whose one reference count is handle references plus sub-buffers (Note [HIP
 * handle lifetime]); hipMalloc memory is one amd::Buffer.
 */
export declare function formatHipState(d: RuntimeDescription): string;
/** HIP's table for a process on `backend` (on the real NVIDIA driver the primitives are libcuda calls). */
export declare function hipLayers(backend: 'sim' | 'cuda'): VendorLayers;
export declare const HIP_VIEW: VendorView;
