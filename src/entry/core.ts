/**
 * `vmmkit/core`: the vendor-neutral core and its composition root: a Runtime
 * per process (reservations, physical allocations, mappings, per-device
 * access), its typed errors, transactions, tracing and observers, and
 * createRuntime, which makes a process on a backend. (The composition
 * root's createProcess, which also hands back the machine and the report
 * hook, stays inside the package: a user who wants the simulated machine
 * makes it, createMachine, and joins it with { machine }.)
 */
export type { Backend, ImportedMemory } from '../backend/backend.js';
export { createRuntime, DEFAULT_DEVICES, type ProcessOptions } from '../compose/create-runtime.js';
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
  type PublishedFacts,
} from '../core/types.js';
