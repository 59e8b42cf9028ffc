import type { Backend } from '../backend/backend.js';
import { GenerationalHandleTable } from '../util/handle-table.js';
import { vmmError } from './errors.js';
import type { StreamTable } from './streams.js';

/** What core keeps of an event: the backend's id for it and the device whose streams it marks. */
interface CoreEvent {
  readonly backend: number;
  readonly device: number;
}

/**
 * One process's live events (Note [Events] in src/backend/backend.ts) by
 * handle value, never reused (Note [Handle values]): each one's backend id
 * and device. The streams table answers which device a stream is of.
 */
export class EventTable {
  readonly #events = new GenerationalHandleTable<CoreEvent>();

  constructor(
    readonly backend: Backend,
    readonly streams: StreamTable,
  ) {}

  /** Live events. */
  get size(): number {
    return this.#events.size;
  }

  create(device: number, timing: boolean): number {
    const backend = this.backend.createEvent(device, timing);
    return this.#events.add({ backend, device });
  }

  elapsedTime(start: number, end: number): number {
    return this.backend.elapsedTime(this.#event(start).backend, this.#event(end).backend);
  }

  /** Record on `stream` (0: the default stream), which must be of the event's device. */
  record(event: number, stream: number): void {
    this.backend.recordEvent(this.check(event, stream).backend, stream);
  }

  /** What record checks: a live event, and a stream of its device (0: any). */
  check(event: number, stream: number): CoreEvent {
    const e = this.#event(event);
    if (stream !== 0) {
      const device = this.streams.deviceOf(stream);
      if (device === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
      if (device !== e.device)
        throw vmmError(
          'invalid-context',
          `stream ${stream} is of device ${device}, the event of ${e.device}`,
        );
    }
    return e;
  }

  query(event: number): boolean {
    return this.backend.queryEvent(this.#event(event).backend);
  }

  synchronize(event: number): void {
    this.backend.synchronizeEvent(this.#event(event).backend);
  }

  /** Make later work on `stream` (0, or a live stream of any device) wait for the event. */
  streamWait(stream: number, event: number): void {
    const e = this.#event(event);
    if (stream !== 0) this.streams.check(stream);
    this.backend.streamWaitEvent(stream, e.backend);
  }

  destroy(event: number): void {
    this.#destroy(event, this.#event(event));
  }

  /** Destroy every event of `device` (-1: of every device), each through `quietly`. */
  destroyEach(device: number, quietly: (step: () => void) => void): void {
    for (const [id, e] of [...this.#events.entries()])
      if (device === -1 || e.device === device) quietly(() => this.#destroy(id, e));
  }

  /** Whether `event` is a handle this table handed out and has destroyed since. */
  isDestroyed(event: number): boolean {
    return this.#events.isStale(event);
  }

  /** The device of a live event, or undefined. */
  deviceOf(event: number): number | undefined {
    return this.#events.get(event)?.device;
  }

  #destroy(event: number, e: CoreEvent): void {
    this.backend.destroyEvent(e.backend);
    this.#events.remove(event);
  }

  #event(event: number): CoreEvent {
    const e = this.#events.get(event);
    if (e === undefined) throw vmmError('invalid-event', `no event ${event}`);
    return e;
  }
}
