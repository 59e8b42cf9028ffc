/**
 * The CUDA driver's layers, as far as they are public. NVIDIA documents the
 * driver API (cuMem* in libcuda.so.1) and ships the kernel-mode driver
 * (nvidia.ko, nvidia-uvm.ko), but not how one calls the other: libcuda's
 * internal functions and the ioctls it issues are private. So a traced CUDA
 * process shows two layers:
 *
 *   cuda  the driver API call (vmmkit's front end stands where libcuda does)
 *   kmd   the kernel-mode driver's step, named for what it does ('kmd.mapPages'
 *         builds the GPU page-table entries); these are our names, not NVIDIA's
 *
 * vmmkit's core has no counterpart inside libcuda, so its spans are left out
 * and the primitives hang directly under the API call. On the real driver
 * (backend 'cuda') the primitives are the libcuda calls that really run
 * (layersFor), and there are no device events.
 */
import { BACKEND_EVENT_OPERATIONS } from '../../backend/backend.js';
import { type RuntimeDescription, TRACED_OPERATIONS } from '../../core/runtime.js';
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

const kmd = frameOf('kmd');

export const CUDA_LAYERS: VendorLayers = {
  vendor: 'CUDA',
  api: 'cuda',
  steps: {
    // vmmkit's core operations, every one elided: libcuda's own bookkeeping is not public.
    ...Object.fromEntries(TRACED_OPERATIONS.map((op) => [`core:${op}`, { path: [] }])),
    // Events live in libcuda and the GPU's front end, not in the kernel driver: their primitives are elided too.
    ...Object.fromEntries(BACKEND_EVENT_OPERATIONS.map((op) => [`backend:${op}`, { path: [] }])),
    'backend:reserve': { path: [kmd('kmd.reserveVa')] },
    'backend:free': { path: [kmd('kmd.freeVa')] },
    'backend:create': { path: [kmd('kmd.allocPhysical')] },
    'backend:release': { path: [kmd('kmd.freePhysical')] },
    // cuMemMap binds the handle; no device may touch it until cuMemSetAccess.
    'backend:map': { path: [kmd('kmd.bind')] },
    'backend:map > device:vm.bind': { path: [] },
    'backend:unmap': { path: [kmd('kmd.unbind')] },
    'backend:unmap > device:pte.clear': { path: [kmd('kmd.unmapPages')] },
    'backend:setAccess': { path: [kmd('kmd.setAccess')] },
    'backend:setAccess > device:pte.set': { path: [kmd('kmd.mapPages')] },
    'backend:setAccess > device:pte.clear': { path: [kmd('kmd.unmapPages')] },
    // The CPU's grant is a cuMemSetAccess for the host (Note [Host access]); its loads and stores reach no driver.
    'backend:setHostAccess': { path: [kmd('kmd.setAccess')] },
    'backend:hostRead': { path: [] },
    'backend:hostWrite': { path: [] },
    'backend:exportFd': { path: [kmd('kmd.exportFd')] },
    'backend:importFd': { path: [kmd('kmd.importFd')] },
  },
};

const FLAGS: Record<Access, string> = {
  [Access.None]: 'CU_MEM_ACCESS_FLAGS_PROT_NONE',
  [Access.Read]: 'CU_MEM_ACCESS_FLAGS_PROT_READ',
  [Access.ReadWrite]: 'CU_MEM_ACCESS_FLAGS_PROT_READWRITE',
};

/**
 * The state in the driver API's words: address reservations, the
 * CUmemGenericAllocationHandles mapped into them (a handle released while
 * mapped lives until its last cuMemUnmap), per-device access flags, and
 * cuMemAlloc memory.
 */
export function formatCudaState(d: RuntimeDescription): string {
  return renderState(d, {
    process: (x) => `CUDA process ${x.pid} (${devicesOf(x)})`,
    reservation: (r) => `address reservation ${hex(r.base)} +${hex(r.size)} (cuMemAddressReserve)`,
    mapping: (m, access) =>
      `mapped ${hex(m.va)} +${hex(m.size)} -> CUmemGenericAllocationHandle ${hex(m.handle)}; ${access}`,
    oneStep: (r, access) => `cuMemAlloc memory ${hex(r.base)} +${hex(r.size)}; ${access}`,
    allocation: (a, at) =>
      `CUmemGenericAllocationHandle ${hex(a.handle)}: ${hex(a.size)} on ${placeOf(a.location)}` +
      `${a.origin === 'imported' ? ', imported' : ''}; ${a.handleRefs} handle reference${a.handleRefs === 1 ? '' : 's'}, ` +
      `${a.mapRefs} mapping${a.mapRefs === 1 ? '' : 's'}` +
      (a.handleRefs === 0 ? ' (released; lives until its last cuMemUnmap)' : '') +
      (at.length > 0 ? `; mapped at ${at.map(hex).join(', ')}` : ''),
    access: (a) => FLAGS[a],
  });
}

/** CUDA's table for a process on `backend`. */
export function cudaLayers(backend: string): VendorLayers {
  return layersFor(CUDA_LAYERS, backend);
}

export const CUDA_VIEW: VendorView = { layers: CUDA_LAYERS, formatState: formatCudaState };
