/**
 * Note [Transactions]: every operation that takes several backend steps
 * (a one-step malloc, access for several devices, an unmap of several
 * mappings) records, after each step succeeds, how to take it back. If a
 * later step fails, the recorded undos run newest first and the failure is
 * rethrown, so the caller sees invariant 1: a thrown VmmError means nothing
 * changed. An undo that itself fails cannot be thrown (the original error
 * matters more) and goes to the report hook.
 */
export class Transaction {
  readonly #undos: (() => void)[] = [];

  constructor(readonly report: (message: string, error?: unknown) => void) {}

  /** Record how to undo a step that has just succeeded. */
  undo(step: () => void): void {
    this.#undos.push(step);
  }

  /** Take back every recorded step, newest first; never throws. */
  rollback(): void {
    for (let i = this.#undos.length - 1; i >= 0; i--) {
      try {
        this.#undos[i]();
      } catch (e) {
        this.report('could not undo a step of a failed operation', e);
      }
    }
    this.#undos.length = 0;
  }

  /** Run `body` as one transaction: all of it, or (rolled back, rethrown) none. */
  static run<T>(report: (message: string, error?: unknown) => void, body: (tx: Transaction) => T): T {
    const tx = new Transaction(report);
    try {
      return body(tx);
    } catch (e) {
      tx.rollback();
      throw e;
    }
  }
}
