/**
 * The streaming snapshot reader (snapshot-reader.ts) against the plain one
 * (unpickle, then parseSnapshot): the same MemorySnapshot, the same errors,
 * however the bytes are cut into chunks.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { SnapshotError } from '../../src/replay/errors.js';
import { loadSnapshotFile, readPickle, readSnapshotFile } from '../../src/replay/read/load.js';
import {
  Op,
  PickleError,
  PickleReader,
  PickleStreamWriter,
  PickleTuple,
  type PickleValue,
  pickle,
  unpickle,
} from '../../src/replay/read/pickle/index.js';
import { Action, type MemorySnapshot, parseSnapshot } from '../../src/replay/read/snapshot.js';
import { readSnapshot, SnapshotReader } from '../../src/replay/read/snapshot-reader.js';
import { type BigSnapshotInfo, writeBigSnapshot } from '../support/big-snapshot.js';
import { fixture } from './helpers.js';
import { python, pythonMissing } from './python.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'vmmkit-stream-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The plain reading: the whole pickle unpickled into values, then checked. */
function plain(bytes: Uint8Array): MemorySnapshot {
  return parseSnapshot(readPickle(bytes));
}

/** The streaming reading, fed `size` bytes at a time (sizes cycle when several). */
function chunked(bytes: Uint8Array, ...sizes: number[]): MemorySnapshot {
  const r = new SnapshotReader();
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const n = sizes[k % sizes.length];
    if (r.write(bytes.subarray(at, at + n))) break;
    at += n;
  }
  return r.end();
}

/** toEqual, with the trace columns compared as bytes (toEqual walks a typed array element by element). */
function expectSame(got: MemorySnapshot, expected: MemorySnapshot, what?: string): void {
  const bytes = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const columns = ['action', 'addr', 'size', 'stream', 'timeUs', 'stack'] as const;
  expect(got.traces.length, what).toBe(expected.traces.length);
  got.traces.forEach((t, d) => {
    const e = expected.traces[d];
    expect([t.device, t.length], what).toEqual([e.device, e.length]);
    for (const c of columns) expect(bytes(t[c]).equals(bytes(e[c])), `${what} ${c}`).toBe(true);
  });
  const rest = (s: MemorySnapshot) => ({ ...s, traces: [], stacks: s.stacks.map((x) => [...x]) });
  expect(rest(got), what).toEqual(rest(expected));
}

function outcome(f: () => unknown): unknown {
  try {
    return { value: f() };
  } catch (e) {
    if (e instanceof SnapshotError || e instanceof PickleError)
      return { error: e.name, kind: e.kind, message: e.message };
    throw e;
  }
}

const frame = (name: string, line: number, filename = 'train.py') => ({ filename, name, line });

/** A small snapshot with stacks shaped as PyTorch writes them (shared frame dicts, shared and equal lists). */
function withStacks(): Record<string, PickleValue> {
  const f = [frame('step', 12), frame('forward', 40, 'model.py'), frame('linear', 116, 'torch/nn/linear.py')];
  const blockList = [f[2], f[1], f[0]];
  const entry = (action: string, addr: number, size: number, frames?: PickleValue[], t = 0) => ({
    action,
    addr,
    size,
    stream: 0,
    time_us: 1_733_000_000_000_000 + t,
    compile_context: 'N/A',
    user_metadata: '',
    ...(frames === undefined ? {} : { frames }),
  });
  const freeList = [f[1], f[0]];
  return {
    segments: [
      {
        device: 0,
        address: 0x7f00_0000_0000,
        total_size: 2 << 20,
        stream: 0,
        segment_type: 'small',
        segment_pool_id: new PickleTuple([0, 0]),
        is_expandable: false,
        blocks: [
          {
            address: 0x7f00_0000_0000,
            size: 1024,
            requested_size: 1000,
            state: 'active_allocated',
            frames: blockList,
          },
          {
            address: 0x7f00_0000_0400,
            size: (2 << 20) - 1024,
            requested_size: 0,
            state: 'inactive',
            frames: [],
          },
        ],
        frames: [f[0]],
      },
    ],
    device_traces: [
      [
        entry('segment_alloc', 0x7f00_0000_0000, 2 << 20, blockList, 0),
        entry('alloc', 0x7f00_0000_0000, 1000, blockList, 1),
        entry('alloc', 0x7f00_0000_0400, 500, [f[2], f[1], f[0]], 2), // equal to blockList, another list
        entry('free_requested', 0x7f00_0000_0400, 500, freeList, 3),
        entry('free_completed', 0x7f00_0000_0400, 500, freeList, 4), // the same list
        entry('snapshot', 0, 0, undefined, 5),
        {
          action: 'oom',
          device_free: 4096,
          size: 1 << 30,
          stream: 0,
          time_us: 1_733_000_000_000_006,
          frames: [f[0]],
        },
      ],
    ],
    allocator_settings: {
      PYTORCH_CUDA_ALLOC_CONF: '',
      trace_alloc_max_entries: 100_000,
      trace_alloc_overflowed: true,
    },
    external_annotations: [
      { stage: 'START', name: 'fwd', device: 0, time_us: 1 },
      { stage: 'END', name: 'fwd', device: 0, time_us: 2 },
    ],
  };
}

describe('streaming snapshot reader: the same snapshot as unpickle + parseSnapshot', () => {
  const files = [
    ...readdirSync(`${root}traces/h200`)
      .filter((f) => f.endsWith('.pickle.gz'))
      .map((f) => `${root}traces/h200/${f}`),
    `${root}traces/h200-whatif/gpt_train--stacks.pickle`,
  ];

  it.each(files.map((f) => [f.slice(root.length), f]))('%s', async (_, file) => {
    const bytes = readFileSync(file);
    const expected = plain(bytes);
    expectSame(readSnapshotFile(file), expected, 'readSnapshotFile');
    expectSame(await loadSnapshotFile(file), expected, 'loadSnapshotFile');
  });

  it('every fixture: the same snapshot, or the same error', async () => {
    for (const name of readdirSync(fixture('')).filter((f) => f.includes('.pickle'))) {
      const bytes = readFileSync(fixture(name));
      const expected = outcome(() => plain(bytes));
      expect(
        outcome(() => readSnapshotFile(fixture(name))),
        name,
      ).toEqual(expected);
      let got: unknown;
      try {
        got = { value: await loadSnapshotFile(fixture(name)) };
      } catch (e) {
        got = outcome(() => {
          throw e;
        });
      }
      expect(got, name).toEqual(expected);
    }
  });

  it('a recorded snapshot with stacks: every entry has one, a live block has its alloc’s', () => {
    const s = readSnapshotFile(`${root}traces/h200-whatif/gpt_train--stacks.pickle`);
    const t = s.traces[0];
    expect(t.stack.every((x) => x >= 0 && x < s.stacks.length)).toBe(true);
    expect(s.frames.length).toBeGreaterThan(100);
    for (const seg of s.segments) {
      for (const b of seg.blocks.filter((x) => x.state === 'active_allocated' && x.stack >= 0)) {
        let last = -1;
        for (let i = 0; i < t.length; i++)
          if (t.action[i] === Action.alloc && t.addr[i] === b.address) last = i;
        expect(t.stack[last]).toBe(b.stack);
      }
    }
  });
});

describe('stacks, interned', () => {
  it('equal stacks share an index whether or not their lists are shared; frames and strings are kept once', () => {
    const s = readSnapshot(pickle(withStacks()));
    const t = s.traces[0];
    expect([...t.stack]).toEqual([0, 0, 0, 1, 1, -1, 2]);
    expect(s.stacks.map((x) => [...x])).toEqual([[0, 1, 2], [1, 2], [2]]);
    expect(s.frames).toEqual([
      frame('linear', 116, 'torch/nn/linear.py'),
      frame('forward', 40, 'model.py'),
      frame('step', 12),
    ]);
    expect(s.segments[0].blocks.map((b) => b.stack)).toEqual([0, -1]);
    expect(s.segments[0].stack).toBe(2);
    expect(s.segments[0].poolId).toEqual([0, 0]);
    expect(s.traceAllocMaxEntries).toBe(100_000);
    expect(s.traceAllocOverflowed).toBe(true);
    expect(s.externalAnnotations).toBe(2);
    expect(t.addr[6]).toBe(4096); // the oom's device_free
    expect(s).toEqual(parseSnapshot(withStacks()));
  });

  it("only an entry's, a segment's or a block's frames are read as a stack: elsewhere a list stays a list", () => {
    const value = {
      device_traces: [[{ action: 'alloc', addr: 1, size: 1, user_metadata: { frames: [frame('a', 1)] } }]],
      allocator_settings: { frames: [frame('b', 2)], nested: { frames: [] } },
      external_annotations: [{ name: 'x', frames: [frame('c', 3)] }],
    };
    const s = readSnapshot(pickle(value));
    expect(s.allocatorSettings).toEqual(value.allocator_settings);
    expect(s.frames).toEqual([]);
    expect(s).toEqual(parseSnapshot(value));
  });

  it('protocols 2 to 5, from the writer and from the stream writer (FRAME opcodes from 4)', () => {
    const expected = parseSnapshot(withStacks());
    for (const protocol of [2, 3, 4, 5]) {
      expect(readSnapshot(pickle(withStacks(), { protocol })), `protocol ${protocol}`).toEqual(expected);
      const parts: Buffer[] = [];
      const w = new PickleStreamWriter((b) => parts.push(Buffer.from(b)), { protocol });
      w.value(withStacks());
      w.stop();
      const bytes = Buffer.concat(parts);
      expect(bytes.includes(Buffer.from([Op.FRAME]))).toBe(protocol >= 4);
      expect(chunked(bytes, 1), `stream writer, protocol ${protocol}`).toEqual(expected);
    }
  });

  it.skipIf(pythonMissing() !== undefined)(
    "reads python3's pickle of a snapshot with shared frames, protocols 2 to 5",
    () => {
      const program = `
import pickle, sys
f = [{'filename': 'train.py', 'name': 'step', 'line': 12}, {'filename': 'model.py', 'name': 'forward', 'line': 40}]
shared = [f[1], f[0]]
e = lambda a, addr, fr: {'action': a, 'addr': addr, 'size': 512, 'stream': 0, 'time_us': 1733000000000000, 'compile_context': 'N/A', 'user_metadata': '', 'frames': fr}
s = {'segments': [{'device': 0, 'address': 4096, 'total_size': 2097152, 'stream': 0, 'segment_type': 'small', 'segment_pool_id': (0, 0), 'is_expandable': False, 'blocks': [{'address': 4096, 'size': 512, 'requested_size': 512, 'state': 'active_allocated', 'frames': shared}]}],
     'device_traces': [[e('alloc', 4096, shared)] + [e('alloc', 8192 + i * 512, [f[1], f[0]]) for i in range(1500)]],
     'allocator_settings': {}, 'external_annotations': []}
sys.stdout.buffer.write(pickle.dumps(s, protocol=int(sys.argv[1])))
`;
      for (const protocol of [2, 3, 4, 5]) {
        const bytes = python(program, undefined, [String(protocol)]);
        const s = chunked(bytes, 7, 13, 1);
        expect(s, `protocol ${protocol}`).toEqual(plain(bytes));
        expect(s.stacks).toHaveLength(1);
        expect(s.traces[0].stack.every((x) => x === 0)).toBe(true);
        expect(s.segments[0].blocks[0].stack).toBe(0);
      }
    },
  );
});

describe('chunks', () => {
  /** One pickle with every opcode the reader knows (the value is a list of what each made). */
  function everyOpcode(): { bytes: Uint8Array; value: PickleValue } {
    const b: number[] = [Op.PROTO, 5, Op.FRAME, 0, 0, 0, 0, 0, 0, 0, 0];
    const u32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24];
    const u64 = (n: number) => [...u32(n), 0, 0, 0, 0];
    const str = Buffer.from('héllo');
    const f = Buffer.alloc(8);
    f.writeDoubleBE(-2.5);
    b.push(Op.EMPTY_LIST, Op.MEMOIZE, Op.MARK);
    b.push(Op.SHORT_BINUNICODE, str.length, ...str, Op.BINPUT, 1);
    b.push(Op.BINUNICODE, ...u32(str.length), ...str, Op.LONG_BINPUT, ...u32(300));
    b.push(Op.BINUNICODE8, ...u64(str.length), ...str);
    b.push(Op.BINGET, 1, Op.LONG_BINGET, ...u32(300));
    b.push(Op.BININT1, 200, Op.BININT2, 0x34, 0x12, Op.BININT, 0xff, 0xff, 0xff, 0xff);
    b.push(Op.LONG1, 2, 0xff, 0x00, Op.LONG4, ...u32(9), 1, 0, 0, 0, 0, 0, 0, 0, 1);
    b.push(Op.BINFLOAT, ...f, Op.NONE, Op.NEWTRUE, Op.NEWFALSE);
    b.push(
      Op.SHORT_BINBYTES,
      2,
      7,
      8,
      Op.BINBYTES,
      ...u32(1),
      9,
      Op.BINBYTES8,
      ...u64(1),
      10,
      Op.BYTEARRAY8,
      ...u64(2),
      11,
      12,
    );
    b.push(Op.EMPTY_TUPLE, Op.BININT1, 1, Op.TUPLE1, Op.BININT1, 1, Op.BININT1, 2, Op.TUPLE2);
    b.push(Op.BININT1, 1, Op.BININT1, 2, Op.BININT1, 3, Op.TUPLE3, Op.MARK, Op.BININT1, 4, Op.TUPLE);
    b.push(
      Op.EMPTY_DICT,
      Op.MARK,
      Op.BINGET,
      1,
      Op.BININT1,
      1,
      Op.SETITEMS,
      Op.BINGET,
      1,
      Op.NONE,
      Op.SETITEM,
    );
    b.push(Op.NONE, Op.POP, Op.MARK, Op.NONE, Op.POP_MARK, Op.BININT1, 5, Op.DUP);
    b.push(Op.APPENDS, Op.BININT1, 6, Op.APPEND, Op.STOP);
    const bytes = Uint8Array.from(b);
    return { bytes, value: unpickle(bytes) };
  }

  it('an opcode of every kind cut at every byte: 1-byte and odd-size chunks read as the whole', () => {
    const { bytes, value } = everyOpcode();
    expect(value).toEqual([
      'héllo',
      'héllo',
      'héllo',
      'héllo',
      'héllo',
      200,
      0x1234,
      -1,
      255,
      2n ** 64n + 1n,
      -2.5,
      null,
      true,
      false,
      Uint8Array.from([7, 8]),
      Uint8Array.from([9]),
      Uint8Array.from([10]),
      Uint8Array.from([11, 12]),
      new PickleTuple([]),
      new PickleTuple([1]),
      new PickleTuple([1, 2]),
      new PickleTuple([1, 2, 3]),
      new PickleTuple([4]),
      { héllo: null },
      5,
      5,
      6,
    ]);
    for (const sizes of [[1], [2], [3], [7], [5, 1, 2], [13, 4]]) {
      const r = new PickleReader();
      for (let at = 0, k = 0; at < bytes.length; k++) {
        const n = sizes[k % sizes.length];
        r.write(bytes.subarray(at, at + n));
        at += n;
      }
      expect(r.end(), `chunks of ${sizes}`).toEqual(value);
    }
  });

  it('a snapshot with stacks in 1-byte and odd-size chunks', () => {
    const bytes = pickle(withStacks());
    const expected = plain(bytes);
    for (const sizes of [[1], [3], [7, 2], [64]])
      expect(chunked(bytes, ...sizes), `${sizes}`).toEqual(expected);
    const real = readFileSync(`${root}traces/h200-whatif/gpt_train--stacks.pickle`);
    expectSame(chunked(real, 4093, 1, 17), plain(real));
  });

  it('an opcode longer than many chunks waits for all of them (a 200 kB string)', () => {
    const big = 'x'.repeat(200_000);
    const bytes = pickle({ device_traces: [], allocator_settings: { note: big } });
    expect(chunked(bytes, 1000).allocatorSettings?.note).toBe(big);
  });
});

describe('bad input: the same errors as the plain reading', () => {
  it('truncated anywhere: the same PickleError, in one chunk or many', () => {
    const bytes = pickle(withStacks());
    for (let cut = 0; cut < bytes.length; cut += 7) {
      const part = bytes.subarray(0, cut);
      const expected = outcome(() => plain(part));
      expect(
        outcome(() => readSnapshot(part)),
        `cut at ${cut}`,
      ).toEqual(expected);
      expect(
        outcome(() => chunked(part, 5)),
        `cut at ${cut}, chunks`,
      ).toEqual(expected);
    }
  });

  it('the checks of snapshot.ts, with their messages, whatever the order of the bad parts', () => {
    const cases: Record<string, PickleValue>[] = [
      { device_traces: [[{ action: 'teleport', addr: 1, size: 1 }]], segments: 7 },
      { device_traces: [[{ action: 'alloc', addr: 1, size: '1' }], [7]] },
      { device_traces: [[{ action: 'alloc', addr: 1, size: 1 }, 7, { action: 'x' }]] },
      { device_traces: [[{ action: 'alloc', addr: 1, size: 1, frames: 'nope' }]] },
      {
        device_traces: [
          [{ action: 'alloc', addr: 1, size: 1, frames: [{ filename: 'a', name: 'b', line: 'c' }] }],
        ],
      },
      { device_traces: [[{ action: 'alloc', addr: 1, size: 1, frames: [7] }]] },
      { device_traces: [], segments: [{ device: 0, address: 0, total_size: 1, segment_pool_id: 3 }] },
      { device_traces: [], allocator_settings: { trace_alloc_overflowed: 1 } },
      { device_traces: {} },
      { segments: [] },
    ];
    for (const value of cases) {
      const bytes = pickle(value);
      const expected = outcome(() => plain(bytes));
      expect(expected).toHaveProperty('error', 'SnapshotError');
      expect(
        outcome(() => chunked(bytes, 3)),
        JSON.stringify(value),
      ).toEqual(expected);
    }
  });

  it('files: missing, a directory, corrupt or cut gzip, truncated, GLOBAL, not a dict (sync and streaming)', async () => {
    const cut = join(scratch, 'cut.pickle.gz');
    writeFileSync(cut, gzipSync(pickle(withStacks())).subarray(0, 40));
    const dir = join(scratch, 'a-directory');
    mkdirSync(dir, { recursive: true });
    const cases: [string, string, RegExp][] = [
      [fixture('does-not-exist.pickle'), 'unreadable', /no such file/],
      [dir, 'unreadable', /it is a directory/],
      [fixture('corrupt.pickle.gz'), 'corrupt-gzip', /gzip data does not inflate/],
      [cut, 'corrupt-gzip', /gzip data does not inflate/],
      [fixture('truncated.pickle'), 'truncated', /truncated/],
      [fixture('has-global.pickle'), 'unsupported-opcode', /GLOBAL/],
      [fixture('not-a-dict.pickle'), 'not-a-snapshot', /not a dict/],
    ];
    for (const [file, kind, message] of cases) {
      for (const read of [() => readSnapshotFile(file), () => loadSnapshotFile(file)]) {
        let caught: unknown;
        try {
          await read();
        } catch (e) {
          caught = e;
        }
        expect((caught as SnapshotError).kind, file).toBe(kind);
        expect((caught as Error).message, file).toMatch(message);
      }
    }
  });

  it('a trace entry fetched again from the memo is refused (the reader does not keep entries)', () => {
    const bytes = Uint8Array.from([
      Op.PROTO,
      4,
      Op.EMPTY_DICT,
      Op.MEMOIZE,
      Op.MARK,
      Op.SHORT_BINUNICODE,
      13,
      ...Buffer.from('device_traces'),
      Op.MEMOIZE,
      Op.EMPTY_LIST,
      Op.MEMOIZE,
      Op.EMPTY_LIST,
      Op.MEMOIZE,
      Op.EMPTY_DICT,
      Op.MEMOIZE,
      Op.APPEND,
      Op.BINGET,
      4,
      Op.APPEND,
      Op.APPEND,
      Op.SETITEMS,
      Op.STOP,
    ]);
    expect(outcome(() => readSnapshot(bytes))).toMatchObject({
      kind: 'malformed',
      message: /memo entry 4 .* streamed/,
    });
  });

  it('a dict a hand-made pickle makes among a trace’s entries but puts elsewhere is refused, not lost', () => {
    const key = (s: string) => [Op.SHORT_BINUNICODE, s.length, ...Buffer.from(s)];
    const bytes = Uint8Array.from([
      ...[Op.PROTO, 4, Op.EMPTY_DICT, Op.MARK, ...key('x'), Op.EMPTY_LIST, Op.BINPUT, 9],
      ...[...key('device_traces'), Op.EMPTY_LIST, Op.EMPTY_LIST, Op.MARK, Op.BINGET, 9, Op.EMPTY_DICT],
      ...[...key('action'), ...key('alloc'), Op.SETITEM, Op.APPEND, Op.POP, Op.APPENDS, Op.APPEND],
      ...[Op.SETITEMS, Op.STOP],
    ]);
    expect(plain(bytes).traces[0].length).toBe(0);
    expect(outcome(() => readSnapshot(bytes))).toMatchObject({
      kind: 'malformed',
      message: /1 of the entries made for device_traces\[0\] are not in its list/,
    });
  });
});

describe('a generated 20 MiB snapshot with stacks (test/support/big-snapshot.ts)', () => {
  const out = join(scratch, 'big.pickle');
  const source = `${root}traces/h200-whatif/gpt_train--stacks.pickle`;
  let info: BigSnapshotInfo;
  beforeAll(() => {
    info = writeBigSnapshot({ source, bytes: 20 * 1024 * 1024, out });
  });

  it('is consistent: every repetition balanced, segments where the last one left them', () => {
    expect(Math.abs(statSync(out).size - 20 * 1024 * 1024)).toBeLessThan(1024 * 1024);
    const s = readSnapshotFile(out);
    const src = readSnapshotFile(source);
    expect(s.traces[0].length).toBe(info.events);
    expect(s.frames).toEqual(src.frames);
    const counts = planReplay(s).devices[0].counts;
    const srcPlan = planReplay(src).devices[0];
    expect(counts).toMatchObject({ unmatchedFrees: 0, duplicateAllocs: 0, inconsistentBlocks: 0 });
    expect(counts.allocs).toBe(srcPlan.counts.allocs * info.repetitions);
    expect(planReplay(s).devices[0].peakRequestedBytes).toBe(srcPlan.peakRequestedBytes);
    expect(s.externalAnnotations).toBe(src.externalAnnotations * info.repetitions);
  });

  it('parses in bounded memory: what it holds stays a fraction of the unpickled values', async () => {
    // What is still reachable, sampled after each chunk: a full collection first (the flag makes gc() reachable).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const held = () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const base = held();
    let peak = 0;
    const s = await loadSnapshotFile(out, { onProgress: () => (peak = Math.max(peak, held() - base)) });
    peak = Math.max(peak, held() - base);
    expect(s.traces[0].length).toBeGreaterThan(100_000);
    const bytes = readFileSync(out);
    const before = held();
    const values = readPickle(bytes);
    const unpickled = held() - before;
    expect(values).toHaveProperty('device_traces');
    // Typed-array rows (about 40 bytes an event) and the compact memo, against a dict per event.
    expect(peak).toBeLessThan(unpickled / 4);
  });
});
