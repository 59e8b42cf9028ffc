/**
 * The utilities' errors, in one place, as each layer has its own: each has
 * a `name` and a one-line message meant for a person, made by errorClass
 * (Note [One error factory per layer] in error-class.ts).
 */
import { errorClass } from './error-class.js';

/** A size that parseByteSize does not read (Note [Byte size units] in byte-size.ts). */
export class ByteSizeError extends errorClass('ByteSizeError') {}

/** A device name the device table (device-specs.ts) does not know; the message names those it does. */
export class UnknownDeviceError extends errorClass('UnknownDeviceError') {}

/**
 * A memory limit that cannot be read as bytes (Note [Memory limits] in
 * memory-limit.ts): `kind` says why, so a caller can add how to fix it in
 * its own words (the command line names its options).
 */
export class MemoryLimitError extends errorClass('MemoryLimitError') {
  constructor(
    message: string,
    readonly kind:
      | 'not-a-size'
      | 'no-memory'
      | 'ambiguous-number'
      | 'fraction-needs-device'
      | 'over-device' = 'not-a-size',
  ) {
    super(message);
  }
}

/** A value an IntMap cannot hold (int-map.ts: an int32 other than its ABSENT mark); a RangeError. */
export class IntMapValueError extends errorClass('IntMapValueError', RangeError) {}
