/**
 * Downsampling a per-event series for display, keeping every extreme.
 *
 * Note [Min-max buckets]: a chart of a million events cannot draw every
 * point, and averaging would shave off exactly what a memory picture is
 * for, the peak. The events are cut into buckets of equal event count; each
 * bucket keeps the least and the greatest value the series took while its
 * events ran (the value carried in from before the bucket counts, as it is
 * the state at the bucket's start), and which of the two came first. Drawn
 * as two points per bucket in that order, the line passes through every
 * bucket's extremes, so the series' maximum (and minimum) over the whole
 * trace appears in the picture exactly, whatever the bucket count.
 */
import { ReportArgumentError } from './errors.js';

export interface MinMaxSeries {
  /** Per bucket, the value drawn first and second (min and max, in the order they occurred). */
  readonly first: Float64Array;
  readonly second: Float64Array;
  /** Greatest value over all events, and the first event index it was reached at (-1: before any event). */
  readonly max: number;
  readonly maxEvent: number;
}

/**
 * Streams (event index, value) updates into min-max buckets (Note [Min-max
 * buckets]). Events come in increasing order, several updates per event
 * allowed; between updates the series keeps its last value. Index -1 is the
 * state before the first event (a trace that started mid-run).
 */
export class MinMaxBuckets {
  readonly width: number;
  readonly count: number;
  readonly #lo: Float64Array;
  readonly #hi: Float64Array;
  readonly #loAt: Float64Array;
  readonly #hiAt: Float64Array;
  #bucket = 0;
  #value: number;
  #max: number;
  #maxEvent = -1;

  /** `events` events cut into at most `buckets` buckets; the series starts at `initial`. */
  constructor(events: number, buckets: number, initial = 0) {
    if (!Number.isSafeInteger(events) || events < 0)
      throw new ReportArgumentError(`events ${events} is not a count`);
    if (!Number.isSafeInteger(buckets) || buckets < 1)
      throw new ReportArgumentError(`buckets ${buckets} is not >= 1`);
    this.width = Math.max(1, Math.ceil(events / buckets));
    this.count = Math.max(1, Math.ceil(events / this.width));
    this.#lo = new Float64Array(this.count);
    this.#hi = new Float64Array(this.count);
    this.#loAt = new Float64Array(this.count);
    this.#hiAt = new Float64Array(this.count);
    this.#value = initial;
    this.#max = initial;
    this.#lo[0] = initial;
    this.#hi[0] = initial;
    this.#loAt[0] = -1;
    this.#hiAt[0] = -1;
  }

  /** The series is `value` after event `event` (so far). */
  set(event: number, value: number): void {
    const b = event < 0 ? 0 : Math.min(this.count - 1, Math.floor(event / this.width));
    if (b > this.#bucket) this.#advance(b, event);
    if (value < this.#lo[b]) {
      this.#lo[b] = value;
      this.#loAt[b] = event;
    }
    if (value > this.#hi[b]) {
      this.#hi[b] = value;
      this.#hiAt[b] = event;
    }
    if (value > this.#max) {
      this.#max = value;
      this.#maxEvent = event;
    }
    this.#value = value;
  }

  /** Buckets up to `b` start with the carried value. */
  #advance(b: number, event: number): void {
    for (let k = this.#bucket + 1; k <= b; k++) {
      this.#lo[k] = this.#value;
      this.#hi[k] = this.#value;
      const at = k === b ? event : k * this.width;
      this.#loAt[k] = at;
      this.#hiAt[k] = at;
    }
    this.#bucket = b;
  }

  /** The buckets, every one filled (events after the last update carry its value). */
  finish(): MinMaxSeries {
    this.#advance(this.count - 1, (this.count - 1) * this.width);
    const first = new Float64Array(this.count);
    const second = new Float64Array(this.count);
    for (let k = 0; k < this.count; k++) {
      const loFirst = this.#loAt[k] <= this.#hiAt[k];
      first[k] = loFirst ? this.#lo[k] : this.#hi[k];
      second[k] = loFirst ? this.#hi[k] : this.#lo[k];
    }
    return { first, second, max: this.#max, maxEvent: this.#maxEvent };
  }
}
