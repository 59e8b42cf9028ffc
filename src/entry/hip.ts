/** `vmmkit/hip`: the HIP front end alone, with hip_runtime_api.h's constants under their C names. */
export * from '../flavors/hip/constants.js';
export { HIP_ERROR_TABLE } from '../flavors/hip/error-table.js';
export {
  HIP_FUNCTIONS,
  HipFlavor,
  type hipMemAccessDesc,
  type hipMemAllocationProp,
  type hipMemLocation,
} from '../flavors/hip/hip.js';
export { createHip, type FlavorOptions } from './processes.js';
