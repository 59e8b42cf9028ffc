import { vmmError } from '../../core/errors.js';
import type { Tracer } from '../../core/trace.js';
import { type AllocationProperties, type DeviceInfo, MAX_DEVICES } from '../../core/types.js';
import { PageAccounting, PhysicalMemory } from './physical-memory.js';
import { type DevicePreset, type DeviceSpec, deviceInfo, resolveDeviceSpec } from './presets.js';
import { SimProcess } from './process.js';

export interface MachineOptions {
  /** Device presets or specs, one per GPU. Default: one H200. */
  readonly devices?: readonly (DevicePreset | DeviceSpec)[];
  /** Bytes of host memory that host-located allocations draw on. Default 1 TiB. */
  readonly hostMemory?: number;
}

/** A memory pool with a fixed capacity: one per device, one for the host. */
export class MemoryPool {
  used = 0;
  constructor(readonly capacity: number) {}
  get free(): number {
    return this.capacity - this.used;
  }
}

/** One simulated GPU: its memory pool and its copy engine's counters. */
export class SimDevice {
  readonly pool: MemoryPool;
  /** Bytes moved by this device's copy engine (copies and fills). */
  bytesMoved = 0;
  constructor(readonly info: DeviceInfo) {
    this.pool = new MemoryPool(info.totalMemory);
  }
}

/** A shareable token's record: the memory, who exported it, who may import it. */
export interface Shareable {
  readonly memory: PhysicalMemory;
  readonly owner: number;
  readonly checkPid: boolean;
  readonly allowed: Set<number>;
}

/** Something that names a process of a machine: a pid, or any object that carries one (a flavor, a Runtime). */
export type ProcessRef = number | { readonly pid: number };

/**
 * A simulated machine: GPUs with memory pools, host memory, and the
 * processes that share them. Physical memory is machine-wide; virtual
 * address spaces, handles, page tables and file descriptors are per process.
 */
export class Machine {
  readonly devices: readonly SimDevice[];
  readonly host: MemoryPool;
  readonly #processes = new Map<number, SimProcess>();
  readonly #pages = new PageAccounting();
  /** Physical allocations that some handle, mapping or descriptor still holds. */
  #live = 0;
  /** Shareable tokens (ACL-style sharing), by token value. */
  readonly #shareables = new Map<number, Shareable>();
  #nextPid = 4000;
  #nextToken = 0x5100_0000;
  #nextMemoryId = 1;

  constructor(options: MachineOptions = {}) {
    const specs = (options.devices ?? ['H200']).map(resolveDeviceSpec);
    if (specs.length === 0 || specs.length > MAX_DEVICES) {
      throw new RangeError(`a machine has 1 to ${MAX_DEVICES} devices, not ${specs.length}`);
    }
    this.devices = specs.map((s, ordinal) => new SimDevice(deviceInfo(s, ordinal)));
    this.host = new MemoryPool(options.hostMemory ?? 2 ** 40);
  }

  /** Start a new process on this machine; it is the backend of one Runtime. */
  spawn(options: { tracer?: Tracer } = {}): SimProcess {
    const pid = this.#nextPid++;
    const p = new SimProcess(this, pid, options.tracer);
    this.#processes.set(pid, p);
    return p;
  }

  process(ref: ProcessRef): SimProcess {
    const pid = typeof ref === 'number' ? ref : ref.pid;
    const p = this.#processes.get(pid);
    if (p === undefined) throw new TypeError(`no process ${pid} on this machine`);
    return p;
  }

  get processes(): readonly SimProcess[] {
    return [...this.#processes.values()];
  }

  /**
   * Duplicate file descriptor `fd` of one process into another, as sending
   * it over a Unix socket (SCM_RIGHTS) or pidfd_getfd does; returns the
   * descriptor's number in the receiving process.
   */
  passFd(from: ProcessRef, fd: number, to: ProcessRef): number {
    const file = this.process(from).fileAt(fd);
    if (file === undefined)
      throw vmmError('invalid-fd', `process ${typeof from === 'number' ? from : from.pid} has no fd ${fd}`);
    return this.process(to).openFile(file);
  }

  /** Bytes of host memory the simulated pages occupy. */
  get residentBytes(): number {
    return this.#pages.bytes;
  }

  // --- for SimProcess -------------------------------------------------------

  /** @internal */
  allocate(size: number, props: AllocationProperties): PhysicalMemory {
    const pool = this.poolOf(props);
    if (size > pool.free) {
      throw vmmError('out-of-memory', `${size} bytes requested, ${pool.free} free on ${describe(props)}`);
    }
    pool.used += size;
    this.#live++;
    return new PhysicalMemory(this.#nextMemoryId++, size, props, this.#pages);
  }

  /** Physical allocations alive on the machine. */
  get liveAllocations(): number {
    return this.#live;
  }

  /** @internal */
  hold(memory: PhysicalMemory): void {
    memory.holders++;
  }

  /** @internal Drop one holder; the memory goes back to its pool at zero. */
  drop(memory: PhysicalMemory): void {
    if (--memory.holders === 0) {
      this.poolOf(memory.props).used -= memory.size;
      memory.discard();
      this.#live--;
    }
  }

  /** @internal Register memory under a new shareable token; the token holds the memory until its owner exits. */
  share(memory: PhysicalMemory, owner: number, checkPid: boolean): number {
    const token = this.#nextToken++;
    this.#shareables.set(token, { memory, owner, checkPid, allowed: new Set() });
    this.hold(memory);
    return token;
  }

  /** @internal Withdraw a token: later imports fail; memory already imported lives on through its handles. */
  unshare(token: number): void {
    const s = this.#shareables.get(token);
    if (s === undefined) return;
    this.#shareables.delete(token);
    this.drop(s.memory);
  }

  /** @internal */
  shareable(token: number): Shareable | undefined {
    return this.#shareables.get(token);
  }

  /** @internal */
  exited(pid: number): void {
    for (const [token, s] of this.#shareables) {
      if (s.owner !== pid) continue;
      this.#shareables.delete(token);
      this.drop(s.memory);
    }
    this.#processes.delete(pid);
  }

  poolOf(props: AllocationProperties): MemoryPool {
    return props.location.type === 'host' ? this.host : this.devices[props.location.id].pool;
  }
}

function describe(props: AllocationProperties): string {
  return props.location.type === 'host' ? 'the host' : `device ${props.location.id}`;
}

export function createMachine(options: MachineOptions = {}): Machine {
  return new Machine(options);
}
