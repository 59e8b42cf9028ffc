/**
 * The composition root: the one place that turns options into a process,
 * a Runtime over a backend (and, when simulated, the machine it runs on).
 * Core users, the front ends, the allocators and the CLI all make their
 * processes here; none of them imports a backend.
 */
import type { Backend } from '../backend/backend.js';
import { CudaBackend, type CudaBackendOptions } from '../backends/cuda/backend.js';
import { Machine, type MachineOptions } from '../backends/sim/machine.js';
import { warn } from '../core/errors.js';
import type { RuntimeObserver } from '../core/observer.js';
import { Runtime } from '../core/runtime.js';
import type { Tracer } from '../core/trace.js';

export interface ProcessOptions extends MachineOptions {
  /**
   * 'sim' (default): a process on a simulated machine. 'cuda': the real NVIDIA
   * driver (libcuda loads now, not at import). A Backend object: used as is
   * (fault injection, a backend of one's own).
   */
  readonly backend?: 'sim' | 'cuda' | Backend;
  /** Join this simulated machine as a new process instead of making a machine of one's own. */
  readonly machine?: Machine;
  /** With `backend: 'cuda'`: the driver to use, or the libcuda paths to try; whether the cycle's calls may be fast calls. */
  readonly cuda?: Pick<CudaBackendOptions, 'driver' | 'libraryPaths' | 'fastCalls'>;
  /** Record every call through the layers. */
  readonly tracer?: Tracer;
  /** Where dispose() and internal problems report instead of throwing (default: console.warn). */
  readonly report?: (message: string, error?: unknown) => void;
  /** Told of every core operation, before and after (Note [Runtime observers], src/core/observer.ts). */
  readonly observers?: readonly RuntimeObserver[];
}

/** A process: its runtime, and its machine when it is simulated. */
export interface VmmProcess {
  readonly runtime: Runtime;
  /** The simulated machine the process runs on; undefined on real hardware or a caller's backend. */
  readonly machine: Machine | undefined;
  readonly report: (message: string, error?: unknown) => void;
  /** The tracer the process's runtime and backend report to, for a front end to trace its own calls with. */
  readonly tracer: Tracer | undefined;
}

/** A simulated machine that several processes join (`createRuntime({ machine })`, `createHip({ machine })`). */
export { createMachine, Machine, type MachineOptions } from '../backends/sim/machine.js';
export { DEVICE_PRESETS, type DevicePreset, type DeviceSpec } from '../backends/sim/presets.js';

/** The default machine when none is named: one simulated H200. */
export const DEFAULT_DEVICES = ['H200'] as const;

export function createProcess(options: ProcessOptions = {}): VmmProcess {
  const report = options.report ?? warn;
  const { backend = 'sim', tracer, observers } = options;
  const runtimeOptions = { tracer, report, observers };
  if (backend !== 'sim' && options.machine !== undefined)
    throw new TypeError('a simulated machine can be joined only with the simulated backend');
  if (typeof backend === 'object') {
    if (options.devices !== undefined) throw new TypeError('devices are the given backend’s own');
    return { runtime: new Runtime(backend, runtimeOptions), machine: undefined, report, tracer };
  }
  if (backend === 'cuda') {
    if (options.devices !== undefined) throw new TypeError("backend 'cuda' uses the machine's real devices");
    // Throws CudaDriverUnavailableError where there is no libcuda.
    const cuda = new CudaBackend({ ...options.cuda, tracer, report });
    return { runtime: new Runtime(cuda, runtimeOptions), machine: undefined, report, tracer };
  }
  if (backend !== 'sim')
    throw new TypeError(`unknown backend ${String(backend)}: 'sim', 'cuda' or a Backend`);
  const machine = options.machine ?? new Machine({ devices: DEFAULT_DEVICES, ...options });
  const runtime = new Runtime(machine.spawn({ tracer }), runtimeOptions);
  return { runtime, machine, report, tracer };
}

/** A Runtime on a fresh (or the given) machine: `createRuntime({ devices: ['H200', 'H200'] })`. */
export function createRuntime(options: ProcessOptions = {}): Runtime {
  return createProcess(options).runtime;
}
