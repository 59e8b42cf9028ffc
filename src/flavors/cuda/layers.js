import { Access } from '../../core/types.js';
import { devicesOf, frameOf, hex, layersFor, placeOf, renderState } from '../common/layers.js';

const kmd = frameOf('kmd');
/** vmmkit's core operations, elided: libcuda's own bookkeeping is not public. */
const CORE_OPERATIONS = [
  'reserve',
  'free',
  'create',
  'release',
  'retain',
  'map',
  'unmap',
  'setAccess',
  'exportFd',
  'importFd',
  'write',
  'read',
  'copy',
  'fill',
  'malloc',
  'mfree',
  'createStream',
  'destroyStream',
  'synchronizeStream',
  'synchronize',
];
export const CUDA_LAYERS = {
  vendor: 'CUDA',
  api: 'cuda',
  steps: {
    ...Object.fromEntries(CORE_OPERATIONS.map((op) => [`core:${op}`, { path: [] }])),
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
    'backend:exportFd': { path: [kmd('kmd.exportFd')] },
    'backend:importFd': { path: [kmd('kmd.importFd')] },
  },
};
const FLAGS = {
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
export function formatCudaState(d) {
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
export function cudaLayers(backend) {
  return layersFor(CUDA_LAYERS, backend);
}
export const CUDA_VIEW = { layers: CUDA_LAYERS, formatState: formatCudaState };
//# sourceMappingURL=layers.js.map
