/**
 * What the recorded allocator itself reserved over a trace, from its own
 * segment events (T2: segment_alloc / segment_free of cudaMalloc'd segments,
 * segment_map / segment_unmap of expandable segments' pages). On a trace
 * recorded from the allocator's first allocation the running peak equals
 * PyTorch's max_memory_reserved() exactly (checked on every trace in
 * traces/h200); on a trace that starts mid-run it needs the bytes already
 * reserved at its first event (the rebuilt start state's segments).
 */
import { Action } from '../read/snapshot.js';
import type { DevicePlan } from './trace-plan.js';

export interface RecordedReserved {
  /** The greatest reserved bytes at any moment of the trace. */
  readonly peakBytes: number;
  /** Reserved bytes after the last event. */
  readonly endBytes: number;
  /** Whether the trace has segment events at all (a trace with none says nothing of reserved memory). */
  readonly hasSegmentEvents: boolean;
}

/** The recorded allocator's reserved bytes on one device, starting from `startBytes`. */
export function recordedReserved(d: DevicePlan, startBytes = 0): RecordedReserved {
  const { action, size } = d.trace;
  let held = startBytes;
  let peak = startBytes;
  let events = 0;
  for (let i = 0; i < d.trace.length; i++) {
    const a = action[i];
    if (a === Action.segment_alloc || a === Action.segment_map) {
      held += size[i];
      events++;
      if (held > peak) peak = held;
    } else if (a === Action.segment_free || a === Action.segment_unmap) {
      held -= size[i];
      events++;
    }
  }
  return { peakBytes: peak, endBytes: held, hasSegmentEvents: events > 0 };
}
