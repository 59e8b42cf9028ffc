/**
 * Replay's errors, all in one place (the pickle reader's included). Each
 * has a `name` and a one-line message meant for a person (the CLI prints
 * it as it is), made by errorClass (Note [One error factory per layer] in
 * util/error-class.ts). An allocator's own errors (src/alloc/errors.ts) come
 * up through replay as they are, or end a run with their name and message.
 */
import { errorClass } from '../util/error-class.js';

/**
 * What replay reports as bad input: a file that cannot be read, gzip that
 * does not inflate, a pickle that is not a memory snapshot.
 */
export class SnapshotError extends errorClass('SnapshotError') {
  constructor(
    readonly kind: 'unreadable' | 'corrupt-gzip' | 'not-a-snapshot',
    message: string,
  ) {
    super(message);
  }
}

/** A bad pickle: what went wrong, where (byte offset), and with which opcode when one is to blame. */
export class PickleError extends errorClass('PickleError') {
  constructor(
    readonly kind: 'truncated' | 'unsupported-opcode' | 'malformed' | 'unpicklable',
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/**
 * A replay, an advice or a bound that cannot go on for a reason of its own
 * (not the allocator's): a bad option (a memory limit, a page size), a
 * device the machine lacks, a run that kept nothing to export.
 */
export class ReplayError extends errorClass('ReplayError') {}

/** An allocator name no registry entry has; the message lists the known ones. */
export class UnknownAllocatorError extends errorClass('UnknownAllocatorError') {}

/** A driver cost table that cannot be read, or that lacks a call an allocator made. */
export class CostTableError extends errorClass('CostTableError') {}

/**
 * Thrown from a replay's onStep to end a run that can no longer change
 * advise's answer (advise/pool.ts, Note [Stopping a replay]); it never
 * leaves the job that threw it.
 */
export class PastTheBar extends errorClass('PastTheBar') {}
