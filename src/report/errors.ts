/**
 * The report's errors, all in one place. Each has a `name` and a one-line
 * message meant for a person, made by errorClass (Note [One error factory per
 * layer] in util/error-class.ts); replay's errors (src/replay/errors.ts) come
 * up through the report as they are.
 */
import { errorClass } from '../util/error-class.js';

/** Replay told the recorder something that cannot be (a free of an address the block does not have). */
export class RecorderError extends errorClass('RecorderError') {}

/** An argument the report's parts cannot take (a count of events or buckets); a RangeError, as before. */
export class ReportArgumentError extends errorClass('ReportArgumentError', RangeError) {}

/** The page `vmmkit report` and `vmmkit open` write and serve is not built (dist/web/index.html). */
export class ReportPageMissingError extends errorClass('ReportPageMissingError') {}

/**
 * Not a failure: the recorder's way to end a replay once it holds every
 * layout it was asked for (RecorderOptions.stopOnceCaptured), the same way
 * advise's watch ends a replay past its bar.
 */
export class CapturesTaken extends errorClass('CapturesTaken') {}
