// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import type { Backend, DestroyStreamOptions, ImportedMemory } from '../backend/backend.js';
import { GenerationalHandleTable } from '../util/handle-table.js';
import { isMultipleOf, isPowerOfTwo } from '../util/integers.js';
import { OrderedMap } from '../util/ordered-map.js';
import { vmmError, warn } from './errors.js';
import { CORE, Mapping, PhysicalAllocation, Reservation } from './objects.js';
import { observeRuntime, type RuntimeObserver } from './observer.js';
import { instrument, type MethodsListed, type Tracer } from './trace.js';
import { Transaction } from './transaction.js';
import {
  Access,
  type AllocationProperties,
  type DeviceInfo,
  HandleType,
  isAccess,
  MAX_DEVICES,
  type MemoryInfo,
  withAccess,
} from './types.js';

export interface RuntimeOptions {
  /** Record every core and backend operation as a span (see trace.ts). */
  readonly tracer?: Tracer;
  /** Where dispose() and finalisers report problems instead of throwing. */
  readonly report?: (message: string, error?: unknown) => void;
  /** Told of every operation, before and after it runs (Note [Runtime observers], observer.ts). */
  readonly observers?: readonly RuntimeObserver[];
}

export interface AccessDescriptor {
  readonly device: number;
  readonly access: Access;
}

export interface ReserveOptions {
  readonly alignment?: number;
  /** Preferred base address; honoured when the range is free as the driver judges (Backend.reserve). */
  readonly hint?: number;
  /** The hint's range itself whenever that is free address space (Backend.reserve's `exact`). */
  readonly exact?: boolean;
}

export interface MallocOptions {
  /** Preferred base address; honoured when free, as reserve's hint. */
  readonly hint?: number;
  /**
   * HandleType bits the memory is created with, for a backend that exports
   * only memory created exportable (the CUDA driver) when the range is later
   * shared with exportMalloc (Note [One-step sharing]). Default 0.
   */
  readonly handleTypes?: number;
}

/** What the importer of a descriptor knows beside it (Note [Foreign memory sizes]). */
export interface ImportOptions {
  /** Bytes of the memory behind the descriptor, as the exporter said out of band. */
  readonly size?: number;
}

/** What `describe()` gives: a process's VMM state as plain data. */
export interface RuntimeDescription {
  readonly pid: number;
  readonly devices: readonly DeviceInfo[];
  readonly reservations: readonly {
    readonly base: number;
    readonly size: number;
    readonly origin: Reservation['origin'];
    readonly mappings: readonly {
      readonly va: number;
      readonly size: number;
      readonly offset: number;
      readonly handle: number;
      /** Access of each device, by ordinal. */
      readonly access: readonly Access[];
    }[];
  }[];
  readonly allocations: readonly {
    readonly handle: number;
    readonly size: number;
    readonly location: PhysicalAllocation['props']['location'];
    readonly origin: PhysicalAllocation['origin'];
    readonly handleRefs: number;
    readonly mapRefs: number;
    /** Exported fds still open and tokens still shared. */
    readonly exports: number;
  }[];
}

/**
 * The operations that get a trace span when a tracer is given: every method
 * that changes state or moves bytes. The type below fails to compile when a
 * public method is neither listed here nor named a query.
 */
export const TRACED_OPERATIONS = [
  'reserve',
  'free',
  'create',
  'release',
  'retain',
  'map',
  'unmap',
  'setAccess',
  'hostRead',
  'hostWrite',
  'exportFd',
  'importFd',
  'closeFd',
  'exportShareable',
  'allowImport',
  'importShareable',
  'unshare',
  'exportMalloc',
  'importMalloc',
  'write',
  'read',
  'copy',
  'fill',
  'malloc',
  'mfree',
  'createStream',
  'destroyStream',
  'synchronizeStream',
  'synchronize',
  'createEvent',
  'recordEvent',
  'queryEvent',
  'synchronizeEvent',
  'streamWaitEvent',
  'destroyEvent',
  'elapsedTime',
  'resetDevice',
] as const satisfies readonly (keyof Runtime)[];

/** Methods that only read state: not traced. */
type RuntimeQueries =
  | 'device'
  | 'isDevice'
  | 'memoryInfo'
  | 'reservationAt'
  | 'reservationContaining'
  | 'mappingAt'
  | 'mappingsIn'
  | 'nextMapping'
  | 'wholeMappings'
  | 'allocation'
  | 'getAccess'
  | 'stats'
  | 'reservations'
  | 'mappings'
  | 'hasStream'
  | 'streamDevice'
  | 'eventDevice'
  | 'eventDestroyed'
  | 'eventCount'
  | 'describe'
  | 'quietly'
  | 'dispose';

// Compile-time check: every method of Runtime is traced or a query.
const tracedOperationsAreComplete: MethodsListed<
  Runtime,
  (typeof TRACED_OPERATIONS)[number] | RuntimeQueries
> = true;
void tracedOperationsAreComplete;

/**
 * One process's VMM state: reservations, physical allocations and mappings,
 * vendor-neutral. Flavors translate their calls into these operations;
 * every operation validates fully before it changes anything.
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
 * Note [Handle values]: handle values are never handed out twice in a
 * process, so a stale value (released, or from a disposed process) is always
 * an error, never somebody else's memory. A generational handle table
 * (src/util/handle-table.ts) gives them: a reused slot carries a new
 * generation in the value's high part.
 */
export class Runtime implements Disposable {
  readonly devices: readonly DeviceInfo[];
  readonly #reservations = new OrderedMap<Reservation>();
  readonly #mappings = new OrderedMap<Mapping>();
  /** Allocations alive in this process (refCount > 0), by handle value (Note [Handle values]). */
  readonly #handles = new GenerationalHandleTable<PhysicalAllocation>();
  /** Allocations whose last reference went but whose backend release failed (Note [Points of no return]). */
  readonly #unreleased = new Set<PhysicalAllocation>();
  /** Live streams: each one's device. */
  readonly #streams = new Map<number, number>();
  /** Live events by handle value, never reused (Note [Handle values]): each one's backend id and device. */
  readonly #events = new GenerationalHandleTable<CoreEvent>();
  /** The fds this runtime exported, each with the allocation it shares, so closing one lowers that count. */
  readonly #exportedFds = new Map<number, PhysicalAllocation>();
  /** Tokens this process shares (exportShareable, exportMalloc) and not yet withdrawn, with their memory. */
  readonly #sharedTokens = new Map<number, PhysicalAllocation>();
  readonly #report: (message: string, error?: unknown) => void;
  #disposed = false;

  constructor(
    readonly backend: Backend,
    options: RuntimeOptions = {},
  ) {
    this.devices = backend.devices;
    if (this.devices.length > MAX_DEVICES)
      throw new RangeError(`vmmkit handles at most ${MAX_DEVICES} devices`);
    this.#report = options.report ?? warn;
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
    const d = this.devices[ordinal];
    if (d === undefined || !Number.isInteger(ordinal))
      throw vmmError('invalid-device', `no device ${ordinal}`);
    return d;
  }

  isDevice(ordinal: number): boolean {
    return Number.isInteger(ordinal) && ordinal >= 0 && ordinal < this.devices.length;
  }

  /** The smallest granularity any VA operation of this process accepts (device 0's minimum, as HIP uses). */
  get vaGranularity(): number {
    return this.devices[0].minimumGranularity;
  }

  memoryInfo(device: number): MemoryInfo {
    this.#live();
    this.device(device);
    return this.backend.memoryInfo(device);
  }

  /** The reservation whose base is exactly `va`. */
  reservationAt(va: number): Reservation | undefined {
    return this.#reservations.get(va);
  }

  /** The reservation containing address `va`. */
  reservationContaining(va: number): Reservation | undefined {
    return this.#reservations.containing(va);
  }

  /** The mapping containing address `va`. */
  mappingAt(va: number): Mapping | undefined {
    return this.#mappings.containing(va);
  }

  /** Every mapping that intersects [va, va + size), in address order. */
  mappingsIn(va: number, size: number): Mapping[] {
    const out: Mapping[] = [];
    let m = this.mappingAt(va) ?? this.#mappings.higher(va);
    while (m !== undefined && m.va < va + size) {
      out.push(m);
      m = this.#mappings.higher(m.va);
    }
    return out;
  }

  /** The mapping that starts right after `m` ends, if any. */
  nextMapping(m: Mapping): Mapping | undefined {
    const n = this.#mappings.higher(m.va);
    return n !== undefined && n.va === m.end ? n : undefined;
  }

  /**
   * The mappings that exactly tile [va, va + size): the range starts at a
   * mapping's start, ends at a mapping's end, has no holes and splits none.
   */
  wholeMappings(va: number, size: number): Mapping[] {
    const first = this.mappingAt(va);
    if (first === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    if (first.va !== va)
      throw vmmError('not-mapped', `0x${va.toString(16)} is inside a mapping, not at its start`);
    const end = va + size;
    const out = [first];
    let m = first;
    while (m.end < end) {
      const n = this.nextMapping(m);
      if (n === undefined) throw vmmError('not-mapped', `hole at 0x${m.end.toString(16)}`);
      out.push(n);
      m = n;
    }
    if (m.end !== end) throw vmmError('not-mapped', 'the range ends inside a mapping');
    return out;
  }

  /** The allocation behind a valid handle value. */
  allocation(handle: number): PhysicalAllocation | undefined {
    const a = this.#handles.get(handle);
    return a !== undefined && a[CORE].handleRefs > 0 ? a : undefined;
  }

  getAccess(va: number, device: number): Access {
    this.#live();
    this.device(device);
    const m = this.mappingAt(va);
    if (m === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    return m.accessOf(device);
  }

  /** Counts of live objects, for leak checks. */
  stats(): { reservations: number; mappings: number; handles: number; streams: number } {
    return {
      reservations: this.#reservations.size,
      mappings: this.#mappings.size,
      handles: this.#handles.size,
      streams: this.#streams.size,
    };
  }

  /**
   * Everything this process holds, as plain data (for pictures and dumps):
   * reservations with their mappings in address order, each mapping's
   * allocation and per-device access, and every live handle.
   */
  describe(): RuntimeDescription {
    const reservations = [...this.#reservations.values()].map((r) => ({
      base: r.base,
      size: r.size,
      origin: r.origin,
      mappings: this.mappingsIn(r.base, r.size).map((m) => ({
        va: m.va,
        size: m.size,
        offset: m.offset,
        handle: m.allocation.id,
        access: this.devices.map((d) => m.accessOf(d.ordinal)),
      })),
    }));
    const allocations = [...this.#handles.values()].map((a) => ({
      handle: a.id,
      size: a.size,
      location: a.props.location,
      origin: a.origin,
      handleRefs: a.handleRefs,
      mapRefs: a.mapRefs,
      exports: a.exports,
    }));
    return { pid: this.pid, devices: this.devices, reservations, allocations };
  }

  reservations(): IterableIterator<Reservation> {
    return this.#reservations.values();
  }

  mappings(): IterableIterator<Mapping> {
    return this.#mappings.values();
  }

  // --- virtual address ranges ----------------------------------------------

  reserve(size: number, options: ReserveOptions = {}): Reservation {
    this.#live();
    return this.#reserve(size, options.alignment ?? 0, options.hint ?? 0, 'vmm', options.exact === true);
  }

  #reserve(
    size: number,
    alignment: number,
    hint: number,
    origin: Reservation['origin'],
    exact = false,
  ): Reservation {
    const g = this.vaGranularity;
    if (!isCount(size) || size === 0 || !isMultipleOf(size, g)) {
      throw vmmError('invalid-value', `size ${size} is not a positive multiple of ${g}`);
    }
    if (!isCount(alignment) || (alignment !== 0 && !isPowerOfTwo(alignment))) {
      throw vmmError('invalid-value', `alignment ${alignment} is not 0 or a power of two`);
    }
    if (!isCount(hint)) throw vmmError('invalid-value', `address hint ${hint} is not an address`);
    const align = Math.max(alignment, g);
    const at = isMultipleOf(hint, align) ? hint : 0;
    // The fourth argument only when asked for, so traces of plain reserves stay as they were.
    const base =
      exact && at !== 0 ? this.backend.reserve(size, align, at, true) : this.backend.reserve(size, align, at);
    const r = new Reservation(base, size, align, origin);
    r[CORE].owner = this;
    this.#reservations.set(base, r, base + size);
    return r;
  }

  /** Give a whole reservation back; nothing may be mapped in it. */
  free(r: Reservation): void {
    this.#live();
    if (r.origin === 'malloc') throw vmmError('not-reserved', 'a one-step allocation is freed with mfree');
    this.#free(r);
  }

  #free(r: Reservation): void {
    const state = r[CORE];
    if (state.owner !== this) throw vmmError('not-reserved', 'reservation is not live');
    if (state.mappingCount > 0)
      throw vmmError('in-use', `${state.mappingCount} mapping(s) still inside the reservation`);
    this.backend.free(r.base, r.size);
    this.#reservations.delete(r.base);
    state.owner = undefined;
  }

  // --- physical memory -----------------------------------------------------

  create(size: number, props: AllocationProperties): PhysicalAllocation {
    this.#live();
    return this.#create(size, props, 'created');
  }

  #create(
    size: number,
    props: AllocationProperties,
    origin: PhysicalAllocation['origin'],
  ): PhysicalAllocation {
    if (!isCount(size) || size === 0) throw vmmError('invalid-value', `size ${size} is not positive`);
    const { location } = props;
    if (location.type === 'device') this.device(location.id);
    else if (location.type !== 'host' || !isCount(location.id)) {
      throw vmmError('invalid-value', `bad location ${JSON.stringify(location)}`);
    }
    return this.#adopt(this.backend.create(size, props), size, props, origin);
  }

  /** A new handle value for memory the backend now holds. */
  #adopt(
    backendHandle: number,
    size: number | undefined,
    props: AllocationProperties,
    origin: PhysicalAllocation['origin'],
  ): PhysicalAllocation {
    const a = new PhysicalAllocation(this.#handles.peek(), size, props, backendHandle, origin);
    a[CORE].owner = this;
    this.#handles.add(a);
    return a;
  }

  /** Drop one handle reference; the memory goes when nothing (handle or mapping) holds it. */
  release(a: PhysicalAllocation): void {
    this.#live();
    this.#release(a);
  }

  #release(a: PhysicalAllocation): void {
    this.#checkHandle(a);
    const state = a[CORE];
    if (state.handleRefs === 1 && state.mapRefs === 0) this.#giveBack(a);
    else state.handleRefs--;
  }

  /** A new handle reference to the allocation mapped at `va` (from any address inside the mapping). */
  retain(va: number): PhysicalAllocation {
    this.#live();
    const m = this.mappingAt(va);
    if (m === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    if (m.reservation.origin === 'malloc')
      throw vmmError('not-mapped', 'one-step allocations have no handle');
    const a = m.allocation;
    a[CORE].handleRefs++;
    return a;
  }

  /**
   * Release the memory of an allocation whose last reference is going: the
   * backend first (if it refuses, nothing changed), then the books. Freeing
   * the exporter's memory withdraws its shareable tokens (ACL's
   * aclrtFreePhysical does); a token that cannot be withdrawn is reported.
   */
  #giveBack(a: PhysicalAllocation): void {
    this.backend.release(a.backendHandle);
    const state = a[CORE];
    state.handleRefs = 0;
    state.mapRefs = 0;
    state.owner = undefined;
    this.#handles.remove(a.id);
    if (this.#unreleased.size > 0) this.#unreleased.delete(a);
    if (state.tokens === undefined) return;
    for (const t of state.tokens) {
      if (!this.#sharedTokens.delete(t)) continue;
      this.quietly(() => this.backend.unshare(t));
    }
  }

  #checkHandle(a: PhysicalAllocation): void {
    const state = a[CORE];
    if (state.owner !== this || state.handleRefs === 0) {
      throw vmmError('invalid-handle', `handle ${a.id} is not valid`);
    }
  }

  // --- mapping and access --------------------------------------------------

  /** Map `size` bytes of `a` from `offset` at `va`, inside one reservation. */
  map(va: number, size: number, a: PhysicalAllocation, offset = 0): Mapping {
    this.#live();
    this.#checkHandle(a);
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
    const m = this.#map(va, size, a, offset, r);
    if (!a.sizeKnown) a[CORE].size = size;
    return m;
  }

  #map(va: number, size: number, a: PhysicalAllocation, offset: number, r: Reservation): Mapping {
    if (this.#mappings.intersects(va, va + size)) {
      throw vmmError('overlap', `[0x${va.toString(16)}, +${size}) is already mapped in part`);
    }
    this.backend.map(va, size, a.backendHandle, offset);
    const m = new Mapping(va, size, a, offset, r);
    m[CORE].owner = this;
    this.#mappings.set(va, m, va + size);
    r[CORE].mappingCount++;
    a[CORE].mapRefs++;
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
      for (const m of mappings) this.#checkVmm(m);
      this.#unmapAll(mappings);
    } else {
      this.#checkVmm(mappings);
      this.#unmapOne(mappings);
    }
  }

  /** VMM calls never touch one-step allocations (their memory has no handle to unmap or grant through). */
  #checkVmm(m: Mapping): void {
    if (m.reservation.origin === 'malloc')
      throw vmmError('not-mapped', `0x${m.va.toString(16)} is a one-step allocation, not a VMM mapping`);
  }

  #unmapOne(m: Mapping): void {
    if (this.#streams.size > 0) this.backend.synchronizeDevice(-1);
    this.backend.unmap(m.va, m.size);
    this.#forget(m);
    const a = m.allocation;
    if (a.refCount !== 0) return;
    // The last reference went: releasing is the step that can fail, and then the unmap is undone.
    Transaction.run(this.#report, (tx) => {
      tx.undo(() => this.#restore([m]));
      this.#giveBack(a);
    });
  }

  /** Unmap several mappings: all unmaps first, releases last (Note [Points of no return]). */
  #unmapAll(mappings: readonly Mapping[]): void {
    if (this.#streams.size > 0) this.backend.synchronizeDevice(-1);
    const unused = Transaction.run(this.#report, (tx) => {
      for (const m of mappings) {
        this.backend.unmap(m.va, m.size);
        tx.undo(() => this.#remap(m));
      }
      for (const m of mappings) this.#forget(m);
      tx.undo(() => {
        for (const m of mappings) this.#remember(m);
      });
      const unused = [...new Set(mappings.map((m) => m.allocation))].filter((a) => a.refCount === 0);
      // The first release is the point of no return: if it fails, nothing has been given back yet.
      if (unused.length > 0) this.#giveBack(unused[0]);
      return unused;
    });
    for (let i = 1; i < unused.length; i++) {
      try {
        this.#giveBack(unused[i]);
      } catch (e) {
        this.#unreleased.add(unused[i]);
        this.#report('an unmap could not release memory; it stays held until dispose', e);
      }
    }
  }

  /** Put unmapped mappings back, in the books and the backend (undo of an unmap). */
  #restore(mappings: readonly Mapping[]): void {
    for (const m of mappings) this.#remember(m);
    for (const m of mappings) this.#remap(m);
  }

  /** Take a mapping out of the books (its backend mapping is already gone). */
  #forget(m: Mapping): void {
    this.#mappings.delete(m.va);
    m[CORE].owner = undefined;
    m.reservation[CORE].mappingCount--;
    m.allocation[CORE].mapRefs--;
  }

  #remember(m: Mapping): void {
    this.#mappings.set(m.va, m, m.end);
    m[CORE].owner = this;
    m.reservation[CORE].mappingCount++;
    m.allocation[CORE].mapRefs++;
  }

  /** Redo a mapping in the backend with the access it had (undo of an unmap). */
  #remap(m: Mapping): void {
    this.backend.map(m.va, m.size, m.allocation.backendHandle, m.offset);
    const bits = m[CORE].accessBits;
    for (let d = 0; d < this.devices.length && bits !== 0; d++) {
      const access = m.accessOf(d);
      if (access !== Access.None) this.backend.setAccess(m.va, m.size, d, access);
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
      this.device(d.device);
      if (!isAccess(d.access)) throw vmmError('invalid-value', `access flags ${d.access}`);
    }
    if (host !== undefined) {
      this.#setWithHost(va, size, descriptors, host);
      return;
    }
    const first = this.mappingAt(va);
    if (first === undefined || first.va !== va || first.end !== va + size) {
      for (const m of this.wholeMappings(va, size)) this.#checkVmm(m);
    } else this.#checkVmm(first);
    this.#setAccess(first!, va + size, descriptors);
  }

  /** setAccess with the CPU's grant: the CPU's first, given back if a device's then fails. */
  #setWithHost(va: number, size: number, descriptors: readonly AccessDescriptor[], host: Access): void {
    if (!isAccess(host)) throw vmmError('invalid-value', `access flags ${host}`);
    const mappings = this.wholeMappings(va, size);
    for (const m of mappings) {
      this.#checkVmm(m);
      if (m.allocation.props.location.type !== 'host')
        throw vmmError(
          'not-supported',
          `0x${m.va.toString(16)} maps device memory, which the CPU cannot reach`,
        );
    }
    Transaction.run(this.#report, (tx) => {
      this.backend.setHostAccess(va, size, host);
      const before = mappings.map((m) => m.hostAccess);
      for (const m of mappings) m[CORE].hostAccess = host;
      tx.undo(() =>
        mappings.forEach((m, i) => {
          this.backend.setHostAccess(m.va, m.size, before[i]);
          m[CORE].hostAccess = before[i];
        }),
      );
      if (descriptors.length > 0) this.#setAccess(mappings[0], va + size, descriptors);
    });
  }

  /** Set access on the contiguous live mappings from `first` up to `end`; all or nothing. */
  #setAccess(first: Mapping, end: number, descriptors: readonly AccessDescriptor[]): void {
    const va = first.va;
    if (descriptors.length === 1) {
      this.backend.setAccess(va, end - va, descriptors[0].device, descriptors[0].access);
    } else {
      Transaction.run(this.#report, (tx) => {
        for (const d of descriptors) {
          this.backend.setAccess(va, end - va, d.device, d.access);
          tx.undo(() => this.#restoreAccess(first, end, d.device));
        }
      });
    }
    // Step by end address, so the mapping after the range is never touched.
    for (let m = first; ; m = this.#mappings.get(m.end)!) {
      const state = m[CORE];
      for (const d of descriptors) state.accessBits = withAccess(state.accessBits, d.device, d.access);
      if (m.end >= end) break;
    }
  }

  /** CPU loads from host-located memory the CPU may read (Note [Host access]); no stream, no copy engine. */
  hostRead(va: number, dst: Uint8Array): void {
    this.#live();
    this.#checkHost(va, dst.length, Access.Read);
    this.backend.hostRead(va, dst);
  }

  /** CPU stores to host-located memory the CPU may write (Note [Host access]). */
  hostWrite(va: number, src: Uint8Array): void {
    this.#live();
    this.#checkHost(va, src.length, Access.ReadWrite);
    this.backend.hostWrite(va, src);
  }

  /** Every byte of [va, va + length) in mappings whose CPU access includes `need`; else the error a load would be. */
  #checkHost(va: number, length: number, need: Access): void {
    if (length === 0) return;
    let m = this.mappingAt(va);
    if (m === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    const end = va + length;
    for (;;) {
      if ((m.hostAccess & need) !== need)
        throw vmmError(
          'access-denied',
          `the CPU may not ${need === Access.Read ? 'read' : 'write'} 0x${Math.max(va, m.va).toString(16)}`,
        );
      if (m.end >= end) return;
      const next = this.nextMapping(m);
      if (next === undefined || next.va !== m.end)
        throw vmmError('not-mapped', `0x${m.end.toString(16)} is not mapped`);
      m = next;
    }
  }

  /** Give `device` back, mapping by mapping, the access the books say it has. */
  #restoreAccess(first: Mapping, end: number, device: number): void {
    for (let m = this.#mappings.get(first.va); m !== undefined && m.va < end; m = this.#mappings.get(m.end)) {
      this.backend.setAccess(m.va, m.size, device, m.accessOf(device));
    }
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
    this.#checkHandle(a);
    if ((a.props.handleTypes & HandleType.PosixFd) === 0) {
      throw vmmError('not-supported', 'the allocation was not created exportable as a POSIX fd');
    }
    const fd = this.backend.exportFd(a.backendHandle);
    a[CORE].exports++;
    this.#exportedFds.set(fd, a);
    return fd;
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
    this.backend.closeFd(fd);
    const a = this.#exportedFds.get(fd);
    if (a !== undefined) {
      this.#exportedFds.delete(fd);
      a[CORE].exports--;
    }
  }

  /**
   * Export as a machine-wide shareable token (ACL style). With `checkPid`,
   * only processes named through allowImport may import it.
   */
  exportShareable(a: PhysicalAllocation, checkPid: boolean): number {
    this.#live();
    this.#checkHandle(a);
    return this.#share(a, checkPid);
  }

  /** One backend step, booked only once it succeeded: a failed export leaves no token to take back. */
  #share(a: PhysicalAllocation, checkPid: boolean): number {
    const token = this.backend.exportShareable(a.backendHandle, checkPid);
    const state = a[CORE];
    state.exports++;
    (state.tokens ??= []).push(token);
    this.#sharedTokens.set(token, a);
    return token;
  }

  /**
   * Withdraw a token this process shares: later imports of it fail; memory
   * imported before stays with its importers, and the exporter's memory is
   * untouched. This is how a flavor takes back an export whose later step
   * failed (Note [One-step sharing]).
   */
  unshare(token: number): void {
    this.#live();
    const a = this.#sharedTokens.get(token);
    if (a === undefined) throw vmmError('invalid-fd', `this process shares no token ${token}`);
    this.backend.unshare(token);
    this.#sharedTokens.delete(token);
    const state = a[CORE];
    state.exports--;
    state.tokens = state.tokens?.filter((t) => t !== token);
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
    return this.#adopt(imported.handle, imported.size, imported.props, 'imported');
  }

  /*
   * Note [One-step sharing]: memory from malloc has no handle for the
   * caller (retain and exportShareable refuse it), yet every vendor shares
   * it: ACL's aclrtIpcMemGetExportKey / aclrtIpcMemImportByKey, CUDA's
   * cuIpcGetMemHandle / cuIpcOpenMemHandle, HIP's hipIpcGetMemHandle. So
   * core shares it itself, through the same backend tokens as
   * exportShareable (Note [Tokens in the Backend]), and a backend that can
   * carry tokens between real processes carries these too:
   *  - exportMalloc(va) exports the allocation behind a one-step range as a
   *    token; mfree withdraws it (as freeing any exporter's memory does),
   *    unshare(token) withdraws it earlier;
   *  - importMalloc(token, device) imports the token, reserves a range of its
   *    size, maps it and grants `device` read-write, as one transaction (a
   *    failed step undoes the import too); the result is a one-step range of
   *    this process, freed with mfree, which drops only this process's hold.
   * The memory goes when its last holder lets go: the exporter's mapping,
   * each importer's mapping, and the token until it is withdrawn.
   */

  /**
   * Share the memory of the one-step allocation starting at `va` as a
   * machine-wide token (Note [One-step sharing]); with `checkPid`, only
   * processes named through allowImport may import it.
   */
  exportMalloc(va: number, checkPid: boolean): number {
    this.#live();
    const r = this.#reservations.get(va);
    const m = r?.origin === 'malloc' ? this.#mappings.get(va) : undefined;
    if (m === undefined)
      throw vmmError('not-reserved', `0x${va.toString(16)} is not the start of a one-step allocation`);
    return this.#share(m.allocation, checkPid);
  }

  /**
   * Import a token and map its memory as a one-step allocation of this
   * process that `device` may read and write (Note [One-step sharing]).
   */
  importMalloc(token: number, device: number): Reservation {
    this.#live();
    this.device(device);
    return Transaction.run(this.#report, (tx) => {
      const imported = this.backend.importShareable(token);
      const { size } = imported;
      if (size === undefined) {
        this.quietly(() => this.backend.release(imported.handle));
        throw vmmError('not-supported', `the backend cannot tell the size of token ${token}'s memory`);
      }
      const a = this.#adopt(imported.handle, size, imported.props, 'malloc');
      tx.undo(() => this.#release(a));
      const r = this.#reserve(size, 0, 0, 'malloc');
      tx.undo(() => this.#free(r));
      this.#grantOneStep(tx, r, a, device);
      return r;
    });
  }

  // --- bytes -------------------------------------------------------------------

  write(device: number, va: number, src: Uint8Array, stream = 0): void {
    this.#live();
    this.device(device);
    this.backend.write(device, va, src, stream);
  }

  read(device: number, va: number, dst: Uint8Array, stream = 0): void {
    this.#live();
    this.device(device);
    this.backend.read(device, va, dst, stream);
  }

  copy(device: number, dst: number, src: number, size: number, stream = 0): void {
    this.#live();
    this.device(device);
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size}`);
    this.backend.copy(device, dst, src, size, stream);
  }

  fill(device: number, va: number, value: number, size: number, stream = 0): void {
    this.#live();
    this.device(device);
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size}`);
    this.backend.fill(device, va, value & 0xff, size, stream);
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
    const rounded = Math.ceil(size / g) * g;
    return Transaction.run(this.#report, (tx) => {
      const r = this.#reserve(rounded, 0, options.hint ?? 0, 'malloc', true);
      tx.undo(() => this.#free(r));
      const handleTypes = options.handleTypes ?? 0;
      const props = { location: { type: 'device', id: device }, handleTypes, uncached: false } as const;
      const a = this.#create(rounded, props, 'malloc');
      tx.undo(() => this.#release(a));
      this.#grantOneStep(tx, r, a, device);
      return r;
    });
  }

  /** The last steps of a one-step allocation: map all of `r` to `a`, grant `device` read-write. */
  #grantOneStep(tx: Transaction, r: Reservation, a: PhysicalAllocation, device: number): void {
    const m = this.#map(r.base, r.size, a, 0, r);
    tx.undo(() => {
      this.backend.unmap(m.va, m.size);
      this.#forget(m);
    });
    this.#setAccess(m, m.end, [{ device, access: Access.ReadWrite }]);
    // The mapping alone holds the memory now: its handle is not the caller's.
    a[CORE].handleRefs = 0;
  }

  /** Free a one-step allocation by its base address. */
  mfree(va: number): void {
    this.#live();
    const r = this.#reservations.get(va);
    if (r === undefined || r.origin !== 'malloc') throw vmmError('not-reserved', 'not a one-step allocation');
    const m = this.#mappings.get(va);
    if (m !== undefined) this.#unmapOne(m);
    // Note [Points of no return]: the memory is gone; the address space is freed now or at dispose.
    try {
      this.#free(r);
    } catch (e) {
      if (m === undefined) throw e;
      this.#report('mfree could not free the address range; it stays reserved until dispose', e);
    }
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
    this.device(device);
    const s = this.backend.createStream(device);
    this.#streams.set(s, device);
    return s;
  }

  /** Destroy a stream after its queued work, or (`discard`) dropping it (Note [Forced stream destroy]). */
  destroyStream(stream: number, options: DestroyStreamOptions = {}): void {
    this.#live();
    this.#destroyStream(stream, options);
  }

  #destroyStream(stream: number, options: DestroyStreamOptions = {}): void {
    if (!this.#streams.has(stream)) throw vmmError('invalid-stream', `no stream ${stream}`);
    try {
      if (options.discard) this.backend.destroyStream(stream, options);
      else this.backend.destroyStream(stream);
    } finally {
      // The stream is gone even when its last queued work failed (that failure is still thrown).
      this.#streams.delete(stream);
    }
  }

  hasStream(stream: number): boolean {
    return this.#streams.has(stream);
  }

  /** The device of a live stream (undefined for none; stream 0 belongs to every device). */
  streamDevice(stream: number): number | undefined {
    return this.#streams.get(stream);
  }

  synchronizeStream(stream: number): void {
    this.#live();
    if (!this.#streams.has(stream)) throw vmmError('invalid-stream', `no stream ${stream}`);
    this.backend.synchronizeStream(stream);
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
    this.device(device);
    const backend = this.backend.createEvent(device, options.timing === true);
    return this.#events.add({ backend, device });
  }

  /** Milliseconds between the records of two completed timing events (0 on the simulator, which has no clock). */
  elapsedTime(start: number, end: number): number {
    this.#live();
    return this.backend.elapsedTime(this.#event(start).backend, this.#event(end).backend);
  }

  /** Mark the work queued so far on `stream` (0: the default stream), which must be of the event's device. */
  recordEvent(event: number, stream = 0): void {
    this.#live();
    const e = this.#event(event);
    if (stream !== 0) {
      const device = this.#streams.get(stream);
      if (device === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
      if (device !== e.device)
        throw vmmError(
          'invalid-context',
          `stream ${stream} is of device ${device}, the event of ${e.device}`,
        );
    }
    this.backend.recordEvent(e.backend, stream);
  }

  /** Whether the work the event marks has run (true for one never recorded). */
  queryEvent(event: number): boolean {
    this.#live();
    return this.backend.queryEvent(this.#event(event).backend);
  }

  /** Wait until the work the event marks has run; a failure of that work is thrown. */
  synchronizeEvent(event: number): void {
    this.#live();
    this.backend.synchronizeEvent(this.#event(event).backend);
  }

  /** Make work queued later on `stream` (of any device) wait for the event's marked work. */
  streamWaitEvent(stream: number, event: number): void {
    this.#live();
    const e = this.#event(event);
    if (stream !== 0 && !this.#streams.has(stream)) throw vmmError('invalid-stream', `no stream ${stream}`);
    this.backend.streamWaitEvent(stream, e.backend);
  }

  destroyEvent(event: number): void {
    this.#live();
    this.#destroyEvent(event, this.#event(event));
  }

  #destroyEvent(event: number, e: CoreEvent): void {
    this.backend.destroyEvent(e.backend);
    this.#events.remove(event);
  }

  /** Whether `event` is a handle this runtime handed out and has destroyed since. */
  eventDestroyed(event: number): boolean {
    return this.#events.isStale(event);
  }

  /** The device of a live event, or undefined. */
  eventDevice(event: number): number | undefined {
    return this.#events.get(event)?.device;
  }

  /** Live events (for leak checks). */
  get eventCount(): number {
    return this.#events.size;
  }

  #event(event: number): CoreEvent {
    const e = this.#events.get(event);
    if (e === undefined) throw vmmError('invalid-event', `no event ${event}`);
    return e;
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
    this.device(device);
    this.quietly(() => this.backend.synchronizeDevice(device));
    for (const [id, e] of [...this.#events.entries()])
      if (e.device === device) this.quietly(() => this.#destroyEvent(id, e));
    for (const [s, d] of [...this.#streams]) if (d === device) this.quietly(() => this.#destroyStream(s));
    const onDevice = (a: PhysicalAllocation) =>
      a.props.location.type === 'device' && a.props.location.id === device;
    const emptied = new Set<Reservation>();
    for (const m of [...this.#mappings.values()]) {
      if (!onDevice(m.allocation) || m[CORE].owner !== this) continue;
      emptied.add(m.reservation);
      this.quietly(() => this.#unmapOne(m));
    }
    for (const a of [...this.#handles.values()]) {
      if (!onDevice(a)) continue;
      for (let n = a[CORE].handleRefs; n > 0 && a.owner === this; n--) this.quietly(() => this.#release(a));
    }
    for (const r of emptied)
      if (r[CORE].owner === this && r.mappingCount === 0) this.quietly(() => this.#free(r));
  }

  // --- teardown ------------------------------------------------------------------

  /** Release everything, as process exit would. Never throws; problems go to the report hook. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.quietly(() => this.backend.synchronizeDevice(-1));
    for (const [id, e] of [...this.#events.entries()]) this.quietly(() => this.#destroyEvent(id, e));
    for (const s of [...this.#streams.keys()]) this.quietly(() => this.#destroyStream(s));
    for (const m of [...this.#mappings.values()]) this.quietly(() => this.#unmapOne(m));
    for (const a of [...this.#handles.values()]) {
      // One attempt per reference: a release that keeps failing must not spin.
      for (let n = a[CORE].handleRefs; n > 0 && a.owner === this; n--) this.quietly(() => this.#release(a));
    }
    for (const a of [...this.#unreleased]) this.quietly(() => this.#giveBack(a));
    for (const r of [...this.#reservations.values()]) this.quietly(() => this.#free(r));
    this.quietly(() => this.backend.dispose());
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** What core keeps of an event: the backend's id for it and the device whose streams it marks. */
interface CoreEvent {
  readonly backend: number;
  readonly device: number;
}

/** A non-negative safe integer. */
function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}
