/**
 * The snapshot reader's mutation fuzzer: mutants of real snapshots (flipped
 * bytes, truncations, inserted, zeroed and doubled runs, and, knowing where
 * the opcodes are, swapped opcodes and flipped operand bits), each read by the
 * streaming reader and by the plain one, and judged by Note [Mutant rules].
 * Seeded: a seed and a fixture replay a mutant exactly.
 *
 * Note [Mutant rules]: whatever the bytes, a reading
 *   throw     ends in a SnapshotError or a PickleError, never another throw;
 *   message   with a message of one line (what the CLI prints, exit 1);
 *   loose     or gives a snapshot that holds only what replay may trust:
 *             action codes it knows, addresses and sizes that are safe
 *             non-negative integers, stacks and frames that exist;
 *   slow      in bounded time,
 *   memory    and bounded memory (a mutated length must not become a huge
 *             allocation);
 *   disagree  and the two readers agree: when both load, the same snapshot;
 *             the streaming reader never loads what the plain one refuses,
 *             and refuses more only as a malformed pickle (Note [Streamed
 *             refusals]).
 *
 * Note [Streamed refusals]: the streaming reader keeps no trace entry and
 * no frames list it settled, and makes its own containers for the places a
 * snapshot streams (device_traces, external_annotations), so a pickle that
 * points back at a streamed part (a BINGET of it), puts an entry made for a
 * trace elsewhere, or moves a streamed part to another place is refused by
 * it where the plain reader, which keeps everything, may read a snapshot.
 * Python's pickler never writes that; a mutant may.
 */
import { gunzipSync } from 'node:zlib';
import { SnapshotError } from '../../src/replay/errors.js';
import { readPickle, readSnapshotBytes } from '../../src/replay/read/load.js';
import { Op, PickleError } from '../../src/replay/read/pickle/index.js';
import { ACTIONS, type MemorySnapshot, parseSnapshot } from '../../src/replay/read/snapshot.js';
import { Random } from '../flavors/fuzz/random.js';

export const MUTANT_RULES = ['throw', 'message', 'loose', 'slow', 'memory', 'disagree'] as const;
export type MutantRule = (typeof MUTANT_RULES)[number];

export interface MutantViolation {
  readonly rule: MutantRule;
  readonly fixture: string;
  /** The mutant's seed, and what was done to the bytes. */
  readonly seed: number;
  readonly mutations: string;
  readonly detail: string;
}

/** The two readings judged: bytes (gzip or not) to a snapshot. */
export interface SnapshotReaders {
  readonly streaming: (bytes: Uint8Array) => MemorySnapshot;
  readonly plain: (bytes: Uint8Array) => MemorySnapshot;
}

export const READERS: SnapshotReaders = {
  streaming: readSnapshotBytes,
  plain: (bytes) => parseSnapshot(readPickle(bytes)),
};

export interface FuzzOptions {
  readonly seed: number;
  /** Mutants of each fixture. */
  readonly mutants: number;
  readonly readers?: SnapshotReaders;
  /** One reading may take this much CPU time (a runaway loop that ends still ends late). */
  readonly slowMs?: number;
  /** One reading may leave this much more memory in use than before it. */
  readonly memoryBytes?: number;
  /** Given each snapshot the streaming reader loads, with what the fuzzer knows of it. */
  readonly onLoaded?: (
    snapshot: MemorySnapshot,
    mutant: { fixture: string; seed: number; mutations: string },
  ) => void;
}

export interface FuzzReport {
  readonly violations: MutantViolation[];
  readonly loaded: number;
  /** Refusals by the streaming reader, by error kind. */
  readonly refused: Record<string, number>;
}

/** A fixture: its name, its bytes as committed (gzip) and inflated, and where the pickle's opcodes are. */
export interface MutantBase {
  readonly name: string;
  readonly gzip: Uint8Array;
  readonly pickle: Uint8Array;
  readonly opcodes: Int32Array;
}

export function mutantBase(name: string, gzip: Uint8Array): MutantBase {
  const pickle = gunzipSync(gzip);
  return { name, gzip, pickle, opcodes: opcodeOffsets(pickle) };
}

/**
 * Opcodes a swap may trade for one another: same operand, another meaning
 * (a dict for a list, one item for a batch, a get for a put), which is where
 * the streaming reader's guesses (Note [Snapshot-shaped reading]) are tried.
 */
const SWAPS: readonly (readonly number[])[] = [
  [Op.EMPTY_DICT, Op.EMPTY_LIST, Op.EMPTY_TUPLE, Op.MARK, Op.NONE, Op.NEWTRUE, Op.POP, Op.DUP, Op.MEMOIZE],
  [
    Op.APPEND,
    Op.APPENDS,
    Op.SETITEM,
    Op.SETITEMS,
    Op.TUPLE,
    Op.TUPLE1,
    Op.TUPLE2,
    Op.TUPLE3,
    Op.POP_MARK,
    Op.STOP,
  ],
  [Op.BINPUT, Op.BINGET, Op.BININT1],
  [Op.LONG_BINPUT, Op.LONG_BINGET, Op.BININT],
  [Op.SHORT_BINUNICODE, Op.SHORT_BINBYTES, Op.LONG1],
  [Op.BINUNICODE, Op.BINBYTES, Op.LONG4],
];

/** Operand bytes of the opcodes with a fixed-size operand (0: none, or a sized one). */
const OPERAND = new Uint8Array(256);
for (const [op, n] of [
  [Op.PROTO, 1],
  [Op.FRAME, 8],
  [Op.BINPUT, 1],
  [Op.BINGET, 1],
  [Op.BININT1, 1],
  [Op.BININT2, 2],
  [Op.LONG_BINPUT, 4],
  [Op.LONG_BINGET, 4],
  [Op.BININT, 4],
  [Op.BINFLOAT, 8],
]) {
  OPERAND[op] = n;
}

/** Each opcode's offset, for mutations that hit an opcode or its operand rather than any byte. */
function opcodeOffsets(p: Uint8Array): Int32Array {
  const view = new DataView(p.buffer, p.byteOffset, p.byteLength);
  const out: number[] = [];
  for (let at = 0; at < p.length; ) {
    out.push(at);
    const op = p[at];
    if (OPERAND[op] > 0) at += 1 + OPERAND[op];
    else if (op === Op.SHORT_BINUNICODE || op === Op.SHORT_BINBYTES || op === Op.LONG1) at += 2 + p[at + 1];
    else if (op === Op.BINUNICODE || op === Op.BINBYTES || op === Op.LONG4)
      at += 5 + view.getUint32(at + 1, true);
    else if (op === Op.BINUNICODE8 || op === Op.BINBYTES8) at += 9 + Number(view.getBigUint64(at + 1, true));
    else at += 1;
  }
  return Int32Array.from(out);
}

const RAW = ['flip', 'truncate', 'insert', 'zero', 'double'] as const;

/** Mutate a copy of `base`'s pickle (or, with `gzip`, of its gzip bytes): mutations named in `mutations`. */
export function mutate(
  base: MutantBase,
  random: Random,
  gzip = false,
): { bytes: Uint8Array; mutations: string[] } {
  let b = Buffer.from(gzip ? base.gzip : base.pickle);
  const mutations: string[] = [];
  // Mostly one mutation: a mutant that is still a pickle reaches the snapshot checks.
  for (let k = random.chance(0.7) ? 1 : 2 + random.below(2); k > 0; k--) {
    // The opcode offsets hold until the first mutation moves bytes; later ones pick from them anyway.
    if (!gzip && random.chance(0.5)) {
      const at = base.opcodes[random.below(base.opcodes.length)];
      if (at >= b.length) continue;
      const kin = SWAPS.find((group) => group.includes(b[at]));
      if (kin !== undefined && random.chance(0.5)) {
        b[at] = random.pick(kin);
        mutations.push(`swap@${at}`);
      } else {
        // A bit of the operand: a length, a memo index, an integer.
        const where = Math.min(b.length - 1, at + 1 + random.below(4));
        b[where] ^= 1 << random.below(8);
        mutations.push(`operand@${where}`);
      }
      continue;
    }
    const at = random.below(b.length + 1);
    const kind = random.pick(RAW);
    const len = 1 + random.below(kind === 'double' ? 256 : 32);
    if (kind === 'flip' && at < b.length) b[at] ^= 1 + random.below(255);
    else if (kind === 'truncate') b = b.subarray(0, at);
    else if (kind === 'insert') {
      const run = Buffer.from(Array.from({ length: len }, () => random.below(256)));
      b = Buffer.concat([b.subarray(0, at), run, b.subarray(at)]);
    } else if (kind === 'zero') b.fill(0, at, Math.min(b.length, at + len));
    else if (kind === 'double') {
      const end = Math.min(b.length, at + len);
      b = Buffer.concat([b.subarray(0, end), b.subarray(at, end), b.subarray(end)]);
    }
    mutations.push(`${kind}@${at}${kind === 'flip' || kind === 'truncate' ? '' : `+${len}`}`);
  }
  return { bytes: b, mutations };
}

type Outcome =
  | { readonly loaded: MemorySnapshot; readonly ms: number; readonly grew: number }
  | { readonly error: unknown; readonly ms: number; readonly grew: number };

function read(reader: (bytes: Uint8Array) => MemorySnapshot, bytes: Uint8Array): Outcome {
  const before = used();
  // CPU time, not wall time: a loaded machine must not make a reading look slow.
  const cpu = process.cpuUsage();
  const ms = () => {
    const d = process.cpuUsage(cpu);
    return (d.user + d.system) / 1000;
  };
  try {
    const loaded = reader(bytes);
    return { loaded, ms: ms(), grew: used() - before };
  } catch (error) {
    return { error, ms: ms(), grew: used() - before };
  }
}

/** Heap and buffers in use; a huge allocation that is still held shows here. */
function used(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Run the fuzzer over `bases`; every violation of Note [Mutant rules] is reported. */
export function fuzzSnapshots(bases: readonly MutantBase[], options: FuzzOptions): FuzzReport {
  const readers = options.readers ?? READERS;
  const slowMs = options.slowMs ?? 5000;
  const memoryBytes = options.memoryBytes ?? 768 * 2 ** 20;
  const violations: MutantViolation[] = [];
  const refused: Record<string, number> = {};
  let loaded = 0;
  for (const base of bases) {
    for (let m = 0; m < options.mutants; m++) {
      const seed = (options.seed + m * 7919) >>> 0;
      const random = new Random(seed);
      // One mutant in eight mutates the gzip stream itself; the rest the pickle inside it.
      const gzip = random.below(8) === 0;
      const mutant = mutate(base, random, gzip);
      const mutations = `${gzip ? 'gzip ' : ''}${mutant.mutations.join(' ')}`;
      const report = (rule: MutantRule, detail: string) =>
        violations.push({ rule, fixture: base.name, seed, mutations, detail });
      const streaming = read(readers.streaming, mutant.bytes);
      const plain = read(readers.plain, mutant.bytes);
      for (const [who, o] of [
        ['streaming', streaming],
        ['plain', plain],
      ] as const) {
        if (o.ms > slowMs) report('slow', `the ${who} reader took ${o.ms.toFixed(0)} ms of CPU`);
        if (o.grew > memoryBytes)
          report('memory', `the ${who} reader left ${(o.grew / 2 ** 20).toFixed(0)} MiB more in use`);
        if ('error' in o) {
          const why = typed(o.error);
          if (why !== undefined) report(why.rule, `${who}: ${why.detail}`);
        } else {
          const why = untrusted(o.loaded);
          if (why !== undefined) report('loose', `${who}: ${why}`);
        }
      }
      const differs = disagreement(streaming, plain);
      if (differs !== undefined) report('disagree', differs);
      if ('loaded' in streaming) {
        loaded++;
        options.onLoaded?.(streaming.loaded, { fixture: base.name, seed, mutations });
      } else {
        const e = streaming.error as { name?: string; kind?: string };
        const key = `${e.name}:${e.kind}`;
        refused[key] = (refused[key] ?? 0) + 1;
      }
    }
  }
  return { violations, loaded, refused };
}

/** Why an error breaks the throw or message rule, or undefined when it is one of the reader's own. */
function typed(e: unknown): { rule: MutantRule; detail: string } | undefined {
  if (!(e instanceof SnapshotError || e instanceof PickleError)) {
    const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    return { rule: 'throw', detail: `threw ${what.slice(0, 200)}` };
  }
  if (e.message === '' || /[\r\n]/.test(e.message) || e.message.length > 1000) {
    return {
      rule: 'message',
      detail: `${e.name} of ${e.message.length} characters: ${JSON.stringify(e.message.slice(0, 200))}`,
    };
  }
  return undefined;
}

/** What a loaded snapshot holds that replay may not trust, or undefined. */
function untrusted(s: MemorySnapshot): string | undefined {
  const count = (v: number) => Number.isSafeInteger(v) && v >= 0;
  const stackOk = (k: number) => Number.isInteger(k) && k >= -1 && k < s.stacks.length;
  for (let d = 0; d < s.traces.length; d++) {
    const t = s.traces[d];
    if (t.device !== d) return `trace ${d} says it is device ${t.device}`;
    const columns = [t.action, t.addr, t.size, t.stream, t.timeUs, t.stack];
    if (columns.some((c) => c.length !== t.length)) return `trace ${d}'s columns are not ${t.length} long`;
    for (let i = 0; i < t.length; i++) {
      if (t.action[i] >= ACTIONS.length) return `trace ${d} event ${i} has action code ${t.action[i]}`;
      if (!count(t.addr[i]) || !count(t.size[i]))
        return `trace ${d} event ${i}: addr ${t.addr[i]}, size ${t.size[i]}`;
      if (!Number.isSafeInteger(t.stream[i])) return `trace ${d} event ${i}: stream ${t.stream[i]}`;
      if (!Number.isNaN(t.timeUs[i]) && !Number.isFinite(t.timeUs[i]))
        return `trace ${d} event ${i}: time ${t.timeUs[i]}`;
      if (!stackOk(t.stack[i])) return `trace ${d} event ${i}: stack ${t.stack[i]}`;
    }
  }
  for (const st of s.stacks) {
    if (st.length === 0 || st.some((f) => !(f >= 0 && f < s.frames.length)))
      return 'a stack names a frame that is not there';
  }
  for (const f of s.frames) {
    if (typeof f.filename !== 'string' || typeof f.name !== 'string')
      return 'a frame without a filename or name';
    if (typeof f.line !== 'bigint' && !Number.isSafeInteger(f.line)) return `a frame's line is ${f.line}`;
  }
  for (const g of s.segments) {
    if (![g.device, g.address, g.totalSize].every(count))
      return `a segment: ${g.device}, ${g.address}, ${g.totalSize}`;
    if (!stackOk(g.stack) || !Number.isSafeInteger(g.stream)) return 'a segment: stack or stream';
    for (const b of g.blocks) {
      if (![b.address, b.size, b.requestedSize].every(count) || !stackOk(b.stack))
        return 'a block of a segment';
      if (!['active_allocated', 'active_pending_free', 'inactive'].includes(b.state))
        return `a block in state ${b.state}`;
    }
  }
  return undefined;
}

/** How the two readings disagree beyond Note [Streamed refusals], or undefined. */
function disagreement(streaming: Outcome, plain: Outcome): string | undefined {
  if ('loaded' in streaming && 'loaded' in plain) {
    return asText(streaming.loaded) === asText(plain.loaded) ? undefined : 'both loaded, different snapshots';
  }
  if ('loaded' in streaming && 'error' in plain) {
    return `the streaming reader loaded what the plain one refused (${(plain.error as Error).message})`;
  }
  // Note [Streamed refusals]: what the streaming reader alone refuses is a pickle it cannot stream.
  if ('error' in streaming && 'loaded' in plain) {
    const e = streaming.error;
    if (!(e instanceof PickleError && e.kind === 'malformed'))
      return `the streaming reader alone refused, and not as a malformed pickle (${(e as Error).message})`;
  }
  return undefined;
}

/** A snapshot as one string (columns as base64, bigints marked), to compare two readings. */
export function asText(s: MemorySnapshot): string {
  const data = {
    ...s,
    traces: s.traces.map((t) => ({
      device: t.device,
      length: t.length,
      columns: [t.action, t.addr, t.size, t.stream, t.timeUs, t.stack].map((c) =>
        Buffer.from(c.buffer, c.byteOffset, c.byteLength).toString('base64'),
      ),
    })),
    stacks: s.stacks.map((st) => [...st]),
  };
  return JSON.stringify(data, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
}
