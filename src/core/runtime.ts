// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import type { Backend, DestroyStreamOptions, ImportedMemory } from '../backend/backend.js';
import { isCount, isMultipleOf } from '../util/integers.js';
import { AddressBook } from './address-book.js';
import { AllocationBook } from './allocations.js';
import { describeBooks, type RuntimeDescription } from './description.js';
import { vmmError, warn } from './errors.js';
import { EventTable } from './events.js';
import { type CaptureMode, type CaptureView, GraphBook } from './graphs.js';
import { checkHostAccess } from './host-access.js';
import { checkVmm, Mapper } from './mapper.js';
import {
  HANDLE_REFS,
  type Mapping,
  OWNER,
  type PhysicalAllocation,
  type Reservation,
  SIZE,
} from './objects.js';
import { observeRuntime } from './observer.js';
import { OneStepPath } from './one-step.js';
import { TRACED_OPERATIONS } from './operations.js';
import type {
  AccessDescriptor,
  ImportOptions,
  MallocOptions,
  ReserveOptions,
  RuntimeOptions,
} from './runtime-options.js';
import { SharingBook } from './sharing.js';
import { StreamTable } from './streams.js';
import { instrument } from './trace.js';
import {
  Access,
  type AllocationProperties,
  type DeviceInfo,
  isAccess,
  MAX_DEVICES,
  type MemoryInfo,
} from './types.js';

export type { RuntimeDescription } from './description.js';
export { TRACED_OPERATIONS } from './operations.js';

export type {
  AccessDescriptor,
  ImportOptions,
  MallocOptions,
  ReserveOptions,
  RuntimeOptions,
} from './runtime-options.js';

/**
 * One process's VMM state: reservations, physical allocations and mappings,
 * vendor-neutral. Flavors translate their calls into these operations;
 * every operation validates fully before it changes anything. The Runtime
 * checks liveness and arguments and hands the work to its parts, a file
 * each: the address book (reservations, mappings), the allocation book
 * (handles), the mapper (map, unmap, access), the one-step path, the
 * sharing book, and the stream and event tables.
 *
 * Invariants:
 *  1. A thrown VmmError means no state changed, here or in the backend.
 *     Operations of several backend steps run as a Transaction (Note
 *     [Transactions]). Narrowed where the driver cannot undo (Note [Points of
 *     no return]): once memory or address space has been given back, the
 *     operation completes, and a later step's failure is reported, not thrown.
 *  2. Mappings never overlap, and each lies inside exactly one reservation.
 *  3. An allocation's memory is released in the backend exactly when its
 *     refCount (handle references + mappings) reaches zero.
 *  4. A mapping's access bits equal what the backend's page tables grant.
 *  5. Handle values are never reused within a process (Note [Handle values]).
 *  6. After dispose() every operation throws 'not-initialized' and changes nothing.
 *
 * Note [Points of no return]: releasing memory and freeing address space
 * cannot be taken back (the bytes are gone; the driver may hand the range to
 * someone else). Every operation does them last. If the first of them fails,
 * nothing has been given back yet, the earlier steps are undone and the error
 * is thrown. If one fails after another succeeded (an unmap that drops the
 * last reference of two allocations; mfree's address-space free after its
 * memory went), the operation stands, the failure goes to the report hook,
 * and what could not be given back stays held by the runtime, which tries
 * again at dispose().
 *
 * Note [Cold lines]: beside a real driver call, which leaves the CPU's
 * caches cold (bench/gpu-paired.ts measures it), a VMM call costs the
 * instructions its JavaScript runs and, often more, the distinct cache lines
 * of code and data it touches, each fetched again after every driver call
 * (bench/cycle-footprint.ts counts both, per layer). So the calls of the
 * 2 MiB cycle read what they need from objects they touch anyway: the
 * runtime's granularity and device count are its own fields, not a device
 * record's; the three objects keep core's state in their own fields, not in
 * a record beside them (Note [Core-owned state] in objects.ts); the checked
 * layer reads and writes the cycle's scratch through one view.
 */
export class Runtime implements Disposable {
  readonly devices: readonly DeviceInfo[];
  /**
   * The smallest granularity any VA operation of this process accepts (device 0's minimum, as HIP uses).
   * A field, as the device count is, so the calls that read it touch no device record (Note [Cold lines]).
   */
  readonly vaGranularity: number;
  readonly #deviceCount: number;
  /** Reservations and mappings, in address order. */
  readonly #book: AddressBook;
  readonly #allocations: AllocationBook;
  readonly #sharing: SharingBook;
  readonly #streams: StreamTable;
  readonly #events: EventTable;
  /** Stream captures, graphs and executable graphs (Note [Stream capture] in graphs.ts). */
  readonly #graphs: GraphBook;
  readonly #mapper: Mapper;
  readonly #oneStep: OneStepPath;
  readonly #report: (message: string, error?: unknown) => void;
  /** quietly as a function, for the books and tables that tear down through it. */
  readonly #quietly = (step: () => void): void => this.quietly(step);
  #disposed = false;

  constructor(
    readonly backend: Backend,
    options: RuntimeOptions = {},
  ) {
    this.devices = backend.devices;
    if (this.devices.length > MAX_DEVICES)
      throw new RangeError(`vmmkit handles at most ${MAX_DEVICES} devices`);
    this.#deviceCount = this.devices.length;
    // With no device there is no granularity, and no address or size is a multiple of 0.
    this.vaGranularity = this.devices.length > 0 ? this.devices[0].minimumGranularity : 0;
    this.#report = options.report ?? warn;
    this.#book = new AddressBook(this, backend);
    this.#sharing = new SharingBook(backend);
    this.#allocations = new AllocationBook(this, backend, this.#sharing, this.#quietly);
    this.#streams = new StreamTable(backend);
    this.#events = new EventTable(backend, this.#streams);
    this.#graphs = new GraphBook(backend, this.#events);
    this.#mapper = new Mapper(
      backend,
      this.devices,
      this.#book,
      this.#allocations,
      this.#streams,
      this.#report,
    );
    this.#oneStep = new OneStepPath(
      backend,
      this.#book,
      this.#allocations,
      this.#sharing,
      this.#mapper,
      this.#report,
      this.#quietly,
    );
    if (options.observers !== undefined && options.observers.length > 0)
      observeRuntime(this, options.observers, TRACED_OPERATIONS);
    if (options.tracer) instrument(this, 'core', options.tracer, TRACED_OPERATIONS);
  }

  get pid(): number {
    return this.backend.pid;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Invariant 6: a disposed runtime refuses everything. */
  #live(): void {
    if (this.#disposed) throw vmmError('not-initialized', 'the process was torn down (dispose)');
  }

  // --- queries -------------------------------------------------------------

  device(ordinal: number): DeviceInfo {
    this.checkDevice(ordinal);
    return this.devices[ordinal];
  }

  /** Throws invalid-device unless `ordinal` names a device of this process. */
  checkDevice(ordinal: number): void {
    if (!this.isDevice(ordinal)) throw vmmError('invalid-device', `no device ${ordinal}`);
  }

  isDevice(ordinal: number): boolean {
    return Number.isInteger(ordinal) && ordinal >= 0 && ordinal < this.#deviceCount;
  }

  memoryInfo(device: number): MemoryInfo {
    this.#live();
    this.checkDevice(device);
    return this.backend.memoryInfo(device);
  }

  /** The reservation whose base is exactly `va`. */
  reservationAt(va: number): Reservation | undefined {
    return this.#book.reservations.get(va);
  }

  /** The reservation containing address `va`. */
  reservationContaining(va: number): Reservation | undefined {
    return this.#book.reservations.containing(va);
  }

  /** The mapping containing address `va`. */
  mappingAt(va: number): Mapping | undefined {
    return this.#book.mappingAt(va);
  }

  /** Every mapping that intersects [va, va + size), in address order. */
  mappingsIn(va: number, size: number): Mapping[] {
    return this.#book.mappingsIn(va, size);
  }

  /** The mapping that starts right after `m` ends, if any. */
  nextMapping(m: Mapping): Mapping | undefined {
    return this.#book.nextMapping(m);
  }

  /**
   * The mappings that exactly tile [va, va + size): the range starts at a
   * mapping's start, ends at a mapping's end, has no holes and splits none.
   */
  wholeMappings(va: number, size: number): Mapping[] {
    return this.#book.wholeMappings(va, size);
  }

  /** The allocation behind a valid handle value. */
  allocation(handle: number): PhysicalAllocation | undefined {
    return this.#allocations.get(handle);
  }

  getAccess(va: number, device: number): Access {
    this.#live();
    this.checkDevice(device);
    const m = this.mappingAt(va);
    if (m === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    return m.accessOf(device);
  }

  /** Counts of live objects, for leak checks. */
  stats(): { reservations: number; mappings: number; handles: number; streams: number } {
    return {
      reservations: this.#book.reservations.size,
      mappings: this.#book.mappings.size,
      handles: this.#allocations.size,
      streams: this.#streams.size,
    };
  }

  /**
   * Everything this process holds, as plain data (for pictures and dumps):
   * reservations with their mappings in address order, each mapping's
   * allocation and per-device access, and every live handle.
   */
  describe(): RuntimeDescription {
    return describeBooks(this.pid, this.devices, this.#book, this.#allocations);
  }

  reservations(): IterableIterator<Reservation> {
    return this.#book.reservations.values();
  }

  mappings(): IterableIterator<Mapping> {
    return this.#book.mappings.values();
  }

  /**
   * A driver context's own address placement, where the backend has one (the
   * simulator's: Note [Created contexts' heaps]): its id, else undefined.
   */
  createContext(): number | undefined {
    this.#live();
    return this.backend.createContext?.();
  }

  /** The placement createContext made goes; reservations in it stay. Never throws. */
  destroyContext(context: number): void {
    this.backend.destroyContext?.(context);
  }

  // --- virtual address ranges ----------------------------------------------

  reserve(size: number, options: ReserveOptions = {}): Reservation {
    this.#live();
    return this.#book.reserve(size, options.alignment ?? 0, options.hint ?? 0, 'vmm', options.exact === true);
  }

  /** Give a whole reservation back; nothing may be mapped in it. */
  free(r: Reservation): void {
    this.#live();
    if (r.origin === 'malloc') throw vmmError('not-reserved', 'a one-step allocation is freed with mfree');
    this.#book.free(r);
  }

  // --- physical memory -----------------------------------------------------

  create(size: number, props: AllocationProperties): PhysicalAllocation {
    this.#live();
    return this.#allocations.create(size, props, 'created');
  }

  /** Drop one handle reference; the memory goes when nothing (handle or mapping) holds it. */
  release(a: PhysicalAllocation): void {
    this.#live();
    this.#allocations.release(a);
  }

  /** A new handle reference to the allocation mapped at `va` (from any address inside the mapping). */
  retain(va: number): PhysicalAllocation {
    this.#live();
    const m = this.mappingAt(va);
    if (m === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    if (m.reservation.origin === 'malloc')
      throw vmmError('not-mapped', 'one-step allocations have no handle');
    const a = m.allocation;
    a[HANDLE_REFS]++;
    return a;
  }

  // --- mapping and access --------------------------------------------------

  /** Map `size` bytes of `a` from `offset` at `va`, inside one reservation. */
  map(va: number, size: number, a: PhysicalAllocation, offset = 0): Mapping {
    this.#live();
    this.#allocations.check(a);
    const g = this.vaGranularity;
    if (!isCount(va) || !isMultipleOf(va, g))
      throw vmmError('invalid-value', `address 0x${va.toString(16)} is not aligned`);
    if (!isCount(size) || size === 0 || !isMultipleOf(size, g))
      throw vmmError('invalid-value', `size ${size} is not aligned`);
    if (!a.sizeKnown) {
      // Note [Foreign memory sizes]: the backend maps whole handles and its driver checks the size.
      if (offset !== 0) throw vmmError('not-supported', 'memory of unknown size maps whole, from offset 0');
    } else if (!isCount(offset) || !isMultipleOf(offset, g) || offset + size > a.size) {
      throw vmmError('invalid-value', `offset ${offset} + size ${size} is outside the allocation`);
    }
    const r = this.reservationContaining(va);
    if (r === undefined || va + size > r.end)
      throw vmmError('not-reserved', 'range is not inside one reservation');
    if (r.origin === 'malloc') throw vmmError('not-reserved', 'the range belongs to a one-step allocation');
    const m = this.#mapper.map(va, size, a, offset, r);
    if (!a.sizeKnown) a[SIZE] = size;
    return m;
  }

  /**
   * Unmap the mappings that exactly tile [va, va + size) (see wholeMappings).
   * Work queued on streams is finished first, as drivers do, so nothing in
   * flight touches memory being unmapped.
   */
  unmap(va: number, size: number): void {
    this.#live();
    const first = this.mappingAt(va);
    // One mapping (the common case) goes without building a list.
    const mappings =
      first !== undefined && first.va === va && first.end === va + size
        ? first
        : this.wholeMappings(va, size);
    if (Array.isArray(mappings)) {
      for (const m of mappings) checkVmm(m);
      this.#mapper.unmapAll(mappings);
    } else {
      checkVmm(mappings);
      this.#mapper.unmapOne(mappings);
    }
  }

  /**
   * Set the devices' access to [va, va + size), whole adjacent mappings, and
   * with `host` the CPU's as well (Note [Host access] in
   * src/backend/backend.ts): then every mapping must hold host-located
   * memory (device memory is not-supported, as CUDA's driver answers a HOST
   * descriptor on it). All or nothing.
   */
  setAccess(va: number, size: number, descriptors: readonly AccessDescriptor[], host?: Access): void {
    this.#live();
    for (const d of descriptors) {
      this.checkDevice(d.device);
      if (!isAccess(d.access)) throw vmmError('invalid-value', `access flags ${d.access}`);
    }
    if (host !== undefined) {
      this.#mapper.grantWithHost(va, size, descriptors, host);
      return;
    }
    const first = this.mappingAt(va);
    if (first === undefined || first.va !== va || first.end !== va + size) {
      for (const m of this.wholeMappings(va, size)) checkVmm(m);
    } else checkVmm(first);
    this.#mapper.grant(first!, va + size, descriptors);
  }

  /** CPU loads from host-located memory the CPU may read (Note [Host access]); no stream, no copy engine. */
  hostRead(va: number, dst: Uint8Array): void {
    this.#live();
    checkHostAccess(this.#book, va, dst.length, Access.Read);
    this.backend.hostRead(va, dst);
  }

  /** CPU stores to host-located memory the CPU may write (Note [Host access]). */
  hostWrite(va: number, src: Uint8Array): void {
    this.#live();
    checkHostAccess(this.#book, va, src.length, Access.ReadWrite);
    this.backend.hostWrite(va, src);
  }

  // --- sharing ---------------------------------------------------------------

  /*
   * Note [Foreign memory sizes]: a descriptor carries no size. The CUDA
   * driver's cuMemImportFromShareableHandle returns a handle and nothing else,
   * and no driver call reads a handle's size (cuMemGetAllocationPropertiesFromHandle
   * gives location and types only; the descriptor's fstat says nothing either:
   * see conformance/results/h200-sharing.json); real programs send the size
   * beside the descriptor, as they send the descriptor. So the size has three
   * sources, in this order:
   *  1. the backend knows it: the simulator always does (memory is machine-wide
   *     there), and the CUDA backend does for descriptors it exported itself
   *     and for ACL tokens, whose registry entry holds it. A size told as well
   *     must agree (invalid-value otherwise);
   *  2. the importer tells it: `rt.importFd(fd, { size })`, the size the
   *     exporter sent out of band; the backend cannot check it, the driver does
   *     at the first map (the H200 answers 801, not-supported, for a map whose
   *     size is not the handle's: conformance case map.sizeMismatch*);
   *  3. nobody: the CUDA and HIP calls take no size, so the allocation starts
   *     with size 0 and `sizeKnown` false, and its first map, from offset 0,
   *     tells it. That is sound only because every backend that can give an
   *     unknown size maps whole handles (partialMaps false) and its driver
   *     refuses a map of any other size, so a map that succeeded measured the
   *     handle exactly; a refused one leaves the size unknown. Until then the
   *     allocation maps whole or not at all, exactly what the driver allows.
   * A wrong size told under 2. is refused at import where the backend can
   * check it (1.), and at the first map where only the driver can: the same
   * program fails on both, at different calls.
   */

  /** Export as a POSIX file descriptor in this process's table. */
  exportFd(a: PhysicalAllocation): number {
    this.#live();
    this.#allocations.check(a);
    return this.#sharing.exportFd(a);
  }

  /**
   * Import memory from a file descriptor of this process (one this process
   * exported, or one taken from another process: takeFd, machine.passFd): a
   * new handle to the same memory. `size` is what the exporter said out of
   * band; without it, memory whose size the backend cannot tell has size 0
   * (`sizeKnown` false) until its first map (Note [Foreign memory sizes]).
   */
  importFd(fd: number, options: ImportOptions = {}): PhysicalAllocation {
    this.#live();
    if (!Number.isInteger(fd) || fd < 0) throw vmmError('invalid-fd', `${fd} is not a file descriptor`);
    const { size } = options;
    if (size !== undefined && (!isCount(size) || size === 0 || !isMultipleOf(size, this.vaGranularity)))
      throw vmmError('invalid-value', `size ${size} is not a positive multiple of the granularity`);
    return this.#adoptImported(this.backend.importFd(fd, size));
  }

  /** Close a descriptor of this process's fd table (an export taken back, or one no longer needed). */
  closeFd(fd: number): void {
    this.#live();
    if (!Number.isInteger(fd) || fd < 0) throw vmmError('invalid-fd', `${fd} is not a file descriptor`);
    this.#sharing.closeFd(fd);
  }

  /**
   * Export as a machine-wide shareable token (ACL style). With `checkPid`,
   * only processes named through allowImport may import it.
   */
  exportShareable(a: PhysicalAllocation, checkPid: boolean): number {
    this.#live();
    this.#allocations.check(a);
    return this.#sharing.share(a, checkPid);
  }

  /**
   * Withdraw a token this process shares: later imports of it fail; memory
   * imported before stays with its importers, and the exporter's memory is
   * untouched. This is how a flavor takes back an export whose later step
   * failed (Note [One-step sharing]).
   */
  unshare(token: number): void {
    this.#live();
    this.#sharing.unshare(token);
  }

  allowImport(token: number, pids: readonly number[]): void {
    this.#live();
    this.backend.allowImport(token, pids);
  }

  importShareable(token: number): PhysicalAllocation {
    this.#live();
    return this.#adoptImported(this.backend.importShareable(token));
  }

  #adoptImported(imported: ImportedMemory): PhysicalAllocation {
    return this.#allocations.adopt(imported.handle, imported.size, imported.props, 'imported');
  }

  /**
   * Share the memory of the one-step allocation starting at `va` as a
   * machine-wide token (Note [One-step sharing]); with `checkPid`, only
   * processes named through allowImport may import it.
   */
  exportMalloc(va: number, checkPid: boolean): number {
    this.#live();
    return this.#oneStep.exportMalloc(va, checkPid);
  }

  /**
   * Import a token and map its memory as a one-step allocation of this
   * process that `device` may read and write (Note [One-step sharing]).
   */
  importMalloc(token: number, device: number): Reservation {
    this.#live();
    this.checkDevice(device);
    return this.#oneStep.importMalloc(token, device);
  }

  // --- bytes (a capture's work is built only for a capturing stream) -------------

  write(device: number, va: number, src: Uint8Array, stream = 0): void {
    this.#live();
    this.checkDevice(device);
    if (this.#graphs.captureOf(stream) === undefined) this.backend.write(device, va, src, stream);
    else this.#graphs.take(stream, { kind: 'write', device, va, bytes: src });
  }

  read(device: number, va: number, dst: Uint8Array, stream = 0): void {
    this.#live();
    this.checkDevice(device);
    if (this.#graphs.captureOf(stream) === undefined) this.backend.read(device, va, dst, stream);
    else this.#graphs.take(stream, { kind: 'read', device, va, bytes: dst });
  }

  copy(device: number, dst: number, src: number, size: number, stream = 0): void {
    this.#live();
    this.checkDevice(device);
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size}`);
    if (this.#graphs.captureOf(stream) === undefined) this.backend.copy(device, dst, src, size, stream);
    else this.#graphs.take(stream, { kind: 'copy', device, dst, src, size });
  }

  fill(device: number, va: number, value: number, size: number, stream = 0): void {
    this.#live();
    this.checkDevice(device);
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size}`);
    if (this.#graphs.captureOf(stream) === undefined)
      this.backend.fill(device, va, value & 0xff, size, stream);
    else this.#graphs.take(stream, { kind: 'fill', device, va, value: value & 0xff, size });
  }

  // --- the one-step path -------------------------------------------------------

  /**
   * Allocate device memory in one step, as cuMemAlloc / hipMalloc do:
   * reserve, create, map and grant the device read-write, as one
   * transaction. Size is rounded up to the granularity. `hint` asks for a
   * base address, taken exactly when that range is free address space
   * (reserve's `exact`): cuMemAlloc has none; replay uses it to put segments
   * where a recorded driver put them.
   */
  malloc(device: number, size: number, options: MallocOptions = {}): Reservation {
    this.#live();
    const info = this.device(device);
    if (!isCount(size) || size === 0) throw vmmError('invalid-value', `size ${size} is not positive`);
    const g = Math.max(info.minimumGranularity, this.vaGranularity);
    return this.#oneStep.malloc(device, Math.ceil(size / g) * g, options);
  }

  /** Free a one-step allocation by its base address. */
  mfree(va: number): void {
    this.#live();
    this.#oneStep.mfree(va);
  }

  /** Run a teardown or rollback step; a failure goes to the report hook, never up (dispose must not throw). */
  quietly(step: () => void): void {
    try {
      step();
    } catch (e) {
      this.#report('a teardown step failed', e);
    }
  }

  // --- streams -----------------------------------------------------------------

  createStream(device: number): number {
    this.#live();
    this.checkDevice(device);
    return this.#streams.create(device);
  }

  /** Destroy a stream after its queued work, or (`discard`) dropping it (Note [Forced stream destroy]). */
  destroyStream(stream: number, options: DestroyStreamOptions = {}): void {
    this.#live();
    this.#streams.destroy(stream, options);
    this.#graphs.dropStream(stream);
  }

  hasStream(stream: number): boolean {
    return this.#streams.has(stream);
  }

  /** The device of a live stream (undefined for none; stream 0 belongs to every device). */
  streamDevice(stream: number): number | undefined {
    return this.#streams.deviceOf(stream);
  }

  synchronizeStream(stream: number): void {
    this.#live();
    this.#streams.synchronize(stream);
  }

  /** Finish the work of every stream on `device` (-1: every device). */
  synchronize(device = -1): void {
    this.#live();
    if (device !== -1) this.device(device);
    this.backend.synchronizeDevice(device);
  }

  // --- events (Note [Events] in src/backend/backend.ts) --------------------------------

  /**
   * A new event for `device`'s streams; its handle value is never handed out
   * again. With `timing`, elapsedTime can measure between its records.
   */
  createEvent(device: number, options: { readonly timing?: boolean } = {}): number {
    this.#live();
    this.checkDevice(device);
    return this.#events.create(device, options.timing === true);
  }

  /** Milliseconds between the records of two completed timing events (0 on the simulator, which has no clock). */
  elapsedTime(start: number, end: number): number {
    this.#live();
    return this.#events.elapsedTime(start, end);
  }

  /** Mark the work queued so far on `stream` (0: the default stream), which must be of the event's device. */
  recordEvent(event: number, stream = 0, external = false): void {
    this.#live();
    // In capture a record is a join point, an external one a step of the graph (Note [Stream capture]).
    if (this.#graphs.captureOf(stream) !== undefined) {
      this.#events.check(event, stream);
      if (external) this.#graphs.take(stream, { kind: 'record', event });
      else this.#graphs.mark(stream, event);
      return;
    }
    this.#events.record(event, stream);
    this.#graphs.recordedOutside(event);
  }

  /** Whether the work the event marks has run (true for one never recorded). */
  queryEvent(event: number): boolean {
    this.#live();
    return this.#events.query(event);
  }

  /** Wait until the work the event marks has run; a failure of that work is thrown. */
  synchronizeEvent(event: number): void {
    this.#live();
    this.#events.synchronize(event);
  }

  /** Make work queued later on `stream` (of any device) wait for the event's marked work. */
  streamWaitEvent(stream: number, event: number): void {
    this.#live();
    if (this.#events.deviceOf(event) === undefined) throw vmmError('invalid-event', `no event ${event}`);
    if (this.#graphs.wait(stream, event)) return;
    this.#events.streamWait(stream, event);
  }

  destroyEvent(event: number): void {
    this.#live();
    this.#events.destroy(event);
  }

  /** Whether `event` is a handle this runtime handed out and has destroyed since. */
  eventDestroyed(event: number): boolean {
    return this.#events.isDestroyed(event);
  }

  /** The device of a live event, or undefined. */
  eventDevice(event: number): number | undefined {
    return this.#events.deviceOf(event);
  }

  /** Live events (for leak checks). */
  get eventCount(): number {
    return this.#events.size;
  }

  // --- stream capture (Note [Stream capture] in graphs.ts) ----------------------------

  /** Begin capturing `stream` (0: the default stream, of `device`). */
  beginCapture(stream: number, device: number, mode: CaptureMode): void {
    this.#live();
    this.checkDevice(device);
    if (stream !== 0) this.#streams.check(stream);
    this.#graphs.begin(stream, mode);
  }

  /** End the capture begun on `stream`: a graph handle (or the capture's failure; it is over either way). */
  endCapture(stream: number): number {
    this.#live();
    return this.#graphs.end(stream);
  }

  /** Mark the capture `stream` is in as invalidated (a call refused during it); it must still be ended. */
  invalidateCapture(stream: number): void {
    this.#live();
    this.#graphs.invalidate(stream);
  }

  /** What the captures, graphs and executable graphs are now (the flavors' rules read it). */
  get captures(): CaptureView {
    return this.#graphs;
  }

  instantiateGraph(graph: number): number {
    this.#live();
    return this.#graphs.instantiate(graph);
  }

  /** Issue an executable graph's work on `stream`, in capture order, as any stream work. */
  launchGraph(exec: number, stream: number): void {
    this.#live();
    if (stream !== 0) this.#streams.check(stream);
    this.#graphs.launch(exec, stream);
  }

  destroyGraph(graph: number): void {
    this.#live();
    this.#graphs.destroyGraph(graph);
  }

  destroyGraphExec(exec: number): void {
    this.#live();
    this.#graphs.destroyExec(exec);
  }

  // --- device reset ------------------------------------------------------------------

  /**
   * Release what this process holds of one device, as hipDeviceReset does,
   * and stay usable (Note [Device reset]): the device's work is finished,
   * then its events and streams destroyed, every mapping of its memory
   * unmapped (one-step allocations freed), every handle to its memory
   * released, and the reservations that held such mappings and are now
   * empty freed.
   *
   * Note [Device reset]: like dispose, a reset gives back memory and address
   * space, which cannot be taken back (Note [Points of no return]), so it is
   * not a transaction: it validates the device, then does every step it
   * can; a step that fails goes to the report hook and leaves that object
   * held (a later reset or dispose tries again). Reservations name no
   * device, so one is freed only when the reset emptied it; memory of other
   * devices and of the host is untouched.
   */
  resetDevice(device: number): void {
    this.#live();
    this.checkDevice(device);
    this.quietly(() => this.backend.synchronizeDevice(device));
    this.#events.destroyEach(device, this.#quietly);
    this.#streams.destroyEach(device, this.#quietly);
    const onDevice = (a: PhysicalAllocation) =>
      a.props.location.type === 'device' && a.props.location.id === device;
    const emptied = new Set<Reservation>();
    for (const m of [...this.#book.mappings.values()]) {
      if (!onDevice(m.allocation) || m[OWNER] !== this) continue;
      emptied.add(m.reservation);
      this.quietly(() => this.#mapper.unmapOne(m));
    }
    for (const a of [...this.#allocations.values()]) if (onDevice(a)) this.#releaseAll(a);
    for (const r of emptied)
      if (r[OWNER] === this && r.mappingCount === 0) this.quietly(() => this.#book.free(r));
  }

  /** Release every handle reference to `a`, one attempt each: a release that keeps failing must not spin. */
  #releaseAll(a: PhysicalAllocation): void {
    for (let n = a[HANDLE_REFS]; n > 0 && a.owner === this; n--)
      this.quietly(() => this.#allocations.release(a));
  }

  // --- teardown ------------------------------------------------------------------

  /** Release everything, as process exit would. Never throws; problems go to the report hook. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#graphs.clear();
    this.quietly(() => this.backend.synchronizeDevice(-1));
    this.#events.destroyEach(-1, this.#quietly);
    this.#streams.destroyEach(-1, this.#quietly);
    for (const m of [...this.#book.mappings.values()]) this.quietly(() => this.#mapper.unmapOne(m));
    for (const a of [...this.#allocations.values()]) this.#releaseAll(a);
    for (const a of this.#allocations.unreleased()) this.quietly(() => this.#allocations.giveBack(a));
    for (const r of [...this.#book.reservations.values()]) this.quietly(() => this.#book.free(r));
    this.quietly(() => this.backend.dispose());
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
