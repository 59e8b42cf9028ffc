import { describe, expect, it } from 'vitest';
import {
  AllocatorSettingsError,
  AllocConfError,
  DEFAULT_PYTORCH_SETTINGS,
  parseAllocConf,
  settingsFromSnapshot,
} from '../../../src/alloc/pytorch/index.js';
import { recordedConfProblem } from '../../../src/alloc/pytorch/settings.js';
import { thrown } from '../../support/thrown.js';
import { harness, type Kind, MiB, smallDevice } from './helpers.js';

const settings = (text: string) => parseAllocConf(text).settings;

/** The AllocConfError `text` throws. */
const refusal = (text: string) =>
  thrown(() => parseAllocConf(text), AllocConfError, `${JSON.stringify(text)} was accepted`);

/** Sixteen roundup entries from runs of [count, value]. */
function table(...runs: [number, number][]): number[] {
  const out = runs.flatMap(([n, v]) => new Array<number>(n).fill(v));
  expect(out).toHaveLength(16);
  return out;
}

describe('parseAllocConf: keys that change the models', () => {
  it("gives PyTorch's defaults for the empty string and for whitespace alone", () => {
    for (const text of ['', '   ', '\t\n']) {
      const conf = parseAllocConf(text);
      expect(conf.settings).toEqual(DEFAULT_PYTORCH_SETTINGS);
      expect(conf.ignored).toEqual([]);
      expect(conf.text).toBe(text);
    }
  });

  it('reads the example of the command line', () => {
    const s = settings('max_split_size_mb:128,roundup_power2_divisions:4');
    expect(s.maxSplitSize).toBe(128 * MiB);
    expect(s.roundupPower2Divisions).toEqual(table([16, 4]));
    expect({ ...s, maxSplitSize: 0, roundupPower2Divisions: [] }).toEqual({
      ...DEFAULT_PYTORCH_SETTINGS,
      maxSplitSize: 0,
      roundupPower2Divisions: [],
    });
  });

  it('max_split_size_mb: whole MiB from 20 up, stored in bytes; past 2^53 bytes it is no limit', () => {
    expect(settings('max_split_size_mb:20').maxSplitSize).toBe(20 * MiB);
    expect(settings('max_split_size_mb:4096').maxSplitSize).toBe(4096 * MiB);
    expect(settings('max_split_size_mb:8589934591').maxSplitSize).toBe(8589934591 * MiB); // 2^33 - 1 MiB fits
    expect(settings('max_split_size_mb:8589934592').maxSplitSize).toBe(Number.POSITIVE_INFINITY);
    // std::stoull wraps a '-' around 2^64: -1 is SIZE_MAX, capped at SIZE_MAX / 1 MiB MiB.
    expect(settings('max_split_size_mb:-1').maxSplitSize).toBe(Number.POSITIVE_INFINITY);
    expect(refusal('max_split_size_mb:19').message).toBe(
      'CachingAllocator option max_split_size_mb too small, must be >= 20',
    );
    expect(refusal('max_split_size_mb:0').key).toBe('max_split_size_mb');
  });

  it('max_non_split_rounding_mb: whole MiB from 20 up', () => {
    expect(settings('max_non_split_rounding_mb:32').maxNonSplitRoundingSize).toBe(32 * MiB);
    expect(settings('max_non_split_rounding_mb:20').maxNonSplitRoundingSize).toBe(20 * MiB);
    expect(settings('max_non_split_rounding_mb:-1').maxNonSplitRoundingSize).toBe(Number.MAX_SAFE_INTEGER);
    expect(refusal('max_non_split_rounding_mb:10').message).toBe(
      'CachingAllocator option max_non_split_rounding_mb too small, must be >= 20',
    );
  });

  it('garbage_collection_threshold: strictly between 0 and 1, read as std::stod reads it', () => {
    expect(settings('garbage_collection_threshold:0.6').garbageCollectionThreshold).toBe(0.6);
    expect(settings('garbage_collection_threshold:.25').garbageCollectionThreshold).toBe(0.25);
    expect(settings('garbage_collection_threshold:5e-1').garbageCollectionThreshold).toBe(0.5);
    expect(settings('garbage_collection_threshold:0x1p-2').garbageCollectionThreshold).toBe(0.25);
    expect(settings('garbage_collection_threshold:0.5abc').garbageCollectionThreshold).toBe(0.5); // the rest ignored
    for (const v of ['0', '1', '1.0', '-0.5', '2', 'nan', 'inf', '-inf', '0x0'])
      expect(refusal(`garbage_collection_threshold:${v}`).message, v).toBe(
        'garbage_collect_threshold is invalid, set it in (0.0, 1.0)',
      );
    expect(refusal('garbage_collection_threshold:x').message).toBe(
      "garbage_collection_threshold: 'x' is not a number (std::stod)",
    );
    expect(refusal('garbage_collection_threshold:1e-400').message).toBe(
      "garbage_collection_threshold: '1e-400' is out of range (std::stod)",
    );
  });

  it('expandable_segments: True or False exactly, the error naming the token index', () => {
    expect(settings('expandable_segments:True').expandableSegments).toBe(true);
    expect(settings('expandable_segments:False').expandableSegments).toBe(false);
    expect(refusal('expandable_segments:true').message).toBe(
      "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'true'",
    );
    expect(refusal('max_split_size_mb:40,expandable_segments:1').message).toBe(
      "Expected 'True' or 'False' at index 6 in ConfigTokenizer but got '1'",
    );
  });

  it('per_process_memory_fraction: in [0, 1]', () => {
    expect(settings('per_process_memory_fraction:0.5').memoryFraction).toBe(0.5);
    expect(settings('per_process_memory_fraction:1').memoryFraction).toBe(1);
    expect(settings('per_process_memory_fraction:0').memoryFraction).toBe(0);
    expect(Object.is(settings('per_process_memory_fraction:-0').memoryFraction, 0)).toBe(true);
    for (const v of ['1.5', '-0.1', 'nan'])
      expect(refusal(`per_process_memory_fraction:${v}`).message, v).toBe(
        'per_process_memory_fraction is invalid, set it in [0.0, 1.0]',
      );
  });
});

describe('parseAllocConf: roundup_power2_divisions', () => {
  it('the single form sets every interval and must be a power of two (0 refused)', () => {
    expect(settings('roundup_power2_divisions:1').roundupPower2Divisions).toEqual(table([16, 1]));
    expect(settings('roundup_power2_divisions:16').roundupPower2Divisions).toEqual(table([16, 16]));
    for (const v of ['0', '3', '12'])
      expect(refusal(`roundup_power2_divisions:${v}`).message, v).toBe(
        'For roundups, the divisions has to be power of 2',
      );
  });

  it('the list form: the first boundary fills below it, > fills after the last one', () => {
    // 256 MiB is interval 8, 512 MiB interval 9.
    expect(settings('roundup_power2_divisions:[256:1,512:2,>:8]').roundupPower2Divisions).toEqual(
      table([9, 1], [1, 2], [6, 8]),
    );
    expect(settings('roundup_power2_divisions:[1:4]').roundupPower2Divisions).toEqual(table([1, 4], [15, 0]));
    expect(settings('roundup_power2_divisions:[1024:4]').roundupPower2Divisions).toEqual(
      table([11, 4], [5, 0]),
    );
    expect(settings('roundup_power2_divisions:[64:8,128:2,256:0,>:1]').roundupPower2Divisions).toEqual(
      table([7, 8], [1, 2], [1, 0], [7, 1]),
    );
    // Boundaries past 32768 MiB name the last interval.
    expect(settings('roundup_power2_divisions:[65536:2]').roundupPower2Divisions).toEqual(table([16, 2]));
  });

  it('as PyTorch: > alone leaves the first interval, and boundaries need not ascend', () => {
    expect(settings('roundup_power2_divisions:[>:8]').roundupPower2Divisions).toEqual(table([1, 0], [15, 8]));
    // 512 first fills 0..9 with 2; 256 then overwrites interval 8; > fills from after 256's interval.
    expect(settings('roundup_power2_divisions:[512:2,256:1,>:8]').roundupPower2Divisions).toEqual(
      table([8, 2], [1, 1], [7, 8]),
    );
  });

  it('refuses what PyTorch refuses, each division checked before its boundary', () => {
    const cases: [string, string][] = [
      ['[256:3]', 'For roundups, the divisions has to be power of 2 or 0 to disable roundup'],
      ['[300:2]', 'For roundups, the intervals have to be power of 2'],
      ['[0:2]', 'For roundups, the intervals have to be power of 2'],
      ['[300:3]', 'For roundups, the divisions has to be power of 2 or 0 to disable roundup'],
      ['[256:1,', "Expected closing bracket ']' in ConfigTokenizer but reached end of config"],
      [
        '[256:1',
        'Index out of bounds in ConfigTokenizer: the configuration ends inside roundup_power2_divisions',
      ],
      ['[abc:2]', "roundup_power2_divisions: 'abc' is not a number (std::stoull)"],
      ['[', "Expected closing bracket ']' in ConfigTokenizer but reached end of config"],
    ];
    for (const [value, message] of cases)
      expect(refusal(`roundup_power2_divisions:${value}`).message, value).toBe(message);
  });

  it('a second list edits the table the first left', () => {
    expect(
      settings('roundup_power2_divisions:[256:1],roundup_power2_divisions:[512:2]').roundupPower2Divisions,
    ).toEqual(table([10, 2], [6, 0]));
  });

  it('a division past 2^52 is accepted by PyTorch but not modelled', () => {
    const e = refusal('roundup_power2_divisions:[256:9007199254740992]');
    expect(e.notModelled).toBe(true);
    expect(settings('roundup_power2_divisions:[256:4503599627370496]').roundupPower2Divisions[8]).toBe(
      2 ** 52,
    );
  });
});

describe('parseAllocConf: keys accepted without effect on the models', () => {
  it('lists them once each, in the order of first use, and leaves the settings at their defaults', () => {
    const conf = parseAllocConf(
      'pinned_use_cuda_host_register:True,release_lock_on_cudamalloc:True,backend:native,' +
        'pinned_num_register_threads:8,pinned_use_background_threads:True,pinned_reserve_segment_size_mb:2048,' +
        'graph_capture_record_stream_reuse:True,release_lock_on_hipmalloc:False,pinned_use_hip_host_register:False,' +
        'release_lock_on_cudamalloc:False',
    );
    expect(conf.settings).toEqual(DEFAULT_PYTORCH_SETTINGS);
    expect(conf.ignored).toEqual([
      'pinned_use_cuda_host_register',
      'release_lock_on_cudamalloc',
      'backend',
      'pinned_num_register_threads',
      'pinned_use_background_threads',
      'pinned_reserve_segment_size_mb',
      'graph_capture_record_stream_reuse',
      'release_lock_on_hipmalloc',
      'pinned_use_hip_host_register',
    ]);
  });

  it('still checks their values', () => {
    const cases: [string, string][] = [
      ['pinned_num_register_threads:3', 'Number of register threads has to be power of 2, got 3'],
      ['pinned_num_register_threads:0', 'Number of register threads has to be power of 2, got 0'],
      [
        'pinned_num_register_threads:256',
        'Number of register threads should be less than or equal to 128, got 256',
      ],
      ['pinned_reserve_segment_size_mb:0', 'Pinned reserve segment size has to be greater than 0'],
      [
        'release_lock_on_cudamalloc:yes',
        "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'yes'",
      ],
      [
        'pinned_use_background_threads:1',
        "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got '1'",
      ],
      [
        'graph_capture_record_stream_reuse:on',
        "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'on'",
      ],
      ['backend:foo', 'Unknown allocator backend, options are native and cudaMallocAsync'],
      ['backend:hipMallocAsync', 'Unknown allocator backend, options are native and cudaMallocAsync'],
    ];
    for (const [text, message] of cases) {
      const e = refusal(text);
      expect(e.message, text).toBe(message);
      expect(e.notModelled, text).toBe(false);
    }
    expect(parseAllocConf('pinned_num_register_threads:128').ignored).toEqual([
      'pinned_num_register_threads',
    ]);
  });
});

describe('parseAllocConf: what is not modelled', () => {
  it('backend:cudaMallocAsync has its own error, marked notModelled', () => {
    const e = refusal('backend:cudaMallocAsync');
    expect(e.message).toBe(
      "backend:cudaMallocAsync is not modelled: vmmkit models PyTorch's native caching allocator",
    );
    expect(e.notModelled).toBe(true);
    expect(e.key).toBe('backend');
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('AllocConfError');
  });

  it('what PyTorch itself refuses elsewhere in the string is reported first, as PyTorch would', () => {
    expect(refusal('backend:cudaMallocAsync,foo:1').message).toBe(
      "Unrecognized key 'foo' in CUDA allocator config.",
    );
    expect(refusal('backend:cudaMallocAsync,max_split_size_mb:5').notModelled).toBe(false);
    expect(refusal('max_split_size_mb:128,backend:cudaMallocAsync').notModelled).toBe(true);
  });

  it('large_segment_size_mb is refused as not modelled', () => {
    const e = refusal('expandable_segments:True,large_segment_size_mb:64');
    expect(e.notModelled).toBe(true);
    expect(e.key).toBe('large_segment_size_mb');
    expect(e.message).toContain('fixed 20 MiB');
  });
});

describe('parseAllocConf: the tokenizer', () => {
  it('drops whitespace anywhere, inside words too', () => {
    expect(settings(' max_split_size_mb : 128 ,\texpandable_segments:\nTrue\r\n')).toMatchObject({
      maxSplitSize: 128 * MiB,
      expandableSegments: true,
    });
    expect(settings('max_split_size_mb:1 28').maxSplitSize).toBe(128 * MiB);
    expect(refusal('max split_size_mb:128').message).toBe(
      "Unrecognized key 'maxsplit_size_mb' in CUDA allocator config.",
    );
    // Not C whitespace: a no-break space stays in the token.
    expect(refusal('max_split_size_mb:\u00a0128').message).toContain('is not a number (std::stoull)');
  });

  it('does not compare separators, but needs them present', () => {
    expect(settings('max_split_size_mb,128').maxSplitSize).toBe(128 * MiB);
    expect(settings('max_split_size_mb:128:expandable_segments:True')).toMatchObject({
      maxSplitSize: 128 * MiB,
      expandableSegments: true,
    });
    expect(settings('max_split_size_mb:128,').maxSplitSize).toBe(128 * MiB); // a trailing ',' is fine
    for (const text of ['max_split_size_mb', 'max_split_size_mb:', 'expandable_segments:True,backend'])
      expect(refusal(text).message, text).toMatch(/^Index out of bounds in ConfigTokenizer/);
  });

  it('an empty entry makes a separator a key', () => {
    expect(refusal('max_split_size_mb:128,,expandable_segments:True').message).toBe(
      "Unrecognized key ',' in CUDA allocator config.",
    );
    expect(refusal(',max_split_size_mb:128').message).toBe("Unrecognized key ',' in CUDA allocator config.");
    expect(refusal(',').message).toMatch(/^Index out of bounds in ConfigTokenizer/);
  });

  it('reads numbers as std::stoull does: the leading digits, the rest ignored', () => {
    expect(settings('max_split_size_mb:128MB').maxSplitSize).toBe(128 * MiB);
    expect(settings('max_split_size_mb:+64').maxSplitSize).toBe(64 * MiB);
    expect(refusal('max_split_size_mb:0x40').message).toBe(
      'CachingAllocator option max_split_size_mb too small, must be >= 20',
    );
    expect(refusal('max_split_size_mb:abc').message).toBe(
      "max_split_size_mb: 'abc' is not a number (std::stoull)",
    );
    expect(refusal('max_split_size_mb:18446744073709551616').message).toBe(
      "max_split_size_mb: '18446744073709551616' is out of range (std::stoull)",
    );
    expect(settings('max_split_size_mb:18446744073709551615').maxSplitSize).toBe(Number.POSITIVE_INFINITY);
  });

  it('refuses unknown keys in PyTorch words, after the values the first parser reads', () => {
    expect(refusal('foo:1').message).toBe("Unrecognized key 'foo' in CUDA allocator config.");
    expect(refusal('max_split_size:128').message).toBe(
      "Unrecognized key 'max_split_size' in CUDA allocator config.",
    );
    expect(refusal('Max_split_size_mb:128').key).toBe('Max_split_size_mb');
    // Keys from PyTorch releases after 2.11.
    expect(refusal('throw_on_cudamalloc_oom:True').message).toBe(
      "Unrecognized key 'throw_on_cudamalloc_oom' in CUDA allocator config.",
    );
    // Note [Two parsers]: the bad value comes first although the unknown key is earlier.
    expect(refusal('foo:1,max_split_size_mb:10').message).toBe(
      'CachingAllocator option max_split_size_mb too small, must be >= 20',
    );
    // An unknown key's list value is stepped over whole.
    expect(refusal('foo:[1,2,3],max_split_size_mb:10').key).toBe('max_split_size_mb');
  });

  it('a key given twice: the later value wins', () => {
    expect(settings('max_split_size_mb:40,max_split_size_mb:80').maxSplitSize).toBe(80 * MiB);
    expect(settings('expandable_segments:True,expandable_segments:False').expandableSegments).toBe(false);
    expect(refusal('max_split_size_mb:40,max_split_size_mb:10').message).toContain('too small');
  });

  it('every refusal is one line', () => {
    for (const text of [
      'foo:1',
      'max_split_size_mb:1',
      'roundup_power2_divisions:[256:1',
      'backend:x',
      'a\nb:1',
    ])
      expect(refusal(text).message, text).not.toMatch(/\n/);
    expect(() => parseAllocConf(42 as unknown as string)).toThrow(AllocConfError);
  });
});

describe('parseAllocConf: the settings drive the models', () => {
  /** Segment events and addresses of one request sequence. */
  function run(kind: Kind, s: Parameters<typeof harness>[1]) {
    const h = harness(kind, s, smallDevice(512 * MiB));
    const addresses: number[] = [];
    const big = h.alloc.malloc(64 * MiB, 0);
    h.alloc.free(big);
    addresses.push(h.alloc.malloc(30 * MiB, 0), h.alloc.malloc(60 * MiB, 0), h.alloc.malloc(1_300_000, 0));
    return {
      addresses,
      events: h.events.map((e) => [e.action, e.size]),
      allocated: h.alloc.stats.allocatedBytes,
    };
  }

  it('a native allocator built from a parsed string behaves as one with the fields set by hand', () => {
    const parsed = run('native', settings('max_split_size_mb:40,roundup_power2_divisions:4'));
    const byHand = run('native', { maxSplitSize: 40 * MiB, roundupPower2Divisions: new Array(16).fill(4) });
    const plain = run('native', settings(''));
    expect(parsed).toEqual(byHand);
    expect(parsed).not.toEqual(plain); // the settings made a difference
  });

  it('the same for the expandable model, and the string records expandable_segments', () => {
    const s = settings('expandable_segments:True,max_non_split_rounding_mb:64,max_split_size_mb:40');
    expect(s.expandableSegments).toBe(true);
    expect(run('expandable', s)).toEqual(
      run('expandable', {
        expandableSegments: true,
        maxSplitSize: 40 * MiB,
        maxNonSplitRoundingSize: 64 * MiB,
      }),
    );
  });
});

describe('settingsFromSnapshot reads the recorded string with parseAllocConf', () => {
  it('takes max_non_split_rounding_mb and per_process_memory_fraction from it, the rest from the dict', () => {
    const s = settingsFromSnapshot({
      PYTORCH_CUDA_ALLOC_CONF:
        'max_non_split_rounding_mb : 48, per_process_memory_fraction:0.75, max_split_size_mb:64',
      max_split_size: 128 * MiB, // set later at run time: the dict is what the allocator held
    });
    expect(s.maxNonSplitRoundingSize).toBe(48 * MiB);
    expect(s.memoryFraction).toBe(0.75);
    expect(s.maxSplitSize).toBe(128 * MiB);
  });

  it('refuses a recorded string with a bad value of a 2.11 key, as AllocatorSettingsError', () => {
    // No PyTorch ran with it, so the snapshot is not one PyTorch wrote.
    expect(() => settingsFromSnapshot({ PYTORCH_CUDA_ALLOC_CONF: 'max_non_split_rounding_mb:10' })).toThrow(
      AllocatorSettingsError,
    );
    try {
      settingsFromSnapshot({ PYTORCH_CUDA_ALLOC_CONF: 'max_non_split_rounding_mb:10' });
    } catch (e) {
      expect((e as Error).message).toMatch(/^PYTORCH_CUDA_ALLOC_CONF 'max_non_split_rounding_mb:10': /);
      expect((e as Error).cause).toBeInstanceOf(AllocConfError);
    }
  });

  it('reads a recorded string with a key 2.11 lacks or one not modelled (a later PyTorch wrote it) from the dict', () => {
    for (const conf of ['foo:1', 'backend:cudaMallocAsync']) {
      expect(settingsFromSnapshot({ PYTORCH_CUDA_ALLOC_CONF: conf }), conf).toEqual(DEFAULT_PYTORCH_SETTINGS);
      expect(recordedConfProblem({ PYTORCH_CUDA_ALLOC_CONF: conf }), conf).toMatch(
        conf === 'foo:1' ? /Unrecognized key 'foo' in CUDA allocator config\./ : /not modelled/,
      );
    }
  });

  it('reads any negative int64 max_split_size (a size_t of 2^63 or more) as no limit', () => {
    // max_split_size_mb:-1 is recorded as int64 of (SIZE_MAX / 1 MiB) MiB.
    expect(settingsFromSnapshot({ max_split_size: -1048576 }).maxSplitSize).toBe(Number.POSITIVE_INFINITY);
    expect(settingsFromSnapshot({ max_split_size: 2n ** 60n }).maxSplitSize).toBe(Number.POSITIVE_INFINITY);
  });
});
