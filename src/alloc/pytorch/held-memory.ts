import type { Runtime } from '../../core/runtime.js';
import type { SegmentEvent } from '../allocator.js';
import type { PytorchStats } from './stats.js';

/**
 * What one PyTorch allocator holds from the driver, as both its paths (the
 * native segments, the expandable ones) count it: the bytes held (PyTorch's
 * total_allocated_memory, which the cap is checked against, Note [Memory
 * limit]), the stats' reserved bytes and driver counters, and a segment
 * event for each change, sent after the counts are updated.
 */
export class HeldMemory {
  /** Bytes held from the driver (PyTorch's total_allocated_memory). */
  bytes = 0;

  constructor(
    readonly runtime: Runtime,
    readonly device: number,
    readonly stats: PytorchStats,
    readonly onSegmentEvent: ((event: SegmentEvent) => void) | undefined,
  ) {}

  emit(action: SegmentEvent['action'], address: number, size: number, stream: number): void {
    this.onSegmentEvent?.({ action, address, size, stream });
  }
}
