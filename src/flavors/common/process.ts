import type { Backend } from '../../backend/backend.js';
import { CudaBackend, type CudaBackendOptions } from '../../backends/cuda/backend.js';
import { Machine, type MachineOptions } from '../../backends/sim/machine.js';
import { Runtime } from '../../core/runtime.js';
import type { Tracer } from '../../core/trace.js';
import { type ErrorTable, VendorCodes } from './error-table.js';

/** Options every flavour's create function takes. */
export interface FlavorOptions extends MachineOptions {
  /** 'sim' (default): a simulated machine. 'cuda': the real NVIDIA driver. */
  readonly backend?: 'sim' | 'cuda';
  /** Join this simulated machine as a new process (instead of making a machine of one's own). */
  readonly machine?: Machine;
  /** With `backend: 'cuda'`: the driver to use, or the libcuda paths to try (default libcuda.so.1, libcuda.so). */
  readonly cuda?: Pick<CudaBackendOptions, 'driver' | 'libraryPaths'>;
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
    if (options.machine !== undefined)
      throw new TypeError("a simulated machine cannot be joined with backend 'cuda'");
    // libcuda is loaded here, on first use, never at import; without it: CudaDriverUnavailableError.
    const backend = new CudaBackend({ ...options.cuda, tracer: options.tracer, report });
    return { runtime: new Runtime(backend, { tracer: options.tracer, report }), machine: undefined, report };
  }
  const machine = options.machine ?? new Machine(options);
  const backend: Backend = machine.spawn({ tracer: options.tracer });
  const runtime = new Runtime(backend, { tracer: options.tracer, report });
  return { runtime, machine, report };
}

/** How a vendor spells success, failure it cannot name, and each core error kind. */
export interface VendorErrors {
  readonly vendor: string;
  readonly table: ErrorTable;
  readonly success: number;
  readonly unknown: number;
}

/**
 * What every front end is: one process (a Runtime over a backend) speaking a
 * vendor's language. The vendor classes add the C-shaped calls.
 */
export abstract class VendorProcess implements Disposable {
  readonly runtime: Runtime;
  /** The simulated machine this process runs on (undefined on real hardware). */
  readonly machine: Machine | undefined;
  /** Where internal problems go (never thrown out of a vendor call). */
  protected readonly report: (message: string, error?: unknown) => void;
  /** The vendor's error factory. */
  protected readonly codes: VendorCodes;

  constructor(options: FlavorOptions, errors: VendorErrors) {
    const p = startProcess(options);
    this.runtime = p.runtime;
    this.machine = p.machine;
    this.report = p.report;
    this.codes = new VendorCodes(errors.table, errors.success, errors.unknown, errors.vendor, p.report);
  }

  /** This process's pid on its machine. */
  get pid(): number {
    return this.runtime.pid;
  }

  /** The last unexpected internal error (a vmmkit bug), for debugging; the call answered it with the vendor's unknown code. */
  get lastInternalError(): unknown {
    return this.codes.lastInternalError;
  }

  /** End the process: everything it holds is released, as at exit. Never throws. */
  dispose(): void {
    this.runtime.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
