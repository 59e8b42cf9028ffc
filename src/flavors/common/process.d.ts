import { type ProcessOptions, type VmmProcess } from '../../compose/create-runtime.js';
import type { Runtime } from '../../core/runtime.js';
import { type ErrorTable, VendorCodes } from './error-table.js';
/**
 * Options every flavour's create function takes: the composition root's
 * (backend 'sim' or 'cuda' or a Backend object, the devices or machine to
 * join, libcuda's paths, a tracer, a report hook). A flavour never makes a
 * backend itself; createProcess does.
 */
export type FlavorOptions = ProcessOptions;
/**
 * A vendor's default simulated machine (HIP: an MI300X, ACL: an Ascend
 * 910B), applied only where options leave the machine open: a simulated
 * process that names no devices and joins no machine. So `createHip()` and
 * `new HipFlavor()` (and each other pair) start the same machine, and a real
 * backend is never handed devices it does not take.
 */
export declare function withDefaultDevices(
  options: FlavorOptions,
  devices: NonNullable<FlavorOptions['devices']>,
): FlavorOptions;
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
export declare abstract class VendorProcess implements Disposable {
  readonly runtime: Runtime;
  /** The simulated machine this process runs on (undefined on real hardware or a caller's backend). */
  readonly machine: VmmProcess['machine'];
  /** Where internal problems go (never thrown out of a vendor call). */
  protected readonly report: (message: string, error?: unknown) => void;
  /** The vendor's error factory. */
  protected readonly codes: VendorCodes;
  constructor(options: FlavorOptions, errors: VendorErrors);
  /** This process's pid on its machine. */
  get pid(): number;
  /** The last unexpected internal error (a vmmkit bug), for debugging; the call answered it with the vendor's unknown code. */
  get lastInternalError(): unknown;
  /** End the process: everything it holds is released, as at exit. Never throws. */
  dispose(): void;
  [Symbol.dispose](): void;
}
/**
 * The report hook a front end uses when the caller gives none: one line per
 * problem on stderr (console.warn), the error's name and first message line
 * included, its stack only when the environment variable VMMKIT_STACKS is set
 * (to anything but '' or '0'). A vendor call already answered the problem
 * with a code; the line is for whoever reads the log, not a crash report.
 */
export declare function reportOneLine(message: string, error?: unknown): void;
