/**
 * Counts the driver calls an allocator makes through a Runtime, and prices
 * them with a CostTable (and, on a real GPU, times them).
 *
 * Note [Outermost calls]: core's one-step malloc reserves, creates, maps and
 * grants access inside itself, as cuMemAlloc does inside the driver; counting
 * those inner steps would charge one cuMemAlloc as five calls. The meter
 * wraps the Runtime's own methods on that one instance (as trace.ts's
 * instrument does) and keeps a depth: only a call made at depth 0 is counted,
 * so a call core makes on itself is part of the call that made it.
 *
 * Metering is cheap: one wrapper per method with the method's own arity (no
 * rest arrays), counts in typed arrays, and performance.now only when
 * measuring.
 */

import type { Mapping, PhysicalAllocation, Reservation } from '../core/objects.js';
import type { AccessDescriptor, ReserveOptions, Runtime } from '../core/runtime.js';
import type { AllocationProperties } from '../core/types.js';
import { type CostTable, CostTableError, DRIVER_CALLS, type DriverCall } from './cost-table.js';

const RESERVE = 0;
const ADDRESS_FREE = 1;
const CREATE = 2;
const RELEASE = 3;
const MAP = 4;
const UNMAP = 5;
const SET_ACCESS = 6;
const ALLOC = 7;
const FREE = 8;
const SYNCHRONIZE = 9;

export interface DriverUse {
  /** Calls by driver name (every call listed, zero included). */
  readonly calls: Record<DriverCall, number>;
  /** Estimated microseconds from the cost table; null without one. */
  readonly estimatedUs: number | null;
  /** Measured wall microseconds of the outermost calls; null when not measuring. */
  readonly measuredUs: number | null;
}

export class DriverMeter {
  readonly #counts = new Float64Array(DRIVER_CALLS.length);
  readonly #estimated = new Float64Array(DRIVER_CALLS.length);
  readonly #measured = new Float64Array(DRIVER_CALLS.length);
  #missing = 0;
  #depth = 0;
  #total = 0;
  readonly #runtime: Runtime;
  readonly #names: string[] = [];

  /**
   * Start metering `runtime`. With `measure`, each outermost call's wall time
   * is taken too (for a real GPU; on the simulator it would time JavaScript).
   */
  constructor(
    runtime: Runtime,
    readonly costs: CostTable | undefined,
    readonly measure: boolean,
  ) {
    this.#runtime = runtime;
    const rt = runtime;
    const { reserve, free, create, release, map, unmap, setAccess, malloc, mfree, synchronize } = runtime;
    this.#install('reserve', (size: number, options?: ReserveOptions) => {
      const t = this.#enter(RESERVE, size);
      try {
        return reserve.call(rt, size, options);
      } finally {
        this.#exit(RESERVE, t);
      }
    });
    this.#install('free', (r: Reservation) => {
      const t = this.#enter(ADDRESS_FREE, r?.size ?? 0);
      try {
        return free.call(rt, r);
      } finally {
        this.#exit(ADDRESS_FREE, t);
      }
    });
    this.#install('create', (size: number, props: AllocationProperties) => {
      const t = this.#enter(CREATE, size);
      try {
        return create.call(rt, size, props);
      } finally {
        this.#exit(CREATE, t);
      }
    });
    this.#install('release', (a: PhysicalAllocation) => {
      const t = this.#enter(RELEASE, a?.size ?? 0);
      try {
        return release.call(rt, a);
      } finally {
        this.#exit(RELEASE, t);
      }
    });
    this.#install('map', (va: number, size: number, a: PhysicalAllocation, offset?: number) => {
      const t = this.#enter(MAP, size);
      try {
        return map.call(rt, va, size, a, offset) as Mapping;
      } finally {
        this.#exit(MAP, t);
      }
    });
    this.#install('unmap', (va: number, size: number) => {
      const t = this.#enterPerHandle(UNMAP, va, size);
      try {
        return unmap.call(rt, va, size);
      } finally {
        this.#exit(UNMAP, t);
      }
    });
    this.#install('setAccess', (va: number, size: number, descriptors: readonly AccessDescriptor[]) => {
      const t = this.#enterPerHandle(SET_ACCESS, va, size);
      try {
        return setAccess.call(rt, va, size, descriptors);
      } finally {
        this.#exit(SET_ACCESS, t);
      }
    });
    this.#install('malloc', (device: number, size: number) => {
      const t = this.#enter(ALLOC, size);
      try {
        return malloc.call(rt, device, size);
      } finally {
        this.#exit(ALLOC, t);
      }
    });
    this.#install('mfree', (va: number) => {
      const t = this.#depth === 0 ? this.#enter(FREE, rt.reservationAt(va)?.size ?? 0) : this.#enter(FREE, 0);
      try {
        return mfree.call(rt, va);
      } finally {
        this.#exit(FREE, t);
      }
    });
    this.#install('synchronize', (device?: number) => {
      const t = this.#enter(SYNCHRONIZE, 0);
      try {
        return synchronize.call(rt, device);
      } finally {
        this.#exit(SYNCHRONIZE, t);
      }
    });
  }

  #install(name: string, wrapper: (...args: never[]) => unknown): void {
    (this.#runtime as unknown as Record<string, unknown>)[name] = wrapper;
    this.#names.push(name);
  }

  /** Returns the start time (0 when not measuring), or -1 for a nested call. */
  #enter(call: number, bytes: number): number {
    if (this.#depth++ > 0) return -1;
    this.#count(call, (costs) => costs.estimate(call, bytes));
    return this.measure ? performance.now() : 0;
  }

  /** Count one outermost call, priced by `price` when there is a table that knows the call. */
  #count(call: number, price: (costs: CostTable) => number): void {
    this.#counts[call]++;
    this.#total++;
    const costs = this.costs;
    if (costs === undefined) return;
    if (costs.has(call)) this.#estimated[call] += price(costs);
    else this.#missing |= 1 << call;
  }

  /**
   * Note [Per-handle prices]: cuMemSetAccess and cuMemUnmap over a range of
   * several mappings cost the driver about one single-handle call per mapping
   * (measured on the H200: setAccess over 1, 4, 16, 64 adjacent 2 MiB handles
   * took 23, 84, 358, 1632 us; bench/results/h200-driver-costs.json,
   * perHandle), not one call of the range's size. So one such call counts
   * once, and is priced as the sum of the table's price for each mapping in
   * its range at that mapping's size.
   */
  #enterPerHandle(call: number, va: number, size: number): number {
    if (this.#depth++ > 0) return -1;
    this.#count(call, (costs) => {
      let us = 0;
      for (const m of this.#runtime.mappingsIn(va, size)) us += costs.estimate(call, m.size);
      return us;
    });
    return this.measure ? performance.now() : 0;
  }

  #exit(call: number, start: number): void {
    this.#depth--;
    if (start >= 0 && this.measure) this.#measured[call] += (performance.now() - start) * 1000;
  }

  /** What was counted so far. Throws CostTableError when a call made is missing from the cost table. */
  use(): DriverUse {
    if (this.#missing !== 0) {
      const names = DRIVER_CALLS.filter((_, i) => (this.#missing & (1 << i)) !== 0);
      throw new CostTableError(
        `the cost table (${this.costs!.info.source}) has no entry for ${names.join(', ')}, which the allocator called`,
      );
    }
    const total = (a: Float64Array) => a.reduce((s, x) => s + x, 0);
    return {
      calls: this.calls(),
      estimatedUs: this.costs === undefined ? null : total(this.#estimated),
      measuredUs: this.measure ? total(this.#measured) : null,
    };
  }

  /** Outermost calls so far, of every kind (cheap: read after each event by the report's recorder). */
  get total(): number {
    return this.#total;
  }

  /** Calls by driver name so far (every call listed, zero included). */
  calls(): Record<DriverCall, number> {
    return Object.fromEntries(DRIVER_CALLS.map((c, i) => [c, this.#counts[i]])) as Record<DriverCall, number>;
  }

  /** Put the Runtime's own methods back. */
  detach(): void {
    for (const name of this.#names) delete (this.#runtime as unknown as Record<string, unknown>)[name];
    this.#names.length = 0;
  }
}
