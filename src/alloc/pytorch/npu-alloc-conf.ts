/**
 * PYTORCH_NPU_ALLOC_CONF read as torch_npu reads it (rules NPU9-NPU11 of
 * docs/npu-allocator.md; CachingAllocatorConfig::parseArgs and its helpers,
 * torch_npu/csrc/core/npu/NPUCachingAllocator.cpp:826-974 at
 * v7.1.0-pytorch2.6.0): parseNpuAllocConf turns the string into the settings
 * the torch_npu model runs with, and refuses what torch_npu refuses, in its
 * words (AllocConfError; torch_npu appends an error code such as
 * "[ERRORCODE:...]" that is left out here).
 *
 * Note [PYTORCH_NPU_ALLOC_CONF]: torch_npu has its own parser, not PyTorch's.
 * It knows five keys: max_split_size_mb, garbage_collection_threshold,
 * expandable_segments, base_addr_aligned_kb and page_size; anything else is
 * "Unrecognized CachingAllocator option" (so roundup_power2_divisions,
 * max_non_split_rounding_mb, backend and the pinned_* keys of PyTorch's are
 * refused). It splits at ',', ':', '[' and ']' and drops spaces (lexArgs).
 * Integers go through std::stoi, so a token must start with a number
 * ("stoi" otherwise); max_split_size_mb must be more than 20 (not 20 itself,
 * as PyTorch allows); garbage_collection_threshold strictly between 0 and 1;
 * expandable_segments exactly True or False; base_addr_aligned_kb a plain
 * integer 0 to 16 written as to_string writes it. Setting
 * expandable_segments:True together with max_split_size_mb or
 * garbage_collection_threshold is refused. page_size:1g asks for 1 GiB
 * pages in the large pool where the driver has them, which the model does
 * not have: it is refused as not modelled.
 */
import { AllocConfError } from '../errors.js';
import { stod } from './alloc-conf.js';
import { DEFAULT_NPU_SETTINGS, NPU_ALIGN_ROUND_LARGE } from './npu-rules.js';
import { DEFAULT_PYTORCH_SETTINGS, type PytorchAllocatorSettings, validateSettings } from './settings.js';
import { KiB, LARGE_BUFFER, MiB } from './sizes.js';

/** A parsed PYTORCH_NPU_ALLOC_CONF. */
export interface NpuAllocConf {
  readonly text: string;
  /** What the torch_npu model runs with (`npu` set); keys not given keep torch_npu's defaults. */
  readonly settings: PytorchAllocatorSettings;
}

/** torch_npu's defaults: PyTorch's, with its own rules (NPU1-NPU12). */
export const DEFAULT_NPU_ALLOCATOR_SETTINGS: PytorchAllocatorSettings = validateSettings({
  ...DEFAULT_PYTORCH_SETTINGS,
  npu: DEFAULT_NPU_SETTINGS,
});

const INT_MAX = 2 ** 31 - 1;

/** Parse a PYTORCH_NPU_ALLOC_CONF string as torch_npu does at start-up. Throws AllocConfError. */
export function parseNpuAllocConf(text: string): NpuAllocConf {
  if (typeof text !== 'string') throw new AllocConfError(`the configuration is not a string: ${typeof text}`);
  const config = lex(text);
  let maxSplitSize = Number.POSITIVE_INFINITY;
  /** Whether max_split_size_mb was given: a negative one is a limit past any block, yet not SIZE_MAX. */
  let mssGiven = false;
  let gc = 0;
  let expandable = false;
  let expandableSet = false;
  let align = NPU_ALIGN_ROUND_LARGE;
  const expect = (i: number, c: string) => {
    if (!(i < config.length && config[i] === c))
      throw new AllocConfError(`Error parsing CachingAllocator settings, expected ${c}`);
  };
  for (let i = 0; i < config.length; i++) {
    const key = config[i];
    if (key === 'max_split_size_mb') {
      expect(++i, ':');
      if (++i >= config.length) throw new AllocConfError('Error, expecting max_split_size_mb value', { key });
      const v = stoi(config[i]);
      // static_cast<size_t> of a negative int wraps: past any block, so no limit.
      if (v >= 0 && v <= LARGE_BUFFER / MiB)
        throw new AllocConfError(
          `CachingAllocator option max_split_size_mb too small, must be > ${LARGE_BUFFER / MiB}`,
          { key },
        );
      maxSplitSize = v < 0 ? Number.POSITIVE_INFINITY : v * MiB;
      mssGiven = true;
    } else if (key === 'garbage_collection_threshold') {
      expect(++i, ':');
      if (++i >= config.length)
        throw new AllocConfError('Error, expecting garbage_collection_threshold value', { key });
      const v = stod(config[i]);
      if (v === 'invalid' || v === 'range') throw new AllocConfError('stod', { key });
      if (!(v > 0)) throw new AllocConfError('garbage_collect_threshold too small, set it 0.0~1.0', { key });
      if (!(v < 1)) throw new AllocConfError('garbage_collect_threshold too big, set it 0.0~1.0', { key });
      gc = v;
    } else if (key === 'expandable_segments') {
      expandableSet = true;
      expect(++i, ':');
      if (++i >= config.length)
        throw new AllocConfError('Error, expecting expandable_segments value', { key });
      if (config[i] !== 'True' && config[i] !== 'False')
        throw new AllocConfError('Expected a single True/False argument for expandable_segments', { key });
      expandable = config[i] === 'True';
    } else if (key === 'base_addr_aligned_kb') {
      expect(++i, ':');
      if (++i >= config.length)
        throw new AllocConfError('Error, expecting base_addr_aligned_kb value', { key });
      const v = stoi(config[i]);
      const bad = 'CachingAllocator option base_addr_aligned_kb error, must be [0~16], dtype is int';
      // size_t of a negative int, then its length against the token's: refused either way.
      if (v < 0 || config[i].length !== String(v).length || v > NPU_ALIGN_ROUND_LARGE / KiB)
        throw new AllocConfError(bad, { key });
      align = v * KiB;
    } else if (key === 'page_size') {
      if (!(i + 2 < config.length))
        throw new AllocConfError("page_size requires format 'page_size:1g'", { key });
      if (config[i + 1] !== ':') throw new AllocConfError("Expected ':' after page_size", { key });
      if (config[i + 2] !== '1g')
        throw new AllocConfError(`Unsupported page_size value: ${config[i + 2]}`, { key });
      throw new AllocConfError(
        'page_size:1g (1 GiB pages for the large pool, where the driver has them) is not modelled',
        { key, notModelled: true },
      );
    } else {
      throw new AllocConfError(`Unrecognized CachingAllocator option: ${key}`, { key });
    }
    if (i + 1 < config.length) expect(++i, ',');
  }
  if (expandable && expandableSet && (mssGiven || gc !== 0))
    throw new AllocConfError(
      '`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with `expandable_segments`, please set `expandable_segments` to `False`.',
      { key: 'expandable_segments' },
    );
  const settings = validateSettings({
    ...DEFAULT_PYTORCH_SETTINGS,
    maxSplitSize,
    garbageCollectionThreshold: gc,
    expandableSegments: expandable,
    npu: { baseAddrAlignedSize: align },
  });
  return Object.freeze({ text, settings });
}

/**
 * The PYTORCH_NPU_ALLOC_CONF string that gives `s` (keys at torch_npu's
 * defaults left out), or undefined where no string can (PyTorch's own keys).
 */
export function npuAllocConfOf(s: PytorchAllocatorSettings): string | undefined {
  if (s.roundupPower2Divisions.some((d) => d > 1) || s.maxNonSplitRoundingSize !== LARGE_BUFFER)
    return undefined;
  const parts: string[] = [];
  if (s.expandableSegments) parts.push('expandable_segments:True');
  if (s.maxSplitSize !== Number.POSITIVE_INFINITY) {
    if (s.maxSplitSize % MiB !== 0 || s.maxSplitSize <= LARGE_BUFFER) return undefined;
    parts.push(`max_split_size_mb:${s.maxSplitSize / MiB}`);
  }
  if (s.garbageCollectionThreshold > 0)
    parts.push(`garbage_collection_threshold:${s.garbageCollectionThreshold}`);
  const align = (s.npu ?? DEFAULT_NPU_SETTINGS).baseAddrAlignedSize;
  if (align !== NPU_ALIGN_ROUND_LARGE) parts.push(`base_addr_aligned_kb:${align / KiB}`);
  return parts.join(',');
}

/** lexArgs: ',' ':' '[' ']' are tokens of their own, spaces are dropped. */
function lex(text: string): string[] {
  const out: string[] = [];
  let buf = '';
  for (const ch of text) {
    if (ch === ',' || ch === ':' || ch === '[' || ch === ']') {
      if (buf !== '') out.push(buf);
      buf = '';
      out.push(ch);
    } else if (ch !== ' ') buf += ch;
  }
  if (buf !== '') out.push(buf);
  return out;
}

/** std::stoi: the integer at the token's start (leading whitespace and a sign allowed), else "stoi". */
function stoi(token: string): number {
  const m = /^\s*([+-]?\d+)/.exec(token);
  if (m === null) throw new AllocConfError('stoi');
  const v = Number(m[1]);
  if (v > INT_MAX || v < -INT_MAX - 1) throw new AllocConfError('stoi');
  return v;
}
