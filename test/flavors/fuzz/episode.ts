/**
 * One fuzzing episode: a fresh simulated machine, two live processes of one
 * flavor and a disposed third, a few thousand seeded calls mixing valid and
 * hostile arguments, each checked against the front ends' contract, and a
 * valid teardown whose memory must come back to the baseline to the byte.
 *
 * Note [Fuzzer checks]
 * After every call:
 *  - throw: the call returned (a vendor call never throws);
 *  - code: a number the vendor defines (or a string, for the string calls);
 *  - changed: a failing call left every process's runtime.describe(),
 *    stats() and live event count, the machine's pools, host pool, live allocations and every
 *    process's open fds exactly as they were (not the simulator's resident
 *    bytes, the host memory behind pages first touched: a synchronous call
 *    runs the work queued on streams before its own checks, as the legacy
 *    default stream does, and that earlier work may touch pages even when
 *    the call then fails);
 *  - box / host: a failing call left the plain boxes and host buffers it was
 *    given as they were;
 *  - bytes: every byte a successful synchronous read returned, where the
 *    fuzzer knows what was written there (through any mapping of the same
 *    memory, in either process, an import included), equals the shadow;
 *  - wait: after a stream waited on an event and that stream's
 *    synchronisation succeeded, the event is complete, whichever device or
 *    context recorded it and whichever is current (the default stream
 *    included: issue 17);
 *  - context: a cuEventRecord that succeeded had its event and stream of one
 *    context (two contexts on one device are two);
 *  - pointer: CU_POINTER_ATTRIBUTE_CONTEXT of cuMemAlloc memory is the
 *    context that was current at the allocation;
 *  - faulted: once a CUDA process answered CUDA_ERROR_LAUNCH_FAILED (work
 *    faulted on a device), some device's context answers it for the rest of
 *    the process, while the VMM calls, which use no context, still answer
 *    (Note [Faulted devices]);
 *  - owned: a cuCtxDestroy or cuDevicePrimaryCtxReset that succeeded took
 *    the context's cuMemAlloc memory with it (Note [Destroying a primary
 *    context]);
 *  - destroyed, stack, crossStream, reset, version (settle-calls.ts, issue 17
 *    item 4): each event call answers its recorded code for a destroyed
 *    event; pushes, pops and cuCtxSetCurrent keep the context stack; a copy
 *    or set on another context's or device's stream succeeds and lands; an
 *    ACL reset at aclrtSetDevice count 0 is refused; a version query answers
 *    after dispose what it answers live;
 *  - baseline (once, after the episode): a teardown through the vendor API
 *    succeeds call by call and leaves every pool, the host pool, the live
 *    allocations and the resident bytes at zero, as the machine started.
 * The shadow follows memory, not addresses: it is kept per physical
 * allocation (a process's core handle id, and the exporter's memory for an
 * import, learnt from the process's state rather than from what a box reads
 * back: Note [What a box reads back]), and a range is resolved through the
 * mappings runtime.describe() reports before the call. Asynchronous writes make their destination
 * unknown rather than known (their order against other streams is the
 * simulator's business); asynchronous reads are not compared.
 */
import { createMachine, type Machine } from '../../../src/backends/sim/machine.js';
import type { DeviceSpec } from '../../../src/backends/sim/presets.js';
import type { RuntimeDescription } from '../../../src/core/runtime.js';
import { garbage } from './garbage.js';
import type { Random } from './random.js';

/** What the fuzzer found wrong, with enough to replay it. */
export interface Violation {
  readonly rule:
    | 'throw'
    | 'code'
    | 'internal'
    | 'changed'
    | 'box'
    | 'host'
    | 'bytes'
    | 'wait'
    | 'context'
    | 'pointer'
    | 'owned'
    | 'faulted'
    | 'destroyed'
    | 'stack'
    | 'crossStream'
    | 'reset'
    | 'version'
    | 'baseline';
  readonly call: string;
  readonly detail: string;
  readonly index: number;
}

/** A process of any flavor, as the fuzzer sees it. */
export interface FuzzedProcess {
  readonly runtime: {
    readonly pid: number;
    describe(): RuntimeDescription;
    stats(): unknown;
    /** Live events (a failing event call must leave their number alone). */
    readonly eventCount: number;
  };
  dispose(): void;
}

/** What a call tells the episode when it succeeds. */
export interface Effects {
  /** Bytes written synchronously at va (a copy of what was written). */
  write?: { va: number; bytes: Uint8Array };
  fill?: { va: number; value: number; size: number };
  copy?: { dst: number; src: number; size: number };
  /** A synchronous read into `into` of `size` bytes from va: compared with the shadow. */
  read?: { va: number; into: Uint8Array; size: number };
  /** An asynchronous write: the range becomes unknown. */
  unknown?: { va: number; size: number };
}

/** One call of a flavor's table: builds its arguments, runs, and reports what success means. */
export interface CallSpec<P extends FuzzedProcess> {
  readonly name: string;
  readonly weight?: number;
  /** Calls whose failure may leave earlier effects (a vendor rule, named in the table). */
  readonly partialOnFailure?: boolean;
  run(
    ep: Episode<P>,
    p: P,
    peer: P,
  ): {
    result: unknown;
    effects?: Effects;
    onSuccess?: () => void;
    /** This call may fail after earlier effects, by a vendor rule (hipMemSetAccess with several descriptors). */
    partial?: boolean;
    /** A rule of the model the call broke, found by the call's own checks (wait, context, pointer). */
    broken?: {
      readonly rule: Exclude<Violation['rule'], 'throw' | 'code' | 'internal'>;
      readonly detail: string;
    };
  };
}

/** A flavor's part: how to make its processes, its call table, its codes and its teardown. */
export interface FlavorModel<P extends FuzzedProcess> {
  readonly vendor: string;
  readonly devices: readonly DeviceSpec[];
  readonly codes: ReadonlySet<number>;
  readonly success: number;
  /** A process on `machine` whose internal errors go to `report`. */
  make(machine: Machine, report: (message: string, error?: unknown) => void): P;
  /** Bring a process to where calls work (initialised, a device or context current). */
  prepare(p: P): void;
  readonly calls: readonly CallSpec<P>[];
  /** Release everything `p` holds through the vendor API; the names of calls that did not succeed. */
  teardown(ep: Episode<P>, p: P): string[];
}

/** Shadow of one physical allocation: the bytes the fuzzer knows, and which. */
class Shadow {
  constructor(readonly id: number) {}
  data = new Uint8Array(0);
  known = new Uint8Array(0);
  ensure(size: number): void {
    if (size <= this.data.length) return;
    const n = Math.max(size, this.data.length * 2);
    const data = new Uint8Array(n);
    const known = new Uint8Array(n);
    data.set(this.data);
    known.set(this.known);
    this.data = data;
    this.known = known;
  }
}

/** Where a device byte lives: a shadow and an offset in it. */
type Place = readonly [Shadow, number];

const FD_PROBE = 64;

export class Episode<P extends FuzzedProcess> {
  readonly machine: Machine;
  readonly processes: P[];
  readonly ghost: P;
  readonly violations: Violation[] = [];
  /** How often each call succeeded, and how many read bytes were compared with a known shadow byte. */
  readonly successes = new Map<string, number>();
  /** The codes each live process has answered, per pid (rule faulted reads them). */
  readonly answered = new Map<number, Set<number>>();
  comparedBytes = 0;
  /** Pools of values the flavor handed out, per pid: pointers, handles, fds, streams. */
  readonly pointers = new Map<number, bigint[]>();
  readonly handles = new Map<number, bigint[]>();
  readonly fds = new Map<number, number[]>();
  readonly streams = new Map<number, bigint[]>();
  readonly events = new Map<number, bigint[]>();
  /** Contexts a process made (cuCtxCreate), live or destroyed since. */
  readonly contexts = new Map<number, bigint[]>();
  /** Values that were valid once (freed pointers, released handles, closed streams). */
  readonly stale: bigint[] = [];
  /** Shadows by `${pid}:${core handle id}`; an import's key points at its exporter's shadow. */
  readonly #shadows = new Map<string, Shadow>();
  /** Exported fd or token (as `${pid}:${fd}`) -> the exporter's shadow key. */
  readonly exported = new Map<string, string>();
  #index = 0;
  /** The last calls, for VMMKIT_FUZZ_HISTORY. */
  readonly #history: string[] = [];
  /** The host buffers this episode made (hostile ones are never inspected: touching them may throw). */
  readonly #plain = new WeakSet<object>();
  /** The call running now, for the report hook. */
  #current = '';
  /** Boxes and host buffers the current call was given, to compare when it fails. */
  #tracked: { box?: object; buffer?: Uint8Array; before: unknown }[] = [];

  constructor(
    readonly rng: Random,
    readonly model: FlavorModel<P>,
    readonly garbageRate: number,
  ) {
    this.machine = createMachine({ devices: model.devices as DeviceSpec[] });
    // An internal error answers the vendor's unknown code, which is in its set: the report hook catches it.
    const report = (message: string, error?: unknown) => {
      this.#violate(
        'internal',
        this.#current,
        `${message}: ${error instanceof Error ? error.stack : typeof error}`,
        this.#index,
      );
    };
    this.processes = [model.make(this.machine, report), model.make(this.machine, report)];
    for (const p of this.processes) model.prepare(p);
    this.ghost = model.make(this.machine, report);
    model.prepare(this.ghost);
    this.ghost.dispose();
    for (const p of [...this.processes, this.ghost]) {
      const pid = p.runtime.pid;
      this.pointers.set(pid, []);
      this.handles.set(pid, []);
      this.fds.set(pid, []);
      this.streams.set(pid, []);
      this.events.set(pid, []);
      this.contexts.set(pid, []);
    }
  }

  // --- argument makers (valid most of the time, hostile otherwise) ---------------------------

  /** `valid()`, or with the episode's garbage rate a hostile value. */
  arg<T>(valid: () => T): T {
    return (this.rng.chance(this.garbageRate) ? garbage(this.rng) : valid()) as T;
  }

  /** True for a host buffer host() made, not a hostile one. */
  isPlain(x: unknown): x is Uint8Array {
    return typeof x === 'object' && x !== null && this.#plain.has(x);
  }

  /** An out box: a plain one (watched), or a hostile one. */
  box<T>(initial: T): { value: T } {
    if (this.rng.chance(this.garbageRate)) return garbage(this.rng) as { value: T };
    const b = { value: initial };
    this.#tracked.push({ box: b, before: initial });
    return b;
  }

  /** A host buffer of n bytes with seeded contents (watched), or a hostile one. */
  host(n: number): Uint8Array {
    if (this.rng.chance(this.garbageRate)) return garbage(this.rng) as Uint8Array;
    const b = new Uint8Array(n);
    this.#plain.add(b);
    for (let i = 0; i < n; i++) b[i] = this.rng.below(256);
    this.#tracked.push({ buffer: b, before: b.slice() });
    return b;
  }

  /** A pointer this process was given (at its base or inside), a stale one, or none. */
  pointer(pid: number, granularity: number): bigint {
    const pool = this.pointers.get(pid) ?? [];
    const roll = this.rng.below(10);
    if (pool.length === 0 || roll === 0) return this.stale.length > 0 ? this.rng.pick(this.stale) : 0n;
    const base = this.rng.pick(pool);
    if (roll === 1) return base + BigInt(this.rng.below(4) * granularity);
    if (roll === 2) return base + BigInt(this.rng.pick([1, 16, 64, 4096]));
    return base;
  }

  /** A random mapping of the process (VMM or one-step), as [va, size], or undefined when it has none. */
  mapping(p: P): [number, number] | undefined {
    const all = p.runtime.describe().reservations.flatMap((r) => r.mappings);
    if (all.length === 0) return undefined;
    const m = this.rng.pick(all);
    return [m.va, m.size];
  }

  /**
   * An access range: most often one of the process's mappings exactly
   * ([va, size] as arguments), else a pointer and a size of the model's own.
   */
  accessRange<S>(p: P, ptr: () => bigint, size: () => S): [bigint, S | number] {
    const m = this.rng.chance(0.8) ? this.mapping(p) : undefined;
    const at = m === undefined ? ptr() : this.arg(() => BigInt(m[0]));
    const n = m === undefined ? this.arg(size) : this.arg(() => m[1]);
    return [at, n];
  }

  /** A live handle of the process and an empty VMM reservation that can hold it whole: [va, size, handle]. */
  mapTarget(p: P): [bigint, number, bigint] | undefined {
    const d = p.runtime.describe();
    if (d.allocations.length === 0) return undefined;
    const a = this.rng.pick(d.allocations);
    const free = d.reservations.filter(
      (r) => r.origin === 'vmm' && r.mappings.length === 0 && r.size >= a.size,
    );
    if (free.length === 0) return undefined;
    return [BigInt(this.rng.pick(free).base), a.size, BigInt(a.handle)];
  }

  /** A device address inside a mapping with room for `n` bytes after it, or a pooled pointer. */
  mappedPointer(p: P, granularity: number, n = 64): bigint {
    const m = this.rng.chance(0.7) ? this.mapping(p) : undefined;
    if (m === undefined) return this.pointer(p.runtime.pid, granularity);
    // A few offsets most of the time, so reads land where earlier writes did.
    const room = Math.max(0, m[1] - n);
    const offset = this.rng.chance(0.8) ? this.rng.pick([0, 0, 16, 64]) : this.rng.below(room + 1);
    return BigInt(m[0] + Math.min(offset, room));
  }

  handle(pid: number): bigint {
    const pool = this.handles.get(pid) ?? [];
    if (pool.length === 0 || this.rng.chance(0.1))
      return this.stale.length > 0 ? this.rng.pick(this.stale) : 0n;
    return this.rng.pick(pool);
  }

  fd(pid: number): number {
    const pool = this.fds.get(pid) ?? [];
    return pool.length === 0 || this.rng.chance(0.1) ? this.rng.below(8) : this.rng.pick(pool);
  }

  stream(pid: number): bigint {
    const pool = this.streams.get(pid) ?? [];
    return pool.length === 0 || this.rng.chance(0.3) ? 0n : this.rng.pick(pool);
  }

  /** A live event most of the time; else a stale value or NULL. */
  event(pid: number): bigint {
    const pool = this.events.get(pid) ?? [];
    if (pool.length === 0 || this.rng.chance(0.1))
      return this.stale.length > 0 && this.rng.chance(0.5) ? this.rng.pick(this.stale) : 0n;
    return this.rng.pick(pool);
  }

  /** Drop from a pool the values `live` says are gone (a context destroyed, a device reset took them). */
  prune(pool: Map<number, bigint[]>, pid: number, live: (value: bigint) => boolean): void {
    for (const v of [...(pool.get(pid) ?? [])]) if (!live(v)) this.forget(pool, pid, v);
  }

  remember(pool: Map<number, bigint[]>, pid: number, value: unknown): void {
    if (typeof value !== 'bigint' || value === 0n) return;
    const list = pool.get(pid);
    // Bounded pools keep describe() cheap and calls aimed at few objects.
    if (list !== undefined && !list.includes(value)) {
      list.push(value);
      if (list.length > 24) this.stale.push(list.shift() as bigint);
    }
  }

  forget(pool: Map<number, bigint[]>, pid: number, value: unknown): void {
    const list = pool.get(pid);
    if (list === undefined || typeof value !== 'bigint') return;
    const i = list.indexOf(value);
    if (i >= 0) {
      list.splice(i, 1);
      this.stale.push(value);
      if (this.stale.length > 32) this.stale.shift();
    }
  }

  /** An import in `pid` of handle id `id` is the memory exported as `exportKey`. */
  alias(pid: number, id: bigint, exportKey: string): void {
    const from = this.exported.get(exportKey);
    if (from === undefined) return;
    let shadow = this.#shadows.get(from);
    if (shadow === undefined) this.#shadows.set(from, (shadow = this.#newShadow()));
    const key = `${pid}:${id}`;
    const mine = this.#shadows.get(key);
    // A handle that had a shadow of its own already is the same memory imported twice: keep what it knew.
    if (mine !== undefined && mine !== shadow) return;
    this.#shadows.set(key, shadow);
  }

  shadowKey(pid: number, id: bigint | number): string {
    return `${pid}:${id}`;
  }

  /**
   * Note [What a box reads back]
   * A hostile out box may take a call's write and read back anything (a
   * Proxy whose get trap answers every key with one object): the call
   * succeeded, and the caller just cannot see what it made. The pools keep
   * what the box reads back (all a caller would know), but the shadow must
   * follow the memory all the same, or an import the fuzzer never learnt
   * gets a shadow of its own (the first time a mapping of it is read or
   * written), apart from its exporter's, and each then holds stale bytes
   * the other wrote. So an import's new handle and an export's new fd are
   * taken from the process's state before and after the call (its
   * runtime.describe() and its simulated fd table), never from the box.
   * (An ACL token hidden that way stays unknown: tokens are machine-wide
   * numbers from 0x51000000, which the fuzzer's guesses never reach.)
   */

  /** The handle values a live process holds (none for the disposed one). */
  handleValues(p: P): ReadonlySet<number> {
    if (!this.processes.includes(p)) return new Set();
    return new Set(p.runtime.describe().allocations.map((a) => a.handle));
  }

  /** The one handle value `p` holds that `before` lacks (Note [What a box reads back]), or undefined. */
  newHandle(p: P, before: ReadonlySet<number>): bigint | undefined {
    const made = [...this.handleValues(p)].filter((h) => !before.has(h));
    return made.length === 1 ? BigInt(made[0] as number) : undefined;
  }

  /** The open fds of a live process (none for the disposed one). */
  fdsOf(p: P): ReadonlySet<number> {
    const i = this.processes.indexOf(p);
    return new Set(i < 0 ? [] : this.openFds()[i]);
  }

  /** The one fd `p` has open that `before` lacks (Note [What a box reads back]), or undefined. */
  newFd(p: P, before: ReadonlySet<number>): number | undefined {
    const made = [...this.fdsOf(p)].filter((fd) => !before.has(fd));
    return made.length === 1 ? made[0] : undefined;
  }

  // --- one call ----------------------------------------------------------------------------------

  step(): void {
    const spec = this.#pickCall();
    const ghostCall = this.rng.chance(0.03);
    const [p, peer] = ghostCall
      ? [this.ghost, this.processes[0]]
      : this.rng.chance(0.5)
        ? [this.processes[0], this.processes[1]]
        : [this.processes[1], this.processes[0]];
    this.#tracked = [];
    const layouts = this.processes.map((q) => q.runtime.describe());
    const before = this.#fingerprint(layouts);
    const index = this.#index++;
    this.#current = spec.name;
    let outcome: ReturnType<CallSpec<P>['run']>;
    try {
      outcome = spec.run(this, p, peer);
    } catch (e) {
      this.#violate('throw', spec.name, `threw ${e instanceof Error ? e.message : typeof e}`, index);
      return;
    }
    const { result, effects, onSuccess, partial, broken } = outcome;
    if (broken !== undefined) this.#violate(broken.rule, spec.name, broken.detail, index);
    this.#history.push(
      `${index} ${p === this.ghost ? 'ghost' : p.runtime.pid} ${spec.name} -> ${String(result)}${effects ? ` ${JSON.stringify(effects, (_k, v) => (v instanceof Uint8Array ? `[${v.length} bytes ${v[0]}..]` : v))}` : ''}`,
    );
    if (this.#history.length > (Number(process.env.VMMKIT_FUZZ_HISTORY) || 16)) this.#history.shift();
    if (typeof result === 'number') {
      if (!this.model.codes.has(result)) this.#violate('code', spec.name, `answered ${result}`, index);
      if (p !== this.ghost) {
        const pid = p.runtime.pid;
        const codes = this.answered.get(pid) ?? new Set<number>();
        this.answered.set(pid, codes.add(result));
      }
    } else if (typeof result !== 'string' && result !== null) {
      this.#violate('code', spec.name, `answered a ${typeof result}`, index);
    }
    const failed = typeof result === 'number' && result !== this.model.success;
    if (failed) {
      if (!spec.partialOnFailure && !partial) {
        const after = this.#fingerprint(this.processes.map((q) => q.runtime.describe()));
        if (after !== before)
          this.#violate('changed', spec.name, `answered ${result}; ${firstDifference(before, after)}`, index);
      }
      for (const t of this.#tracked) {
        if (t.box !== undefined && !Object.is((t.box as { value: unknown }).value, t.before))
          this.#violate('box', spec.name, `answered ${result} but wrote its box`, index);
        if (t.buffer !== undefined && !sameBytes(t.buffer, t.before as Uint8Array))
          this.#violate('host', spec.name, `answered ${result} but wrote its host buffer`, index);
      }
      return;
    }
    if (typeof result === 'number') {
      this.successes.set(spec.name, (this.successes.get(spec.name) ?? 0) + 1);
      onSuccess?.();
      if (effects !== undefined && p !== this.ghost) {
        const layout = layouts[this.processes.indexOf(p)];
        if (layout !== undefined) this.#apply(spec.name, p.runtime.pid, layout, effects, index);
      }
    }
  }

  #pickCall(): CallSpec<P> {
    const calls = this.model.calls;
    let total = 0;
    for (const c of calls) total += c.weight ?? 1;
    let r = this.rng.next() * total;
    for (const c of calls) {
      r -= c.weight ?? 1;
      if (r < 0) return c;
    }
    return calls[calls.length - 1] as CallSpec<P>;
  }

  #violate(rule: Violation['rule'], call: string, detail: string, index: number): void {
    if (process.env.VMMKIT_FUZZ_HISTORY) detail += `\n${this.#history.join('\n')}`;
    if (this.violations.length < 50) this.violations.push({ rule, call, detail, index });
  }

  /** Everything observable a failing call must leave alone (Note [Fuzzer checks]). */
  #fingerprint(layouts: readonly RuntimeDescription[]): string {
    const m = this.machine;
    const parts: unknown[] = [
      layouts,
      this.processes.map((p) => p.runtime.stats()),
      this.processes.map((p) => p.runtime.eventCount),
      m.devices.map((d) => d.pool.used),
      m.host.used,
      m.liveAllocations,
      this.openFds(),
    ];
    return JSON.stringify(parts);
  }

  /** Each live process's open fds (the simulated fd tables; fds start at 3). */
  openFds(): number[][] {
    return this.processes.map((p) => {
      const sim = this.machine.process(p.runtime.pid);
      const open: number[] = [];
      for (let fd = 0; fd < FD_PROBE; fd++) if (sim.fileAt(fd) !== undefined) open.push(fd);
      return open;
    });
  }

  // --- shadows -----------------------------------------------------------------------------------

  #shadowIds = 0;
  #newShadow(): Shadow {
    return new Shadow(this.#shadowIds++);
  }

  /**
   * Bytes an asynchronous write of each process may still land on, as
   * `${shadow id}:${offset}`: its queue runs when that process next
   * synchronises or makes a synchronous copy, which may be after another
   * process wrote the same memory through an import.
   */
  readonly #pending = new Map<number, Set<string>>();

  #pendingElsewhere(pid: number, place: Place): boolean {
    const key = `${place[0].id}:${place[1]}`;
    for (const [other, set] of this.#pending) if (other !== pid && set.has(key)) return true;
    return false;
  }

  /** Where each byte of [va, va + size) lives, per the layout before the call; undefined if any is unmapped. */
  #places(pid: number, layout: RuntimeDescription, va: number, size: number): Place[] | undefined {
    const out: Place[] = [];
    if (!Number.isSafeInteger(va) || !Number.isSafeInteger(size)) return out;
    let at = va;
    const end = va + size;
    const mappings = layout.reservations.flatMap((r) => r.mappings).sort((x, y) => x.va - y.va);
    for (const m of mappings) {
      if (at >= end) break;
      if (m.va + m.size <= at) continue;
      if (m.va > at) return undefined;
      const key = this.shadowKey(pid, m.handle);
      let shadow = this.#shadows.get(key);
      if (shadow === undefined) this.#shadows.set(key, (shadow = this.#newShadow()));
      const stop = Math.min(end, m.va + m.size);
      shadow.ensure(m.offset + (stop - m.va));
      for (; at < stop; at++) out.push([shadow, m.offset + (at - m.va)]);
    }
    return at >= end ? out : undefined;
  }

  #apply(call: string, pid: number, layout: RuntimeDescription, e: Effects, index: number): void {
    // A synchronous copy or set ran this process's queued work first (the legacy default stream).
    if (e.write || e.fill || e.copy || e.read) this.#pending.delete(pid);
    const know = (place: Place, value: number) => {
      place[0].data[place[1]] = value;
      place[0].known[place[1]] = this.#pendingElsewhere(pid, place) ? 0 : 1;
    };
    // Large ranges (a hostile size that happened to be valid) are skipped: the shadow is for checking, not a model.
    const small = (n: number) => Number.isSafeInteger(n) && n >= 0 && n <= 1 << 20;
    if (e.write && small(e.write.bytes.length)) {
      const places = this.#places(pid, layout, e.write.va, e.write.bytes.length);
      if (places === undefined) {
        this.#violate('bytes', call, 'wrote outside every mapping', index);
        return;
      }
      places.forEach((place, i) => {
        know(place, e.write?.bytes[i] ?? 0);
      });
    }
    if (e.fill && small(e.fill.size)) {
      const places = this.#places(pid, layout, e.fill.va, e.fill.size);
      if (places === undefined) {
        this.#violate('bytes', call, 'filled outside every mapping', index);
        return;
      }
      for (const place of places) know(place, e.fill.value & 0xff);
    }
    if (e.copy && small(e.copy.size)) {
      const from = this.#places(pid, layout, e.copy.src, e.copy.size);
      const to = this.#places(pid, layout, e.copy.dst, e.copy.size);
      if (from === undefined || to === undefined) {
        this.#violate('bytes', call, 'copied outside every mapping', index);
        return;
      }
      // Read every source byte first: the ranges may overlap.
      const values = from.map(([s, o]) => (s.known[o] ? s.data[o] : -1));
      to.forEach((place, i) => {
        const v = values[i] ?? -1;
        if (v >= 0) know(place, v);
        else place[0].known[place[1]] = 0;
      });
    }
    if (e.unknown && small(e.unknown.size)) {
      let mine = this.#pending.get(pid);
      if (mine === undefined) this.#pending.set(pid, (mine = new Set()));
      for (const [s, o] of this.#places(pid, layout, e.unknown.va, e.unknown.size) ?? []) {
        s.known[o] = 0;
        mine.add(`${s.id}:${o}`);
      }
    }
    if (e.read && small(e.read.size)) {
      const places = this.#places(pid, layout, e.read.va, e.read.size);
      if (places === undefined) {
        this.#violate('bytes', call, 'read outside every mapping', index);
        return;
      }
      for (let i = 0; i < places.length; i++) {
        const [s, o] = places[i] as Place;
        if (s.known[o]) this.comparedBytes++;
        if (s.known[o] && s.data[o] !== e.read.into[i]) {
          this.#violate(
            'bytes',
            call,
            `byte ${i} at 0x${(e.read.va + i).toString(16)} read ${e.read.into[i]}, the shadow holds ${s.data[o]}`,
            index,
          );
          return;
        }
      }
    }
  }

  // --- the end -------------------------------------------------------------------------------------

  /** Tear down through the API and check the machine is back where it started, to the byte. */
  finish(): void {
    const failed: string[] = [];
    for (const p of this.processes) failed.push(...this.model.teardown(this, p));
    // No vendor call closes an exported fd (the README's closeFd is the backend's): close them there.
    // A process its teardown ended (a faulted CUDA device) closed its fds with it.
    for (const sim of this.machine.processes) {
      for (let fd = 0; fd < FD_PROBE; fd++) if (sim.fileAt(fd) !== undefined) sim.closeFd(fd);
    }
    const m = this.machine;
    const held = {
      pools: m.devices.map((d) => d.pool.used),
      host: m.host.used,
      live: m.liveAllocations,
      resident: m.residentBytes,
    };
    if (failed.length > 0)
      this.#violate('baseline', 'teardown', `calls failed: ${failed.join(', ')}`, this.#index);
    if (held.pools.some((u) => u !== 0) || held.host !== 0 || held.live !== 0 || held.resident !== 0)
      this.#violate('baseline', 'teardown', `memory still held: ${JSON.stringify(held)}`, this.#index);
    for (const p of this.processes) p.dispose();
  }
}

/** Where two fingerprints first differ, with a little context. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `before ...${a.slice(Math.max(0, i - 60), i + 40)}... after ...${b.slice(Math.max(0, i - 60), i + 40)}...`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Run `calls` calls in episodes of `perEpisode`; every violation found. */
export function fuzz<P extends FuzzedProcess>(
  model: FlavorModel<P>,
  rng: Random,
  calls: number,
  perEpisode = 2000,
  garbageRate = 0.12,
  sabotage?: (ep: Episode<P>) => void,
): {
  violations: Violation[];
  episodes: number;
  calls: number;
  successes: Map<string, number>;
  comparedBytes: number;
} {
  const violations: Violation[] = [];
  const successes = new Map<string, number>();
  let comparedBytes = 0;
  let done = 0;
  let episodes = 0;
  while (done < calls) {
    const ep = new Episode(rng, model, garbageRate);
    sabotage?.(ep);
    const n = Math.min(perEpisode, calls - done);
    for (let i = 0; i < n; i++) ep.step();
    ep.finish();
    done += n;
    episodes++;
    for (const v of ep.violations) if (violations.length < 50) violations.push(v);
    for (const [k, v] of ep.successes) successes.set(k, (successes.get(k) ?? 0) + v);
    comparedBytes += ep.comparedBytes;
  }
  return { violations, episodes, calls: done, successes, comparedBytes };
}
