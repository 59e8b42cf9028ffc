/**
 * The ways a replay starts its processes, made here at the top (issue 29):
 * the engine, advise, the analyses and the report take one (StartProcess,
 * src/replay/engine/process-start.ts) and never make a process themselves.
 * Each allocator run gets a fresh process: a simulated machine of the
 * replay's device (as many devices as the trace uses), or the real GPUs.
 * A vendor's front end is front-end-process.ts's startOnFrontEnd.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createProcess, type ProcessOptions } from '../compose/create-runtime.js';
import type { AdviseProcesses } from '../replay/advise/pool.js';
import type { StartProcess } from '../replay/engine/process-start.js';
import type { DeviceChoice } from '../util/device-specs.js';

/** The device a replay simulates when none is named. */
export const DEFAULT_REPLAY_DEVICE = 'H200';

/** Each run on a fresh simulated machine of `device` (default H200), one per device the trace uses. */
export function startOnSimulator(device: DeviceChoice = DEFAULT_REPLAY_DEVICE): StartProcess {
  return ({ devices, report, observers }) =>
    createProcess({ devices: Array(devices).fill(device), report, observers }).runtime;
}

/**
 * Each run on the real GPUs (libcuda loads when a run starts, so a machine
 * without it fails there, with CudaDriverUnavailableError); `cuda` gives the
 * driver to use or the libcuda paths to try (a stand-in driver rehearses a GPU run).
 */
export function startOnGpus(cuda?: ProcessOptions['cuda']): StartProcess {
  return ({ report, observers }) => createProcess({ backend: 'cuda', cuda, report, observers }).runtime;
}

/** How a replay's options name its process: the simulator (of `device`) unless backend is 'cuda'. */
export interface ProcessChoice {
  readonly backend?: 'sim' | 'cuda';
  /** With backend 'cuda': the driver to use, or the libcuda paths to try. */
  readonly cuda?: ProcessOptions['cuda'];
  /** The simulated device (default H200). */
  readonly device?: DeviceChoice;
}

/** The starter `choice` names. */
export function startProcessOf(choice: ProcessChoice): StartProcess {
  return choice.backend === 'cuda' ? startOnGpus(choice.cuda) : startOnSimulator(choice.device);
}

/**
 * The module of advise's worker threads (advise-worker.ts, which starts its
 * processes as startOnSimulator() does), when it is there: in the compiled
 * package (dist/) it is; run from the TypeScript sources (vitest) it is not,
 * and advise replays in its own thread (Note [Worker threads], advise/pool.ts).
 */
export function adviseWorkerModule(): URL | undefined {
  const url = new URL('./advise-worker.js', import.meta.url);
  return url.protocol === 'file:' && existsSync(fileURLToPath(url)) ? url : undefined;
}

/** advise's processes, in its thread and its worker threads alike: a simulated H200 machine per run. */
export function adviseProcesses(): AdviseProcesses {
  return { startProcess: startOnSimulator(), workerModule: adviseWorkerModule() };
}
