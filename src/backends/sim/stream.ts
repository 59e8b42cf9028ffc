/**
 * A simulated stream: work queued in order on one device, run when the
 * stream (or its device, or a synchronous call) is synchronised.
 */
export class SimStream {
  readonly #queue: (() => void)[] = [];

  constructor(
    readonly id: number,
    readonly device: number,
  ) {}

  get pending(): number {
    return this.#queue.length;
  }

  enqueue(work: () => void): void {
    this.#queue.push(work);
  }

  /** Run the queued work in order. Every item runs; the first failure is thrown after. */
  drain(): void {
    let failure: unknown;
    let failed = false;
    // Items may enqueue more; take them one at a time.
    while (this.#queue.length > 0) {
      const work = this.#queue.shift()!;
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
    this.#queue.length = 0;
  }
}
