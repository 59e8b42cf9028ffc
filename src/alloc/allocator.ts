// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
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
   * state is then as it was before the call). `pool` names the memory pool
   * the request is routed to: 0 or absent, the default pool; a positive
   * number, a CUDA graph's or MemPool's private pool (the PyTorch models'
   * Note [Private pools]; replay/private-pools.ts infers it from a trace).
   * An allocator without private pools may ignore it.
   */
  malloc(size: number, stream: number, pool?: number): number;
  /** Free the block at `address` (PyTorch's free_completed: reusable from now on). */
  free(address: number): void;
  /** PyTorch's empty_cache(): give every cached, unused byte back to the driver. */
  emptyCache(): void;
  /** Counters, current and peak, kept as PyTorch keeps its memory stats. */
  readonly stats: AllocatorStats;
  /**
   * The most a request ever asked a cap to allow: reserved bytes plus the
   * growth it wanted, at each check, passed or not, and whether a cap was
   * set or not (Note [A run the cap never touched]). A record of what was
   * asked, kept apart from the state: a call that fails and changes nothing
   * may still raise it. Absent where the allocator checks no cap.
   */
  readonly peakCapDemandBytes?: number;
  /** Everything held goes back to the driver. Never throws. */
  dispose(): void;
  /**
   * Rebuild the state the recorded allocator was in before a trace's first
   * event (a snapshot that starts mid-run, replay/start-state.ts): its
   * segments, the pages mapped in them, and the blocks live and free in
   * them, as if this allocator had made them. Only on a fresh allocator (no
   * malloc yet). Returns this allocator's address of each live block of
   * `state` (blockId >= 0), in the order they appear (segments in order,
   * blocks in order); undefined when this allocator cannot hold that state
   * (another kind of allocator made it), in which case nothing changed and
   * the caller allocates the live blocks instead. All or nothing: on a
   * failure nothing is left held and the error is thrown. Optional: an
   * allocator without it gets its live blocks allocated one by one.
   */
  restore?(state: StartState): Float64Array | undefined;
}

/**
 * A recorded caching allocator's state at one moment, per device (what
 * replay/start-state.ts rebuilds for the first event of a mid-run trace).
 */
export interface StartState {
  readonly device: number;
  /** In address order. */
  readonly segments: readonly StartSegment[];
}

/** One segment: a one-step allocation (native), or an expandable segment's reserved range. */
export interface StartSegment {
  /** The recorded address: the segment's (native) or the reserved range's base (expandable). */
  readonly address: number;
  /** Bytes: the segment's (native) or the reserved range's (expandable). */
  readonly size: number;
  readonly stream: number;
  readonly pool: 'small' | 'large';
  readonly expandable: boolean;
  /** The ranges backed by memory, in address order: the whole segment (native), the mapped pages (expandable). */
  readonly mapped: readonly { readonly address: number; readonly size: number }[];
  /** Blocks tiling the mapped ranges, in address order. */
  readonly blocks: readonly StartBlock[];
}

export interface StartBlock {
  readonly address: number;
  /** The block's size as the allocator rounded it. */
  readonly size: number;
  /** The caller's request (0 for a free block). */
  readonly requestedSize: number;
  /** The replay plan's block id of a live block; -1 for a free one. */
  readonly blockId: number;
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

/** The address to ask the driver for, for the next one-step segment of `size` bytes (undefined: any). */
export interface SegmentPlacement {
  addressFor(size: number): number | undefined;
}

/** What every allocator's constructor takes, beside its own settings. */
export interface AllocatorContext {
  readonly runtime: Runtime;
  readonly device: number;
  /** Told of every segment event, in order (replay compares them with the recorded ones). */
  readonly onSegmentEvent?: (event: SegmentEvent) => void;
  /**
   * Where one-step segments go: an allocator that makes them (cudaMalloc's
   * segments) asks for the next one's address and passes it to core's
   * malloc as the hint (replay's Note [Recorded placement]). Absent: the
   * driver chooses.
   */
  readonly placement?: SegmentPlacement;
  /**
   * Bytes the allocator may reserve on its device (the cap
   * torch.cuda.set_per_process_memory_fraction sets, as bytes); absent: no
   * cap but the device's own memory.
   */
  readonly memoryLimit?: number;
}

/** What an allocator held unused when a malloc failed: the numbers an OOM message needs. */
export interface FreeMemory {
  /** Bytes held from the driver that no live block uses (cached; under expandable segments, on mapped pages). */
  readonly freeBytes: number;
  /** How many separate pieces those bytes are in. */
  readonly freePieces: number;
  /** The largest piece. */
  readonly largestFreeBytes: number;
}

// The allocators' errors live in errors.ts; AllocatorOutOfMemoryError is re-exported here, where it was.
export { AllocatorOutOfMemoryError } from './errors.js';
