import { type ErrorKind } from '../../core/errors.js';
/** One vendor's code for every core error kind. */
export type ErrorTable = Readonly<Record<ErrorKind, number>>;
/**
 * The vendor code for anything a flavour call caught. A VmmError goes
 * through the table; anything else is a bug in vmmkit, answered with the
 * vendor's "unknown" code and handed to `report` so it is not lost.
 */
export declare function codeFor(
  table: ErrorTable,
  error: unknown,
  unknownCode: number,
  report: (e: unknown) => void,
): number;
/**
 * A flavour's error factory: what a call caught becomes the vendor's code
 * (see codeFor), and an unexpected error is kept for debugging.
 */
export declare class VendorCodes {
  readonly table: ErrorTable;
  readonly success: number;
  readonly unknown: number;
  readonly vendor: string;
  readonly report: (message: string, error?: unknown) => void;
  /** The last unexpected internal error (a vmmkit bug); the call answered it with the unknown code. */
  lastInternalError: unknown;
  constructor(
    table: ErrorTable,
    success: number,
    unknown: number,
    vendor: string,
    report: (message: string, error?: unknown) => void,
  );
  code(e: unknown): number;
  /** Run core work: the success code, or the code for what it threw. */
  run(work: () => void): number;
}
