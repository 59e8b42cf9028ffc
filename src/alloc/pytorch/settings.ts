import { AllocatorSettingsError, AllocConfError } from '../errors.js';
import { parseAllocConf } from './alloc-conf.js';
import { type NpuSettings, npuSettingsProblem } from './npu-rules.js';
import { isPowerOfTwo, LARGE_BUFFER, ROUNDUP_INTERVALS } from './sizes.js';

export { AllocatorSettingsError } from '../errors.js';

/**
 * The allocator settings that change what PyTorch's caching allocator does
 * (PYTORCH_CUDA_ALLOC_CONF, as a snapshot's `allocator_settings` reports
 * it, docs/pytorch-allocators.md T4), plus the per-process memory fraction, which no
 * snapshot records.
 *
 * Which allocator runs is the class's choice: PytorchNativeAllocator never
 * uses expandable segments and PytorchExpandableAllocator always does, so
 * `expandableSegments` only records what the trace was made with.
 */
export interface PytorchAllocatorSettings {
  /** Blocks at least this large are never split (N5, N7); Infinity: no limit (PyTorch's SIZE_MAX). */
  readonly maxSplitSize: number;
  /** An oversize block may serve a request at most this much smaller (N5; max_non_split_rounding_mb). */
  readonly maxNonSplitRoundingSize: number;
  /** Divisions per power-of-two interval, 16 entries: sizes in [2^(20+i), 2^(21+i)) use entry i (N2). */
  readonly roundupPower2Divisions: readonly number[];
  /** Fraction of the allowed memory above which cached blocks are collected (N10); 0: off. */
  readonly garbageCollectionThreshold: number;
  /** Whether the trace was recorded with expandable_segments:True (E1). */
  readonly expandableSegments: boolean;
  /** torch.cuda.set_per_process_memory_fraction (N6 f): 1 means no cap; GC needs it below 1. */
  readonly memoryFraction: number;
  /** Present when the allocator is torch_npu's NPUCachingAllocator: its own rules (Note [torch_npu's allocator]). */
  readonly npu?: NpuSettings;
}

export const DEFAULT_PYTORCH_SETTINGS: PytorchAllocatorSettings = Object.freeze({
  maxSplitSize: Number.POSITIVE_INFINITY,
  maxNonSplitRoundingSize: LARGE_BUFFER,
  roundupPower2Divisions: Object.freeze(new Array<number>(ROUNDUP_INTERVALS).fill(0)),
  garbageCollectionThreshold: 0,
  expandableSegments: false,
  memoryFraction: 1,
});

/**
 * Read a snapshot's `allocator_settings` dict, unpickled as a plain object
 * (keys as torch/csrc/cuda/Module.cpp writes them: max_split_size,
 * garbage_collection_threshold, expandable_segments, roundup_power2_divisions
 * keyed "1", "2", "4", ... "32768" (MiB), and PYTORCH_CUDA_ALLOC_CONF, the
 * configuration string). The dict's values are what the allocator held, so
 * they win; the string, parsed as PyTorch parses it (parseAllocConf), alone
 * carries max_non_split_rounding_mb and per_process_memory_fraction (a
 * string 2.11 would not read leaves those two at their defaults:
 * recordedConfProblem).
 * Absent keys (or an absent dict) take PyTorch's defaults; keys that do not
 * change allocation (pinned_*, release_lock_on_cudamalloc, ...) are ignored.
 * Integers may come as number or bigint. Throws AllocatorSettingsError.
 */
export function settingsFromSnapshot(allocatorSettings: unknown): PytorchAllocatorSettings {
  if (allocatorSettings === undefined || allocatorSettings === null) return DEFAULT_PYTORCH_SETTINGS;
  if (typeof allocatorSettings !== 'object' || Array.isArray(allocatorSettings))
    throw new AllocatorSettingsError(`allocator_settings is not a dict: ${describe(allocatorSettings)}`);
  const dict = allocatorSettings as Record<string, unknown>;
  const conf = dict.PYTORCH_CUDA_ALLOC_CONF;
  if (conf !== undefined && conf !== null && typeof conf !== 'string')
    throw new AllocatorSettingsError(`PYTORCH_CUDA_ALLOC_CONF is not a string: ${describe(conf)}`);
  const recorded = readRecordedConf(typeof conf === 'string' ? conf : '');
  return validateSettings({
    maxSplitSize: readMaxSplitSize(dict.max_split_size),
    maxNonSplitRoundingSize: recorded.maxNonSplitRoundingSize,
    roundupPower2Divisions: readDivisions(dict.roundup_power2_divisions),
    garbageCollectionThreshold: readNumber(
      dict.garbage_collection_threshold,
      'garbage_collection_threshold',
      DEFAULT_PYTORCH_SETTINGS.garbageCollectionThreshold,
    ),
    expandableSegments: readBoolean(dict.expandable_segments, 'expandable_segments'),
    memoryFraction: recorded.memoryFraction,
  });
}

/**
 * The recorded configuration string's settings. A string this parser refuses
 * (a key of a later PyTorch, cudaMallocAsync) was accepted by the PyTorch
 * that recorded it, and the dict already holds what that allocator used, so
 * its two string-only values take their defaults; recordedConfProblem says so.
 */
function readRecordedConf(conf: string): PytorchAllocatorSettings {
  try {
    return parseAllocConf(conf).settings;
  } catch (e) {
    if (!(e instanceof AllocConfError)) throw e;
    if (isLaterPytorch(e)) return DEFAULT_PYTORCH_SETTINGS;
    // A bad value of a key 2.11 knows: no PyTorch ran with it, so the snapshot is not one it wrote.
    throw new AllocatorSettingsError(`PYTORCH_CUDA_ALLOC_CONF '${conf}': ${e.message}`, { cause: e });
  }
}

/** A refusal that a later (or another backend's) PyTorch would not make: an unknown key, or one not modelled. */
function isLaterPytorch(e: AllocConfError): boolean {
  return e.notModelled || (e.key !== undefined && e.message.startsWith('Unrecognized key'));
}

/** Why a snapshot's recorded PYTORCH_CUDA_ALLOC_CONF was not read (undefined: it was, or there is none). */
export function recordedConfProblem(allocatorSettings: unknown): string | undefined {
  const conf = (allocatorSettings as { PYTORCH_CUDA_ALLOC_CONF?: unknown } | null | undefined)
    ?.PYTORCH_CUDA_ALLOC_CONF;
  if (typeof conf !== 'string') return undefined;
  try {
    parseAllocConf(conf);
    return undefined;
  } catch (e) {
    if (!(e instanceof AllocConfError) || !isLaterPytorch(e)) return undefined;
    return `the recorded PYTORCH_CUDA_ALLOC_CONF '${conf}' is not PyTorch 2.11's (${e.message}); its max_non_split_rounding_mb and per_process_memory_fraction take their defaults, the other settings come from the snapshot's allocator_settings`;
  }
}

/**
 * Check settings made by hand (or by settingsFromSnapshot) against PyTorch's
 * own limits; returns them frozen. Throws AllocatorSettingsError.
 */
export function validateSettings(s: PytorchAllocatorSettings): PytorchAllocatorSettings {
  if (
    !(
      s.maxSplitSize === Number.POSITIVE_INFINITY ||
      (Number.isSafeInteger(s.maxSplitSize) && s.maxSplitSize >= LARGE_BUFFER)
    )
  )
    throw new AllocatorSettingsError(`maxSplitSize ${s.maxSplitSize} must be at least 20 MiB (or Infinity)`);
  if (!(Number.isSafeInteger(s.maxNonSplitRoundingSize) && s.maxNonSplitRoundingSize >= LARGE_BUFFER))
    throw new AllocatorSettingsError(
      `maxNonSplitRoundingSize ${s.maxNonSplitRoundingSize} must be at least 20 MiB`,
    );
  const d = s.roundupPower2Divisions;
  if (!Array.isArray(d) || d.length !== ROUNDUP_INTERVALS)
    throw new AllocatorSettingsError(`roundupPower2Divisions must have ${ROUNDUP_INTERVALS} entries`);
  for (const v of d) {
    if (!(v === 0 || (Number.isSafeInteger(v) && isPowerOfTwo(v))))
      throw new AllocatorSettingsError(`roundup divisions must be 0 or a power of two, not ${v}`);
  }
  const t = s.garbageCollectionThreshold;
  if (!(typeof t === 'number' && t >= 0 && t < 1))
    throw new AllocatorSettingsError(`garbageCollectionThreshold ${t} must be in [0, 1) (0: off)`);
  const f = s.memoryFraction;
  if (!(typeof f === 'number' && f >= 0 && f <= 1))
    throw new AllocatorSettingsError(`memoryFraction ${f} must be in [0, 1]`);
  if (typeof s.expandableSegments !== 'boolean')
    throw new AllocatorSettingsError(`expandableSegments must be a boolean`);
  if (s.npu !== undefined) {
    const problem = npuSettingsProblem(s.npu);
    if (problem !== undefined) throw new AllocatorSettingsError(problem);
    if (d.some((v) => v > 1)) throw new AllocatorSettingsError('torch_npu has no roundup_power2_divisions');
    if (s.maxNonSplitRoundingSize !== LARGE_BUFFER)
      throw new AllocatorSettingsError('torch_npu has no max_non_split_rounding_mb (its limit is 20 MiB)');
  }
  return Object.freeze({ ...s, roundupPower2Divisions: Object.freeze([...d]) });
}

/**
 * max_split_size: bytes, written as int64 of PyTorch's size_t, so SIZE_MAX ("no
 * limit") reads -1 and any negative value is a size of 2^63 or more. Past 2^53
 * bytes no block reaches the limit: none, to the models (as parseAllocConf reads it).
 */
function readMaxSplitSize(v: unknown): number {
  if (v === undefined || v === null) return DEFAULT_PYTORCH_SETTINGS.maxSplitSize;
  const n = readInteger(v, 'max_split_size');
  if (n < 0n || n > BigInt(Number.MAX_SAFE_INTEGER)) return Number.POSITIVE_INFINITY;
  if (n < BigInt(LARGE_BUFFER))
    throw new AllocatorSettingsError(`max_split_size ${n} is out of range (at least 20 MiB, or -1 for none)`);
  return Number(n);
}

/** roundup_power2_divisions: {"1": d, "2": d, "4": d, ...}; a missing key keeps 0. */
function readDivisions(v: unknown): number[] {
  const out = new Array<number>(ROUNDUP_INTERVALS).fill(0);
  if (v === undefined || v === null) return out;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new AllocatorSettingsError(`roundup_power2_divisions is not a dict: ${describe(v)}`);
  const interval = new Map<string, number>();
  for (let i = 0; i < ROUNDUP_INTERVALS; i++) interval.set(String(2 ** i), i);
  for (const [key, value] of Object.entries(v)) {
    const i = interval.get(key);
    if (i === undefined)
      throw new AllocatorSettingsError(`roundup_power2_divisions has an unknown interval key '${key}'`);
    const n = readInteger(value, `roundup_power2_divisions['${key}']`);
    if (!(n === 0n || (n > 0n && n <= 2n ** 52n && isPowerOfTwo(Number(n)))))
      throw new AllocatorSettingsError(
        `roundup_power2_divisions['${key}'] = ${n} is not 0 or a power of two`,
      );
    out[i] = Number(n);
  }
  return out;
}

function readInteger(v: unknown, what: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  throw new AllocatorSettingsError(`${what} is not an integer: ${describe(v)}`);
}

function readNumber(v: unknown, what: string, absent: number): number {
  if (v === undefined || v === null) return absent;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  throw new AllocatorSettingsError(`${what} is not a number: ${describe(v)}`);
}

function readBoolean(v: unknown, what: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  throw new AllocatorSettingsError(`${what} is not a boolean: ${describe(v)}`);
}

function describe(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
