/** The field checks a snapshot's reading shares, and the words its messages use for values. */
import { SnapshotError } from '../errors.js';
import { PickleTuple, type StackValue, Streamed } from './pickle/index.js';

export function notSnapshot(message: string): SnapshotError {
  return new SnapshotError('not-a-snapshot', `not a memory snapshot: ${message}`);
}

/** `where[i].key` (or `where.key` when i < 0), as messages name a field. */
export function fieldName(where: string, i: number, key: string): string {
  return i >= 0 ? `${where}[${i}].${key}` : `${where}.${key}`;
}

/** A non-negative safe integer, or a SnapshotError naming the field. */
export function count(v: StackValue | undefined, where: string, i: number, key: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  throw wrongType(v, fieldName(where, i, key), 'a non-negative integer');
}

export function integer(v: StackValue | undefined, where: string, i: number, key: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  throw wrongType(v, fieldName(where, i, key), 'an integer');
}

export function wrongType(v: StackValue | undefined, at: string, expected: string): SnapshotError {
  return notSnapshot(v === undefined ? `${at} is missing` : `${at} is ${describe(v)}, expected ${expected}`);
}

/** A value as a message names it: "a string ('abc')", "None", "a list of 3". */
export function describe(v: StackValue | undefined): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'None';
  if (typeof v === 'string') return `a string ('${quoted(v)}')`;
  if (typeof v === 'number') return Number.isInteger(v) ? `the integer ${v}` : `the float ${v}`;
  if (typeof v === 'bigint') return `the integer ${v} (beyond 2^53)`;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (Array.isArray(v)) return `a list of ${v.length}`;
  // The streaming reader's containers read as what they stand for.
  if (v instanceof Streamed) return v.describe();
  if (v instanceof PickleTuple) return `a tuple of ${v.items.length}`;
  if (v instanceof Uint8Array) return `bytes (${v.length})`;
  return 'a dict';
}

/** A string as a message quotes it: its first 40 characters, control characters escaped. */
export function quoted(s: string): string {
  return printable(s.length > 40 ? `${s.slice(0, 40)}...` : s);
}

/** `s` with its control characters (a newline, a carriage return) escaped: a message stays one line. */
function printable(s: string): string {
  return s.replace(/[\p{Cc}\u2028\u2029]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
