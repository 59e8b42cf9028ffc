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
 * A placed allocation is core's own malloc with the recorded address as its
 * hint, so it is an ordinary one-step allocation in every other respect (its
 * mfree is core's). The wrapper is installed under the driver meter, which
 * still counts each as one cuMemAlloc. Where the allocator asks for a size the recording
 * does not have next, it gets an ordinary malloc and the recording waits
 * for it to catch up. Only on the simulator: on a GPU the real cuMemAlloc
 * is the thing measured.
 */
import type { Reservation } from '../core/objects.js';
import type { Runtime } from '../core/runtime.js';
import { Action } from './snapshot.js';
import type { TracePlan } from './trace-plan.js';

export interface Placement {
  /** One-step allocations served at a recorded address so far. */
  readonly placed: number;
  /** Put the Runtime's own malloc and mfree back. */
  restore(): void;
}

/** Serve `runtime`'s one-step allocations at the addresses `plan`'s traces recorded. */
export function placeAtRecordedAddresses(runtime: Runtime, plan: TracePlan): Placement {
  const queues = new Map<number, { addr: number[]; size: number[]; next: number }>();
  for (const d of plan.devices) {
    const q = { addr: [] as number[], size: [] as number[], next: 0 };
    const t = d.trace;
    for (let i = 0; i < t.length; i++) {
      if (t.action[i] !== Action.segment_alloc) continue;
      q.addr.push(t.addr[i]);
      q.size.push(t.size[i]);
    }
    if (q.addr.length > 0) queues.set(d.device, q);
  }
  const rt = runtime;
  const { malloc } = runtime;
  const state = { placed: 0 };
  const own = runtime as unknown as Record<string, unknown>;
  if (queues.size === 0) return { placed: 0, restore: () => {} };

  own.malloc = (device: number, size: number): Reservation => {
    const q = queues.get(device);
    const info = rt.device(device);
    const g = Math.max(info.minimumGranularity, rt.vaGranularity);
    const rounded = Math.ceil(size / g) * g;
    if (q === undefined || q.next >= q.addr.length || q.size[q.next] !== rounded || !(size > 0))
      return malloc.call(rt, device, size);
    const hint = q.addr[q.next++];
    const r = malloc.call(rt, device, size, { hint });
    if (r.base === hint) state.placed++;
    return r;
  };
  return {
    get placed() {
      return state.placed;
    },
    restore: () => {
      delete own.malloc;
    },
  };
}
