/** HIP streams and events over core's, with clr's rules in front (hip_stream.cpp, hip_event.cpp). */
import type { Runtime } from '../../core/runtime.js';
import { type Box, handleKey, isBox, isNull, probeBox, toInt } from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import { type StreamEntry, StreamsAndEvents } from '../common/streams.js';
import * as C from './constants.js';
import type { HipHandle } from './structs.js';
import type { HipThread } from './thread.js';

/** Stream handles are opaque; these are deterministic per process. */
const STREAM_BASE = 0x6_0000n;
/** hipEvent_t handles: opaque, never reused in a process. */
const HIP_EVENT_BASE = 0x7e_0000_0000n;
const HIP_EVENT_RELEASE_BITS =
  C.hipEventReleaseToDevice | C.hipEventReleaseToSystem | C.hipEventDisableSystemFence;
const HIP_EVENT_FLAG_BITS =
  C.hipEventBlockingSync | C.hipEventDisableTiming | C.hipEventInterprocess | HIP_EVENT_RELEASE_BITS;

/**
 * Note [HIP events]
 * Events are core's (Note [Events] in src/backend/backend.ts), with clr's
 * rules in front (hip_event.cpp): the creation flags; hipEventRecord on a
 * stream of another device is hipErrorInvalidResourceHandle (400); NULL
 * events are hipErrorInvalidHandle (400), and a destroyed one given to
 * hipEventDestroy again is hipErrorContextIsDestroyed (709), as clr's event
 * set answers (other calls on a destroyed event dereference freed memory
 * in clr; here they answer hipErrorInvalidHandle). hipEventQuery answers
 * hipErrorNotReady (600) while the recorded work has not run: "not yet", not
 * a failure. hipEventElapsedTime keeps clr's order (NULL ms, NULL events,
 * different devices, then disabled timing, never recorded, not complete);
 * an event made without hipEventDisableTiming is a timing event of the
 * backend, so over a real driver the time is the driver's; the simulator
 * models no time, so there two completed events are 0 ms apart.
 */
export class HipStreams extends StreamsAndEvents {
  constructor(
    runtime: Runtime,
    codes: VendorCodes,
    readonly thread: HipThread,
  ) {
    super(runtime, codes, { streamBase: STREAM_BASE, eventBase: HIP_EVENT_BASE, numbering: 'core-id' });
  }

  /** A stream handle as core's stream id (0 for the null stream) and its device, or undefined if unknown. */
  stream(h: HipHandle): StreamEntry | undefined {
    // hipStreamPerThread: the current device's default stream here (Note [Special streams]).
    if (isNull(h) || h === C.hipStreamPerThread || h === 2) return { id: 0, device: this.thread.device };
    return this.streams.get(h);
  }

  create(stream: Box<bigint>): number {
    if (!isBox(stream)) return C.hipErrorInvalidValue;
    try {
      return this.streams.create(this.thread.device, stream) === undefined
        ? C.hipErrorInvalidValue
        : C.hipSuccess;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /** The null stream (0) waits for the current device's work. */
  synchronize(stream: HipHandle): number {
    const s = this.stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    return this.codes.run(() =>
      s.id === 0 ? this.runtime.synchronize(this.thread.device) : this.runtime.synchronizeStream(s.id),
    );
  }

  /** Gone even when its queued work failed (Note [Destroying a busy stream]). */
  destroy(stream: HipHandle): number {
    const s = this.stream(stream);
    if (s === undefined || s.id === 0) return C.hipErrorInvalidHandle;
    return this.codes.run(() => this.streams.destroy(handleKey(stream) as bigint, s));
  }

  /**
   * clr's rules (hip_event.cpp): only the known flag bits, at most one of the
   * release / system-fence flags, and hipEventInterprocess only with
   * hipEventDisableTiming; else hipErrorInvalidValue.
   */
  createEventWithFlags(event: Box<bigint>, flags: number): number {
    if (!isBox(event)) return C.hipErrorInvalidValue;
    const f =
      typeof flags === 'number' && Number.isInteger(flags) && flags >= 0 && flags <= 0xffff_ffff ? flags : -1;
    if (f < 0 || (f & ~HIP_EVENT_FLAG_BITS) !== 0) return C.hipErrorInvalidValue;
    const release = f & HIP_EVENT_RELEASE_BITS;
    if ((release & (release - 1)) !== 0) return C.hipErrorInvalidValue;
    if ((f & C.hipEventInterprocess) !== 0 && (f & C.hipEventDisableTiming) === 0)
      return C.hipErrorInvalidValue;
    return this.createEvent(event, f);
  }

  /** ihipEventCreateWithFlags: an event of the current device, its box written or nothing made. */
  createEvent(event: Box<bigint>, f: number): number {
    if (!isBox(event) || !probeBox(event)) return C.hipErrorInvalidValue;
    try {
      const timing = { timing: (f & C.hipEventDisableTiming) === 0 };
      return this.events.create(this.thread.device, f, timing, event) < 0
        ? C.hipErrorInvalidValue
        : C.hipSuccess;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  record(event: HipHandle, stream: HipHandle): number {
    const id = this.events.idOf(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    const s = this.stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    // An event records only on a stream of its own device (hipErrorInvalidResourceHandle, 400).
    if (s.device !== this.runtime.eventDevice(id)) return C.hipErrorInvalidResourceHandle;
    const result = this.codes.run(() => this.runtime.recordEvent(id, s.id));
    if (result === C.hipSuccess) this.events.state(id)!.recorded = true;
    return result;
  }

  /** hipSuccess when the recorded work is done (or nothing was recorded), hipErrorNotReady (600) while not. */
  query(event: HipHandle): number {
    const id = this.events.idOf(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    try {
      return this.runtime.queryEvent(id) ? C.hipSuccess : C.hipErrorNotReady;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  synchronizeEvent(event: HipHandle): number {
    const id = this.events.idOf(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    return this.codes.run(() => this.runtime.synchronizeEvent(id));
  }

  /** NULL: hipErrorInvalidHandle; an event no longer in the process's set (destroyed): hipErrorContextIsDestroyed, as clr answers. */
  destroyEvent(event: HipHandle): number {
    if (isNull(event)) return C.hipErrorInvalidHandle;
    const id = this.events.idOf(event);
    if (id < 0) return C.hipErrorContextIsDestroyed;
    return this.codes.run(() => this.events.destroy(id));
  }

  /** The time between two completed timing events: the driver's over a real backend, 0 ms on the simulator (Note [HIP events]). */
  elapsedTime(ms: Box<number>, start: HipHandle, stop: HipHandle): number {
    if (!isBox(ms)) return C.hipErrorInvalidValue;
    const a = this.events.idOf(start);
    const b = this.events.idOf(stop);
    if (a < 0 || b < 0) return C.hipErrorInvalidHandle;
    if (this.runtime.eventDevice(a) !== this.runtime.eventDevice(b)) return C.hipErrorInvalidResourceHandle;
    return this.events.elapsedTime(ms, a, b, this.codes, {
      disableTiming: C.hipEventDisableTiming,
      notTimed: C.hipErrorInvalidHandle,
      notReady: C.hipErrorNotReady,
    });
  }

  /** Later work on `stream` waits for the event's recorded work; flags hipEventWaitDefault (0) or hipEventWaitExternal (1). */
  waitEvent(stream: HipHandle, event: HipHandle, flags: number): number {
    const id = this.events.idOf(event);
    if (id < 0) return C.hipErrorInvalidHandle;
    const s = this.stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    const f = toInt(flags);
    if (f !== 0 && f !== 1) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.streamWaitEvent(s.id, id));
  }

  /** After core's resetDevice: forget the streams and events it destroyed (Note [Device reset]). */
  forgetReset(): void {
    for (const [h, s] of this.streams.entries()) if (!this.runtime.hasStream(s.id)) this.streams.forget(h);
    for (const id of this.events.ids())
      if (this.runtime.eventDevice(id) === undefined) this.events.forget(id);
  }
}
