/** What cuCtxDestroy and cuDevicePrimaryCtxReset release of a context (Note [Destroying a primary context]). */
import type { Runtime } from '../../core/runtime.js';
import type { HostBuffers } from '../common/host-buffers.js';
import type { ContextObjects, CudaContexts } from './contexts.js';
import type { CudaStreams } from './streams.js';

export class ContextTeardown {
  constructor(
    readonly runtime: Runtime,
    readonly contexts: CudaContexts,
    readonly streams: CudaStreams,
    readonly hostBuffers: HostBuffers,
  ) {}

  /**
   * Release a context's streams, events, cuMemAlloc memory and page-locked
   * host buffers through core, after the device's work has finished, and
   * empty its books. Quiet: the driver releases them whatever their queued
   * work did. A primary context's events answer CUDA_ERROR_INVALID_CONTEXT
   * after (`primary`: primaryDestroy.resetOldEvent*), a created one's
   * CUDA_ERROR_CONTEXT_IS_DESTROYED as an explicitly destroyed event does.
   */
  release(objects: ContextObjects, device: number, primary = false): void {
    const runtime = this.runtime;
    try {
      runtime.synchronize(device);
    } catch {
      // Queued work that failed is the work's failure, not the destroy's, and no internal error
      // (Note [Destroying a busy stream]); the objects go all the same.
    }
    for (const e of objects.events) this.streams.dropOwnedEvent(e, primary);
    for (const s of objects.streams) this.streams.dropOwned(s);
    for (const va of objects.allocations) runtime.quietly(() => runtime.mfree(va));
    for (const b of objects.hostBuffers) this.hostBuffers.free(b);
    // The books themselves go with the context: cuCtxDestroy removes it, resetPrimary gives it empty ones.
  }

  /** cuDevicePrimaryCtxReset, or the last release: device `d`'s primary context destroyed with what it owns. */
  resetPrimary(d: number): void {
    this.release(this.contexts.primaryObjects(d), d, true);
    this.contexts.resetPrimary(d);
  }
}
