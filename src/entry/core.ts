/**
 * `vmmkit/core`: the vendor-neutral core and its composition root: a Runtime
 * per process (reservations, physical allocations, mappings, per-device
 * access), its typed errors, transactions, tracing and observers, and
 * createRuntime / createProcess, which make a process on a backend.
 */
export type { Backend, ImportedMemory } from '../backend/backend.js';
export {
  createProcess,
  createRuntime,
  DEFAULT_DEVICES,
  type ProcessOptions,
  type VmmProcess,
} from '../compose/create-runtime.js';
export { ERROR_KINDS, type ErrorKind, isVmmError, VmmError } from '../core/errors.js';
export { Mapping, PhysicalAllocation, Reservation } from '../core/objects.js';
export type { CallOutcome, RuntimeCall, RuntimeObserver, RuntimeOperation } from '../core/observer.js';
export {
  type AccessDescriptor,
  type MallocOptions,
  type ReserveOptions,
  Runtime,
  type RuntimeDescription,
  type RuntimeOptions,
} from '../core/runtime.js';
export {
  type BreakContext,
  formatTrace,
  type Layer,
  Tracer,
  type TracerOptions,
  type TraceSpan,
  traceToJson,
  type VendorLayers,
} from '../core/trace.js';
export { Transaction } from '../core/transaction.js';
export {
  Access,
  type AllocationProperties,
  type DeviceInfo,
  HandleType,
  type Location,
} from '../core/types.js';
