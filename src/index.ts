/**
 * vmmkit: GPU virtual memory management for TypeScript.
 *
 * Front ends (C-shaped, the vendor's numeric codes): createCuda, createHip,
 * createAcl, with each vendor's enum constants under their C names. Core
 * (idiomatic, typed errors, disposable objects): Runtime. Simulated machine:
 * createMachine. Real NVIDIA backend: createCudaBackend, or
 * `{ backend: 'cuda' }` in a front end's options (libcuda loads only then).
 */

export {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type AllocatorStats,
  type CachingAllocator,
  type SegmentEvent,
} from './alloc/allocator.js';
export { type ChunkPolicy, GrowableBuffer, type GrowableBufferOptions } from './alloc/growable-buffer.js';
export {
  AllocatorSettingsError,
  type BlockSnapshot,
  DEFAULT_PYTORCH_SETTINGS,
  type PytorchAllocatorSettings,
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
  type SegmentSnapshot,
  settingsFromSnapshot,
  validateSettings,
} from './alloc/pytorch/index.js';
export { VmmkitAllocator, type VmmkitOptions } from './alloc/vmmkit/index.js';
export type { Backend, ImportedMemory } from './backend/backend.js';
export { CudaBackend, type CudaBackendOptions, createCudaBackend } from './backends/cuda/backend.js';
export { CudaDriverError } from './backends/cuda/checked.js';
export {
  CudaDriverUnavailableError,
  DEFAULT_LIBRARY_PATHS,
  findCudaDriver,
  loadCudaDriver,
} from './backends/cuda/driver.js';
export {
  createMachine,
  Machine,
  type MachineOptions,
  type ProcessRef,
  SimDevice,
} from './backends/sim/machine.js';
export { PAGE_SIZE } from './backends/sim/physical-memory.js';
export { DEVICE_PRESETS, type DevicePreset, type DeviceSpec } from './backends/sim/presets.js';
export { SimProcess } from './backends/sim/process.js';
export { formatBreak, formatState, inspect } from './cli/inspect.js';
export {
  createProcess,
  createRuntime,
  DEFAULT_DEVICES,
  type ProcessOptions,
  type VmmProcess,
} from './compose/create-runtime.js';
export { ERROR_KINDS, type ErrorKind, isVmmError, VmmError } from './core/errors.js';
export { Mapping, PhysicalAllocation, Reservation } from './core/objects.js';
export {
  type AccessDescriptor,
  type ReserveOptions,
  Runtime,
  type RuntimeDescription,
  type RuntimeOptions,
} from './core/runtime.js';
export {
  type BreakContext,
  formatTrace,
  type Layer,
  Tracer,
  type TracerOptions,
  type TraceSpan,
  traceToJson,
  type VendorLayers,
} from './core/trace.js';
export { Transaction } from './core/transaction.js';
export {
  Access,
  type AllocationProperties,
  type DeviceInfo,
  HandleType,
  type Location,
} from './core/types.js';
export {
  ACL_FUNCTIONS,
  AclFlavor,
  type AclOptions,
  type aclrtMemAccessDesc,
  type aclrtMemLocation,
  type aclrtPhysicalMemProp,
  createAcl,
} from './flavors/acl/acl.js';
export * from './flavors/acl/constants.js';
export { ACL_ERROR_TABLE } from './flavors/acl/error-table.js';
export type { Box } from './flavors/common/args.js';
export type { FlavorOptions } from './flavors/common/process.js';
export * from './flavors/cuda/constants.js';
export {
  CUDA_FUNCTIONS,
  type CUmemAccessDesc,
  type CUmemAllocationProp,
  type CUmemLocation,
  CudaFlavor,
  createCuda,
} from './flavors/cuda/cuda.js';
export { CUDA_ERROR_TABLE } from './flavors/cuda/error-table.js';
export * from './flavors/hip/constants.js';
export { HIP_ERROR_TABLE } from './flavors/hip/error-table.js';
export {
  createHip,
  HIP_FUNCTIONS,
  HipFlavor,
  type hipMemAccessDesc,
  type hipMemAllocationProp,
  type hipMemLocation,
} from './flavors/hip/hip.js';
export * from './replay/index.js';
export * from './report/index.js';
