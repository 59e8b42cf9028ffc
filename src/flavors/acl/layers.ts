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

const rts = frameOf('rts');
const hal = frameOf('hal');
const svm = frameOf('svm');

export const ACL_LAYERS: VendorLayers = {
  vendor: 'ACL',
  api: 'acl',
  steps: {
    'core:reserve': { path: [rts('rtReserveMemAddress'), rts('NpuDriver::ReserveMemAddress')] },
    // Address space only: no physical page yet.
    'backend:reserve': { path: [hal('halMemAddressReserve'), svm('vmm_malloc_va')] },
    'core:free': { path: [rts('rtReleaseMemAddress'), rts('NpuDriver::ReleaseMemAddress')] },
    'backend:free': { path: [hal('halMemAddressFree'), svm('vmm_free_va')] },

    'core:create': { path: [rts('rtMallocPhysical'), rts('NpuDriver::MallocPhysical')] },
    // The handle starts with one reference; svm_module_mem_malloc asks the kernel for the pages.
    'backend:create': {
      path: [hal('halMemCreate'), svm('vmm_malloc_pa'), svm('svm_module_mem_malloc')],
    },
    // halMemRelease drops one reference (vmm_free_pa); the pages go at zero, so while the memory is
    // still mapped the free waits for the unmap, as aclrtFreePhysical documents.
    'core:release': {
      path: [rts('rtFreePhysical'), rts('NpuDriver::FreePhysical'), hal('halMemRelease'), svm('vmm_free_pa')],
    },
    'core:release > backend:release': { path: [] },

    'core:map': { path: [rts('rtMapMem'), rts('NpuDriver::MapMem')] },
    'backend:map': { path: [hal('halMemMap'), svm('vmm_mmap')] },
    // One segment registered for the range. CANN's driver also builds the page tables here
    // (svm_smm_client_map); vmmkit's device builds them at aclrtMemSetAccess, seen below.
    // An imported handle goes through vmm_cross_app_mmap instead (not told apart here).
    'backend:map > device:vm.bind': {
      path: [svm('vmm_single_app_mmap')],
      enter: [svm('svm_svmm_add_seg')],
    },

    // aclrtMapMem's grant to the memory's own device (Note [ACL map grants access], vmm.ts) is
    // the page-table build CANN's driver does inside the map: no frames of its own.
    'flavor:aclrtMapMem > core:setAccess': { path: [], opaque: true },

    'core:unmap': { path: [rts('rtUnmapMem'), rts('NpuDriver::UnmapMem')] },
    // Segment removed and the reference dropped before the page tables go.
    'backend:unmap': {
      path: [hal('halMemUnmap'), svm('vmm_munmap')],
      enter: [svm('svm_svmm_del_seg'), svm('vmm_free_pa')],
    },
    'backend:unmap > device:pte.clear': { path: [svm('svm_smm_client_unmap')] },
    // A free deferred to this unmap completes inside vmm_free_pa above.
    'core:unmap > backend:release': { path: [] },

    'core:setAccess': { path: [rts('rtMemSetAccess'), rts('NpuDriver::MemSetAccess')] },
    'backend:setAccess': { path: [hal('halMemSetAccess')] },

    'core:retain': { path: [rts('rtMemRetainAllocationHandle')] },
    'core:exportShareable': {
      path: [rts('rtMemExportToShareableHandle'), rts('NpuDriver::ExportToShareableHandle')],
    },
    'backend:exportShareable': { path: [hal('halMemExportToShareableHandle')] },
    'core:allowImport': {
      path: [rts('rtMemSetPidToShareableHandle'), rts('NpuDriver::SetPidToShareableHandle')],
    },
    'backend:allowImport': { path: [hal('halMemSetPidToShareableHandle')] },
    'core:importShareable': {
      path: [rts('rtMemImportFromShareableHandle'), rts('NpuDriver::ImportFromShareableHandle')],
    },
    'backend:importShareable': { path: [hal('halMemImportFromShareableHandle')] },
    'flavor:aclrtMemGetAccess': {
      path: [frameOf('acl')('aclrtMemGetAccess')],
      enter: [[rts('rtMemGetAccess'), rts('NpuDriver::MemGetAccess'), hal('halMemGetAccess')]],
    },
    'flavor:aclrtMemGetAllocationGranularity': {
      path: [frameOf('acl')('aclrtMemGetAllocationGranularity')],
      enter: [
        [
          rts('rtMemGetAllocationGranularity'),
          rts('NpuDriver::GetAllocationGranularity'),
          hal('halMemGetAllocationGranularity'),
        ],
      ],
    },

    // The one-step path: halMemAlloc reserves, allocates and maps in one driver call. The runtime's
    // frames between rtMalloc and halMemAlloc differ by memory type and are not named here.
    'core:malloc': { path: [rts('rtMalloc'), hal('halMemAlloc')], opaque: true },
    'core:mfree': { path: [rts('rtFree'), hal('halMemFree')], opaque: true },

    // IPC by key (Note [ACL IPC keys], sharing.ts): CANN's runtime names the memory with the driver's
    // shared-memory calls; vmmkit's token steps below are not CANN's and stay hidden.
    'core:exportMalloc': {
      path: [rts('rtsIpcMemGetExportKey'), rts('NpuDriver::CreateIpcMem'), hal('halShmemCreateHandle')],
      opaque: true,
    },
    'flavor:aclrtIpcMemSetImportPid > core:allowImport': {
      path: [rts('rtsIpcMemSetImportPid'), rts('NpuDriver::SetIpcMemPid'), hal('halShmemSetPidHandle')],
      opaque: true,
    },
    'core:importMalloc': {
      path: [rts('rtsIpcMemImportByKey'), rts('NpuDriver::OpenIpcMem'), hal('halShmemOpenHandleByDevId')],
      opaque: true,
    },
    // Close: an importer's unmaps its address, the exporter's destroys the name.
    'flavor:aclrtIpcMemClose > core:mfree': {
      path: [rts('rtsIpcMemClose'), rts('NpuDriver::CloseIpcMem'), hal('halShmemCloseHandle')],
      opaque: true,
    },
    'flavor:aclrtIpcMemClose > core:unshare': {
      path: [rts('rtsIpcMemClose'), rts('NpuDriver::DestroyIpcMem'), hal('halShmemDestroyHandle')],
      opaque: true,
    },
    // Events: the runtime's rtEvent* calls (the CANN runtime's names; what lies below is not public).
    'core:createEvent': { path: [rts('rtEventCreateWithFlag')] },
    'core:recordEvent': { path: [rts('rtEventRecord')] },
    'core:queryEvent': { path: [rts('rtEventQueryStatus')] },
    'core:synchronizeEvent': { path: [rts('rtEventSynchronize')] },
    'core:streamWaitEvent': { path: [rts('rtStreamWaitEvent')] },
    'core:destroyEvent': { path: [rts('rtEventDestroy')] },
    ...Object.fromEntries(BACKEND_EVENT_OPERATIONS.map((op) => [`backend:${op}`, { path: [] }])),
  },
};

const FLAGS: Record<Access, string> = {
  [Access.None]: 'ACL_RT_MEM_ACCESS_FLAGS_NONE',
  [Access.Read]: 'ACL_RT_MEM_ACCESS_FLAGS_READ',
  [Access.ReadWrite]: 'ACL_RT_MEM_ACCESS_FLAGS_READWRITE',
};

/**
 * The state in ACL's words: reserved virtual address ranges (virPtr), the
 * physical handles (aclrtDrvMemHandle) mapped into them, and each handle's
 * references. A handle freed while mapped is still listed (0 handle
 * references) until its last unmap, as aclrtFreePhysical defers the free.
 */
export function formatAclState(d: RuntimeDescription): string {
  return renderState(d, {
    process: (x) => `ACL process ${x.pid} (${devicesOf(x)})`,
    reservation: (r) => `virtual address range ${hex(r.base)} +${hex(r.size)} (aclrtReserveMemAddress)`,
    mapping: (m, access) =>
      `mapped ${hex(m.va)} +${hex(m.size)} -> aclrtDrvMemHandle ${hex(m.handle)} (offset ${hex(m.offset)}); ${access}`,
    oneStep: (r, access) => `aclrtMalloc memory ${hex(r.base)} +${hex(r.size)}; ${access}`,
    allocation: (a, at) =>
      `aclrtDrvMemHandle ${hex(a.handle)}: ${hex(a.size)} physical on ${placeOf(a.location)}` +
      `${a.origin === 'imported' ? ', imported' : ''}; ${a.handleRefs} handle reference${a.handleRefs === 1 ? '' : 's'}, ` +
      `${a.mapRefs} mapping${a.mapRefs === 1 ? '' : 's'}` +
      (a.handleRefs === 0 ? ' (freed; goes at the last unmap)' : '') +
      (at.length > 0 ? `; mapped at ${at.map(hex).join(', ')}` : ''),
    access: (a) => FLAGS[a],
  });
}

/** ACL's table for a process on `backend` (on the real NVIDIA driver the primitives are libcuda calls). */
export function aclLayers(backend: string): VendorLayers {
  return layersFor(ACL_LAYERS, backend);
}

export const ACL_VIEW: VendorView = { layers: ACL_LAYERS, formatState: formatAclState };
