/**
 * Replaying a snapshot for the report: every allocator once with a
 * ReplayRecorder (timelines, the replay's own numbers), then once more up to
 * its peak to capture the address space there.
 *
 * Note [Two passes for the peak]: the peak of reserved bytes is known only
 * once the run is over, and describing the address space at every new high
 * would cost a description per page mapped on the way up (expandable
 * segments map one page at a time). Replay is deterministic, so the second
 * run makes exactly the same calls: the recorder of the first run gives the
 * number of the call that reached the peak, and the second captures right
 * after that call, and ends there (stopOnceCaptured): what comes after a
 * peak is no part of its layout. Its other results are dropped.
 */
import type { AllocatorFactory } from '../replay/engine/allocators.js';
import type { CostTable } from '../replay/engine/cost-table.js';
import type { StartProcess } from '../replay/engine/process-start.js';
import { type AllocatorRun, type ReplayResult, replay } from '../replay/engine/replay.js';
import type { TracePlan } from '../replay/engine/trace-plan.js';
import { answerWhatIf, type WhatIfAnswer } from '../replay/engine/what-if.js';
import type { MemorySnapshot } from '../replay/read/snapshot.js';
import { type DeviceRecording, RecorderError, ReplayRecorder } from './recorder.js';

export interface RecordOptions {
  readonly allocators: readonly AllocatorFactory[];
  readonly costs?: CostTable;
  /** Starts each replay's process (process-start.ts): the caller's, such as a simulated H200. */
  readonly startProcess: StartProcess;
  /** The snapshot's plan (planReplay, under memoryLimit), made once by the caller. */
  readonly plan: TracePlan;
  /** A PYTORCH_CUDA_ALLOC_CONF string replacing the recorded settings (ReplayOptions.allocConf). */
  readonly allocConf?: string;
  /** Bytes each allocator may reserve per device (ReplayOptions.memoryLimit). */
  readonly memoryLimit?: number;
  /** Buckets per timeline series (default 2000). */
  readonly buckets?: number;
  /** Capture the address space at each allocator's peak (default true; costs a second replay). */
  readonly peakLayout?: boolean;
  /** Keep segment events and block addresses in the result (for exportSnapshot; default false). */
  readonly keepEvents?: boolean;
  /** Told how far the whole job is, 0 to 1. */
  readonly onProgress?: (fraction: number) => void;
}

export interface RecordedRun {
  readonly run: AllocatorRun;
  /** One per device the allocator served, parallel to run.devices. */
  readonly recordings: readonly DeviceRecording[];
}

export interface RecordedReplay {
  readonly snapshot: MemorySnapshot;
  /** The plan the allocators ran with (empty_cache() placed for the cap in force). */
  readonly plan: TracePlan;
  /** The recording reproduced, the cap in force and each allocator's verdict (what-if.ts). */
  readonly answer: WhatIfAnswer;
  readonly result: ReplayResult;
  readonly runs: readonly RecordedRun[];
}

/** Replay `snapshot` through each allocator, recording what the report draws. */
export function recordReplay(snapshot: MemorySnapshot, options: RecordOptions): RecordedReplay {
  const base = options.plan;
  const peakLayout = options.peakLayout ?? true;
  const passes = peakLayout ? 2 : 1;
  const report = options.onProgress;
  // The recorder needs the plan's blocks, which every cap's plan shares; only empty_cache() placement differs.
  const recorder = new ReplayRecorder(base, { buckets: options.buckets });
  // Each replay of the recording watched too: a model that takes the recording's run takes its recording
  // (Note [The recording's run, taken again]).
  const ofRecording: ReplayRecorder[] = [];
  const answer = answerWhatIf(snapshot, {
    watchRecording: (k) => {
      ofRecording[k] = new ReplayRecorder(base, { buckets: options.buckets });
      return ofRecording[k].onStep;
    },
    allocConf: options.allocConf,
    memoryLimit: options.memoryLimit,
    startProcess: options.startProcess,
    plan: base,
    allocators: options.allocators,
    costs: options.costs,
    keepEvents: options.keepEvents ?? false,
    onStep: recorder.onStep,
    onProgress: report === undefined ? undefined : (done, total) => report(done / total / passes),
  });
  const result = answer.result;
  const plan = result.plan;
  const what = {
    allocConf: options.allocConf,
    startProcess: options.startProcess,
    plan,
    deviceMemoryLimits: answer.limits,
  };
  const runs = result.allocators.map((run, i) => {
    const source = answer.sources[i];
    const recordings =
      source.kind === 'replayed' ? recorder.recordings(source.run) : ofRecording[source.replay].recordings(0);
    if (!peakLayout || run.error !== undefined) return { run, recordings };
    const capture = new Map(recordings.map((r) => [`0:${r.device}`, r.peakCall]));
    const again = new ReplayRecorder(plan, {
      buckets: 1,
      captureAfterCall: capture,
      captureFirstOom: false,
      stopOnceCaptured: true,
    });
    replay(snapshot, {
      ...what,
      allocators: [options.allocators[i]],
      keepEvents: false,
      onStep: again.onStep,
      onProgress:
        report === undefined
          ? undefined
          : (done, total) => report((1 + (i + done / total) / options.allocators.length) / passes),
    });
    const layouts = new Map(again.recordings(0).map((r) => [r.device, r.layout]));
    return {
      run,
      recordings: recordings.map((r) => {
        const layout = layouts.get(r.device);
        if (layout === undefined && r.peakCall >= 0)
          throw new RecorderError(`the second run of ${run.name} did not reach call ${r.peakCall}`);
        return { ...r, layout };
      }),
    };
  });
  report?.(1);
  return { snapshot, plan, answer, result, runs };
}
