import type { Runtime } from './runtime.js';
import { type Access, type AllocationProperties, accessIn } from './types.js';

/**
 * The three objects of the VMM model (seed 1, section 2.3): a Reservation is
 * the parent virtual range; a PhysicalAllocation is memory behind a handle;
 * a Mapping is a sub-range of a reservation cross-linked to the allocation
 * it shows. They are records owned by a Runtime, which alone changes them.
 */

export type Origin = 'vmm' | 'malloc';

/**
 * Note [Owner field]: each object records the Runtime that holds it live, and
 * loses it when it dies (freed, unmapped, released to zero). Operations given
 * an object check `owner === this` instead of looking it up again: one
 * comparison, and it also refuses an object of another process.
 */
export class Reservation {
  /** The runtime holding it live; undefined once freed (Note [Owner field]). */
  owner: Runtime | undefined;
  /** Mappings currently inside this reservation. */
  mappingCount = 0;
  constructor(
    readonly base: number,
    readonly size: number,
    readonly alignment: number,
    /** 'malloc' for the hidden reservation behind a one-step allocation. */
    readonly origin: Origin,
  ) {}

  get end(): number {
    return this.base + this.size;
  }

  /** Free the reservation (`using r = rt.reserve(...)`). Never throws: a failure goes to the runtime's report hook. */
  [Symbol.dispose](): void {
    const rt = this.owner;
    rt?.quietly(() => rt.free(this));
  }
}

export class PhysicalAllocation {
  /** The runtime holding it live; undefined once its memory is released (Note [Owner field]). */
  owner: Runtime | undefined;
  /**
   * References through the handle: 1 at create or import, +1 per retain,
   * -1 per release. While it is above zero the handle value is valid.
   */
  handleRefs = 1;
  /** Mappings that show this memory. */
  mapRefs = 0;
  /** Shareable descriptors and tokens exported from it (for bookkeeping and export-once rules). */
  exports = 0;
  /** Shareable tokens exported from it, withdrawn when its memory is freed. */
  tokens: number[] | undefined;

  constructor(
    /** The handle value the API shows (per process, deterministic). */
    readonly id: number,
    readonly size: number,
    readonly props: AllocationProperties,
    /** The backend's handle for the same memory. */
    readonly backendHandle: number,
    readonly origin: 'created' | 'imported' | 'malloc',
  ) {}

  /** DESIGN.md's single count: +1 per create/import, map and retain; -1 per release and unmap. */
  get refCount(): number {
    return this.handleRefs + this.mapRefs;
  }

  /** Release one handle reference (`using a = rt.create(...)`). Never throws. */
  [Symbol.dispose](): void {
    const rt = this.owner;
    if (this.handleRefs > 0) rt?.quietly(() => rt.release(this));
  }
}

export class Mapping {
  /** The runtime holding it live; undefined once unmapped (Note [Owner field]). */
  owner: Runtime | undefined;
  constructor(
    readonly va: number,
    readonly size: number,
    readonly allocation: PhysicalAllocation,
    readonly offset: number,
    readonly reservation: Reservation,
  ) {}

  /** Access of every device, packed (Note [Access bits]); a new mapping grants none. */
  accessBits = 0;

  get end(): number {
    return this.va + this.size;
  }

  accessOf(device: number): Access {
    return accessIn(this.accessBits, device);
  }

  /** Unmap (`using m = rt.map(...)`). Never throws. */
  [Symbol.dispose](): void {
    const rt = this.owner;
    rt?.quietly(() => rt.unmapMapping(this));
  }
}
