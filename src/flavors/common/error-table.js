import { isVmmError } from '../../core/errors.js';
/**
 * The vendor code for anything a flavour call caught. A VmmError goes
 * through the table; anything else is a bug in vmmkit, answered with the
 * vendor's "unknown" code and handed to `report` so it is not lost.
 */
export function codeFor(table, error, unknownCode, report) {
  if (isVmmError(error)) return table[error.kind];
  report(error);
  return unknownCode;
}
/**
 * A flavour's error factory: what a call caught becomes the vendor's code
 * (see codeFor), and an unexpected error is kept for debugging.
 */
export class VendorCodes {
  table;
  success;
  unknown;
  vendor;
  report;
  /** The last unexpected internal error (a vmmkit bug); the call answered it with the unknown code. */
  lastInternalError;
  constructor(table, success, unknown, vendor, report) {
    this.table = table;
    this.success = success;
    this.unknown = unknown;
    this.vendor = vendor;
    this.report = report;
  }
  code(e) {
    return codeFor(this.table, e, this.unknown, (err) => {
      this.lastInternalError = err;
      this.report(`internal error in a ${this.vendor} call`, err);
    });
  }
  /** Run core work: the success code, or the code for what it threw. */
  run(work) {
    try {
      work();
      return this.success;
    } catch (e) {
      return this.code(e);
    }
  }
}
//# sourceMappingURL=error-table.js.map
