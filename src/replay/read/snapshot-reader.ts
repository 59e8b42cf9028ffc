/**
 * The streaming snapshot reader: the pickle reader with a shape (Note
 * [Snapshot-shaped reading]) that knows where a snapshot keeps what replay
 * needs, so that a snapshot of any size reads in bounded memory:
 *
 *   device_traces[d]        a TraceSink: each entry, as its list takes it,
 *                           becomes a row of the device's columns
 *   device_traces[d][i]     read by the entry decoder straight into the
 *                           columns (Note [Trace entries from the bytes]),
 *                           else a TraceEntry: its fields, never a dict
 *   'frames' of an entry,   a FramesList, settled into an interned stack
 *     segment or block
 *   ...['frames'][k]        a FrameRecord, interned once (the memo keeps it)
 *   external_annotations    its markers kept (AnnotationList), not its dicts
 *   an outer list           the old form, segments alone (Note [Segment
 *                           lists]): read as the segments list is
 *
 * Everything else (segments and blocks but for their frames,
 * allocator_settings) is read as plain values.
 * The result is checked by the same code as an unpickled snapshot
 * (snapshot.ts), and equals it.
 */

import { EntryDecoder, type EntryTarget } from './entry-decoder.js';
import {
  DictSink,
  isPickleDict,
  ListSink,
  type PickleDict,
  PickleError,
  PickleReader,
  type PickleShape,
  type PickleValue,
  type Place,
  type StackValue,
  Streamed,
} from './pickle/index.js';
import {
  AnnotationList,
  type EntryFields,
  type MemorySnapshot,
  snapshotOf,
  TraceBuilder,
} from './snapshot.js';
import { FrameRecord, FramesList, StackTable } from './stacks.js';

export interface SnapshotReaderOptions {
  /**
   * Read trace entries straight from the bytes where they have the shape
   * Python's pickler gives them (Note [Trace entries from the bytes]); on by
   * default. Off, every entry is read opcode by opcode: the same snapshot,
   * more slowly (the tests compare the two).
   */
  readonly fastEntries?: boolean;
}

/** A snapshot read from bytes that come in chunks: `write` each, then `end`. */
export class SnapshotReader {
  readonly #stacks = new StackTable();
  readonly #shape: SnapshotShape;
  readonly #pickle: PickleReader;

  constructor(options: SnapshotReaderOptions = {}) {
    this.#shape = new SnapshotShape(this.#stacks, options.fastEntries !== false);
    this.#pickle = new PickleReader(this.#shape);
  }

  /** Take the next bytes of the (inflated) pickle; true once it is complete. */
  write(chunk: Uint8Array): boolean {
    return this.#pickle.write(chunk);
  }

  /** Bytes of pickle taken so far. */
  get offset(): number {
    return this.#pickle.offset;
  }

  /** Trace entries read straight from the bytes (Note [Trace entries from the bytes]). */
  get fastEntries(): number {
    return this.#shape.fastEntries;
  }

  /** The snapshot, checked; a PickleError if the pickle stopped short, a SnapshotError if it is no snapshot. */
  end(): MemorySnapshot {
    const root = this.#pickle.end();
    if (root instanceof Streamed) {
      // A sink cannot be the whole value: a pickle that ends on one is not what Python wrote.
      throw new PickleError(
        'malformed',
        `malformed pickle: its value is a part of a snapshot that the reader streams (${root.describe()}), not a snapshot`,
        this.offset,
      );
    }
    const traces = this.#shape.traces;
    for (const sink of traces?.sinks ?? []) {
      if (sink.made !== sink.taken) {
        const where = sink.builder.where;
        throw new PickleError(
          'malformed',
          `malformed pickle: ${sink.made - sink.taken} of the entries made for ${where} are not in its list (the reader streams them)`,
          this.offset,
        );
      }
    }
    if (traces !== undefined && isPickleDict(root) && (root.device_traces as StackValue) === traces) {
      root.device_traces = traces.items as unknown as PickleValue[];
    }
    return snapshotOf(root, this.#stacks);
  }
}

/** Read a snapshot from the whole (inflated) pickle. */
export function readSnapshot(bytes: Uint8Array, options: SnapshotReaderOptions = {}): MemorySnapshot {
  const reader = new SnapshotReader(options);
  reader.write(bytes);
  return reader.end();
}

class SnapshotShape implements PickleShape {
  root: PickleDict | undefined;
  /** The pickle's outer list, when it is one (a list of segments, Note [Segment lists]). */
  rootList: PickleValue[] | undefined;
  traces: DeviceTraces | undefined;
  /** `segments` and each segment's `blocks`: lists of dicts that may hold frames. */
  readonly #framedLists = new WeakSet<object>();
  /** Segments and blocks: the plain dicts whose 'frames' is a FramesList. */
  readonly #framedDicts = new WeakSet<object>();

  readonly #decoder: EntryDecoder | undefined;

  constructor(
    readonly stacks: StackTable,
    fastEntries: boolean,
  ) {
    this.#decoder = fastEntries ? new EntryDecoder(stacks) : undefined;
  }

  /**
   * The entry decoder, where the dict an EMPTY_DICT starts is the next item
   * of a device's trace, all before it in its batch read by the decoder too
   * (so rows are added in the order the list takes them): the batch's list
   * below the MARK and nothing after the MARK but the decoder's entries, or
   * the list on top (APPEND). Not once the trace has an error, nor while a
   * workspace block's entries are to come (Note [Trace entries from the bytes]).
   */
  get fastEntries(): number {
    return this.#decoder?.entries ?? 0;
  }

  fastDict(stack: readonly StackValue[], marks: readonly number[]): EntryDecoder | undefined {
    const decoder = this.#decoder;
    const len = stack.length;
    if (decoder === undefined || len === 0) return undefined;
    const top = stack[len - 1];
    let sink: TraceSink;
    if (top instanceof TraceSink) sink = top;
    else {
      const m = marks.length > 0 ? marks[marks.length - 1] : -1;
      if (m < 1) return undefined;
      const owner = stack[m - 1];
      if (!(owner instanceof TraceSink)) return undefined;
      if (m !== len && !(top instanceof FastEntry && top.sink === owner)) return undefined;
      sink = owner;
    }
    if (sink.builder.error !== undefined || sink.builder.columns.workspacePending) return undefined;
    decoder.target = sink;
    return decoder;
  }

  dict(p: Place): StackValue {
    if (this.root === undefined && this.rootList === undefined && p.top === undefined) {
      this.root = {};
      return this.root;
    }
    if (p.key !== undefined) return {};
    const list = p.top instanceof ListSink ? p.top : p.owner;
    if (list instanceof TraceSink) return list.newEntry();
    if (list instanceof FramesList) return new FrameRecord();
    const d = {};
    if (this.#isFramedList(p.top) || this.#isFramedList(p.owner)) this.#framedDicts.add(d);
    return d;
  }

  list(p: Place): StackValue {
    if (p.key === undefined) {
      if (p.top === undefined && this.root === undefined && this.rootList === undefined) {
        // The old form, a list of segments (Note [Segment lists]): its items may hold frames.
        this.rootList = [];
        this.#framedLists.add(this.rootList);
        return this.rootList;
      }
      if (p.top instanceof DeviceTraces) return p.top.newTrace();
      if (p.owner instanceof DeviceTraces) return p.owner.newTrace();
      return [];
    }
    const owner = p.owner;
    if (
      p.key === 'frames' &&
      (owner instanceof TraceEntry || (isObject(owner) && this.#framedDicts.has(owner)))
    ) {
      return new FramesList();
    }
    if (owner === this.root && this.root !== undefined) {
      if (p.key === 'device_traces' && this.traces === undefined) {
        this.traces = new DeviceTraces(this.stacks);
        return this.traces;
      }
      if (p.key === 'external_annotations') return new AnnotationList();
    }
    const list: PickleValue[] = [];
    const framed =
      (p.key === 'segments' && owner === this.root) ||
      (p.key === 'blocks' && isObject(owner) && this.#framedDicts.has(owner));
    if (framed) this.#framedLists.add(list);
    return list;
  }

  #isFramedList(v: StackValue | undefined): boolean {
    return Array.isArray(v) && this.#framedLists.has(v);
  }
}

/** `device_traces`: its items, each device's TraceBuilder in place of its list. */
class DeviceTraces extends ListSink {
  /** What it took: each device's TraceBuilder in place of its TraceSink, other items as they are. */
  readonly items: (StackValue | TraceBuilder)[] = [];
  #made = 0;

  constructor(readonly stacks: StackTable) {
    super();
  }

  readonly sinks: TraceSink[] = [];

  newTrace(): TraceSink {
    const sink = new TraceSink(new TraceBuilder(this.#made++, this.stacks));
    this.sinks.push(sink);
    return sink;
  }

  append(value: StackValue): void {
    this.items.push(value instanceof TraceSink ? value.builder : value);
  }

  get length(): number {
    return this.items.length;
  }
}

/** One device's trace: each item it takes is checked and becomes a row. */
class TraceSink extends ListSink implements EntryTarget {
  #length = 0;
  /** Entries made for this list, and those it took: an entry that went elsewhere would be lost. */
  made = 0;
  taken = 0;
  /** What stands for an entry the decoder read (its row added already). */
  readonly marker: FastEntry;

  constructor(readonly builder: TraceBuilder) {
    super();
    this.marker = new FastEntry(this);
  }

  newEntry(): TraceEntry {
    this.made++;
    return new TraceEntry();
  }

  append(value: StackValue): void {
    const i = this.#length++;
    if (value === this.marker) this.taken++;
    else if (value instanceof TraceEntry) {
      this.taken++;
      // A key that is no string would make a plain reading's dict a Map, which is no entry.
      if (value.odd) this.builder.notDict(value, i);
      else this.builder.entry(value, i);
    } else if (isPickleDict(value)) this.builder.entry(value, i);
    else this.builder.notDict(value, i);
  }

  get length(): number {
    return this.#length;
  }
}

/** A trace entry's fields as SETITEMS gives them; the rest (compile_context, user_metadata) are dropped. */
class TraceEntry extends DictSink implements EntryFields {
  action: StackValue | undefined;
  addr: StackValue | undefined;
  device_free: StackValue | undefined;
  size: StackValue | undefined;
  stream: StackValue | undefined;
  time_us: StackValue | undefined;
  frames: StackValue | undefined;
  odd = false;

  set(key: StackValue, value: StackValue): void {
    switch (key) {
      case 'action':
        this.action = value;
        break;
      case 'addr':
        this.addr = value;
        break;
      case 'device_free':
        this.device_free = value;
        break;
      case 'size':
        this.size = value;
        break;
      case 'stream':
        this.stream = value;
        break;
      case 'time_us':
        this.time_us = value;
        break;
      case 'frames':
        this.frames = value;
        break;
      default:
        if (typeof key !== 'string') this.odd = true;
    }
  }
}

/** An entry of `sink` that the entry decoder read: its row is in the columns already. */
class FastEntry extends Streamed {
  constructor(readonly sink: TraceSink) {
    super();
  }

  describe(): string {
    return 'a dict';
  }
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}
