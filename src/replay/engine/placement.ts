/**
 * Recorded placement: the allocator's one-step allocations (core malloc,
 * PyTorch's cudaMalloc) are served at the addresses the recorded trace's
 * segment_alloc events give, in order, while the sizes agree.
 *
 * Note [Recorded placement]: best fit breaks ties between free blocks of
 * the same size by address (N5), so which block a request takes, and so
 * where later blocks split and whether a new segment is needed, depends on
 * where the driver put each segment. The driver's cudaMalloc addresses are
 * not in the order the simulator hands out addresses (cnn_train's fourth
 * segment lies below its third), and with the simulator's own addresses the
 * native model's replay of the H200 traces drifts from the recording (for
 * kv_cache_decode, 6% more reserved). The driver's choice of address is not
 * the allocator's doing, so replay makes the same choice the driver made.
 *
 * Placement is an explicit part of the allocator's context (AllocatorContext
 * `placement`): an allocator that makes one-step segments asks it where the
 * next one of a size goes and passes that to core's malloc as the hint, so a
 * placed segment is an ordinary one-step allocation in every other respect
 * (the driver meter counts it as one cuMemAlloc, its mfree is core's). Where
 * the allocator asks for a size the recording does not have next, it gets no
 * address and the recording waits for it to catch up. Only on the simulator:
 * on a GPU the real cuMemAlloc is the thing measured. The placement also
 * watches the runtime (a RuntimeObserver) to count the segments that landed
 * where the recording had them.
 */
import type { SegmentPlacement } from '../../alloc/allocator.js';
import type { Reservation } from '../../core/objects.js';
import type { CallOutcome, RuntimeCall, RuntimeObserver } from '../../core/observer.js';
import type { Runtime } from '../../core/runtime.js';
import { Action } from '../read/snapshot.js';
import type { TracePlan } from './trace-plan.js';

/**
 * One device's recorded segment_alloc events, consumed in order: `next` is
 * the index of the next one in the trace (-1: not looked for yet), found as
 * it is asked for, so a run that makes no one-step segment (expandable
 * segments') never scans the trace for them.
 */
interface SegmentQueue {
  readonly trace: TracePlan['devices'][number]['trace'];
  next: number;
}

/** The recorded segments of every device of a plan, handed out as allocators ask for them. */
export class RecordedPlacement implements RuntimeObserver {
  readonly #queues = new Map<number, SegmentQueue>();
  #placed = 0;

  constructor(plan: TracePlan) {
    for (const d of plan.devices) this.#queues.set(d.device, { trace: d.trace, next: -1 });
  }

  /** One-step allocations served at their recorded address so far. */
  get placed(): number {
    return this.#placed;
  }

  /** What an allocator of `device` on `runtime` is given as its context's placement. */
  forDevice(runtime: Runtime, device: number): SegmentPlacement | undefined {
    const q = this.#queues.get(device);
    if (q === undefined) return undefined;
    const g = Math.max(runtime.device(device).minimumGranularity, runtime.vaGranularity);
    const t = q.trace;
    return {
      addressFor: (size: number): number | undefined => {
        const rounded = Math.ceil(size / g) * g;
        if (q.next < 0) q.next = nextSegmentAlloc(t, 0);
        if (q.next >= t.length || t.size[q.next] !== rounded || !(size > 0)) return undefined;
        const address = t.addr[q.next];
        q.next = nextSegmentAlloc(t, q.next + 1);
        return address;
      },
    };
  }

  after(call: RuntimeCall, outcome: CallOutcome): void {
    if (call.op !== 'malloc' || call.depth > 0 || !outcome.ok) return;
    const hint = call.args[2]?.hint;
    if (hint !== undefined && (outcome.result as Reservation).base === hint) this.#placed++;
  }
}

/** The index of the first segment_alloc of `t` at or after `from`; t.length when none. */
function nextSegmentAlloc(t: TracePlan['devices'][number]['trace'], from: number): number {
  let i = from;
  while (i < t.length && t.action[i] !== Action.segment_alloc) i++;
  return i;
}
