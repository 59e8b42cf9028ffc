/**
 * Watching a Runtime: the one typed way for code above core (replay's
 * driver meter, its recorded placement, a user's own counters) to see every
 * operation a runtime performs, without replacing its methods from outside.
 *
 * Note [Runtime observers]: observers are given when the runtime is made
 * (`createRuntime({ observers })`, `new Runtime(backend, { observers })`),
 * never attached later, so a runtime's methods are fixed for its life and
 * nothing has to be taken off again. Each operation TRACED_OPERATIONS lists
 * calls every observer's `before` with the call (its name and its arguments,
 * all of them, typed by the operation) and then `after` with the same call
 * and its outcome. Core takes the inner steps of an operation privately (the
 * one-step malloc reserves, creates, maps and grants access without calling
 * its own public methods, as cuMemAlloc does inside the driver), so an
 * observer sees the calls its callers made. `depth` says how many operations
 * were already running when a call began: 0 for every call today; an
 * observer that counts driver calls counts only depth 0 (Note [Outermost
 * calls] in replay/driver-meter.ts), so an operation ever built on another
 * would still be one call. An observer that throws breaks the
 * operation it watches, so observers must not throw; `after` runs whether the
 * call returned or threw, and the error is the caller's, rethrown unchanged.
 * A runtime made without observers runs its own methods, at no cost.
 */
import type { TRACED_OPERATIONS } from './operations.js';
import type { Runtime } from './runtime.js';

/** The operations observers see: every method of Runtime that changes state or moves bytes. */
export type RuntimeOperation = (typeof TRACED_OPERATIONS)[number];

/** One call of an operation, with its arguments as the caller passed them. */
export type RuntimeCall = {
  readonly [K in RuntimeOperation]: {
    readonly op: K;
    readonly args: Parameters<Runtime[K]>;
    /** How many operations of this runtime were running when it began (0: called from outside). */
    readonly depth: number;
  };
}[RuntimeOperation];

/** How a call ended: its return value, or what it threw. */
export type CallOutcome =
  | { readonly ok: true; readonly result: unknown }
  | { readonly ok: false; readonly error: unknown };

export interface RuntimeObserver {
  /** Before the operation runs; `runtime` is the one called (its queries may be read, its operations not called). */
  before?(call: RuntimeCall, runtime: Runtime): void;
  /** After it returned or threw. */
  after?(call: RuntimeCall, outcome: CallOutcome, runtime: Runtime): void;
}

/**
 * Route each of `operations` on `runtime` through `observers`. Core calls
 * this once, from the Runtime's constructor; nothing else replaces methods.
 */
export function observeRuntime(
  runtime: Runtime,
  observers: readonly RuntimeObserver[],
  operations: readonly RuntimeOperation[],
): void {
  const befores = observers.filter((o) => o.before !== undefined);
  const afters = observers.filter((o) => o.after !== undefined);
  const methods = runtime as unknown as Record<string, (...args: unknown[]) => unknown>;
  let depth = 0;
  for (const op of operations) {
    const method = methods[op];
    methods[op] = function observed(this: Runtime, ...args: unknown[]): unknown {
      const call = { op, args, depth } as RuntimeCall;
      for (const o of befores) o.before!(call, runtime);
      depth++;
      let result: unknown;
      try {
        result = method.apply(this, args);
      } catch (error) {
        depth--;
        for (const o of afters) o.after!(call, { ok: false, error }, runtime);
        throw error;
      }
      depth--;
      for (const o of afters) o.after!(call, { ok: true, result }, runtime);
      return result;
    };
  }
}
