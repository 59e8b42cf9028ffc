import type { AllocatorContext, CachingAllocator, SegmentEvent } from '../../src/alloc/allocator.js';
import { AllocatorOutOfMemoryError } from '../../src/alloc/allocator.js';
import { BACKEND_OPERATIONS, type Backend } from '../../src/backend/backend.js';
import { createMachine } from '../../src/backends/sim/machine.js';
import { Runtime } from '../../src/core/runtime.js';
import { BlockState, type DeviceRun, type ReplaySegmentEvent } from '../../src/replay/engine/replay.js';
import type { DevicePlan } from '../../src/replay/engine/trace-plan.js';
import { Action } from '../../src/replay/read/snapshot.js';

/**
 * Note [Recorded addresses]: best fit breaks ties between equal-size blocks
 * by address (N5), so which of two equal segments a request lands in
 * depends on where the driver put them, and the simulator's address space
 * is laid out differently from the driver's. To compare the model with the
 * recording without that difference, the backend here asks the simulator
 * for each new reservation at the address the recording's matching segment
 * had (the k-th segment_alloc for the k-th one-step allocation; for
 * expandable segments, the start of the first range mapped in it), as a
 * hint it takes exactly when that range is free (`exact`). Nothing else changes: the model
 * decides everything, the addresses only order the segments as the
 * driver's did. (The real driver does not honour every such hint, so on
 * the GPU this ordering is not guaranteed: bench/gpu-fidelity.ts.)
 */
export function hintingBackend(inner: Backend, hints: readonly number[]): Backend {
  let next = 0;
  const wrapper: Record<string, unknown> = { kind: inner.kind, pid: inner.pid, devices: inner.devices };
  for (const name of BACKEND_OPERATIONS) {
    const method = (inner[name] as (...a: unknown[]) => unknown).bind(inner);
    wrapper[name] =
      name === 'reserve'
        ? (size: number, alignment: number, hint: number) =>
            // `exact`: the recorded address itself, as the driver chose it (Backend.reserve).
            hint === 0 && next < hints.length
              ? method(size, alignment, hints[next++], true)
              : method(size, alignment, hint)
        : method;
  }
  wrapper.dispose = () => inner.dispose();
  return wrapper as unknown as Backend;
}

/**
 * The recorded addresses that order new reservations (Note [Recorded
 * addresses]): each segment_alloc's, and the first segment_map of each
 * expandable segment (a map outside the `rangeSize` bytes after every
 * earlier first map: a new segment is mapped from its start).
 */
export function recordedReservationHints(plan: DevicePlan, rangeSize: number): number[] {
  const t = plan.trace;
  const out: number[] = [];
  const starts: number[] = [];
  for (let i = 0; i < t.length; i++) {
    if (t.action[i] === Action.segment_alloc) out.push(t.addr[i]);
    if (t.action[i] === Action.segment_map) {
      const a = t.addr[i];
      if (starts.every((s) => a < s || a >= s + rangeSize)) {
        starts.push(a);
        out.push(a);
      }
    }
  }
  return out;
}

/**
 * Replay one device's trace as src/replay does (alloc -> malloc in the block's pool,
 * free_completed -> free, emptyCache() where the plan infers the workload
 * called torch.cuda.empty_cache()), on a runtime of our choosing.
 */
export function replayDevice(
  plan: DevicePlan,
  make: (context: AllocatorContext) => CachingAllocator,
  runtime: Runtime,
): { run: DeviceRun; allocator: CachingAllocator } {
  const segmentEvents: ReplaySegmentEvent[] = [];
  let cursor = -1;
  const allocator = make({
    runtime,
    device: plan.device,
    onSegmentEvent: (e: SegmentEvent) => segmentEvents.push({ ...e, eventIndex: cursor }),
  });
  const address = new Float64Array(plan.blockCount).fill(Number.NaN);
  const state = new Uint8Array(plan.blockCount);
  const allocate = (id: number, size: number, stream: number) => {
    try {
      address[id] = allocator.malloc(size, stream, plan.privatePools.blockPool[id]);
      state[id] = BlockState.live;
    } catch (e) {
      if (!(e instanceof AllocatorOutOfMemoryError)) throw e;
      state[id] = BlockState.failed;
    }
  };
  for (const id of plan.initialBlocks) allocate(id, plan.blockSize[id], plan.blockStream[id]);
  const t = plan.trace;
  let e = 0;
  for (let i = 0; i < t.length; i++) {
    cursor = i;
    if (e < plan.emptyCacheBefore.length && plan.emptyCacheBefore[e] === i) {
      allocator.emptyCache();
      e++;
    }
    const a = t.action[i];
    if (a === Action.alloc) allocate(plan.blockOf[i], t.size[i], t.stream[i]);
    else if (a === Action.free_completed) {
      const id = plan.blockOf[i];
      if (id >= 0 && state[id] === BlockState.live) {
        allocator.free(address[id]);
        state[id] = BlockState.freed;
      }
    }
  }
  const stats = allocator.stats;
  const run: DeviceRun = {
    device: plan.device,
    peakReservedBytes: stats.peakReservedBytes,
    peakAllocatedBytes: stats.peakAllocatedBytes,
    peakRequestedBytes: plan.peakRequestedBytes,
    deviceUsedAtPeakBytes: null,
    peakCapDemandBytes: allocator.peakCapDemandBytes ?? null,
    ratio: null,
    utilization: null,
    ooms: stats.ooms,
    firstOomEvent: -1,
    firstOom: null,
    recordedOoms: [],
    segmentEvents,
    blockAddress: address,
    blockState: state,
  };
  return { run, allocator };
}

/** A runtime on a simulated H200, its reservations ordered by `hints` (Note [Recorded addresses]). */
export function hintedRuntime(hints: readonly number[]): Runtime {
  const machine = createMachine({ devices: ['H200'] });
  return new Runtime(hintingBackend(machine.spawn(), hints), { report: () => {} });
}
