/**
 * The cap a recorded run had, read from its own trace. A snapshot does not
 * say what set_per_process_memory_fraction was, nor how much of the device
 * other processes held, but its events bound the cap from both sides.
 *
 * Note [The recorded cap]: PyTorch's malloc checks a new segment's
 * alloc_size against the cap before it asks the driver (N6 f, Note [Memory
 * limit]): it fails when reserved + alloc_size > cap. On failure it frees
 * cached segments and tries again (N6 g, h), and records `oom` if that
 * fails too. So, per device:
 *
 *  - below: every segment the run got fitted, so the cap is at least about
 *    the most it ever reserved (the trace's running peak, from the start
 *    state's bytes). Expandable segments may map a little past the cap (the
 *    check is on alloc_size, the mapping on pages), so as-recorded.ts looks
 *    below the peak with the model itself;
 *  - above: at a recorded `oom` the request failed with R reserved after
 *    the release, so cap < R + alloc_size.
 *
 * A run of segment frees followed directly by a new segment is either a
 * retry (N6 g/h: the first try failed, so cap < R + alloc_size with R
 * reserved before the frees) or an empty_cache() the program called just
 * before a request that needed a segment. The trace cannot tell them
 * apart; the cap can: under a cap below R + alloc_size it was a retry,
 * under any other an empty_cache() (Note [Inferred empty_cache]). So each
 * such run carries the cap below which it was a retry (`retryBelowBytes`),
 * and a replay under a cap places empty_cache() by it (`retriesUnder`).
 * A run directly before an `oom` is always that OOM's own release. Where
 * an oom shows that the run had a cap at all, every run that could have
 * been a retry is taken for one (a program seldom empties its cache just
 * when its next request would have failed), which bounds the cap from above
 * as an oom does; without an oom the runs stay empty_cache() calls unless
 * the run cannot be reproduced so (as-recorded.ts tries `hintHighBytes`).
 * A run before a request in a CUDA graph's private pool is empty_cache()
 * however full the device was (P8; torch.cuda.graph calls it).
 *
 * An `oom` whose device_free is below the alloc_size means the device
 * itself was full (no fraction needed): the cap was this process's
 * reserved bytes plus what the driver had left, which other processes and
 * the CUDA context shared, so it is an interval all the same.
 */
import type { PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import { allocationSize, roundSize } from '../../alloc/pytorch/sizes.js';
import { Action } from '../read/snapshot.js';
import type { DevicePlan } from './trace-plan.js';

/** A recorded oom: the request failed under the cap. */
export interface OomEvidence {
  /** The oom event. */
  readonly event: number;
  /** The rounded request (the oom's size). */
  readonly requestBytes: number;
  /** The segment bytes it needed (alloc_size, N4). */
  readonly needBytes: number;
  /** Reserved when it failed (after the release). */
  readonly reservedBytes: number;
  /** The oom's device_free (what the driver had left); null when the trace lacks it. */
  readonly deviceFreeBytes: number | null;
}

/** A run of segment frees followed by a new segment or an oom: a retry under a cap below retryBelowBytes. */
export interface FreeRun {
  /** Its first segment free. */
  readonly event: number;
  /** Reserved before it. */
  readonly reservedBytes: number;
  /** A retry under any cap below this (Infinity: before an oom, always a retry). */
  readonly retryBelowBytes: number;
  /** Under garbage collection (N10), the cap below which these frees could be its work; 0 without it. */
  readonly collectBelowBytes: number;
}

export interface DeviceCap {
  readonly device: number;
  /** The recorded allocator's peak reserved bytes (its own segment events). */
  readonly peakBytes: number;
  /** The smallest cap the trace allows, from its events alone (the peak; as-recorded.ts refines it). */
  readonly lowBytes: number;
  /** The largest cap the trace allows (inclusive); Infinity when no oom bounds it. */
  readonly highBytes: number;
  /**
   * Where no oom bounds the cap: the largest cap under which every run of
   * segment frees was a retry or garbage collection's (Infinity: none), the
   * cap to try when the run does not reproduce without one.
   */
  readonly hintHighBytes: number;
  readonly ooms: readonly OomEvidence[];
  /** Runs of segment frees that were retries under some caps (Note [The recorded cap]). */
  readonly runs: readonly FreeRun[];
  /** An oom found the device itself with less free than the request needed. */
  readonly deviceFull: boolean;
  /** Whether the trace shows reserved memory at all (segment events, or segments at its start). */
  readonly seen: boolean;
  /**
   * Under garbage collection (N10): the least cap under which collection
   * would have left alone every new segment the recording made with no
   * frees before it (Note [Collection bounds the cap from below]); 0 where
   * collection is off or the trace cannot tell.
   */
  readonly collectAboveBytes: number;
}

/** The cap's interval on one device, from its trace alone (Note [The recorded cap]). */
export function inferDeviceCap(
  d: DevicePlan,
  settings: PytorchAllocatorSettings,
  emptyCacheOnly: (event: number) => boolean = () => false,
): DeviceCap {
  const { action, size, addr } = d.trace;
  const n = d.trace.length;
  const divisions = settings.roundupPower2Divisions;
  const anyDivisions = divisions.some((x) => x > 1);
  const need = (request: number) => allocationSize(roundSize(request, divisions, anyDivisions));
  // N10: collection runs, under a cap, when reserved passes threshold * cap before a new segment.
  const threshold = settings.garbageCollectionThreshold;
  const collects = threshold > 0;

  const cached = collects && !settings.expandableSegments ? cachedSegments(d) : undefined;
  let collectAbove = 0;
  let held = d.startState.reservedBytes;
  let peak = held;
  let high = Number.POSITIVE_INFINITY;
  let deviceFull = false;
  const ooms: OomEvidence[] = [];
  const runs: FreeRun[] = [];
  let runStart = -1;
  let heldBeforeRun = 0;
  for (let i = 0; i < n; i++) {
    const a = action[i];
    if (cached !== undefined) {
      if (a === Action.segment_alloc && runStart < 0 && cached.wholeFreeLarge() > 0)
        collectAbove = Math.max(collectAbove, Math.ceil(held / threshold));
      cached.step(i);
    }
    const frees = a === Action.segment_free || a === Action.segment_unmap;
    if (frees) {
      if (runStart < 0) {
        runStart = i;
        heldBeforeRun = held;
      }
      held -= size[i];
      continue;
    }
    const ranBefore = runStart;
    runStart = -1;
    if (a === Action.segment_alloc || a === Action.segment_map) {
      held += size[i];
      if (held > peak) peak = held;
      if (ranBefore >= 0 && !emptyCacheOnly(ranBefore)) {
        const request = nextRequest(d, i);
        // A native segment is exactly the alloc_size; an expandable mapping is only the pages it lacked.
        const needBytes =
          a === Action.segment_alloc ? size[i] : request === undefined ? size[i] : need(request);
        runs.push({
          event: ranBefore,
          reservedBytes: heldBeforeRun,
          retryBelowBytes: heldBeforeRun + needBytes,
          collectBelowBytes: collects ? Math.ceil(heldBeforeRun / threshold) : 0,
        });
      }
    } else if (a === Action.oom) {
      const needBytes = allocationSize(size[i]);
      const free = addr[i];
      if (ranBefore >= 0)
        runs.push({
          event: ranBefore,
          reservedBytes: heldBeforeRun,
          retryBelowBytes: Number.POSITIVE_INFINITY,
          collectBelowBytes: 0,
        });
      ooms.push({
        event: i,
        requestBytes: size[i],
        needBytes,
        reservedBytes: held,
        deviceFreeBytes: Number.isFinite(free) ? free : null,
      });
      high = Math.min(high, held + needBytes - 1);
      if (Number.isFinite(free) && free < needBytes) deviceFull = true;
    }
  }
  // A run is a retry or a collection only under caps below what it needed; the least of those above the floor.
  const low = Math.max(peak, collectAbove);
  let hint = Number.POSITIVE_INFINITY;
  for (const r of runs) {
    const below = Math.max(r.retryBelowBytes, r.collectBelowBytes);
    if (below > low) hint = Math.min(hint, below - 1);
  }
  const c = d.counts;
  const seen =
    c.segmentAlloc + c.segmentFree + c.segmentMap + c.segmentUnmap > 0 || d.startState.reservedBytes > 0;
  // An oom shows the run had a cap: then every run that could have been a retry is taken for one.
  if (ooms.length > 0) high = Math.min(high, hint);
  return {
    device: d.device,
    peakBytes: peak,
    lowBytes: low,
    // A trace with no segment events says nothing of reserved memory, so nothing of a cap on it.
    highBytes: seen ? high : Number.POSITIVE_INFINITY,
    hintHighBytes: hint,
    ooms,
    runs,
    deviceFull,
    seen,
    collectAboveBytes: collectAbove,
  };
}

/*
 * Note [Collection bounds the cap from below]: garbage_collect_cached_blocks
 * runs before every new segment (N10, after get_free_block failed) once the
 * bytes held pass threshold * cap, and its first pass frees at least one
 * block whenever the default large pool holds an unsplit native block (the
 * oldest block is at least as old as their mean age). A whole free segment
 * of more than 2 MiB outside every private pool is such a block (2 MiB
 * segments are the small pool's, N4). So a new segment that the recording
 * made with no segment freed before it, while such a segment was cached,
 * says the bytes held were at most threshold * cap: the cap is at least
 * held / threshold. Runs of frees are the other side (collectBelowBytes).
 * The walk needs every block's segment, so it is made only for a trace that
 * starts empty and maps no expandable segments; elsewhere the bound is 0.
 */
interface CachedSegments {
  /** Cached whole segments collection could free. */
  wholeFreeLarge(): number;
  /** Take event i into account. */
  step(i: number): void;
}

function cachedSegments(d: DevicePlan): CachedSegments | undefined {
  if (d.startState.reservedBytes > 0 || d.startState.segments.length > 0) return undefined;
  const { action, addr, size } = d.trace;
  const { blockOf } = d;
  const { blockPool } = d.privatePools;
  /** Live segments in address order: start, end, live blocks, private pool. */
  const starts: number[] = [];
  const segments = new Map<number, { end: number; live: number; private: boolean; large: boolean }>();
  const segmentOfBlock = new Float64Array(d.blockCount).fill(-1);
  let freeable = 0;
  const counts = (x: { live: number; private: boolean; large: boolean }) =>
    x.live === 0 && x.large && !x.private;
  const containing = (p: number): number => {
    let lo = 0;
    let hi = starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid] <= p) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? -1 : starts[found];
  };
  return {
    wholeFreeLarge: () => freeable,
    step(i) {
      const a = action[i];
      if (a === Action.segment_alloc) {
        const at = lowerIndex(starts, addr[i]);
        starts.splice(at, 0, addr[i]);
        segments.set(addr[i], {
          end: addr[i] + size[i],
          live: 0,
          private: false,
          large: size[i] > 2 * 1024 * 1024,
        });
        if (size[i] > 2 * 1024 * 1024) freeable++;
      } else if (a === Action.segment_free) {
        const seg = segments.get(addr[i]);
        if (seg === undefined) return;
        if (counts(seg)) freeable--;
        segments.delete(addr[i]);
        starts.splice(lowerIndex(starts, addr[i]), 1);
      } else if (a === Action.alloc) {
        const b = blockOf[i];
        const start = containing(addr[i]);
        const seg = segments.get(start);
        if (b < 0 || seg === undefined || addr[i] >= seg.end) return;
        if (counts(seg)) freeable--;
        seg.live++;
        if (blockPool[b] > 0) seg.private = true;
        segmentOfBlock[b] = start;
      } else if (a === Action.free_completed) {
        const b = blockOf[i];
        const seg = b < 0 ? undefined : segments.get(segmentOfBlock[b]);
        if (seg === undefined) return;
        seg.live--;
        segmentOfBlock[b] = -1;
        if (counts(seg)) freeable++;
      }
    },
  };
}

/** The first index of a sorted array whose value is at least x. */
function lowerIndex(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The runs of segment frees that were retries under `cap` (undefined: no cap; only an oom's own release). */
export function retriesUnder(cap: DeviceCap, limit: number | undefined): Set<number> {
  const out = new Set<number>();
  for (const r of cap.runs) if (r.retryBelowBytes > (limit ?? Number.MAX_VALUE)) out.add(r.event);
  return out;
}

/**
 * The runs of segment frees the allocator made itself under `limit`: its
 * retries, and garbage collection's (N10 runs only under a cap, and only
 * once reserved passes threshold * cap, so a run that began below that was
 * the program's empty_cache(), such as torch.cuda.graph's before a capture).
 */
export function allocatorRunsUnder(cap: DeviceCap, limit: number | undefined): Set<number> {
  const out = retriesUnder(cap, limit);
  if (limit !== undefined) for (const r of cap.runs) if (r.collectBelowBytes > limit) out.add(r.event);
  return out;
}
/** The request a new segment at event `i` was made for: the next alloc (a few events on, at most). */
function nextRequest(d: DevicePlan, i: number): number | undefined {
  const { action, size } = d.trace;
  const end = Math.min(d.trace.length, i + 64);
  for (let j = i + 1; j < end; j++) {
    const a = action[j];
    if (a === Action.alloc) return size[j];
    // Another segment event or a free first: the segment is not one request's (expandable growth maps in steps).
    if (a === Action.free_completed || a === Action.segment_free || a === Action.segment_unmap)
      return undefined;
  }
  return undefined;
}
