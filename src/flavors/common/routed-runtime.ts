import { ERROR_KINDS, type ErrorKind, vmmError } from '../../core/errors.js';
import type { Mapping, PhysicalAllocation, Reservation } from '../../core/objects.js';
import type { AccessDescriptor, MallocOptions, ReserveOptions, Runtime } from '../../core/runtime.js';
import type { Access, AllocationProperties } from '../../core/types.js';
import type { ErrorTable } from './error-table.js';

/**
 * Note [A runtime through a front end]
 * The allocator models (src/alloc) are written against core's Runtime. To
 * replay a snapshot on a vendor's front end (an NPU snapshot on ACL, a ROCm
 * one on HIP), each VMM operation an allocator makes must be that vendor's
 * own C call, with its argument checks, its codes and its layers in the
 * trace, so that breakpoints and `vmmkit inspect` see the program seed 1 and
 * seed 2 describe. `routeThrough` wraps a runtime so that the nine
 * operations allocators make (reserve, create, map, setAccess, unmap,
 * release, free, malloc, mfree) go through a VendorRoute written beside its
 * front end (acl/runtime-route.ts, hip/runtime-route.ts); every other member
 * (devices, memoryInfo, synchronize, quietly, describe, the lookups) is the
 * runtime's own, which the front end sits on. A call answering other than
 * success becomes the VmmError of the kind the vendor's error table gives
 * that code (the first such kind in ERROR_KINDS' order; out-of-memory has a
 * code of its own in every table), so an allocator meets an OOM from the
 * front end as it meets one from core. `dispose` ends the front end's
 * process, as a program's exit does.
 */

/** One vendor's C calls for the operations an allocator makes; each returns the vendor's code. */
export interface VendorRoute {
  readonly vendor: string;
  readonly table: ErrorTable;
  readonly success: number;
  /** The reserved range's base in `base.value`. */
  reserve(base: { value: bigint }, size: number, options: ReserveOptions): number;
  /** The new handle (core's allocation id) in `handle.value`. */
  create(handle: { value: bigint }, size: number, props: AllocationProperties): number;
  map(va: number, size: number, handle: number, offset: number): number;
  /** Grant `descriptors` over [va, va + size); a vendor whose map already granted them makes no call. */
  setAccess(va: number, size: number, descriptors: readonly AccessDescriptor[], host?: Access): number;
  unmap(va: number, size: number): number;
  release(handle: number): number;
  free(base: number, size: number): number;
  /** The one-step path's pointer in `ptr.value`. */
  malloc(ptr: { value: bigint }, device: number, size: number, options: MallocOptions): number;
  mfree(va: number): number;
  /** The vendor's text for a code, for the error's message. */
  describe(code: number): string;
  /** End the front end's process. Never throws. */
  dispose(): void;
}

/**
 * A route's "make `device` current" (what a one-step malloc needs), asked of
 * the vendor only when another device is current: the runtime asks before
 * every malloc, the program it stands for would set it once.
 */
export function currentDevice(
  success: number,
  makeCurrent: (device: number) => number,
): (device: number) => number {
  let current = -1;
  return (device) => {
    if (device === current) return success;
    const code = makeCurrent(device);
    if (code === success) current = device;
    return code;
  };
}

/** `runtime`, with the allocators' VMM operations made through `route` (Note [A runtime through a front end]). */
export function routeThrough(runtime: Runtime, route: VendorRoute): Runtime {
  const kinds = kindsOf(route.table);
  const check = (call: string, code: number): void => {
    if (code === route.success) return;
    const kind = kinds.get(code) ?? 'invalid-value';
    throw vmmError(kind, `${route.vendor} ${call} answered ${code} (${route.describe(code)})`);
  };
  const found = <T>(what: string, value: T | undefined): T => {
    if (value === undefined) throw vmmError('invalid-value', `${route.vendor}: ${what}`);
    return value;
  };
  const routed = {
    reserve(size: number, options: ReserveOptions = {}): Reservation {
      const base = { value: 0n };
      check('reserve', route.reserve(base, size, options));
      const va = Number(base.value);
      return found(`no reservation at ${va}`, runtime.reservationAt(va));
    },
    create(size: number, props: AllocationProperties): PhysicalAllocation {
      const handle = { value: 0n };
      check('create', route.create(handle, size, props));
      const id = Number(handle.value);
      return found(`no allocation ${id}`, runtime.allocation(id));
    },
    map(va: number, size: number, a: PhysicalAllocation, offset = 0): Mapping {
      check('map', route.map(va, size, a.id, offset));
      return found(`nothing mapped at ${va}`, runtime.mappingAt(va));
    },
    setAccess(va: number, size: number, descriptors: readonly AccessDescriptor[], host?: Access): void {
      check('setAccess', route.setAccess(va, size, descriptors, host));
    },
    unmap(va: number, size: number): void {
      check('unmap', route.unmap(va, size));
    },
    release(a: PhysicalAllocation): void {
      check('release', route.release(a.id));
    },
    free(r: Reservation): void {
      check('free', route.free(r.base, r.size));
    },
    malloc(device: number, size: number, options: MallocOptions = {}): Reservation {
      const ptr = { value: 0n };
      check('malloc', route.malloc(ptr, device, size, options));
      const va = Number(ptr.value);
      return found(`no allocation at ${va}`, runtime.reservationContaining(va));
    },
    mfree(va: number): void {
      check('mfree', route.mfree(va));
    },
    dispose(): void {
      route.dispose();
    },
  };
  // The runtime's own members, bound once each, so its private fields are its own.
  const own = new Map<PropertyKey, unknown>();
  return new Proxy(runtime, {
    get(target, key) {
      if (Object.hasOwn(routed, key)) return routed[key as keyof typeof routed];
      let v = own.get(key);
      if (v !== undefined) return v;
      v = Reflect.get(target, key, target);
      if (typeof v === 'function') {
        v = v.bind(target);
        own.set(key, v);
      }
      return v;
    },
  });
}

/** Each code of a vendor's table, with the first kind that answers it. */
function kindsOf(table: ErrorTable): Map<number, ErrorKind> {
  const kinds = new Map<number, ErrorKind>();
  for (const kind of ERROR_KINDS) if (!kinds.has(table[kind])) kinds.set(table[kind], kind);
  return kinds;
}
