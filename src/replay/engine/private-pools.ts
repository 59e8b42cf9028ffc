/**
 * Which memory pool each block of a trace was allocated in: the default
 * pool, or a CUDA graph's or MemPool's private pool (the PyTorch models'
 * Note [Private pools], rules P1-P11).
 *
 * Note [Pools from addresses]: PyTorch 2.11's trace entries carry no pool
 * id (P1); only the final `segments` list does (segment_pool_id, (0, 0)
 * for the default pool). A block lies in one segment (or, under expandable
 * segments, in one mapped range) for its whole life, and a pool's segments
 * are its own (P5, P11), so a block allocated at address a at event t was
 * in pool P when:
 *   - a final segment of pool P contains a, and
 *   - no segment_free or segment_unmap after t took back memory holding a
 *     (such a free means the memory at a at time t was another segment's,
 *     or pages the final range mapped again later).
 * Blocks live before the first event (Note [Started mid-run]) are taken at
 * t = -1 the same way. A block for which the first test fails, or the
 * second, was in memory the recorded allocator gave back before the
 * snapshot: its pool is not recorded anywhere (a private pool's segments
 * are given back only once every graph using the pool is gone, P7), so it
 * is replayed in the default pool and counted in `unknownPoolBlocks`; so
 * are all blocks of a snapshot whose segments carry no segment_pool_id
 * (older PyTorch). Each private pool seen gets a number, 1 upward, in the
 * order of its MempoolId_t; that number is what replay passes to malloc.
 */
import { settingsFromSnapshot } from '../../alloc/pytorch/settings.js';
import { Action, type DeviceTrace, type MemorySnapshot } from '../read/snapshot.js';

export interface DevicePools {
  /** The private pools this device's final segments show: pool number k is pools[k - 1]. */
  readonly pools: readonly (readonly [number, number])[];
  /** The pool number of each block (plan block ids): 0 for the default pool. */
  readonly blockPool: Uint16Array;
  /** Blocks allocated in a private pool. */
  readonly privateBlocks: number;
  /** Blocks whose pool the snapshot does not tell (Note [Pools from addresses]), replayed in the default pool. */
  readonly unknownPoolBlocks: number;
}

/** A final segment (or mapped range) and the memory the trace took back inside it, when. */
interface Final {
  readonly address: number;
  readonly end: number;
  /** Pool number; 0 for the default pool, -1 when the snapshot does not say. */
  readonly pool: number;
  /** Segment frees and unmaps overlapping it: event index, start, end (clipped), flattened. */
  readonly removed: number[];
}

/**
 * Each block's pool on one device (Note [Pools from addresses]). `blockOf`
 * gives the block of each alloc event; `initialBlocks` and `initialAddress`
 * the blocks live before the first event and their recorded addresses.
 */
export function inferPrivatePools(
  snapshot: MemorySnapshot,
  trace: DeviceTrace,
  blockOf: Int32Array,
  blockCount: number,
  initialBlocks: Int32Array,
  initialAddress: Float64Array,
): DevicePools {
  const segments = snapshot.segments.filter((s) => s.device === trace.device);
  const ids = new Map<string, readonly [number, number]>();
  for (const s of segments) {
    const id = s.poolId;
    if (id !== undefined && (id[0] !== 0 || id[1] !== 0)) ids.set(`${id[0]},${id[1]}`, id);
  }
  const pools = [...ids.values()].sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const number = new Map(pools.map((p, k) => [`${p[0]},${p[1]}`, k + 1]));
  const finals: Final[] = segments
    .map((s) => ({
      address: s.address,
      end: s.address + s.totalSize,
      pool: s.poolId === undefined ? -1 : (number.get(`${s.poolId[0]},${s.poolId[1]}`) ?? 0),
      removed: [],
    }))
    .sort((x, y) => x.address - y.address);

  const { action, addr, size } = trace;
  for (let i = 0; i < trace.length; i++) {
    const a = action[i];
    if (a !== Action.segment_free && a !== Action.segment_unmap) continue;
    const lo = addr[i];
    const hi = lo + size[i];
    for (let k = Math.max(0, floorIndex(finals, lo)); k < finals.length && finals[k].address < hi; k++) {
      const f = finals[k];
      if (f.end > lo) f.removed.push(i, Math.max(lo, f.address), Math.min(hi, f.end));
    }
  }

  const blockPool = new Uint16Array(blockCount);
  let privateBlocks = 0;
  let unknownPoolBlocks = 0;
  const tag = (id: number, address: number, event: number) => {
    const k = floorIndex(finals, address);
    const f = k >= 0 && address < finals[k].end ? finals[k] : undefined;
    if (f === undefined || f.pool < 0 || takenBackAfter(f, address, event)) {
      unknownPoolBlocks++;
      return;
    }
    blockPool[id] = f.pool;
    if (f.pool > 0) privateBlocks++;
  };
  for (let k = 0; k < initialBlocks.length; k++) tag(initialBlocks[k], initialAddress[k], -1);
  for (let i = 0; i < trace.length; i++) {
    if (action[i] === Action.alloc && blockOf[i] >= 0) tag(blockOf[i], addr[i], i);
  }
  return { pools, blockPool, privateBlocks, unknownPoolBlocks };
}

/** Index of the last final segment starting at or below `address`, or -1; finals are disjoint, in address order. */
function floorIndex(finals: readonly Final[], address: number): number {
  let lo = 0;
  let hi = finals.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (finals[mid].address <= address) {
      at = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return at;
}

/** Whether the trace took back memory holding `address` inside `f` after event `event`. */
function takenBackAfter(f: Final, address: number, event: number): boolean {
  const r = f.removed;
  for (let j = 0; j < r.length; j += 3)
    if (r[j] > event && r[j + 1] <= address && address < r[j + 2]) return true;
  return false;
}

/**
 * Whether a run of segment frees starting at event `i` cannot be a
 * malloc's OOM path, so that only empty_cache() explains it (trace-plan's
 * Note [Inferred empty_cache]): the next request is in a private pool, and
 * a request made under a capture releases no cached blocks (P8). Only when
 * the recorded settings leave max_split_size unset, for with it set
 * release_available_cached_blocks frees the request's own pool's oversize
 * blocks (garbage collection, which frees default blocks under a capture
 * too, is the caller's to rule out).
 */
export function beforePrivateRequest(
  snapshot: MemorySnapshot,
  trace: DeviceTrace,
  blockOf: Int32Array,
  pools: DevicePools,
): (i: number) => boolean {
  let mssUnset: boolean;
  try {
    mssUnset = settingsFromSnapshot(snapshot.allocatorSettings).maxSplitSize === Number.POSITIVE_INFINITY;
  } catch {
    mssUnset = false; // unreadable settings: assume the worst
  }
  if (!mssUnset || pools.privateBlocks === 0) return () => false;
  const { action } = trace;
  return (i) => {
    for (let j = i; j < trace.length; j++)
      if (action[j] === Action.alloc) return blockOf[j] >= 0 && pools.blockPool[blockOf[j]] > 0;
      else if (action[j] === Action.oom) return false;
    return false;
  };
}
