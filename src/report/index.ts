/**
 * Pictures of memory: the HTML report of a replay (timelines and address
 * maps per allocator), the address-space map of any process
 * (renderMap(runtime.describe())). A replay exported as a snapshot that
 * PyTorch's memory_viz opens is src/replay/engine/export.ts (exportRun).
 */
export { layoutMap, type MapOptions, type MapSummary, renderMap } from './address-map.js';
export { type RecordedReplay, type RecordedRun, type RecordOptions, recordReplay } from './collect.js';
export { MinMaxBuckets, type MinMaxSeries } from './downsample.js';
export { ReportArgumentError } from './errors.js';
export { renderReportHtml } from './html.js';
export { type MapCapture, renderMapPage, renderMapSvg } from './map-page.js';
export {
  type DeviceRecording,
  type LayoutCapture,
  type LiveBlock,
  RecorderError,
  type RecorderOptions,
  ReplayRecorder,
} from './recorder.js';
export { ALLOCATOR_COLORS, type ReportData, reportData } from './report-data.js';
