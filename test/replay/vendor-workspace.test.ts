/**
 * torch_npu's workspace allocator in a snapshot (Note [Workspace entries],
 * docs/npu-allocator.md NPU14): a committed torch_npu recording with the
 * entries torch_npu's Module.cpp puts in when its workspace allocator holds
 * blocks (a workspace_snapshot, a segment_alloc and an alloc per block at
 * the head of the device's trace, and the block's segment) reads, through
 * both readers, as the recording without them, counted; the vendor is told
 * by them; and the recording still reproduces.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readPickle, readSnapshotBytes } from '../../src/replay/read/load.js';
import { type PickleDict, pickle } from '../../src/replay/read/pickle/index.js';
import { parseSnapshot } from '../../src/replay/read/snapshot.js';
import { detectVendor } from '../../src/replay/read/vendor.js';
import { reproduceRecording } from '../support/replay.js';

const FILE = new URL('fixtures/wild/memsnapdump-expandable.pickle.gz', import.meta.url);
const MiB = 1024 ** 2;

/** The fixture's dict with two workspace blocks on device 0, as torch_npu would dump them. */
function withWorkspace(): { bytes: Buffer; original: Buffer } {
  const original = readFileSync(FILE);
  const value = readPickle(original) as PickleDict;
  const traces = value.device_traces as PickleDict[][];
  const stream = traces[0][0].stream;
  const frames = [{ filename: 'op_plugin/ops/matmul.py', name: 'matmul', line: 10 }];
  const blocks = [
    { addr: 0x12c0_0000_0000, size: 8 * MiB },
    { addr: 0x12c0_0200_0000, size: 2 * MiB },
  ];
  const head = blocks.flatMap(({ addr, size }) =>
    ['workspace_snapshot', 'segment_alloc', 'alloc'].map((action) => ({
      action,
      addr,
      size,
      stream,
      frames,
    })),
  );
  traces[0] = [...head, ...traces[0]];
  const segments = value.segments as PickleDict[];
  for (const { addr, size } of blocks)
    segments.push({
      device: 0,
      address: addr,
      total_size: size,
      allocated_size: size,
      active_size: size,
      requested_size: size,
      stream,
      segment_pool_id: segments[0].segment_pool_id,
      segment_type: 'large',
      is_expandable: false,
      frames,
      blocks: [{ address: addr, size, requested_size: size, state: 'active_allocated', frames }],
    });
  return { bytes: pickle(value), original };
}

describe("torch_npu's workspace entries", () => {
  const { bytes, original } = withWorkspace();
  const plain = readSnapshotBytes(original);

  it('are left out by both readers, and counted', () => {
    for (const s of [readSnapshotBytes(bytes), parseSnapshot(readPickle(bytes))]) {
      expect(s.workspace).toEqual({ blocks: 2, bytes: 10 * MiB });
      expect(s.traces.map((t) => t.length)).toEqual(plain.traces.map((t) => t.length));
      expect(Array.from(s.traces[0].action)).toEqual(Array.from(plain.traces[0].action));
      expect(Array.from(s.traces[0].addr)).toEqual(Array.from(plain.traces[0].addr));
      expect(s.segments.map((g) => g.address)).toEqual(plain.segments.map((g) => g.address));
    }
    expect(plain.workspace).toBeUndefined();
  });

  it('tell the vendor, and the recording still reproduces', () => {
    const s = readSnapshotBytes(bytes);
    expect(detectVendor(s)).toMatchObject({ vendor: 'npu', basis: 'workspace' });
    const ar = reproduceRecording(s, { plan: planReplay(s) });
    expect(ar.reproduced).toBe(true);
    expect(ar.devices[0].recordedPeakBytes).toBe(614 * MiB);
  });
});
