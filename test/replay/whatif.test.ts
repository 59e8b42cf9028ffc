/**
 * What-if replay: another PYTORCH_CUDA_ALLOC_CONF (allocConf), a memory cap
 * (memoryLimit), the first OOM of each run, and a trace's own recorded OOM
 * replayed as a request (Note [Recorded OOMs]), through the API; the CLI's
 * side is test/cli/what-if.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AllocConfError } from '../../src/alloc/pytorch/alloc-conf.js';
import { selectAllocators } from '../../src/replay/engine/allocators.js';
import { ReplayError } from '../../src/replay/engine/replay.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import { replay } from '../support/replay.js';
import { snapshotOf } from './helpers.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const trace = (name: string) => new URL(`../../traces/h200/${name}`, import.meta.url).pathname;

describe('allocConf', () => {
  const snapshot = readSnapshotFile(trace('phases_streams-native.pickle.gz'));

  it("'pytorch' is PyTorch as the string configures it: expandable or not", () => {
    const r = replay(snapshot, {
      allocators: selectAllocators(['pytorch', 'pytorch-expandable']),
      allocConf: 'expandable_segments:True',
    });
    const [pytorch, expandable] = r.allocators;
    expect(pytorch.error).toBeUndefined();
    expect(pytorch.peakReservedBytes).toBe(expandable.peakReservedBytes);
    expect(pytorch.driverCalls).toEqual(expandable.driverCalls);
    expect(r.settings.expandableSegments).toBe(true);
    const native = replay(snapshot, { allocators: selectAllocators(['pytorch', 'pytorch-native']) });
    // Without a string, the recorded settings: this trace was recorded without expandable segments.
    expect(native.allocators[0].peakReservedBytes).toBe(native.allocators[1].peakReservedBytes);
  });

  it('replaces the recorded settings: roundup_power2_divisions changes what the native model reserves', () => {
    const recorded = replay(snapshot, { allocators: selectAllocators(['pytorch-native']) });
    const split = replay(snapshot, {
      allocators: selectAllocators(['pytorch-native']),
      allocConf: 'roundup_power2_divisions:4,max_split_size_mb:20',
    });
    expect(split.settings.maxSplitSize).toBe(20 * MiB);
    expect(split.settings.roundupPower2Divisions.every((d) => d === 4)).toBe(true);
    expect(split.allocConf).toBe('roundup_power2_divisions:4,max_split_size_mb:20');
    expect(split.allocators[0].peakReservedBytes).not.toBe(recorded.allocators[0].peakReservedBytes);
  });

  it('a string PyTorch refuses is refused before any replay', () => {
    expect(() =>
      replay(snapshot, { allocators: selectAllocators(['pytorch']), allocConf: 'max_split_size_mb:banana' }),
    ).toThrow(AllocConfError);
  });
});

describe('memoryLimit and OOM verdicts', () => {
  it('a limit below the first request: every allocator fails at that request, and says what it held', () => {
    const s = snapshotOf([
      ['alloc', 0x1000, 64 * MiB],
      ['free_completed', 0x1000, 64 * MiB],
    ]);
    const r = replay(s, { allocators: selectAllocators([]), memoryLimit: 32 * MiB });
    for (const a of r.allocators) {
      expect(a.error, a.name).toBeUndefined();
      expect(a.ooms, a.name).toBe(1);
      expect(a.firstOom, a.name).toMatchObject({
        device: 0,
        event: 0,
        bytes: 64 * MiB,
        timeUs: 0,
        recorded: false,
      });
      expect(a.firstOom!.reservedBytes, a.name).toBeLessThanOrEqual(32 * MiB);
      expect(a.peakReservedBytes, a.name).toBeLessThanOrEqual(32 * MiB);
    }
    expect(r.memoryLimit).toBe(32 * MiB);
  });

  it('no limit, no OOM: firstOom is null', () => {
    const s = snapshotOf([['alloc', 0x1000, 3 * MiB]]);
    for (const a of replay(s, { allocators: selectAllocators([]) }).allocators) expect(a.firstOom).toBeNull();
  });

  it('each allocator meets the cap where it would, and no run ever reserves past it', () => {
    const snapshot = readSnapshotFile(trace('moe_train-native.pickle.gz'));
    const limit = Math.floor(3.1 * GiB);
    const r = replay(snapshot, { allocators: selectAllocators([]), memoryLimit: limit });
    for (const a of r.allocators) {
      expect(a.error, a.name).toBeUndefined();
      expect(a.peakReservedBytes, a.name).toBeLessThanOrEqual(limit);
      expect(a.firstOom, a.name).not.toBeNull();
      expect(a.firstOom!.bytes, a.name).toBeGreaterThan(0);
    }
    // Uncapped, the native model reserves more than the cap; capped, it frees its cache and retries first.
    const free = replay(snapshot, { allocators: selectAllocators(['pytorch-native']) }).allocators[0];
    expect(free.peakReservedBytes).toBeGreaterThan(limit);
  });

  it('stopAtOom ends each run at its first OOM', () => {
    const snapshot = readSnapshotFile(trace('moe_train-native.pickle.gz'));
    const r = replay(snapshot, {
      allocators: selectAllocators(['pytorch-native']),
      memoryLimit: Math.floor(3.1 * GiB),
      stopAtOom: true,
    });
    expect(r.allocators[0].stoppedAtOom).toBe(true);
    expect(r.allocators[0].ooms).toBe(1);
  });

  it('a limit that is not a positive whole number of bytes is a ReplayError', () => {
    const s = snapshotOf([['alloc', 0x1000, 3 * MiB]]);
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => replay(s, { allocators: selectAllocators([]), memoryLimit: bad })).toThrow(ReplayError);
  });
});

describe('recorded OOMs (Note [Recorded OOMs])', () => {
  // The program held 40 MiB and asked for 60 more, which PyTorch refused.
  const s = snapshotOf([
    ['alloc', 0x1000, 40 * MiB],
    ['oom', 0, 60 * MiB],
  ]);

  it('are replayed as a request: served without a cap, refused under one', () => {
    const free = replay(s, { allocators: selectAllocators(['pytorch-native']) }).allocators[0];
    expect(free.devices[0].recordedOoms).toEqual([{ event: 1, bytes: 60 * MiB, served: true }]);
    expect(free.firstOom).toBeNull();
    // The block was never the program's: it is freed at once.
    const capped = replay(s, { allocators: selectAllocators(['pytorch-native']), memoryLimit: 80 * MiB });
    const a = capped.allocators[0];
    expect(a.devices[0].recordedOoms).toEqual([{ event: 1, bytes: 60 * MiB, served: false }]);
    expect(a.firstOom).toMatchObject({ event: 1, bytes: 60 * MiB, recorded: true });
  });
});
