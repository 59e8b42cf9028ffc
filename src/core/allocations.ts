import type { Backend } from '../backend/backend.js';
import { GenerationalHandleTable } from '../util/handle-table.js';
import { isCount } from '../util/integers.js';
import { vmmError } from './errors.js';
import { HANDLE_REFS, MAP_REFS, OWNER, PhysicalAllocation } from './objects.js';
import type { Runtime } from './runtime.js';
import type { SharingBook } from './sharing.js';
import type { AllocationProperties } from './types.js';

/**
 * The physical allocations one process holds, by handle value, and the steps
 * that hand out a handle and give memory back (invariant 3: the memory goes
 * in the backend exactly when nothing, handle or mapping, holds it).
 *
 * Note [Handle values]: handle values are never handed out twice in a
 * process, so a stale value (released, or from a disposed process) is always
 * an error, never somebody else's memory. A generational handle table
 * (src/util/handle-table.ts) gives them: a reused slot carries a new
 * generation in the value's high part.
 */
export class AllocationBook {
  /** Allocations alive in this process (refCount > 0), by handle value (Note [Handle values]). */
  readonly #handles = new GenerationalHandleTable<PhysicalAllocation>();
  /** Allocations whose last reference went but whose backend release failed (Note [Points of no return]). */
  readonly #unreleased = new Set<PhysicalAllocation>();

  constructor(
    readonly owner: Runtime,
    readonly backend: Backend,
    readonly sharing: SharingBook,
    /** Runs a step whose failure is reported, not thrown (Runtime.quietly). */
    readonly quietly: (step: () => void) => void,
  ) {}

  /** Live handles. */
  get size(): number {
    return this.#handles.size;
  }

  values(): IterableIterator<PhysicalAllocation> {
    return this.#handles.values();
  }

  /** The allocation behind a valid handle value. */
  get(handle: number): PhysicalAllocation | undefined {
    const a = this.#handles.get(handle);
    return a !== undefined && a[HANDLE_REFS] > 0 ? a : undefined;
  }

  /** Create memory in the backend and hand out a handle to it; the arguments are checked first. */
  create(
    size: number,
    props: AllocationProperties,
    origin: PhysicalAllocation['origin'],
  ): PhysicalAllocation {
    if (!isCount(size) || size === 0) throw vmmError('invalid-value', `size ${size} is not positive`);
    const { location } = props;
    if (location.type === 'device') this.owner.checkDevice(location.id);
    else if (location.type !== 'host' || !isCount(location.id)) {
      throw vmmError('invalid-value', `bad location ${JSON.stringify(location)}`);
    }
    return this.adopt(this.backend.create(size, props), size, props, origin);
  }

  /** A new handle value for memory the backend now holds. */
  adopt(
    backendHandle: number,
    size: number | undefined,
    props: AllocationProperties,
    origin: PhysicalAllocation['origin'],
  ): PhysicalAllocation {
    const a = new PhysicalAllocation(this.#handles.peek(), size, props, backendHandle, origin);
    a[OWNER] = this.owner;
    this.#handles.add(a);
    return a;
  }

  /** Throws invalid-handle unless `a` is a live handle of this process. */
  check(a: PhysicalAllocation): void {
    if (a[OWNER] !== this.owner || a[HANDLE_REFS] === 0) {
      throw vmmError('invalid-handle', `handle ${a.id} is not valid`);
    }
  }

  /** Drop one handle reference; the memory goes when nothing (handle or mapping) holds it. */
  release(a: PhysicalAllocation): void {
    this.check(a);
    if (a[HANDLE_REFS] === 1 && a[MAP_REFS] === 0) this.giveBack(a);
    else a[HANDLE_REFS]--;
  }

  /**
   * Release the memory of an allocation whose last reference is going: the
   * backend first (if it refuses, nothing changed), then the books. Freeing
   * the exporter's memory withdraws its shareable tokens (ACL's
   * aclrtFreePhysical does); a token that cannot be withdrawn is reported.
   */
  giveBack(a: PhysicalAllocation): void {
    this.backend.release(a.backendHandle);
    a[HANDLE_REFS] = 0;
    a[MAP_REFS] = 0;
    a[OWNER] = undefined;
    this.#handles.remove(a.id);
    if (this.#unreleased.size > 0) this.#unreleased.delete(a);
    this.sharing.withdrawTokens(a, this.quietly);
  }

  /** Keep memory whose release failed after a point of no return, for dispose to try again. */
  holdUnreleased(a: PhysicalAllocation): void {
    this.#unreleased.add(a);
  }

  /** The memory held that way, a copy. */
  unreleased(): PhysicalAllocation[] {
    return [...this.#unreleased];
  }
}
