/**
 * `vmmkit/replay`: replay of PyTorch memory traces: read a snapshot (our own
 * pickle reader), plan its events, drive allocators with them, count and
 * price their driver calls, compare their segment events with the recording.
 *
 * The package's top for the snapshot wing (issue 29): src/replay takes a
 * plan and a way to start a process from its caller and makes neither; the
 * functions here are src/replay's with both made when not given, once per
 * call (the plan under the limit and the device, replay-options.ts's
 * planOf; each run on a simulated machine of the device, or the real GPUs,
 * replay-processes.ts), so `replay(snapshot, { allocConf, memoryLimit })`
 * works as written.
 */

export {
  type Advice,
  type AdviceCandidate,
  type AdviceTrap,
  DEFAULT_TOLERANCE,
  type Tolerance,
} from '../replay/advise/advise.js';
export {
  type Annotation,
  annotationsOf,
  CATEGORY_LABELS,
  MEMORY_CATEGORIES,
  type MemoryCategory,
} from '../replay/analyse/categories.js';
export type {
  CategoryComparison,
  DeviceComparison,
  SnapshotComparison,
  StackComparison,
} from '../replay/analyse/compare.js';
export { compareLines, peakLines, rankLines } from '../replay/analyse/lines.js';
export type {
  CategoryBytes,
  DevicePeak,
  PeakBreakdown,
  Slack,
  StackBytes,
  WhatIfDevicePeak,
  WhatIfPeak,
} from '../replay/analyse/peak.js';
export type { RankRow, RankSummary } from '../replay/analyse/ranks.js';
// The registry, its defaults, selectAllocators and its error: every name allocators.ts exports.
export * from '../replay/engine/allocators.js';
export {
  type AsRecorded,
  type AsRecordedDevice,
  planUnder,
  type RecordedSettingsSource,
  recordedSettings,
} from '../replay/engine/as-recorded.js';
export { type MemoryBound, memoryBound } from '../replay/engine/bound.js';
export {
  type DeviceCap,
  type FreeRun,
  inferDeviceCap,
  type OomEvidence,
  retriesUnder,
} from '../replay/engine/cap.js';
export {
  CostTable,
  CostTableError,
  type CostTableInfo,
  DRIVER_CALLS,
  type DriverCall,
  loadCostTable,
  parseCostTable,
} from '../replay/engine/cost-table.js';
export { DriverMeter, type DriverUse } from '../replay/engine/driver-meter.js';
export { exportRun } from '../replay/engine/export.js';
export { compareWithTrace, type FidelityDifference, type FidelityReport } from '../replay/engine/fidelity.js';
export { RecordedPlacement } from '../replay/engine/placement.js';
export type { ProcessRequest, StartProcess } from '../replay/engine/process-start.js';
export { type RecordedReserved, recordedReserved } from '../replay/engine/recorded.js';
export {
  type AllocatorRun,
  type DeviceRun,
  type OomVerdict,
  type RecordedOomOutcome,
  ReplayError,
  type ReplayGrowth,
  type ReplayOptions,
  type ReplayResult,
  type ReplaySegmentEvent,
  type ReplayStep,
  replaySettings,
} from '../replay/engine/replay.js';
export {
  type DevicePlan,
  planReplay,
  type TraceCounts,
  type TracePlan,
} from '../replay/engine/trace-plan.js';
export {
  answerLines,
  asRecordedLines,
  capLines,
  oomState,
  recordedOomLines,
  verdictLines,
  verdictOf,
} from '../replay/engine/verdict.js';
export {
  type AllocatorAnswer,
  type CapInForce,
  capInForce,
  type Verdict,
  type WhatIfAnswer,
} from '../replay/engine/what-if.js';
export { SnapshotError } from '../replay/errors.js';
export {
  isGzip,
  type LoadOptions,
  loadSnapshotFile,
  readPickle,
  readSnapshotFile,
} from '../replay/read/load.js';
export {
  type PickleDict,
  PickleError,
  PickleTuple,
  type PickleValue,
  type PickleWriteOptions,
  pickle,
  unpickle,
} from '../replay/read/pickle/index.js';
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
} from '../replay/read/snapshot.js';
export { readSnapshot, SnapshotReader } from '../replay/read/snapshot-reader.js';
// Devices and limits as replay() and the command line read them.
export { DEVICE_SPECS, type DeviceMemorySpec, findDevice } from '../util/device-specs.js';
export { MemoryLimitError, UnknownDeviceError } from '../util/errors.js';
export { parseMemoryLimit } from '../util/memory-limit.js';
export {
  type AdviseOptions,
  type AnalyseOptions,
  type AsRecordedOptions,
  advise,
  analysePeak,
  answerWhatIf,
  type CompareOptions,
  compareSnapshots,
  type RanksOptions,
  replay,
  reproduceRecording,
  summariseRanks,
  type WhatIfOptions,
} from './replay-library.js';
export { type ReplayInput, replayOptions } from './replay-options.js';
export {
  adviseProcesses,
  startOnGpus,
  startOnSimulator,
} from './replay-processes.js';
