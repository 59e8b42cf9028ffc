/** The options and argument shapes of core's Runtime (runtime.ts). */
import type { RuntimeObserver } from './observer.js';
import type { Tracer } from './trace.js';
import type { Access } from './types.js';

export interface RuntimeOptions {
  /** Record every core and backend operation as a span (see trace.ts). */
  readonly tracer?: Tracer;
  /** Where dispose() and finalisers report problems instead of throwing. */
  readonly report?: (message: string, error?: unknown) => void;
  /** Told of every operation, before and after it runs (Note [Runtime observers], observer.ts). */
  readonly observers?: readonly RuntimeObserver[];
}

export interface AccessDescriptor {
  readonly device: number;
  readonly access: Access;
}

export interface ReserveOptions {
  readonly alignment?: number;
  /** Preferred base address; honoured when the range is free as the driver judges (Backend.reserve). */
  readonly hint?: number;
  /** The hint's range itself whenever that is free address space (Backend.reserve's `exact`). */
  readonly exact?: boolean;
}

export interface MallocOptions {
  /** Preferred base address; honoured when free, as reserve's hint. */
  readonly hint?: number;
  /**
   * HandleType bits the memory is created with, for a backend that exports
   * only memory created exportable (the CUDA driver) when the range is later
   * shared with exportMalloc (Note [One-step sharing]). Default 0.
   */
  readonly handleTypes?: number;
}

/** What the importer of a descriptor knows beside it (Note [Foreign memory sizes]). */
export interface ImportOptions {
  /** Bytes of the memory behind the descriptor, as the exporter said out of band. */
  readonly size?: number;
}
