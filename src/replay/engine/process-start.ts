/**
 * How replay gets its processes: from whoever composes the program (the
 * command line, the package's entry), never from the backends itself. One
 * process per allocator run, with the observers replay watches it through
 * (the driver meter, recorded placement) and the report hook that collects
 * the run's warnings. What the process is (a simulated H200, the real
 * GPUs, an Ascend 910B behind the ACL front end) is the starter's business.
 */
import type { RuntimeObserver } from '../../core/observer.js';
import type { Runtime } from '../../core/runtime.js';

/** What replay asks of a starter for one allocator's run. */
export interface ProcessRequest {
  /** How many devices the trace uses (device ordinals 0 .. devices - 1). */
  readonly devices: number;
  /** Where the run's teardown problems go (they become the run's warnings). */
  readonly report: (message: string, error?: unknown) => void;
  /** Told of every core operation (Note [Runtime observers]). */
  readonly observers: readonly RuntimeObserver[];
}

/** Starts one process for one allocator run; replay disposes its runtime when the run ends. */
export type StartProcess = (request: ProcessRequest) => Runtime;
