/** replay() as the README calls it (Note [replay()'s arguments] in src/replay/engine/replay-options.ts). */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ReplayError, replay, UnknownAllocatorError } from '../../src/entry/replay.js';
import { loadSnapshotFile } from '../../src/replay/read/load.js';
import type { MemorySnapshot } from '../../src/replay/read/snapshot.js';

const HAND = fileURLToPath(new URL('fixtures/hand.pickle', import.meta.url));
const GiB = 2 ** 30;

function refusal(f: () => unknown): ReplayError {
  try {
    f();
  } catch (e) {
    if (e instanceof ReplayError) return e;
    throw e;
  }
  throw new Error('replay() accepted it');
}

describe('replay(snapshot, options)', () => {
  it('needs no options: allocators default to PyTorch as the snapshot configures it', async () => {
    const snapshot = await loadSnapshotFile(HAND);
    const r = replay(snapshot);
    expect(r.allocators.map((a) => a.name)).toEqual(['pytorch']);
    expect(r.allocators[0].error).toBeUndefined();
    expect(r.allocators[0].peakReservedBytes).toBeGreaterThan(0);
  });

  it('takes allocators by name, and names an unknown one', async () => {
    const snapshot = await loadSnapshotFile(HAND);
    expect(
      replay(snapshot, { allocators: ['pytorch-native', 'vmmkit'] }).allocators.map((a) => a.name),
    ).toEqual(['pytorch-native', 'vmmkit']);
    expect(() => replay(snapshot, { allocators: ['jemalloc'] })).toThrow(UnknownAllocatorError);
  });

  it('takes memoryLimit and device as the CLI does: units, fractions, names', async () => {
    const snapshot = await loadSnapshotFile(HAND);
    expect(replay(snapshot, { memoryLimit: '2900MiB' }).memoryLimit).toBe(2900 * 2 ** 20);
    expect(replay(snapshot, { memoryLimit: 0.9, device: 'H100' }).memoryLimit).toBe(
      Math.floor(0.9 * 85_017_493_504),
    );
    expect(replay(snapshot, { memoryLimit: '90%', device: 'h200' }).memoryLimit).toBe(135_098_892_288);
    expect(replay(snapshot, { memoryLimit: '0.5', device: 'a100_80gb' }).memoryLimit).toBe(
      Math.floor(0.5 * 81_049 * 2 ** 20),
    );
    expect(
      replay(snapshot, {
        memoryLimit: 0.5,
        device: {
          name: 'mine',
          totalMemory: 8 * GiB,
          minimumGranularity: 2 ** 21,
          recommendedGranularity: 2 ** 21,
        },
      }).memoryLimit,
    ).toBe(4 * GiB);
    expect(replay(snapshot, { memoryLimit: 3 * GiB }).memoryLimit).toBe(3 * GiB);
    expect(replay(snapshot, { memoryLimit: 0.5, device: '80GiB' }).memoryLimit).toBe(40 * GiB);
  });

  it('refuses, with a ReplayError saying what works, a fraction without a device and a number that cannot be bytes', async () => {
    const snapshot = await loadSnapshotFile(HAND);
    expect(refusal(() => replay(snapshot, { memoryLimit: 0.9 })).message).toBe(
      "memoryLimit: 0.9 is a fraction of the device's memory, and no device is given: pass device (H100, H200, A100-80GB, A100-40GB, L40S, MI300X, MI250X, Ascend-910B, or a spec), or give bytes",
    );
    expect(refusal(() => replay(snapshot, { memoryLimit: '14000' })).message).toMatch(
      /^memoryLimit: 14000 has no unit and is below 1 MiB, so it cannot be meant as bytes; write bytes with a unit/,
    );
    expect(refusal(() => replay(snapshot, { memoryLimit: '12 parsecs' })).message).toMatch(
      /^memoryLimit: unknown unit/,
    );
    expect(refusal(() => replay(snapshot, { device: 'B200' })).message).toMatch(
      /^device: unknown device "B200"/,
    );
  });

  it('takes allocConf as pasted', async () => {
    const snapshot = await loadSnapshotFile(HAND);
    const r = replay(snapshot, { allocConf: "export PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True'" });
    expect(r.allocConf).toBe('expandable_segments:True');
    expect(r.settings.expandableSegments).toBe(true);
  });

  it('a Promise for the snapshot: did you forget await? A path: named, with how to load it', async () => {
    const pending = loadSnapshotFile(HAND);
    const e = refusal(() => replay(pending as unknown as MemorySnapshot));
    expect(e.message).toBe(
      'replay() was given a Promise, not a snapshot: did you forget await? (const snapshot = await loadSnapshotFile(path))',
    );
    await pending;
    expect(refusal(() => replay('snap.pickle' as unknown as MemorySnapshot)).message).toBe(
      'replay() takes a loaded snapshot, not the path "snap.pickle": load it first, replay(await loadSnapshotFile("snap.pickle"), options)',
    );
    for (const wrong of [undefined, null, 42, {}, []])
      expect(refusal(() => replay(wrong as unknown as MemorySnapshot)).message, String(wrong)).toMatch(
        /^replay\(\) was given .*, not a snapshot \(loadSnapshotFile, readSnapshotFile or parseSnapshot makes one\)$/,
      );
  });
});
