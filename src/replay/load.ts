/** Reading a snapshot file: gzip found by its magic bytes and inflated, then unpickled. */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { SnapshotError } from './errors.js';
import { unpickle } from './pickle/reader.js';
import type { PickleValue } from './pickle/value.js';
import { type MemorySnapshot, parseSnapshot } from './snapshot.js';

/** True when `bytes` starts with gzip's magic number (1f 8b). */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** Unpickle `bytes`, inflating them first when they are gzip. */
export function readPickle(bytes: Uint8Array): PickleValue {
  return unpickle(isGzip(bytes) ? inflate(bytes) : bytes);
}

function inflate(bytes: Uint8Array): Buffer {
  try {
    return gunzipSync(bytes);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new SnapshotError('corrupt-gzip', `the gzip data does not inflate (${why})`);
  }
}

/** Read, inflate, unpickle and check a snapshot file. */
export function readSnapshotFile(path: string): MemorySnapshot {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : String(e);
    throw new SnapshotError('unreadable', `cannot read ${path}: ${why}`);
  }
  return parseSnapshot(readPickle(bytes));
}
