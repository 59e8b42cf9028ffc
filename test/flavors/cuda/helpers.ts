/** A CUDA process ready for memory calls, for the tests that need one on a backend of their own. */

import type { FlavorOptions } from '../../../src/entry/processes.js';
import { createCuda } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';

/** After cuInit, with device 0's primary context current; throws if any step fails. */
export function cudaWithContext(options: FlavorOptions = {}): CudaFlavor {
  const cu = createCuda(options);
  const ctx = { value: 0n };
  for (const code of [cu.cuInit(0), cu.cuDevicePrimaryCtxRetain(ctx, 0), cu.cuCtxSetCurrent(ctx.value)])
    if (code !== C.CUDA_SUCCESS) throw new Error(`setting up a CUDA process answered ${code}`);
  return cu;
}

/** Pinned device memory on device 0. */
export const DEVICE_PROP = {
  type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
  requestedHandleTypes: 0,
  location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
};

/** Read-write for device 0. */
export const RW0 = [
  { location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }, flags: C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE },
];
