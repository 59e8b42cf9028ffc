/**
 * The page's data from a snapshot: the one path by which `vmmkit report`
 * (in Node) and the page (in a Web Worker) answer a snapshot, so that the
 * two show the same figures. It takes the caller's plan, refuses one with
 * nothing to replay, replays it through each allocator with a recorder
 * (collect.ts), runs advise when told to (adviceFor: Note [The answer, then
 * the advice]), breaks the peak down by what holds it (analyse/peak.ts), and
 * shapes the result (report-data.ts).
 * Nothing here touches a file: the caller reads the snapshot.
 */

import { advise } from '../replay/advise/advise.js';
import type { AdviseProcesses } from '../replay/advise/pool.js';
import { analysePeak } from '../replay/analyse/peak.js';
import type { AllocatorFactory } from '../replay/engine/allocators.js';
import type { AsRecorded } from '../replay/engine/as-recorded.js';
import type { CostTable } from '../replay/engine/cost-table.js';
import type { StartProcess } from '../replay/engine/process-start.js';
import { nothingToReplay, type TracePlan } from '../replay/engine/trace-plan.js';
import { leastRecordedCap } from '../replay/engine/what-if.js';
import type { MemorySnapshot } from '../replay/read/snapshot.js';
import type { AnswerAdvice } from './answer.js';
import { type RecordedReplay, recordReplay } from './collect.js';
import { ReportArgumentError } from './errors.js';
import { type ReportData, reportData } from './report-data.js';

export interface PageDataOptions {
  readonly title: string;
  readonly allocators: readonly AllocatorFactory[];
  readonly allocConf?: string;
  readonly memoryLimit?: number;
  /** Starts each replay's process (process-start.ts): the caller's, such as a simulated machine of its device. */
  readonly startProcess: StartProcess;
  /** advise's processes, in this thread and its workers (unless `advise: false`). */
  readonly adviseProcesses?: AdviseProcesses;
  readonly costs?: CostTable;
  /** Run advise's search and name its setting in the answer (default false: Note [The answer, then the advice]). */
  readonly advise?: boolean;
  /** Capture the address space at each peak (default true; a second replay). */
  readonly peakLayout?: boolean;
  readonly keepEvents?: boolean;
  /** Add what holds memory at the peak (analysePeak; default true). */
  readonly analyse?: boolean;
  /** The snapshot's plan (planReplay, under the limit and the device), made once by the caller. */
  readonly plan: TracePlan;
  /** Told how far the replays are, 0 to 1. */
  readonly onProgress?: (fraction: number) => void;
}

/** The processes advise runs on; a ReportArgumentError where the caller gave none. */
function adviseProcessesOf(options: PageDataOptions): AdviseProcesses {
  if (options.adviseProcesses === undefined)
    throw new ReportArgumentError('the page runs advise: give adviseProcesses, or leave advise unset');
  return options.adviseProcesses;
}

/** The page's data for `snapshot` (`name`: the file's, for the refusal of an empty one). */
export async function pageData(
  snapshot: MemorySnapshot,
  name: string,
  options: PageDataOptions,
): Promise<{ readonly data: ReportData; readonly recorded: RecordedReplay; readonly plan: TracePlan }> {
  const { allocators, allocConf, memoryLimit, startProcess, costs, plan } = options;
  const nothing = nothingToReplay(name, plan);
  if (nothing !== undefined) throw new ReportArgumentError(nothing);
  const recorded = recordReplay(snapshot, {
    plan,
    allocators,
    allocConf,
    memoryLimit,
    startProcess,
    costs,
    peakLayout: options.peakLayout,
    keepEvents: options.keepEvents ?? false,
    onProgress: options.onProgress,
  });
  // Note [The answer, then the advice]: the search is asked for, not run by default.
  const advice =
    options.advise === true
      ? await adviceFor(snapshot, {
          memoryLimit,
          asRecorded: recorded.answer.asRecorded,
          plan: recorded.plan,
          processes: adviseProcessesOf(options),
        })
      : undefined;
  // A snapshot without history (a segment list) has no peak to break down: the panel is left out, not the page.
  const peak =
    options.analyse === false || snapshot.traces.length === 0
      ? null
      : analysePeak(snapshot, {
          plan,
          asRecorded: recorded.answer.asRecorded,
          allocConf,
          memoryLimit,
          startProcess,
        });
  const data = reportData(recorded, options.title, { peak, costs, advice });
  return { data, recorded, plan };
}

/**
 * Note [The answer, then the advice]: the answer (the recording reproduced,
 * the cap, each model's verdict, what holds the peak) costs about one
 * replay per model; advise's search costs several replays more (issue 28's
 * bound is five times a replay). So the answer never waits for it: the page
 * shows the answer, then searches in its worker and adds the setting to
 * paste when the search ends; `vmmkit report` searches only when asked
 * (--advise), and its page says how to ask.
 */
export async function adviceFor(
  snapshot: MemorySnapshot,
  options: {
    /** The limit given; else the least the recording allows, as `vmmkit advise` takes it. */
    readonly memoryLimit?: number;
    readonly asRecorded: AsRecorded;
    readonly plan: TracePlan;
    readonly processes: AdviseProcesses;
  },
): Promise<AnswerAdvice> {
  const advice = await advise(snapshot, {
    memoryLimit: options.memoryLimit ?? leastRecordedCap([options.asRecorded]),
    plans: [options.plan],
    processes: options.processes,
  });
  const best = advice.recommended;
  // Nothing fits: the page names no setting, and says why.
  if (best === null)
    return {
      allocConf: null,
      peakReservedBytes: 0,
      ooms: 0,
      verdict: advice.verdict,
      memoryLimit: advice.memoryLimit,
      headroomBytes: null,
    };
  return {
    allocConf: best.allocConf,
    peakReservedBytes: best.peakReservedBytes,
    ooms: best.ooms,
    verdict: best.verdict,
    memoryLimit: advice.memoryLimit,
    headroomBytes: best.headroomBytes,
  };
}
