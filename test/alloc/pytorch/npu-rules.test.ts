/**
 * torch_npu's NPUCachingAllocator (docs/npu-allocator.md): the rules where
 * it decides otherwise than PyTorch's, each against the PyTorch model on the
 * same requests, and PYTORCH_NPU_ALLOC_CONF's keys and refusals in
 * torch_npu's words.
 */
import { describe, expect, it } from 'vitest';
import { AllocConfError } from '../../../src/alloc/pytorch/alloc-conf.js';
import {
  DEFAULT_NPU_ALLOCATOR_SETTINGS,
  npuAllocConfOf,
  parseNpuAllocConf,
} from '../../../src/alloc/pytorch/npu-alloc-conf.js';
import { npuAlignmentOffset, npuRoundSize } from '../../../src/alloc/pytorch/npu-rules.js';
import { AllocatorSettingsError, validateSettings } from '../../../src/alloc/pytorch/settings.js';
import { roundSize } from '../../../src/alloc/pytorch/sizes.js';
import { harness, KiB, MiB, smallDevice } from './helpers.js';

const NPU = DEFAULT_NPU_ALLOCATOR_SETTINGS;

describe('NPU2: round_size pads every request by 32 bytes before rounding to 512', () => {
  it('as a function', () => {
    expect(npuRoundSize(1)).toBe(512);
    expect(npuRoundSize(480)).toBe(512);
    expect(npuRoundSize(481)).toBe(1024);
    expect(npuRoundSize(512)).toBe(1024); // PyTorch: 512
    expect(roundSize(512, [], false)).toBe(512);
    expect(npuRoundSize(MiB)).toBe(MiB + 512);
  });

  it('in the allocator: back-to-back 512-byte requests lie 1024 bytes apart (PyTorch: 512)', () => {
    for (const [settings, step] of [
      [NPU, 1024],
      [{}, 512],
    ] as const) {
      const h = harness('native', settings);
      const a = h.alloc.malloc(512, 0);
      const b = h.alloc.malloc(512, 0);
      expect(b - a).toBe(step);
      expect(h.alloc.stats.allocatedBytes).toBe(2 * step);
    }
  });

  it('NPU3: a request of exactly 1 MiB is a large-pool request (a 20 MiB segment; PyTorch: the small pool, 2 MiB)', () => {
    const npu = harness('native', NPU, smallDevice(256 * MiB));
    npu.alloc.malloc(MiB, 0);
    expect(npu.events.map((e) => [e.action, e.size / MiB])).toEqual([['segment_alloc', 20]]);
    // The boundary: 1 MiB - 32 bytes pads to exactly 1 MiB, the small pool; one byte more is large.
    for (const [size, segment] of [
      [MiB - 32, 2],
      [MiB - 31, 20],
    ] as const) {
      const h = harness('native', NPU, smallDevice(256 * MiB));
      h.alloc.malloc(size, 0);
      expect(h.events.map((e) => e.size / MiB)).toEqual([segment]);
    }
    const cuda = harness('native', {}, smallDevice(256 * MiB));
    cuda.alloc.malloc(MiB, 0);
    expect(cuda.events.map((e) => [e.action, e.size / MiB])).toEqual([['segment_alloc', 2]]);
  });
});

describe('NPU5: under expandable segments a block of 2 MiB or more starts at a base_addr_aligned_kb boundary', () => {
  it('as a function', () => {
    expect(npuAlignmentOffset(0, 4 * MiB, 2 * MiB, 16 * KiB)).toBe(0);
    expect(npuAlignmentOffset(1536, 4 * MiB, 2 * MiB, 16 * KiB)).toBe(16 * KiB - 1536);
    expect(npuAlignmentOffset(1536, 4 * MiB, 2 * MiB - 512, 16 * KiB)).toBe(0); // below kRoundLarge
    expect(npuAlignmentOffset(1536, 2 * MiB + 1536, 2 * MiB, 16 * KiB)).toBe(0); // would not fit
    expect(npuAlignmentOffset(1536, 4 * MiB, 2 * MiB, 0)).toBe(0); // base_addr_aligned_kb:0
  });

  /** A 2 MiB + 1000 request (block 2 MiB + 1536), then a 2 MiB one: where does the second start? */
  const secondOffset = (settings: object, kind: 'native' | 'expandable' = 'expandable') => {
    const h = harness(kind, settings, smallDevice(256 * MiB));
    const a = h.alloc.malloc(2 * MiB + 1000, 0);
    const b = h.alloc.malloc(2 * MiB, 0);
    return { offset: b - a, free: h.alloc.stats.reservedBytes - h.alloc.stats.allocatedBytes };
  };

  it('moved up to the next 16 KiB, the bytes before it left free (PyTorch: right after)', () => {
    expect(secondOffset(NPU).offset).toBe(2 * MiB + 16 * KiB);
    expect(secondOffset({}).offset).toBe(2 * MiB + 1024);
  });

  it('base_addr_aligned_kb:4 aligns to 4 KiB, :0 not at all', () => {
    expect(
      secondOffset(parseNpuAllocConf('expandable_segments:True,base_addr_aligned_kb:4').settings).offset,
    ).toBe(2 * MiB + 4 * KiB);
    expect(
      secondOffset(parseNpuAllocConf('expandable_segments:True,base_addr_aligned_kb:0').settings).offset,
    ).toBe(2 * MiB + 1536);
  });

  it('not without expandable segments', () => {
    expect(secondOffset(NPU, 'native').offset).toBe(2 * MiB + 1536);
  });
});

describe('PYTORCH_NPU_ALLOC_CONF (NPU9, NPU10), read as torch_npu reads it', () => {
  const refusal = (conf: string) => {
    try {
      parseNpuAllocConf(conf);
    } catch (e) {
      expect(e).toBeInstanceOf(AllocConfError);
      return (e as AllocConfError).message;
    }
    throw new Error(`${conf} was accepted`);
  };

  it('the five keys, with spaces dropped', () => {
    const s = parseNpuAllocConf(' max_split_size_mb : 64 , garbage_collection_threshold:0.6').settings;
    expect(s.maxSplitSize).toBe(64 * MiB);
    expect(s.garbageCollectionThreshold).toBe(0.6);
    expect(s.expandableSegments).toBe(false);
    expect(s.npu).toEqual({ baseAddrAlignedSize: 16 * KiB });
    expect(parseNpuAllocConf('expandable_segments:True,base_addr_aligned_kb:8').settings).toMatchObject({
      expandableSegments: true,
      npu: { baseAddrAlignedSize: 8 * KiB },
    });
    expect(parseNpuAllocConf('').settings).toEqual(NPU);
  });

  it("refuses what torch_npu refuses, in torch_npu's words", () => {
    expect(refusal('max_split_size_mb:20')).toBe(
      'CachingAllocator option max_split_size_mb too small, must be > 20',
    );
    expect(refusal('max_split_size_mb:abc')).toBe('stoi');
    expect(refusal('garbage_collection_threshold:0')).toBe(
      'garbage_collect_threshold too small, set it 0.0~1.0',
    );
    expect(refusal('garbage_collection_threshold:1')).toBe(
      'garbage_collect_threshold too big, set it 0.0~1.0',
    );
    expect(refusal('expandable_segments:true')).toBe(
      'Expected a single True/False argument for expandable_segments',
    );
    expect(refusal('base_addr_aligned_kb:17')).toMatch(/base_addr_aligned_kb error, must be \[0~16\]/);
    expect(refusal('base_addr_aligned_kb:08')).toMatch(/base_addr_aligned_kb error/);
    expect(refusal('roundup_power2_divisions:4')).toBe(
      'Unrecognized CachingAllocator option: roundup_power2_divisions',
    );
    expect(refusal('backend:native')).toBe('Unrecognized CachingAllocator option: backend');
    expect(refusal('page_size:2m')).toBe('Unsupported page_size value: 2m');
    // ';' is no separator: 'True;max_split_size_mb' is one token.
    expect(refusal('expandable_segments:True;max_split_size_mb:64')).toBe(
      'Expected a single True/False argument for expandable_segments',
    );
    expect(refusal('expandable_segments:True max_split_size_mb:64')).toBe(
      'Expected a single True/False argument for expandable_segments',
    );
    expect(refusal('max_split_size_mb')).toBe('Error parsing CachingAllocator settings, expected :');
  });

  it('NPU10: expandable_segments:True with max_split_size_mb or garbage_collection_threshold is refused', () => {
    const words =
      '`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with `expandable_segments`, please set `expandable_segments` to `False`.';
    expect(refusal('expandable_segments:True,max_split_size_mb:128')).toBe(words);
    expect(refusal('garbage_collection_threshold:0.8,expandable_segments:True')).toBe(words);
    expect(parseNpuAllocConf('expandable_segments:False,max_split_size_mb:128').settings.maxSplitSize).toBe(
      128 * MiB,
    );
  });

  it('page_size:1g is read and refused as not modelled', () => {
    try {
      parseNpuAllocConf('page_size:1g');
      throw new Error('accepted');
    } catch (e) {
      expect((e as AllocConfError).notModelled).toBe(true);
    }
  });

  it('the string advise prints reads back to the same settings', () => {
    for (const conf of [
      '',
      'expandable_segments:True',
      'max_split_size_mb:256,garbage_collection_threshold:0.7',
    ]) {
      const s = parseNpuAllocConf(conf).settings;
      expect(parseNpuAllocConf(npuAllocConfOf(s) ?? 'x').settings).toEqual(s);
    }
  });

  it("torch_npu's settings refuse PyTorch's own rounding keys", () => {
    expect(() => validateSettings({ ...NPU, roundupPower2Divisions: new Array(16).fill(4) })).toThrow(
      AllocatorSettingsError,
    );
    expect(() => validateSettings({ ...NPU, npu: { baseAddrAlignedSize: 32 * KiB } })).toThrow(
      AllocatorSettingsError,
    );
  });
});
