/**
 * The entry decoder (Note [Trace entries from the bytes]) gives the snapshot
 * the general reading gives: every committed snapshot, read whole and in
 * chunks that cut entries anywhere, with the decoder on and off, is the same
 * MemorySnapshot (columns, stacks, frames, segments, settings), or the same
 * error; and so is every mutant of a small one (bytes flipped in its trace),
 * where the decoder must give way to the general reading's checks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { type PickleValue, pickle } from '../../src/replay/read/pickle/index.js';
import { SnapshotReader } from '../../src/replay/read/snapshot-reader.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIRS = [
  'traces/h200',
  'traces/h200-heldout',
  'traces/h200-whatif',
  'test/replay/fixtures/wild',
  'test/replay/fixtures',
];

function snapshotFiles(): string[] {
  const files: string[] = [];
  for (const dir of DIRS) {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      // corrupt.pickle.gz is a bad gzip stream: no pickle reaches the reader.
      if (name === 'corrupt.pickle.gz') continue;
      if (name.endsWith('.pickle') || name.endsWith('.pickle.gz')) files.push(join(dir, name));
    }
  }
  return files;
}

function inflate(bytes: Buffer): Buffer {
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes;
}

interface Reading {
  readonly snapshot?: unknown;
  readonly error?: string;
  readonly fast: number;
}

/** Read `bytes` in chunks of `chunk` bytes (0: whole), the decoder on or off. */
function read(bytes: Uint8Array, fastEntries: boolean, chunk = 0): Reading {
  const reader = new SnapshotReader({ fastEntries });
  try {
    if (chunk === 0) reader.write(bytes);
    else
      for (let at = 0; at < bytes.length; at += chunk) {
        if (reader.write(bytes.subarray(at, at + chunk))) break;
      }
    return { snapshot: reader.end(), fast: reader.fastEntries };
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}`, fast: reader.fastEntries };
  }
}

function expectSame(fast: Reading, general: Reading): void {
  expect(fast.error).toBe(general.error);
  // toEqual would take an Int32Array of stack indices for a Float64Array of the same numbers; this does not.
  expect(isDeepStrictEqual(fast.snapshot, general.snapshot)).toBe(true);
}

describe('the entry decoder', () => {
  const files = snapshotFiles();

  it('finds the committed snapshots', () => {
    expect(files.length).toBeGreaterThan(40);
  });

  for (const file of files) {
    it(`reads ${file} as the general reading does, whole and in chunks`, () => {
      const bytes = inflate(readFileSync(join(ROOT, file)));
      const general = read(bytes, false);
      expect(general.fast).toBe(0);
      expectSame(read(bytes, true), general);
      // Chunk ends cut entries at every offset in turn: the decoder gives way there.
      for (const chunk of [4093, 997]) expectSame(read(bytes, true, chunk), general);
    });
  }

  it('reads nearly every entry of a real recording from the bytes', () => {
    const bytes = inflate(readFileSync(join(ROOT, 'traces/h200-whatif/gpt_train--stacks.pickle')));
    const r = read(bytes, true);
    const events = (r.snapshot as { traces: { length: number }[] }).traces.reduce((n, t) => n + t.length, 0);
    // The first entries of each stack bring new frame dicts, which the general reading takes.
    expect(r.fast).toBeGreaterThan(0.6 * events);
  });

  it('loses no entry to a chunk end: a cut entry is read from the bytes once the next chunk comes', () => {
    const bytes = inflate(readFileSync(join(ROOT, 'traces/h200-whatif/gpt_train--stacks.pickle')));
    const whole = read(bytes, true);
    const general = read(bytes, false);
    for (const chunk of [65536, 4093]) {
      const r = read(bytes, true, chunk);
      expectSame(r, general);
      expect(r.fast).toBe(whole.fast);
    }
    // Chunks shorter than an entry: cut again in the head, the entry is read the general way.
    const short = read(bytes, true, 61);
    expectSame(short, general);
    expect(short.fast).toBeGreaterThan(0);
  });

  it('reads numbers at the edges of a double as the general reading does (LONG1 of 5 to 8 bytes, bigints)', () => {
    const edges = [
      2 ** 32,
      2 ** 40 - 1,
      2 ** 48,
      2 ** 53 - 1,
      2n ** 53n,
      2n ** 55n + 3n,
      2n ** 63n - 1n,
      -(2 ** 40),
    ];
    const entries: PickleValue[] = [];
    for (const x of edges) {
      const n = typeof x === 'bigint' ? x : BigInt(x);
      entries.push({ action: 'alloc', addr: 512, size: 512, stream: 0, time_us: n, frames: [] });
      entries.push({ action: 'free_completed', addr: x, size: 512, stream: 0, time_us: 1, frames: [] });
    }
    const bytes = pickle({ device_traces: [entries], segments: [] });
    const general = read(bytes, false);
    const fast = read(bytes, true);
    expectSame(fast, general);
    expect(fast.fast).toBeGreaterThan(0);
  });

  it('gives the general reading way on mutants of a snapshot', () => {
    const bytes = inflate(readFileSync(join(ROOT, 'traces/h200/phases_streams-native.pickle.gz')));
    const start = bytes.indexOf(Buffer.from('device_traces'));
    expect(start).toBeGreaterThan(0);
    // A fixed generator: the same mutants each run.
    let seed = 0x2545f491;
    const next = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return seed >>> 0;
    };
    let fastSomewhere = 0;
    let differ = 0;
    for (let k = 0; k < 300; k++) {
      const m = Buffer.from(bytes);
      const flips = 1 + (next() % 3);
      for (let f = 0; f < flips; f++) m[start + (next() % (m.length - start))] = next() & 0xff;
      const general = read(m, false);
      const fast = read(m, true);
      if (fast.fast > 0) fastSomewhere++;
      if (fast.error !== general.error || !isDeepStrictEqual(fast.snapshot, general.snapshot)) differ++;
      // In chunks too: a mutant cut by a chunk's end is read again in the head (Note [A dict cut by a chunk's end]).
      const chunked = read(m, true, 1021 + (k % 7) * 311);
      if (chunked.error !== general.error || !isDeepStrictEqual(chunked.snapshot, general.snapshot)) differ++;
    }
    expect(differ).toBe(0);
    expect(fastSomewhere).toBeGreaterThan(250);
  });
});
