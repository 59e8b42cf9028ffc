/**
 * The command line's errors, all in one place. Each has a `name` and a
 * one-line message meant for a person, made by errorClass (Note [One error
 * factory per layer] in util/error-class.ts); every command prints the message
 * as it is, never a stack trace. Lower layers' typed errors (a SnapshotError,
 * an AllocConfError) come up as they are, or as a UsageError where they
 * mean the command was called wrongly.
 */
import { errorClass } from '../util/error-class.js';

/** A mistake in how a command was called (exit 2): the CLI prints its message with the command's usage. */
export class UsageError extends errorClass('UsageError') {}

/**
 * Bad input that is not a mistake in the call itself (exit 1): a file the
 * command cannot write, a snapshot with no trace events to replay, no
 * allocator to replay it with.
 */
export class CommandError extends errorClass('CommandError') {}

/** A script that cannot run: a missing file, a failed import, no default function, or a throw (exit 1). */
export class ScriptError extends errorClass('ScriptError', CommandError) {}
