/**
 * The utilities' errors, in one place, as each layer has its own: each has
 * a `name` and a one-line message meant for a person.
 */

/** A size that parseByteSize does not read (Note [Byte size units] in byte-size.ts). */
export class ByteSizeError extends Error {
  override readonly name = 'ByteSizeError';
}
