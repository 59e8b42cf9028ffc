/**
 * Snapshots from other people's jobs (fixtures/wild, cited in SOURCES.json):
 * each one loads, every way of reading it gives the same snapshot, and what
 * the reader finds matches what CPython's pickle finds (facts.json, written
 * by facts.py).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  loadSnapshotFile,
  readPickle,
  readSnapshotBytes,
  readSnapshotFile,
} from '../../src/replay/read/load.js';
import { type PickleValue, pickle } from '../../src/replay/read/pickle/index.js';
import { ACTIONS, Action, type MemorySnapshot, parseSnapshot } from '../../src/replay/read/snapshot.js';
import { pythonMissing } from './python.js';
import { asText } from './snapshot-mutants.js';

const WILD = fileURLToPath(new URL('./fixtures/wild/', import.meta.url));

interface Source {
  readonly file: string;
  readonly repository: string;
  readonly commit: string;
  readonly path: string;
  readonly license: string | null;
  readonly sha256: string;
  readonly upstreamSha256: string;
  readonly shows: string;
}

const SOURCES: readonly Source[] = JSON.parse(readFileSync(join(WILD, 'SOURCES.json'), 'utf8')).fixtures;
const FACTS: Record<string, unknown> = JSON.parse(readFileSync(join(WILD, 'facts.json'), 'utf8'));

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** What facts.py counts, counted from a MemorySnapshot. */
function factsOf(s: MemorySnapshot): unknown {
  const GROW: number[] = [Action.segment_alloc, Action.segment_map];
  const SHRINK: number[] = [Action.segment_free, Action.segment_unmap];
  const blocks = s.segments.flatMap((g) => g.blocks);
  return {
    form: s.form,
    devices: s.traces.map((t) => {
      const actions = new Map<string, number>();
      let reserved = 0;
      let peak = 0;
      let withoutTime = 0;
      const ooms: unknown[] = [];
      for (let i = 0; i < t.length; i++) {
        const a = t.action[i];
        actions.set(ACTIONS[a], (actions.get(ACTIONS[a]) ?? 0) + 1);
        if (GROW.includes(a)) peak = Math.max(peak, (reserved += t.size[i]));
        else if (SHRINK.includes(a)) reserved -= t.size[i];
        if (Number.isNaN(t.timeUs[i])) withoutTime++;
        if (a === Action.oom) ooms.push({ event: i, size: t.size[i], deviceFree: t.addr[i] });
      }
      return {
        events: t.length,
        actions: Object.fromEntries([...actions].sort(([a], [b]) => (a < b ? -1 : 1))),
        segmentPeak: peak,
        segmentNet: reserved,
        withoutTime,
        ooms,
      };
    }),
    segments: s.segments.length,
    segmentDevices: [...new Set(s.segments.map((g) => g.device))].sort((a, b) => a - b),
    segmentBytes: s.segments.reduce((n, g) => n + g.totalSize, 0),
    blocks: blocks.length,
    activeBytes: blocks.filter((b) => b.state === 'active_allocated').reduce((n, b) => n + b.size, 0),
    frames: s.frames.length,
    stacks: s.stacks.length,
    bigLines: [
      ...new Set(s.frames.filter((f) => typeof f.line === 'bigint').map((f) => String(f.line))),
    ].sort(),
    externalAnnotations: s.externalAnnotations,
    allocConf:
      s.allocatorSettings === undefined ? null : (s.allocatorSettings.PYTORCH_CUDA_ALLOC_CONF ?? null),
  };
}

describe('snapshots from the wild', () => {
  it('every fixture is cited, and its bytes are the ones cited', () => {
    const files = readdirSync(WILD).filter((f) => f.endsWith('.pickle.gz'));
    expect(SOURCES.map((s) => s.file).sort()).toEqual(files.sort());
    expect(Object.keys(FACTS).sort()).toEqual(files.sort());
    for (const s of SOURCES) {
      expect(s.repository, s.file).toMatch(/^[\w.-]+\/[\w.-]+$/);
      expect(s.commit, s.file).toMatch(/^[0-9a-f]{40}$/);
      expect(s.path, s.file).not.toBe('');
      const bytes = readFileSync(join(WILD, s.file));
      expect(sha256(bytes), s.file).toBe(s.sha256);
      expect(sha256(gunzipSync(bytes)), s.file).toBe(s.upstreamSha256);
    }
  });

  for (const { file } of SOURCES) {
    it(`${file}: loads, the same every way it is read, with the facts CPython finds`, async () => {
      const path = join(WILD, file);
      const bytes = readFileSync(path);
      const streamed = readSnapshotFile(path);
      expect(factsOf(streamed)).toEqual(FACTS[file]);
      const expected = asText(streamed);
      expect(asText(await loadSnapshotFile(path))).toBe(expected);
      expect(asText(readSnapshotBytes(bytes))).toBe(expected);
      expect(asText(parseSnapshot(readPickle(bytes)))).toBe(expected);
    });
  }

  it('a frame line of 2^64 - 1 is kept exactly, as a bigint', () => {
    const s = readSnapshotFile(join(WILD, 'cs336-ctx128-forward.pickle.gz'));
    const big = s.frames.filter((f) => typeof f.line === 'bigint');
    expect(big.map((f) => [f.name, f.line])).toEqual([['init_gpu_context', 2n ** 64n - 1n]]);
    // Every other line is a plain number.
    expect(s.frames.filter((f) => typeof f.line === 'number').length).toBe(s.frames.length - 1);
  });

  it("torch.cuda.memory_snapshot()'s list reads as segments with no trace", () => {
    const s = readSnapshotFile(join(WILD, 'layoutediting-segment-list.pickle.gz'));
    expect([s.form, s.traces.length, s.segments.length, s.allocatorSettings]).toEqual([
      'segment-list',
      0,
      255,
      undefined,
    ]);
    // The segments' own stacks are read: a block's frames name the program's line.
    const top = s.segments.flatMap((g) => g.blocks).find((b) => b.stack >= 0);
    expect(top && s.frames[s.stacks[top.stack][0]]).toMatchObject({ name: '__call__', line: 1262 });
  });

  it('an oom entry keeps device_free as its addr; empty device slots stay in their place', () => {
    const s = readSnapshotFile(join(WILD, 'code-location-4dev-oom.pickle.gz'));
    expect(s.traces.map((t) => [t.device, t.length])).toEqual([
      [0, 6445],
      [1, 596],
      [2, 882],
      [3, 0],
    ]);
    const d1 = s.traces[1];
    expect([d1.action[421], d1.addr[421], d1.size[421]]).toEqual([Action.oom, 95_682_560, 5_308_694_528]);
  });

  it('traces without time_us read with NaN times, every entry of every device', () => {
    const s = readSnapshotFile(join(WILD, 'memsnapdump-multi-devices.pickle.gz'));
    expect(s.traces.map((t) => t.length)).toEqual([8132, 9700, 0, 0, 0, 0, 0, 0]);
    expect(s.traces.every((t) => t.timeUs.every(Number.isNaN))).toBe(true);
    expect(s.allocatorSettings).toBeUndefined();
  });

  it('what no allocator reads is not refused; what one reads still is, by both readers alike', () => {
    const entry = (over: Record<string, PickleValue>): PickleValue => ({
      action: 'alloc',
      addr: 4096,
      size: 512,
      stream: 0,
      time_us: 1_700_000_000_000_000,
      frames: [{ filename: 'train.py', name: 'step', line: 2n ** 64n - 1n }],
      compile_context: 'N/A',
      user_metadata: { step: 3 },
      ...over,
    });
    const both = (value: PickleValue) => {
      const bytes = pickle(value);
      const read = [() => readSnapshotBytes(bytes), () => parseSnapshot(readPickle(bytes))].map((f) => {
        try {
          return asText(f());
        } catch (e) {
          return `${(e as Error).name}: ${(e as Error).message}`;
        }
      });
      expect(read[1]).toBe(read[0]);
      return read[0];
    };
    const times = (value: PickleValue) => {
      both(value);
      return [...readSnapshotBytes(pickle(value)).traces[0].timeUs];
    };
    // A time beyond 2^53 or not whole dates nothing: dropped (NaN) or kept, never refused.
    expect(times({ device_traces: [[entry({ time_us: 2n ** 64n - 1n }), entry({ time_us: 1.5 })]] })).toEqual(
      [Number.NaN, 1.5],
    );
    expect(both({ device_traces: [[entry({})], []], external_annotations: [{ stage: 'START' }] })).toContain(
      '"line":"18446744073709551615n"',
    );
    // Addresses, sizes and streams are what allocators read: beyond 2^53 they are refused.
    for (const key of ['addr', 'size', 'stream']) {
      expect(both({ device_traces: [[entry({ [key]: 2n ** 64n - 1n })]] }), key).toMatch(
        new RegExp(
          `SnapshotError: .*device_traces\\[0\\]\\[0\\]\\.${key} is the integer 18446744073709551615 \\(beyond 2\\^53\\)`,
        ),
      );
    }
  });

  it('the old form: an empty list is an empty snapshot; a list of anything but dicts is refused', () => {
    expect(readSnapshotBytes(pickle([]))).toMatchObject({ form: 'segment-list', traces: [], segments: [] });
    expect(() => readSnapshotBytes(pickle([{ device: 0, address: 0, total_size: 1 }, 7]))).toThrow(
      'not a memory snapshot: the pickle holds a list of 2, not a dict (nor a list of segment dicts)',
    );
    expect(() => parseSnapshot(readPickle(pickle([{ device: 0 }])))).toThrow(
      'segments[0].address is missing',
    );
  });

  it.skipIf(pythonMissing() !== undefined)('facts.json is what facts.py writes now', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-wild-facts-'));
    try {
      execFileSync('python3', [join(WILD, 'facts.py'), join(dir, 'facts.json')]);
      expect(JSON.parse(readFileSync(join(dir, 'facts.json'), 'utf8'))).toEqual(FACTS);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
