/**
 * Reading a snapshot in the page: the browser's counterpart of load.ts's
 * loadSnapshotFile. The file comes as a stream (`File.stream()`), gzip is
 * found by its magic bytes and inflated by the browser's DecompressionStream,
 * and every chunk goes to the same streaming reader the CLI uses
 * (snapshot-reader.ts), so memory follows the snapshot's events, not the
 * file's size, and a 1 GB file is never held whole.
 */
import { SnapshotError } from '../../replay/errors.js';
import type { MemorySnapshot } from '../../replay/read/snapshot.js';
import { SnapshotReader } from '../../replay/read/snapshot-reader.js';

/** Told as the file is read: its bytes so far, and its size. */
export type ReadProgress = (bytesRead: number, totalBytes: number) => void;

/** A snapshot from a stream of its file's bytes (gzip or not); `size`: the file's, for progress. */
export async function readSnapshotStream(
  file: ReadableStream<Uint8Array>,
  size: number,
  onProgress?: ReadProgress,
): Promise<MemorySnapshot> {
  const [head, rest] = await firstBytes(file, 2);
  const gzip = head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
  let read = 0;
  // Counts the file's own bytes (before inflating) for the progress bar.
  const counted = rest.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        read += chunk.length;
        onProgress?.(read, size);
        out.enqueue(chunk);
      },
    }),
  );
  const source = gzip
    ? counted.pipeThrough(
        new DecompressionStream('gzip') as unknown as TransformStream<Uint8Array, Uint8Array>,
      )
    : counted;
  const reader = new SnapshotReader();
  const chunks = source.getReader();
  try {
    for (;;) {
      const { done, value } = await chunks.read();
      if (done) break;
      // Past the pickle's STOP a gzip file is still read to its end, so that its CRC is checked.
      if (reader.write(value) && !gzip) break;
    }
  } catch (e) {
    if (gzip && e instanceof TypeError) {
      throw new SnapshotError('corrupt-gzip', `the gzip data does not inflate (${e.message})`);
    }
    throw e;
  } finally {
    chunks.releaseLock();
    await source.cancel().catch(() => {});
  }
  onProgress?.(size, size);
  return reader.end();
}

/**
 * The first `n` bytes of a stream (fewer if it is shorter), and a stream of
 * all its bytes, those included.
 */
async function firstBytes(
  stream: ReadableStream<Uint8Array>,
  n: number,
): Promise<[Uint8Array, ReadableStream<Uint8Array>]> {
  const reader = stream.getReader();
  const taken: Uint8Array[] = [];
  let got = 0;
  let ended = false;
  while (got < n) {
    const { done, value } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    taken.push(value);
    got += value.length;
  }
  const head = new Uint8Array(Math.min(n, got));
  let at = 0;
  for (const c of taken) {
    if (at >= head.length) break;
    const part = c.subarray(0, head.length - at);
    head.set(part, at);
    at += part.length;
  }
  const rest = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of taken) controller.enqueue(c);
      if (ended) controller.close();
    },
    async pull(controller) {
      if (ended) return;
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return [head, rest];
}
