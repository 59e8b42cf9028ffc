/** ACL's virtual addresses, mappings and access (aclrtReserveMemAddress to aclrtMemRetainAllocationHandle). */
import type { Mapping, Reservation } from '../../core/objects.js';
import type { AccessDescriptor, Runtime } from '../../core/runtime.js';
import { Transaction } from '../../core/transaction.js';
import { Access, type Location } from '../../core/types.js';
import { isMultipleOf } from '../../util/integers.js';
import {
  ACCESS_DESC_SHAPE,
  type Box,
  isBox,
  isNull,
  isStruct,
  LOCATION_SHAPE,
  readList,
  readStruct,
  type Size,
  show,
  toCount,
  writeBox,
  writeOrTakeBack,
} from '../common/args.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import type { AclDevices } from './devices.js';
import type { AclPhysicalMemory } from './physical-memory.js';
import type { aclrtMemAccessDesc, aclrtMemLocation, Pointer } from './structs.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * Note [ACL's size-less calls]: aclrtUnmapMem(virPtr) and
 * aclrtReleaseMemAddress(virPtr) take no size. The flavor looks the size up
 * in core (mappingAt / reservationAt) and requires virPtr to be exactly the
 * start of what aclrtMapMem / aclrtReserveMemAddress returned.
 *
 * Note [ACL map grants access]
 * Seed 2's seven steps go from aclrtMapMem straight to the task, with no
 * access step, and CANN's references agree: the aclrtMemMapNoAccess entry
 * says that, unlike aclrtMapMem, it leaves the device without access until
 * aclrtMemSetAccess. So aclrtMapMem grants read-write to the memory's own
 * device (the device of the handle's location; for host memory, the current
 * device when one is set) in the same call, all or nothing: the map and the
 * grant are one transaction (Note [Transactions] in core), a failed grant
 * unmaps again. Other devices still need aclrtMemSetAccess. Core keeps
 * CUDA's rule (a mapping starts with no access); the grant is the flavor's.
 *
 * Note [ACL host access]
 * aclrtMemSetAccess and aclrtMemGetAccess take HOST or DEVICE locations
 * (CANN: for HOST the id is ignored). The simulated machine has no host
 * path into device mappings (nothing on the host dereferences a device
 * address here; copies go through aclrtMemcpy), so a HOST grant is recorded
 * per mapping and reported back by aclrtMemGetAccess, and changes no copy.
 * A mapping made again starts without it (the record is on the Mapping
 * object, which a new map replaces).
 */
export class AclVmm {
  constructor(
    readonly runtime: Runtime,
    readonly codes: AclCodes,
    readonly devices: AclDevices,
    readonly physical: AclPhysicalMemory,
  ) {}

  // The flavor's own records beside core's mappings.
  /** What each reservation's mappings hold, while it has any (Note [ACL reservation holdings]). */
  readonly #holdings = new WeakMap<Reservation, Holding>();
  /** Mappings the host was granted READWRITE on (Note [ACL host access]). */
  readonly #hostAccess = new WeakSet<Mapping>();

  /**
   * size only needs to be non-zero: it rounds up to the granularity (Note
   * [ACL reservation sizes]). alignment is reserved (0); flags 0 or 1 (the
   * page-size flag older references define and newer ones call reserved,
   * recommending 0: both are accepted, for compatibility). expectPtr NULL
   * lets the runtime choose; a non-NULL one is taken exactly or the call
   * fails: CANN's reference, runtime and driver all treat it as a fixed
   * address, not a hint (Note [ACL expectPtr]).
   */
  reserve(virPtr: Box<bigint>, size: Size, alignment: Size, expectPtr: Pointer, flags: Size): number {
    if (!isBox(virPtr)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    const f = toCount(flags);
    if (f !== 0 && f !== 1)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} must be 0 or 1`);
    if (toCount(alignment) !== 0)
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `alignment ${show(alignment)} is reserved and must be 0`,
      );
    const g = this.runtime.vaGranularity;
    const rounded = Math.ceil(n / g) * g;
    if (!Number.isSafeInteger(rounded))
      return this.codes.bad(C.ACL_ERROR_RT_MEMORY_ALLOCATION, `size ${n} is past any address space`);
    const hint = toCount(expectPtr ?? 0);
    const align = hint === 0 ? g : expectPtrAlignment(n, g);
    if (hint < 0 || !isMultipleOf(hint, align))
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `expectPtr ${hint < 0 ? show(expectPtr) : `0x${hint.toString(16)}`} is not ${align}-aligned, as a reservation of ${n} bytes needs`,
      );
    let refused = C.ACL_SUCCESS;
    const code = this.codes.run(() => {
      const r = this.runtime.reserve(rounded, { hint });
      if (hint !== 0 && r.base !== hint) {
        this.runtime.free(r);
        refused = this.codes.bad(
          C.ACL_ERROR_RT_PARAM_INVALID,
          `expectPtr 0x${hint.toString(16)} is not free`,
        );
      } else if (!writeOrTakeBack(virPtr, BigInt(r.base), () => this.runtime.free(r))) {
        refused = this.codes.unwritable();
      }
    });
    return code === C.ACL_SUCCESS ? refused : code;
  }

  releaseAddress(virPtr: Pointer): number {
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'vmm')
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `0x${va.toString(16)} is not a reserved address`);
    // CANN: unmap first. Nothing is released while a mapping remains.
    if (r.mappingCount > 0)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `${r.mappingCount} mapping(s) remain in the range`);
    return this.codes.run(() => this.runtime.free(r));
  }

  /** aclrtMapMem (grant) and aclrtMemMapNoAccess: aclrtMapMem's rules for both (Note [ACL map grants access]). */
  map(virPtr: Pointer, size: Size, offset: Size, handle: Pointer, flags: Size, grant: boolean): number {
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    if (isNull(handle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    const n = toCount(size);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    if (toCount(flags) !== 0)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const a = this.physical.live(handle);
    if (typeof a === 'number') return a;
    if (toCount(offset) !== 0)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `offset ${show(offset)} must be 0`);
    if (n !== a.size)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is not the physical size ${a.size}`);
    const r = this.runtime.reservationContaining(va);
    if (r !== undefined && r.origin !== 'vmm')
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, 'the address belongs to aclrtMalloc');
    // One reservation may not bind handles of two devices, nor mix created and imported handles
    // (Note [ACL reservation holdings]).
    const held = r !== undefined && r.mappingCount > 0 ? this.#holdings.get(r) : undefined;
    if (held !== undefined) {
      if (!sameLocation(held.location, a.props.location))
        return this.codes.bad(
          C.ACL_ERROR_RT_PARAM_INVALID,
          'the reservation already holds memory of another device',
        );
      if (held.imported !== (a.origin === 'imported'))
        return this.codes.bad(
          C.ACL_ERROR_RT_PARAM_INVALID,
          'the reservation may not hold both allocated and imported handles',
        );
    }
    const own = a.props.location.type === 'device' ? a.props.location.id : this.devices.current;
    return this.codes.run(() =>
      Transaction.run(this.codes.report, (tx) => {
        const m = this.runtime.map(va, n, a, 0);
        tx.undo(() => this.runtime.unmap(va, n));
        if (grant && this.runtime.isDevice(own))
          this.runtime.setAccess(va, n, [{ device: own, access: Access.ReadWrite }]);
        if (held === undefined)
          this.#holdings.set(m.reservation, {
            location: a.props.location,
            imported: a.origin === 'imported',
          });
      }),
    );
  }

  unmap(virPtr: Pointer): number {
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const m = this.#mappingStartingAt(va);
    if (m === undefined)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `nothing is mapped at 0x${va.toString(16)}`);
    return this.codes.run(() => this.runtime.unmap(m.va, m.size));
  }

  /**
   * virPtr and size must be exactly one aclrtMapMem's, flags READWRITE (the
   * only value CANN's aclrtMemAccessDesc documents as supported; NONE and
   * READ answer ACL_ERROR_RT_PARAM_INVALID), locations HOST or DEVICE
   * (Note [ACL host access]).
   */
  setAccess(virPtr: Pointer, size: Size, desc: readonly aclrtMemAccessDesc[], count: Size): number {
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    const k = toCount(count);
    // The caller's list read once (Note [Untrusted arguments]).
    const list = readList(desc, Math.max(k, 0));
    if (list === 'not-array')
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'desc is NULL or cannot be read');
    if (k <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `count ${show(count)} must be positive`);
    if (list.length < k)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `desc holds fewer than ${k} entries`);
    const descriptors: AccessDescriptor[] = [];
    let host = false;
    for (let i = 0; i < k; i++) {
      const d = readStruct<aclrtMemAccessDesc>(list[i], ACCESS_DESC_SHAPE);
      if (!isStruct(d) || !isStruct(d.location))
        return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `desc[${i}] cannot be read`);
      if (d.flags !== C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE)
        return this.codes.bad(
          C.ACL_ERROR_RT_PARAM_INVALID,
          `desc[${i}].flags ${show(d.flags)} must be READWRITE`,
        );
      if (d.location.type === C.ACL_MEM_LOCATION_TYPE_HOST) {
        host = true;
        continue;
      }
      const device = this.#accessDevice(d.location);
      if (typeof device !== 'number') return device.refused;
      descriptors.push({ device, access: Access.ReadWrite });
    }
    const m = this.#mappingStartingAt(va);
    if (m === undefined)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `nothing is mapped at 0x${va.toString(16)}`);
    if (m.size !== n)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is not the mapped size ${m.size}`);
    return this.codes.run(() => {
      // Host-located memory: the HOST grant is the CPU's (Note [Host access]), with the devices' in one call.
      const cpu = host && m.allocation.props.location.type === 'host';
      if (cpu || descriptors.length > 0)
        this.runtime.setAccess(va, n, descriptors, cpu ? Access.ReadWrite : undefined);
      if (host) this.#hostAccess.add(m);
    });
  }

  /** The mapping's access from one device, or from the host (Note [ACL host access]). */
  getAccess(virPtr: Pointer, locationArg: aclrtMemLocation, flag: Box<number>): number {
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const location = readStruct<aclrtMemLocation>(locationArg, LOCATION_SHAPE);
    if (location === undefined)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'location is NULL or cannot be read');
    if (!isBox(flag)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'flag is NULL');
    const isHost = location.type === C.ACL_MEM_LOCATION_TYPE_HOST;
    const device = isHost ? 0 : this.#accessDevice(location);
    if (typeof device !== 'number') return device.refused;
    const m = this.#mappingStartingAt(va);
    if (m === undefined)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `nothing is mapped at 0x${va.toString(16)}`);
    const access = isHost
      ? this.#hostAccess.has(m)
        ? C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE
        : C.ACL_RT_MEM_ACCESS_FLAGS_NONE
      : m.accessOf(device);
    return writeBox(flag, access) ? C.ACL_SUCCESS : this.codes.unwritable();
  }

  /** A new reference to the handle mapped at any address inside a mapping; undo with aclrtFreePhysical. */
  retain(virPtr: Pointer, handle: Box<bigint>): number {
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    if (!isBox(handle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    return this.physical.handOut(handle, () => this.runtime.retain(va));
  }

  /** The device ordinal an access location names, or the refusal. */
  #accessDevice(location: aclrtMemLocation): number | { readonly refused: number } {
    if (location.type === C.ACL_MEM_LOCATION_TYPE_DEVICE) {
      if (this.runtime.isDevice(location.id)) return location.id;
      return { refused: this.codes.bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(location.id)}`) };
    }
    const refused =
      location.type === C.ACL_MEM_LOCATION_TYPE_HOST
        ? this.codes.bad(
            C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            'host access to device mappings is not simulated',
          )
        : this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `location type ${show(location.type)}`);
    return { refused };
  }

  #mappingStartingAt(va: number): Mapping | undefined {
    const m = this.runtime.mappingAt(va);
    return m !== undefined && m.va === va && m.reservation.origin === 'vmm' ? m : undefined;
  }
}

/**
 * Note [ACL reservation sizes]
 * CANN's aclrtReserveMemAddress documents one size rule: size != 0. Real
 * allocators rely on it: an NPU caching allocator probes the call at start-up
 * with 512 bytes and flags 1, and takes anything but success or
 * feature-not-supported as a failure. A driver can only hand out whole pages
 * of address space, so the flavor reserves the size rounded up to the VA
 * granularity (2 MiB on the 910B): core's reservation is that rounded size,
 * the caller may map only what lies inside it (a mapping is a whole
 * granule), and aclrtReleaseMemAddress, which takes no size, releases the
 * whole of it. A size whose rounding leaves the safe integers answers
 * ACL_ERROR_RT_MEMORY_ALLOCATION, as no address space is that large.
 *
 * Note [ACL expectPtr]
 * Issue 11 calls expectPtr "a hint"; CANN's own sources say it is not one,
 * so a non-NULL expectPtr is taken exactly or the call fails. The evidence,
 * read for this (2026-12-01):
 *  - CANN's API reference for aclrtReserveMemAddress (hiascend.com, CANN
 *    8.x and 9.0; the same text in the open CANN runtime's
 *    docs/zh/api_ref/11-04_virtual_memory_management.md): NULL lets the
 *    system choose; non-NULL is a start the user specifies, inside the
 *    16T-24T window, which must not be occupied and must be aligned (a power
 *    of two below 1 GiB, 1 GiB above), "otherwise the reservation fails and
 *    the interface returns an error"; an experimental feature, not for
 *    production; the 950 takes NULL only. The 8.0 reference and acl_rt.h
 *    say expectPtr "must be nullptr".
 *  - The runtime passes it unchanged (aclrtReserveMemAddressImpl ->
 *    rtReserveMemAddress -> NpuDriver::ReserveMemAddress) to the driver's
 *    halMemAddressReserve, whose header calls a non-NULL addr a "specified
 *    address reserve" (2 MiB aligned; 1 GiB past 512 MiB, else the size's
 *    power of two) and says a just-freed, still cached address "fails to be
 *    applied for": no fallback to another address anywhere on the path.
 *  - Callers: torch_npu's expandable segments (device and host), DeepLink's
 *    Ascend segments and the CANN samples all pass NULL; none was found that
 *    passes an address and tolerates another one.
 * So: NULL -> the runtime's choice; non-NULL -> aligned as the driver asks
 * (the size's power of two, at least the 2 MiB granularity; 1 GiB past
 * 512 MiB) and free, taken exactly, else ACL_ERROR_RT_PARAM_INVALID (the
 * driver's DRV_ERROR_INVALID_VALUE, as CANN's error table converts it). Not
 * checked: the 16T-24T window (the simulated and the H200's address spaces
 * lie elsewhere).
 */

/**
 * Note [ACL reservation holdings]
 * aclrtMapMem refuses a handle whose device (or created/imported origin)
 * differs from what the reservation already holds. Finding that out by
 * walking the reservation's mappings costs O(mappings) per map (4,000 maps
 * into one reservation were 13x slower than CUDA's), so the flavor records
 * each reservation's holding when its first mapping is made: one WeakMap
 * lookup per map. The record is read only while core says the reservation
 * has mappings (Reservation.mappingCount > 0), so unmapping its last one
 * lifts the rule without any bookkeeping on unmap, and the next first
 * mapping writes a fresh record. Every mapping the flavor makes passed the
 * check, so all of a reservation's mappings share the recorded holding.
 */
interface Holding {
  readonly location: Location;
  readonly imported: boolean;
}

/**
 * The alignment CANN asks of a user-chosen start (halMemAddressReserve): 1 GiB
 * past 512 MiB, else the size's power of two, never below the granularity
 * (Note [ACL expectPtr]).
 */
function expectPtrAlignment(size: number, granularity: number): number {
  if (size > 512 * MiB) return GiB;
  let align = granularity;
  while (align < size) align *= 2;
  return align;
}

function sameLocation(a: Location, b: Location): boolean {
  return a.type === b.type && a.id === b.id;
}
