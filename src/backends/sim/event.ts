import type { SimStream } from './stream.js';

/** A position in one stream's order: the work queued there before it. */
export interface StreamMark {
  readonly stream: SimStream;
  readonly position: number;
}

/**
 * A simulated event (Note [Events] in src/backend/backend.ts): the marks its
 * last record made, one per stream it covers (none: never recorded, or
 * recorded where nothing was queued, and so complete).
 */
export class SimEvent {
  marks: readonly StreamMark[] = [];
  /** Whether it was ever recorded (a timing event has a time only then). */
  recorded = false;

  constructor(
    readonly device: number,
    readonly timing: boolean,
  ) {}

  /** Whether all the marked work has run. */
  get complete(): boolean {
    return this.marks.every((m) => m.stream.hasRun(m.position));
  }
}

/** Run the work before each mark; every mark's work runs, and the first failure is thrown after. */
export function runMarked(marks: readonly StreamMark[]): void {
  let failure: unknown;
  let failed = false;
  for (const m of marks) {
    try {
      m.stream.drainTo(m.position);
    } catch (e) {
      if (!failed) {
        failure = e;
        failed = true;
      }
    }
  }
  if (failed) throw failure;
}
