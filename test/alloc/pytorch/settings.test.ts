import { describe, expect, it } from 'vitest';
import {
  AllocatorSettingsError,
  DEFAULT_PYTORCH_SETTINGS,
  settingsFromSnapshot,
  validateSettings,
} from '../../../src/alloc/pytorch/index.js';
import { recordedConfProblem } from '../../../src/alloc/pytorch/settings.js';
import { MiB } from './helpers.js';

/** allocator_settings as torch/csrc/cuda/Module.cpp writes it for PYTORCH_CUDA_ALLOC_CONF unset. */
function defaultDict(): Record<string, unknown> {
  const divisions: Record<string, number> = {};
  for (let i = 0, key = 1; i < 16; i++, key *= 2) divisions[String(key)] = 0;
  return {
    PYTORCH_CUDA_ALLOC_CONF: '',
    max_split_size: -1,
    garbage_collection_threshold: 0,
    expandable_segments: false,
    pinned_num_register_threads: 1,
    release_lock_on_cudamalloc: false,
    pinned_use_cuda_host_register: false,
    graph_capture_record_stream_reuse: false,
    roundup_power2_divisions: divisions,
  };
}

describe('settingsFromSnapshot (T4)', () => {
  it("gives PyTorch's defaults for an absent dict and for the dict PyTorch writes by default", () => {
    expect(settingsFromSnapshot(undefined)).toEqual(DEFAULT_PYTORCH_SETTINGS);
    expect(settingsFromSnapshot({})).toEqual(DEFAULT_PYTORCH_SETTINGS);
    expect(settingsFromSnapshot(defaultDict())).toEqual(DEFAULT_PYTORCH_SETTINGS);
    expect(DEFAULT_PYTORCH_SETTINGS.maxSplitSize).toBe(Number.POSITIVE_INFINITY);
  });

  it('reads every setting that changes allocation, integers as number or bigint', () => {
    const d = defaultDict();
    d.PYTORCH_CUDA_ALLOC_CONF =
      'max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:4],max_non_split_rounding_mb:32,expandable_segments:True,garbage_collection_threshold:0.6';
    d.max_split_size = 128n * BigInt(MiB);
    d.expandable_segments = true;
    d.garbage_collection_threshold = 0.6;
    (d.roundup_power2_divisions as Record<string, unknown>)['256'] = 1n;
    (d.roundup_power2_divisions as Record<string, unknown>)['512'] = 2;
    (d.roundup_power2_divisions as Record<string, unknown>)['32768'] = 4;
    const s = settingsFromSnapshot(d);
    expect(s.maxSplitSize).toBe(128 * MiB);
    expect(s.maxNonSplitRoundingSize).toBe(32 * MiB);
    expect(s.expandableSegments).toBe(true);
    expect(s.garbageCollectionThreshold).toBe(0.6);
    expect(s.roundupPower2Divisions[8]).toBe(1);
    expect(s.roundupPower2Divisions[9]).toBe(2);
    expect(s.roundupPower2Divisions[15]).toBe(4);
    expect(s.memoryFraction).toBe(1);
    expect(settingsFromSnapshot({ max_split_size: 2n ** 64n - 1n }).maxSplitSize).toBe(
      Number.POSITIVE_INFINITY,
    );
  });

  it('refuses malformed values with AllocatorSettingsError', () => {
    const bad: unknown[] = [
      42,
      [1, 2],
      { max_split_size: 'big' },
      { max_split_size: 19 * MiB },
      { max_split_size: 1.5 },
      { garbage_collection_threshold: 1 },
      { garbage_collection_threshold: -0.1 },
      { garbage_collection_threshold: 'x' },
      { expandable_segments: 'True' },
      { roundup_power2_divisions: [0, 1] },
      { roundup_power2_divisions: { '3': 2 } },
      { roundup_power2_divisions: { '1': 3 } },
      { PYTORCH_CUDA_ALLOC_CONF: 7 },
      { PYTORCH_CUDA_ALLOC_CONF: 'max_non_split_rounding_mb:10' },
      { PYTORCH_CUDA_ALLOC_CONF: 'max_non_split_rounding_mb:abc' },
    ];
    for (const v of bad)
      expect(() => settingsFromSnapshot(v), JSON.stringify(v)).toThrow(AllocatorSettingsError);
  });

  it('validateSettings checks settings made by hand', () => {
    expect(() => validateSettings({ ...DEFAULT_PYTORCH_SETTINGS, memoryFraction: 1.5 })).toThrow(
      AllocatorSettingsError,
    );
    expect(() => validateSettings({ ...DEFAULT_PYTORCH_SETTINGS, roundupPower2Divisions: [4] })).toThrow(
      AllocatorSettingsError,
    );
    expect(validateSettings({ ...DEFAULT_PYTORCH_SETTINGS, maxSplitSize: 20 * MiB }).maxSplitSize).toBe(
      20 * MiB,
    );
  });
});

describe('a recorded configuration string of a later PyTorch', () => {
  it('reads the dict, takes the string-only values at their defaults, and says why', () => {
    const dict = {
      PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True,some_future_key:3',
      expandable_segments: true,
    };
    const s = settingsFromSnapshot(dict);
    expect(s.expandableSegments).toBe(true);
    expect(s.maxNonSplitRoundingSize).toBe(DEFAULT_PYTORCH_SETTINGS.maxNonSplitRoundingSize);
    expect(recordedConfProblem(dict)).toMatch(/some_future_key.*take their defaults/);
    expect(recordedConfProblem({ PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True' })).toBeUndefined();
    expect(recordedConfProblem({ PYTORCH_CUDA_ALLOC_CONF: 'backend:cudaMallocAsync' })).toMatch(
      /not modelled/,
    );
  });
});
