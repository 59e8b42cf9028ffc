import type { Runtime } from '../core/runtime.js';
import { Transaction } from '../core/transaction.js';

/**
 * Core's Transaction (Note [Transactions] in src/core/transaction.ts) for an
 * allocator's operations of several runtime calls: after each call succeeds
 * the body records how to take it back, and if a later one fails the
 * records run newest first and the failure is rethrown, so a thrown error
 * means the allocator and the runtime are as they were. An undo that fails
 * in turn goes to the runtime's report hook (`reportTo`), as core's own do.
 */
export function transaction<T>(runtime: Runtime, body: (tx: Transaction) => T): T {
  return Transaction.run(reportTo(runtime), body);
}

/** A transaction's report hook that reports through the runtime's own (runtime.quietly: the one way to it above core). */
export function reportTo(runtime: Runtime): (message: string, error?: unknown) => void {
  return (message, error) =>
    runtime.quietly(() => {
      throw error ?? new Error(message);
    });
}
