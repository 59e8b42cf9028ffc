/**
 * A PyTorch memory snapshot as typed data (docs/pytorch-allocators.md T1-T4): what
 * `torch.cuda.memory._snapshot()` returns and `_dump_snapshot` pickles.
 *
 * Note [Compact traces]: each device's events are parallel typed arrays
 * (action code, address, size, stream, time, stack) rather than objects, so
 * a million events cost about 40 MB and replay reads them without touching
 * the unpickled dicts again. Stacks are kept interned (Note [Interned
 * stacks]): an event holds its stack's index, the snapshot one table of
 * frames and one of stacks. Two readings give the same MemorySnapshot:
 * `parseSnapshot` of an unpickled value, and the streaming reader
 * (snapshot-reader.ts), which fills the same columns as it reads and never
 * makes the event dicts; both check each entry here, in the same order, with
 * the same messages.
 */
import { SnapshotError } from '../errors.js';
import {
  isPickleDict,
  ListSink,
  type PickleDict,
  PickleTuple,
  type PickleValue,
  type StackValue,
} from './pickle/index.js';
import { count, describe, fieldName, integer, notSnapshot, quoted, wrongType } from './snapshot-checks.js';
import { type SnapshotFrame, StackTable } from './stacks.js';
import type { SnapshotVendor } from './vendor.js';

export { describe } from './snapshot-checks.js';
export type { SnapshotFrame } from './stacks.js';

/** The actions a trace entry may have (T1, T2), by code. */
export const ACTIONS = [
  'alloc',
  'free_requested',
  'free_completed',
  'segment_alloc',
  'segment_free',
  'segment_map',
  'segment_unmap',
  'snapshot',
  'oom',
] as const;
export type TraceAction = (typeof ACTIONS)[number];

/** Action codes as stored in DeviceTrace.action. */
export const Action = {
  alloc: 0,
  free_requested: 1,
  free_completed: 2,
  segment_alloc: 3,
  segment_free: 4,
  segment_map: 5,
  segment_unmap: 6,
  snapshot: 7,
  oom: 8,
} as const satisfies Record<TraceAction, number>;

/** One device's trace, event i being (action[i], addr[i], size[i], stream[i], timeUs[i], stack[i]). */
export interface DeviceTrace {
  readonly device: number;
  readonly length: number;
  /** Action codes (Action). */
  readonly action: Uint8Array;
  /** The block or segment address; for an oom event, the device's free bytes (its `device_free`). */
  readonly addr: Float64Array;
  /** Bytes, with T2's meaning for each action. */
  readonly size: Float64Array;
  /** The raw stream handle (0: the default stream). */
  readonly stream: Float64Array;
  /** Microseconds since the epoch; NaN where the entry has no time_us (older PyTorch, torch_npu) or one beyond 2^53. */
  readonly timeUs: Float64Array;
  /** The entry's stack, an index into MemorySnapshot.stacks; -1 where it has no frames. */
  readonly stack: Int32Array;
}

export type BlockState = 'active_allocated' | 'active_pending_free' | 'inactive';

export interface SnapshotBlock {
  readonly address: number;
  readonly size: number;
  readonly requestedSize: number;
  readonly state: BlockState;
  /** The stack that allocated it (MemorySnapshot.stacks), -1 when not recorded. */
  readonly stack: number;
}

export interface SnapshotSegment {
  readonly device: number;
  readonly address: number;
  readonly totalSize: number;
  readonly stream: number;
  readonly segmentType: string | undefined;
  readonly isExpandable: boolean;
  /** `segment_pool_id`: (0, 0) is the default pool, anything else a private one (CUDA graph, MemPool). */
  readonly poolId: readonly [number, number] | undefined;
  /** The stack that allocated the segment, -1 when not recorded. */
  readonly stack: number;
  readonly blocks: readonly SnapshotBlock[];
}

export interface MemorySnapshot {
  /** The allocator's segments when the snapshot was taken (T4). */
  readonly segments: readonly SnapshotSegment[];
  /** One trace per device, in device order (T1). */
  readonly traces: readonly DeviceTrace[];
  /** `allocator_settings` as recorded (PYTORCH_CUDA_ALLOC_CONF's values), or undefined when absent. */
  readonly allocatorSettings: PickleDict | undefined;
  /** Every distinct frame (Note [Interned stacks]). */
  readonly frames: readonly SnapshotFrame[];
  /** Every distinct stack: its frames' indices into `frames`, innermost first as PyTorch lists them. */
  readonly stacks: readonly Int32Array[];
  /**
   * The ring buffer's size and whether it wrapped, where the snapshot says
   * (`allocator_settings.trace_alloc_max_entries` / `trace_alloc_overflowed`,
   * which PyTorch's memory_viz reads; a 2.11 snapshot has neither).
   */
  readonly traceAllocMaxEntries: number | undefined;
  readonly traceAllocOverflowed: boolean | undefined;
  /** How many entries `external_annotations` (record_function markers) holds; 0 when absent. */
  readonly externalAnnotations: number;
  /** Those markers that open or close a named stretch on a device at a time (annotationOf); absent: none kept. */
  readonly annotations?: readonly SnapshotAnnotation[];
  /**
   * What the pickle held: `_dump_snapshot`'s dict, or the bare list of
   * segments that `torch.cuda.memory_snapshot()` returns (then `traces` is
   * empty: the allocator's state at one moment, no history). Optional so
   * that snapshots made by hand need not say; the reader always does.
   */
  readonly form?: 'dict' | 'segment-list';
  /** The machine that made it, where a caller says (--vendor); absent, vendor.ts guesses (Note [Snapshot vendor]). */
  readonly vendor?: SnapshotVendor;
  /** torch_npu's workspace blocks the file held, left out of traces and segments (Note [Workspace entries]); absent: none. */
  readonly workspace?: { readonly blocks: number; readonly bytes: number };
}

/**
 * One `external_annotations` entry: a record_function marker opened or
 * closed on a device (torch.optim marks every `Optimizer.step#AdamW.step`;
 * a program marks its own phases).
 */
export interface SnapshotAnnotation {
  readonly stage: 'START' | 'END';
  readonly name: string;
  readonly device: number;
  readonly timeUs: number;
}

/**
 * The marker an `external_annotations` entry is, or undefined where it is
 * not a START or END with a name, a device and a time: markers only ever
 * help an answer (a category, a step), so a malformed one is left out, not
 * refused.
 */
export function annotationOf(entry: unknown): SnapshotAnnotation | undefined {
  if (!isPickleDict(entry)) return undefined;
  const { stage, name, device, time_us: time } = entry;
  if ((stage !== 'START' && stage !== 'END') || typeof name !== 'string') return undefined;
  if (typeof device !== 'number' || typeof time !== 'number' || !Number.isFinite(time)) return undefined;
  return { stage, name, device, timeUs: time };
}

/** `external_annotations` as the streaming reader keeps it: its markers (annotationOf), not its dicts. */
export class AnnotationList extends ListSink {
  readonly annotations: SnapshotAnnotation[] = [];
  #length = 0;

  append(value: StackValue): void {
    this.#length++;
    const a = annotationOf(value);
    if (a !== undefined) this.annotations.push(a);
  }

  get length(): number {
    return this.#length;
  }
}

const CODES = new Map<string, number>(ACTIONS.map((a, i) => [a, i]));

/** The code of a trace entry's action (Action), undefined for one not known. */
export function actionCode(action: string): number | undefined {
  return CODES.get(action);
}
const BLOCK_STATES: readonly string[] = ['active_allocated', 'active_pending_free', 'inactive'];

/** The fields of a trace entry replay reads: an unpickled dict, or the streaming reader's entry. */
export interface EntryFields {
  readonly action?: StackValue;
  readonly addr?: StackValue;
  readonly device_free?: StackValue;
  readonly size?: StackValue;
  readonly stream?: StackValue;
  readonly time_us?: StackValue;
  readonly frames?: StackValue;
}

/*
 * Note [Workspace entries]: torch_npu's snapshot holds, beside its caching
 * allocator's, the blocks of its workspace allocator (the scratch memory of
 * ACL operators, one block per stream, allocated outside the caching
 * allocator): each block is appended to `segments` (large, not expandable,
 * one block) and put at the head of its device's trace as three entries, a
 * `workspace_snapshot`, a `segment_alloc` and an `alloc` of the block's size
 * at its address (torch_npu/csrc/npu/Module.cpp at v7.1.0-pytorch2.6.0,
 * 1137-1145; NPUWorkspaceAllocator.cpp get_trace, 275-303). They describe
 * memory at the moment of the dump, not events, and no model of the caching
 * allocator made them, so the reader leaves them out: the
 * `workspace_snapshot` entry, the `segment_alloc` and `alloc` at its address
 * that follow it, and the segment there; MemorySnapshot.workspace counts
 * what was left out (docs/npu-allocator.md, NPU14).
 */

/**
 * Note [Columns in blocks]: a streamed trace's length is known only at its
 * end, so its rows are written into blocks of BLOCK_ROWS rows, and the
 * columns are put together once, at the end: each byte is copied once.
 * Growing one set of arrays instead copies the rows again at each growth
 * (twice over in all, growing by half) and ends with a cut to length, and
 * holds old and new arrays at once; on a 7-million-event trace that was
 * half a second.
 */
const BLOCK_ROWS = 1 << 16;

/** One block of rows (Note [Columns in blocks]): the trace's columns, each `rows` long. */
type ColumnBlock = Pick<DeviceTrace, 'action' | 'addr' | 'size' | 'stream' | 'timeUs' | 'stack'>;

function columnBlock(rows: number): ColumnBlock {
  return {
    action: new Uint8Array(rows),
    addr: new Float64Array(rows),
    size: new Float64Array(rows),
    stream: new Float64Array(rows),
    timeUs: new Float64Array(rows),
    stack: new Int32Array(rows),
  };
}

/** One device's columns while they are filled, in blocks (Note [Columns in blocks]). */
export class TraceColumns {
  length = 0;
  /** Workspace blocks met (Note [Workspace entries]): their addresses and bytes. */
  readonly workspace: number[] = [];
  workspaceBytes = 0;
  /** Workspace addresses whose segment_alloc (bit 1) and alloc (bit 2) are still to be left out. */
  readonly #workspacePending = new Map<number, number>();
  /** Blocks filled, then the one being filled (#rows rows so far). */
  readonly #full: ColumnBlock[] = [];
  #block: ColumnBlock;
  #rows = 0;

  /** `capacity`: the rows expected, where known (the first block holds them all). */
  constructor(capacity = BLOCK_ROWS) {
    this.#block = columnBlock(Math.max(capacity, 1));
  }

  push(action: number, addr: number, size: number, stream: number, timeUs: number, stack: number): void {
    let b = this.#block;
    let i = this.#rows;
    if (i === b.action.length) {
      this.#full.push(b);
      this.#block = b = columnBlock(BLOCK_ROWS);
      i = 0;
    }
    b.action[i] = action;
    b.addr[i] = addr;
    b.size[i] = size;
    b.stream[i] = stream;
    b.timeUs[i] = timeUs;
    b.stack[i] = stack;
    this.#rows = i + 1;
    this.length++;
  }

  /** A workspace_snapshot entry: its block, and the two entries at its address to leave out. */
  workspaceBlock(addr: number, size: number): void {
    this.workspace.push(addr);
    this.workspaceBytes += size;
    this.#workspacePending.set(addr, 3);
  }

  /** Whether a workspace block's entries are still to come (Note [Workspace entries]). */
  get workspacePending(): boolean {
    return this.#workspacePending.size > 0;
  }

  /** Whether a segment_alloc or alloc at `addr` is a workspace block's (then it is left out). */
  isWorkspaceEntry(code: number, addr: number): boolean {
    const pending = this.#workspacePending.get(addr);
    const bit = code === Action.segment_alloc ? 1 : code === Action.alloc ? 2 : 0;
    if (pending === undefined || (pending & bit) === 0) return false;
    if (pending === bit) this.#workspacePending.delete(addr);
    else this.#workspacePending.set(addr, pending & ~bit);
    return true;
  }

  /** The trace, its blocks put together (the one block as it is, where it is exactly full). */
  finish(device: number): DeviceTrace {
    const n = this.length;
    const blocks = [...this.#full, this.#block];
    const column = <T extends Uint8Array | Float64Array | Int32Array>(
      of: (b: ColumnBlock) => T,
      make: new (n: number) => T,
    ): T => {
      const only = of(blocks[0]);
      if (blocks.length === 1) return (only.length === n ? only : only.slice(0, n)) as T;
      const out = new make(n);
      let at = 0;
      for (const b of blocks) {
        const part = of(b);
        const rows = Math.min(part.length, n - at);
        out.set(rows === part.length ? part : part.subarray(0, rows), at);
        at += rows;
      }
      return out;
    };
    return {
      device,
      length: n,
      action: column((b) => b.action, Uint8Array),
      addr: column((b) => b.addr, Float64Array),
      size: column((b) => b.size, Float64Array),
      stream: column((b) => b.stream, Float64Array),
      timeUs: column((b) => b.timeUs, Float64Array),
      stack: column((b) => b.stack, Int32Array),
    };
  }
}

/**
 * One device's trace as its entries come, checked one by one. The streaming
 * reader keeps the first error to throw it when the whole snapshot is
 * checked (parseSnapshot's order: the top-level fields first, then device by
 * device); an unpickled trace throws at once, which is the same order.
 */
export class TraceBuilder {
  readonly columns: TraceColumns;
  readonly where: string;
  error: SnapshotError | undefined;

  constructor(
    device: number,
    readonly stacks: StackTable,
    capacity?: number,
  ) {
    this.where = `device_traces[${device}]`;
    this.columns = new TraceColumns(capacity);
  }

  /** Entry i; a bad one is kept as the error, and later ones are no longer checked. */
  entry(e: EntryFields, i: number): void {
    if (this.error !== undefined) return;
    try {
      addEntry(this.columns, e, this.where, i, this.stacks);
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err;
      this.error = err;
    }
  }

  /** Item i that is no dict. */
  notDict(v: StackValue, i: number): void {
    this.error ??= notSnapshot(`${this.where}[${i}] is ${describe(v)}, expected a dict`);
  }

  finish(device: number): DeviceTrace {
    if (this.error !== undefined) throw this.error;
    return this.columns.finish(device);
  }
}

/** Check entry i of a device's trace and add it as a row (Note [Compact traces]). */
function addEntry(out: TraceColumns, e: EntryFields, where: string, i: number, stacks: StackTable): void {
  const a = e.action;
  if (a === 'workspace_snapshot') {
    out.workspaceBlock(count(e.addr, where, i, 'addr'), count(e.size, where, i, 'size'));
    return;
  }
  const code = typeof a === 'string' ? CODES.get(a) : undefined;
  if (code === undefined) {
    throw notSnapshot(
      typeof a === 'string'
        ? `${where}[${i}] has unknown action '${quoted(a)}' (known: ${ACTIONS.join(', ')})`
        : `${where}[${i}].action is ${describe(a)}, expected a string`,
    );
  }
  // An oom entry carries the device's free bytes in place of an address (Module.cpp).
  const addr =
    code === Action.oom
      ? count(e.device_free ?? e.addr ?? 0, where, i, 'device_free')
      : count(e.addr, where, i, 'addr');
  const size = count(e.size, where, i, 'size');
  if (out.isWorkspaceEntry(code, addr)) return;
  const stream = e.stream === undefined ? 0 : integer(e.stream, where, i, 'stream');
  const t = e.time_us;
  // Times only date the events (no allocator reads them): one no double holds is dropped, not refused.
  const time =
    typeof t === 'number'
      ? Number.isFinite(t)
        ? t
        : Number.NaN
      : t === undefined || t === null || typeof t === 'bigint'
        ? Number.NaN
        : integer(t, where, i, 'time_us');
  out.push(code, addr, size, stream, time, stacks.of(e.frames, where, i));
}

/** Check an unpickled value and turn it into a MemorySnapshot; a SnapshotError says what is wrong. */
export function parseSnapshot(value: PickleValue): MemorySnapshot {
  return snapshotOf(value, new StackTable());
}

/**
 * parseSnapshot with the stack table the entries already used: the streaming
 * reader's root dict holds, in place of its traces, the TraceBuilders it
 * filled, and its frames lists are settled or ready to be.
 */
export function snapshotOf(value: StackValue, stacks: StackTable): MemorySnapshot {
  if (Array.isArray(value) && value.every(isPickleDict)) return segmentList(value, stacks);
  if (!isPickleDict(value)) {
    throw notSnapshot(
      `the pickle holds ${describe(value)}, not a dict${Array.isArray(value) ? ' (nor a list of segment dicts)' : ''}`,
    );
  }
  const traces = value.device_traces;
  if (traces === undefined) throw notSnapshot("the dict has no 'device_traces' (was history recorded?)");
  if (!Array.isArray(traces)) throw notSnapshot(`'device_traces' is ${describe(traces)}, expected a list`);
  const segments = value.segments ?? [];
  if (!Array.isArray(segments)) throw notSnapshot(`'segments' is ${describe(segments)}, expected a list`);
  const settings = value.allocator_settings;
  if (settings !== undefined && !isPickleDict(settings)) {
    throw notSnapshot(`'allocator_settings' is ${describe(settings)}, expected a dict`);
  }
  if (settings !== undefined) checkTree(settings, 'allocator_settings');
  const workspace = new Map<number, Set<number>>();
  let workspaceBytes = 0;
  const parsedTraces = traces.map((t, device) => {
    const parsed = parseTrace(t as StackValue, device, stacks);
    if (parsed.workspace.length > 0) workspace.set(device, new Set(parsed.workspace));
    workspaceBytes += parsed.workspaceBytes;
    return parsed.trace;
  });
  // Note [Workspace entries]: the workspace blocks' segments go with their entries.
  const parsedSegments = segments
    .map((s, i) => parseSegment(s, `segments[${i}]`, stacks))
    .filter((seg) => workspace.get(seg.device)?.has(seg.address) !== true);
  const workspaceBlocks = [...workspace.values()].reduce((n, set) => n + set.size, 0);
  const maxEntries = settings?.trace_alloc_max_entries;
  const overflowed = settings?.trace_alloc_overflowed;
  if (overflowed !== undefined && typeof overflowed !== 'boolean') {
    throw wrongType(overflowed, 'allocator_settings.trace_alloc_overflowed', 'True or False');
  }
  const annotations = value.external_annotations as StackValue | undefined;
  return {
    traces: parsedTraces,
    segments: parsedSegments,
    allocatorSettings: settings,
    frames: stacks.frames,
    stacks: stacks.stacks(),
    traceAllocMaxEntries:
      maxEntries === undefined
        ? undefined
        : count(maxEntries, 'allocator_settings', -1, 'trace_alloc_max_entries'),
    traceAllocOverflowed: overflowed,
    externalAnnotations:
      Array.isArray(annotations) || annotations instanceof ListSink ? annotations.length : 0,
    annotations:
      annotations instanceof AnnotationList
        ? annotations.annotations
        : Array.isArray(annotations)
          ? annotations.flatMap((a) => annotationOf(a) ?? [])
          : [],
    form: 'dict',
    ...(workspaceBlocks > 0 ? { workspace: { blocks: workspaceBlocks, bytes: workspaceBytes } } : {}),
  };
}

/**
 * The old form (Note [Segment lists]): what `torch.cuda.memory_snapshot()`
 * returns, pickled by hand, is the segments alone.
 *
 * Note [Segment lists]: before `_dump_snapshot`, and still where people
 * call `torch.cuda.memory_snapshot()`, a "snapshot" is the list that is the
 * `segments` of today's dict: the allocator's state at one moment, with no
 * trace and no settings. It reads as a snapshot with those segments and no
 * device traces, so that what needs only segments (the state, its stacks)
 * answers, and what needs a history says it has none.
 */
function segmentList(segments: readonly PickleValue[], stacks: StackTable): MemorySnapshot {
  const parsed = segments.map((s, i) => parseSegment(s, `segments[${i}]`, stacks));
  return {
    traces: [],
    segments: parsed,
    allocatorSettings: undefined,
    frames: stacks.frames,
    stacks: stacks.stacks(),
    traceAllocMaxEntries: undefined,
    traceAllocOverflowed: undefined,
    externalAnnotations: 0,
    form: 'segment-list',
  };
}

function parseTrace(
  list: StackValue,
  device: number,
  stacks: StackTable,
): { trace: DeviceTrace; workspace: readonly number[]; workspaceBytes: number } {
  if (list instanceof TraceBuilder) {
    const trace = list.finish(device);
    return { trace, workspace: list.columns.workspace, workspaceBytes: list.columns.workspaceBytes };
  }
  const where = `device_traces[${device}]`;
  if (!Array.isArray(list)) throw notSnapshot(`${where} is ${describe(list)}, expected a list`);
  const out = new TraceColumns(list.length);
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    if (!isPickleDict(e)) throw notSnapshot(`${where}[${i}] is ${describe(e)}, expected a dict`);
    addEntry(out, e, where, i, stacks);
  }
  return { trace: out.finish(device), workspace: out.workspace, workspaceBytes: out.workspaceBytes };
}

function parseSegment(s: PickleValue, where: string, stacks: StackTable): SnapshotSegment {
  if (!isPickleDict(s)) throw notSnapshot(`${where} is ${describe(s)}, expected a dict`);
  const address = field(s, where, 'address');
  const blocksValue = s.blocks ?? [];
  if (!Array.isArray(blocksValue))
    throw notSnapshot(`${where}.blocks is ${describe(blocksValue)}, expected a list`);
  // Blocks tile the segment in order; older snapshots give no block address (memory_viz adds them up too).
  let next = address;
  const blocks = blocksValue.map((b, j): SnapshotBlock => {
    const at = `${where}.blocks[${j}]`;
    if (!isPickleDict(b)) throw notSnapshot(`${at} is ${describe(b)}, expected a dict`);
    const blockAddress = b.address === undefined ? next : field(b, at, 'address');
    const size = field(b, at, 'size');
    next = blockAddress + size;
    const state = b.state;
    if (typeof state !== 'string' || !BLOCK_STATES.includes(state)) {
      throw notSnapshot(`${at}.state is ${describe(state)}, expected one of ${BLOCK_STATES.join(', ')}`);
    }
    return {
      address: blockAddress,
      size,
      requestedSize: b.requested_size === undefined ? size : field(b, at, 'requested_size'),
      state: state as BlockState,
      stack: stacks.of(b.frames, at, -1),
    };
  });
  const type = s.segment_type;
  return {
    device: field(s, where, 'device'),
    address,
    totalSize: field(s, where, 'total_size'),
    stream: s.stream === undefined ? 0 : integer(s.stream, where, -1, 'stream'),
    segmentType: typeof type === 'string' ? type : undefined,
    isExpandable: s.is_expandable === true,
    poolId: poolIdOf(s.segment_pool_id, where),
    stack: stacks.of(s.frames, where, -1),
    blocks,
  };
}

/**
 * `allocator_settings` is handed on as it was read (PyTorch's are two
 * levels deep), so it must be a tree that a walk, a copy or a JSON dump
 * ends on soon: a pickle may make a container hold itself, share one many
 * times, or nest thousands deep. Walked without recursion, so a deep one is
 * refused, not a stack overflow.
 */
function checkTree(root: PickleValue, where: string): void {
  const MAX_DEPTH = 16;
  // Every container once: a shared one could make a copy exponentially big, and a cycle endless.
  const seen = new Set<object>();
  const work: { v: PickleValue; depth: number }[] = [{ v: root, depth: 0 }];
  while (work.length > 0) {
    const { v, depth } = work.pop()!;
    if (typeof v !== 'object' || v === null || v instanceof Uint8Array) continue;
    if (v instanceof PickleTuple && v.items.length === 0) continue; // the reader's one empty tuple
    if (seen.has(v)) throw notSnapshot(`'${where}' holds the same container twice, or itself`);
    if (depth >= MAX_DEPTH) throw notSnapshot(`'${where}' nests deeper than ${MAX_DEPTH} levels`);
    seen.add(v);
    const items =
      v instanceof PickleTuple
        ? v.items
        : Array.isArray(v)
          ? v
          : v instanceof Map
            ? [...v.keys(), ...v.values()]
            : Object.values(v);
    for (const item of items) work.push({ v: item, depth: depth + 1 });
  }
}

function poolIdOf(v: PickleValue | undefined, where: string): readonly [number, number] | undefined {
  if (v === undefined) return undefined;
  const items = v instanceof PickleTuple ? v.items : Array.isArray(v) ? v : undefined;
  if (items?.length === 2 && items.every((x) => typeof x === 'number' && Number.isSafeInteger(x))) {
    return [items[0] as number, items[1] as number];
  }
  throw wrongType(v, fieldName(where, -1, 'segment_pool_id'), 'a pair of integers');
}

function field(d: PickleDict, where: string, key: string): number {
  return count(d[key], where, -1, key);
}
