/**
 * The real NVIDIA backend: vmmkit's Backend over libcuda, through the checked
 * layer (checked.ts) over the raw koffi binding (driver.ts).
 *
 * Core hands this backend only calls it has validated, but the backend still
 * keeps its own tables of what it holds, for two reasons: the driver ends the
 * process (SIGSEGV) when given a handle it does not know (conformance cases
 * release.bogusHandles, map.bogusHandles), so backend handles are small
 * numbers looked up here and a driver handle never leaves this file; and
 * dispose() must give back everything still held, as process exit would.
 *
 * Note [Contexts]: a copy, a set, a stream and cuMemGetInfo act for the
 * device whose context is current. Each device's primary context is retained
 * the first time the device is needed and made current before any call that
 * acts for a device; VMM calls (reserve, create, map, setAccess) need only
 * some context, so device 0's is made current at construction when none is.
 * The current context is read back (cuCtxGetCurrent, no system call) rather
 * than remembered, since other backends in the process, or other native code,
 * may change it.
 */

import { closeSync } from 'node:fs';
import { BACKEND_OPERATIONS, type Backend, type ImportedMemory } from '../../backend/backend.js';
import { vmmError, warn } from '../../core/errors.js';
import { instrument, type Tracer } from '../../core/trace.js';
import type { Access, AllocationProperties, DeviceInfo, MemoryInfo } from '../../core/types.js';
import { AddressSizes } from '../../util/address-sizes.js';
import { HandleTable } from '../../util/handle-table.js';
import { CheckedCuda, type U64 } from './checked.js';
import { type CudaDriver, loadCudaDriver } from './driver.js';
import { takeFd } from './os-fd.js';
import { libcProcessMemory, type ProcessMemory } from './process-memory.js';
import { processStartTime, type TokenEntry, TokenRegistry } from './token-registry.js';

const CU_MEM_LOCATION_TYPE_DEVICE = 1;
const CU_MEM_LOCATION_TYPE_HOST_NUMA = 3;
const CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0;
const CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1;
const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
/** CU_STREAM_DEFAULT: streams synchronise with the legacy default stream, which synchronous calls use. */
const CU_STREAM_DEFAULT = 0;
/** CU_EVENT_DISABLE_TIMING: core's events order work and time nothing, the driver's fastest kind. */
const CU_EVENT_DISABLE_TIMING = 2;

export interface CudaBackendOptions {
  /** A driver already loaded (loadCudaDriver()); by default libcuda is loaded here. */
  readonly driver?: CudaDriver;
  /** Library paths to try when loading (default: libcuda.so.1, libcuda.so). */
  readonly libraryPaths?: readonly string[];
  readonly tracer?: Tracer;
  /** Where dispose() reports what it could not give back (default: console.warn). */
  readonly report?: (message: string, error?: unknown) => void;
  /** The shareable-token registry's directory (Note [Token registry]; default /dev/shm/vmmkit-<uid>). */
  readonly tokenDirectory?: string;
  /** How the CPU's loads and stores reach memory (Note [Host access]; default: the driver's stand-in's, else libc's). */
  readonly processMemory?: ProcessMemory;
  /**
   * Whether the seven calls of the VMM cycle may go through the fast-call
   * addon where it is built (Note [Fast cycle calls]; default true). false
   * keeps them on koffi, as every other driver call is.
   */
  readonly fastCalls?: boolean;
}

/** Physical memory this process holds a driver handle to. */
interface HeldMemory {
  readonly cu: U64;
  /** Undefined for foreign memory until its first map succeeds (Note [Foreign memory sizes]). */
  size: number | undefined;
  readonly props: AllocationProperties;
}

interface CudaStream {
  readonly cu: U64;
  readonly device: number;
  /** Host buffers async copies on this stream read or write: kept alive until it is synchronised. */
  readonly pins: Uint8Array[];
}

/** A driver event and the device whose streams it records on. */
interface CudaEvent {
  readonly cu: U64;
  readonly device: number;
}

/** What vmmkit knows of memory behind a descriptor it exported (the driver cannot say its size). */
interface ExportedFile {
  readonly size: number | undefined;
  readonly props: AllocationProperties;
}

export class CudaBackend implements Backend {
  readonly kind = 'cuda' as const;
  /** Note [Whole-handle maps]. */
  readonly partialMaps = false;
  readonly pid = process.pid;
  readonly devices: readonly DeviceInfo[];
  readonly driverVersion: number;
  readonly cu: CheckedCuda;
  readonly #cuDevice: number[];
  /** Each device's primary context, once retained (0 before). */
  readonly #contexts: U64[];
  readonly #handles = new HandleTable<HeldMemory>();
  /** Reservations, by base: their sizes (Note [No Map on the cycle]). */
  readonly #reserved = new AddressSizes();
  /** Mappings, by address: their sizes. */
  readonly #mapped = new AddressSizes();
  readonly #streams = new Map<number, CudaStream>();
  readonly #events = new HandleTable<CudaEvent>();
  /** Descriptors this backend exported and has not closed, by fd. */
  readonly #exported = new Map<number, ExportedFile>();
  /** Tokens this process published, each with the descriptor it keeps open for importers. */
  readonly #tokens = new Map<number, TokenEntry>();
  readonly #memory: ProcessMemory;
  readonly #tokenDirectory: string | undefined;
  #registry: TokenRegistry | undefined;
  readonly #report: (message: string, error?: unknown) => void;
  #nextStream = 1;
  #disposed = false;
  /**
   * Devices that may still be running stream-0 work this process queued
   * (Note [Stream 0 is asynchronous]), as bits by ordinal.
   */
  #unfinished = 0;

  constructor(options: CudaBackendOptions = {}) {
    const driver = options.driver ?? loadCudaDriver(options.libraryPaths);
    this.#report = options.report ?? warn;
    this.#tokenDirectory = options.tokenDirectory;
    this.#memory = options.processMemory ?? driver.processMemory ?? libcProcessMemory();
    const cu = new CheckedCuda(driver, { fastCalls: options.fastCalls });
    this.cu = cu;
    cu.init();
    this.driverVersion = cu.driverVersion();
    const count = cu.deviceCount();
    this.#cuDevice = [];
    const devices: DeviceInfo[] = [];
    for (let ordinal = 0; ordinal < count; ordinal++) {
      const dev = cu.deviceGet(ordinal);
      this.#cuDevice.push(dev);
      devices.push(
        Object.freeze({
          ordinal,
          name: cu.deviceName(dev),
          totalMemory: cu.deviceTotalMem(dev),
          minimumGranularity: cu.granularity(
            CU_MEM_LOCATION_TYPE_DEVICE,
            dev,
            0,
            CU_MEM_ALLOC_GRANULARITY_MINIMUM,
          ),
          recommendedGranularity: cu.granularity(
            CU_MEM_LOCATION_TYPE_DEVICE,
            dev,
            0,
            CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
          ),
          driverAttributes: deviceAttributes(cu, dev),
          peers: [],
        }),
      );
    }
    // Note [Driver device facts]: peers need every device's CUdevice, so they are read once all are known.
    for (const d of devices) {
      const peers = devices
        .filter(
          (p) =>
            p.ordinal !== d.ordinal && cu.canAccessPeer(this.#cuDevice[d.ordinal], this.#cuDevice[p.ordinal]),
        )
        .map((p) => p.ordinal);
      devices[d.ordinal] = Object.freeze({ ...d, peers: Object.freeze(peers) });
    }
    this.devices = Object.freeze(devices);
    this.#contexts = devices.map(() => 0);
    if (count > 0 && isNull(cu.ctxGetCurrent())) cu.ctxSetCurrent(this.#context(0));
    if (options.tracer) instrument(this, 'backend', options.tracer, BACKEND_OPERATIONS);
  }

  // --- contexts (Note [Contexts]) ----------------------------------------------------

  #context(device: number): U64 {
    const ctx = this.#contexts[device];
    if (ctx === undefined) throw vmmError('invalid-device', `no device ${device}`);
    if (!isNull(ctx)) return ctx;
    const retained = this.cu.primaryCtxRetain(this.#cuDevice[device]);
    this.#contexts[device] = retained;
    return retained;
  }

  /** Make `device`'s primary context current (if it is not). */
  #use(device: number): void {
    const ctx = this.#context(device);
    if (this.cu.ctxGetCurrent() !== ctx) this.cu.ctxSetCurrent(ctx);
  }

  memoryInfo(device: number): MemoryInfo {
    this.#use(device);
    return this.cu.memGetInfo();
  }

  // --- virtual addresses -------------------------------------------------------------

  reserve(size: number, alignment: number, hint: number): number {
    const va = this.cu.addressReserve(size, alignment, hint);
    this.#reserved.set(va, size);
    return va;
  }

  free(va: number, size: number): void {
    this.cu.addressFree(va, size);
    this.#reserved.delete(va);
  }

  // --- physical memory -----------------------------------------------------------------

  create(size: number, props: AllocationProperties): number {
    const { location, handleTypes } = props;
    // Host memory as HOST_NUMA: the driver reports HOST allocations so (create.hostLocation).
    const cu =
      location.type === 'device'
        ? this.cu.create(size, CU_MEM_LOCATION_TYPE_DEVICE, this.#deviceOf(location.id), handleTypes)
        : this.cu.create(size, CU_MEM_LOCATION_TYPE_HOST_NUMA, location.id, handleTypes);
    return this.#handles.add({ cu, size, props });
  }

  #deviceOf(ordinal: number): number {
    const dev = this.#cuDevice[ordinal];
    if (dev === undefined) throw vmmError('invalid-device', `no device ${ordinal}`);
    return dev;
  }

  release(handle: number): void {
    const held = this.#held(handle);
    this.cu.release(held.cu);
    this.#handles.remove(handle);
  }

  #held(handle: number): HeldMemory {
    const held = this.#handles.get(handle);
    if (held === undefined) throw vmmError('invalid-handle', `no handle ${handle} in this process`);
    return held;
  }

  // --- mappings ------------------------------------------------------------------------

  map(va: number, size: number, handle: number, offset: number): void {
    const held = this.#held(handle);
    // Note [Whole-handle maps]: cuMemMap binds a whole handle from offset 0 (the
    // driver documents offset as "must be zero", and maps the handle's full size
    // whatever size says). Mapping more than asked would leave core believing
    // the rest of the range is free, so anything else is refused.
    // Memory of unknown size: the driver checks the size (801 for any but the handle's).
    if (offset !== 0 || (held.size !== undefined && size !== held.size)) {
      throw vmmError(
        'not-supported',
        `cuMemMap maps a whole handle from offset 0, not ${size} bytes at offset ${offset} of a ${held.size ?? 'foreign'}-byte handle`,
      );
    }
    this.cu.map(va, size, 0, held.cu);
    held.size ??= size;
    this.#mapped.set(va, size);
  }

  unmap(va: number, size: number): void {
    if (this.#unfinished !== 0) this.synchronizeDevice(-1);
    this.cu.unmap(va, size);
    for (let at = va, end = va + size; at < end; ) {
      const n = this.#mapped.take(at);
      if (n < 0) break;
      at += n;
    }
  }

  setAccess(va: number, size: number, device: number, access: Access): void {
    this.cu.setAccess(va, size, this.#deviceOf(device), access);
  }

  setHostAccess(va: number, size: number, access: Access): void {
    this.cu.setHostAccess(va, size, access);
  }

  /** The CPU loads the bytes as they are; like a C program's, its access is ordered with no stream. */
  hostRead(va: number, dst: Uint8Array): void {
    this.#memory.read(va, dst);
  }

  hostWrite(va: number, src: Uint8Array): void {
    this.#memory.write(va, src);
  }

  // --- sharing -------------------------------------------------------------------------

  exportFd(handle: number): number {
    const held = this.#held(handle);
    const fd = this.cu.exportFd(held.cu);
    this.#exported.set(fd, { size: held.size, props: held.props });
    return fd;
  }

  importFd(fd: number, size?: number): ImportedMemory {
    const known = this.#exported.get(fd)?.size;
    // Note [Foreign memory sizes]: a size this backend knows is checked; a told one is checked by the first map.
    if (known !== undefined && size !== undefined && size !== known)
      throw vmmError('invalid-value', `fd ${fd} holds ${known} bytes, not ${size}`);
    return this.#import(this.cu.importFd(fd), known ?? size, `fd ${fd}`);
  }

  /** Adopt a driver handle just imported (props as the driver reports them); released again on failure. */
  #import(cu: U64, size: number | undefined, from: string): ImportedMemory {
    try {
      const p = this.cu.propertiesFromHandle(cu);
      const props: AllocationProperties = {
        location:
          p.location.type === CU_MEM_LOCATION_TYPE_DEVICE
            ? { type: 'device', id: Math.max(0, this.#cuDevice.indexOf(p.location.id)) }
            : { type: 'host', id: Math.max(0, p.location.id) },
        handleTypes: p.requestedHandleTypes,
        uncached: false,
      };
      const handle = this.#handles.add({ cu, size, props });
      return { handle, size, props };
    } catch (e) {
      try {
        this.cu.release(cu);
      } catch (undo) {
        this.#report(`could not release the handle imported from ${from}`, undo);
      }
      throw e;
    }
  }

  closeFd(fd: number): void {
    try {
      closeSync(fd);
    } catch (e) {
      throw vmmError('invalid-fd', `close(${fd}): ${e instanceof Error ? e.message : String(e)}`);
    }
    this.#exported.delete(fd);
  }

  // Note [Token registry]: ACL's tokens over the NVIDIA driver, a kept fd published machine-wide.

  #tokenRegistry(): TokenRegistry {
    this.#registry ??= new TokenRegistry(this.#tokenDirectory);
    return this.#registry;
  }

  exportShareable(handle: number, checkPid: boolean): number {
    const held = this.#held(handle);
    if (held.size === undefined || (held.props.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) === 0)
      throw vmmError(
        'not-supported',
        'only memory created exportable as a POSIX fd can be shared by token here',
      );
    const startTime = processStartTime(this.pid);
    if (startTime === undefined) throw vmmError('not-supported', 'no /proc to publish a token against');
    const fd = this.cu.exportFd(held.cu);
    try {
      const entry = this.#tokenRegistry().publish({
        pid: this.pid,
        startTime,
        fd,
        size: held.size,
        props: held.props,
        checkPid,
        allowed: [],
      });
      this.#tokens.set(entry.token, entry);
      return entry.token;
    } catch (e) {
      closeQuietly(fd);
      throw vmmError(
        'not-supported',
        `could not publish a token: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  allowImport(token: number, pids: readonly number[]): void {
    const entry = this.#tokens.get(token);
    if (entry === undefined) throw vmmError('invalid-fd', `process ${this.pid} exported no token ${token}`);
    const next = { ...entry, allowed: [...new Set([...entry.allowed, ...pids])] };
    this.#tokenRegistry().update(next);
    this.#tokens.set(token, next);
  }

  importShareable(token: number): ImportedMemory {
    const registry = this.#tokenRegistry();
    const entry = registry.lookup(token);
    if (entry === undefined)
      throw vmmError('invalid-fd', `no shareable token ${token} (withdrawn, or its exporter exited)`);
    if (entry.pid === this.pid)
      throw vmmError('permission-denied', 'a process may not import what it exported');
    if (entry.checkPid && !entry.allowed.includes(this.pid))
      throw vmmError('permission-denied', `process ${this.pid} is not on the token's pid list`);
    const fd = takeFd(entry.pid, entry.fd);
    try {
      // The exporter may have withdrawn the token (closing the fd, its number then reused) meanwhile.
      if (registry.lookup(token) === undefined)
        throw vmmError('invalid-fd', `shareable token ${token} was withdrawn`);
      return this.#import(this.cu.importFd(fd), entry.size, `token ${token}`);
    } finally {
      closeQuietly(fd);
    }
  }

  unshare(token: number): void {
    const entry = this.#tokens.get(token);
    if (entry === undefined) throw vmmError('invalid-fd', `process ${this.pid} exported no token ${token}`);
    this.#tokenRegistry().withdraw(token);
    this.#tokens.delete(token);
    closeQuietly(entry.fd);
  }

  // --- bytes ---------------------------------------------------------------------------

  write(device: number, va: number, src: Uint8Array, stream: number): void {
    const n = src.length;
    if (stream === 0) {
      this.#use(device);
      if (n > 0) this.cu.memcpyHtoD(va, src, n);
      return;
    }
    const s = this.#stream(stream, device);
    if (n === 0) return;
    this.cu.memcpyHtoDAsync(va, src, n, s.cu);
    s.pins.push(src);
  }

  read(device: number, va: number, dst: Uint8Array, stream: number): void {
    const n = dst.length;
    if (stream === 0) {
      this.#use(device);
      if (n > 0) this.cu.memcpyDtoH(dst, va, n);
      return;
    }
    const s = this.#stream(stream, device);
    if (n === 0) return;
    this.cu.memcpyDtoHAsync(dst, va, n, s.cu);
    s.pins.push(dst);
  }

  copy(device: number, dst: number, src: number, size: number, stream: number): void {
    if (stream === 0) {
      this.#use(device);
      if (size > 0) this.cu.memcpyDtoD(dst, src, size);
      this.#unfinished |= 1 << device;
      return;
    }
    const s = this.#stream(stream, device);
    if (size > 0) this.cu.memcpyDtoDAsync(dst, src, size, s.cu);
  }

  fill(device: number, va: number, value: number, size: number, stream: number): void {
    if (stream === 0) {
      this.#use(device);
      if (size > 0) this.cu.memsetD8(va, value & 0xff, size);
      this.#unfinished |= 1 << device;
      return;
    }
    const s = this.#stream(stream, device);
    if (size > 0) this.cu.memsetD8Async(va, value & 0xff, size, s.cu);
  }

  /** A live stream of `device`, with its device's context made current. */
  #stream(stream: number, device: number): CudaStream {
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    if (s.device !== device)
      throw vmmError('invalid-context', `stream ${stream} belongs to device ${s.device}`);
    this.#use(device);
    return s;
  }

  // --- streams ---------------------------------------------------------------------------

  createStream(device: number): number {
    this.#use(device);
    const cu = this.cu.streamCreate(CU_STREAM_DEFAULT);
    const id = this.#nextStream++;
    this.#streams.set(id, { cu, device, pins: [] });
    return id;
  }

  /** A forced destroy's `discard` is not honoured: the driver cannot drop queued work (Note [Forced stream destroy]). */
  destroyStream(stream: number): void {
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    // Queued work completes after cuStreamDestroy returns; its host buffers must outlive it.
    if (s.pins.length > 0) this.cu.streamSynchronize(s.cu);
    this.cu.streamDestroy(s.cu);
    this.#streams.delete(stream);
  }

  synchronizeStream(stream: number): void {
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    this.cu.streamSynchronize(s.cu);
    s.pins.length = 0;
  }

  synchronizeDevice(device: number): void {
    if (device !== -1) {
      this.#synchronize(device);
      this.#unfinished &= ~(1 << device);
      return;
    }
    let failure: unknown;
    for (let d = 0; d < this.devices.length; d++) {
      try {
        this.#synchronize(d);
        this.#unfinished &= ~(1 << d);
      } catch (e) {
        failure ??= e;
      }
    }
    if (failure !== undefined) throw failure;
  }

  #synchronize(device: number): void {
    this.#deviceOf(device);
    // A device whose context was never retained has had no work from this process.
    if (isNull(this.#contexts[device])) return;
    this.#use(device);
    this.cu.ctxSynchronize();
    for (const s of this.#streams.values()) if (s.device === device) s.pins.length = 0;
  }

  // --- events (Note [Events] in backend.ts) ------------------------------------------------

  createEvent(device: number, timing: boolean): number {
    this.#use(device);
    return this.#events.add({ cu: this.cu.eventCreate(timing ? 0 : CU_EVENT_DISABLE_TIMING), device });
  }

  recordEvent(event: number, stream: number): void {
    const e = this.#event(event);
    if (stream === 0) {
      // The legacy stream of the event's device: after the work of that device's blocking streams.
      this.#use(e.device);
      this.cu.eventRecord(e.cu, 0);
      return;
    }
    this.cu.eventRecord(e.cu, this.#stream(stream, e.device).cu);
  }

  queryEvent(event: number): boolean {
    return this.cu.eventQuery(this.#event(event).cu);
  }

  synchronizeEvent(event: number): void {
    this.cu.eventSynchronize(this.#event(event).cu);
  }

  streamWaitEvent(stream: number, event: number): void {
    const e = this.#event(event);
    if (stream === 0) {
      // Stream-0 work here is synchronous calls of any device: waiting on the host orders them all.
      this.cu.eventSynchronize(e.cu);
      return;
    }
    const s = this.#streams.get(stream);
    if (s === undefined) throw vmmError('invalid-stream', `no stream ${stream}`);
    this.#use(s.device);
    this.cu.streamWaitEvent(s.cu, e.cu);
  }

  destroyEvent(event: number): void {
    this.cu.eventDestroy(this.#event(event).cu);
    this.#events.remove(event);
  }

  elapsedTime(start: number, end: number): number {
    return this.cu.eventElapsedTime(this.#event(start).cu, this.#event(end).cu);
  }

  #event(event: number): CudaEvent {
    const e = this.#events.get(event);
    if (e === undefined) throw vmmError('invalid-event', `no event ${event}`);
    return e;
  }

  // --- exit ----------------------------------------------------------------------------------

  /** What this backend holds now (for leak checks). */
  stats(): { reservations: number; mappings: number; handles: number; streams: number; fds: number } {
    return {
      reservations: this.#reserved.size,
      mappings: this.#mapped.size,
      handles: this.#handles.size,
      streams: this.#streams.size,
      fds: this.#exported.size,
    };
  }

  /**
   * Give back everything still held, as process exit would: work finished,
   * streams destroyed, mappings unmapped, handles released, reservations
   * freed, primary contexts released (exported descriptors are the program's). Never
   * throws; each failure goes to the report callback and the rest goes on.
   */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const attempt = (what: string, step: () => void) => {
      try {
        step();
      } catch (e) {
        this.#report(`dispose: could not ${what}`, e);
      }
    };
    attempt('synchronise', () => this.synchronizeDevice(-1));
    for (const e of [...this.#events.values()]) attempt('destroy an event', () => this.cu.eventDestroy(e.cu));
    for (let id = 1; this.#events.size > 0; id++) this.#events.remove(id);
    for (const [id, s] of this.#streams) {
      attempt(`destroy stream ${id}`, () => {
        this.#use(s.device);
        this.cu.streamDestroy(s.cu);
      });
    }
    this.#streams.clear();
    for (const [va, size] of this.#mapped.entries())
      attempt(`unmap 0x${va.toString(16)}`, () => this.cu.unmap(va, size));
    this.#mapped.clear();
    for (const held of [...this.#handles.values()])
      attempt('release a handle', () => this.cu.release(held.cu));
    for (let id = 1; this.#handles.size > 0; id++) this.#handles.remove(id);
    for (const [va, size] of this.#reserved.entries())
      attempt(`free 0x${va.toString(16)}`, () => this.cu.addressFree(va, size));
    this.#reserved.clear();
    // Exported descriptors belong to the program, as in C: it may have closed them (and the
    // number been reused) without telling the backend, so they are left to it and to exit.
    this.#exported.clear();
    // Tokens are this backend's own: withdrawn, and their descriptors closed.
    for (const token of [...this.#tokens.keys()])
      attempt(`withdraw token ${token}`, () => this.unshare(token));
    for (let d = 0; d < this.#contexts.length; d++) {
      if (isNull(this.#contexts[d])) continue;
      attempt(`release device ${d}'s primary context`, () => this.cu.primaryCtxRelease(this.#cuDevice[d]));
      this.#contexts[d] = 0;
    }
  }

  get disposed(): boolean {
    return this.#disposed;
  }
}

/**
 * Note [Stream 0 is asynchronous]: cuMemcpyDtoD and cuMemsetD8 may return
 * before the device has finished (the driver documents both as asynchronous
 * with respect to the host for device memory), and cuMemUnmap does not wait
 * for them: unmapping right after such a copy faulted the H200 with
 * CUDA_ERROR_ILLEGAL_ADDRESS. The Backend contract says unmap never races
 * queued work, so this backend remembers which devices may still be busy
 * with stream-0 work and synchronises them before an unmap; a process that
 * never copies pays nothing.
 *
 * Note [Whole-handle maps]: the H200's cuMemMap maps a whole handle (offset
 * 0, size the handle's, else NOT_SUPPORTED) and checks only that the start
 * lies in a reservation, so one driver mapping may run on into an adjacent
 * reservation (conformance case map.pastReservationEnd). Core keeps every
 * mapping inside one reservation (invariant 2) and a Backend map binds exactly
 * the bytes asked for, so this backend maps whole handles only: a CUDA map
 * spanning two reservations, which the CUDA flavor hands down as two pieces,
 * is refused here (a listed divergence) and works on the simulator, whose
 * maps take any offset and size.
 *
 * Foreign descriptors: cuMemImportFromShareableHandle gives a handle but no
 * size, so this backend knows the size of what it exported itself (by fd) and
 * of what a token's registry entry names; for any other descriptor it takes
 * the size the importer was told, or learns it from the first map, which the
 * driver refuses unless it is the handle's size (Note [Foreign memory sizes]
 * in core/runtime.ts).
 */
/**
 * Note [Driver device facts]: each device's attributes are read once, when
 * the backend opens it: every number from 1 to 255 that the driver answers
 * (cuda.h of CUDA 13.0 ends below CU_DEVICE_ATTRIBUTE_MAX, 144, but the
 * H200's driver 580 answers 144 too: attribute.badNumbers), 255 calls of
 * well under a microsecond each. The front ends answer cuDeviceGetAttribute,
 * hipDeviceGetAttribute and hipGetDeviceProperties from them, so a program
 * over the real driver sees the part's own values, as it would in C; which
 * devices can reach which (cuDeviceCanAccessPeer) is read the same way.
 */
/** Past cuda.h's list the driver may know more (the H200's driver 580 answers 144): numbers up to this are tried. */
const LAST_ATTRIBUTE_TRIED = 255;

function deviceAttributes(cu: CheckedCuda, dev: number): ReadonlyMap<number, number> {
  const values = new Map<number, number>();
  for (let attribute = 1; attribute <= LAST_ATTRIBUTE_TRIED; attribute++) {
    const value = cu.deviceAttribute(attribute, dev);
    if (value !== undefined) values.set(attribute, value);
  }
  return values;
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed by the program: nothing is left to give back.
  }
}

function isNull(v: U64): boolean {
  return v === 0 || v === 0n;
}

/** A CUDA backend for this process, loading libcuda (throws CudaDriverUnavailableError without it). */
export function createCudaBackend(options: CudaBackendOptions = {}): CudaBackend {
  return new CudaBackend(options);
}
