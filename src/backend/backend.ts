import type { MethodsListed } from '../util/methods-listed.js';
import type { Access, AllocationProperties, DeviceInfo, Location, MemoryInfo } from './types.js';

/**
 * The driver primitives core is built on, one process's view of a machine,
 * in the shape of ROCr's hsa_amd_vmem_* and the CUDA driver's cuMem* calls.
 * Addresses, sizes and handles are plain numbers (virtual addresses stay below
 * 2^53). A backend checks only what the hardware itself would refuse (memory
 * capacity, page-table permissions, unknown handles); argument rules live in
 * core and the flavors. Every failure is a VmmError.
 */
export interface Backend {
  /**
   * What this backend is: 'sim' (the simulated machine) and 'cuda' (the real
   * NVIDIA driver) are vmmkit's own; a backend of one's own names itself. An
   * open string, since any backend may be given (createRuntime({ backend }));
   * only a trace reads it: over 'cuda' the vendor's layers end in the libcuda
   * calls that really run, over anything else in the vendor's own stack
   * (layersFor in src/flavors/common/layers.ts).
   */
  readonly kind: string;
  /** Operating-system process id of the process this backend acts for. */
  readonly pid: number;
  readonly devices: readonly DeviceInfo[];
  /**
   * Whether map takes any granularity-aligned piece of a handle (offset and
   * size); false where the driver maps whole handles from offset 0 only, and
   * refuses anything else with 'not-supported' (the CUDA driver).
   */
  readonly partialMaps: boolean;

  memoryInfo(device: number): MemoryInfo;

  /**
   * Reserve `size` bytes of virtual addresses aligned to `alignment`. `hint` (0: none) is honoured when
   * free as the driver judges it: where its search starts (Note [Driver VA placement] in
   * backends/sim/driver-va.ts). With `exact`, the range at `hint` itself whenever that is free address
   * space, else as without: for addresses the driver chose on its own (a recorded cuMemAlloc's, the tail of
   * a whole-handle map). A backend over a real driver may place it elsewhere; the caller checks the base.
   */
  reserve(size: number, alignment: number, hint: number, exact?: boolean): number;
  /** Give back a whole reservation. Nothing may be mapped inside it. */
  free(va: number, size: number): void;
  /**
   * A context made beyond a device's own (cuCtxCreate), for the backend's
   * placement: the simulated NVIDIA driver gives it an address heap of its
   * own (Note [Created contexts' heaps] in backends/sim/driver-va.ts).
   * Returns an id for destroyContext. Optional: a real driver places on its
   * own and needs no telling.
   */
  createContext?(): number;
  /** The context createContext made is destroyed (after what it owned was freed); reservations stay. Never throws. */
  destroyContext?(context: number): void;

  /** Create physical memory; returns a backend handle. */
  create(size: number, props: AllocationProperties): number;
  /** Drop a backend handle; the memory goes when no handle or mapping holds it. */
  release(handle: number): void;

  /**
   * Bind exactly the bytes [offset, offset + size) of the handle's memory at
   * [va, va + size), nothing more; no device gets access. The range is free
   * address space inside one reservation (core checks). A backend without
   * partialMaps refuses offset != 0 or size != the handle's size with
   * 'not-supported' and changes nothing. Failure leaves nothing mapped.
   */
  map(va: number, size: number, handle: number, offset: number): void;
  /**
   * Remove the mappings that exactly cover [va, va + size) (one, or several
   * adjacent ones, each made by one map call) and every device's access to
   * them. Failure leaves them mapped as they were.
   */
  unmap(va: number, size: number): void;
  /**
   * Set one device's access to [va, va + size), which is covered by whole
   * adjacent mappings (builds or clears its page-table entries).
   */
  setAccess(va: number, size: number, device: number, access: Access): void;

  /**
   * Note [Host access]: memory located on the host (CUDA's HOST and
   * HOST_NUMA locations, HIP's and ACL's host locations) can be granted to
   * the CPU as well as to devices; the process then reads and writes it with
   * plain loads and stores, with no copy engine and no stream. Core keeps
   * the CPU's grant per mapping and checks it before every load or store, so
   * an access the hardware would fault on (SIGSEGV in a C program) is a
   * refusal instead.
   *
   * Set the CPU's access to [va, va + size): whole adjacent mappings of
   * host-located memory (core checks).
   */
  setHostAccess(va: number, size: number, access: Access): void;
  /** CPU loads of [va, va + dst.length): mapped host-located memory the CPU may read (core checks). */
  hostRead(va: number, dst: Uint8Array): void;
  /** CPU stores to [va, va + src.length): mapped host-located memory the CPU may write (core checks). */
  hostWrite(va: number, src: Uint8Array): void;

  /** Export a handle as a shareable file descriptor in this process's fd table. */
  exportFd(handle: number): number;
  /**
   * Import memory from a file descriptor of this process's fd table; returns
   * a new handle. `size` is what the importer was told (undefined: not told);
   * a backend that knows the size refuses another one (invalid-value), and
   * one that cannot tell returns size undefined (only a backend without
   * partialMaps may: Note [Foreign memory sizes] in core/runtime.ts).
   */
  importFd(fd: number, size?: number): ImportedMemory;
  /** Close a descriptor of this process's fd table. */
  closeFd(fd: number): void;

  /**
   * Note [Tokens in the Backend]: a shareable token is a name in a
   * machine-wide namespace that any process may open, subject to a list of
   * allowed pids: ACL's uint64 shareable handle, and the shape of CUDA's
   * fabric handles. Such a namespace outlives the exporting process's view
   * and is checked in the importing process, so no flavor (which sees one
   * process) can hold it; only the machine can, as the kernel and driver do.
   * Hence these four calls stay here, vendor-neutral in form; which vendor
   * uses them, and with which flags, is the flavor's business.
   *
   * Export a handle as a machine-wide shareable token (ACL's uint64 shareable
   * handle). With `checkPid`, only processes later named by allowImport may
   * import it; the exporting process never may.
   */
  exportShareable(handle: number, checkPid: boolean): number;
  /** Let these processes import a token this process exported. */
  allowImport(token: number, pids: readonly number[]): void;
  /** Import memory by shareable token; returns a new handle. */
  importShareable(token: number): ImportedMemory;
  /** Withdraw a token this process exported (its memory was freed); imports made earlier stay valid. */
  unshare(token: number): void;

  /** Host -> device memory, through `device`'s page table; `stream` 0 is synchronous. */
  write(device: number, va: number, src: Uint8Array, stream: number): void;
  /** Device memory -> host, through `device`'s page table. */
  read(device: number, va: number, dst: Uint8Array, stream: number): void;
  /** Device memory -> device memory, through `device`'s page table. */
  copy(device: number, dst: number, src: number, size: number, stream: number): void;
  /** Set `size` bytes to `value`, through `device`'s page table. */
  fill(device: number, va: number, value: number, size: number, stream: number): void;

  createStream(device: number): number;
  /**
   * Destroy a stream. Its queued work runs first (cuStreamDestroy lets it
   * finish), unless `discard` asks to drop it, as ACL's
   * aclrtDestroyStreamForce drops unfinished tasks (Note [Forced stream
   * destroy]); a backend that cannot drop work runs it.
   */
  destroyStream(stream: number, options?: DestroyStreamOptions): void;
  /** Run a stream's queued work; the first failure among it is thrown. */
  synchronizeStream(stream: number): void;
  /** Run every stream of the device (every device if `device` is -1). */
  synchronizeDevice(device: number): void;

  /**
   * Note [Events]: an event is a marker in stream order, as CUDA's CUevent,
   * HIP's hipEvent_t and ACL's aclrtEvent are. Recording it marks the work
   * queued so far on one stream (on stream 0, the legacy default stream: the
   * work queued so far on every stream of the process, which stream-0 work
   * waits for); querying asks whether that work has run, without running
   * anything; synchronising waits for it (on the simulator: runs it, and only
   * it); a stream that waits on an event runs its later work only after the
   * marked work. An event never recorded is complete. A marker stays valid
   * when its stream is destroyed (the stream's work finishes first, so it is
   * complete), and recording again moves it. Caching allocators use exactly
   * this to free a block that another stream used: record on the using
   * stream, wait on it from the freeing stream, or query until done.
   *
   * Create an event for `device`'s streams; returns a backend event id.
   * With `timing`, the event also takes the time of its record, for
   * elapsedTime (the drivers' timing events; they cost more to record).
   */
  createEvent(device: number, timing: boolean): number;
  /** Mark the work queued so far on `stream` (0: on every stream); the stream is of the event's device. */
  recordEvent(event: number, stream: number): void;
  /** Whether the marked work has run (true for an event never recorded). Runs nothing. */
  queryEvent(event: number): boolean;
  /** Wait for (run) the marked work; the first failure among it is thrown. */
  synchronizeEvent(event: number): void;
  /**
   * Work queued on `stream` after this call runs after the event's marked
   * work, an event of any device; on stream 0, a synchronizeDevice of any
   * device afterwards has run that work too (Note [Default-stream waits]).
   */
  streamWaitEvent(stream: number, event: number): void;
  /** Forget an event; work already marked is not affected. */
  destroyEvent(event: number): void;
  /**
   * Milliseconds between the records of two timing events whose marked work
   * has run (the simulator has no clock: 0). An event made without timing,
   * or not yet complete, is an error.
   */
  elapsedTime(start: number, end: number): number;

  /** Release everything this process holds, as process exit does. Never throws. */
  dispose(): void;
}

/** The Backend's event primitives (Note [Events]), a list of their own for the trace views that elide them. */
export const BACKEND_EVENT_OPERATIONS = [
  'createEvent',
  'recordEvent',
  'queryEvent',
  'synchronizeEvent',
  'streamWaitEvent',
  'destroyEvent',
  'elapsedTime',
] as const satisfies readonly (keyof Backend)[];

/** The sharing operations: core's Runtime has them under the same names, so its traced list spreads this one. */
export const BACKEND_SHARING_OPERATIONS = [
  'exportFd',
  'importFd',
  'closeFd',
  'exportShareable',
  'allowImport',
  'importShareable',
  'unshare',
] as const satisfies readonly (keyof Backend)[];

/** The Backend operations, in one list: what tracing wraps as the 'backend' layer, for every backend. */
export const BACKEND_OPERATIONS = [
  'memoryInfo',
  'reserve',
  'free',
  'createContext',
  'destroyContext',
  'create',
  'release',
  'map',
  'unmap',
  'setAccess',
  'setHostAccess',
  'hostRead',
  'hostWrite',
  ...BACKEND_SHARING_OPERATIONS,
  'write',
  'read',
  'copy',
  'fill',
  'createStream',
  'destroyStream',
  'synchronizeStream',
  'synchronizeDevice',
  ...BACKEND_EVENT_OPERATIONS,
] as const satisfies readonly (keyof Backend)[];

// Compile-time check: every Backend method is traced (dispose is the end of the trace, not a call in it).
const backendOperationsAreComplete: MethodsListed<Backend, (typeof BACKEND_OPERATIONS)[number] | 'dispose'> =
  true;
void backendOperationsAreComplete;

/**
 * Note [Forced stream destroy]: CANN's aclrtDestroyStreamForce destroys a
 * stream without waiting and drops the tasks it has not run. The simulator
 * can do exactly that: queued work is a list it owns, and a dropped item
 * never touches memory (an event recorded behind it counts as complete, so
 * nothing waits on it forever). The real NVIDIA driver has no call that
 * takes work back from a stream, so the CUDA backend ignores `discard` and
 * lets the work finish, as cuStreamDestroy does: over it, a forced destroy
 * differs from a plain one only in time, never in bytes written.
 */
export interface DestroyStreamOptions {
  /** Drop the stream's queued work instead of running it. */
  readonly discard?: boolean;
}

export interface ImportedMemory {
  readonly handle: number;
  /** Bytes; undefined when the backend cannot tell and was not told (Note [Foreign memory sizes]). */
  readonly size: number | undefined;
  readonly props: AllocationProperties;
}

export type { Location };
