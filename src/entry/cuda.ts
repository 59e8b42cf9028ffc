/** `vmmkit/cuda`: the CUDA driver API front end alone, with cuda.h's constants under their C names. */
export * from '../flavors/cuda/constants.js';
export {
  CUDA_FUNCTIONS,
  type CUmemAccessDesc,
  type CUmemAllocationProp,
  type CUmemLocation,
  CudaFlavor,
} from '../flavors/cuda/cuda.js';
export { CUDA_ERROR_TABLE } from '../flavors/cuda/error-table.js';
export { createCuda, type FlavorOptions } from './processes.js';
