/** The events a front end handed out: opaque handles over core's event ids, with what the vendor's rules need. */
import type { Runtime } from '../../core/runtime.js';
import { type Box, handleKey } from './args.js';
import type { VendorCodes } from './error-table.js';
import { writeBox, writeOrTakeBack } from './untrusted.js';

/** A live event: its creation flags, and whether it was recorded (since creation, or an ACL reset). */
export interface EventState {
  readonly flags: number;
  recorded: boolean;
}

/**
 * Events by core id (Note [Events] in src/backend/backend.ts). Each vendor's
 * handles are base + core's id, never reused in a process, so a handle that
 * names no live event names it for good.
 */
export class EventTable {
  readonly #events = new Map<number, EventState>();

  constructor(
    readonly runtime: Runtime,
    readonly base: bigint,
  ) {}

  /**
   * A new event on `device`, its handle written to `box`: core's id, or -1
   * (the event gone again) if the box refused it. `options` goes to core as
   * given (ACL's events take core's default).
   */
  create(
    device: number,
    flags: number,
    options: { readonly timing: boolean } | undefined,
    box: Box<bigint>,
  ): number {
    const id =
      options === undefined ? this.runtime.createEvent(device) : this.runtime.createEvent(device, options);
    if (!writeOrTakeBack(box, this.base + BigInt(id), () => this.runtime.destroyEvent(id))) return -1;
    this.#events.set(id, { flags, recorded: false });
    return id;
  }

  /** The core id a handle (a bigint or a number) stands for, live or not; -1 if it is no event handle at all. */
  named(h: unknown): number {
    const id = (handleKey(h) ?? -1n) - this.base;
    return id > 0n && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : -1;
  }

  /** The core id of a live event of this table, or -1. */
  idOf(h: unknown): number {
    const id = this.named(h);
    return id > 0 && this.#events.has(id) ? id : -1;
  }

  state(id: number): EventState | undefined {
    return this.#events.get(id);
  }

  /** Destroy a live event in core, then forget it. */
  destroy(id: number): void {
    this.runtime.destroyEvent(id);
    this.#events.delete(id);
  }

  /** Forget an event core no longer holds. */
  forget(id: number): void {
    this.#events.delete(id);
  }

  ids(): IterableIterator<number> {
    return this.#events.keys();
  }

  /**
   * The end cuEventElapsedTime and hipEventElapsedTime share, after their
   * handle checks: both events made without the vendor's `disableTiming`
   * flag and recorded (else `notTimed`), both recorded points run (else
   * `notReady`), then the milliseconds from `a` to `b` in `ms` (a box that
   * refuses them: the vendor's invalid-value code).
   */
  elapsedTime(
    ms: Box<number>,
    a: number,
    b: number,
    codes: VendorCodes,
    answers: { readonly disableTiming: number; readonly notTimed: number; readonly notReady: number },
  ): number {
    const ea = this.#events.get(a);
    const eb = this.#events.get(b);
    if (ea === undefined || eb === undefined) return answers.notTimed;
    if (((ea.flags | eb.flags) & answers.disableTiming) !== 0 || !ea.recorded || !eb.recorded)
      return answers.notTimed;
    let elapsed: number;
    try {
      if (!this.runtime.queryEvent(a) || !this.runtime.queryEvent(b)) return answers.notReady;
      elapsed = this.runtime.elapsedTime(a, b);
    } catch (e) {
      return codes.code(e);
    }
    return writeBox(ms, elapsed) ? codes.success : codes.table['invalid-value'];
  }
}
