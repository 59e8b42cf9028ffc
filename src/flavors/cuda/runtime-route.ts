/**
 * The CUDA driver calls an allocator's operations become when a snapshot
 * replays on the CUDA front end (Note [A runtime through a front end]): what
 * PyTorch's ExpandableSegment calls (cuMemAddressReserve, cuMemCreate,
 * cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree) and
 * its native segments' cudaMalloc / cudaFree, which reach the driver as
 * cuMemAlloc / cuMemFree, each in the primary context of its device, as the
 * CUDA runtime under PyTorch makes them.
 */
import { internalError } from '../common/error-table.js';
import { currentDevice, type VendorRoute } from '../common/routed-runtime.js';
import * as C from './constants.js';
import type { CudaFlavor } from './cuda.js';
import { CUDA_ERROR_TABLE } from './error-table.js';

/** The route of `cuda`, which it initialises (cuInit, device 0's primary context current) as the CUDA runtime would. */
export function cudaRoute(cuda: CudaFlavor): VendorRoute {
  const started = cuda.cuInit(0);
  if (started !== C.CUDA_SUCCESS) throw internalError(`cuInit answered ${started}`);
  const contexts = new Map<number, bigint>();
  /** Device `device`'s primary context made current (retained once). */
  const onDevice = currentDevice(C.CUDA_SUCCESS, (device) => {
    let ctx = contexts.get(device);
    if (ctx === undefined) {
      const box = { value: 0n };
      const code = cuda.cuDevicePrimaryCtxRetain(box, device);
      if (code !== C.CUDA_SUCCESS) return code;
      ctx = box.value;
      contexts.set(device, ctx);
    }
    return cuda.cuCtxSetCurrent(ctx);
  });
  const set = onDevice(0);
  if (set !== C.CUDA_SUCCESS) throw internalError(`device 0's primary context answered ${set}`);
  return {
    vendor: 'CUDA',
    table: CUDA_ERROR_TABLE,
    success: C.CUDA_SUCCESS,
    reserve: (base, size, options) =>
      cuda.cuMemAddressReserve(base, size, options.alignment ?? 0, options.hint ?? 0, 0),
    create: (handle, size, props) =>
      cuda.cuMemCreate(
        handle,
        size,
        {
          type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
          requestedHandleTypes: C.CU_MEM_HANDLE_TYPE_NONE,
          location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: props.location.id },
        },
        0,
      ),
    map: (va, size, handle, offset) => cuda.cuMemMap(BigInt(va), size, offset, BigInt(handle), 0),
    setAccess: (va, size, descriptors) =>
      cuda.cuMemSetAccess(
        BigInt(va),
        size,
        descriptors.map((d) => ({
          location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: d.device },
          flags: d.access,
        })),
        descriptors.length,
      ),
    unmap: (va, size) => cuda.cuMemUnmap(BigInt(va), size),
    release: (handle) => cuda.cuMemRelease(BigInt(handle)),
    free: (base, size) => cuda.cuMemAddressFree(BigInt(base), size),
    malloc: (ptr, device, size) => {
      const code = onDevice(device);
      return code !== C.CUDA_SUCCESS ? code : cuda.cuMemAlloc(ptr, size);
    },
    mfree: (va) => cuda.cuMemFree(BigInt(va)),
    describe: (code) => {
      const name = { value: null as string | null };
      return cuda.cuGetErrorName(code, name) === C.CUDA_SUCCESS ? (name.value ?? 'unnamed') : 'unnamed';
    },
    dispose: () => cuda.dispose(),
  };
}
