/**
 * The settings `advise` tries, written as PYTORCH_CUDA_ALLOC_CONF strings,
 * and what makes two of them the same replay (Note [Effective settings]).
 * Pure functions of the trace's request sizes; advise.ts runs the rounds.
 *
 * Note [Advice search]: four axes, as PyTorch 2.11 reads them:
 * expandable_segments (off, on), max_split_size_mb, roundup_power2_divisions
 * (one number for every size, or a list per power-of-two interval) and,
 * only under a memory limit (it acts only there, N10),
 * garbage_collection_threshold. The whole grid is thousands of strings;
 * most of them are the same replay, and the axes interact little except in
 * the one known way (#123548), so the search goes in three rounds, each
 * run in parallel:
 *   1. Each axis alone, from PyTorch's defaults, in both modes: every
 *      max_split_size_mb of MAX_SPLIT_GRID up to the first past the largest
 *      block the trace can make, every single division of DIVISION_GRID and
 *      PyTorch's documented list, every threshold of GC_GRID (native only:
 *      collection skips expandable blocks). The known trap,
 *      expandable_segments:True,max_split_size_mb:128, is always among them,
 *      so the warning can show what it costs on this trace.
 *   2. Refinement around each axis's best in each mode: the best
 *      max_split_size_mb times 3/4 and 3/2; the best divisions changed one
 *      interval at a time (the intervals holding most requested bytes, to
 *      each other value of DIVISION_GRID and 0), which is how list forms are
 *      found; the best threshold +-0.05.
 *   3. Combinations: the two best values of each axis (unset counts as a
 *      value) in each mode, crossed, with every part of each combination
 *      alone (so a blow-up can be told from its parts).
 * Strings whose effective settings were already replayed are not replayed
 * again; the simplest string of each is the one shown.
 */
import { parseAllocConf } from '../../alloc/pytorch/alloc-conf.js';
import { npuRoundSize } from '../../alloc/pytorch/npu-rules.js';
import { DEFAULT_PYTORCH_SETTINGS, type PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import {
  allocationSize,
  MiB,
  ROUNDUP_INTERVALS,
  roundSize,
  roundupInterval,
} from '../../alloc/pytorch/sizes.js';
import type { TracePlan } from '../engine/trace-plan.js';
import { Action, type MemorySnapshot } from '../read/snapshot.js';

/** max_split_size_mb values of round 1 (PyTorch's minimum is 20). */
const MAX_SPLIT_GRID: readonly number[] = [20, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768];
/** Single roundup_power2_divisions values of round 1 (1 rounds as 0 does, N2). */
const DIVISION_GRID: readonly number[] = [2, 4, 8, 16];
/** The list PyTorch's documentation gives as its example. */
const DOCUMENTED_DIVISIONS = '[256:1,512:2,1024:4,>:8]';
/** garbage_collection_threshold values of round 1. */
const GC_GRID: readonly number[] = [0.5, 0.6, 0.7, 0.8, 0.9];
/** The combination PyTorch issue #123548 reports, measured on the H200 (traces/h200-whatif). */
export const KNOWN_TRAP = 'expandable_segments:True,max_split_size_mb:128';
/** Intervals changed one at a time in round 2: those holding the most requested bytes. */
const REFINED_INTERVALS = 3;

/** One point of the search: which keys are set, and to what. */
export interface Setting {
  readonly expandable: boolean;
  /** max_split_size_mb; undefined: unset. */
  readonly maxSplitMb?: number;
  /** roundup_power2_divisions per interval (16 entries), or its text as given; undefined: unset. */
  readonly divisions?: readonly number[] | string;
  readonly gc?: number;
}

/** What the trace asks for, as far as the settings can tell apart. */
export interface TraceSizes {
  /** Distinct request sizes (every block, every recorded OOM request), ascending. */
  readonly sizes: Float64Array;
  /** Requested bytes per roundup interval (every block's size, added up). */
  readonly bytesPerInterval: Float64Array;
  /** The largest recorded segment a start state may hold (a trace begun mid-run): restore makes it as recorded. */
  readonly largestStartSegment: number;
}

export function traceSizes(snapshot: MemorySnapshot, plan: TracePlan): TraceSizes {
  const distinct = new Set<number>();
  const perInterval = new Float64Array(ROUNDUP_INTERVALS);
  for (const d of plan.devices) {
    for (let b = 0; b < d.blockCount; b++) {
      const s = d.blockSize[b];
      if (!(s > 0)) continue;
      distinct.add(s);
      perInterval[roundupInterval(s)] += s;
    }
    const { action, size } = d.trace;
    for (let i = 0; i < d.trace.length; i++)
      if (action[i] === Action.oom && size[i] > 0) distinct.add(size[i]);
  }
  // A start state (a trace begun mid-run) holds recorded segments: those at its end, and those its events free.
  let largestStartSegment = 0;
  if (plan.startedMidRun) {
    for (const s of snapshot.segments) largestStartSegment = Math.max(largestStartSegment, s.totalSize);
    for (const d of plan.devices) {
      const { action, size } = d.trace;
      for (let i = 0; i < d.trace.length; i++)
        if (action[i] === Action.segment_free || action[i] === Action.segment_alloc)
          largestStartSegment = Math.max(largestStartSegment, size[i]);
    }
  }
  return {
    sizes: Float64Array.from([...distinct].sort((a, b) => a - b)),
    bytesPerInterval: perInterval,
    largestStartSegment,
  };
}

/**
 * What several traces ask for together (the ranks of one job): a setting
 * that rounds or splits no request of any of them differently from another
 * is the same replay on each, so their sizes are pooled.
 */
export function mergeSizes(all: readonly TraceSizes[]): TraceSizes {
  if (all.length === 1) return all[0];
  const distinct = new Set<number>();
  const perInterval = new Float64Array(ROUNDUP_INTERVALS);
  let largestStartSegment = 0;
  for (const t of all) {
    for (const s of t.sizes) distinct.add(s);
    for (let i = 0; i < ROUNDUP_INTERVALS; i++) perInterval[i] += t.bytesPerInterval[i];
    largestStartSegment = Math.max(largestStartSegment, t.largestStartSegment);
  }
  return {
    sizes: Float64Array.from([...distinct].sort((a, b) => a - b)),
    bytesPerInterval: perInterval,
    largestStartSegment,
  };
}

/** The configuration string of a setting, keys in one order. */
export function confText(s: Setting): string {
  const keys: string[] = [];
  if (s.expandable) keys.push('expandable_segments:True');
  if (s.maxSplitMb !== undefined) keys.push(`max_split_size_mb:${s.maxSplitMb}`);
  const d = typeof s.divisions === 'string' ? s.divisions : divisionsText(s.divisions);
  if (d !== undefined) keys.push(`roundup_power2_divisions:${d}`);
  if (s.gc !== undefined) keys.push(`garbage_collection_threshold:${s.gc}`);
  return keys.join(',');
}

/** A configuration string's keys, each with its value: "a,b:[1:2,>:4]" -> ["a", "b:[1:2,>:4]"]. */
export function splitKeys(conf: string): string[] {
  return conf === '' ? [] : conf.split(/,(?![^[]*\])/);
}

/** How many keys a configuration string sets (the simpler setting wins ties). */
export function keyCount(conf: string): number {
  if (conf === '') return 0;
  // The commas outside a [...] list (the ranking counts keys often: a scan, not a split).
  let n = 1;
  let inList = false;
  for (let i = 0; i < conf.length; i++) {
    const c = conf.charCodeAt(i);
    if (c === 0x5b) inList = true;
    else if (c === 0x5d) inList = false;
    else if (c === 0x2c && !inList) n++;
  }
  return n;
}

/**
 * roundup_power2_divisions for a 16-entry table: one number when every
 * interval has it, else the shortest list (the first boundary fills the
 * intervals below it and '>' those after the last, Note [roundup_power2_divisions]);
 * undefined when every entry is 0.
 */
export function divisionsText(d: readonly number[] | undefined): string | undefined {
  if (d === undefined || d.every((v) => v === 0)) return undefined;
  if (d.every((v) => v === d[0])) return String(d[0]);
  let firstEnd = 0;
  while (d[firstEnd + 1] === d[0]) firstEnd++;
  let lastStart = d.length - 1;
  while (d[lastStart - 1] === d[d.length - 1]) lastStart--;
  const parts = [`${2 ** firstEnd}:${d[0]}`];
  for (let i = firstEnd + 1; i < lastStart; i++) parts.push(`${2 ** i}:${d[i]}`);
  parts.push(`>:${d[d.length - 1]}`);
  return `[${parts.join(',')}]`;
}

/*
 * Note [Effective settings]: replays are deterministic, so two strings whose
 * settings make the models do the same thing need one replay. Parsed
 * settings are brought to one form by what the trace can tell apart:
 * - divisions: an interval's entry matters only through round_size (N2)
 *   of the requests in that interval (the start state is laid out under the
 *   recorded settings, whatever is asked), so two entries that round every
 *   request size of the interval alike are one: the entry becomes the least
 *   that does, 0 when plain 512-byte rounding does (no size there, 1, or
 *   sizes the steps already divide), else the least power of two;
 * - max_split_size on the native allocator: a block is never larger than
 *   the segment it lies in, and a segment is get_allocation_size of a
 *   rounded request (N4) or a recorded start segment; with max_split_size
 *   above all of them, every comparison of N5, N6 (g) and N7 comes out as
 *   with no limit. (Expandable blocks merge across pages without such a
 *   bound, so there it is kept.) max_non_split_rounding acts only with a
 *   limit set;
 * - garbage_collection_threshold: collection runs only under a memory
 *   limit, and frees no expandable block (N10, E7).
 * One more is learnt from a replay rather than the sizes: a setting whose
 * max_split_size is at or above what the same setting without one found
 * neutral on a trace (Note [Neutral max_split_size]) decides every request
 * as that replay did, and takes its outcome (advise.ts, Search #choose).
 */
export function effectiveKey(
  s: PytorchAllocatorSettings,
  sizes: TraceSizes,
  memoryLimit: number | undefined,
): string {
  const divisions = effectiveDivisions(s.roundupPower2Divisions, sizes);
  let mss = s.maxSplitSize;
  if (!s.expandableSegments && mss > largestNativeBlock(divisions, sizes, s.npu !== undefined))
    mss = Number.POSITIVE_INFINITY;
  const nonSplit = mss === Number.POSITIVE_INFINITY ? 0 : s.maxNonSplitRoundingSize;
  const limited = memoryLimit !== undefined || s.memoryFraction < 1;
  const gc = s.expandableSegments || !limited ? 0 : s.garbageCollectionThreshold;
  // torch_npu's own rules (NPU2, NPU5): its block alignment decides where expandable blocks start.
  const npu = s.npu === undefined ? '' : `npu${s.npu.baseAddrAlignedSize}`;
  return [
    s.expandableSegments ? 'E' : 'N',
    mss,
    nonSplit,
    divisions.join('.'),
    gc,
    s.memoryFraction,
    npu,
  ].join('|');
}

/** The effective key of a configuration string (throws AllocConfError as parseAllocConf does). */
export function confKey(conf: string, sizes: TraceSizes, memoryLimit: number | undefined): string {
  return effectiveKey(parseAllocConf(conf).settings, sizes, memoryLimit);
}

/**
 * Each interval's entry brought to the least that rounds every request size
 * of the interval as the entry does (Note [Effective settings]): 0 (plain
 * rounding), else the least power of two that gives the same steps there.
 */
function effectiveDivisions(d: readonly number[], sizes: TraceSizes): number[] {
  const out = d.map((v) => (v > 1 ? v : 0));
  const all = sizes.sizes;
  // Sizes are ascending and intervals grow with size: each interval's sizes are one run.
  let from = 0;
  for (let i = 0; i < ROUNDUP_INTERVALS; i++) {
    let to = from;
    while (to < all.length && roundupInterval(all[to]) === i) to++;
    const given = out[i];
    if (given !== 0) {
      const table = new Array<number>(ROUNDUP_INTERVALS).fill(0);
      const rounded = (size: number, v: number) => {
        table[i] = v;
        return roundSize(size, table, v > 1);
      };
      const same = (v: number) => {
        for (let k = from; k < to; k++) if (rounded(all[k], v) !== rounded(all[k], given)) return false;
        return true;
      };
      let least = 0;
      while (least < given && !same(least)) least = least === 0 ? 2 : least * 2;
      out[i] = least;
    }
    from = to;
  }
  return out;
}

/** The largest block the native allocator can hold on this trace with these divisions (`npu`: torch_npu's padded rounding, NPU2). */
function largestNativeBlock(divisions: readonly number[], sizes: TraceSizes, npu = false): number {
  const any = divisions.some((v) => v > 1);
  let largest = sizes.largestStartSegment;
  // allocationSize(roundSize(s)) grows with s, so the largest size decides.
  const n = sizes.sizes.length;
  if (n > 0) {
    const last = sizes.sizes[n - 1];
    largest = Math.max(largest, allocationSize(npu ? npuRoundSize(last) : roundSize(last, divisions, any)));
  }
  return largest;
}

/** The largest rounded request, in MiB (rounded up): max_split_size_mb past it splits no request. */
function largestRequestMb(sizes: TraceSizes): number {
  const n = sizes.sizes.length;
  return n === 0 ? 0 : Math.ceil(sizes.sizes[n - 1] / MiB);
}

/** Round 1 (Note [Advice search]): each axis alone, both modes, and the known trap. */
export function firstRound(sizes: TraceSizes, limited: boolean): Setting[] {
  const out: Setting[] = [];
  const largest = Math.max(
    largestNativeBlock(new Array(ROUNDUP_INTERVALS).fill(0), sizes),
    largestRequestMb(sizes) * MiB,
  );
  // Values up to the first past the largest block; the rest are the same replay (native) or more of the trap.
  const cut = MAX_SPLIT_GRID.findIndex((mb) => mb * MiB > largest);
  const splits = cut < 0 ? MAX_SPLIT_GRID : MAX_SPLIT_GRID.slice(0, cut + 1);
  for (const expandable of [false, true]) {
    out.push({ expandable });
    for (const maxSplitMb of splits) out.push({ expandable, maxSplitMb });
    for (const d of DIVISION_GRID) out.push({ expandable, divisions: new Array(ROUNDUP_INTERVALS).fill(d) });
    out.push({ expandable, divisions: DOCUMENTED_DIVISIONS });
    if (limited && !expandable) for (const gc of GC_GRID) out.push({ expandable, gc });
  }
  // The known trap, and its parts (Note [Traps] compares them).
  out.push({ expandable: true, maxSplitMb: 128 }, { expandable: false, maxSplitMb: 128 });
  return out;
}

/** The best value found so far on each axis of one mode (undefined: unset is best). */
export interface AxisBests {
  readonly expandable: boolean;
  readonly maxSplitMb: number | undefined;
  readonly divisions: readonly number[] | undefined;
  /** Whether any division setting of this mode is worth refining (default true). */
  readonly refineDivisions?: boolean;
  readonly gc: number | undefined;
}

/** Round 2: refine each axis around its best in one mode. */
export function secondRound(best: AxisBests, sizes: TraceSizes, limited: boolean): Setting[] {
  const out: Setting[] = [];
  const { expandable } = best;
  if (best.maxSplitMb !== undefined) {
    for (const f of [0.75, 1.5]) {
      const mb = Math.round(best.maxSplitMb * f);
      if (mb >= 20) out.push({ expandable, maxSplitMb: mb });
    }
  }
  const base = best.divisions ?? new Array<number>(ROUNDUP_INTERVALS).fill(0);
  const intervals = [...(best.refineDivisions === false ? [] : sizes.bytesPerInterval.keys())]
    .filter((i) => sizes.bytesPerInterval[i] > 0)
    .sort((a, b) => sizes.bytesPerInterval[b] - sizes.bytesPerInterval[a])
    .slice(0, REFINED_INTERVALS);
  for (const i of intervals) {
    for (const v of [0, ...DIVISION_GRID]) {
      if (v === base[i]) continue;
      const d = [...base];
      d[i] = v;
      out.push({ expandable, divisions: d });
    }
  }
  if (limited && !expandable && best.gc !== undefined) {
    for (const delta of [-0.05, 0.05]) {
      const gc = Math.round((best.gc + delta) * 100) / 100;
      if (gc > 0 && gc < 1) out.push({ expandable, gc });
    }
  }
  return out;
}

/** Round 3: the two best values of each axis of one mode, crossed; with each part alone. */
export function thirdRound(
  expandable: boolean,
  maxSplit: readonly (number | undefined)[],
  divisions: readonly (readonly number[] | undefined)[],
  gc: readonly (number | undefined)[],
): Setting[] {
  const out: Setting[] = [];
  for (const m of maxSplit)
    for (const d of divisions)
      for (const g of expandable ? [undefined] : gc) {
        out.push({ expandable, maxSplitMb: m, divisions: d, gc: g });
        out.push(...partsOf({ expandable, maxSplitMb: m, divisions: d, gc: g }));
      }
  return out;
}

/** Each key of a setting alone (expandable_segments:True counts as a key). */
export function partsOf(s: Setting): Setting[] {
  const out: Setting[] = [];
  if (s.expandable) out.push({ expandable: true });
  if (s.maxSplitMb !== undefined) out.push({ expandable: false, maxSplitMb: s.maxSplitMb });
  if (s.divisions !== undefined) out.push({ expandable: false, divisions: s.divisions });
  if (s.gc !== undefined) out.push({ expandable: false, gc: s.gc });
  return out.length > 1 ? out : [];
}

/** The divisions table a setting's value stands for (a list's text is parsed as PyTorch parses it). */
export function divisionsOf(s: Setting): readonly number[] | undefined {
  if (s.divisions === undefined || typeof s.divisions !== 'string') return s.divisions;
  return parseAllocConf(`roundup_power2_divisions:${s.divisions}`).settings.roundupPower2Divisions;
}

/**
 * A configuration string for settings (a snapshot's recorded dict, say)
 * that parseAllocConf reads back to the same settings; keys at PyTorch's
 * defaults are left out. Undefined when no string can say them (a
 * max_split_size that is not whole MiB).
 */
export function settingsConf(s: PytorchAllocatorSettings): string | undefined {
  const keys: string[] = [];
  if (s.expandableSegments) keys.push('expandable_segments:True');
  if (s.maxSplitSize !== Number.POSITIVE_INFINITY) {
    if (s.maxSplitSize % MiB !== 0) return undefined;
    keys.push(`max_split_size_mb:${s.maxSplitSize / MiB}`);
  }
  if (s.maxNonSplitRoundingSize !== DEFAULT_PYTORCH_SETTINGS.maxNonSplitRoundingSize) {
    if (s.maxNonSplitRoundingSize % MiB !== 0) return undefined;
    keys.push(`max_non_split_rounding_mb:${s.maxNonSplitRoundingSize / MiB}`);
  }
  const d = divisionsText(s.roundupPower2Divisions);
  if (d !== undefined) keys.push(`roundup_power2_divisions:${d}`);
  if (s.garbageCollectionThreshold > 0)
    keys.push(`garbage_collection_threshold:${s.garbageCollectionThreshold}`);
  if (s.memoryFraction < 1) keys.push(`per_process_memory_fraction:${s.memoryFraction}`);
  const conf = keys.join(',');
  try {
    return sameSettings(parseAllocConf(conf).settings, s) ? conf : undefined;
  } catch {
    return undefined;
  }
}

function sameSettings(a: PytorchAllocatorSettings, b: PytorchAllocatorSettings): boolean {
  return (
    a.expandableSegments === b.expandableSegments &&
    a.maxSplitSize === b.maxSplitSize &&
    a.maxNonSplitRoundingSize === b.maxNonSplitRoundingSize &&
    a.garbageCollectionThreshold === b.garbageCollectionThreshold &&
    a.memoryFraction === b.memoryFraction &&
    a.roundupPower2Divisions.every((v, i) => v === b.roundupPower2Divisions[i])
  );
}
