import { createProcess } from '../../compose/create-runtime.js';
import { VendorCodes } from './error-table.js';
/**
 * A vendor's default simulated machine (HIP: an MI300X, ACL: an Ascend
 * 910B), applied only where options leave the machine open: a simulated
 * process that names no devices and joins no machine. So `createHip()` and
 * `new HipFlavor()` (and each other pair) start the same machine, and a real
 * backend is never handed devices it does not take.
 */
export function withDefaultDevices(options, devices) {
  const simulated = options.backend === undefined || options.backend === 'sim';
  return simulated && options.machine === undefined && options.devices === undefined
    ? { ...options, devices }
    : options;
}
/**
 * What every front end is: one process (a Runtime over a backend) speaking a
 * vendor's language. The vendor classes add the C-shaped calls.
 */
export class VendorProcess {
  runtime;
  /** The simulated machine this process runs on (undefined on real hardware or a caller's backend). */
  machine;
  /** Where internal problems go (never thrown out of a vendor call). */
  report;
  /** The vendor's error factory. */
  codes;
  constructor(options, errors) {
    const p = createProcess(options.report === undefined ? { ...options, report: reportOneLine } : options);
    this.runtime = p.runtime;
    this.machine = p.machine;
    this.report = p.report;
    this.codes = new VendorCodes(errors.table, errors.success, errors.unknown, errors.vendor, p.report);
  }
  /** This process's pid on its machine. */
  get pid() {
    return this.runtime.pid;
  }
  /** The last unexpected internal error (a vmmkit bug), for debugging; the call answered it with the vendor's unknown code. */
  get lastInternalError() {
    return this.codes.lastInternalError;
  }
  /** End the process: everything it holds is released, as at exit. Never throws. */
  dispose() {
    this.runtime.dispose();
  }
  [Symbol.dispose]() {
    this.dispose();
  }
}
/**
 * The report hook a front end uses when the caller gives none: one line per
 * problem on stderr (console.warn), the error's name and first message line
 * included, its stack only when the environment variable VMMKIT_STACKS is set
 * (to anything but '' or '0'). A vendor call already answered the problem
 * with a code; the line is for whoever reads the log, not a crash report.
 */
export function reportOneLine(message, error) {
  const stacks = stacksWanted();
  let line = `vmmkit: ${message}`;
  if (error instanceof Error) {
    line += `: ${error.name}: ${firstLine(error.message)}`;
    if (stacks && error.stack !== undefined) line += `\n${error.stack}`;
  } else if (error !== undefined) {
    line += `: ${typeof error === 'string' ? firstLine(error) : typeof error}`;
  }
  console.warn(line);
}
function firstLine(text) {
  const i = text.indexOf('\n');
  return i < 0 ? text : text.slice(0, i);
}
function stacksWanted() {
  const env = globalThis.process?.env;
  const v = env?.VMMKIT_STACKS;
  return v !== undefined && v !== '' && v !== '0';
}
//# sourceMappingURL=process.js.map
