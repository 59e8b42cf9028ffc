/**
 * Counts the driver calls an allocator makes through a Runtime, and prices
 * them with a CostTable (and, on a real GPU, times them).
 *
 * Note [Outermost calls]: core's one-step malloc reserves, creates, maps and
 * grants access inside itself, as cuMemAlloc does inside the driver, and is
 * one driver call (cuMemAlloc), not five. The meter is a RuntimeObserver
 * (Note [Runtime observers], src/core/observer.ts), given to the runtime when
 * it is made; it sees the calls the allocator made, and counts only those at
 * depth 0, so an operation ever built on another would still count once.
 *
 * Metering is cheap: a switch per call, counts in typed arrays, and
 * performance.now only when measuring.
 */

import type { CallOutcome, RuntimeCall, RuntimeObserver } from '../../core/observer.js';
import type { Runtime } from '../../core/runtime.js';
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

export class DriverMeter implements RuntimeObserver {
  readonly #counts = new Float64Array(DRIVER_CALLS.length);
  readonly #estimated = new Float64Array(DRIVER_CALLS.length);
  readonly #measured = new Float64Array(DRIVER_CALLS.length);
  #missing = 0;
  #total = 0;
  /** The driver call of the outermost call in progress (-1: none, or one the meter does not count). */
  #current = -1;
  #start = 0;

  /**
   * A meter to give a runtime as an observer (`createProcess({ observers: [meter] })`).
   * With `measure`, each outermost call's wall time is taken too (for a real
   * GPU; on the simulator it would time JavaScript).
   */
  constructor(
    readonly costs: CostTable | undefined,
    readonly measure: boolean,
  ) {}

  before(call: RuntimeCall, runtime: Runtime): void {
    if (call.depth > 0) return;
    switch (call.op) {
      case 'reserve':
        this.#enter(RESERVE, call.args[0]);
        return;
      case 'free':
        this.#enter(ADDRESS_FREE, call.args[0]?.size ?? 0);
        return;
      case 'create':
        this.#enter(CREATE, call.args[0]);
        return;
      case 'release':
        this.#enter(RELEASE, call.args[0]?.size ?? 0);
        return;
      case 'map':
        this.#enter(MAP, call.args[1]);
        return;
      case 'unmap':
        this.#enterPerHandle(UNMAP, runtime, call.args[0], call.args[1]);
        return;
      case 'setAccess':
        this.#enterPerHandle(SET_ACCESS, runtime, call.args[0], call.args[1]);
        return;
      case 'malloc':
        this.#enter(ALLOC, call.args[1]);
        return;
      case 'mfree':
        this.#enter(FREE, runtime.reservationAt(call.args[0])?.size ?? 0);
        return;
      case 'synchronize':
        this.#enter(SYNCHRONIZE, 0);
        return;
    }
  }

  after(call: RuntimeCall, _outcome: CallOutcome): void {
    if (call.depth > 0 || this.#current < 0) return;
    if (this.measure) this.#measured[this.#current] += (performance.now() - this.#start) * 1000;
    this.#current = -1;
  }

  #enter(call: number, bytes: number): void {
    // Priced here, not through #count's closure: one closure a driver call would be one allocation each.
    if (this.#tally(call)) this.#estimated[call] += this.costs!.estimate(call, bytes);
    this.#begin(call);
  }

  #begin(call: number): void {
    this.#current = call;
    if (this.measure) this.#start = performance.now();
  }

  /** Count one outermost call, priced by `price` when there is a table that knows the call. */
  #count(call: number, price: (costs: CostTable) => number): void {
    if (this.#tally(call)) this.#estimated[call] += price(this.costs!);
  }

  /** Count one outermost call; whether there is a table that knows it (one that does not is noted as missing). */
  #tally(call: number): boolean {
    this.#counts[call]++;
    this.#total++;
    const costs = this.costs;
    if (costs === undefined) return false;
    if (costs.has(call)) return true;
    this.#missing |= 1 << call;
    return false;
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
  #enterPerHandle(call: number, runtime: Runtime, va: number, size: number): void {
    this.#count(call, (costs) => {
      let us = 0;
      for (const m of runtime.mappingsIn(va, size)) us += costs.estimate(call, m.size);
      return us;
    });
    this.#begin(call);
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
}
