import type { Box } from '../../c-api/arguments.js';
import { type ErrorKind, isVmmError } from '../../core/errors.js';
import { writeOrTakeBack } from './untrusted.js';

/** One vendor's code for every core error kind. */
export type ErrorTable = Readonly<Record<ErrorKind, number>>;

/**
 * The vendor code for anything a flavor call caught. A VmmError goes
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
 * A vmmkit bug that a front end's own check caught (core accepted what it
 * should have refused): no VmmError, so the call that catches it reports it
 * and answers the vendor's unknown code (codeFor).
 */
export function internalError(message: string): Error {
  return new Error(`internal error: ${message}`);
}

/**
 * A flavor's error factory: what a call caught becomes the vendor's code
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

  /**
   * The vendor code for what a call caught: the driver's own code when the
   * error carries one of this vendor's (Note [Driver codes] in core), else
   * the table's code for its kind (codeFor).
   */
  code(e: unknown): number {
    if (isVmmError(e) && e.driver !== undefined && e.driver.vendor === this.vendor) return e.driver.code;
    return codeFor(this.table, e, this.unknown, (err) => {
      this.lastInternalError = err;
      this.report(`internal error in a ${this.vendor} call`, err);
    });
  }

  /** `answer` for any VmmError (a vendor call that answers one code whatever failed); a bug otherwise, as code() answers it. */
  codeAs(e: unknown, answer: number): number {
    return isVmmError(e) ? answer : this.code(e);
  }

  /**
   * Make something in core and hand it to the caller through `box`: the
   * success code, or the code for what core threw. When the box refuses the
   * write (Note [Untrusted arguments]), what was made is taken back and the
   * answer is `refused`; `kept` runs only once the caller holds it.
   */
  handOut<T, V>(
    box: Box<V>,
    make: () => T,
    shown: (made: T) => V,
    takeBack: (made: T) => void,
    refused: number | (() => number),
    kept?: (made: T) => void,
  ): number {
    try {
      const made = make();
      if (!writeOrTakeBack(box, shown(made), () => takeBack(made)))
        return typeof refused === 'number' ? refused : refused();
      kept?.(made);
      return this.success;
    } catch (e) {
      return this.code(e);
    }
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
