/**
 * A simulated stream: work queued in order on one device, run when the
 * stream (or its device, or a synchronous call, or an event on it) is
 * synchronised. Positions count the items ever queued, so an event can mark
 * "everything queued so far" and later ask whether it has run (Note [Events]
 * in src/backend/backend.ts).
 */
export class SimStream {
  readonly #queue: (() => void)[] = [];
  /** Items ever queued. */
  #queued = 0;
  /** Items taken off the queue to run (or discarded). */
  #taken = 0;

  constructor(
    readonly id: number,
    readonly device: number,
  ) {}

  get pending(): number {
    return this.#queue.length;
  }

  /** The position after the last item queued so far: what an event recorded now marks. */
  get position(): number {
    return this.#queued;
  }

  /** Whether every item before `position` has run. */
  hasRun(position: number): boolean {
    return this.#taken >= position;
  }

  enqueue(work: () => void): void {
    this.#queue.push(work);
    this.#queued++;
  }

  /** Run the queued work in order. Every item runs; the first failure is thrown after. */
  drain(): void {
    this.drainTo(Number.POSITIVE_INFINITY);
  }

  /**
   * Run the queued work before `position`, in order, and nothing after it.
   * Every item runs; the first failure is thrown after. An item is counted
   * as taken before it runs, so work that waits on this stream's own earlier
   * position (a wait item) finds it done instead of recursing.
   */
  drainTo(position: number): void {
    let failure: unknown;
    let failed = false;
    // Items may enqueue more; take them one at a time.
    while (this.#queue.length > 0 && this.#taken < position) {
      const work = this.#queue.shift()!;
      this.#taken++;
      try {
        work();
      } catch (e) {
        if (!failed) {
          failure = e;
          failed = true;
        }
      }
    }
    if (failed) throw failure;
  }

  /** Forget queued work (the process exited). */
  discard(): void {
    this.#taken += this.#queue.length;
    this.#queue.length = 0;
  }
}
