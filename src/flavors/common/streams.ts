/** The streams a front end handed out: opaque handles over core's stream ids. */
import type { Runtime } from '../../core/runtime.js';
import { type Box, handleKey } from './args.js';
import type { VendorCodes } from './error-table.js';
import { EventTable } from './events.js';
import { writeOrTakeBack } from './untrusted.js';

/** A stream a front end made: core's id and the device it was made on. */
export interface StreamEntry {
  readonly id: number;
  readonly device: number;
}

/** How a vendor numbers its stream handles: by core's stream id, or by its own count of streams made. */
export type StreamNumbering = 'core-id' | 'count';

/**
 * Note [Special streams]
 * cuda.h's CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) are valid
 * wherever a CUstream is taken. The legacy stream is the NULL stream of the
 * default (legacy) semantics: it waits for every blocking stream and they for
 * it. The per-thread stream is a thread's own default stream, ordered with
 * the legacy one. A simulated process has one thread and runs work on core's
 * stream 0 after everything queued on every stream (SimProcess#submit), which
 * is the legacy semantics; both handles are that stream here, so work on
 * either is at least as ordered as on the driver. Neither can be destroyed
 * (CUDA_ERROR_INVALID_HANDLE, as for the NULL stream). HIP's
 * hipStreamPerThread (2) is the same stream for the same reason, and ACL's
 * default stream is its NULL stream (null, undefined, 0 or 0n).
 *
 * Note [Destroying a busy stream]
 * cuStreamDestroy (and hipStreamDestroy, aclrtDestroyStream) returns at once
 * and the stream goes when its queued work is done; a failure of that work
 * is the work's, not the destroy's. Core runs the work and throws its
 * failure with the stream already gone: that is a success here. A refusal
 * that left the stream in place (a disposed runtime) changed nothing and is
 * thrown on.
 */
export class StreamTable {
  readonly #streams = new Map<bigint, StreamEntry>();
  #made = 0n;

  constructor(
    readonly runtime: Runtime,
    /** The first handle value less one: handles are base + 1, base + 2, ... */
    readonly base: bigint,
    readonly numbering: StreamNumbering,
  ) {}

  /** A new stream on `device`, its handle written to `box`; undefined (the stream gone again) if the box refused it. */
  create(device: number, box: Box<bigint>): bigint | undefined {
    const id = this.runtime.createStream(device);
    this.#made++;
    const h = this.base + (this.numbering === 'core-id' ? BigInt(id) : this.#made);
    if (!writeOrTakeBack(box, h, () => this.runtime.destroyStream(id))) return undefined;
    this.#streams.set(h, { id, device });
    return h;
  }

  /** The stream a handle (a bigint or a number) names, if this table made it and it is live. */
  get(h: unknown): StreamEntry | undefined {
    const key = handleKey(h);
    return key === undefined ? undefined : this.#streams.get(key);
  }

  /** Destroy a stream of this table (Note [Destroying a busy stream]); throws only if it is still there. */
  destroy(h: bigint, s: StreamEntry, discard?: boolean): void {
    try {
      if (discard === undefined) this.runtime.destroyStream(s.id);
      else this.runtime.destroyStream(s.id, { discard });
    } catch (e) {
      if (this.runtime.hasStream(s.id)) throw e;
    }
    this.#streams.delete(h);
  }

  /** Forget a handle whose stream core no longer holds. */
  forget(h: bigint): void {
    this.#streams.delete(h);
  }

  entries(): IterableIterator<[bigint, StreamEntry]> {
    return this.#streams.entries();
  }
}

/** What a vendor's stream and event calls work on: its two tables over the process's runtime. */
export abstract class StreamsAndEvents {
  readonly streams: StreamTable;
  readonly events: EventTable;

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    handles: { readonly streamBase: bigint; readonly eventBase: bigint; readonly numbering: StreamNumbering },
  ) {
    this.streams = new StreamTable(runtime, handles.streamBase, handles.numbering);
    this.events = new EventTable(runtime, handles.eventBase);
  }
}
