/** hipMemGenericAllocationHandle_t values and the hipMemAllocationProp each one reports (GenericAllocation::GetProperties). */
import type { PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { toCount } from '../common/args.js';
import * as C from './constants.js';
import type { HipHandle, hipMemAllocationProp } from './structs.js';

/**
 * Note [HIP handle lifetime]: HIP keeps one reference count per
 * GenericAllocation (1 at create/import, +1 per map and retain, -1 per
 * release and per unmapped chunk), which is core's PhysicalAllocation.refCount.
 * One difference stays: core invalidates the handle value once every handle
 * reference is released, even while mappings keep the memory alive; in HIP
 * the pointer stays usable (strictly, using it is undefined behaviour).
 */
export class HipAllocations {
  /** The hipMemAllocationProp each allocation reports, as given at create (or made at import). */
  readonly #props = new WeakMap<PhysicalAllocation, hipMemAllocationProp>();

  constructor(readonly runtime: Runtime) {}

  /** The live allocation a handle value (core's id) names, or undefined. */
  allocation(handle: HipHandle): PhysicalAllocation | undefined {
    const id = toCount(handle ?? 0);
    return id <= 0 ? undefined : this.runtime.allocation(id);
  }

  /** Keep the prop a create was given (a copy: the caller's object may change). */
  created(a: PhysicalAllocation, prop: hipMemAllocationProp): void {
    this.#props.set(a, copyProp(prop));
  }

  /** What an imported handle reports: pinned, the import's handle type, where the memory lives. */
  imported(a: PhysicalAllocation, handleType: number): void {
    const { location } = a.props;
    this.#props.set(a, {
      type: C.hipMemAllocationTypePinned,
      requestedHandleTypes: handleType,
      location: {
        type: location.type === 'device' ? C.hipMemLocationTypeDevice : C.hipMemLocationTypeHost,
        id: location.type === 'device' ? location.id : 0,
      },
    });
  }

  /** What GenericAllocation::GetProperties reports: the prop given at create (or made at import). */
  propsOf(a: PhysicalAllocation): hipMemAllocationProp {
    const known = this.#props.get(a);
    if (known !== undefined) return known;
    const { location, handleTypes, uncached } = a.props;
    return {
      type: uncached ? C.hipMemAllocationTypeUncached : C.hipMemAllocationTypePinned,
      requestedHandleTypes: handleTypes,
      location: {
        type: location.type === 'device' ? C.hipMemLocationTypeDevice : C.hipMemLocationTypeHost,
        id: location.type === 'device' ? location.id : 0,
      },
    };
  }

  /** A copy of propsOf for the caller's box, every field filled. */
  reported(a: PhysicalAllocation): hipMemAllocationProp {
    return copyProp(this.propsOf(a));
  }
}

function copyProp(p: hipMemAllocationProp): hipMemAllocationProp {
  return {
    type: p.type,
    requestedHandleTypes: p.requestedHandleTypes ?? C.hipMemHandleTypeNone,
    location: { type: p.location.type, id: p.location.id },
    win32HandleMetaData: p.win32HandleMetaData ?? 0n,
    allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0, ...p.allocFlags },
  };
}
