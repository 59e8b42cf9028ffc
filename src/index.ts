/**
 * vmmkit: GPU virtual memory management for TypeScript.
 *
 * Front ends (C-shaped, the vendor's numeric codes): createCuda, createHip,
 * createAcl, with each vendor's enum constants under their C names. Core
 * (idiomatic, typed errors, disposable objects): Runtime. Simulated machine:
 * createMachine. Real NVIDIA backend: createCudaBackend, or
 * `{ backend: 'cuda' }` in a front end's options (libcuda loads only then).
 */

export type { Backend, ImportedMemory } from './backend/backend.js';
export { CudaBackend, type CudaBackendOptions, createCudaBackend } from './backends/cuda/backend.js';
export { CudaDriverError } from './backends/cuda/checked.js';
export {
  CudaDriverUnavailableError,
  DEFAULT_LIBRARY_PATHS,
  findCudaDriver,
  loadCudaDriver,
} from './backends/cuda/driver.js';
export { takeFd } from './backends/cuda/os-fd.js';
export {
  createMachine,
  Machine,
  type MachineOptions,
  type ProcessRef,
  SimDevice,
} from './backends/sim/machine.js';
export { type MachineServer, serveMachine } from './backends/sim/machine-server.js';
export { PAGE_SIZE } from './backends/sim/physical-memory.js';
export { DEVICE_PRESETS, type DevicePreset, type DeviceSpec } from './backends/sim/presets.js';
export { SimProcess } from './backends/sim/process.js';
export { connectMachine, type RemoteSimProcess } from './backends/sim/remote-process.js';
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
export * from './entry/acl.js';
export * from './entry/alloc.js';
export * from './entry/cuda.js';
export * from './entry/hip.js';
export type { Box } from './flavors/common/args.js';
export type { FlavorOptions } from './flavors/common/process.js';
export * from './replay/index.js';
export * from './report/index.js';
