/**
 * Watching a replay for the report: told of every allocator call replay
 * makes (ReplayOptions.onStep), it records, per allocator run and device,
 * what the report draws: requested, reserved and allocated bytes, the
 * reserved bytes a request could not use (Note [Reserved but unusable]) and
 * driver calls after every trace event (downsampled, Note
 * [Min-max buckets]), and, when asked, the allocator's address space right
 * after a chosen call (the peak) and at its first failed request.
 *
 * Replay tells each step's event, block and address, so the recorder needs
 * no walk of its own through the plan and no wrapper around the allocator.
 */
import type { AllocatorStats } from '../alloc/allocator.js';
import type { Runtime, RuntimeDescription } from '../core/runtime.js';
import type { ReplayStep } from '../replay/engine/replay.js';
import type { DevicePlan, TracePlan } from '../replay/engine/trace-plan.js';
import { MinMaxBuckets, type MinMaxSeries } from './downsample.js';
import { CapturesTaken, RecorderError } from './errors.js';

// RecorderError lives in errors.ts; re-exported here, where it was.
export { RecorderError } from './errors.js';

/** A live block of the allocator: our address, the bytes asked for. */
export interface LiveBlock {
  readonly address: number;
  readonly size: number;
  /** The plan's block id (its stack, when the snapshot has stacks, is the alloc event's). */
  readonly block?: number;
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
  /** Per request, the cached bytes it could not use (Note [Reserved but unusable]); 0 at every other step. */
  readonly unusable: MinMaxSeries;
  /** Driver calls so far (cumulative, outermost calls as DriverMeter counts them). */
  readonly driverCalls: MinMaxSeries;
  /** Sequence number of the allocator call in which reserved bytes last rose to their peak (-1: never). */
  readonly peakCall: number;
  /** The layout captured after call `captureAfterCall`, if one was asked for and reached. */
  readonly layout: LayoutCapture | undefined;
  /** The layout right after the first request that ran out of memory, if any (captureFirstOom). */
  readonly oomLayout: LayoutCapture | undefined;
}

export interface RecorderOptions {
  /** Buckets per series (default 2000). */
  readonly buckets?: number;
  /** Per run and device (`${run}:${device}`): capture the layout right after this step (a peakCall of an earlier run). */
  readonly captureAfterCall?: ReadonlyMap<string, number>;
  /** Capture the layout at each run's first failed request (default true). */
  readonly captureFirstOom?: boolean;
  /**
   * Per run and device (`${run}:${device}`): capture the layout right after the first step that serves
   * this event or a later one (the state at a point chosen on the page's timeline), as `layout`.
   */
  readonly captureAtEvent?: ReadonlyMap<string, number>;
  /**
   * End the replay once every layout captureAfterCall asks for is taken (onStep throws CapturesTaken,
   * which replay keeps as the run's error): the second pass of Note [Two passes for the peak] needs
   * nothing after its peaks.
   */
  readonly stopOnceCaptured?: boolean;
}

/** Records a replay: pass `onStep` in replay's options, then read `recordings(run)`. */
export class ReplayRecorder {
  readonly #plan: TracePlan;
  readonly #buckets: number;
  readonly #options: RecorderOptions;
  /** Per run, its devices' recorders in the order replay ran them. */
  readonly #runs = new Map<number, DeviceRecorder[]>();
  readonly onStep = (step: ReplayStep): void => {
    const recorder = this.#recorder(step);
    recorder.step(step);
    if (this.#options.stopOnceCaptured === true && recorder.hasLayout && this.#allCaptured(step.run))
      throw new CapturesTaken(`every layout asked for is taken, at event ${step.event}`);
  };

  constructor(plan: TracePlan, options: RecorderOptions = {}) {
    this.#plan = plan;
    this.#buckets = options.buckets ?? 2000;
    this.#options = options;
  }

  #recorder(step: ReplayStep): DeviceRecorder {
    let list = this.#runs.get(step.run);
    if (list === undefined) {
      list = [];
      this.#runs.set(step.run, list);
    }
    const last = list[list.length - 1];
    if (last !== undefined && last.device === step.device) return last;
    const devicePlan = this.#plan.devices.find((d) => d.device === step.device);
    if (devicePlan === undefined) throw new RecorderError(`the plan has no device ${step.device}`);
    const recorder = new DeviceRecorder(
      devicePlan,
      step.runtime,
      this.#buckets,
      this.#options.captureAfterCall?.get(`${step.run}:${step.device}`) ?? -2,
      this.#options.captureAtEvent?.get(`${step.run}:${step.device}`) ?? -1,
      this.#options.captureFirstOom ?? true,
      // The run's driver calls at its last step, where this device's count starts.
      last?.callsSeen ?? 0,
    );
    list.push(recorder);
    return recorder;
  }

  /** Whether run `run` holds every layout captureAfterCall asks of it. */
  #allCaptured(run: number): boolean {
    const recorders = this.#runs.get(run) ?? [];
    for (const [key, call] of this.#options.captureAfterCall ?? []) {
      const [r, device] = key.split(':').map(Number);
      if (r !== run || call < 0) continue;
      if (!recorders.some((x) => x.device === device && x.hasLayout)) return false;
    }
    return true;
  }

  /** One recording per device run `run` served, in the order replay ran them. */
  recordings(run: number): DeviceRecording[] {
    return (this.#runs.get(run) ?? []).map((r) => r.finish());
  }
}

class DeviceRecorder {
  readonly device: number;
  readonly #plan: DevicePlan;
  readonly #runtime: Runtime;
  readonly #captureAfter: number;
  readonly #captureAtEvent: number;
  readonly #captureOom: boolean;
  readonly #callsAtStart: number;
  /** The run's driver calls at this device's last step so far. */
  #callsSeen: number;
  /** Reservations of other devices' allocators, there before this device's first step. */
  #foreign: Set<number> | undefined;
  readonly #address: Float64Array;
  readonly #live: Uint8Array;
  readonly #requested: MinMaxBuckets;
  readonly #reserved: MinMaxBuckets;
  readonly #allocated: MinMaxBuckets;
  readonly #unusable: MinMaxBuckets;
  /** Reserved and allocated bytes after the last step: what a request found when it came. */
  #lastReserved = 0;
  #lastAllocated = 0;
  readonly #calls: MinMaxBuckets;
  #lastEvent = -1;
  #call = 0;
  #peakSeen = 0;
  #peakReserved = 0;
  #peakCall = -1;
  #layout: LayoutCapture | undefined;
  #oomLayout: LayoutCapture | undefined;

  constructor(
    plan: DevicePlan,
    runtime: Runtime,
    buckets: number,
    captureAfter: number,
    captureAtEvent: number,
    captureOom: boolean,
    callsAtStart: number,
  ) {
    this.device = plan.device;
    this.#plan = plan;
    this.#runtime = runtime;
    this.#captureAfter = captureAfter;
    this.#captureAtEvent = captureAtEvent;
    this.#captureOom = captureOom;
    this.#callsAtStart = callsAtStart;
    this.#callsSeen = callsAtStart;
    this.#address = new Float64Array(plan.blockCount).fill(Number.NaN);
    this.#live = new Uint8Array(plan.blockCount);
    const n = plan.trace.length;
    this.#requested = new MinMaxBuckets(n, buckets, 0);
    this.#reserved = new MinMaxBuckets(n, buckets, 0);
    this.#allocated = new MinMaxBuckets(n, buckets, 0);
    this.#unusable = new MinMaxBuckets(n, buckets, 0);
    this.#calls = new MinMaxBuckets(n, buckets, 0);
  }

  /** Whether the layout asked for (captureAfterCall or captureAtEvent) is taken. */
  get hasLayout(): boolean {
    return this.#layout !== undefined;
  }

  step(step: ReplayStep): void {
    this.#foreign ??= this.#foreignReservations();
    const { block, address } = step;
    let event = step.event;
    if (step.kind === 'start' || step.kind === 'alloc') {
      if (!step.failed) {
        this.#address[block] = address;
        this.#live[block] = 1;
      }
    } else if (step.kind === 'free') {
      if (this.#address[block] !== address)
        throw new RecorderError(`free(0x${address.toString(16)}) at event ${event} is not block ${block}`);
      this.#live[block] = 0;
    } else if (step.kind === 'empty-cache') {
      // It runs between events: drawn with the event before it.
      event = this.#lastEvent;
    }
    if (event >= 0) this.#lastEvent = event;
    this.#sample(step, event);
  }

  /** Handles of the physical memory allocated on this device. */
  #ownHandles(d: RuntimeDescription): Set<number> {
    return new Set(
      d.allocations
        .filter((a) => a.location.type === 'device' && a.location.id === this.device)
        .map((a) => a.handle),
    );
  }

  #foreignReservations(): Set<number> {
    const d = this.#runtime.describe();
    const ours = this.#ownHandles(d);
    return new Set(
      d.reservations.filter((r) => !r.mappings.some((m) => ours.has(m.handle))).map((r) => r.base),
    );
  }

  #sample(step: ReplayStep, event: number): void {
    const s = step.allocator.stats;
    // A peak reached inside the call and left before it returned still counts.
    const reserved = s.peakReservedBytes > this.#peakSeen ? s.peakReservedBytes : s.reservedBytes;
    this.#peakSeen = s.peakReservedBytes;
    this.#requested.set(event, s.requestedBytes);
    this.#reserved.set(event, reserved);
    this.#allocated.set(event, s.allocatedBytes);
    // Note [Reserved but unusable]: a request that made the allocator call the driver, or fail, found
    // everything it had cached unfit for it.
    const grew = step.kind === 'alloc' && (step.failed || step.driverCalls > this.#callsSeen);
    this.#unusable.set(event, grew ? this.#lastReserved - this.#lastAllocated : 0);
    this.#lastReserved = s.reservedBytes;
    this.#lastAllocated = s.allocatedBytes;
    this.#calls.set(event, step.driverCalls - this.#callsAtStart);
    this.#callsSeen = step.driverCalls;
    if (reserved > this.#peakReserved) {
      this.#peakReserved = reserved;
      this.#peakCall = this.#call;
    }
    if (this.#call === this.#captureAfter) this.#layout = this.#capture(event, s);
    else if (this.#captureAtEvent >= 0 && this.#layout === undefined && event >= this.#captureAtEvent)
      this.#layout = this.#capture(event, s);
    if (step.failed && this.#captureOom && this.#oomLayout === undefined)
      this.#oomLayout = this.#capture(event, s);
    this.#call++;
  }

  #capture(event: number, s: AllocatorStats): LayoutCapture {
    const d = this.#runtime.describe();
    const ours = this.#ownHandles(d);
    const foreign = this.#foreign ?? new Set<number>();
    const reservations = d.reservations.filter(
      (r) => !foreign.has(r.base) && (r.mappings.length === 0 || r.mappings.some((m) => ours.has(m.handle))),
    );
    const blocks: LiveBlock[] = [];
    for (let id = 0; id < this.#live.length; id++) {
      if (this.#live[id] === 1)
        blocks.push({ address: this.#address[id], size: this.#plan.blockSize[id], block: id });
    }
    blocks.sort((a, b) => a.address - b.address);
    return {
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

  get callsSeen(): number {
    return this.#callsSeen;
  }

  finish(): DeviceRecording {
    return {
      device: this.device,
      events: this.#plan.trace.length,
      bucketWidth: this.#requested.width,
      requested: this.#requested.finish(),
      reserved: this.#reserved.finish(),
      allocated: this.#allocated.finish(),
      unusable: this.#unusable.finish(),
      driverCalls: this.#calls.finish(),
      peakCall: this.#peakCall,
      layout: this.#layout,
      oomLayout: this.#oomLayout,
    };
  }
}

/*
 * Note [Reserved but unusable]: reserved minus allocated counts every cached
 * byte, and between steps of a training loop most of that is about to be
 * reused, so drawn as such it reads as an alarm when nothing is wrong. What
 * costs memory is cache that cannot serve the request in front of it: too
 * small a block, the wrong pool or stream, a block max_split_size_mb keeps
 * whole. A caching allocator calls the driver on a request only when its
 * cache cannot serve it (PyTorch's malloc: get_free_block, then alloc_block
 * or the retry that frees the cache first; vmmkit's arenas alike), so at
 * such a request, and at one that fails, every byte cached just before it
 * was unusable for it. That is the figure drawn, at those requests; at every
 * other step it is 0, since the request was served from the cache.
 */
