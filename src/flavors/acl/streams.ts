/** ACL streams and events over core's, with the CANN documentation's rules in front. */
import type { Runtime } from '../../core/runtime.js';
import { type Box, handleKey, isBox, isNull, probeBox, show, writeBox } from '../common/args.js';
import type { EventState } from '../common/events.js';
import { type StreamEntry, StreamsAndEvents } from '../common/streams.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import type { AclDevices } from './devices.js';
import type { Pointer } from './structs.js';

/** Stream handles are opaque; these are deterministic per process. */
const STREAM_BASE = 0xa5_0000n;
/** aclrtEvent handles: opaque, never reused in a process. */
const ACL_EVENT_BASE = 0xae_0000_0000n;
const ACL_EVENT_FLAG_BITS = C.ACL_EVENT_SYNC | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | C.ACL_EVENT_TIME_LINE;
/** What aclrtCreateEvent's events can do: everything (stream waits and resets included). */
export const ACL_EVENT_DEFAULT_FLAGS = ACL_EVENT_FLAG_BITS;

/**
 * Note [ACL events]
 * Events are core's (Note [Events] in src/backend/backend.ts), with the CANN
 * documentation's rules in front. aclrtQueryEventStatus reports
 * ACL_EVENT_RECORDED_STATUS_COMPLETE once the recorded work has run and
 * NOT_READY otherwise, which by the documentation includes an event never
 * recorded (CUDA and HIP call that complete). An event of
 * aclrtCreateEventWithFlag without ACL_EVENT_SYNC may not be waited on or
 * reset (the documentation says so; the code it answers is not documented:
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT here is our choice). aclrtResetEvent
 * takes effect at once rather than in its stream's order: the event reads
 * as never recorded from then on. NULL arguments answer
 * ACL_ERROR_INVALID_PARAM, an unknown event or stream
 * ACL_ERROR_RT_PARAM_INVALID, a stream of another device
 * ACL_ERROR_RT_STREAM_CONTEXT (our choice of code, unverified).
 */
export class AclStreams extends StreamsAndEvents {
  declare readonly codes: AclCodes;

  constructor(
    runtime: Runtime,
    codes: AclCodes,
    readonly devices: AclDevices,
    readonly report: (message: string, error?: unknown) => void,
  ) {
    super(runtime, codes, { streamBase: STREAM_BASE, eventBase: ACL_EVENT_BASE, numbering: 'count' });
  }

  /** A stream argument: NULL is the default stream, else a live stream of this process, else the refusal. */
  stream(h: Pointer): StreamEntry | number {
    if (isNull(h)) return { id: 0, device: this.devices.current };
    return this.streams.get(h) ?? this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(h)}`);
  }

  create(stream: Box<bigint>): number {
    if (!isBox(stream)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'stream is NULL');
    try {
      return this.streams.create(this.devices.current, stream) === undefined
        ? this.codes.unwritable()
        : C.ACL_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /** A NULL stream is the default stream: its work is everything submitted synchronously, so only the device's streams remain. */
  synchronize(stream: Pointer): number {
    if (isNull(stream)) return this.codes.run(() => this.runtime.synchronize(this.devices.current));
    const s = this.stream(stream);
    if (typeof s === 'number') return s;
    return this.codes.run(() => this.runtime.synchronizeStream(s.id));
  }

  /** Gone even when its queued work failed (Note [Destroying a busy stream]); `discard` drops its unfinished work. */
  destroy(stream: Pointer, discard: boolean): number {
    if (isNull(stream)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'stream is NULL');
    const s = this.stream(stream);
    if (typeof s === 'number') return s;
    return this.codes.run(() => this.streams.destroy(handleKey(stream) as bigint, s, discard));
  }

  /** At a device's last aclrtResetDevice: its streams go (their work finishes first, a failure is the work's), then its events. */
  dropDevice(d: number): void {
    for (const [h, s] of [...this.streams.entries()]) {
      if (s.device !== d) continue;
      try {
        this.streams.destroy(h, s);
      } catch (e) {
        this.report('a stream outlived aclrtResetDevice', e);
        this.streams.forget(h);
      }
    }
    for (const id of [...this.events.ids()]) {
      if (this.runtime.eventDevice(id) !== d) continue;
      this.runtime.quietly(() => this.runtime.destroyEvent(id));
      this.events.forget(id);
    }
  }

  // --- events (the Note) ---

  createEvent(event: Box<bigint>, flags: number): number {
    if (!isBox(event) || !probeBox(event))
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'event is NULL or cannot be written');
    try {
      return this.events.create(this.devices.current, flags, undefined, event) < 0
        ? this.codes.unwritable()
        : C.ACL_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  /** A live event of this process with its state, or the code refusing the argument. */
  event(h: Pointer): [number, EventState] | number {
    if (isNull(h)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'event is NULL');
    const id = this.events.idOf(h);
    const e = id > 0 ? this.events.state(id) : undefined;
    if (e === undefined) return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `no event ${show(h)}`);
    return [id, e];
  }

  /** Record on `stream` (NULL: the default stream), which must be of the event's device. */
  record(id: number, e: EventState, stream: Pointer): number {
    const s = this.stream(stream);
    if (typeof s === 'number') return s;
    if (s.device !== this.runtime.eventDevice(id))
      return this.codes.bad(
        C.ACL_ERROR_RT_STREAM_CONTEXT,
        'the stream and the event belong to different devices',
      );
    const result = this.codes.run(() => this.runtime.recordEvent(id, s.id));
    if (result === C.ACL_SUCCESS) e.recorded = true;
    return result;
  }

  /** ACL_EVENT_RECORDED_STATUS_COMPLETE once recorded work has run; NOT_READY before, and for an event never recorded (or reset). */
  query(id: number, e: EventState, status: Box<number>): number {
    if (!isBox(status)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'status is NULL');
    let done: boolean;
    try {
      done = e.recorded && this.runtime.queryEvent(id);
    } catch (err) {
      return this.codes.code(err);
    }
    const value = done ? C.ACL_EVENT_RECORDED_STATUS_COMPLETE : C.ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return writeBox(status, value) ? C.ACL_SUCCESS : this.codes.unwritable();
  }

  /** Later work on `stream` (NULL: the default stream) waits for the event's recorded work; the event needs ACL_EVENT_SYNC. */
  waitEvent(stream: Pointer, id: number, e: EventState): number {
    const s = this.stream(stream);
    if (typeof s === 'number') return s;
    if ((e.flags & C.ACL_EVENT_SYNC) === 0)
      return this.codes.bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'an event made without ACL_EVENT_SYNC cannot be waited on',
      );
    return this.codes.run(() => this.runtime.streamWaitEvent(s.id, id));
  }

  /** Back to "never recorded" (at once, not in stream order); the event needs ACL_EVENT_SYNC. */
  reset(e: EventState, stream: Pointer): number {
    if (!isNull(stream) && this.streams.get(stream) === undefined)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
    if ((e.flags & C.ACL_EVENT_SYNC) === 0)
      return this.codes.bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'an event made without ACL_EVENT_SYNC cannot be reset',
      );
    e.recorded = false;
    return C.ACL_SUCCESS;
  }
}

/** aclrtCreateEventWithFlag's flag: a bitmap of ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS, ACL_EVENT_TIME_LINE; -1 if it is none. */
export function eventFlags(flag: unknown): number {
  const f = typeof flag === 'number' && Number.isInteger(flag) ? flag : -1;
  return f <= 0 || (f & ~ACL_EVENT_FLAG_BITS) !== 0 ? -1 : f;
}
