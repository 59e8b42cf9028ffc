/**
 * The HIP calls an allocator's operations become when a snapshot replays on
 * the HIP front end (Note [A runtime through a front end]): what PyTorch on
 * ROCm's expandable segments make (issue 31): hipMemAddressReserve,
 * hipMemCreate, hipMemMap, hipMemSetAccess, hipMemUnmap, hipMemRelease and
 * hipMemAddressFree, whose layers in the trace are seed 1's (roc::Device,
 * hsa_amd_vmem_*, hsaKmt*: layers.ts); the one-step path is hipMalloc /
 * hipFree on the device made current.
 */
import { currentDevice, type VendorRoute } from '../common/routed-runtime.js';
import * as C from './constants.js';
import { HIP_ERROR_TABLE } from './error-table.js';
import type { HipFlavor } from './hip.js';

export function hipRoute(hip: HipFlavor): VendorRoute {
  const onDevice = currentDevice(C.hipSuccess, (device) => hip.hipSetDevice(device));
  return {
    vendor: 'HIP',
    table: HIP_ERROR_TABLE,
    success: C.hipSuccess,
    reserve: (base, size, options) =>
      hip.hipMemAddressReserve(base, size, options.alignment ?? 0, options.hint ?? 0, 0),
    create: (handle, size, props) =>
      hip.hipMemCreate(
        handle,
        size,
        {
          type: C.hipMemAllocationTypePinned,
          requestedHandleTypes: C.hipMemHandleTypeNone,
          location: { type: C.hipMemLocationTypeDevice, id: props.location.id },
        },
        0,
      ),
    map: (va, size, handle, offset) => hip.hipMemMap(BigInt(va), size, offset, BigInt(handle), 0),
    setAccess: (va, size, descriptors) =>
      hip.hipMemSetAccess(
        BigInt(va),
        size,
        descriptors.map((d) => ({
          location: { type: C.hipMemLocationTypeDevice, id: d.device },
          flags: d.access,
        })),
        descriptors.length,
      ),
    unmap: (va, size) => hip.hipMemUnmap(BigInt(va), size),
    release: (handle) => hip.hipMemRelease(BigInt(handle)),
    free: (base, size) => hip.hipMemAddressFree(BigInt(base), size),
    malloc: (ptr, device, size) => {
      const code = onDevice(device);
      return code !== C.hipSuccess ? code : hip.hipMalloc(ptr, size);
    },
    mfree: (va) => hip.hipFree(BigInt(va)),
    describe: (code) => hip.hipGetErrorName(code),
    dispose: () => hip.dispose(),
  };
}
