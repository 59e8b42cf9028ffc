import type { Runtime } from '../core/runtime.js';

/**
 * The interface every caching allocator in this folder implements, and the
 * one replay drives: PyTorch's allocator as its memory trace sees it. An
 * allocator serves one device of one Runtime and is built only on core's
 * public API, so the same object runs on the simulator and on a real GPU.
 */
export interface CachingAllocator extends Disposable {
  /** The name replay and reports show ('pytorch-native', 'pytorch-expandable', 'vmmkit'). */
  readonly name: string;
  /** The device ordinal this allocator serves. */
  readonly device: number;
  /**
   * Allocate `size` bytes (the caller's unrounded request) for `stream`.
   * Returns the block's device address. Throws AllocatorOutOfMemoryError
   * when the device cannot hold it after the allocator's own retries (its
   * state is then as it was before the call).
   */
  malloc(size: number, stream: number): number;
  /** Free the block at `address` (PyTorch's free_completed: reusable from now on). */
  free(address: number): void;
  /** PyTorch's empty_cache(): give every cached, unused byte back to the driver. */
  emptyCache(): void;
  /** Counters, current and peak, kept as PyTorch keeps its memory stats. */
  readonly stats: AllocatorStats;
  /** Everything held goes back to the driver. Never throws. */
  dispose(): void;
}

export interface AllocatorStats {
  /** Bytes of physical memory held from the driver (PyTorch's reserved_bytes). */
  readonly reservedBytes: number;
  readonly peakReservedBytes: number;
  /** Bytes of blocks handed out, rounded as the allocator rounds (PyTorch's allocated_bytes). */
  readonly allocatedBytes: number;
  readonly peakAllocatedBytes: number;
  /** Bytes the callers asked for, unrounded (PyTorch's requested_bytes). */
  readonly requestedBytes: number;
  readonly peakRequestedBytes: number;
  /** Live blocks handed out. */
  readonly liveBlocks: number;
  /** Times malloc threw AllocatorOutOfMemoryError. */
  readonly ooms: number;
}

/**
 * What an allocator did to its memory, in the actions of PyTorch's trace
 * (docs/pytorch-allocators.md, T2): segment_alloc / segment_free for one-step segments,
 * segment_map / segment_unmap for pages of a reserved range.
 */
export interface SegmentEvent {
  readonly action: 'segment_alloc' | 'segment_free' | 'segment_map' | 'segment_unmap';
  readonly address: number;
  readonly size: number;
  readonly stream: number;
}

/** What every allocator's constructor takes, beside its own settings. */
export interface AllocatorContext {
  readonly runtime: Runtime;
  readonly device: number;
  /** Told of every segment event, in order (replay compares them with the recorded ones). */
  readonly onSegmentEvent?: (event: SegmentEvent) => void;
}

/** malloc could not be served: PyTorch's OutOfMemoryError. */
export class AllocatorOutOfMemoryError extends Error {
  override readonly name = 'AllocatorOutOfMemoryError';
  constructor(
    readonly requestedBytes: number,
    readonly device: number,
    readonly reservedBytes: number,
    readonly allocatedBytes: number,
    message = `out of memory: tried to allocate ${requestedBytes} bytes on device ${device} (${reservedBytes} reserved, ${allocatedBytes} allocated)`,
  ) {
    super(message);
  }
}
