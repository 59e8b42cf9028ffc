import type { Backend } from '../backend/backend.js';
import { GenerationalHandleTable } from '../util/handle-table.js';
import { vmmError } from './errors.js';
import type { EventTable } from './events.js';
import { Access } from './types.js';

/**
 * Note [Stream capture]
 * Capture is a property of a stream: between beginCapture and endCapture,
 * the stream work core is given for it (write, read, copy, fill, and event
 * records) is not issued but kept, in order, in the stream's Capture; so is
 * the work of every stream that joined the capture by waiting on an event
 * recorded in it. endCapture turns the work list into a Graph; instantiate
 * makes an executable graph of it (its own copy of the list, so it outlives
 * the graph and the captured streams); a launch issues the list, in capture
 * order, on the launch stream through the backend, as any stream work, so
 * the simulator and the real CUDA backend replay alike. A launch writes and
 * reads the captured device addresses and the caller's host buffers as they
 * are at launch time: bytes copied from the host are the buffer's bytes
 * then, and a copy to the host lands in the same buffer each launch.
 *
 * Joins follow the events: each stream of a capture counts its captured
 * steps, an event recorded in capture carries what its stream has seen (a
 * vector clock), a wait merges that into the waiting stream, and a capture
 * may end only when its origin stream has seen every joined stream's last
 * step (else 'capture-unjoined'). A plain record in capture is only such a
 * mark, no step of the graph; an external one (CU_EVENT_RECORD_EXTERNAL) is
 * a step that records the event at each launch (the H200 counts the nodes:
 * capture.event.recordInCapture). A capturing stream that waits on an event
 * recorded outside its capture is 'capture-isolation'; an end off the
 * origin stream is 'capture-unmatched'; both invalidate the capture, as the
 * H200 showed (capture.event.waitInCapture, capture.fork.unjoined). The
 * graph is a list, not a DAG: the branches of a fork are replayed one after
 * another in capture order, which is one valid order of the DAG's.
 *
 * Not modelled: kernels, child graphs (a launch on a capturing stream is
 * captured as its work, flattened; the CUDA flavor refuses it, as the H200
 * does), graph editing and node handles, graph updates, conditional nodes,
 * memory nodes (cuMemAllocAsync in capture), and the DAG's concurrency. What a flavor's driver refuses during a
 * capture (synchronising calls, the legacy stream, the capture modes) is
 * the flavor's: core only keeps, ends, invalidates and replays captures.
 */

/** What captures() answers while nothing captures: the synchronous calls ask on every call. */
const NO_CAPTURES: readonly Capture[] = Object.freeze([]);

export type CaptureMode = 'global' | 'thread-local' | 'relaxed';

/** One step of captured stream work, issued again at each launch. */
export type CapturedWork =
  | { readonly kind: 'write'; readonly device: number; readonly va: number; readonly bytes: Uint8Array }
  | { readonly kind: 'read'; readonly device: number; readonly va: number; readonly bytes: Uint8Array }
  | {
      readonly kind: 'copy';
      readonly device: number;
      readonly dst: number;
      readonly src: number;
      readonly size: number;
    }
  | {
      readonly kind: 'fill';
      readonly device: number;
      readonly va: number;
      readonly value: number;
      readonly size: number;
    }
  | { readonly kind: 'record'; readonly event: number };

/** A capture in progress: its mode, its streams and the work they gave. */
export class Capture {
  readonly work: CapturedWork[] = [];
  /**
   * What each stream of the capture has seen of each one's captured steps,
   * its own included (Note [Stream capture], joins).
   */
  readonly seen = new Map<number, Map<number, number>>();
  invalidated = false;

  constructor(
    readonly id: number,
    readonly mode: CaptureMode,
    readonly origin: number,
  ) {
    this.#join(origin, new Map());
  }

  get streams(): IterableIterator<number> {
    return this.seen.keys();
  }

  /** The captured steps of `stream`: what it has seen of its own work. */
  steps(stream: number): number {
    return this.seen.get(stream)?.get(stream) ?? 0;
  }

  /** One more step on `stream`, a stream of the capture. */
  step(stream: number): void {
    const mine = this.seen.get(stream)!;
    mine.set(stream, (mine.get(stream) ?? 0) + 1);
  }

  /** `stream` waits on what `clock` saw; a stream not yet in the capture joins it. */
  merge(stream: number, clock: ReadonlyMap<number, number>): void {
    if (!this.seen.has(stream)) this.#join(stream, clock);
    const mine = this.seen.get(stream)!;
    for (const [s, n] of clock) if ((mine.get(s) ?? 0) < n) mine.set(s, n);
  }

  /** What `stream` has seen now (a copy, for an event recorded on it). */
  clock(stream: number): Map<number, number> {
    return new Map(this.seen.get(stream));
  }

  /** Whether the origin has seen every stream's last step. */
  joined(): boolean {
    const origin = this.seen.get(this.origin)!;
    for (const s of this.seen.keys()) if ((origin.get(s) ?? 0) < this.steps(s)) return false;
    return true;
  }

  #join(stream: number, clock: ReadonlyMap<number, number>): void {
    this.seen.set(stream, new Map(clock));
  }
}

/** A captured graph: its work, in capture order. */
export interface Graph {
  readonly work: readonly CapturedWork[];
}

/** What a stream's capture status is: none, active, or invalidated (its capture must still be ended). */
export type CaptureStatus = 'none' | 'active' | 'invalidated';

/** The queries of a process's captures and graphs (Runtime.captures), for the flavors' rules. */
export interface CaptureView {
  /** The capture `stream` is in, if any. */
  captureOf(stream: number): Capture | undefined;
  status(stream: number): CaptureStatus;
  /** Captures open now (a new array; the shared empty one when none is, as on every call outside capture). */
  captures(): readonly Capture[];
  /** The open capture an event was last recorded in. */
  eventCapture(event: number): Capture | undefined;
  /** Whether an event's last record was a captured one (the capture may have ended since). */
  lastRecordCaptured(event: number): boolean;
  graph(graph: number): Graph;
  /** An executable graph (the work of the graph it was made from, which outlives that graph). */
  exec(exec: number): Graph;
}

/**
 * One process's captures, graphs and executable graphs (Note [Stream capture]).
 * Graph and executable-graph handles are never reused (Note [Handle values]).
 */
export class GraphBook implements CaptureView {
  /** The capture of each capturing stream (joined streams share their origin's). */
  readonly #byStream = new Map<number, Capture>();
  /**
   * Events whose last record was a captured one (until recorded outside, or by a launch): the capture
   * and what the event's stream had seen. The capture may have ended since (#openRecord tells).
   */
  readonly #capturedEvents = new Map<number, { capture: Capture; clock: Map<number, number> }>();
  readonly #graphs = new GenerationalHandleTable<Graph>();
  readonly #execs = new GenerationalHandleTable<Graph>();
  #nextCapture = 1;

  constructor(
    readonly backend: Backend,
    readonly events: EventTable,
  ) {}

  /** The capture `stream` is in, if any. */
  captureOf(stream: number): Capture | undefined {
    return this.#byStream.get(stream);
  }

  status(stream: number): CaptureStatus {
    const c = this.#byStream.get(stream);
    return c === undefined ? 'none' : c.invalidated ? 'invalidated' : 'active';
  }

  /** Captures open now (for a flavor's rules on what may run during one). */
  captures(): readonly Capture[] {
    if (this.#byStream.size === 0) return NO_CAPTURES;
    const open: Capture[] = [];
    for (const [s, c] of this.#byStream) if (s === c.origin) open.push(c);
    return open;
  }

  begin(stream: number, mode: CaptureMode): Capture {
    if (this.#byStream.has(stream)) throw vmmError('capture-state', `stream ${stream} is capturing already`);
    const c = new Capture(this.#nextCapture++, mode, stream);
    this.#byStream.set(stream, c);
    return c;
  }

  /**
   * Keep `work` given for `stream` in its capture, if it is capturing; false
   * if not (the caller issues it). Work given to an invalidated capture is
   * refused ('capture-invalidated').
   */
  take(stream: number, work: CapturedWork): boolean {
    const c = this.#live(stream);
    if (c === undefined) return false;
    c.work.push(work);
    c.step(stream);
    if (work.kind === 'record') this.#mark(c, stream, work.event);
    return true;
  }

  /** A plain event record on capturing `stream`: a join point, no step of the graph. */
  mark(stream: number, event: number): void {
    const c = this.#live(stream);
    if (c !== undefined) this.#mark(c, stream, event);
  }

  /** An event recorded outside any capture is no longer the capture's. */
  recordedOutside(event: number): void {
    this.#capturedEvents.delete(event);
  }

  /** Whether an event's last record was a captured one (the capture may have ended since). */
  lastRecordCaptured(event: number): boolean {
    return this.#capturedEvents.has(event);
  }

  /** The capture an event was last recorded in, while that capture is open. */
  eventCapture(event: number): Capture | undefined {
    return this.#openRecord(event)?.capture;
  }

  /**
   * `stream` waits on `event`: true if the wait belongs to a capture (the
   * stream joins it, or orders its captured steps), false for an ordinary
   * wait. A capturing stream waiting on another capture's event would merge
   * two captures ('capture-merge').
   */
  wait(stream: number, event: number): boolean {
    const own = this.#live(stream);
    const recorded = this.#openRecord(event);
    if (recorded === undefined && own !== undefined) {
      own.invalidated = true;
      throw vmmError('capture-isolation', `event ${event} was recorded outside the capture of ${stream}`);
    }
    if (recorded === undefined) return false;
    const c = recorded.capture;
    if (own !== undefined && own !== c)
      throw vmmError('capture-merge', `stream ${stream} is in another capture`);
    if (c.invalidated) throw vmmError('capture-invalidated', `the capture of event ${event} was invalidated`);
    c.merge(stream, recorded.clock);
    this.#byStream.set(stream, c);
    return true;
  }

  /** Invalidate the capture `stream` is in (a call its driver refuses during capture); it must still be ended. */
  invalidate(stream: number): void {
    const c = this.#byStream.get(stream);
    if (c !== undefined) c.invalidated = true;
  }

  /**
   * End the capture begun on `stream`: a graph handle, or the capture's
   * failure. Either way the capture is over and its streams capture no more.
   */
  end(stream: number): number {
    const c = this.#byStream.get(stream);
    if (c === undefined) throw vmmError('capture-state', `stream ${stream} is not capturing`);
    if (c.origin !== stream) {
      c.invalidated = true;
      throw vmmError('capture-unmatched', `the capture was begun on ${c.origin}`);
    }
    const joined = c.joined();
    this.#close(c);
    if (c.invalidated)
      throw vmmError('capture-invalidated', `the capture of stream ${stream} was invalidated`);
    if (!joined) throw vmmError('capture-unjoined', `a stream of the capture was not joined back`);
    // The capture is closed: nothing adds to its work again, so the graph keeps that list.
    return this.#graphs.add({ work: c.work });
  }

  /** A stream that goes while capturing leaves its capture (invalidated, when it is the origin). */
  dropStream(stream: number): void {
    const c = this.#byStream.get(stream);
    if (c === undefined) return;
    if (c.origin === stream) {
      c.invalidated = true;
      this.#close(c);
    } else this.#byStream.delete(stream);
  }

  graph(graph: number): Graph {
    const g = this.#graphs.get(graph);
    if (g === undefined) throw vmmError('invalid-value', `no graph ${graph}`);
    return g;
  }

  destroyGraph(graph: number): void {
    this.graph(graph);
    this.#graphs.remove(graph);
  }

  /** An executable graph of `graph`: the graph's work, which nothing changes, so it outlives the graph. */
  instantiate(graph: number): number {
    const g = this.graph(graph);
    return this.#execs.add({ work: g.work });
  }

  exec(exec: number): Graph {
    const e = this.#execs.get(exec);
    if (e === undefined) throw vmmError('invalid-value', `no executable graph ${exec}`);
    return e;
  }

  destroyExec(exec: number): void {
    this.exec(exec);
    this.#execs.remove(exec);
  }

  /**
   * Issue an executable graph's work on `stream`, in order, through the
   * backend as any stream work. On a capturing stream the work is captured
   * instead (a child graph, flattened). A record of an event destroyed
   * since is skipped.
   */
  launch(exec: number, stream: number): void {
    const { backend, events } = this;
    for (const w of this.exec(exec).work) {
      if (this.take(stream, w)) continue;
      if (w.kind === 'write') backend.write(w.device, w.va, w.bytes, stream);
      else if (w.kind === 'read') backend.read(w.device, w.va, w.bytes, stream);
      else if (w.kind === 'copy') backend.copy(w.device, w.dst, w.src, w.size, stream);
      else if (w.kind === 'fill') backend.fill(w.device, w.va, w.value, w.size, stream);
      else if (events.deviceOf(w.event) !== undefined) {
        events.record(w.event, stream);
        this.recordedOutside(w.event);
      }
    }
  }

  /** Drop every capture and graph (the process's teardown). */
  clear(): void {
    for (const c of this.captures()) this.#close(c);
    for (const [h] of [...this.#graphs.entries()]) this.#graphs.remove(h);
    for (const [h] of [...this.#execs.entries()]) this.#execs.remove(h);
    this.#capturedEvents.clear();
  }

  /** The capture `stream` is in, refusing an invalidated one. */
  #live(stream: number): Capture | undefined {
    const c = this.#byStream.get(stream);
    if (c?.invalidated)
      throw vmmError('capture-invalidated', `the capture of stream ${stream} was invalidated`);
    return c;
  }

  #mark(c: Capture, stream: number, event: number): void {
    this.#capturedEvents.set(event, { capture: c, clock: c.clock(stream) });
  }

  /** An event's captured record, while its capture is open (its origin still captures into it). */
  #openRecord(event: number): { capture: Capture; clock: Map<number, number> } | undefined {
    const r = this.#capturedEvents.get(event);
    return r !== undefined && this.#byStream.get(r.capture.origin) === r.capture ? r : undefined;
  }

  #close(c: Capture): void {
    for (const s of c.streams) this.#byStream.delete(s);
  }
}

/** The device ranges a step reads and writes, with the access each needs (none for a record). */
export function workRanges(w: CapturedWork): { va: number; size: number; access: Access }[] {
  if (w.kind === 'write') return [{ va: w.va, size: w.bytes.length, access: Access.ReadWrite }];
  if (w.kind === 'read') return [{ va: w.va, size: w.bytes.length, access: Access.Read }];
  if (w.kind === 'fill') return [{ va: w.va, size: w.size, access: Access.ReadWrite }];
  if (w.kind === 'copy')
    return [
      { va: w.src, size: w.size, access: Access.Read },
      { va: w.dst, size: w.size, access: Access.ReadWrite },
    ];
  return [];
}
