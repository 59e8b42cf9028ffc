/**
 * Core's typed errors. Every failure in core or a backend is a VmmError with
 * one of these kinds; each flavor has one table mapping every kind to its
 * vendor's code (and a parity test reads this list to check that).
 */
export const ERROR_KINDS = [
  /** An argument is malformed: zero or misaligned size, unknown flag, bad enum value. */
  'invalid-value',
  /** A device ordinal outside the machine. */
  'invalid-device',
  /** A physical allocation handle that this process does not hold. */
  'invalid-handle',
  /** The device (or host) pool cannot hold the allocation. */
  'out-of-memory',
  /** A well-formed request the system does not do (partial handle maps, unrequested handle types). */
  'not-supported',
  /** An address or range that lies outside every reservation, or is not a reservation's exact extent. */
  'not-reserved',
  /** An address or range that is not (wholly) covered by mappings, or would split one. */
  'not-mapped',
  /** A map over an address that is already mapped. */
  'overlap',
  /** An object still in use: a reservation with mappings inside, a reservation mixing devices. */
  'in-use',
  /** A page-table permission violation: the accessing device may not read or write there. */
  'access-denied',
  /**
   * Work queued on a stream met memory its device may not touch, or none,
   * when it ran: a fault on the device, answered by the synchronisation that
   * ran it (Note [Queued work and access changes] in src/backends/sim/process.ts).
   */
  'device-fault',
  /** Sharing refused: the importing process is not allowed to open the handle. */
  'permission-denied',
  /** A file descriptor or shareable handle that does not exist in the process. */
  'invalid-fd',
  /** A stream that does not exist. */
  'invalid-stream',
  /** An event that does not exist (destroyed, or never this process's). */
  'invalid-event',
  /** The runtime was not initialised, or was torn down. */
  'not-initialized',
  /** No current context / device selected where one is needed. */
  'invalid-context',
  /** An object was exported already and may be exported only once. */
  'already-exported',
  /** Stream capture (Note [Stream capture] in graphs.ts): a begin on a capturing stream, an end on one that is not. */
  'capture-state',
  /** Work or an end given to a capture that was invalidated. */
  'capture-invalidated',
  /** A capture ended while a stream that joined it was not joined back. */
  'capture-unjoined',
  /** A capture ended on a stream other than the one it began on. */
  'capture-unmatched',
  /** A capturing stream waited on an event of another capture. */
  'capture-merge',
  /** A capturing stream waited on an event recorded outside any capture. */
  'capture-isolation',
] as const;

export type ErrorKind = (typeof ERROR_KINDS)[number];

/**
 * Note [Driver codes]: a backend over a real driver knows the driver's own
 * answer (the CUDA backend's CUresult: CUDA_ERROR_ILLEGAL_ADDRESS, 700) as
 * well as the kind it means to core (access-denied). The kind is what core
 * and every front end reason with; the code travels beside it, named by the
 * driver's vendor, so a front end of that vendor answers the driver's code
 * itself instead of its table's code for the kind (which would turn 700
 * into CUDA_ERROR_INVALID_VALUE), and any other front end answers its own.
 */
export interface DriverCode {
  /** Whose code it is, as the front ends name their vendor ('CUDA'). */
  readonly vendor: string;
  readonly code: number;
}

export class VmmError extends Error {
  override readonly name = 'VmmError';
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** The driver's own answer, where a backend has one (Note [Driver codes]). */
    readonly driver?: DriverCode,
    /** For a 'device-fault': the device whose work faulted, where the backend knows it. */
    readonly device?: number,
  ) {
    super(`${kind}: ${message}`);
  }
}

/** The one error factory: every failure in core and the backends is made here. */
export function vmmError(kind: ErrorKind, message: string, driver?: DriverCode, device?: number): VmmError {
  return new VmmError(kind, message, driver, device);
}

export function isVmmError(e: unknown): e is VmmError {
  return e instanceof VmmError;
}

/** The report hook when none is given: a warning on stderr (dispose and undo never throw; they report). */
export function warn(message: string, error?: unknown): void {
  console.warn(`vmmkit: ${message}`, error ?? '');
}
