import { errorClass } from '../util/error-class.js';
import type { FreeMemory } from './allocator.js';

/**
 * The allocators' errors, all in one place: every allocator of this folder
 * throws one of these, or core's VmmError where core would refuse the same
 * thing (GrowableBuffer's and vmmkit's malformed sizes and options are
 * invalid-value, as core's own are; a failed driver step comes up as core
 * threw it). Each has a `name` and a one-line message meant for a person,
 * made by errorClass (Note [One error factory per layer] in util/error-class.ts).
 *
 * The argument errors are RangeErrors, as the bare RangeErrors they replace
 * were, so a caller that caught those still catches these.
 */

const NO_FREE_MEMORY: FreeMemory = Object.freeze({ freeBytes: 0, freePieces: 0, largestFreeBytes: 0 });

/**
 * malloc could not be served: PyTorch's OutOfMemoryError. It describes the
 * allocator at the failure (after its own retries, so what they released is
 * gone): what it held, how much of that was unused and in how many pieces,
 * and the cap it ran under.
 */
export class AllocatorOutOfMemoryError extends errorClass('AllocatorOutOfMemoryError') {
  /** Bytes held that no live block uses (FreeMemory.freeBytes). */
  readonly freeBytes: number;
  readonly freePieces: number;
  readonly largestFreeBytes: number;
  constructor(
    readonly requestedBytes: number,
    readonly device: number,
    readonly reservedBytes: number,
    readonly allocatedBytes: number,
    free: FreeMemory = NO_FREE_MEMORY,
    /** The memory limit in force (AllocatorContext.memoryLimit or a memory fraction); undefined: none. */
    readonly limitBytes: number | undefined = undefined,
  ) {
    const allowed = limitBytes === undefined ? '' : `, ${limitBytes} allowed`;
    super(
      `out of memory: tried to allocate ${requestedBytes} bytes on device ${device} (${reservedBytes} reserved${allowed}, ${allocatedBytes} allocated; ${free.freeBytes} of the reserved bytes free in ${free.freePieces} pieces, the largest ${free.largestFreeBytes})`,
    );
    this.freeBytes = free.freeBytes;
    this.freePieces = free.freePieces;
    this.largestFreeBytes = free.largestFreeBytes;
  }
}

/** A snapshot's allocator_settings (or settings given directly) that PyTorch would refuse. */
export class AllocatorSettingsError extends errorClass('AllocatorSettingsError') {}

/**
 * A configuration string PyTorch 2.11 refuses (notModelled false; the
 * message is PyTorch's own for that case), or one it accepts that vmmkit
 * cannot model (notModelled true: backend:cudaMallocAsync and the rest of
 * Note [Not modelled] in pytorch/alloc-conf.ts). `key` names the key at fault.
 */
export class AllocConfError extends errorClass('AllocConfError') {
  readonly notModelled: boolean;
  readonly key: string | undefined;
  constructor(message: string, options: { readonly key?: string; readonly notModelled?: boolean } = {}) {
    super(message);
    this.key = options.key;
    this.notModelled = options.notModelled ?? false;
  }
}

/**
 * An argument an allocator cannot take: a size, stream, pool or address it
 * does not know, an option out of range, a start state it cannot hold.
 * Nothing changed.
 */
export class AllocatorArgumentError extends errorClass('AllocatorArgumentError', RangeError) {}

/**
 * GrowableBuffer.grow past the buffer's maxSize: the reservation behind its
 * pointer ends there, so the buffer cannot hold `size` bytes without moving
 * (a caller may copy into a larger buffer). Nothing changed.
 */
export class GrowPastMaximumError extends errorClass('GrowPastMaximumError', AllocatorArgumentError) {
  constructor(
    readonly size: number,
    readonly maxSize: number,
  ) {
    super(`grow to ${size} is past maxSize ${maxSize}`);
  }
}

/**
 * A call the allocator's state refuses: it was disposed, restore on an
 * allocator already used, a private pool named after its last graph let it
 * go (the assertion PyTorch makes there). Nothing changed.
 */
export class AllocatorStateError extends errorClass('AllocatorStateError') {}

/**
 * An allocator's own books disagree with themselves (a block missing from
 * the pool it should be in; PyTorch's internal assertions): a bug here, not
 * the caller's mistake.
 */
export class AllocatorInternalError extends errorClass('AllocatorInternalError') {}
