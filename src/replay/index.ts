/**
 * Replay of PyTorch memory traces: read a snapshot (our own pickle reader),
 * plan its events, drive allocators with them, count and price their driver
 * calls, compare their segment events with the recording.
 */

// Devices and limits as replay() and the command line read them.
export { DEVICE_SPECS, type DeviceMemorySpec, findDevice } from '../util/device-specs.js';
export { MemoryLimitError, UnknownDeviceError } from '../util/errors.js';
export { parseMemoryLimit } from '../util/memory-limit.js';
export {
  type Advice,
  type AdviceCandidate,
  type AdviceTrap,
  type AdviseOptions,
  advise,
  DEFAULT_TOLERANCE,
  type Tolerance,
} from './advise/advise.js';
export {
  type Annotation,
  annotationsOf,
  CATEGORY_LABELS,
  MEMORY_CATEGORIES,
  type MemoryCategory,
} from './analyse/categories.js';
export {
  type CategoryComparison,
  type CompareOptions,
  compareSnapshots,
  type DeviceComparison,
  type SnapshotComparison,
  type StackComparison,
} from './analyse/compare.js';
export { compareLines, peakLines, rankLines } from './analyse/lines.js';
export {
  type AnalyseOptions,
  analysePeak,
  type CategoryBytes,
  type DevicePeak,
  type PeakBreakdown,
  type Slack,
  type StackBytes,
  type WhatIfDevicePeak,
  type WhatIfPeak,
} from './analyse/peak.js';
export { type RankRow, type RankSummary, type RanksOptions, summariseRanks } from './analyse/ranks.js';
export {
  ALLOCATOR_REGISTRY,
  type AllocatorFactory,
  type AllocatorRegistry,
  DEFAULT_ALLOCATORS,
  selectAllocators,
  UnknownAllocatorError,
} from './engine/allocators.js';
export {
  type AsRecorded,
  type AsRecordedDevice,
  type AsRecordedOptions,
  planUnder,
  type RecordedSettingsSource,
  recordedSettings,
  reproduceRecording,
} from './engine/as-recorded.js';
export { type MemoryBound, memoryBound } from './engine/bound.js';
export {
  type DeviceCap,
  type FreeRun,
  inferDeviceCap,
  type OomEvidence,
  retriesUnder,
} from './engine/cap.js';
export {
  CostTable,
  CostTableError,
  type CostTableInfo,
  DRIVER_CALLS,
  type DriverCall,
  loadCostTable,
  parseCostTable,
} from './engine/cost-table.js';
export { DriverMeter, type DriverUse } from './engine/driver-meter.js';
export { exportRun } from './engine/export.js';
export { compareWithTrace, type FidelityDifference, type FidelityReport } from './engine/fidelity.js';
export { RecordedPlacement } from './engine/placement.js';
export type { ProcessRequest, StartProcess } from './engine/process-start.js';
export { type RecordedReserved, recordedReserved } from './engine/recorded.js';
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
} from './engine/replay.js';
export { type ReplayInput, replayOptions } from './engine/replay-options.js';
export { type DevicePlan, planReplay, type TraceCounts, type TracePlan } from './engine/trace-plan.js';
export {
  answerLines,
  asRecordedLines,
  capLines,
  oomState,
  recordedOomLines,
  verdictLines,
  verdictOf,
} from './engine/verdict.js';
export {
  type AllocatorAnswer,
  answerWhatIf,
  type CapInForce,
  capInForce,
  type Verdict,
  type WhatIfAnswer,
  type WhatIfOptions,
} from './engine/what-if.js';
export { SnapshotError } from './errors.js';
export { isGzip, type LoadOptions, loadSnapshotFile, readPickle, readSnapshotFile } from './read/load.js';
export {
  type PickleDict,
  PickleError,
  PickleTuple,
  type PickleValue,
  type PickleWriteOptions,
  pickle,
  unpickle,
} from './read/pickle/index.js';
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
} from './read/snapshot.js';
export { readSnapshot, SnapshotReader } from './read/snapshot-reader.js';
