/**
 * A replayed run as a PyTorch memory snapshot (research note T1, T4), so
 * that PyTorch's own memory_viz shows "my run under this allocator": the
 * trace's allocs and frees at the addresses our allocator gave, the segment
 * events our allocator made, and the segments it held at the end.
 *
 * Note [Exported trace order]: segment events made while serving event i
 * (a malloc growing memory, or an empty_cache() replay called before it)
 * come before event i's own entry, as PyTorch records segment_alloc before
 * the alloc it serves. Blocks live before the recorded trace began become
 * allocs at its start, after the segment events made for them, so the
 * export is a complete trace (it no longer starts mid-run). Events of the
 * recorded allocator's own (segment_*, snapshot, oom) are left out; an
 * alloc our allocator could not serve becomes an oom entry and its frees
 * are dropped, as are frees of an address not live (double frees).
 */
import type { PickleDict, PickleValue } from '../replay/pickle/value.js';
import { type AllocatorRun, BlockState, type DeviceRun, type ReplaySegmentEvent } from '../replay/replay.js';
import { Action, type MemorySnapshot } from '../replay/snapshot.js';
import type { DevicePlan, TracePlan } from '../replay/trace-plan.js';

export class ExportError extends Error {
  override readonly name = 'ExportError';
}

const NAMES = ['alloc', 'free_requested', 'free_completed'] as const;

/** The snapshot of `run` (a replay made with keepEvents) of `snapshot` planned as `plan`. */
export function exportSnapshot(snapshot: MemorySnapshot, plan: TracePlan, run: AllocatorRun): PickleDict {
  if (run.error !== undefined)
    throw new ExportError(`${run.name}'s run failed (${run.error}); nothing to export`);
  const traces: PickleValue[][] = plan.devices.map(() => []);
  const segments: PickleDict[] = [];
  for (const dr of run.devices) {
    const d = plan.devices[dr.device];
    if (dr.blockAddress.length !== d.blockCount)
      throw new ExportError('the replay kept no block addresses (run it with keepEvents)');
    traces[dr.device] = deviceTrace(d, dr);
    segments.push(...endSegments(d, dr));
  }
  const out: PickleDict = { segments, device_traces: traces };
  if (snapshot.allocatorSettings !== undefined) out.allocator_settings = snapshot.allocatorSettings;
  return out;
}

function deviceTrace(d: DevicePlan, dr: DeviceRun): PickleValue[] {
  const { action, size, stream, timeUs } = d.trace;
  const n = d.trace.length;
  const ours = dr.blockAddress;
  const seg = dr.segmentEvents;
  const out: PickleValue[] = [];
  let s = 0;
  let lastTime = 0;
  for (let i = 0; i < n && lastTime === 0; i++) if (!Number.isNaN(timeUs[i])) lastTime = timeUs[i];
  const segmentsUpTo = (event: number, time: number) => {
    while (s < seg.length && seg[s].eventIndex <= event) out.push(segmentEntry(seg[s++], time));
  };
  segmentsUpTo(-1, lastTime);
  for (let k = 0; k < d.initialBlocks.length; k++) {
    const id = d.initialBlocks[k];
    if (Number.isNaN(ours[id])) continue;
    out.push(entry('alloc', ours[id], d.blockSize[id], d.blockStream[id], lastTime));
  }
  for (let i = 0; i < n; i++) {
    if (!Number.isNaN(timeUs[i])) lastTime = timeUs[i];
    segmentsUpTo(i, lastTime);
    const a = action[i];
    if (a !== Action.alloc && a !== Action.free_requested && a !== Action.free_completed) continue;
    const id = d.blockOf[i];
    if (id < 0) continue;
    if (Number.isNaN(ours[id])) {
      if (a === Action.alloc)
        out.push({
          action: 'oom',
          device_free: 0,
          size: size[i],
          stream: stream[i],
          time_us: lastTime,
          frames: [],
        });
      continue;
    }
    out.push(entry(NAMES[a], ours[id], a === Action.alloc ? size[i] : d.blockSize[id], stream[i], lastTime));
  }
  segmentsUpTo(Number.POSITIVE_INFINITY, lastTime);
  return out;
}

function entry(action: string, addr: number, size: number, stream: number, time: number): PickleDict {
  return { action, addr, size, stream, time_us: time, frames: [] };
}

function segmentEntry(e: ReplaySegmentEvent, time: number): PickleDict {
  return entry(e.action, e.address, e.size, e.stream, time);
}

interface Held {
  address: number;
  size: number;
  stream: number;
  expandable: boolean;
}

/** The segments held at the end (T4): one per live segment_alloc, one per run of mapped pages. */
function endSegments(d: DevicePlan, dr: DeviceRun): PickleDict[] {
  const whole = new Map<number, Held>();
  const pages: Held[] = [];
  for (const e of dr.segmentEvents) {
    if (e.action === 'segment_alloc')
      whole.set(e.address, { address: e.address, size: e.size, stream: e.stream, expandable: false });
    else if (e.action === 'segment_free') whole.delete(e.address);
    else if (e.action === 'segment_map') addRange(pages, e.address, e.size, e.stream);
    else removeRange(pages, e.address, e.size);
  }
  const held = [...whole.values(), ...pages.map((p) => ({ ...p, expandable: true }))].sort(
    (a, b) => a.address - b.address,
  );
  // Live blocks at the end, in address order.
  const live: { address: number; size: number }[] = [];
  for (let id = 0; id < d.blockCount; id++) {
    if (dr.blockState[id] === BlockState.live && !Number.isNaN(dr.blockAddress[id]))
      live.push({ address: dr.blockAddress[id], size: d.blockSize[id] });
  }
  live.sort((a, b) => a.address - b.address);
  let b = 0;
  return held.map((h) => {
    const blocks: PickleDict[] = [];
    let at = h.address;
    let allocated = 0;
    const end = h.address + h.size;
    while (b < live.length && live[b].address < h.address) b++;
    for (; b < live.length && live[b].address < end; b++) {
      const blk = live[b];
      if (blk.address > at) blocks.push(block(at, blk.address - at, 0, 'inactive'));
      blocks.push(block(blk.address, blk.size, blk.size, 'active_allocated'));
      allocated += blk.size;
      at = blk.address + blk.size;
    }
    if (at < end) blocks.push(block(at, end - at, 0, 'inactive'));
    return {
      device: d.device,
      address: h.address,
      total_size: h.size,
      allocated_size: allocated,
      active_size: allocated,
      requested_size: allocated,
      stream: h.stream,
      segment_type: h.size <= 2 * 1024 * 1024 && !h.expandable ? 'small' : 'large',
      segment_pool_id: [0, 0],
      is_expandable: h.expandable,
      frames: [],
      blocks,
    };
  });
}

function block(address: number, size: number, requested: number, state: string): PickleDict {
  return { address, size, requested_size: requested, state, frames: [] };
}

/** Add [address, address+size) to sorted disjoint `ranges`, merging neighbours. */
function addRange(ranges: Held[], address: number, size: number, stream: number): void {
  ranges.push({ address, size, stream, expandable: true });
  ranges.sort((a, b) => a.address - b.address);
  for (let i = ranges.length - 1; i > 0; i--) {
    const p = ranges[i - 1];
    const q = ranges[i];
    if (p.address + p.size >= q.address && p.stream === q.stream) {
      p.size = Math.max(p.address + p.size, q.address + q.size) - p.address;
      ranges.splice(i, 1);
    }
  }
}

function removeRange(ranges: Held[], address: number, size: number): void {
  const end = address + size;
  for (let i = ranges.length - 1; i >= 0; i--) {
    const r = ranges[i];
    const rEnd = r.address + r.size;
    if (rEnd <= address || r.address >= end) continue;
    const parts: Held[] = [];
    if (r.address < address) parts.push({ ...r, size: address - r.address });
    if (rEnd > end) parts.push({ ...r, address: end, size: rEnd - end });
    ranges.splice(i, 1, ...parts);
  }
}
