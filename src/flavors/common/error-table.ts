import { type ErrorKind, isVmmError } from '../../core/errors.js';

/** One vendor's code for every core error kind. */
export type ErrorTable = Readonly<Record<ErrorKind, number>>;

/**
 * The vendor code for anything a flavour call caught. A VmmError goes
 * through the table; anything else is a bug in vmmkit, answered with the
 * vendor's "unknown" code and handed to `report` so it is not lost.
 */
export function codeFor(
  table: ErrorTable,
  error: unknown,
  unknownCode: number,
  report: (e: unknown) => void,
): number {
  if (isVmmError(error)) return table[error.kind];
  report(error);
  return unknownCode;
}

/**
 * A flavour's error factory: what a call caught becomes the vendor's code
 * (see codeFor), and an unexpected error is kept for debugging.
 */
export class VendorCodes {
  /** The last unexpected internal error (a vmmkit bug); the call answered it with the unknown code. */
  lastInternalError: unknown;

  constructor(
    readonly table: ErrorTable,
    readonly success: number,
    readonly unknown: number,
    readonly vendor: string,
    readonly report: (message: string, error?: unknown) => void,
  ) {}

  code(e: unknown): number {
    return codeFor(this.table, e, this.unknown, (err) => {
      this.lastInternalError = err;
      this.report(`internal error in a ${this.vendor} call`, err);
    });
  }

  /** Run core work: the success code, or the code for what it threw. */
  run(work: () => void): number {
    try {
      work();
      return this.success;
    } catch (e) {
      return this.code(e);
    }
  }
}
