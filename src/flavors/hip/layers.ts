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
import { BACKEND_EVENT_OPERATIONS } from '../../backend/backend.js';
import type { RuntimeDescription } from '../../core/runtime.js';
import type { VendorLayers } from '../../core/trace.js';
import { Access } from '../../core/types.js';
import {
  devicesOf,
  frameOf,
  hex,
  layersFor,
  placeOf,
  renderState,
  type VendorView,
} from '../common/layers.js';

const hip = frameOf('hip');
const rocclr = frameOf('rocclr');
const rocr = frameOf('rocr');
const thunk = frameOf('thunk');

export const HIP_LAYERS: VendorLayers = {
  vendor: 'HIP',
  api: 'hip',
  steps: {
    // 4.1 hipMemAddressReserve: one reservation for every device (g_devices[0]).
    'core:reserve': {
      path: [rocclr('roc::Device::virtualAlloc')],
      // The parent virtual amd::Memory (kParent = true): VA only, no physical memory.
      leave: [rocclr('CreateVirtualBuffer')],
    },
    'backend:reserve': {
      // VMemoryAddressReserve asks libhsakmt for address space only (OnlyAddress | FixedAddress).
      path: [
        rocr('hsa_amd_vmem_address_reserve'),
        rocr('core::Runtime::VMemoryAddressReserve'),
        thunk('hsaKmtAllocMemoryAlign'),
      ],
    },
    // 4.5 hipMemAddressFree -> virtualFree -> DestroyVirtualBuffer + hsa_amd_vmem_address_free.
    'core:free': { path: [rocclr('roc::Device::virtualFree')], enter: [rocclr('DestroyVirtualBuffer')] },
    // Not in seed 1: that the address range goes back through hsaKmtFreeMemory (section 7 lists it).
    'backend:free': { path: [rocr('hsa_amd_vmem_address_free'), thunk('hsaKmtFreeMemory')] },

    // 4.2 hipMemCreate: a ROCCLR_MEM_PHYMEM buffer wrapped in a hip::GenericAllocation (the handle).
    'core:create': { path: [rocclr('roc::Device::deviceVmemAlloc')] },
    'flavor:hipMemCreate > core:create': {
      path: [rocclr('roc::Device::deviceVmemAlloc')],
      after: [hip('new hip::GenericAllocation')],
    },
    'backend:create': {
      path: [rocr('hsa_amd_vmem_handle_create'), rocr('core::Runtime::VMemoryHandleCreate')],
    },
    // 4.5 hipMemRelease: ga->release(); at zero deviceVmemRelease -> vmem_handle_release.
    'core:release': { path: [hip('hip::GenericAllocation::release')] },
    'backend:release': {
      // hsaKmtFreeMemory under the handle release is our reading of section 7, not stated in seed 1.
      path: [
        rocclr('roc::Device::deviceVmemRelease'),
        rocr('hsa_amd_vmem_handle_release'),
        thunk('hsaKmtFreeMemory'),
      ],
      argsAt: 1,
    },

    // 4.3 hipMemMap: bookkeeping only; the page tables come with hipMemSetAccess.
    'flavor:hipMemMap > core:map': {
      path: [rocclr('roc::Device::virtualMap')],
      before: [hip('hip::GenericAllocation::retain')],
      enter: [rocclr('MapMemObjBookkeeping')],
      // Cross-links the sub-buffer and the physical memory object (phys_mem_obj).
      leave: [rocclr('FinalizeMapMemObjBookkeeping')],
    },
    'core:map': {
      path: [rocclr('roc::Device::virtualMap')],
      enter: [rocclr('MapMemObjBookkeeping')],
      leave: [rocclr('FinalizeMapMemObjBookkeeping')],
    },
    'backend:map': { path: [rocr('hsa_amd_vmem_map')] },
    // VMemoryHandleMap records the binding; no ioctl.
    'backend:map > device:vm.bind': { path: [rocr('core::Runtime::VMemoryHandleMap')] },

    // 4.4 hipMemSetAccess: per descriptor, SetMemAccess -> vmem_set_access; the GPU's page tables
    // are built per handle through KfdDriver::Map -> hsaKmtMemoryVaMap.
    'flavor:hipMemSetAccess': { path: [hip('hipMemSetAccess')], enter: [hip('ValidateSubBufferCoverage')] },
    'core:setAccess': { path: [rocclr('roc::Device::SetMemAccess')] },
    'backend:setAccess': {
      path: [rocr('hsa_amd_vmem_set_access'), rocr('core::Runtime::VMemorySetAccess')],
    },
    'backend:setAccess > device:pte.set': {
      path: [
        rocr('core::Runtime::VMemorySetAccessPerHandle'),
        rocr('KfdDriver::Map'),
        thunk('hsaKmtMemoryVaMap'),
      ],
      argsAt: 2,
    },
    // Access withdrawn (flags None): the per-handle step unmaps from the GPU. That it goes
    // through hsaKmtMemoryVaUnmap is our reading, not stated in seed 1.
    'backend:setAccess > device:pte.clear': {
      path: [rocr('core::Runtime::VMemorySetAccessPerHandle'), thunk('hsaKmtMemoryVaUnmap')],
      argsAt: 1,
    },

    // 4.5 hipMemUnmap: pass 1 validates the sub-buffer chain, pass 2 syncs every stream,
    // pass 3 unmaps sub-buffer by sub-buffer, each dropping its GenericAllocation reference.
    'flavor:hipMemUnmap': { path: [hip('hipMemUnmap')], enter: [hip('ValidateSubBufferCoverage')] },
    'core:unmap': { path: [], before: [hip('SyncAllStreams')] },
    'core:unmap > backend:synchronizeDevice': { path: [] },
    'backend:unmap': {
      path: [rocclr('roc::Device::virtualUnmap'), rocr('hsa_amd_vmem_unmap')],
      argsAt: 1,
      after: [hip('hip::GenericAllocation::release')],
    },
    'backend:unmap > device:pte.clear': { path: [thunk('hsaKmtMemoryVaUnmap')] },

    // 4.6 sharing and queries.
    'core:exportFd': { path: [rocclr('roc::Device::ExportShareableVMMHandle')] },
    'backend:exportFd': { path: [rocr('hsa_amd_vmem_export_shareable_handle')] },
    'core:importFd': {
      path: [rocclr('roc::Device::ImportShareableVMMHandle')],
      after: [hip('new hip::GenericAllocation')],
    },
    'backend:importFd': {
      path: [rocclr('ImportShareableHSAHandle'), rocr('hsa_amd_vmem_import_shareable_handle')],
      argsAt: 1,
    },
    // The GenericAllocation found through phys_mem_obj->getUserData().data; a runtime-side count only.
    'core:retain': { path: [hip('hip::GenericAllocation::retain')] },
    'flavor:hipMemGetAllocationPropertiesFromHandle': {
      path: [hip('hipMemGetAllocationPropertiesFromHandle')],
      enter: [hip('hip::GenericAllocation::GetProperties')],
    },
    'flavor:hipMemGetAccess': {
      path: [hip('hipMemGetAccess')],
      enter: [[rocclr('roc::Device::GetMemAccess'), rocr('hsa_amd_vmem_get_access')]],
    },

    // 2.1 the one-step path, for contrast: one pool allocation does reserve, create, map and access.
    'core:malloc': {
      path: [
        hip('ihipMalloc'),
        rocclr('amd::SvmBuffer::malloc'),
        rocclr('roc::Device::deviceLocalAlloc'),
        rocr('hsa_amd_memory_pool_allocate'),
      ],
      opaque: true,
    },
    // Seed 1 does not trace hipFree; hsa_amd_memory_pool_free is the pool allocation's public
    // counterpart, the ROCclr frames between are not named here.
    'core:mfree': { path: [hip('ihipFree'), rocr('hsa_amd_memory_pool_free')], opaque: true },

    // Events (clr's hip_event.cpp; not in seed 1): a marker command on the stream's queue.
    'core:createEvent': { path: [hip('ihipEventCreateWithFlags')] },
    'core:recordEvent': { path: [hip('hipEventRecord_common'), hip('hip::Event::addMarker')] },
    'core:queryEvent': { path: [hip('ihipEventQuery'), hip('hip::Event::query')] },
    'core:synchronizeEvent': { path: [hip('hip::Event::synchronize')] },
    'core:streamWaitEvent': { path: [hip('hip::Event::streamWait')] },
    'core:destroyEvent': { path: [hip('delete hip::Event')] },
    // The simulated markers have no counterpart below the runtime worth naming.
    ...Object.fromEntries(BACKEND_EVENT_OPERATIONS.map((op) => [`backend:${op}`, { path: [] }])),
    // hipDeviceReset: the current device's resources, released through the calls each one has.
    'core:resetDevice': { path: [hip('hip::Device::Reset')] },
  },
};

const PROT: Record<Access, string> = {
  [Access.None]: 'hipMemAccessFlagsProtNone',
  [Access.Read]: 'hipMemAccessFlagsProtRead',
  [Access.ReadWrite]: 'hipMemAccessFlagsProtReadWrite',
};

/**
 * The state in seed 1's object model (section 2.3): each reservation is a
 * parent virtual amd::Memory (VA only), each mapping a sub-buffer cut from it
 * and cross-linked to the physical memory object of a hip::GenericAllocation,
 * whose one reference count is handle references plus sub-buffers (Note [HIP
 * handle lifetime]); hipMalloc memory is one amd::Buffer.
 */
export function formatHipState(d: RuntimeDescription): string {
  return renderState(d, {
    process: (x) => `HIP process ${x.pid} (${devicesOf(x)})`,
    reservation: (r) => `parent virtual amd::Memory ${hex(r.base)} +${hex(r.size)} (kParent, VA only)`,
    mapping: (m, access) =>
      `sub-buffer ${hex(m.va)} +${hex(m.size)} <-> phys_mem_obj of hip::GenericAllocation ${hex(m.handle)}` +
      ` (offset ${hex(m.offset)}); ${access}`,
    oneStep: (r, access) =>
      `amd::Buffer ${hex(r.base)} +${hex(r.size)} (hipMalloc: memory and VA in one); ${access}`,
    allocation: (a, at) =>
      `hip::GenericAllocation ${hex(a.handle)}: phys amd::Memory (ROCCLR_MEM_PHYMEM) ${hex(a.size)} on ` +
      `${placeOf(a.location)}${a.origin === 'imported' ? ', imported' : ''}; refcount ${a.handleRefs + a.mapRefs} ` +
      `(${a.handleRefs} handle, ${a.mapRefs} sub-buffer${a.mapRefs === 1 ? '' : 's'})` +
      (at.length > 0 ? `; sub-buffers at ${at.map(hex).join(', ')}` : ''),
    access: (a) => PROT[a],
  });
}

/** HIP's table for a process on `backend` (on the real NVIDIA driver the primitives are libcuda calls). */
export function hipLayers(backend: string): VendorLayers {
  return layersFor(HIP_LAYERS, backend);
}

export const HIP_VIEW: VendorView = { layers: HIP_LAYERS, formatState: formatHipState };
