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
import type { RuntimeDescription } from '../../core/runtime.js';
import type { VendorLayers } from '../../core/trace.js';
import { type VendorView } from '../common/layers.js';
export declare const CUDA_LAYERS: VendorLayers;
/**
 * The state in the driver API's words: address reservations, the
 * CUmemGenericAllocationHandles mapped into them (a handle released while
 * mapped lives until its last cuMemUnmap), per-device access flags, and
 * cuMemAlloc memory.
 */
export declare function formatCudaState(d: RuntimeDescription): string;
/** CUDA's table for a process on `backend`. */
export declare function cudaLayers(backend: 'sim' | 'cuda'): VendorLayers;
export declare const CUDA_VIEW: VendorView;
