/** ACL's physical memory: aclrtMallocPhysical's properties, handles, granularity (CANN's acl layer checks first). */
import type { PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { HandleType, type Location } from '../../core/types.js';
import { isMultipleOf } from '../../util/integers.js';
import {
  type Box,
  isBox,
  isNull,
  isStruct,
  LOCATION_SHAPE,
  readStruct,
  type Size,
  type StructShape,
  show,
  toCount,
  toInt,
  writeBox,
} from '../common/args.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import type { aclrtPhysicalMemProp, Pointer } from './structs.js';

const GiB = 1024 * 1024 * 1024;

/** aclrtPhysicalMemProp's fields, for the one read of a caller's struct. */
const PHYSICAL_MEM_PROP_SHAPE: StructShape = [
  'handleType',
  'allocationType',
  'memAttr',
  ['location', LOCATION_SHAPE],
  'reserve',
];

/** DDR attributes that CANN accepts only for host locations. */
const DDR_MEM_ATTRS: ReadonlySet<number> = new Set([
  C.ACL_DDR_MEM_HUGE,
  C.ACL_DDR_MEM_NORMAL,
  C.ACL_DDR_MEM_P2P_HUGE,
  C.ACL_DDR_MEM_P2P_NORMAL,
]);
/** The 1 GiB page attributes, whose granularity is 1 GiB. */
const HUGE1G_MEM_ATTRS: ReadonlySet<number> = new Set([
  C.ACL_HBM_MEM_HUGE1G,
  C.ACL_HBM_MEM_P2P_HUGE1G,
  C.ACL_MEM_HUGE1G,
  C.ACL_MEM_P2P_HUGE1G,
]);
/** Attributes CANN's aclrtMallocPhysical knows (memAttrHandlers); others answer ACL_ERROR_INVALID_PARAM. */
const KNOWN_MEM_ATTRS: ReadonlySet<number> = new Set([
  ...DDR_MEM_ATTRS,
  ...HUGE1G_MEM_ATTRS,
  C.ACL_HBM_MEM_HUGE,
  C.ACL_HBM_MEM_NORMAL,
  C.ACL_HBM_MEM_P2P_HUGE,
  C.ACL_HBM_MEM_P2P_NORMAL,
  C.ACL_MEM_NORMAL,
  C.ACL_MEM_HUGE,
  C.ACL_MEM_P2P_NORMAL,
  C.ACL_MEM_P2P_HUGE,
]);

export class AclPhysicalMemory {
  /** memAttr given at aclrtMallocPhysical, for aclrtMemGetAllocationPropertiesFromHandle. */
  readonly #memAttrs = new WeakMap<PhysicalAllocation, number>();

  constructor(
    readonly runtime: Runtime,
    readonly codes: AclCodes,
  ) {}

  /** The live allocation a handle (core's id) names, or undefined. */
  allocation(handle: Pointer): PhysicalAllocation | undefined {
    const id = toCount(handle ?? 0);
    return id <= 0 ? undefined : this.runtime.allocation(id);
  }

  /** A handle core just made (create, retain, import) to the caller's box, or released again if it refuses. */
  handOut(
    handle: Box<bigint>,
    make: () => PhysicalAllocation,
    kept?: (a: PhysicalAllocation) => void,
  ): number {
    return this.codes.handOut(
      handle,
      make,
      (a) => BigInt(a.id),
      (a) => this.runtime.release(a),
      () => this.codes.unwritable(),
      kept,
    );
  }

  /** The handle's allocation, or the refusal of a handle this process does not hold. */
  live(handle: Pointer): PhysicalAllocation | number {
    return (
      this.allocation(handle) ?? this.codes.bad(C.ACL_ERROR_RT_INVALID_HANDLE, `no handle ${show(handle)}`)
    );
  }

  mallocPhysical(handle: Box<bigint>, size: Size, propArg: aclrtPhysicalMemProp, flags: Size): number {
    // One read of each field, into a plain copy (Note [Untrusted arguments]).
    const prop = readStruct<aclrtPhysicalMemProp>(propArg, PHYSICAL_MEM_PROP_SHAPE);
    if (!isBox(handle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    if (prop === undefined)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'prop is NULL or cannot be read');
    const n = toCount(size);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    if (toCount(flags) !== 0)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const checked = this.#checkProp(prop);
    if (typeof checked === 'number') return checked;
    // CANN's reference words the granularity first as advice (align "to save memory"), then as a
    // rule: the granularity is fixed, "so size currently must be 2M-aligned". The rule is kept:
    // aclrtMapMem must map exactly this size, so a silent round-up would break that call instead.
    const g = this.#granularity(prop.memAttr, checked);
    if (!isMultipleOf(n, g))
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is not a multiple of ${g}`);
    // Any device memory may be exported by token (aclrtMemExportToShareableHandle); a token is a
    // POSIX fd underneath over the NVIDIA driver (Note [Token registry]), so it is created exportable.
    const handleTypes = checked.type === 'device' ? HandleType.PosixFd : HandleType.None;
    return this.handOut(
      handle,
      () => this.runtime.create(n, { location: checked, handleTypes, uncached: false }),
      (a) => this.#memAttrs.set(a, prop.memAttr),
    );
  }

  /** Drop this handle; memory still mapped lives on until its last aclrtUnmapMem (core's refcount). */
  freePhysical(handle: Pointer): number {
    if (isNull(handle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    const a = this.live(handle);
    if (typeof a === 'number') return a;
    return this.codes.run(() => this.runtime.release(a));
  }

  granularity(propArg: aclrtPhysicalMemProp, option: number, granularity: Box<number>): number {
    const prop = readStruct<aclrtPhysicalMemProp>(propArg, PHYSICAL_MEM_PROP_SHAPE);
    if (prop === undefined)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'prop is NULL or cannot be read');
    if (!isBox(granularity)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'granularity is NULL');
    const location = this.#checkLocationAndAttr(prop);
    if (typeof location === 'number') return location;
    const opt = toInt(option);
    if (opt !== C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM && opt !== C.ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `option ${show(option)}`);
    return writeBox(granularity, this.#granularity(prop.memAttr, location, opt))
      ? C.ACL_SUCCESS
      : this.codes.unwritable();
  }

  properties(handle: Pointer, prop: Box<aclrtPhysicalMemProp>): number {
    if (isNull(handle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    if (!isBox(prop)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'prop is NULL');
    const a = this.live(handle);
    if (typeof a === 'number') return a;
    const { location } = a.props;
    return writeBox(prop, {
      handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: this.#memAttrs.get(a) ?? C.ACL_HBM_MEM_HUGE,
      location: {
        id: location.id,
        type: location.type === 'device' ? C.ACL_MEM_LOCATION_TYPE_DEVICE : C.ACL_MEM_LOCATION_TYPE_HOST,
      },
      reserve: 0n,
    })
      ? C.ACL_SUCCESS
      : this.codes.unwritable();
  }

  /** Validate prop in CANN's order (acl layer: handleType, allocationType, location type, memAttr); a code if bad. */
  #checkProp(prop: aclrtPhysicalMemProp): Location | number {
    if (prop.handleType !== C.ACL_MEM_HANDLE_TYPE_NONE)
      return this.codes.bad(
        C.ACL_ERROR_INVALID_PARAM,
        `handleType ${show(prop.handleType)} must be ACL_MEM_HANDLE_TYPE_NONE`,
      );
    if (prop.allocationType !== C.ACL_MEM_ALLOCATION_TYPE_PINNED)
      return this.codes.bad(
        C.ACL_ERROR_INVALID_PARAM,
        `allocationType ${show(prop.allocationType)} must be PINNED`,
      );
    return this.#checkLocationAndAttr(prop);
  }

  #checkLocationAndAttr(prop: aclrtPhysicalMemProp): Location | number {
    const loc = prop.location;
    if (!isStruct(loc)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'prop.location is missing');
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_UNREGISTERED)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'location type ACL_MEM_LOCATION_TYPE_UNREGISTERED');
    const isDevice = loc.type === C.ACL_MEM_LOCATION_TYPE_DEVICE;
    if (isDevice && DDR_MEM_ATTRS.has(prop.memAttr))
      return this.codes.bad(
        C.ACL_ERROR_INVALID_PARAM,
        `memAttr ${show(prop.memAttr)} is for host locations only`,
      );
    if (!KNOWN_MEM_ATTRS.has(prop.memAttr))
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `memAttr ${show(prop.memAttr)} is not supported`);
    if (isDevice) {
      if (!this.runtime.isDevice(loc.id))
        return this.codes.bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(loc.id)}`);
      return { type: 'device', id: loc.id };
    }
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_HOST) return { type: 'host', id: 0 };
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_HOST_NUMA) {
      const id = toCount(loc.id);
      if (id < 0) return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `NUMA node ${show(loc.id)}`);
      return { type: 'host', id };
    }
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_MANAGED)
      return this.codes.bad(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 'managed memory has no physical handle');
    return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `location type ${show(loc.type)}`);
  }

  /** Size and address granularity: 1 GiB for the HUGE1G attributes, the device's granularity (2 MiB) otherwise. */
  #granularity(memAttr: number, location: Location, option = C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM): number {
    if (HUGE1G_MEM_ATTRS.has(memAttr)) return GiB;
    const d = this.runtime.devices[location.type === 'device' ? location.id : 0];
    return Math.max(
      option === C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM ? d.minimumGranularity : d.recommendedGranularity,
      this.runtime.vaGranularity,
    );
  }
}
