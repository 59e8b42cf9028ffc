/**
 * PYTORCH_CUDA_ALLOC_CONF read as PyTorch 2.11 reads it: parseAllocConf turns
 * the string into the settings our PyTorch models run with, and refuses what
 * PyTorch refuses, in PyTorch's own words (AllocConfError).
 *
 * The rules are read from pytorch/pytorch sources of the 2.10 / 2.11 line:
 * c10/core/AllocatorConfig.h (ConfigTokenizer; the same in ROCm/pytorch
 * 8440f874 and pytorch/pytorch b42fb116), c10/core/AllocatorConfig.cpp
 * (AcceleratorAllocatorConfig, 0ac71663), c10/cuda/CUDAAllocatorConfig.cpp
 * (b944315b) and its header of the same change (per_process_memory_fraction
 * present; throw_on_cudamalloc_oom, pinned_free_catch_all and
 * expandable_segments_reserve not yet). Note [Two parsers], Note [Tokens],
 * Note [roundup_power2_divisions], Note [Numbers as std::stoull and
 * std::stod read them], Note [Not modelled].
 */
import { AllocConfError } from '../errors.js';
import { DEFAULT_PYTORCH_SETTINGS, type PytorchAllocatorSettings, validateSettings } from './settings.js';
import { MiB, ROUNDUP_INTERVALS } from './sizes.js';

export { AllocConfError } from '../errors.js';

/** A parsed configuration string. */
export interface AllocConf {
  /** The string as given. */
  readonly text: string;
  /** What the models run with; keys not given keep PyTorch's defaults. */
  readonly settings: PytorchAllocatorSettings;
  /**
   * Keys accepted that do not change the models, each once, in the order of
   * first use: backend (native), release_lock_on_cudamalloc, the pinned_*
   * keys (the host allocator), graph_capture_record_stream_reuse (CUDA
   * graphs, not modelled).
   */
  readonly ignored: readonly string[];
}

/**
 * Parse a PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF) string as PyTorch
 * 2.11 does when a process starts with it: the string replaces every
 * setting, as the environment variable would, and '' gives PyTorch's
 * defaults. Throws AllocConfError.
 */
export function parseAllocConf(text: string): AllocConf {
  if (typeof text !== 'string') throw new AllocConfError(`the configuration is not a string: ${typeof text}`);
  const tokens = new Tokens(text);
  const s: ParseState = {
    maxSplitSize: DEFAULT_PYTORCH_SETTINGS.maxSplitSize,
    maxNonSplitRoundingSize: DEFAULT_PYTORCH_SETTINGS.maxNonSplitRoundingSize,
    divisions: [...DEFAULT_PYTORCH_SETTINGS.roundupPower2Divisions],
    garbageCollectionThreshold: DEFAULT_PYTORCH_SETTINGS.garbageCollectionThreshold,
    expandableSegments: DEFAULT_PYTORCH_SETTINGS.expandableSegments,
    memoryFraction: DEFAULT_PYTORCH_SETTINGS.memoryFraction,
    ignored: new Map(),
    notModelled: undefined,
  };
  try {
    deviceNeutralPass(tokens, s);
    cudaPass(tokens, s);
  } catch (e) {
    throw e instanceof AllocConfError ? withColonHint(e, text) : e;
  }
  if (s.notModelled !== undefined) throw s.notModelled;
  const settings = validateSettings({
    maxSplitSize: s.maxSplitSize,
    maxNonSplitRoundingSize: s.maxNonSplitRoundingSize,
    roundupPower2Divisions: s.divisions,
    garbageCollectionThreshold: s.garbageCollectionThreshold,
    expandableSegments: s.expandableSegments,
    memoryFraction: s.memoryFraction,
  });
  const ignored = [...s.ignored].sort((a, b) => a[1] - b[1]).map(([key]) => key);
  return Object.freeze({ text, settings, ignored: Object.freeze(ignored) });
}

/*
 * Note [Pasted configurations]
 * People paste what they set in their shell or job file:
 * `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, with `export ` before
 * it, quotes around the value or the whole, and PYTORCH_ALLOC_CONF,
 * PYTORCH_HIP_ALLOC_CONF or torch_npu's PYTORCH_NPU_ALLOC_CONF as the name.
 * PyTorch itself never sees the name or the quotes (the shell strips them),
 * so allocConfFromPaste strips them too before the string is parsed as
 * PyTorch parses it. A `key=value` inside the value is not stripped: PyTorch
 * refuses it ("Unrecognized key 'expandable_segments=True'"), and so do we,
 * in its words, adding the string with ':' where '=' was (withColonHint).
 */

const PASTED_NAME = /^(?:export\s+)?(PYTORCH_(?:CUDA_|HIP_|NPU_)?ALLOC_CONF)\s*=\s*/;

/** The configuration string inside what was pasted (Note [Pasted configurations]). */
export function allocConfFromPaste(text: string): string {
  if (typeof text !== 'string') return text;
  let s = unquote(text.trim());
  const named = PASTED_NAME.exec(s);
  if (named !== null) s = unquote(s.slice(named[0].length).trim());
  return s;
}

function unquote(s: string): string {
  return s.length >= 2 && (s[0] === '"' || s[0] === "'") && s.at(-1) === s[0] ? s.slice(1, -1) : s;
}

/** PyTorch's refusal, plus the string with `key:value` for each known `key=value` in it. */
function withColonHint(e: AllocConfError, text: string): AllocConfError {
  let changed = false;
  const fixed = text.replace(/(^|[,\s])([A-Za-z_0-9]+)\s*=/g, (all, before: string, key: string) => {
    if (!DEVICE_NEUTRAL_KEYS.has(key) && !CUDA_KEYS.has(key)) return all;
    changed = true;
    return `${before}${key}:`;
  });
  if (!changed) return e;
  return new AllocConfError(`${e.message} (did you mean ${fixed}?)`, {
    key: e.key,
    notModelled: e.notModelled,
  });
}

interface ParseState {
  maxSplitSize: number;
  maxNonSplitRoundingSize: number;
  readonly divisions: number[];
  garbageCollectionThreshold: number;
  expandableSegments: boolean;
  memoryFraction: number;
  /** Accepted keys without effect on the models, with the token index of their first use. */
  readonly ignored: Map<string, number>;
  /** The first thing PyTorch accepts that we cannot model (Note [Not modelled]). */
  notModelled: AllocConfError | undefined;
}

/*
 * Note [Two parsers]
 * PyTorch hands the one string to two parsers in turn. The device-neutral
 * AcceleratorAllocatorConfig reads max_split_size_mb,
 * max_non_split_rounding_mb, garbage_collection_threshold,
 * roundup_power2_divisions, expandable_segments and
 * pinned_use_background_threads, and steps over every other key without a
 * word. Then CUDA's parser reads backend, release_lock_on_cudamalloc, the
 * other pinned_* keys, graph_capture_record_stream_reuse and
 * per_process_memory_fraction, steps over the first parser's keys, and
 * refuses a key neither knows. Each walks the whole string, so a bad value
 * the first one reads is reported before an unknown key, even one earlier
 * in the string. We walk it twice the same way.
 *
 * A key given twice is read twice and the later value wins, except that a
 * second roundup_power2_divisions list edits the table the first one left
 * (PyTorch resets the table once per string, not per key).
 */

const DEVICE_NEUTRAL_KEYS: ReadonlySet<string> = new Set([
  'max_split_size_mb',
  'max_non_split_rounding_mb',
  'garbage_collection_threshold',
  'roundup_power2_divisions',
  'expandable_segments',
  'pinned_use_background_threads',
]);

/** CUDA's keys; a CUDA build accepts the hip spellings too. */
const CUDA_KEYS: ReadonlySet<string> = new Set([
  'backend',
  'release_lock_on_cudamalloc',
  'release_lock_on_hipmalloc',
  'pinned_use_cuda_host_register',
  'pinned_use_hip_host_register',
  'pinned_num_register_threads',
  'pinned_reserve_segment_size_mb',
  'graph_capture_record_stream_reuse',
  'per_process_memory_fraction',
]);

/** pinned_num_register_threads' ceiling (CUDAAllocatorConfig::pinned_max_register_threads). */
const MAX_REGISTER_THREADS = 128n;
const SIZE_MAX = 2n ** 64n - 1n;
const MIB = BigInt(MiB);
/** max_split_size_mb and max_non_split_rounding_mb: at least kLargeBuffer, in MiB. */
const MIN_SPLIT_MB = 20n;
/** Both are capped at SIZE_MAX / 1 MiB before becoming bytes. */
const MAX_SPLIT_MB = SIZE_MAX / MIB;
/** The largest roundup division the models hold exactly (a safe integer). */
const MAX_MODELLED_DIVISIONS = 2n ** 52n;

/** AcceleratorAllocatorConfig::parseArgs. */
function deviceNeutralPass(t: Tokens, s: ParseState): void {
  for (let i = 0; i < t.length; i++) {
    const key = t.tokens[i];
    switch (key) {
      case 'max_split_size_mb':
        s.maxSplitSize = bytesOrInfinity(megabytes(t, i));
        i += 2;
        break;
      case 'max_non_split_rounding_mb':
        // Past 2^53 bytes it lets any oversize block serve, as it does in PyTorch.
        s.maxNonSplitRoundingSize = Math.min(bytesOrInfinity(megabytes(t, i)), Number.MAX_SAFE_INTEGER);
        i += 2;
        break;
      case 'garbage_collection_threshold': {
        const v = t.double(key, t.colon(key, i) + 1);
        if (!(v > 0 && v < 1))
          throw new AllocConfError('garbage_collect_threshold is invalid, set it in (0.0, 1.0)', { key });
        s.garbageCollectionThreshold = v;
        i += 2;
        break;
      }
      case 'roundup_power2_divisions':
        i = readDivisions(t, i, s);
        break;
      case 'expandable_segments':
        s.expandableSegments = t.bool(key, t.colon(key, i) + 1);
        i += 2;
        break;
      case 'pinned_use_background_threads':
        t.bool(key, t.colon(key, i) + 1);
        noteIgnored(s, key, i);
        i += 2;
        break;
      default:
        i = t.skipKey(key, i);
    }
    i = t.afterValue(i);
  }
}

/** CUDAAllocatorConfig::parseArgs. */
function cudaPass(t: Tokens, s: ParseState): void {
  for (let i = 0; i < t.length; i++) {
    const key = t.tokens[i];
    switch (key) {
      case 'backend': {
        const name = t.at(key, t.colon(key, i) + 1);
        if (name !== 'native' && name !== 'cudaMallocAsync')
          throw new AllocConfError('Unknown allocator backend, options are native and cudaMallocAsync', {
            key,
          });
        if (name === 'cudaMallocAsync')
          notModelled(
            s,
            "backend:cudaMallocAsync is not modelled: vmmkit models PyTorch's native caching allocator",
            key,
          );
        else noteIgnored(s, key, i);
        i += 2;
        break;
      }
      case 'release_lock_on_cudamalloc':
      case 'release_lock_on_hipmalloc':
      case 'pinned_use_cuda_host_register':
      case 'pinned_use_hip_host_register':
      case 'graph_capture_record_stream_reuse':
        t.bool(key, t.colon(key, i) + 1);
        noteIgnored(s, key, i);
        i += 2;
        break;
      case 'pinned_num_register_threads': {
        const n = t.unsigned(key, t.colon(key, i) + 1);
        if (!isPowerOfTwo(n))
          throw new AllocConfError(`Number of register threads has to be power of 2, got ${n}`, { key });
        if (n > MAX_REGISTER_THREADS)
          throw new AllocConfError(
            `Number of register threads should be less than or equal to ${MAX_REGISTER_THREADS}, got ${n}`,
            { key },
          );
        noteIgnored(s, key, i);
        i += 2;
        break;
      }
      case 'pinned_reserve_segment_size_mb':
        if (t.unsigned(key, t.colon(key, i) + 1) === 0n)
          throw new AllocConfError('Pinned reserve segment size has to be greater than 0', { key });
        noteIgnored(s, key, i);
        i += 2;
        break;
      case 'per_process_memory_fraction': {
        const v = t.double(key, t.colon(key, i) + 1);
        if (!(v >= 0 && v <= 1))
          throw new AllocConfError('per_process_memory_fraction is invalid, set it in [0.0, 1.0]', { key });
        s.memoryFraction = v === 0 ? 0 : v; // -0 reads as 0
        i += 2;
        break;
      }
      default:
        if (key === 'large_segment_size_mb')
          notModelled(
            s,
            'large_segment_size_mb is not modelled: vmmkit models PyTorch 2.11, whose large segments are a fixed 20 MiB',
            key,
          );
        else if (!DEVICE_NEUTRAL_KEYS.has(key) && !CUDA_KEYS.has(key))
          throw new AllocConfError(`Unrecognized key '${key}' in CUDA allocator config.`, { key });
        i = t.skipKey(key, i);
    }
    i = t.afterValue(i);
  }
}

/*
 * Note [Not modelled]
 * Some strings PyTorch accepts describe an allocator our models are not:
 * backend:cudaMallocAsync (the driver's stream-ordered pool, not the caching
 * allocator), and a roundup division above 2^52 (beyond a safe integer).
 * large_segment_size_mb is here too: PyTorch releases after the 2.11 line we
 * read accept it to change the 20 MiB large segment, which our models (and
 * 2.11, as far as we could establish) keep fixed; refusing it as not
 * modelled says so more usefully than "Unrecognized key". Parsing goes on
 * past such a key so that anything PyTorch itself refuses in the rest of the
 * string is reported first, as PyTorch would; then the first not-modelled
 * key is thrown, its error marked notModelled.
 */
function notModelled(s: ParseState, message: string, key: string): void {
  s.notModelled ??= new AllocConfError(message, { key, notModelled: true });
}

function noteIgnored(s: ParseState, key: string, index: number): void {
  if (!s.ignored.has(key)) s.ignored.set(key, index);
}

/** max_split_size_mb / max_non_split_rounding_mb at `i`, in bytes: whole MiB, at least 20, capped at SIZE_MAX / 1 MiB. */
function megabytes(t: Tokens, i: number): bigint {
  const key = t.tokens[i];
  const mb = t.unsigned(key, t.colon(key, i) + 1);
  if (mb < MIN_SPLIT_MB)
    throw new AllocConfError(`CachingAllocator option ${key} too small, must be >= ${MIN_SPLIT_MB}`, { key });
  return (mb < MAX_SPLIT_MB ? mb : MAX_SPLIT_MB) * MIB;
}

/** Past 2^53 bytes no block or request reaches a limit: the models read it as none. */
function bytesOrInfinity(bytes: bigint): number {
  return bytes <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(bytes) : Number.POSITIVE_INFINITY;
}

/*
 * Note [roundup_power2_divisions]
 * Two forms. A single number sets all 16 intervals and must be a power of
 * two (0 is refused in this form). A list `[b:d,b:d,...,>:d]` takes
 * boundaries b in MiB, each a power of two naming the interval that starts
 * there (1 for [1, 2) MiB, 2 for [2, 4) MiB, ..., 32768 for 32 GiB and up;
 * larger ones clamp to that last interval), and divisions d, each 0 or a
 * power of two. The first boundary also fills every interval below it;
 * `>:d` fills every interval after the last boundary written (with none
 * written yet, from the second interval: the first keeps its value).
 * PyTorch does not ask the boundaries to ascend: a later one overwrites its
 * interval, and `>` counts from the one written last. Each division is
 * checked before its boundary.
 */
function readDivisions(t: Tokens, i: number, s: ParseState): number {
  const key = t.tokens[i];
  const divisions = s.divisions;
  i = t.colon(key, i) + 1;
  if (t.at(key, i) !== '[') {
    const d = t.unsigned(key, i);
    if (!isPowerOfTwo(d))
      throw new AllocConfError('For roundups, the divisions has to be power of 2', { key });
    divisions.fill(modelledDivisions(s, d, key));
    return i;
  }
  let lastIndex = 0;
  let firstBoundary = true;
  while (++i < t.length && t.tokens[i] !== ']') {
    const boundaryAt = i;
    i = t.colon(key, i) + 1;
    const d = t.unsigned(key, i);
    if (!(d === 0n || isPowerOfTwo(d)))
      throw new AllocConfError('For roundups, the divisions has to be power of 2 or 0 to disable roundup', {
        key,
      });
    if (t.tokens[boundaryAt] === '>') {
      divisions.fill(modelledDivisions(s, d, key), lastIndex + 1);
    } else {
      const boundary = t.unsigned(key, boundaryAt);
      if (!isPowerOfTwo(boundary))
        throw new AllocConfError('For roundups, the intervals have to be power of 2', { key });
      const index = Math.min(boundary.toString(2).length - 1, ROUNDUP_INTERVALS - 1);
      const value = modelledDivisions(s, d, key);
      if (firstBoundary) {
        divisions.fill(value, 0, index);
        firstBoundary = false;
      }
      divisions[index] = value;
      lastIndex = index;
    }
    if (t.at(key, i + 1) !== ']') i++; // the ',' between entries, present but not compared (Note [Tokens])
  }
  if (i >= t.length)
    throw new AllocConfError("Expected closing bracket ']' in ConfigTokenizer but reached end of config", {
      key,
    });
  return i;
}

function modelledDivisions(s: ParseState, d: bigint, key: string): number {
  if (d > MAX_MODELLED_DIVISIONS)
    notModelled(s, `${key}: ${d} divisions is not modelled (at most 2^52)`, key);
  return Number(d);
}

function isPowerOfTwo(n: bigint): boolean {
  return n > 0n && (n & (n - 1n)) === 0n;
}

/*
 * Note [Tokens]
 * PyTorch's ConfigTokenizer makes each ',', ':', '[' and ']' a token of its
 * own, glues everything between them into one token, and drops whitespace
 * (C isspace: space, tab, newline, vertical tab, form feed, carriage return)
 * wherever it is, inside a word too ('max split' reads 'maxsplit'). Its
 * token check only asserts that the index is inside the string: it does not
 * compare the token. So the ':' after a key and the ',' after a value may be
 * any token ('max_split_size_mb,128' sets 128), but a missing one (a key at
 * the end, 'max_split_size_mb:') trips PyTorch's internal assert, "Index out
 * of bounds in ConfigTokenizer". There are no empty tokens: ',,' is two ','
 * tokens, and the second is read as a key (and refused as one).
 */
class Tokens {
  readonly tokens: readonly string[];

  constructor(text: string) {
    const tokens: string[] = [];
    let word = '';
    for (const ch of text) {
      if (ch === ',' || ch === ':' || ch === '[' || ch === ']') {
        if (word !== '') tokens.push(word);
        word = '';
        tokens.push(ch);
      } else if (!isCSpace(ch)) {
        word += ch;
      }
    }
    if (word !== '') tokens.push(word);
    this.tokens = tokens;
  }

  get length(): number {
    return this.tokens.length;
  }

  /** Token `i`, which `key` needs. */
  at(key: string, i: number): string {
    if (i >= this.tokens.length)
      throw new AllocConfError(
        `Index out of bounds in ConfigTokenizer: the configuration ends inside ${key}`,
        {
          key,
        },
      );
    return this.tokens[i];
  }

  /** The separator after the key at `i` (present, not compared); its index. */
  colon(key: string, i: number): number {
    this.at(key, i + 1);
    return i + 1;
  }

  /** After a value at `i`: the ',' that follows, if anything follows (not compared). */
  afterValue(i: number): number {
    return i + 1 < this.tokens.length ? i + 1 : i;
  }

  /** ConfigTokenizer::skipKey: the index of the value, or of the ']' that closes a list value. */
  skipKey(key: string, i: number): number {
    i = this.colon(key, i) + 1;
    if (this.at(key, i) !== '[') return i;
    while (++i < this.tokens.length && this.tokens[i] !== ']') {}
    if (i >= this.tokens.length)
      throw new AllocConfError("Expected closing bracket ']' in ConfigTokenizer but reached end of config", {
        key,
      });
    return i;
  }

  bool(key: string, i: number): boolean {
    const token = this.at(key, i);
    if (token === 'True') return true;
    if (token === 'False') return false;
    throw new AllocConfError(
      `Expected 'True' or 'False' at index ${i} in ConfigTokenizer but got '${token}'`,
      {
        key,
      },
    );
  }

  unsigned(key: string, i: number): bigint {
    const token = this.at(key, i);
    const v = stoull(token);
    if (v === 'invalid')
      throw new AllocConfError(`${key}: '${token}' is not a number (std::stoull)`, { key });
    if (v === 'range') throw new AllocConfError(`${key}: '${token}' is out of range (std::stoull)`, { key });
    return v;
  }

  double(key: string, i: number): number {
    const token = this.at(key, i);
    const v = stod(token);
    if (v === 'invalid') throw new AllocConfError(`${key}: '${token}' is not a number (std::stod)`, { key });
    if (v === 'range') throw new AllocConfError(`${key}: '${token}' is out of range (std::stod)`, { key });
    return v;
  }
}

function isCSpace(ch: string): boolean {
  return ch === ' ' || (ch >= '\t' && ch <= '\r');
}

/*
 * Note [Numbers as std::stoull and std::stod read them]
 * Sizes and counts go through std::stoull (base 10), fractions through
 * std::stod, and both read the longest number at the start of the token and
 * ignore the rest: '128MB' is 128, '0x40' is 0 to stoull, '0.5.1' is 0.5.
 * A token with no number at its start throws (PyTorch shows only "stoull"
 * or "stod"), and so does one out of range. stoull takes a sign, and '-'
 * wraps around 2^64: '-1' is SIZE_MAX, so max_split_size_mb:-1 passes the
 * >= 20 check and means no limit. stod also reads hexadecimal floats, 'inf'
 * and 'nan' (which then fail the range checks), and a nonzero number that
 * underflows below the smallest normal double is out of range, as glibc
 * reports it.
 */
function stoull(token: string): bigint | 'invalid' | 'range' {
  const m = /^([+-]?)(\d+)/.exec(token);
  if (m === null) return 'invalid';
  const magnitude = BigInt(m[2]);
  if (magnitude > SIZE_MAX) return 'range';
  return m[1] === '-' && magnitude !== 0n ? SIZE_MAX + 1n - magnitude : magnitude;
}

export function stod(token: string): number | 'invalid' | 'range' {
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?/.exec(token);
  const whole = hex?.[2] ?? '';
  const fraction = hex?.[3] ?? '';
  if (hex !== null && whole + fraction !== '') {
    const digits = whole + fraction;
    const exponent = Number(hex[4] ?? '0') - 4 * fraction.length;
    const v = (hex[1] === '-' ? -1 : 1) * Number(BigInt(`0x${digits}`)) * 2 ** exponent;
    return inRange(v, /[1-9a-fA-F]/.test(digits));
  }
  const special = /^([+-]?)(inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)/i.exec(token);
  if (special !== null) {
    if (/^nan/i.test(special[2])) return Number.NaN;
    return special[1] === '-' ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  }
  const dec = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(token);
  if (dec === null) return 'invalid';
  return inRange(Number(dec[0]), /[1-9]/.test(dec[0].replace(/[eE].*$/, '')));
}

/** ERANGE as glibc's strtod sets it: overflow to infinity, or underflow of a nonzero number. */
function inRange(v: number, nonzero: boolean): number | 'range' {
  if (!Number.isFinite(v)) return 'range';
  if (nonzero && Math.abs(v) < 2.2250738585072014e-308) return 'range';
  return v;
}
