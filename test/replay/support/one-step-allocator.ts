/**
 * The simplest allocator replay can drive, for tests: no cache at all, one
 * core malloc (cuMemAlloc) per block and one mfree (cuMemFree) per free, so
 * every number a replay reports can be worked out by hand.
 */
import {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type AllocatorStats,
  type CachingAllocator,
} from '../../../src/alloc/allocator.js';
import { isVmmError } from '../../../src/core/errors.js';
import type { AllocatorFactory } from '../../../src/replay/engine/allocators.js';

class Stats implements AllocatorStats {
  reservedBytes = 0;
  peakReservedBytes = 0;
  allocatedBytes = 0;
  peakAllocatedBytes = 0;
  requestedBytes = 0;
  peakRequestedBytes = 0;
  liveBlocks = 0;
  ooms = 0;
}

export class OneStepAllocator implements CachingAllocator {
  readonly name = 'one-step';
  readonly stats = new Stats();
  readonly #blocks = new Map<number, { size: number; requested: number; stream: number }>();

  constructor(readonly context: AllocatorContext) {}

  get device(): number {
    return this.context.device;
  }

  malloc(size: number, stream: number): number {
    const { runtime, device } = this.context;
    const g = runtime.device(device).minimumGranularity;
    const rounded = Math.max(g, Math.ceil(size / g) * g);
    let base: number;
    try {
      // Asks the context's placement, as the native model does (Note [Recorded placement]).
      const hint = this.context.placement?.addressFor(rounded);
      base = runtime.malloc(device, rounded, hint === undefined ? {} : { hint }).base;
    } catch (e) {
      if (isVmmError(e) && e.kind === 'out-of-memory') {
        this.stats.ooms++;
        throw new AllocatorOutOfMemoryError(
          size,
          device,
          this.stats.reservedBytes,
          this.stats.allocatedBytes,
        );
      }
      throw e;
    }
    this.#blocks.set(base, { size: rounded, requested: size, stream });
    const s = this.stats;
    s.reservedBytes += rounded;
    s.allocatedBytes += rounded;
    s.requestedBytes += size;
    s.liveBlocks++;
    s.peakReservedBytes = Math.max(s.peakReservedBytes, s.reservedBytes);
    s.peakAllocatedBytes = Math.max(s.peakAllocatedBytes, s.allocatedBytes);
    s.peakRequestedBytes = Math.max(s.peakRequestedBytes, s.requestedBytes);
    this.context.onSegmentEvent?.({ action: 'segment_alloc', address: base, size: rounded, stream });
    return base;
  }

  free(address: number): void {
    const b = this.#blocks.get(address);
    if (b === undefined) throw new Error(`free of 0x${address.toString(16)}, which is not live`);
    this.context.runtime.mfree(address);
    this.#blocks.delete(address);
    const s = this.stats;
    s.reservedBytes -= b.size;
    s.allocatedBytes -= b.size;
    s.requestedBytes -= b.requested;
    s.liveBlocks--;
    this.context.onSegmentEvent?.({ action: 'segment_free', address, size: b.size, stream: b.stream });
  }

  emptyCache(): void {}

  dispose(): void {
    for (const a of [...this.#blocks.keys()]) {
      try {
        this.free(a);
      } catch {
        // dispose never throws; the runtime's own teardown frees what is left
      }
    }
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

export const ONE_STEP: AllocatorFactory = {
  name: 'one-step',
  description: 'one cuMemAlloc per block, no cache (tests only)',
  create: (context) => new OneStepAllocator(context),
};
