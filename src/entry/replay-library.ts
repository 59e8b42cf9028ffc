/**
 * The snapshot wing's functions as the package gives them (`vmmkit/replay`):
 * each is src/replay's own, with the plan and the way to start a process
 * made here, once per call, where the caller gives none (issue 29: the
 * engine, advise and the analyses take both and make neither). A plan is
 * made as the command line makes it (planOf: under the limit and the
 * device's memory); a process is a simulated machine of the device (default
 * H200), or the real GPUs with backend 'cuda' (replay-processes.ts); advise
 * runs on simulated H200s, in its own thread and its worker threads.
 */
import {
  type Advice,
  type AdviseOptions as AdviseInputs,
  advise as adviseOn,
} from '../replay/advise/advise.js';
import {
  type CompareOptions as CompareInputs,
  compareSnapshots as compareOn,
  type SnapshotComparison,
} from '../replay/analyse/compare.js';
import {
  type AnalyseOptions as AnalyseInputs,
  analysePeak as analyseOn,
  type PeakBreakdown,
} from '../replay/analyse/peak.js';
import {
  type RankSummary,
  type RanksOptions as RanksInputs,
  summariseRanks as summariseOn,
} from '../replay/analyse/ranks.js';
import {
  type AsRecorded,
  type AsRecordedOptions as AsRecordedInputs,
  reproduceRecording as reproduceOn,
} from '../replay/engine/as-recorded.js';
import type { StartProcess } from '../replay/engine/process-start.js';
import { type ReplayResult, replay as replayOn } from '../replay/engine/replay.js';
import type { TracePlan } from '../replay/engine/trace-plan.js';
import {
  answerWhatIf as answerOn,
  type WhatIfAnswer,
  type WhatIfOptions as WhatIfInputs,
} from '../replay/engine/what-if.js';
import type { MemorySnapshot } from '../replay/read/snapshot.js';
import type { DeviceChoice } from '../util/device-specs.js';
import { planOf, type ReplayInput, replayOptions } from './replay-options.js';
import { adviseProcesses, startOnSimulator, startProcessOf } from './replay-processes.js';

/** Where a call names no way to start a process: the simulated device (default H200). */
interface OnDevice {
  readonly startProcess?: StartProcess;
  /** The simulated device, when startProcess is not given (default H200). */
  readonly device?: DeviceChoice;
}

/** The caller's starter, else the simulated device's (the real GPUs' with backend 'cuda'). */
function starterOf(options: OnDevice & { readonly backend?: 'sim' | 'cuda' }): StartProcess {
  return options.startProcess ?? startProcessOf({ backend: options.backend, device: options.device });
}

/** replay(snapshot, options) (Note [replay()'s arguments]): throws ReplayError before anything runs. */
export function replay(snapshot: MemorySnapshot, options: ReplayInput = {}): ReplayResult {
  return replayOn(snapshot, replayOptions(snapshot, options));
}

export type AdviseOptions = Omit<AdviseInputs, 'plans' | 'processes'> & {
  /** A plan already made for the snapshot (one snapshot). */
  readonly plan?: TracePlan;
  /** Plans already made, one per snapshot, in their order (several). */
  readonly plans?: readonly TracePlan[];
  /** How the replays start their processes (default: simulated H200s, adviseProcesses()). */
  readonly processes?: AdviseInputs['processes'];
};

/** advise(snapshot or snapshots, options): each snapshot planned under the limit where no plan is given. */
export function advise(
  snapshots: MemorySnapshot | readonly MemorySnapshot[],
  options: AdviseOptions = {},
): Promise<Advice> {
  const all: readonly MemorySnapshot[] = Array.isArray(snapshots) ? snapshots : [snapshots as MemorySnapshot];
  const { plan, plans, processes, ...rest } = options;
  return adviseOn(snapshots, {
    ...rest,
    plans:
      plans ??
      all.map(
        (s) => (all.length === 1 ? plan : undefined) ?? planOf(s, { memoryLimit: options.memoryLimit }),
      ),
    processes: processes ?? adviseProcesses(),
  });
}

export type AnalyseOptions = Omit<AnalyseInputs, 'plan' | 'startProcess'> &
  OnDevice & {
    /** The snapshot's plan (planReplay), when already made. */
    readonly plan?: TracePlan;
  };

/** What holds memory at the peak of `snapshot`, and under a setting where one is given. */
export function analysePeak(snapshot: MemorySnapshot, options: AnalyseOptions = {}): PeakBreakdown {
  const { device, ...rest } = options;
  return analyseOn(snapshot, {
    ...rest,
    plan: options.plan ?? planOf(snapshot, { memoryLimit: options.memoryLimit, device }),
    startProcess: options.startProcess ?? startOnSimulator(device),
  });
}

export type CompareOptions = Omit<CompareInputs, 'plans' | 'startProcess'> &
  OnDevice & {
    /** The two snapshots' plans (planReplay), when already made. */
    readonly plans?: readonly [TracePlan, TracePlan];
  };

/** Compare snapshot `a` (before) with `b` (after) at their peaks, and under a setting where one is given. */
export function compareSnapshots(
  a: MemorySnapshot,
  b: MemorySnapshot,
  options: CompareOptions = {},
): SnapshotComparison {
  const { device, ...rest } = options;
  const plan = (s: MemorySnapshot) => planOf(s, { memoryLimit: options.memoryLimit, device });
  return compareOn(a, b, {
    ...rest,
    plans: options.plans ?? [plan(a), plan(b)],
    startProcess: options.startProcess ?? startOnSimulator(device),
  });
}

export type RanksOptions = Omit<RanksInputs, 'plans' | 'startProcess'> &
  OnDevice & {
    /** The snapshots' plans (planReplay), when already made. */
    readonly plans?: readonly TracePlan[];
  };

/** Summarise a job's per-rank snapshots (Note [Which rank runs out first]). */
export function summariseRanks(
  snapshots: readonly MemorySnapshot[],
  options: RanksOptions = {},
): Promise<RankSummary> {
  const { device, ...rest } = options;
  return summariseOn(snapshots, {
    ...rest,
    plans: options.plans ?? snapshots.map((s) => planOf(s, { memoryLimit: options.memoryLimit, device })),
    startProcess: options.startProcess ?? startOnSimulator(device),
    adviseProcesses: options.adviseProcesses ?? adviseProcesses(),
  });
}

export type WhatIfOptions = Omit<WhatIfInputs, 'startProcess'> & OnDevice;

/** Answer a what-if on `snapshot`, the recording reproduced first (on the simulator, where backend is 'cuda'). */
export function answerWhatIf(snapshot: MemorySnapshot, options: WhatIfOptions): WhatIfAnswer {
  const { device, ...rest } = options;
  // Runs on the real GPUs reproduce the recording on the simulator, as `vmmkit replay --backend cuda` does.
  const simulated = options.backend === 'cuda' ? startOnSimulator(device) : undefined;
  return answerOn(snapshot, {
    ...rest,
    startProcess: starterOf(options),
    startReproduction: rest.startReproduction ?? simulated,
  });
}

export type AsRecordedOptions = Omit<AsRecordedInputs, 'startProcess'> & OnDevice;

/** Replay `snapshot` as it was recorded and compare with the recording (Note [As recorded]). */
export function reproduceRecording(snapshot: MemorySnapshot, options: AsRecordedOptions): AsRecorded {
  const { device: _device, ...rest } = options;
  return reproduceOn(snapshot, { ...rest, startProcess: starterOf(options) });
}
