/**
 * What replay reports as bad input: a file that cannot be read, gzip that
 * does not inflate, a pickle that is not a memory snapshot. The message is
 * one line, meant for a person (the CLI prints it as it is).
 */
export class SnapshotError extends Error {
  override readonly name = 'SnapshotError';
  constructor(
    readonly kind: 'unreadable' | 'corrupt-gzip' | 'not-a-snapshot',
    message: string,
  ) {
    super(message);
  }
}
