import {
  BACKEND_OPERATIONS,
  type Backend,
  type DestroyStreamOptions,
  type ImportedMemory,
} from '../../backend/backend.js';
import { isVmmError, vmmError } from '../../core/errors.js';
import { instrument, type Tracer } from '../../core/trace.js';
import {
  type Access,
  type AllocationProperties,
  accessIn,
  type DeviceInfo,
  type MemoryInfo,
  withAccess,
} from '../../core/types.js';
import { HandleTable } from '../../util/handle-table.js';
import { OrderedMap } from '../../util/ordered-map.js';
import { DriverVaSpace } from './driver-va.js';
import { runMarked, SimEvent } from './event.js';
import type { Machine } from './machine.js';
import type { PhysicalMemory } from './physical-memory.js';
import { SimStream } from './stream.js';

/**
 * A process's GPU virtual address space: the driver's start-up heap at VA_START (16 TiB below the top
 * of a 47-bit space), its chunks from CHUNKS_START up (Note [Driver VA placement] in driver-va.ts).
 */
const CHUNKS_START = 0x6000_0000_0000;
const VA_START = 0x7000_0000_0000;
const VA_END = 0x7fff_0000_0000;
const FIRST_FD = 3;

/** An open file description: what an exported descriptor refers to. */
export interface MemoryFile {
  readonly memory: PhysicalMemory;
}

/**
 * A mapped range of this process's GPU virtual address space, with each
 * device's permission on it.
 *
 * Note [Page tables as extents]: a device's page table is the set of
 * entries whose permission for that device is not None. Keeping one entry
 * per mapping with a permission byte per device (rather than one record
 * per page per device) makes map, setAccess and unmap cost the same for a
 * 2 MiB and a 1 GiB mapping, as they roughly do on the real driver, while
 * every byte access is still checked against the accessing device's entry.
 */
export class PageTableEntry {
  constructor(
    readonly va: number,
    readonly size: number,
    readonly memory: PhysicalMemory,
    readonly offset: number,
  ) {}

  /** Every device's permission, packed (Note [Access bits]). */
  permissions = 0;
  /** The CPU's permission (Note [Host access] in src/backend/backend.ts). */
  hostAccess: Access = 0;
}

const READ = 1;
const WRITE = 2;

/** One process on a simulated machine: the simulator's Backend. */
export class SimProcess implements Backend {
  readonly kind = 'sim' as const;
  readonly partialMaps = true;
  readonly devices: readonly DeviceInfo[];
  readonly #va = new DriverVaSpace(CHUNKS_START, VA_END, VA_START);
  /** Reservations, by base: their sizes. (An OrderedMap: a JS Map keyed by large addresses is slower.) */
  readonly #reserved = new OrderedMap<number>();
  readonly #entries = new OrderedMap<PageTableEntry>();
  readonly #handles = new HandleTable<PhysicalMemory>();
  readonly #files = new Map<number, MemoryFile>();
  readonly #streams = new Map<number, SimStream>();
  /** The legacy default stream's waits on events (Note [Default-stream waits]). */
  readonly #defaultWaits = new SimStream(0, -1);
  readonly #events = new HandleTable<SimEvent>();
  readonly #tracer: Tracer | undefined;
  #nextStream = 1;
  /** Queued stream items across all streams; 0 lets synchronous calls skip draining. */
  #queued = 0;
  #exited = false;

  constructor(
    readonly machine: Machine,
    readonly pid: number,
    tracer?: Tracer,
  ) {
    this.devices = machine.devices.map((d) => d.info);
    this.#tracer = tracer;
    if (tracer) instrument(this, 'backend', tracer, BACKEND_OPERATIONS);
  }

  memoryInfo(device: number): MemoryInfo {
    const pool = this.machine.devices[device].pool;
    return { free: pool.free, total: pool.capacity };
  }

  // --- virtual addresses -------------------------------------------------------

  reserve(size: number, alignment: number, hint: number, exact = false): number {
    const base = exact
      ? this.#va.allocateAt(size, alignment, hint)
      : this.#va.allocate(size, alignment, hint);
    this.#reserved.set(base, size, base + size);
    return base;
  }

  free(va: number, size: number): void {
    if (this.#reserved.get(va) !== size)
      throw vmmError('not-reserved', `no reservation of ${size} at 0x${va.toString(16)}`);
    if (this.#entries.intersects(va, va + size))
      throw vmmError('in-use', 'memory is still mapped in the range');
    this.#reserved.delete(va);
    this.#va.release(va, size);
  }

  createContext(): number {
    return this.#va.createContext();
  }

  destroyContext(context: number): void {
    this.#va.destroyContext(context);
  }

  // --- physical memory ---------------------------------------------------------

  create(size: number, props: AllocationProperties): number {
    const memory = this.machine.allocate(size, props);
    return this.#addHandle(memory);
  }

  release(handle: number): void {
    const memory = this.#handle(handle);
    this.#handles.remove(handle);
    this.machine.drop(memory);
  }

  #addHandle(memory: PhysicalMemory): number {
    this.machine.hold(memory);
    return this.#handles.add(memory);
  }

  #handle(handle: number): PhysicalMemory {
    const memory = this.#handles.get(handle);
    if (memory === undefined) throw vmmError('invalid-handle', `no handle ${handle} in process ${this.pid}`);
    return memory;
  }

  // --- mappings and page tables ------------------------------------------------

  map(va: number, size: number, handle: number, offset: number): void {
    const memory = this.#handle(handle);
    const e = new PageTableEntry(va, size, memory, offset);
    this.#entries.set(va, e, va + size);
    this.machine.hold(memory);
    this.#tracer?.event('device', 'vm.bind', [va, size, `memory#${memory.id}`, offset]);
  }

  unmap(va: number, size: number): void {
    const end = va + size;
    // Step by end address, so the entry after the range is never touched.
    for (
      let at = va, e = this.#entries.get(at);
      e !== undefined;
      e = at < end ? this.#entries.get(at) : undefined
    ) {
      at = e.va + e.size;
      this.#entries.delete(e.va);
      this.machine.drop(e.memory);
      this.#tracer?.event('device', 'pte.clear', [e.va, e.size]);
    }
  }

  setAccess(va: number, size: number, device: number, access: Access): void {
    const end = va + size;
    for (
      let at = va, e = this.#entries.get(at);
      e !== undefined;
      e = at < end ? this.#entries.get(at) : undefined
    ) {
      at = e.va + e.size;
      e.permissions = withAccess(e.permissions, device, access);
      this.#tracer?.event('device', access === 0 ? 'pte.clear' : 'pte.set', [device, e.va, e.size, access]);
    }
  }

  setHostAccess(va: number, size: number, access: Access): void {
    const end = va + size;
    for (
      let at = va, e = this.#entries.get(at);
      e !== undefined;
      e = at < end ? this.#entries.get(at) : undefined
    ) {
      at = e.va + e.size;
      e.hostAccess = access;
      this.#tracer?.event('device', access === 0 ? 'hostPte.clear' : 'hostPte.set', [e.va, e.size, access]);
    }
  }

  /** The CPU's page table: the entries it may access, in address order. */
  hostPageTable(): { va: number; size: number; access: Access }[] {
    const out: { va: number; size: number; access: Access }[] = [];
    for (const e of this.#entries.values())
      if (e.hostAccess !== 0) out.push({ va: e.va, size: e.size, access: e.hostAccess });
    return out;
  }

  /** CPU loads: no stream and no copy engine, the bytes as they are now. */
  hostRead(va: number, dst: Uint8Array): void {
    if (dst.length === 0) return;
    const first = this.#walkHost(va, dst.length, READ);
    this.#pieces(first, va, dst.length, (m, off, at, n) => m.read(off, dst, at, n));
  }

  /** CPU stores. */
  hostWrite(va: number, src: Uint8Array): void {
    if (src.length === 0) return;
    const first = this.#walkHost(va, src.length, WRITE);
    this.#pieces(first, va, src.length, (m, off, at, n) => m.write(off, src, at, n));
  }

  /** As #walk, for the CPU: every byte mapped, host-located, and granted `need`. */
  #walkHost(va: number, length: number, need: number): PageTableEntry {
    const first = this.#entries.containing(va);
    if (first === undefined) throw vmmError('not-mapped', `0x${va.toString(16)} is not mapped`);
    const end = va + length;
    for (let e: PageTableEntry | undefined = first; ; ) {
      if (e.memory.props.location.type !== 'host' || (e.hostAccess & need) !== need)
        throw vmmError('access-denied', `the CPU may not touch 0x${Math.max(va, e.va).toString(16)}`);
      const eEnd: number = e.va + e.size;
      if (eEnd >= end) return first;
      e = this.#entries.get(eEnd);
      if (e === undefined) throw vmmError('not-mapped', `0x${eEnd.toString(16)} is not mapped`);
    }
  }

  /** A device's page table: the entries it may access, in address order. */
  pageTable(device: number): { va: number; size: number; access: Access }[] {
    const out: { va: number; size: number; access: Access }[] = [];
    for (const e of this.#entries.values()) {
      const access = accessIn(e.permissions, device);
      if (access !== 0) out.push({ va: e.va, size: e.size, access });
    }
    return out;
  }

  /**
   * Check that `device` may touch every byte of [va, va + length) with
   * `need` (READ or WRITE); returns the first entry. Throws not-mapped for
   * a hole, access-denied for a missing permission.
   */
  #walk(device: number, va: number, length: number, need: number): PageTableEntry {
    if (!Number.isSafeInteger(va) || va < 0) throw vmmError('invalid-value', `address ${va}`);
    const first = this.#entries.containing(va);
    if (first === undefined) {
      throw vmmError('not-mapped', `0x${va.toString(16)} is not mapped`);
    }
    const end = va + length;
    let e: PageTableEntry | undefined = first;
    for (;;) {
      if ((accessIn(e.permissions, device) & need) !== need) {
        throw vmmError(
          'access-denied',
          `device ${device} may not ${need === READ ? 'read' : 'write'} 0x${Math.max(va, e.va).toString(16)}`,
        );
      }
      const eEnd: number = e.va + e.size;
      if (eEnd >= end) return first;
      e = this.#entries.get(eEnd);
      if (e === undefined) throw vmmError('not-mapped', `0x${eEnd.toString(16)} is not mapped`);
    }
  }

  /** Visit the pieces of [va, va + length) in address order: (memory, offset in it, position in range, bytes). */
  #pieces(
    first: PageTableEntry,
    va: number,
    length: number,
    visit: (memory: PhysicalMemory, offset: number, at: number, n: number) => void,
  ): void {
    let e = first;
    let at = 0;
    while (at < length) {
      const from = va + at - e.va;
      const n = Math.min(e.size - from, length - at);
      visit(e.memory, e.offset + from, at, n);
      at += n;
      if (at < length) e = this.#entries.get(e.va + e.size)!;
    }
  }

  // --- bytes -----------------------------------------------------------------------

  write(device: number, va: number, src: Uint8Array, stream: number): void {
    const check = () => src.length > 0 && this.#walk(device, va, src.length, WRITE);
    this.#submit(device, stream, 'write', check, () => {
      if (src.length === 0) return;
      const first = this.#walk(device, va, src.length, WRITE);
      this.#pieces(first, va, src.length, (m, off, at, n) => m.write(off, src, at, n));
      this.#moved(device, src.length, 'write', va);
    });
  }

  read(device: number, va: number, dst: Uint8Array, stream: number): void {
    const check = () => dst.length > 0 && this.#walk(device, va, dst.length, READ);
    this.#submit(device, stream, 'read', check, () => {
      if (dst.length === 0) return;
      const first = this.#walk(device, va, dst.length, READ);
      this.#pieces(first, va, dst.length, (m, off, at, n) => m.read(off, dst, at, n));
      this.#moved(device, dst.length, 'read', va);
    });
  }

  copy(device: number, dst: number, src: number, size: number, stream: number): void {
    const check = () => {
      if (size > 0) this.#walk(device, src, size, READ) && this.#walk(device, dst, size, WRITE);
    };
    this.#submit(device, stream, 'copy', check, () => {
      if (size === 0) return;
      const from = this.#walk(device, src, size, READ);
      this.#walk(device, dst, size, WRITE);
      this.#pieces(from, src, size, (sm, soff, at, n) => {
        // The destination piece may start inside any of dst's entries.
        const to = this.#entries.containing(dst + at)!;
        this.#pieces(to, dst + at, n, (dm, doff, within, k) => {
          dm.copyFrom(sm, soff + within, doff, k);
        });
      });
      this.#moved(device, size, 'copy', dst);
    });
  }

  fill(device: number, va: number, value: number, size: number, stream: number): void {
    const check = () => {
      if (size > 0) this.#walk(device, va, size, WRITE);
    };
    this.#submit(device, stream, 'fill', check, () => {
      if (size === 0) return;
      const first = this.#walk(device, va, size, WRITE);
      this.#pieces(first, va, size, (m, off, _at, n) => m.fill(off, value, n));
      this.#moved(device, size, 'fill', va);
    });
  }

  #moved(device: number, bytes: number, what: string, va: number): void {
    this.machine.devices[device].bytesMoved += bytes;
    this.#tracer?.event('device', `copyEngine.${what}`, [device, va, bytes]);
  }

  /**
   * Run `work` now (stream 0, after the queued work of every stream, as the
   * legacy default stream does) or check it now and queue it on the stream.
   * A check that fails at queue time is thrown at once; one that fails when
   * the stream runs is thrown by its synchronisation.
   *
   * Note [Queued work and access changes]: on the H200 neither cuMemSetAccess
   * nor cuMemUnmap waits for work queued on a stream: both return at once,
   * and a copy queued before them that then meets memory it may not write,
   * or none, faults when it runs. The stream's synchronisation answers
   * CUDA_ERROR_LAUNCH_FAILED (719), and so does every later call of the
   * context; the bytes never land (conformance/results/h200-queued-work-probe.json,
   * from conformance/cuda/queued-work-probe.sh: the stream held by
   * cuStreamWaitValue32, no kernel). Here the work is checked again when it
   * runs, as there, and a check that fails then is a device fault of the
   * stream's device (asDeviceFault: 'device-fault', which the CUDA front end
   * answers 719 and keeps for the rest of the process, Note [Faulted
   * devices] in src/flavors/cuda/contexts.ts). Core's setAccess never waits.
   * Its unmap finishes queued work first, as ROCm's hipMemUnmap does and as
   * the H200's outcome is when nothing holds the stream: a set queued just
   * before cuMemUnmap has run by the time the unmap returns, and lands
   * (unmap.pendingAsyncWork). What the probe shows, an unmap overtaking work
   * that a stream still holds, needs a kernel or cuStreamWaitValue32 ahead
   * of the work, and vmmkit models neither (a known gap, README).
   */
  #submit(device: number, stream: number, what: string, check: () => unknown, work: () => void): void {
    if (stream === 0) {
      if (this.#queued > 0) this.synchronizeDevice(-1);
      work();
      return;
    }
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    if (s.device !== device)
      throw vmmError('invalid-context', `stream ${stream} belongs to device ${s.device}`);
    check();
    s.enqueue(() => {
      this.#queued--;
      try {
        work();
      } catch (e) {
        throw asDeviceFault(e, what, stream, device);
      }
    });
    this.#queued++;
    this.#tracer?.event('device', `stream${stream}.enqueue`, [what]);
  }

  // --- streams -----------------------------------------------------------------------

  createStream(device: number): number {
    const id = this.#nextStream++;
    this.#streams.set(id, new SimStream(id, device));
    return id;
  }

  destroyStream(stream: number, options: DestroyStreamOptions = {}): void {
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    this.#streams.delete(stream);
    if (options.discard) {
      // Note [Forced stream destroy]: the queued work is dropped and never runs.
      this.#queued -= s.pending;
      s.discard();
      this.#tracer?.event('device', `stream${stream}.discard`, []);
      return;
    }
    // Work already queued completes, as with cuStreamDestroy.
    s.drain();
  }

  synchronizeStream(stream: number): void {
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    s.drain();
  }

  synchronizeDevice(device: number): void {
    let failure: unknown;
    let failed = false;
    // Every device's default stream is the one legacy stream here: its waits come first.
    for (const s of [this.#defaultWaits, ...this.#streams.values()]) {
      if (device !== -1 && s !== this.#defaultWaits && s.device !== device) continue;
      try {
        s.drain();
      } catch (e) {
        if (!failed) {
          failure = e;
          failed = true;
        }
      }
    }
    if (failed) throw failure;
  }

  // --- events (Note [Events] in backend.ts) ---------------------------------------------

  createEvent(device: number, timing: boolean): number {
    return this.#events.add(new SimEvent(device, timing));
  }

  recordEvent(event: number, stream: number): void {
    const e = this.#event(event);
    if (stream === 0) {
      // The legacy default stream: its marker follows the work queued so far on every stream.
      const marks = [];
      for (const s of this.#streams.values())
        if (s.pending > 0) marks.push({ stream: s, position: s.position });
      e.marks = marks;
      e.recorded = true;
      return;
    }
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    if (s.device !== e.device)
      throw vmmError(
        'invalid-context',
        `stream ${stream} belongs to device ${s.device}, the event to ${e.device}`,
      );
    e.marks = s.pending > 0 ? [{ stream: s, position: s.position }] : [];
    e.recorded = true;
    this.#tracer?.event('device', `stream${stream}.record`, [event]);
  }

  queryEvent(event: number): boolean {
    return this.#event(event).complete;
  }

  /** Runs the marked work and nothing queued after it (the simulator's wait). */
  synchronizeEvent(event: number): void {
    runMarked(this.#event(event).marks);
  }

  /**
   * Note [Default-stream waits]
   * Stream-0 work runs after everything queued on every stream (#submit), so
   * it always waits; what a wait on stream 0 adds is to the default stream's
   * synchronisation. cuStreamSynchronize(0) (hipStreamSynchronize(null),
   * aclrtSynchronizeStream(NULL)) synchronises the current device only, and
   * the event may be another device's ("hEvent may be from a different
   * context or device than hStream"): its marked work must have run when
   * that returns. The wait is queued on the process's one legacy stream,
   * which every device's synchronisation drains first (at least as ordered
   * as the driver, Note [Special streams]); a failure of the marked work is
   * that synchronisation's, as on a stream that waits.
   */
  streamWaitEvent(stream: number, event: number): void {
    const e = this.#event(event);
    const s = stream === 0 ? this.#defaultWaits : this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    if (e.complete) return;
    // The marks as they are now: recording the event again later does not change what this waits for.
    const marks = e.marks;
    s.enqueue(() => {
      this.#queued--;
      runMarked(marks);
    });
    this.#queued++;
    this.#tracer?.event('device', `stream${stream}.enqueue`, ['wait']);
  }

  destroyEvent(event: number): void {
    this.#event(event);
    this.#events.remove(event);
  }

  /** The simulator models order, not time: two completed timing records are 0 ms apart. */
  elapsedTime(start: number, end: number): number {
    for (const e of [this.#event(start), this.#event(end)]) {
      if (!e.timing || !e.recorded)
        throw vmmError('invalid-event', 'elapsed time needs two recorded timing events');
      if (!e.complete) throw vmmError('invalid-value', "an event's recorded work has not run yet");
    }
    return 0;
  }

  #event(event: number): SimEvent {
    const e = this.#events.get(event);
    if (e === undefined) throw vmmError('invalid-event', `no event ${event} in process ${this.pid}`);
    return e;
  }

  // --- sharing -------------------------------------------------------------------------

  exportFd(handle: number): number {
    return this.openFile({ memory: this.#handle(handle) });
  }

  importFd(fd: number, size?: number): ImportedMemory {
    const file = this.#files.get(fd);
    if (file === undefined) throw vmmError('invalid-fd', `process ${this.pid} has no fd ${fd}`);
    if (size !== undefined && size !== file.memory.size)
      throw vmmError('invalid-value', `fd ${fd} holds ${file.memory.size} bytes, not ${size}`);
    const handle = this.#addHandle(file.memory);
    return { handle, size: file.memory.size, props: file.memory.props };
  }

  closeFd(fd: number): void {
    const file = this.#files.get(fd);
    if (file === undefined) throw vmmError('invalid-fd', `process ${this.pid} has no fd ${fd}`);
    this.#files.delete(fd);
    this.machine.drop(file.memory);
  }

  exportShareable(handle: number, checkPid: boolean): number {
    return this.machine.share(this.#handle(handle), this.pid, checkPid);
  }

  allowImport(token: number, pids: readonly number[]): void {
    const s = this.machine.shareable(token);
    if (s === undefined || s.owner !== this.pid)
      throw vmmError('invalid-fd', `process ${this.pid} exported no token ${token}`);
    for (const pid of pids) s.allowed.add(pid);
  }

  importShareable(token: number): ImportedMemory {
    const s = this.machine.shareable(token);
    if (s === undefined) throw vmmError('invalid-fd', `no shareable token ${token}`);
    if (s.owner === this.pid)
      throw vmmError('permission-denied', 'a process may not import what it exported');
    if (s.checkPid && !s.allowed.has(this.pid)) {
      throw vmmError('permission-denied', `process ${this.pid} is not on the token's pid list`);
    }
    const handle = this.#addHandle(s.memory);
    return { handle, size: s.memory.size, props: s.memory.props };
  }

  unshare(token: number): void {
    const s = this.machine.shareable(token);
    if (s === undefined || s.owner !== this.pid)
      throw vmmError('invalid-fd', `process ${this.pid} exported no token ${token}`);
    this.machine.unshare(token);
  }

  /** Install an open file at the lowest free descriptor, as open(2) and SCM_RIGHTS do. */
  openFile(file: MemoryFile): number {
    let fd = FIRST_FD;
    while (this.#files.has(fd)) fd++;
    this.#files.set(fd, file);
    this.machine.hold(file.memory);
    return fd;
  }

  fileAt(fd: number): MemoryFile | undefined {
    return this.#files.get(fd);
  }

  // --- exit ------------------------------------------------------------------------------

  /** Process exit: the kernel drops every mapping, handle, descriptor and stream. Never throws. */
  dispose(): void {
    if (this.#exited) return;
    this.#exited = true;
    for (const s of this.#streams.values()) s.discard();
    this.#streams.clear();
    this.#defaultWaits.discard();
    for (const e of this.#events.values()) e.marks = [];
    for (const e of this.#entries.values()) this.machine.drop(e.memory);
    this.#entries.clear();
    for (const m of this.#handles.values()) this.machine.drop(m);
    for (const f of this.#files.values()) this.machine.drop(f.memory);
    this.#files.clear();
    this.#reserved.clear();
    this.machine.exited(this.pid);
  }
}

/**
 * A check that failed when queued work ran, as the device fault it is there
 * (Note [Queued work and access changes]); any other failure as it is.
 */
function asDeviceFault(e: unknown, what: string, stream: number, device: number): unknown {
  if (!isVmmError(e) || (e.kind !== 'access-denied' && e.kind !== 'not-mapped')) return e;
  return vmmError(
    'device-fault',
    `the ${what} queued on stream ${stream} faulted when it ran (${e.message})`,
    undefined,
    device,
  );
}
