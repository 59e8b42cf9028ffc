/**
 * Which machine made a snapshot (src/replay/read/vendor.ts, Note [Snapshot
 * vendor]): the committed torch_npu recordings are told by their frames and,
 * with the frames taken away, by their shape; CUDA recordings stay CUDA.
 */
import { describe, expect, it } from 'vitest';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import type { MemorySnapshot } from '../../src/replay/read/snapshot.js';
import { detectVendor, parseVendor, vendorFromOption } from '../../src/replay/read/vendor.js';

const wild = (f: string) => new URL(`fixtures/wild/${f}`, import.meta.url).pathname;

describe('detectVendor', () => {
  it.each(['memsnapdump-multi-devices.pickle.gz', 'memsnapdump-empty-cache.pickle.gz'])(
    'tells torch_npu by its frames: %s',
    (file) => {
      const guess = detectVendor(readSnapshotFile(wild(file)));
      expect(guess.vendor).toBe('npu');
      expect(guess.basis).toBe('frames');
      expect(guess.evidence[0]).toMatch(/torch_npu\//);
    },
  );

  it("tells torch_npu by its streams and missing time_us where no frame is torch_npu's: memsnapdump-expandable", () => {
    const guess = detectVendor(readSnapshotFile(wild('memsnapdump-expandable.pickle.gz')));
    expect(guess).toMatchObject({ vendor: 'npu', basis: 'shape' });
  });

  it('tells torch_npu by its streams and missing time_us when the frames are gone', () => {
    const s = readSnapshotFile(wild('memsnapdump-empty-cache.pickle.gz'));
    const bare: MemorySnapshot = { ...s, frames: [] };
    const guess = detectVendor(bare);
    expect(guess).toMatchObject({ vendor: 'npu', basis: 'shape' });
    expect(guess.evidence.join(' ')).toMatch(/pointer-like.*1815786048/);
  });

  it.each([
    'code-location-4dev-oom.pickle.gz',
    'select-n-4dev.pickle.gz', // no time_us, pointer streams beside stream 0
    'flexgen-oom-segments.pickle.gz', // no time_us, all on stream 0
    'layoutediting-segment-list.pickle.gz', // no trace at all
  ])('takes a CUDA recording for CUDA: %s', (file) => {
    const guess = detectVendor(readSnapshotFile(wild(file)));
    expect(guess.vendor).toBe('cuda');
    expect(guess.basis).toBe('default');
  });

  it('reads the settings keys', () => {
    const s = readSnapshotFile(wild('code-location-4dev-oom.pickle.gz'));
    expect(detectVendor({ ...s, allocatorSettings: { PYTORCH_HIP_ALLOC_CONF: '' } }).vendor).toBe('rocm');
    expect(detectVendor({ ...s, allocatorSettings: { PYTORCH_NPU_ALLOC_CONF: '' } }).vendor).toBe('npu');
  });

  it('tells ROCm by a HIP frame', () => {
    const s = readSnapshotFile(wild('code-location-4dev-oom.pickle.gz'));
    const frames = [
      ...s.frames,
      { filename: '/opt/rocm-6.2.0/lib/libamdhip64.so.6', name: 'hipMalloc', line: 0 },
    ];
    expect(detectVendor({ ...s, frames })).toMatchObject({ vendor: 'rocm', basis: 'frames' });
  });
});

describe('--vendor', () => {
  it('overrides the guess and keeps what the file suggested', () => {
    const s = readSnapshotFile(wild('memsnapdump-empty-cache.pickle.gz'));
    const guess = vendorFromOption('cuda', s);
    expect(guess.vendor).toBe('cuda');
    expect(guess.evidence[1]).toMatch(/suggests npu/);
  });

  it('reads only the three names', () => {
    expect(parseVendor('NPU')).toBe('npu');
    expect(parseVendor('rocm')).toBe('rocm');
    expect(parseVendor('ascend')).toBeUndefined();
  });
});
