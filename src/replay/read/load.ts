/**
 * Reading a snapshot file: gzip found by its magic bytes and inflated, then
 * unpickled into a MemorySnapshot by the streaming reader (snapshot-reader.ts).
 *
 *   loadSnapshotFile   streams: the file in chunks, gzip inflated in chunks;
 *                      memory follows the snapshot's events, not the file
 *   readSnapshotFile   the same, synchronously: a plain pickle in chunks, a
 *                      gzip one inflated whole first (Node has no
 *                      synchronous streaming inflate)
 *   readSnapshotBytes  the same from bytes already in memory
 */
import { closeSync, createReadStream, fstatSync, openSync, readSync } from 'node:fs';
import { pipeline } from 'node:stream';
import { createGunzip, gunzipSync } from 'node:zlib';
import { SnapshotError } from '../errors.js';
import { unpickle } from './pickle/reader.js';
import type { PickleValue } from './pickle/value.js';
import type { MemorySnapshot } from './snapshot.js';
import { SnapshotReader } from './snapshot-reader.js';

const CHUNK = 1 << 20;

export interface LoadOptions {
  /** Called as the file is read: bytes of the file so far, and its size. */
  readonly onProgress?: (bytesRead: number, totalBytes: number) => void;
  /** Read trace entries straight from the bytes (Note [Trace entries from the bytes]); on unless false. */
  readonly fastEntries?: boolean;
}

/** True when `bytes` starts with gzip's magic number (1f 8b). */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** Unpickle `bytes` as plain values, inflating them first when they are gzip. */
export function readPickle(bytes: Uint8Array): PickleValue {
  return unpickle(isGzip(bytes) ? inflate(bytes) : bytes);
}

/** A snapshot from its file's bytes, gzip or not, through the streaming reader (what the files' readers give). */
export function readSnapshotBytes(bytes: Uint8Array): MemorySnapshot {
  const reader = new SnapshotReader();
  reader.write(isGzip(bytes) ? inflate(bytes) : bytes);
  return reader.end();
}

/** Read, inflate, unpickle and check a snapshot file, streaming it (the call for big files). */
export async function loadSnapshotFile(path: string, options: LoadOptions = {}): Promise<MemorySnapshot> {
  const { fd, size, gzip } = open(path);
  const file = createReadStream('', { fd, highWaterMark: CHUNK, start: 0 });
  // pipeline passes an error of either stream to the other, so iterating the inflater sees a read error too.
  const source = gzip ? pipeline(file, createGunzip({ chunkSize: CHUNK }), () => {}) : file;
  const reader = new SnapshotReader({ fastEntries: options.fastEntries });
  try {
    for await (const chunk of source) {
      // Past the pickle's STOP a gzip file is still read to its end, so that its CRC is checked.
      if (reader.write(chunk as Buffer) && !gzip) break;
      options.onProgress?.(file.bytesRead, size);
    }
  } catch (e) {
    if (e instanceof Error && typeof (e as NodeJS.ErrnoException).code === 'string') {
      const code = (e as NodeJS.ErrnoException).code!;
      if (code.startsWith('Z_')) throw corruptGzip(e);
      throw unreadable(path, e);
    }
    throw e;
  } finally {
    file.destroy();
    if (source !== file) source.destroy();
  }
  options.onProgress?.(size, size);
  return reader.end();
}

/** Read, inflate, unpickle and check a snapshot file, synchronously. */
export function readSnapshotFile(path: string): MemorySnapshot {
  const { fd, size, gzip } = open(path);
  const reader = new SnapshotReader();
  try {
    if (gzip) {
      const bytes = Buffer.allocUnsafe(size);
      let n = 0;
      while (n < size) {
        const got = readSync(fd, bytes, n, size - n, n);
        if (got === 0) break;
        n += got;
      }
      reader.write(inflate(bytes.subarray(0, n)));
    } else {
      // One buffer for every chunk: the reader copies what it keeps.
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(size, 1)));
      for (let at = 0; ; ) {
        const got = readSync(fd, chunk, 0, chunk.length, at);
        if (got === 0) break;
        at += got;
        if (reader.write(chunk.subarray(0, got))) break;
      }
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && !code.startsWith('Z_')) throw unreadable(path, e);
    throw e;
  } finally {
    closeSync(fd);
  }
  return reader.end();
}

/** Open `path` for reading, with its size and whether it is gzip (errors as SnapshotErrors). */
function open(path: string): { fd: number; size: number; gzip: boolean } {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw unreadable(path, e);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw Object.assign(new Error('EISDIR'), { code: 'EISDIR' });
    const head = Buffer.alloc(2);
    const got = readSync(fd, head, 0, 2, 0);
    return { fd, size: stat.size, gzip: isGzip(head.subarray(0, got)) };
  } catch (e) {
    closeSync(fd);
    throw unreadable(path, e);
  }
}

function unreadable(path: string, e: unknown): SnapshotError {
  const code = (e as NodeJS.ErrnoException).code;
  const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : String(e);
  return new SnapshotError('unreadable', `cannot read ${path}: ${why}`);
}

function inflate(bytes: Uint8Array): Buffer {
  try {
    return gunzipSync(bytes);
  } catch (e) {
    throw corruptGzip(e);
  }
}

function corruptGzip(e: unknown): SnapshotError {
  const why = e instanceof Error ? e.message : String(e);
  return new SnapshotError('corrupt-gzip', `the gzip data does not inflate (${why})`);
}
