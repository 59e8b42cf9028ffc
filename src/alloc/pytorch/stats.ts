import type { AllocatorStats } from '../allocator.js';

/**
 * PyTorch's DeviceStats, the aggregate entries only (N8, N11), plus the
 * driver counters its memory_stats() reports. One object per allocator,
 * changed in place: `allocator.stats` is a live view, so a caller who wants
 * a value at one moment copies it (`{ ...allocator.stats }`).
 */
export class PytorchStats implements AllocatorStats {
  reservedBytes = 0;
  peakReservedBytes = 0;
  allocatedBytes = 0;
  peakAllocatedBytes = 0;
  requestedBytes = 0;
  peakRequestedBytes = 0;
  liveBlocks = 0;
  ooms = 0;
  /** Segments held: one-step allocations (native), or reserved ranges (expandable). */
  segments = 0;
  /** cudaMalloc / map_block calls that succeeded (num_device_alloc). */
  deviceAllocs = 0;
  /** cudaFree / unmap_block calls that gave memory back (num_device_free). */
  deviceFrees = 0;
  /** Allocations retried after freeing the cache (num_alloc_retries). */
  allocRetries = 0;

  addReserved(n: number): void {
    this.reservedBytes += n;
    if (this.reservedBytes > this.peakReservedBytes) this.peakReservedBytes = this.reservedBytes;
  }

  addAllocated(size: number, requested: number): void {
    this.allocatedBytes += size;
    if (this.allocatedBytes > this.peakAllocatedBytes) this.peakAllocatedBytes = this.allocatedBytes;
    this.requestedBytes += requested;
    if (this.requestedBytes > this.peakRequestedBytes) this.peakRequestedBytes = this.requestedBytes;
    this.liveBlocks++;
  }

  removeAllocated(size: number, requested: number): void {
    this.allocatedBytes -= size;
    this.requestedBytes -= requested;
    this.liveBlocks--;
  }
}
