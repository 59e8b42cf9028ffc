/**
 * A PyTorch memory snapshot as typed data (research note T1-T4): what
 * `torch.cuda.memory._snapshot()` returns and `_dump_snapshot` pickles.
 *
 * Note [Compact traces]: each device's events are parallel typed arrays
 * (action code, address, size, stream, time) rather than objects, so a
 * million events cost about 30 MB and replay reads them without touching the
 * unpickled dicts again. Frames are not kept.
 */
import { SnapshotError } from './errors.js';
import { isPickleDict, type PickleDict, PickleTuple, type PickleValue } from './pickle/value.js';

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

/** One device's trace, event i being (action[i], addr[i], size[i], stream[i], timeUs[i]). */
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
  /** Microseconds since the epoch; NaN where the entry has no time_us (older PyTorch). */
  readonly timeUs: Float64Array;
}

export type BlockState = 'active_allocated' | 'active_pending_free' | 'inactive';

export interface SnapshotBlock {
  readonly address: number;
  readonly size: number;
  readonly requestedSize: number;
  readonly state: BlockState;
}

export interface SnapshotSegment {
  readonly device: number;
  readonly address: number;
  readonly totalSize: number;
  readonly stream: number;
  readonly segmentType: string | undefined;
  readonly isExpandable: boolean;
  readonly blocks: readonly SnapshotBlock[];
}

export interface MemorySnapshot {
  /** The allocator's segments when the snapshot was taken (T4). */
  readonly segments: readonly SnapshotSegment[];
  /** One trace per device, in device order (T1). */
  readonly traces: readonly DeviceTrace[];
  /** `allocator_settings` as recorded (PYTORCH_CUDA_ALLOC_CONF's values), or undefined when absent. */
  readonly allocatorSettings: PickleDict | undefined;
}

const CODES = new Map<string, number>(ACTIONS.map((a, i) => [a, i]));
const BLOCK_STATES: readonly string[] = ['active_allocated', 'active_pending_free', 'inactive'];

/** Check an unpickled value and turn it into a MemorySnapshot; a SnapshotError says what is wrong. */
export function parseSnapshot(value: PickleValue): MemorySnapshot {
  if (!isPickleDict(value)) {
    throw notSnapshot(`the pickle holds ${describe(value)}, not a dict`);
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
  return {
    traces: traces.map((t, device) => parseTrace(t, device)),
    segments: segments.map((s, i) => parseSegment(s, `segments[${i}]`)),
    allocatorSettings: settings,
  };
}

function parseTrace(list: PickleValue, device: number): DeviceTrace {
  const where = `device_traces[${device}]`;
  if (!Array.isArray(list)) throw notSnapshot(`${where} is ${describe(list)}, expected a list`);
  const n = list.length;
  const action = new Uint8Array(n);
  const addr = new Float64Array(n);
  const size = new Float64Array(n);
  const stream = new Float64Array(n);
  const timeUs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const e = list[i] as PickleDict;
    if (!isPickleDict(e)) throw notSnapshot(`${where}[${i}] is ${describe(e)}, expected a dict`);
    const a = e.action;
    const code = typeof a === 'string' ? CODES.get(a) : undefined;
    if (code === undefined) {
      throw notSnapshot(
        typeof a === 'string'
          ? `${where}[${i}] has unknown action '${a}' (known: ${ACTIONS.join(', ')})`
          : `${where}[${i}].action is ${describe(a)}, expected a string`,
      );
    }
    action[i] = code;
    // An oom entry carries the device's free bytes in place of an address (Module.cpp).
    addr[i] =
      code === Action.oom
        ? count(e.device_free ?? e.addr ?? 0, where, i, 'device_free')
        : count(e.addr, where, i, 'addr');
    size[i] = count(e.size, where, i, 'size');
    stream[i] = e.stream === undefined ? 0 : integer(e.stream, where, i, 'stream');
    const t = e.time_us;
    timeUs[i] = t === undefined || t === null ? Number.NaN : integer(t, where, i, 'time_us');
  }
  return { device, length: n, action, addr, size, stream, timeUs };
}

function parseSegment(s: PickleValue, where: string): SnapshotSegment {
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
    blocks,
  };
}

function field(d: PickleDict, where: string, key: string): number {
  return count(d[key], where, -1, key);
}

/** A non-negative safe integer, or a SnapshotError naming the field. */
function count(v: PickleValue | undefined, where: string, i: number, key: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  throw wrongType(v, where, i, key, 'a non-negative integer');
}

function integer(v: PickleValue, where: string, i: number, key: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  throw wrongType(v, where, i, key, 'an integer');
}

function wrongType(v: PickleValue | undefined, where: string, i: number, key: string, expected: string) {
  const at = i >= 0 ? `${where}[${i}].${key}` : `${where}.${key}`;
  return notSnapshot(v === undefined ? `${at} is missing` : `${at} is ${describe(v)}, expected ${expected}`);
}

function notSnapshot(message: string): SnapshotError {
  return new SnapshotError('not-a-snapshot', `not a memory snapshot: ${message}`);
}

/** A value as a message names it: "a string ('abc')", "None", "a list of 3". */
export function describe(v: PickleValue | undefined): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'None';
  if (typeof v === 'string') return `a string ('${v.length > 40 ? `${v.slice(0, 40)}...` : v}')`;
  if (typeof v === 'number') return Number.isInteger(v) ? `the integer ${v}` : `the float ${v}`;
  if (typeof v === 'bigint') return `the integer ${v} (beyond 2^53)`;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (v instanceof PickleTuple) return `a tuple of ${v.items.length}`;
  if (v instanceof Uint8Array) return `bytes (${v.length})`;
  return 'a dict';
}
