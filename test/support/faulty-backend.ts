import type { Backend } from '../../src/backend/backend.js';
import { BACKEND_OPERATIONS, BACKEND_SHARING_OPERATIONS } from '../../src/backend/backend.js';
import { type ErrorKind, VmmError } from '../../src/core/errors.js';

/** The primitives that change state (queries and byte moves are never failed by default). */
export const MUTATING_OPERATIONS = [
  'reserve',
  'free',
  'create',
  'release',
  'map',
  'unmap',
  'setAccess',
  'setHostAccess',
  ...BACKEND_SHARING_OPERATIONS,
  'createStream',
  'destroyStream',
  'createEvent',
  'destroyEvent',
] as const satisfies readonly (keyof Backend)[];

/**
 * A Backend that forwards to another and fails the k-th state-changing
 * primitive on purpose, with a VmmError, before the inner backend sees it.
 * Tests arm it (`failAt = k`), run an operation, and check that core undid
 * what the first k-1 primitives did. `calls` counts primitives since the last
 * arm, so a dry run with failAt = 0 tells how many steps an operation takes.
 */
export class FaultyBackend {
  /** Fail the call with this 1-based number, counted since arm(); 0: never. */
  failAt = 0;
  /** State-changing primitives seen since arm(). */
  calls = 0;
  /** The names of those primitives, in order. */
  readonly log: string[] = [];
  /** The kind of error the injected failure has. */
  kind: ErrorKind = 'out-of-memory';
  readonly backend: Backend;

  constructor(readonly inner: Backend) {
    const wrapper: Record<string, unknown> = {
      kind: inner.kind,
      pid: inner.pid,
      devices: inner.devices,
      partialMaps: inner.partialMaps,
    };
    for (const name of BACKEND_OPERATIONS) {
      const method = (inner[name] as (...a: unknown[]) => unknown).bind(inner);
      const mutating = (MUTATING_OPERATIONS as readonly string[]).includes(name);
      wrapper[name] = mutating
        ? (...args: unknown[]) => {
            this.calls++;
            this.log.push(name);
            if (this.calls === this.failAt) throw new VmmError(this.kind, `injected failure at ${name}`);
            return method(...args);
          }
        : method;
    }
    wrapper.dispose = () => inner.dispose();
    this.backend = wrapper as unknown as Backend;
  }

  /** Start counting afresh and fail the k-th primitive from now (0: none). */
  arm(k: number): void {
    this.failAt = k;
    this.calls = 0;
    this.log.length = 0;
  }
}
