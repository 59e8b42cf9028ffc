/**
 * The snapshot wing's functions as the tests call them: the package's own
 * (src/entry/replay-library.ts, src/entry/report.ts), which make the plan
 * where a test gives none and start each run on a simulated machine (H200,
 * or the test's `device`). The engine, advise, the analyses and the report
 * take both from their caller and make neither (issue 29); a test that
 * gives its own starter (startOnFrontEnd, one that counts) or plan passes
 * it through, as the command line does.
 */
export {
  advise,
  analysePeak,
  answerWhatIf,
  compareSnapshots,
  replay,
  reproduceRecording,
  summariseRanks,
} from '../../src/entry/replay-library.js';
export { startOnSimulator } from '../../src/entry/replay-processes.js';
export { recordReplay } from '../../src/entry/report.js';
