/**
 * The report's errors, all in one place. Each has a `name` and a one-line
 * message meant for a person; replay's errors (src/replay/errors.ts) come
 * up through the report as they are.
 */

/** Replay told the recorder something that cannot be (a free of an address the block does not have). */
export class RecorderError extends Error {
  override readonly name = 'RecorderError';
}

/** An argument the report's parts cannot take (a count of events or buckets); a RangeError, as before. */
export class ReportArgumentError extends RangeError {
  override readonly name = 'ReportArgumentError';
}

/** The page `vmmkit report` and `vmmkit open` write and serve is not built (dist/web/index.html). */
export class ReportPageMissingError extends Error {
  override readonly name = 'ReportPageMissingError';
}
