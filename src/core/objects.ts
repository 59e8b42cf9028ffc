// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import type { Runtime } from './runtime.js';
import { type Access, type AllocationProperties, accessIn } from './types.js';

/**
 * The three objects of the VMM model (seed 1, section 2.3): a Reservation is
 * the parent virtual range; a PhysicalAllocation is memory behind a handle;
 * a Mapping is a sub-range of a reservation cross-linked to the allocation
 * it shows. They are records owned by a Runtime, which alone changes them.
 *
 * Note [Core-owned state]: what changes over an object's life (its owner,
 * counts, access bits) sits in fields keyed by the symbols below, which only
 * core imports (the package exports none of them). Everyone else reads them
 * through getters, so an allocator or a flavor cannot make core's books
 * disagree with the backend by writing a field. They are the object's own
 * fields, not a record beside it: the VMM cycle then allocates and touches
 * one object per reservation, allocation and mapping, not two (Note [Cold
 * lines] in runtime.ts).
 */
export const OWNER = Symbol('vmmkit.owner');
export const MAPPING_COUNT = Symbol('vmmkit.mappingCount');
export const HANDLE_REFS = Symbol('vmmkit.handleRefs');
export const MAP_REFS = Symbol('vmmkit.mapRefs');
export const EXPORTS = Symbol('vmmkit.exports');
export const TOKENS = Symbol('vmmkit.tokens');
export const SIZE = Symbol('vmmkit.size');
export const ACCESS_BITS = Symbol('vmmkit.accessBits');
export const HOST_ACCESS = Symbol('vmmkit.hostAccess');

export type Origin = 'vmm' | 'malloc';

/**
 * Note [Owner field]: each object records the Runtime that holds it live, and
 * loses it when it dies (freed, unmapped, released to zero). Operations given
 * an object check `owner === this` instead of looking it up again: one
 * comparison, and it also refuses an object of another process.
 */
export class Reservation {
  [OWNER]: Runtime | undefined = undefined;
  /** Mappings currently inside this reservation. */
  [MAPPING_COUNT] = 0;
  constructor(
    readonly base: number,
    readonly size: number,
    readonly alignment: number,
    /** 'malloc' for the hidden reservation behind a one-step allocation. */
    readonly origin: Origin,
  ) {}

  /** The runtime holding it live; undefined once freed (Note [Owner field]). */
  get owner(): Runtime | undefined {
    return this[OWNER];
  }

  /** Mappings currently inside this reservation. */
  get mappingCount(): number {
    return this[MAPPING_COUNT];
  }

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
  [OWNER]: Runtime | undefined = undefined;
  /** References through the handle (see handleRefs). */
  [HANDLE_REFS] = 1;
  [MAP_REFS] = 0;
  [EXPORTS] = 0;
  [TOKENS]: number[] | undefined = undefined;
  /** Bytes of memory; 0 while unknown (Note [Foreign memory sizes] in runtime.ts). */
  [SIZE]: number;

  constructor(
    /** The handle value the API shows: unique within its process, never reused (Note [Handle values]). */
    readonly id: number,
    /** Bytes of memory, or undefined for foreign memory whose size is learned at its first map. */
    size: number | undefined,
    readonly props: AllocationProperties,
    /** The backend's handle for the same memory. */
    readonly backendHandle: number,
    readonly origin: 'created' | 'imported' | 'malloc',
  ) {
    this[SIZE] = size ?? 0;
  }

  /** Bytes of memory; 0 while the size is unknown (sizeKnown). */
  get size(): number {
    return this[SIZE];
  }

  /** False for imported memory whose size nobody told core yet (Note [Foreign memory sizes]). */
  get sizeKnown(): boolean {
    return this[SIZE] > 0;
  }

  /** The runtime holding it live; undefined once its memory is released (Note [Owner field]). */
  get owner(): Runtime | undefined {
    return this[OWNER];
  }

  /**
   * References through the handle: 1 at create or import, +1 per retain,
   * -1 per release. While it is above zero the handle value is valid.
   */
  get handleRefs(): number {
    return this[HANDLE_REFS];
  }

  /** Mappings that show this memory. */
  get mapRefs(): number {
    return this[MAP_REFS];
  }

  /** Shareable descriptors and tokens exported from it. */
  get exports(): number {
    return this[EXPORTS];
  }

  /** DESIGN.md's single count: +1 per create/import, map and retain; -1 per release and unmap. */
  get refCount(): number {
    return this[HANDLE_REFS] + this[MAP_REFS];
  }

  /** Release one handle reference (`using a = rt.create(...)`). Never throws. */
  [Symbol.dispose](): void {
    const rt = this.owner;
    if (this.handleRefs > 0) rt?.quietly(() => rt.release(this));
  }
}

export class Mapping {
  [OWNER]: Runtime | undefined = undefined;
  /** Access of every device, packed (Note [Access bits]); a new mapping grants none. */
  [ACCESS_BITS] = 0;
  /** The CPU's access, for host-located memory (Note [Host access]); a new mapping grants none. */
  [HOST_ACCESS]: Access = 0;
  constructor(
    readonly va: number,
    readonly size: number,
    readonly allocation: PhysicalAllocation,
    readonly offset: number,
    readonly reservation: Reservation,
  ) {}

  /** The runtime holding it live; undefined once unmapped (Note [Owner field]). */
  get owner(): Runtime | undefined {
    return this[OWNER];
  }

  /** Access of every device, packed two bits per device (Note [Access bits]). */
  get accessBits(): number {
    return this[ACCESS_BITS];
  }

  get end(): number {
    return this.va + this.size;
  }

  accessOf(device: number): Access {
    return accessIn(this[ACCESS_BITS], device);
  }

  /** The CPU's access (Note [Host access] in src/backend/backend.ts). */
  get hostAccess(): Access {
    return this[HOST_ACCESS];
  }

  /** Unmap (`using m = rt.map(...)`). Never throws. */
  [Symbol.dispose](): void {
    const rt = this.owner;
    rt?.quietly(() => rt.unmap(this.va, this.size));
  }
}
