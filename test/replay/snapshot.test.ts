import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SnapshotError } from '../../src/replay/errors.js';
import { readPickle, readSnapshotFile } from '../../src/replay/read/load.js';
import { PickleError, PickleTuple, type PickleValue, pickle } from '../../src/replay/read/pickle/index.js';
import { Action, annotationOf, parseSnapshot } from '../../src/replay/read/snapshot.js';
import { fixture, readFixture } from './helpers.js';

function fails(v: PickleValue): string {
  try {
    parseSnapshot(v);
  } catch (e) {
    expect(e).toBeInstanceOf(SnapshotError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

const event = (over: Record<string, PickleValue> = {}): Record<string, PickleValue> => ({
  action: 'alloc',
  addr: 0x7f00_0000_0000,
  size: 512,
  stream: 0,
  time_us: 1_733_000_000_000_000,
  frames: [],
  ...over,
});

describe('snapshot model', () => {
  it('reads a fixture python3 wrote into typed arrays per device', () => {
    const s = readFixture('hand.pickle');
    expect(s.traces).toHaveLength(1);
    const t = s.traces[0];
    expect(t.length).toBe(9);
    expect([...t.action]).toEqual([
      Action.segment_alloc,
      Action.alloc,
      Action.alloc,
      Action.free_requested,
      Action.free_completed,
      Action.alloc,
      Action.snapshot,
      Action.free_completed,
      Action.free_completed,
    ]);
    expect(t.addr[2]).toBe(0x7f00_0000_0000 + 1024);
    expect(t.size[2]).toBe(3000);
    expect(t.stream[5]).toBe(7);
    expect(t.timeUs[8] - t.timeUs[0]).toBe(80);
    expect(s.allocatorSettings).toEqual({ PYTORCH_CUDA_ALLOC_CONF: null });
  });

  it('reads segments and blocks, computing block addresses when a snapshot omits them', () => {
    const s = readFixture('midrun.pickle.gz');
    expect(s.segments[0].blocks.map((b) => b.state)).toEqual(['inactive', 'active_allocated', 'inactive']);
    const noAddresses = parseSnapshot({
      device_traces: [[]],
      segments: [
        {
          device: 0,
          address: 4096,
          total_size: 3072,
          stream: 0,
          segment_pool_id: new PickleTuple([0, 0]),
          blocks: [
            { size: 1024, state: 'inactive' },
            { size: 2048, requested_size: 2000, state: 'active_allocated' },
          ],
        },
      ],
    });
    expect(noAddresses.segments[0].blocks.map((b) => [b.address, b.requestedSize])).toEqual([
      [4096, 1024],
      [5120, 2000],
    ]);
  });

  it("an oom event's device_free is its addr; time_us and stream may be absent", () => {
    const s = readFixture('recorded-oom.pickle');
    expect(s.traces[0].action[1]).toBe(Action.oom);
    expect(s.traces[0].addr[1]).toBe(1024 * 1024);
    const old = parseSnapshot({ device_traces: [[{ action: 'alloc', addr: 4096, size: 512 }]] });
    expect(old.traces[0].stream[0]).toBe(0);
    expect(Number.isNaN(old.traces[0].timeUs[0])).toBe(true);
  });

  it('names what is wrong: not a dict, no device_traces, unknown action, fields of the wrong type', () => {
    expect(fails([1, 2])).toContain('holds a list of 2, not a dict');
    expect(fails({ segments: [] })).toContain("no 'device_traces'");
    expect(fails({ device_traces: {} })).toContain("'device_traces' is a dict, expected a list");
    expect(fails({ device_traces: [[event(), event({ action: 'teleport' })]] })).toContain(
      "device_traces[0][1] has unknown action 'teleport'",
    );
    expect(fails({ device_traces: [[event({ action: 3 })]] })).toContain('.action is the integer 3');
    expect(fails({ device_traces: [[event({ size: '512' })]] })).toContain(
      "device_traces[0][0].size is a string ('512'), expected a non-negative integer",
    );
    expect(fails({ device_traces: [[event({ size: -1 })]] })).toContain('.size is the integer -1');
    expect(fails({ device_traces: [[event({ addr: 2n ** 64n })]] })).toContain('beyond 2^53');
    expect(fails({ device_traces: [[event({ stream: 1.5 })]] })).toContain('.stream is the float 1.5');
    expect(fails({ device_traces: [[event({ addr: undefined as unknown as PickleValue })]] })).toContain(
      '.addr is missing',
    );
    expect(fails({ device_traces: [[7]] })).toContain(
      'device_traces[0][0] is the integer 7, expected a dict',
    );
    expect(fails({ device_traces: [], segments: [{ device: 0 }] })).toContain(
      'segments[0].address is missing',
    );
    expect(fails({ device_traces: [], allocator_settings: [] })).toContain("'allocator_settings' is a list");
    expect(
      fails({
        device_traces: [],
        segments: [{ device: 0, address: 0, total_size: 1, blocks: [{ size: 1, state: 'zombie' }] }],
      }),
    ).toContain('blocks[0].state');
  });

  it('files: missing, truncated, corrupt gzip and GLOBAL-using pickles are typed errors with one-line messages', () => {
    const cases: [string, new (...a: never[]) => Error, RegExp][] = [
      ['does-not-exist.pickle', SnapshotError, /cannot read .*does-not-exist.pickle: no such file/],
      ['truncated.pickle', PickleError, /truncated/],
      ['corrupt.pickle.gz', SnapshotError, /gzip data does not inflate/],
      ['has-global.pickle', PickleError, /unsupported pickle opcode .* at offset \d+/],
      ['not-a-dict.pickle', SnapshotError, /not a dict/],
    ];
    for (const [name, type, message] of cases) {
      let caught: unknown;
      try {
        readSnapshotFile(fixture(name));
      } catch (e) {
        caught = e;
      }
      expect(caught, name).toBeInstanceOf(type);
      expect((caught as Error).message, name).toMatch(message);
      expect((caught as Error).message, name).not.toContain('\n');
    }
  });

  it('the writer can save a parsed snapshot back and the reader gives the same trace', () => {
    const value = readPickle(pickle(readPickle(readFileSync(fixture('hand.pickle')))));
    expect(parseSnapshot(value).traces[0]).toEqual(readFixture('hand.pickle').traces[0]);
  });
});

describe('external_annotations', () => {
  it('keeps the markers (START or END, a name, a device, a time) and leaves out what is not one', () => {
    expect(
      annotationOf({ stage: 'START', name: 'Optimizer.step#AdamW.step', device: 0, time_us: 12 }),
    ).toEqual({
      stage: 'START',
      name: 'Optimizer.step#AdamW.step',
      device: 0,
      timeUs: 12,
    });
    for (const bad of [
      { stage: 'BEGIN', name: 'x', device: 0, time_us: 1 },
      { stage: 'END', device: 0, time_us: 1 },
      { stage: 'END', name: 'x', device: '0', time_us: 1 },
      { stage: 'END', name: 'x', device: 0 },
      [],
      null,
    ])
      expect(annotationOf(bad)).toBeUndefined();
  });

  it('the streaming reader keeps them, as many as the file holds (torch.optim marks each step)', () => {
    const s = readSnapshotFile(
      new URL('../../traces/h200-whatif/gpt_train--reference.pickle.gz', import.meta.url).pathname,
    );
    expect(s.externalAnnotations).toBeGreaterThan(0);
    expect(s.annotations?.length).toBe(s.externalAnnotations);
    expect(s.annotations?.some((a) => a.name.startsWith('Optimizer.step#'))).toBe(true);
  });
});
