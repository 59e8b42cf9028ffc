import type { Backend, ImportedMemory } from '../backend/backend.js';
import { HandleTable } from '../util/handle-table.js';
import { isMultipleOf, isPowerOfTwo } from '../util/integers.js';
import { OrderedMap } from '../util/ordered-map.js';
import { vmmError } from './errors.js';
import { Mapping, PhysicalAllocation, Reservation } from './objects.js';
import { instrument, type Tracer } from './trace.js';
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
}

export interface AccessDescriptor {
  readonly device: number;
  readonly access: Access;
}

export interface ReserveOptions {
  readonly alignment?: number;
  /** Preferred base address; honoured when the range is free, otherwise ignored. */
  readonly hint?: number;
}

/** The operations that get a trace span when a tracer is given. */
const TRACED_OPERATIONS = [
  'reserve',
  'free',
  'create',
  'release',
  'retain',
  'map',
  'unmap',
  'unmapMappings',
  'unmapMapping',
  'setAccess',
  'setAccessOn',
  'setAccessFrom',
  'exportFd',
  'importFd',
  'exportShareable',
  'allowImport',
  'importShareable',
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
] as const;

/**
 * One process's VMM state: reservations, physical allocations and mappings,
 * vendor-neutral. Flavours translate their calls into these operations;
 * every operation validates fully before it changes anything, so a failed
 * call leaves the runtime as it was (invariant 1 below).
 *
 * Invariants:
 *  1. A thrown VmmError means no state changed, here or in the backend.
 *  2. Mappings never overlap, and each lies inside exactly one reservation.
 *  3. An allocation's memory is released in the backend exactly when its
 *     refCount (handle references + mappings) reaches zero.
 *  4. A mapping's access bits equal what the backend's page tables grant.
 */
export class Runtime implements Disposable {
  readonly devices: readonly DeviceInfo[];
  readonly #reservations = new OrderedMap<Reservation>();
  readonly #mappings = new OrderedMap<Mapping>();
  /**
   * Allocations alive in this process (refCount > 0), by handle value. The
   * handle is valid while handleRefs > 0; an allocation kept only by its
   * mappings keeps its value, so retain gives the same handle back.
   */
  readonly #handles = new HandleTable<PhysicalAllocation>();
  readonly #streams = new Set<number>();
  readonly #report: (message: string, error?: unknown) => void;
  #disposed = false;

  constructor(
    readonly backend: Backend,
    options: RuntimeOptions = {},
  ) {
    this.devices = backend.devices;
    if (this.devices.length > MAX_DEVICES)
      throw new RangeError(`vmmkit handles at most ${MAX_DEVICES} devices`);
    this.#report = options.report ?? ((message, error) => console.warn(`vmmkit: ${message}`, error ?? ''));
    if (options.tracer) instrument(this, 'core', options.tracer, TRACED_OPERATIONS);
  }

  get pid(): number {
    return this.backend.pid;
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
    return a !== undefined && a.handleRefs > 0 ? a : undefined;
  }

  getAccess(va: number, device: number): Access {
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

  reservations(): IterableIterator<Reservation> {
    return this.#reservations.values();
  }

  mappings(): IterableIterator<Mapping> {
    return this.#mappings.values();
  }

  // --- virtual address ranges ----------------------------------------------

  reserve(size: number, options: ReserveOptions = {}): Reservation {
    return this.#reserve(size, options.alignment ?? 0, options.hint ?? 0, 'vmm');
  }

  #reserve(size: number, alignment: number, hint: number, origin: Reservation['origin']): Reservation {
    const g = this.vaGranularity;
    if (!isCount(size) || size === 0 || !isMultipleOf(size, g)) {
      throw vmmError('invalid-value', `size ${size} is not a positive multiple of ${g}`);
    }
    if (!isCount(alignment) || (alignment !== 0 && !isPowerOfTwo(alignment))) {
      throw vmmError('invalid-value', `alignment ${alignment} is not 0 or a power of two`);
    }
    if (!isCount(hint)) throw vmmError('invalid-value', `address hint ${hint} is not an address`);
    const align = Math.max(alignment, g);
    const base = this.backend.reserve(size, align, isMultipleOf(hint, align) ? hint : 0);
    const r = new Reservation(base, size, align, origin);
    r.owner = this;
    this.#reservations.set(base, r, base + size);
    return r;
  }

  /** Give a whole reservation back; nothing may be mapped in it. */
  free(r: Reservation): void {
    if (r.owner !== this) throw vmmError('not-reserved', 'reservation is not live');
    if (r.mappingCount > 0)
      throw vmmError('in-use', `${r.mappingCount} mapping(s) still inside the reservation`);
    this.backend.free(r.base, r.size);
    this.#reservations.delete(r.base);
    r.owner = undefined;
  }

  // --- physical memory -----------------------------------------------------

  create(size: number, props: AllocationProperties): PhysicalAllocation {
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
    const backendHandle = this.backend.create(size, props);
    const a = new PhysicalAllocation(this.#handles.peek(), size, props, backendHandle, origin);
    a.owner = this;
    this.#handles.add(a);
    return a;
  }

  /** Drop one handle reference; the memory goes when nothing (handle or mapping) holds it. */
  release(a: PhysicalAllocation): void {
    this.#checkHandle(a);
    a.handleRefs--;
    this.#releaseIfUnused(a);
  }

  /** A new handle reference to the allocation mapped at `va` (from any address inside the mapping). */
  retain(va: number): PhysicalAllocation {
    const m = this.mappingAt(va);
    if (m === undefined) throw vmmError('not-mapped', `nothing is mapped at 0x${va.toString(16)}`);
    if (m.reservation.origin === 'malloc')
      throw vmmError('not-mapped', 'one-step allocations have no handle');
    const a = m.allocation;
    a.handleRefs++;
    return a;
  }

  #releaseIfUnused(a: PhysicalAllocation): void {
    if (a.refCount !== 0) return;
    this.#handles.remove(a.id);
    a.owner = undefined;
    // Freeing the exporter's memory withdraws its shareable tokens (ACL's aclrtFreePhysical does).
    if (a.tokens !== undefined) for (const t of a.tokens) this.quietly(() => this.backend.unshare(t));
    this.backend.release(a.backendHandle);
  }

  #checkHandle(a: PhysicalAllocation): void {
    if (a.owner !== this || a.handleRefs === 0) {
      throw vmmError('invalid-handle', `handle ${a.id} is not valid`);
    }
  }

  // --- mapping and access --------------------------------------------------

  /**
   * Map `size` bytes of `a` from `offset` at `va`, inside one reservation.
   * A caller that has already found that reservation passes it as `within`.
   */
  map(va: number, size: number, a: PhysicalAllocation, offset = 0, within?: Reservation): Mapping {
    this.#checkHandle(a);
    const g = this.vaGranularity;
    if (!isCount(va) || !isMultipleOf(va, g))
      throw vmmError('invalid-value', `address 0x${va.toString(16)} is not aligned`);
    if (!isCount(size) || size === 0 || !isMultipleOf(size, g))
      throw vmmError('invalid-value', `size ${size} is not aligned`);
    if (!isCount(offset) || !isMultipleOf(offset, g) || offset + size > a.size) {
      throw vmmError('invalid-value', `offset ${offset} + size ${size} is outside the allocation`);
    }
    const r = within?.owner === this && va >= within.base ? within : this.reservationContaining(va);
    if (r === undefined || va + size > r.end)
      throw vmmError('not-reserved', 'range is not inside one reservation');
    if (this.#mappings.intersects(va, va + size)) {
      throw vmmError('overlap', `[0x${va.toString(16)}, +${size}) is already mapped in part`);
    }
    this.backend.map(va, size, a.backendHandle, offset);
    const m = new Mapping(va, size, a, offset, r);
    m.owner = this;
    this.#mappings.set(va, m, va + size);
    r.mappingCount++;
    a.mapRefs++;
    return m;
  }

  /** Unmap the mappings that exactly tile [va, va + size) (see wholeMappings). */
  unmap(va: number, size: number): void {
    const first = this.#tile(va, size);
    // One mapping (the common case) goes without building a list.
    if (first.end === va + size) this.#unmapOne(first);
    else this.unmapMappings(this.wholeMappings(va, size));
  }

  /** The first of the mappings that exactly tile [va, va + size); throws like wholeMappings. */
  #tile(va: number, size: number): Mapping {
    const first = this.mappingAt(va);
    if (first === undefined || first.va !== va || first.end > va + size)
      return this.wholeMappings(va, size)[0];
    return first;
  }

  /** Unmap one live mapping (one a caller already holds: no lookup). */
  unmapMapping(m: Mapping): void {
    if (m.owner !== this) throw vmmError('not-mapped', 'mapping is not live');
    this.#unmapOne(m);
  }

  #unmapOne(m: Mapping): void {
    if (this.#streams.size > 0) this.backend.synchronizeDevice(-1);
    this.backend.unmap(m.va, m.size);
    this.#mappings.delete(m.va);
    m.owner = undefined;
    m.reservation.mappingCount--;
    m.allocation.mapRefs--;
    this.#releaseIfUnused(m.allocation);
  }

  /**
   * Unmap the given live mappings. Work queued on streams is finished first,
   * as drivers do, so nothing in flight touches memory being unmapped.
   */
  unmapMappings(mappings: readonly Mapping[]): void {
    for (const m of mappings) {
      if (m.owner !== this) throw vmmError('not-mapped', 'mapping is not live');
    }
    if (mappings.length > 1 && new Set(mappings).size !== mappings.length) {
      throw vmmError('invalid-value', 'a mapping is named twice');
    }
    for (const m of mappings) this.#unmapOne(m);
  }

  /** Set access for each descriptor over the mappings that exactly tile [va, va + size). */
  setAccess(va: number, size: number, descriptors: readonly AccessDescriptor[]): void {
    const first = this.#tile(va, size);
    if (first.end !== va + size) this.wholeMappings(va, size);
    this.#setAccessRange(first, va + size, descriptors);
  }

  /** Set access on the given live, contiguous mappings; all or nothing. */
  setAccessOn(mappings: readonly Mapping[], descriptors: readonly AccessDescriptor[]): void {
    for (let i = 0; i < mappings.length; i++) {
      const m = mappings[i];
      if (m.owner !== this) throw vmmError('not-mapped', 'mapping is not live');
      if (i > 0 && mappings[i - 1].end !== m.va) throw vmmError('not-mapped', 'mappings are not contiguous');
    }
    if (mappings.length > 0)
      this.#setAccessRange(mappings[0], mappings[mappings.length - 1].end, descriptors);
  }

  /**
   * Set access on the contiguous live mappings from `first` (one a caller
   * already holds) up to `end`, which must be a mapping's end; all or nothing.
   */
  setAccessFrom(first: Mapping, end: number, descriptors: readonly AccessDescriptor[]): void {
    if (first.owner !== this) throw vmmError('not-mapped', 'mapping is not live');
    if (first.end !== end) this.wholeMappings(first.va, end - first.va);
    this.#setAccessRange(first, end, descriptors);
  }

  /** Set access on the contiguous live mappings from `first` up to `end`. */
  #setAccessRange(first: Mapping, end: number, descriptors: readonly AccessDescriptor[]): void {
    for (const d of descriptors) {
      this.device(d.device);
      if (!isAccess(d.access)) throw vmmError('invalid-value', `access flags ${d.access}`);
    }
    const va = first.va;
    let done = 0;
    try {
      for (; done < descriptors.length; done++) {
        const d = descriptors[done];
        this.backend.setAccess(va, end - va, d.device, d.access);
      }
    } catch (e) {
      // Put back what the earlier descriptors changed: invariant 1.
      for (let i = 0; i < done; i++) this.#restoreAccess(first, end, descriptors[i].device);
      throw e;
    }
    // Step by end address, so the mapping after the range is never touched.
    for (let m = first; ; m = this.#mappings.get(m.end)!) {
      for (const d of descriptors) m.accessBits = withAccess(m.accessBits, d.device, d.access);
      if (m.end >= end) break;
    }
  }

  #restoreAccess(first: Mapping, end: number, device: number): void {
    for (let m = this.#mappings.get(first.va); m !== undefined && m.va < end; m = this.#mappings.get(m.end)) {
      try {
        this.backend.setAccess(m.va, m.size, device, m.accessOf(device));
      } catch (e) {
        this.#report(`could not restore access at 0x${m.va.toString(16)}`, e);
      }
    }
  }

  // --- sharing ---------------------------------------------------------------

  /** Export as a POSIX file descriptor in this process's table. */
  exportFd(a: PhysicalAllocation): number {
    this.#checkHandle(a);
    if ((a.props.handleTypes & HandleType.PosixFd) === 0) {
      throw vmmError('not-supported', 'the allocation was not created exportable as a POSIX fd');
    }
    const fd = this.backend.exportFd(a.backendHandle);
    a.exports++;
    return fd;
  }

  /** Import memory from a file descriptor of this process: a new handle to the same memory. */
  importFd(fd: number): PhysicalAllocation {
    if (!Number.isInteger(fd) || fd < 0) throw vmmError('invalid-fd', `${fd} is not a file descriptor`);
    return this.#adopt(this.backend.importFd(fd));
  }

  /**
   * Export as a machine-wide shareable token (ACL style). With `checkPid`,
   * only processes named through allowImport may import it.
   */
  exportShareable(a: PhysicalAllocation, checkPid: boolean): number {
    this.#checkHandle(a);
    const token = this.backend.exportShareable(a.backendHandle, checkPid);
    a.exports++;
    (a.tokens ??= []).push(token);
    return token;
  }

  allowImport(token: number, pids: readonly number[]): void {
    this.backend.allowImport(token, pids);
  }

  importShareable(token: number): PhysicalAllocation {
    return this.#adopt(this.backend.importShareable(token));
  }

  /** A new handle for memory the backend imported. */
  #adopt(imported: ImportedMemory): PhysicalAllocation {
    const a = new PhysicalAllocation(
      this.#handles.peek(),
      imported.size,
      imported.props,
      imported.handle,
      'imported',
    );
    a.owner = this;
    this.#handles.add(a);
    return a;
  }

  // --- bytes -------------------------------------------------------------------

  write(device: number, va: number, src: Uint8Array, stream = 0): void {
    this.device(device);
    this.backend.write(device, va, src, stream);
  }

  read(device: number, va: number, dst: Uint8Array, stream = 0): void {
    this.device(device);
    this.backend.read(device, va, dst, stream);
  }

  copy(device: number, dst: number, src: number, size: number, stream = 0): void {
    this.device(device);
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size}`);
    this.backend.copy(device, dst, src, size, stream);
  }

  fill(device: number, va: number, value: number, size: number, stream = 0): void {
    this.device(device);
    if (!isCount(size)) throw vmmError('invalid-value', `size ${size}`);
    this.backend.fill(device, va, value & 0xff, size, stream);
  }

  // --- the one-step path -------------------------------------------------------

  /**
   * Allocate device memory in one step, as cuMemAlloc / hipMalloc do:
   * reserve, create, map and grant the device read-write, undoing the steps
   * already taken if a later one fails. Size is rounded up to the granularity.
   */
  malloc(device: number, size: number): Reservation {
    const info = this.device(device);
    if (!isCount(size) || size === 0) throw vmmError('invalid-value', `size ${size} is not positive`);
    const g = Math.max(info.minimumGranularity, this.vaGranularity);
    const rounded = Math.ceil(size / g) * g;
    const r = this.#reserve(rounded, 0, 0, 'malloc');
    let a: PhysicalAllocation | undefined;
    try {
      a = this.#create(
        rounded,
        { location: { type: 'device', id: device }, handleTypes: 0, uncached: false },
        'malloc',
      );
      const m = this.map(r.base, rounded, a, 0);
      this.#setAccessRange(m, m.end, [{ device, access: Access.ReadWrite }]);
      this.release(a);
      return r;
    } catch (e) {
      const created = a;
      this.quietly(() => (created === undefined ? this.free(r) : this.#teardownMalloc(r, created)));
      throw e;
    }
  }

  /** Free a one-step allocation by its base address. */
  mfree(va: number): void {
    const r = this.#reservations.get(va);
    if (r === undefined || r.origin !== 'malloc') throw vmmError('not-reserved', 'not a one-step allocation');
    const m = this.#mappings.get(va)!;
    this.unmapMappings([m]);
    this.free(r);
  }

  #teardownMalloc(r: Reservation, a: PhysicalAllocation): void {
    const m = this.#mappings.get(r.base);
    if (m !== undefined) this.unmapMappings([m]);
    if (a.handleRefs > 0) this.release(a);
    this.free(r);
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
    this.device(device);
    const s = this.backend.createStream(device);
    this.#streams.add(s);
    return s;
  }

  destroyStream(stream: number): void {
    if (!this.#streams.has(stream)) throw vmmError('invalid-stream', `no stream ${stream}`);
    try {
      this.backend.destroyStream(stream);
    } finally {
      // The stream is gone even when its last queued work failed (that failure is still thrown).
      this.#streams.delete(stream);
    }
  }

  hasStream(stream: number): boolean {
    return this.#streams.has(stream);
  }

  synchronizeStream(stream: number): void {
    if (!this.#streams.has(stream)) throw vmmError('invalid-stream', `no stream ${stream}`);
    this.backend.synchronizeStream(stream);
  }

  /** Finish the work of every stream on `device` (-1: every device). */
  synchronize(device = -1): void {
    if (device !== -1) this.device(device);
    this.backend.synchronizeDevice(device);
  }

  // --- teardown ------------------------------------------------------------------

  /** Release everything, as process exit would. Never throws; problems go to the report hook. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.quietly(() => this.backend.synchronizeDevice(-1));
    for (const s of [...this.#streams]) this.quietly(() => this.destroyStream(s));
    for (const m of [...this.#mappings.values()]) this.quietly(() => this.unmapMappings([m]));
    for (const a of [...this.#handles.values()]) {
      while (a.handleRefs > 0 && this.#handles.get(a.id) === a) this.quietly(() => this.release(a));
    }
    for (const r of [...this.#reservations.values()]) this.quietly(() => this.free(r));
    this.quietly(() => this.backend.dispose());
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  get disposed(): boolean {
    return this.#disposed;
  }
}

/** A non-negative safe integer. */
function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}
