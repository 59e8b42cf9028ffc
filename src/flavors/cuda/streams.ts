/** CUDA streams and events over core's, with the driver's rules in front. */
import type { Runtime } from '../../core/runtime.js';
import { type Box, handleKey, isBox, isNull, probeBox, toInt } from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import { StreamsAndEvents } from '../common/streams.js';
import * as C from './constants.js';
import type { CudaContexts } from './contexts.js';
import type { CUevent, CUstream } from './handle-types.js';

const STREAM_BASE = 0x5_0000n;
/** Events: opaque handles, never reused in a process. */
const EVENT_BASE = 0xe_0000_0000n;
const EVENT_FLAG_BITS = C.CU_EVENT_BLOCKING_SYNC | C.CU_EVENT_DISABLE_TIMING | C.CU_EVENT_INTERPROCESS;

/**
 * Note [CUDA events]
 * Events are core's (Note [Events] in src/backend/backend.ts): a record
 * marks the work queued so far on a stream, cuEventQuery answers
 * CUDA_SUCCESS once it has run (or when the event was never recorded) and
 * CUDA_ERROR_NOT_READY (600) before, which is "not yet", not a failure;
 * cuStreamWaitEvent orders later work on a stream after it. The flavor keeps
 * what the driver's rules need: the creation flags (an INTERPROCESS event
 * must also DISABLE_TIMING) and whether an event was ever recorded
 * (cuEventElapsedTime answers CUDA_ERROR_INVALID_HANDLE otherwise, as for
 * an event made with CU_EVENT_DISABLE_TIMING). Any other event is a timing
 * event of the backend (they cost more to record, as on the driver), so
 * over the real driver the time is the driver's; the simulator models no
 * time: there two completed events are 0 ms apart. Event and stream of
 * cuEventRecord must be of one context, else CUDA_ERROR_INVALID_HANDLE: two
 * contexts on one device are two (a created context beside the primary
 * one), so each stream and event keeps the context current at its creation;
 * cuStreamWaitEvent takes an event of any context or device.
 *
 * Note [Copies on another device's stream]
 * CUDA's programming guide (Stream and Event Behavior) says a memory copy
 * issued to a stream not associated with the current device succeeds, where
 * a kernel launch fails: an asynchronous copy or set on a stream of another
 * device (or of another context) runs there, as the stream's work, so it is
 * done by the stream's device, as HIP's copies are (hip/copies.ts). The
 * conformance case settle.otherContextStream asks the same question on one
 * device, and the H200 answers it so: on a created context's stream, with
 * the primary one current, copies and sets of every direction succeed and
 * land, and so do waits on either context's event; a record there of the
 * primary's event is CUDA_ERROR_INVALID_HANDLE, as the rule above says. A
 * stream of another device needs two GPUs: part (c) of the two-GPU sequence
 * (conformance/gpu/sequences.ts) asks it, and run-all.sh records it on a
 * machine with two; no such run has been made yet.
 */
export class CudaStreams extends StreamsAndEvents {
  /** The context each live stream and event was made in (Note [CUDA events]). */
  readonly #streamContexts = new Map<bigint, bigint>();
  readonly #eventContexts = new Map<number, bigint>();
  /** Events that went with their primary context (Note [Destroying a primary context]): CUDA_ERROR_INVALID_CONTEXT after. */
  readonly #contextGone = new Set<number>();
  /** Core ids of the live streams made CU_STREAM_NON_BLOCKING (the legacy stream does not wait for them). */
  readonly #nonBlocking = new Set<number>();

  constructor(
    runtime: Runtime,
    codes: VendorCodes,
    readonly contexts: CudaContexts,
  ) {
    super(runtime, codes, { streamBase: STREAM_BASE, eventBase: EVENT_BASE, numbering: 'core-id' });
  }

  /** A stream handle as core's stream id (0 for the default streams, Note [Special streams]), or -1 if unknown. */
  stream(h: CUstream): number {
    if (isNull(h)) return 0;
    if (h === C.CU_STREAM_LEGACY || h === C.CU_STREAM_PER_THREAD || h === 1 || h === 2) return 0;
    return this.streams.get(h)?.id ?? -1;
  }

  /**
   * The device whose work a copy or set on `hStream` is: the stream's own,
   * which need not be the current context's (Note [Copies on another
   * device's stream]); the NULL and special streams are the current one's.
   */
  deviceOf(hStream: CUstream): number {
    const s = this.stream(hStream) > 0 ? this.streams.get(hStream) : undefined;
    return s?.device ?? this.contexts.device;
  }

  create(phStream: Box<bigint>, flags: number): number {
    const f = toInt(flags);
    if (!isBox(phStream) || (f !== C.CU_STREAM_DEFAULT && f !== C.CU_STREAM_NON_BLOCKING)) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    try {
      const h = this.streams.create(this.contexts.device, phStream);
      if (h === undefined) return C.CUDA_ERROR_INVALID_VALUE;
      this.#streamContexts.set(h, this.contexts.handle);
      if (f === C.CU_STREAM_NON_BLOCKING) this.#nonBlocking.add(this.streams.get(h)?.id ?? -1);
      this.contexts.owner()?.streams.add(h);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  synchronize(hStream: CUstream): number {
    const stream = this.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.codes.run(() => this.finish(stream));
  }

  /**
   * Run what core's stream `stream` has queued, as the driver orders work
   * after it: a created stream's own, or for the legacy stream (0) every
   * stream of the current device. Throws the first failure of that work.
   */
  finish(stream: number): void {
    if (stream === 0) this.runtime.synchronize(this.contexts.device);
    else this.runtime.synchronizeStream(stream);
  }

  /** Gone even when its queued work failed (Note [Destroying a busy stream]). */
  destroy(hStream: CUstream): number {
    if (this.stream(hStream) <= 0) return C.CUDA_ERROR_INVALID_HANDLE;
    // A live stream of this process: its key is a bigint.
    const h = handleKey(hStream) as bigint;
    const s = this.streams.get(h);
    if (s === undefined) return C.CUDA_ERROR_INVALID_HANDLE;
    try {
      this.streams.destroy(h, s);
    } catch (e) {
      return this.codes.code(e);
    }
    this.#streamContexts.delete(h);
    this.#nonBlocking.delete(s.id);
    for (const c of this.contexts.allOwners()) c.streams.delete(h);
    return C.CUDA_SUCCESS;
  }

  /**
   * cuStreamQuery: CUDA_SUCCESS once all work queued on the stream has run,
   * else CUDA_ERROR_NOT_READY; asked of core through an event recorded on it
   * now and dropped at once (core keeps no per-stream "done" bit).
   */
  queryStream(hStream: CUstream): number {
    const stream = this.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    let done = false;
    const code = this.codes.run(() => {
      const device = stream === 0 ? this.contexts.device : (this.runtime.streamDevice(stream) ?? -1);
      const probe = this.runtime.createEvent(device);
      try {
        this.runtime.recordEvent(probe, stream);
        done = this.runtime.queryEvent(probe);
      } finally {
        this.runtime.destroyEvent(probe);
      }
    });
    return code !== C.CUDA_SUCCESS || done ? code : C.CUDA_ERROR_NOT_READY;
  }

  /** Whether core's stream `stream` was made CU_STREAM_NON_BLOCKING. */
  nonBlocking(stream: number): boolean {
    return this.#nonBlocking.has(stream);
  }

  /** Destroy a stream a created context owned, as cuCtxDestroy does: quietly. */
  dropOwned(h: bigint): void {
    const s = this.streams.get(h);
    this.streams.forget(h);
    this.#streamContexts.delete(h);
    if (s !== undefined) this.#nonBlocking.delete(s.id);
    if (s !== undefined) this.runtime.quietly(() => this.runtime.destroyStream(s.id));
  }

  /** Destroy an event a created context owned, as cuCtxDestroy does: quietly. */
  dropOwnedEvent(id: number, contextGone = false): void {
    this.#eventContexts.delete(id);
    if (contextGone) this.#contextGone.add(id);
    this.runtime.quietly(() => this.events.destroy(id));
  }

  // --- events (Note [CUDA events]) ---

  createEvent(phEvent: Box<bigint>, flags: number): number {
    const f = toInt(flags);
    if (!isBox(phEvent) || !(f >= 0) || (f & ~EVENT_FLAG_BITS) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    // An interprocess event must not time (cuEventCreate's documentation).
    if ((f & C.CU_EVENT_INTERPROCESS) !== 0 && (f & C.CU_EVENT_DISABLE_TIMING) === 0)
      return C.CUDA_ERROR_INVALID_VALUE;
    if (!probeBox(phEvent)) return C.CUDA_ERROR_INVALID_VALUE;
    try {
      const timing = { timing: (f & C.CU_EVENT_DISABLE_TIMING) === 0 };
      const id = this.events.create(this.contexts.device, f, timing, phEvent);
      if (id < 0) return C.CUDA_ERROR_INVALID_VALUE;
      this.#eventContexts.set(id, this.contexts.handle);
      this.contexts.owner()?.events.add(id);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /** cuEventRecord(WithFlags): CU_EVENT_RECORD_EXTERNAL belongs under stream capture. */
  record(hEvent: CUevent, hStream: CUstream, flags: number): number {
    const f = toInt(flags);
    if (f !== C.CU_EVENT_RECORD_DEFAULT && f !== C.CU_EVENT_RECORD_EXTERNAL)
      return C.CUDA_ERROR_INVALID_VALUE;
    const id = this.#event(hEvent);
    const stream = this.stream(hStream);
    if (id < 0) return badEvent(id);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    // Event and stream of one context (the NULL stream: the current one's), not just one device.
    const context = stream === 0 ? this.contexts.handle : this.#streamContexts.get(handleKey(hStream) ?? -1n);
    if (context !== this.#eventContexts.get(id)) return C.CUDA_ERROR_INVALID_HANDLE;
    // An external record belongs in a graph being captured; outside capture the H200 answers ILLEGAL_STATE.
    if (f === C.CU_EVENT_RECORD_EXTERNAL && this.runtime.captures.status(stream) === 'none')
      return C.CUDA_ERROR_ILLEGAL_STATE;
    const result = this.codes.run(() =>
      this.runtime.recordEvent(id, stream, f === C.CU_EVENT_RECORD_EXTERNAL),
    );
    if (result === C.CUDA_SUCCESS) this.events.state(id)!.recorded = true;
    return result;
  }

  /** CUDA_SUCCESS when the recorded work is done (or nothing was recorded), CUDA_ERROR_NOT_READY while not. */
  query(hEvent: CUevent): number {
    const id = this.#event(hEvent);
    if (id < 0) return badEvent(id);
    if (this.#faulted(id)) return C.CUDA_ERROR_LAUNCH_FAILED;
    try {
      return this.runtime.queryEvent(id) ? C.CUDA_SUCCESS : C.CUDA_ERROR_NOT_READY;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  synchronizeEvent(hEvent: CUevent): number {
    const id = this.#event(hEvent);
    if (id < 0) return badEvent(id);
    if (this.#faulted(id)) return C.CUDA_ERROR_LAUNCH_FAILED;
    return this.codes.run(() => this.runtime.synchronizeEvent(id));
  }

  /** Destroying an event whose work is still queued is allowed: the work is not affected. */
  destroyEvent(hEvent: CUevent): number {
    const id = this.#event(hEvent);
    if (id < 0) return badEvent(id);
    if (this.#faulted(id)) return C.CUDA_ERROR_LAUNCH_FAILED;
    const result = this.codes.run(() => this.events.destroy(id));
    if (result !== C.CUDA_SUCCESS) return result;
    this.#eventContexts.delete(id);
    for (const c of this.contexts.allOwners()) c.events.delete(id);
    return result;
  }

  /** The time between two completed timing events: the driver's over the real backend, 0 ms on the simulator. */
  elapsedTime(pMilliseconds: Box<number>, hStart: CUevent, hEnd: CUevent): number {
    // A NULL pMilliseconds is INVALID_HANDLE on the H200, even between two good events (event.elapsedTime).
    if (!isBox(pMilliseconds)) return C.CUDA_ERROR_INVALID_HANDLE;
    const start = this.#event(hStart);
    const end = this.#event(hEnd);
    if (start < 0 || end < 0) return badEvent(Math.min(start, end));
    if (this.#faulted(start) || this.#faulted(end)) return C.CUDA_ERROR_LAUNCH_FAILED;
    return this.events.elapsedTime(pMilliseconds, start, end, this.codes, {
      disableTiming: C.CU_EVENT_DISABLE_TIMING,
      // Untimed or unrecorded events are invalid handles on the H200 (event.elapsedTime).
      notTimed: C.CUDA_ERROR_INVALID_HANDLE,
      notReady: C.CUDA_ERROR_NOT_READY,
    });
  }

  /** Work queued on hStream from now on waits for hEvent's recorded work (an event of any context). */
  waitEvent(hStream: CUstream, hEvent: CUevent, flags: number): number {
    const stream = this.stream(hStream);
    const id = this.#event(hEvent);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    if (id < 0) return badEvent(id);
    if (this.#faulted(id)) return C.CUDA_ERROR_LAUNCH_FAILED;
    const f = toInt(flags);
    if (f !== C.CU_EVENT_WAIT_DEFAULT && f !== C.CU_EVENT_WAIT_EXTERNAL) return C.CUDA_ERROR_INVALID_VALUE;
    // An external wait belongs in a graph being captured; outside capture the H200 answers ILLEGAL_STATE.
    if (f === C.CU_EVENT_WAIT_EXTERNAL && this.runtime.captures.status(stream) === 'none')
      return C.CUDA_ERROR_ILLEGAL_STATE;
    return this.codes.run(() => this.runtime.streamWaitEvent(stream, id));
  }

  /** CUDA_ERROR_LAUNCH_FAILED when `hStream`'s device faulted, else CUDA_SUCCESS (Note [Faulted devices]). */
  faultCode(hStream: CUstream): number {
    return this.contexts.faulted(this.deviceOf(hStream)) ? C.CUDA_ERROR_LAUNCH_FAILED : C.CUDA_SUCCESS;
  }

  /** Whether live event `id`'s device faulted: its calls answer CUDA_ERROR_LAUNCH_FAILED (Note [Faulted devices]). */
  #faulted(id: number): boolean {
    return this.contexts.faulted(this.runtime.eventDevice(id) ?? -1);
  }

  /**
   * An event handle (a bigint or a number) as core's event id; -1 if it names
   * no live event of this process, -2 if it names one this process destroyed.
   */
  #event(h: CUevent): number {
    const live = this.events.idOf(h);
    if (live > 0) return live;
    const id = this.events.named(h);
    if (id > 0 && this.#contextGone.has(id)) return -3;
    return id > 0 && this.runtime.eventDestroyed(id) ? -2 : -1;
  }
}

/**
 * What a call answers for an event #event refused. The H200 answers
 * CUDA_ERROR_CONTEXT_IS_DESTROYED to every call given a destroyed event
 * (event.destroyedHandle, and settle.destroyedEvent.* for the other ten:
 * it reads the context through the freed event); one that went with its
 * primary context CUDA_ERROR_INVALID_CONTEXT (primaryDestroy.resetOldEvent*:
 * a query and a destroy after cuDevicePrimaryCtxReset); a value that was never an
 * event is CUDA_ERROR_INVALID_HANDLE.
 */
function badEvent(id: number): number {
  if (id === -3) return C.CUDA_ERROR_INVALID_CONTEXT;
  return id === -2 ? C.CUDA_ERROR_CONTEXT_IS_DESTROYED : C.CUDA_ERROR_INVALID_HANDLE;
}
