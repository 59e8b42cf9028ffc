/**
 * Replay of PyTorch memory traces: read a snapshot (our own pickle reader),
 * plan its events, drive allocators with them, count and price their driver
 * calls, compare their segment events with the recording.
 */
export {
  type Advice,
  type AdviceCandidate,
  type AdviceTrap,
  type AdviseOptions,
  advise,
  MEASURED_TRAP,
} from './advise.js';
export {
  ALLOCATOR_REGISTRY,
  type AllocatorFactory,
  type AllocatorRegistry,
  DEFAULT_ALLOCATORS,
  selectAllocators,
  UnknownAllocatorError,
} from './allocators.js';
export { type MemoryBound, memoryBound } from './bound.js';
export {
  CostTable,
  CostTableError,
  type CostTableInfo,
  DRIVER_CALLS,
  type DriverCall,
  loadCostTable,
  parseCostTable,
} from './cost-table.js';
export { DriverMeter, type DriverUse } from './driver-meter.js';
export { SnapshotError } from './errors.js';
export { exportRun } from './export.js';
export { compareWithTrace, type FidelityDifference, type FidelityReport } from './fidelity.js';
export { isGzip, type LoadOptions, loadSnapshotFile, readPickle, readSnapshotFile } from './load.js';
export {
  type PickleDict,
  PickleError,
  PickleTuple,
  type PickleValue,
  type PickleWriteOptions,
  pickle,
  unpickle,
} from './pickle/index.js';
export { RecordedPlacement } from './placement.js';
export { type RecordedReserved, recordedReserved } from './recorded.js';
export {
  type AllocatorRun,
  type DeviceRun,
  type OomVerdict,
  type RecordedOomOutcome,
  ReplayError,
  type ReplayOptions,
  type ReplayResult,
  type ReplaySegmentEvent,
  type ReplayStep,
  replay,
  replaySettings,
} from './replay.js';
export {
  ACTIONS,
  type BlockState as SnapshotBlockState,
  type DeviceTrace,
  type MemorySnapshot,
  parseSnapshot,
  type SnapshotBlock,
  type SnapshotFrame,
  type SnapshotSegment,
  type TraceAction,
} from './snapshot.js';
export { readSnapshot, SnapshotReader } from './snapshot-reader.js';
export { type DevicePlan, planReplay, type TraceCounts, type TracePlan } from './trace-plan.js';
export { oomState, recordedOomLines, verdictLines, verdictOf } from './verdict.js';
