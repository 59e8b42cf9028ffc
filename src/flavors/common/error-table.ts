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
