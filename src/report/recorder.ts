/**
 * Watching a replay from outside: an AllocatorFactory that wraps another and
 * records, per device, what the report draws: requested, reserved and
 * allocated bytes, fragmentation and driver calls after every trace event
 * (downsampled, Note [Min-max buckets]), and, when asked, the allocator's
 * address space right after a chosen call (the peak).
 *
 * Note [Which event a call serves]: replay calls malloc for the blocks live
 * before the trace (in the plan's initialBlocks order), then malloc for each
 * alloc event and free for each free_completed of a block that was
 * allocated, in event order, and emptyCache before the events the plan
 * marks. The recorder walks the plan's events alongside, so each call gets
 * its event index without any change to replay; the freed address must be
 * the one the matching block got, and a call that matches no event in that
 * walk is a RecorderError, so a change in replay's order cannot go unseen.
 */
import type { AllocatorContext, AllocatorStats, CachingAllocator } from '../alloc/allocator.js';
import type { Runtime, RuntimeDescription } from '../core/runtime.js';
import type { AllocatorFactory } from '../replay/allocators.js';
import { DriverMeter } from '../replay/driver-meter.js';
import type { PickleDict } from '../replay/pickle/value.js';
import { Action } from '../replay/snapshot.js';
import type { DevicePlan, TracePlan } from '../replay/trace-plan.js';
import { MinMaxBuckets, type MinMaxSeries } from './downsample.js';

/** The recorder lost its place in the trace (Note [Which event a call serves]). */
export class RecorderError extends Error {
  override readonly name = 'RecorderError';
}

/** A live block of the allocator: our address, the bytes asked for. */
export interface LiveBlock {
  readonly address: number;
  readonly size: number;
}

/** The allocator's address space at one moment (the peak of reserved bytes). */
export interface LayoutCapture {
  /** The trace event just served (-1: while allocating the blocks live before the trace). */
  readonly event: number;
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  /** Reservations and allocations this device's allocator made (those of other devices left out). */
  readonly description: RuntimeDescription;
  /** Live blocks in address order. */
  readonly blocks: readonly LiveBlock[];
}

export interface DeviceRecording {
  readonly device: number;
  /** Events of the device's trace; bucket k covers events [k*width, (k+1)*width). */
  readonly events: number;
  readonly bucketWidth: number;
  readonly requested: MinMaxSeries;
  /** Per event, the most reserved at any moment of it (so its max is the allocator's peakReservedBytes). */
  readonly reserved: MinMaxSeries;
  readonly allocated: MinMaxSeries;
  /** 1 - allocated / reserved: the share of reserved bytes no block holds (0 when nothing is reserved). */
  readonly fragmentation: MinMaxSeries;
  /** Driver calls so far (cumulative, outermost calls as DriverMeter counts them). */
  readonly driverCalls: MinMaxSeries;
  /** Sequence number of the allocator call in which reserved bytes last rose to their peak (-1: never). */
  readonly peakCall: number;
  /** The layout captured after call `captureAfterCall`, if one was asked for and reached. */
  readonly layout: LayoutCapture | undefined;
}

export interface RecorderOptions {
  /** Buckets per series (default 2000). */
  readonly buckets?: number;
  /** Per device: capture the layout right after this allocator call (a peakCall of an earlier run). */
  readonly captureAfterCall?: ReadonlyMap<number, number>;
}

/** Records one allocator's replay: use `factory` in replay's options, then read `recordings`. */
export class ReplayRecorder {
  readonly factory: AllocatorFactory;
  readonly #recorders: DeviceRecorder[] = [];
  readonly #counters = new Map<Runtime, DriverMeter>();

  constructor(inner: AllocatorFactory, plan: TracePlan, options: RecorderOptions = {}) {
    const buckets = options.buckets ?? 2000;
    this.factory = {
      name: inner.name,
      description: inner.description,
      create: (context: AllocatorContext, settings: PickleDict | undefined) => {
        const devicePlan = plan.devices[context.device];
        if (devicePlan === undefined) throw new RecorderError(`the plan has no device ${context.device}`);
        let counter = this.#counters.get(context.runtime);
        if (counter === undefined) {
          // Reservations made before this device's allocator exists are another device's.
          counter = new DriverMeter(context.runtime, undefined, false);
          this.#counters.set(context.runtime, counter);
        }
        const before = new Set([...context.runtime.reservations()].map((r) => r.base));
        const allocator = inner.create(context, settings);
        const recorder = new DeviceRecorder(
          allocator,
          devicePlan,
          counter,
          context.runtime,
          before,
          buckets,
          options.captureAfterCall?.get(context.device) ?? -2,
        );
        this.#recorders.push(recorder);
        return recorder;
      },
    };
  }

  /** One recording per device the allocator served, in the order replay ran them. */
  recordings(): DeviceRecording[] {
    return this.#recorders.map((r) => r.finish());
  }
}

class DeviceRecorder implements CachingAllocator {
  readonly name: string;
  readonly device: number;
  readonly #inner: CachingAllocator;
  readonly #plan: DevicePlan;
  readonly #counter: DriverMeter;
  readonly #runtime: Runtime;
  readonly #foreign: Set<number>;
  readonly #captureAfter: number;
  readonly #address: Float64Array;
  readonly #live: Uint8Array;
  readonly #requested: MinMaxBuckets;
  readonly #reserved: MinMaxBuckets;
  readonly #allocated: MinMaxBuckets;
  readonly #fragmentation: MinMaxBuckets;
  readonly #calls: MinMaxBuckets;
  /** Initial-block mallocs still to come, then the next event to look at. */
  #initialLeft: number;
  #pos = 0;
  #lastEvent = -1;
  #call = 0;
  #peakReserved: number;
  #peakCall = -1;
  #callsAtStart: number;
  #layout: LayoutCapture | undefined;

  constructor(
    inner: CachingAllocator,
    plan: DevicePlan,
    counter: DriverMeter,
    runtime: Runtime,
    foreign: Set<number>,
    buckets: number,
    captureAfter: number,
  ) {
    this.#inner = inner;
    this.name = inner.name;
    this.device = inner.device;
    this.#plan = plan;
    this.#counter = counter;
    this.#runtime = runtime;
    this.#foreign = foreign;
    this.#captureAfter = captureAfter;
    this.#address = new Float64Array(plan.blockCount).fill(Number.NaN);
    this.#live = new Uint8Array(plan.blockCount);
    this.#initialLeft = plan.initialBlocks.length;
    const n = plan.trace.length;
    const s = inner.stats;
    this.#requested = new MinMaxBuckets(n, buckets, s.requestedBytes);
    this.#reserved = new MinMaxBuckets(n, buckets, s.reservedBytes);
    this.#allocated = new MinMaxBuckets(n, buckets, s.allocatedBytes);
    this.#fragmentation = new MinMaxBuckets(n, buckets, fragmentation(s));
    this.#calls = new MinMaxBuckets(n, buckets, 0);
    this.#peakReserved = s.peakReservedBytes;
    this.#callsAtStart = counter.total;
  }

  get stats(): AllocatorStats {
    return this.#inner.stats;
  }

  malloc(size: number, stream: number): number {
    let block: number;
    let event: number;
    if (this.#initialLeft > 0) {
      block = this.#plan.initialBlocks[this.#plan.initialBlocks.length - this.#initialLeft--];
      event = -1;
    } else {
      event = this.#next(Action.alloc);
      block = this.#plan.blockOf[event];
    }
    const peakBefore = this.#inner.stats.peakReservedBytes;
    try {
      const address = this.#inner.malloc(size, stream);
      if (block >= 0) {
        this.#address[block] = address;
        this.#live[block] = 1;
      }
      return address;
    } finally {
      this.#sample(event, peakBefore);
    }
  }

  free(address: number): void {
    const event = this.#next(Action.free_completed);
    const block = this.#plan.blockOf[event];
    if (this.#address[block] !== address) {
      throw new RecorderError(
        `free(0x${address.toString(16)}) at event ${event} is not block ${block} (0x${this.#address[block].toString(16)})`,
      );
    }
    const peakBefore = this.#inner.stats.peakReservedBytes;
    try {
      this.#inner.free(address);
      this.#live[block] = 0;
    } finally {
      this.#sample(event, peakBefore);
    }
  }

  emptyCache(): void {
    const peakBefore = this.#inner.stats.peakReservedBytes;
    try {
      this.#inner.emptyCache();
    } finally {
      // It runs between events: drawn with the event before it.
      this.#sample(this.#lastEvent, peakBefore);
    }
  }

  dispose(): void {
    this.#inner.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** The next event replay serves with a call of this kind (Note [Which event a call serves]). */
  #next(kind: number): number {
    const { action } = this.#plan.trace;
    const blockOf = this.#plan.blockOf;
    const n = this.#plan.trace.length;
    if (this.#initialLeft > 0) {
      throw new RecorderError(
        `a ${kind === Action.alloc ? 'malloc' : 'free'} came before the initial blocks`,
      );
    }
    for (let i = this.#pos; i < n; i++) {
      const a = action[i];
      const id = blockOf[i];
      const isAlloc = a === Action.alloc;
      const isFree = a === Action.free_completed && id >= 0 && this.#live[id] === 1;
      if (!isAlloc && !isFree) continue;
      if ((kind === Action.alloc) !== isAlloc) {
        throw new RecorderError(
          `replay skipped the ${isAlloc ? 'alloc' : 'free'} at event ${i} of device ${this.device}`,
        );
      }
      this.#pos = i + 1;
      this.#lastEvent = i;
      return i;
    }
    throw new RecorderError(`a call past the last event of device ${this.device}`);
  }

  #sample(event: number, peakBefore: number): void {
    const s = this.#inner.stats;
    // A peak reached inside the call and left before it returned still counts.
    const reserved = s.peakReservedBytes > peakBefore ? s.peakReservedBytes : s.reservedBytes;
    this.#requested.set(event, s.requestedBytes);
    this.#reserved.set(event, reserved);
    this.#allocated.set(event, s.allocatedBytes);
    this.#fragmentation.set(event, fragmentation(s));
    this.#calls.set(event, this.#counter.total - this.#callsAtStart);
    if (reserved > this.#peakReserved) {
      this.#peakReserved = reserved;
      this.#peakCall = this.#call;
    }
    if (this.#call === this.#captureAfter) this.#capture(event);
    this.#call++;
  }

  #capture(event: number): void {
    const d = this.#runtime.describe();
    const ours = new Set(
      d.allocations
        .filter((a) => a.location.type === 'device' && a.location.id === this.device)
        .map((a) => a.handle),
    );
    const reservations = d.reservations.filter(
      (r) =>
        !this.#foreign.has(r.base) && (r.mappings.length === 0 || r.mappings.some((m) => ours.has(m.handle))),
    );
    const blocks: LiveBlock[] = [];
    for (let id = 0; id < this.#live.length; id++) {
      if (this.#live[id] === 1) blocks.push({ address: this.#address[id], size: this.#plan.blockSize[id] });
    }
    blocks.sort((a, b) => a.address - b.address);
    const s = this.#inner.stats;
    this.#layout = {
      event,
      reservedBytes: s.reservedBytes,
      allocatedBytes: s.allocatedBytes,
      description: {
        ...d,
        reservations,
        allocations: d.allocations.filter((a) => ours.has(a.handle)),
      },
      blocks,
    };
  }

  finish(): DeviceRecording {
    return {
      device: this.device,
      events: this.#plan.trace.length,
      bucketWidth: this.#requested.width,
      requested: this.#requested.finish(),
      reserved: this.#reserved.finish(),
      allocated: this.#allocated.finish(),
      fragmentation: this.#fragmentation.finish(),
      driverCalls: this.#calls.finish(),
      peakCall: this.#peakCall,
      layout: this.#layout,
    };
  }
}

function fragmentation(s: AllocatorStats): number {
  return s.reservedBytes > 0 ? 1 - s.allocatedBytes / s.reservedBytes : 0;
}
