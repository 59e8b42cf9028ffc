/**
 * `vmmkit/report`: pictures of memory: the HTML report of a replay
 * (timelines and address maps per allocator), the address-space map of any
 * process (renderMap(runtime.describe())). A replay exported as a snapshot
 * that PyTorch's memory_viz opens is src/replay/engine/export.ts (exportRun).
 * recordReplay is src/report's with the plan and the way to start a
 * process made here where the caller gives none (as vmmkit/replay's
 * functions are: replay-library.ts).
 */

import type { TracePlan } from '../replay/engine/trace-plan.js';
import type { MemorySnapshot } from '../replay/read/snapshot.js';
import {
  type RecordedReplay,
  type RecordOptions as RecordInputs,
  recordReplay as recordOn,
} from '../report/collect.js';
import type { DeviceChoice } from '../util/device-specs.js';
import { planOf } from './replay-options.js';
import { startOnSimulator } from './replay-processes.js';

export { layoutMap, type MapOptions, type MapSummary, renderMap } from '../report/address-map.js';
export type { RecordedReplay, RecordedRun } from '../report/collect.js';
export { MinMaxBuckets, type MinMaxSeries } from '../report/downsample.js';
export { ReportArgumentError } from '../report/errors.js';
export { renderReportHtml } from '../report/html.js';
export { type MapCapture, renderMapPage, renderMapSvg } from '../report/map-page.js';
export {
  type DeviceRecording,
  type LayoutCapture,
  type LiveBlock,
  RecorderError,
  type RecorderOptions,
  ReplayRecorder,
} from '../report/recorder.js';
export { ALLOCATOR_COLORS, type ReportData, reportData } from '../report/report-data.js';

export type RecordOptions = Omit<RecordInputs, 'plan' | 'startProcess'> & {
  /** The snapshot's plan (planReplay), when already made. */
  readonly plan?: TracePlan;
  /** Starts each replay's process (default: a simulated machine of `device`). */
  readonly startProcess?: RecordInputs['startProcess'];
  /** The simulated device, when startProcess is not given (default H200). */
  readonly device?: DeviceChoice;
};

/** Replay `snapshot` through each allocator, recording what the report draws. */
export function recordReplay(snapshot: MemorySnapshot, options: RecordOptions): RecordedReplay {
  const { device, ...rest } = options;
  return recordOn(snapshot, {
    ...rest,
    plan: options.plan ?? planOf(snapshot, { memoryLimit: options.memoryLimit, device }),
    startProcess: options.startProcess ?? startOnSimulator(device),
  });
}
