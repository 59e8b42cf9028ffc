import type { Backend } from '../../backend/backend.js';
import { Machine, type MachineOptions } from '../../backends/sim/machine.js';
import { Runtime } from '../../core/runtime.js';
import type { Tracer } from '../../core/trace.js';

/** Options every flavour's create function takes. */
export interface FlavorOptions extends MachineOptions {
  /** 'sim' (default): a simulated machine. 'cuda': the real NVIDIA driver. */
  readonly backend?: 'sim' | 'cuda';
  /** Join this simulated machine as a new process (instead of making a machine of one's own). */
  readonly machine?: Machine;
  /** Record every call through the layers. */
  readonly tracer?: Tracer;
  /** Where internal problems are reported (default: console.warn). */
  readonly report?: (message: string, error?: unknown) => void;
}

/** A process as a flavour sees it: its runtime, and its machine when simulated. */
export interface FlavorProcess {
  readonly runtime: Runtime;
  readonly machine: Machine | undefined;
  readonly report: (message: string, error?: unknown) => void;
}

/** Start the process a flavour object stands for. */
export function startProcess(options: FlavorOptions): FlavorProcess {
  const report =
    options.report ?? ((message: string, error?: unknown) => console.warn(`vmmkit: ${message}`, error ?? ''));
  if (options.backend === 'cuda') {
    throw new Error("the 'cuda' backend is not available in this build");
  }
  const machine = options.machine ?? new Machine(options);
  const backend: Backend = machine.spawn({ tracer: options.tracer });
  const runtime = new Runtime(backend, { tracer: options.tracer, report });
  return { runtime, machine, report };
}
