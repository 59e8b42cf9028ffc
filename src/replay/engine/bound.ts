/**
 * A lower bound on the peak reserved bytes of any allocator that serves a
 * trace on 2 MiB pages: how much room is left below an allocator's peak,
 * whatever the allocator.
 *
 * Note [Page bound]: the claim is about an allocator that (a) serves every
 * request of the trace, the trace's own recorded OOM requests included (Note
 * [Recorded OOMs]: replay asks for them, and a run that succeeds must serve
 * them), keeping each block from its alloc to its free_completed as replay
 * does; (b) gives each block its own bytes, starting at a multiple of 512
 * (PyTorch's kMinBlockSize, N1: every block PyTorch hands out is 512-byte
 * aligned, and programs rely on it); (c) backs every byte of a live block
 * with device memory mapped in whole pages of 2 MiB (the H200's granularity,
 * and every VMM allocator's unit), each device with its own. Then, at every
 * moment t on a device:
 *
 *   Cut the address space into 512-byte slots. A block of s bytes starting
 *   at a slot boundary covers ceil(s / 512) slots. Two live blocks share no
 *   slot: the later one in address order starts at a slot boundary at or
 *   after the earlier one's end, so its first slot follows the earlier one's
 *   last. So the live blocks cover S(t) = 512 * sum ceil(s_i / 512) bytes of
 *   distinct slots, all of them mapped. Mapped memory is whole pages, and a
 *   slot lies inside one page (512 divides 2 MiB), so at least
 *   ceil(S(t) / 2 MiB) pages are mapped at t.
 *
 * The allocator's reserved bytes at t are at least its mapped bytes, so its
 * peak on the device is at least max_t ceil(S(t) / 2 MiB) * 2 MiB, and its
 * peak over the trace (replay's peakReservedBytes: the sum of each device's
 * own peak) at least the sum of these. No allocator, PyTorch's or ours,
 * with expandable segments or stitching or remapping, can go below it;
 * what it leaves out is only what packing over time costs (a page pinned by
 * a live block while its other slots are free), which no per-moment count
 * can see. A served recorded OOM request counts as live at its event only.
 *
 * What is not assumed: that blocks of different streams, or of PyTorch's
 * small and large pools, stay on separate pages. PyTorch's allocators and
 * vmmkit's keep streams apart, and a bound for such allocators would add at
 * most one page per extra stream per device; an allocator that shares pages
 * between streams is possible, so the bound does not claim it.
 */
import { ReplayError } from '../errors.js';
import { Action } from '../read/snapshot.js';
import type { DevicePlan, TracePlan } from './trace-plan.js';

const BOUND_PAGE_BYTES = 2 * 1024 * 1024;
/** PyTorch's kMinBlockSize (N1): every block starts at a multiple of it. */
const BOUND_ALIGNMENT = 512;

export interface DeviceBound {
  readonly device: number;
  /** Whole pages at the moment the live blocks' slots peak, in bytes. */
  readonly peakBytes: number;
  /** The live blocks' slot bytes (S(t) of Note [Page bound]) at that moment. */
  readonly liveSlotBytes: number;
  /** The trace event of that moment (-1: before the first event, the blocks live at the start). */
  readonly event: number;
}

export interface MemoryBound {
  /** The sum over devices of each device's bound: no allocator's peakReservedBytes is below it. */
  readonly peakBytes: number;
  readonly pageBytes: number;
  readonly alignment: number;
  readonly devices: readonly DeviceBound[];
}

export interface BoundOptions {
  readonly pageBytes?: number;
  readonly alignment?: number;
}

/** The page bound of a planned trace (Note [Page bound]). */
export function memoryBound(plan: TracePlan, options: BoundOptions = {}): MemoryBound {
  const pageBytes = options.pageBytes ?? BOUND_PAGE_BYTES;
  const alignment = options.alignment ?? BOUND_ALIGNMENT;
  if (
    !(
      Number.isSafeInteger(pageBytes) &&
      Number.isSafeInteger(alignment) &&
      alignment > 0 &&
      pageBytes % alignment === 0
    )
  )
    throw new ReplayError(`the page (${pageBytes} B) must be a whole number of ${alignment}-byte slots`);
  const devices = plan.devices
    .filter((d) => d.trace.length > 0 || d.initialBlocks.length > 0)
    .map((d) => deviceBound(d, pageBytes, alignment));
  return { peakBytes: devices.reduce((s, d) => s + d.peakBytes, 0), pageBytes, alignment, devices };
}

function deviceBound(d: DevicePlan, pageBytes: number, alignment: number): DeviceBound {
  const slots = (bytes: number) => Math.ceil(bytes / alignment) * alignment;
  const live = new Uint8Array(d.blockCount);
  let held = 0;
  for (const id of d.initialBlocks) {
    live[id] = 1;
    held += slots(d.blockSize[id]);
  }
  let peak = held;
  let at = -1;
  const { action, size } = d.trace;
  for (let i = 0; i < d.trace.length; i++) {
    const a = action[i];
    if (a === Action.alloc) {
      const id = d.blockOf[i];
      if (id < 0 || live[id] === 1) continue;
      live[id] = 1;
      held += slots(d.blockSize[id]);
      if (held > peak) {
        peak = held;
        at = i;
      }
    } else if (a === Action.free_completed) {
      const id = d.blockOf[i];
      if (id < 0 || live[id] !== 1) continue;
      live[id] = 2;
      held -= slots(d.blockSize[id]);
    } else if (a === Action.oom && held + slots(size[i]) > peak) {
      // Served, the request is live at its event only (replay frees it at once).
      peak = held + slots(size[i]);
      at = i;
    }
  }
  return {
    device: d.device,
    peakBytes: Math.ceil(peak / pageBytes) * pageBytes,
    liveSlotBytes: peak,
    event: at,
  };
}
