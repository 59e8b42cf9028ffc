/**
 * A replayed run as a memory snapshot of its own: the trace as the replayed
 * allocator would have recorded it, in the shape torch.cuda.memory._snapshot()
 * gives (docs/pytorch-allocators.md T1-T4), for PyTorch's memory_viz or for replay itself.
 *
 * Each device's events are the recorded program's (alloc, free_requested,
 * free_completed, snapshot) at our addresses, with the replayed allocator's
 * segment events in place of the recorded allocator's: those made while
 * serving an alloc come before it, those made while freeing come after the
 * free_completed (PyTorch records them in that order). An alloc that ran out
 * of memory becomes an oom event (device_free unknown here: 0), and its
 * frees are left out. The recorded allocator's own segment and oom events
 * are left out. Blocks rebuilt for a trace that started mid-run (Note
 * [Started mid-run]) are written as allocations before the first event.
 *
 * `segments` is the state at the end, from the replayed segment events: each
 * live segment (segment_alloc not freed) or contiguous mapped range
 * (segment_map, same stream) with the blocks live in it, at their requested
 * sizes, the gaps between them as inactive blocks so that the blocks tile
 * the segment as memory_viz expects. Frames are empty lists.
 */

import type { PickleDict, PickleValue } from '../read/pickle/value.js';
import { PickleTuple } from '../read/pickle/value.js';
import { Action, type MemorySnapshot } from '../read/snapshot.js';
import type { AllocatorRun, DeviceRun } from './replay.js';
import { BlockState, ReplayError } from './replay.js';
import type { DevicePlan, TracePlan } from './trace-plan.js';

const SMALL_SEGMENT = 2 * 1024 * 1024;

/** The snapshot value of one allocator's run (made with keepEvents, the default). */
export function exportRun(snapshot: MemorySnapshot, plan: TracePlan, run: AllocatorRun): PickleValue {
  const traces: PickleValue[] = snapshot.traces.map(() => []);
  const segments: PickleValue[] = [];
  for (const d of run.devices) {
    const p = plan.devices[d.device];
    if (d.blockAddress.length !== p.blockCount) {
      throw new ReplayError(`${run.name}: the run kept no addresses (replay with keepEvents to export it)`);
    }
    traces[d.device] = deviceEvents(p, d);
    segments.push(...endSegments(p, d));
  }
  return {
    segments,
    device_traces: traces,
    allocator_settings: snapshot.allocatorSettings ?? {},
    external_annotations: [],
    vmmkit_replay: { allocator: run.name },
  };
}

function deviceEvents(p: DevicePlan, d: DeviceRun): PickleDict[] {
  const t = p.trace;
  const out: PickleDict[] = [];
  const segs = d.segmentEvents;
  let k = 0;
  let time = 0;
  for (let i = 0; i < t.length; i++) {
    if (!Number.isNaN(t.timeUs[i])) {
      time = t.timeUs[i];
      break;
    }
  }
  const event = (action: string, addr: number, size: number, stream: number): PickleDict => ({
    action,
    addr,
    size,
    stream,
    time_us: time,
    frames: [],
  });
  const flush = (upTo: number) => {
    for (; k < segs.length && segs[k].eventIndex <= upTo; k++) {
      const e = segs[k];
      out.push(event(e.action, e.address, e.size, e.stream));
    }
  };
  flush(-1);
  for (let j = 0; j < p.initialBlocks.length; j++) {
    const id = p.initialBlocks[j];
    if (d.blockState[id] !== BlockState.failed)
      out.push(event('alloc', d.blockAddress[id], p.blockSize[id], p.blockStream[id]));
  }
  for (let i = 0; i < t.length; i++) {
    if (!Number.isNaN(t.timeUs[i])) time = t.timeUs[i];
    const a = t.action[i];
    if (a !== Action.free_completed) flush(i);
    const id = p.blockOf[i];
    switch (a) {
      case Action.alloc:
        if (d.blockState[id] === BlockState.failed) {
          out.push({
            action: 'oom',
            device_free: 0,
            size: t.size[i],
            stream: t.stream[i],
            time_us: time,
            frames: [],
          });
        } else out.push(event('alloc', d.blockAddress[id], t.size[i], t.stream[i]));
        break;
      case Action.free_requested:
      case Action.free_completed:
        if (id >= 0 && d.blockState[id] !== BlockState.failed && !Number.isNaN(d.blockAddress[id])) {
          out.push(
            event(
              a === Action.free_requested ? 'free_requested' : 'free_completed',
              d.blockAddress[id],
              t.size[i],
              t.stream[i],
            ),
          );
        }
        break;
      case Action.snapshot:
        out.push(event('snapshot', 0, t.size[i], t.stream[i]));
        break;
    }
    if (a === Action.free_completed) flush(i);
  }
  flush(Number.POSITIVE_INFINITY);
  return out;
}

interface Range {
  base: number;
  end: number;
  stream: number;
  expandable: boolean;
}

function endSegments(p: DevicePlan, d: DeviceRun): PickleDict[] {
  const whole = new Map<number, Range>();
  let mapped: Range[] = [];
  for (const e of d.segmentEvents) {
    const end = e.address + e.size;
    if (e.action === 'segment_alloc')
      whole.set(e.address, { base: e.address, end, stream: e.stream, expandable: false });
    else if (e.action === 'segment_free') whole.delete(e.address);
    else if (e.action === 'segment_map')
      mapped.push({ base: e.address, end, stream: e.stream, expandable: true });
    else {
      mapped = mapped.flatMap((r) =>
        r.end <= e.address || r.base >= end
          ? [r]
          : [
              ...(r.base < e.address ? [{ ...r, end: e.address }] : []),
              ...(end < r.end ? [{ ...r, base: end }] : []),
            ],
      );
    }
  }
  mapped.sort((x, y) => x.base - y.base);
  const merged: Range[] = [];
  for (const r of mapped) {
    const last = merged[merged.length - 1];
    if (last !== undefined && last.end === r.base && last.stream === r.stream) last.end = r.end;
    else merged.push({ ...r });
  }
  const ranges = [...whole.values(), ...merged].sort((x, y) => x.base - y.base);
  // Live blocks at the end, by address.
  const live: { address: number; size: number }[] = [];
  for (let id = 0; id < p.blockCount; id++) {
    if (d.blockState[id] === BlockState.live)
      live.push({ address: d.blockAddress[id], size: p.blockSize[id] });
  }
  live.sort((x, y) => x.address - y.address);
  let b = 0;
  return ranges.map((r) => {
    const blocks: PickleDict[] = [];
    let at = r.base;
    let used = 0;
    while (b < live.length && live[b].address < r.base) b++;
    for (; b < live.length && live[b].address < r.end; b++) {
      const x = live[b];
      if (x.address > at) blocks.push(block(at, x.address - at, 0, 'inactive'));
      const size = Math.min(x.size, r.end - x.address);
      blocks.push(block(x.address, size, x.size, 'active_allocated'));
      used += x.size;
      at = x.address + size;
    }
    if (at < r.end) blocks.push(block(at, r.end - at, 0, 'inactive'));
    const total = r.end - r.base;
    return {
      device: p.device,
      address: r.base,
      total_size: total,
      allocated_size: used,
      active_size: used,
      requested_size: used,
      stream: r.stream,
      segment_type: total <= SMALL_SEGMENT ? 'small' : 'large',
      segment_pool_id: new PickleTuple([0, 0]),
      is_expandable: r.expandable,
      frames: [],
      blocks,
    };
  });
}

function block(address: number, size: number, requested: number, state: string): PickleDict {
  return { address, size, requested_size: requested, state, frames: [] };
}
