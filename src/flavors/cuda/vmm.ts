/** The CUDA driver's virtual memory management calls (cuMemAddressReserve to cuMemImportFromShareableHandle). */
import type { CUmemAccessDesc, CUmemAllocationProp, CUmemLocation } from '../../c-api/cuda-structs.js';
import { type ErrorKind, isVmmError } from '../../core/errors.js';
import type { Mapping, PhysicalAllocation } from '../../core/objects.js';
import type { AccessDescriptor, ReserveOptions, Runtime } from '../../core/runtime.js';
import { Transaction } from '../../core/transaction.js';
import type { Access } from '../../core/types.js';
import { isMultipleOf } from '../../util/integers.js';
import {
  AllocationPropReader,
  type BigIntMemo,
  type Box,
  isBox,
  isPowerOfTwo,
  isStruct,
  LOCATION_SHAPE,
  MAX_LIST_LENGTH,
  readStruct,
  type Size,
  toCount,
  toInt,
  writeBox,
} from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import * as C from './constants.js';
import type { CudaContexts } from './contexts.js';
import type { CUdeviceptr, CUhandle } from './handle-types.js';
import type { CudaHandles } from './handles.js';
import type { CudaSpans } from './spans.js';

/** A CUmemAccess_flags value (three comparisons: a Set's lookup costs several times that on the cycle). */
function isAccessFlags(x: unknown): x is Access {
  return (
    x === C.CU_MEM_ACCESS_FLAGS_PROT_NONE ||
    x === C.CU_MEM_ACCESS_FLAGS_PROT_READ ||
    x === C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
  );
}

/**
 * Note [No closures in the cycle]
 * The 2 MiB reserve / create / map / setAccess / unmap / release / free
 * cycle is benchmarked (bench/run.ts), so its calls allocate nothing they
 * need not: reserve, addressFree, create and release write out the few
 * steps of codes.handOut and codes.run instead of passing them closures,
 * which each call would allocate afresh. The rarer calls use the helpers.
 *
 * Note [Core first]
 * cuMemMap, cuMemUnmap and cuMemSetAccess accept more than core does (a map
 * past its reservation's end, an unmap or setAccess over holes), but their
 * common case is exactly core's operation: a map inside one reservation, an
 * unmap or setAccess over whole adjacent mappings. So while no span exists
 * (Note [Mappings past a reservation's end]) each hands its range to core
 * first, and only when core refuses the range itself (not-reserved,
 * not-mapped: it changed nothing, runtime.ts invariant 1) works out the
 * driver's wider answer. Core refuses cuMemAlloc memory there too, so the
 * common call makes no lookup of its own: one lookup of the range in all.
 */
export class CudaVmm {
  readonly #descriptors = new DescriptorCache();
  /** An unmap is being made again after a fault of queued work (#unmapAfterFault): no third try. */
  #unmappingAfterFault = false;
  /** CUmemAllocationProp arguments are read into this, not copied (Note [Property cache] in handles.ts). */
  readonly #prop = new AllocationPropReader();

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly report: (message: string, error?: unknown) => void,
    readonly contexts: CudaContexts,
    readonly handles: CudaHandles,
    readonly spans: CudaSpans,
    readonly addresses: BigIntMemo,
  ) {}

  granularity(granularity: Box<number>, prop: CUmemAllocationProp, option: number): number {
    // The box first: its Proxy traps could call back in and read into #prop.
    if (!isBox(granularity) || !this.#prop.read(prop)) return C.CUDA_ERROR_INVALID_VALUE;
    const opt = toInt(option);
    if (opt !== C.CU_MEM_ALLOC_GRANULARITY_MINIMUM && opt !== C.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    // The driver checks only the option: a bad device id, allocation type, location type or handle
    // type still answers 0 with the granularity (granularity.badDeviceId, .badAllocationType,
    // .badLocationType, .withHandleTypes, .hostNuma). The device named, else the current one, decides.
    const id = this.#prop.locationId as number;
    const named =
      this.#prop.locationIsStruct &&
      this.#prop.locationType === C.CU_MEM_LOCATION_TYPE_DEVICE &&
      this.runtime.isDevice(id);
    const d = this.runtime.devices[named ? id : Math.max(this.contexts.device, 0)];
    const value =
      opt === C.CU_MEM_ALLOC_GRANULARITY_MINIMUM ? d.minimumGranularity : d.recommendedGranularity;
    return writeBox(granularity, value) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  reserve(ptr: Box<bigint>, size: Size, alignment: Size, addr: CUdeviceptr, flags: number): number {
    const n = toCount(size);
    const align = toCount(alignment);
    // Not through the address memo: the hint (usually 0) would displace the pointer about to be returned.
    const hint = toCount(addr);
    const g = this.runtime.vaGranularity;
    if (!isBox(ptr) || align < 0 || hint < 0 || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    if (align !== 0 && !isPowerOfTwo(align)) return C.CUDA_ERROR_INVALID_VALUE;
    // A size past 2^53 that is a multiple of the granularity is simply too much VA (reserve.enormous2pow62).
    if (n < 0) return isLargeMultiple(size, g) ? C.CUDA_ERROR_OUT_OF_MEMORY : C.CUDA_ERROR_INVALID_VALUE;
    if (n === 0 || !isMultipleOf(n, g)) return C.CUDA_ERROR_INVALID_VALUE;
    // Documented as "a hint only", but a hint not aligned to the granularity, or to a larger requested
    // alignment, is refused (reserve.hintMisaligned, reserve.hintWithAlignment).
    if (hint !== 0 && !isMultipleOf(hint, Math.max(align, g))) return C.CUDA_ERROR_INVALID_VALUE;
    const options = align === 0 && hint === 0 ? NO_RESERVE_OPTIONS : { alignment: align, hint };
    // Note [No closures in the cycle]: codes.handOut's steps, written out.
    try {
      const r = this.runtime.reserve(n, options);
      if (writeBox(ptr, this.addresses.toBigInt(r.base))) return C.CUDA_SUCCESS;
      this.runtime.free(r);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  addressFree(ptr: CUdeviceptr, size: Size): number {
    const va = this.addresses.toNumber(ptr);
    const n = toCount(size);
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.size !== n || r.origin !== 'vmm' || this.spans.isHidden(r))
      return C.CUDA_ERROR_INVALID_VALUE;
    // Note [No closures in the cycle]: codes.run, written out.
    try {
      this.runtime.free(r);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  create(handle: Box<bigint>, size: Size, prop: CUmemAllocationProp, flags: number): number {
    // One read of each field, into the reader (Note [Untrusted arguments]), after the box, whose Proxy
    // traps could call back in and read into #prop; nothing after the read runs the caller's code.
    if (!isBox(handle) || !this.#prop.read(prop) || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const checked = this.handles.check(this.#prop);
    if (typeof checked === 'number') return checked;
    const n = toCount(size);
    const g =
      this.runtime.devices[checked.location.type === 'device' ? checked.location.id : 0].minimumGranularity;
    if (n <= 0 || !isMultipleOf(n, g)) return C.CUDA_ERROR_INVALID_VALUE;
    // Note [No closures in the cycle]: codes.handOut's steps, written out.
    try {
      const a = this.runtime.create(n, checked);
      this.handles.keepAllocFlags(a, this.#prop);
      if (writeBox(handle, this.handles.handleOf(a))) return C.CUDA_SUCCESS;
      this.runtime.release(a);
      return C.CUDA_ERROR_INVALID_VALUE;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  release(handle: CUhandle): number {
    // The driver crashes on a bogus or dead handle (release.bogusHandles); we answer INVALID_VALUE.
    const a = this.handles.allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    // Note [No closures in the cycle]: codes.run, written out.
    try {
      this.runtime.release(a);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return this.codes.code(e);
    }
  }

  map(ptr: CUdeviceptr, size: Size, offset: Size, handle: CUhandle, flags: number): number {
    const va = this.addresses.toNumber(ptr);
    const n = toCount(size);
    const off = toCount(offset);
    if (va <= 0 || n <= 0 || off < 0 || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.handles.allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    // The driver maps whole allocations only (one of unknown size: its first map tells it, Note [Foreign memory sizes]).
    if (off !== 0 || (a.sizeKnown && n !== a.size)) return C.CUDA_ERROR_NOT_SUPPORTED;
    if (this.spans.none) {
      // Note [Core first]: a map inside one reservation is core's map exactly.
      try {
        this.runtime.map(va, n, a, 0);
        return C.CUDA_SUCCESS;
      } catch (e) {
        if (!isKind(e, 'not-reserved')) return this.codes.code(e);
      }
    }
    // Only the start must lie in a reservation the program made (map.outsideAnyReservation,
    // alloc.mapOverAllocPointer); the rest may run past its end (Note [Mappings past a reservation's end]).
    const r = this.runtime.reservationContaining(va);
    if (r === undefined || r.origin !== 'vmm' || this.spans.isHidden(r)) return C.CUDA_ERROR_INVALID_VALUE;
    if (va + n > r.end) return this.spans.mapAcross(va, n, a);
    return this.codes.run(() => this.runtime.map(va, n, a, 0));
  }

  unmap(ptr: CUdeviceptr, size: Size): number {
    const va = this.addresses.toNumber(ptr);
    const n = toCount(size);
    if (va <= 0 || n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const end = va + n;
    if (this.spans.none) {
      // Note [Core first]: whole mappings, no hole, none of cuMemAlloc's: core's unmap exactly.
      try {
        this.runtime.unmap(va, n);
        return C.CUDA_SUCCESS;
      } catch (e) {
        if (isKind(e, 'device-fault')) return this.#unmapAfterFault(e, ptr, size);
        if (!isKind(e, 'not-mapped')) return this.codes.code(e);
      }
    }
    try {
      // One whole mapping that is no span's piece.
      const one = this.runtime.mappingAt(va);
      if (
        one !== undefined &&
        one.va === va &&
        one.end === end &&
        one.reservation.origin === 'vmm' &&
        this.spans.of(one) === undefined
      ) {
        this.runtime.unmap(va, n);
        return C.CUDA_SUCCESS;
      }
      // Only an address outside every reservation (unmap.unreserved) or in cuMemAlloc memory
      // (alloc.unmapOnAllocPointer) is refused up front.
      const r = this.runtime.reservationContaining(va);
      if (r === undefined || r.origin !== 'vmm' || this.spans.isHidden(r)) return C.CUDA_ERROR_INVALID_VALUE;
      // The driver unmaps every mapping inside the range and tolerates holes, ranges with nothing
      // mapped (even misaligned ones) and a second unmap: all 0 (unmap.rangeWithHole, unmap.twice,
      // unmap.reservedUnmapped, unmap.misalignedInReservedUnmapped, unmap.sizeLargerThanMapping).
      // It refuses only to split a mapping, size 0 at a mapping included (unmap.partOfMapping,
      // unmap.startMidMapping, unmap.sizeZero, unmap.misaligned).
      const mappings = this.spans.withWholeSpans(this.runtime.mappingsIn(va, Math.max(n, 1)));
      // cuMemAlloc memory is never unmapped by cuMemUnmap, even when the range reaches it.
      for (const m of mappings)
        if (m.va < va || m.end > end || m.reservation.origin !== 'vmm') return C.CUDA_ERROR_INVALID_VALUE;
      if (mappings.length === 0) return C.CUDA_SUCCESS;
      this.#unmapRuns(mappings);
      this.spans.forget(mappings);
      return C.CUDA_SUCCESS;
    } catch (e) {
      return isKind(e, 'device-fault') ? this.#unmapAfterFault(e, ptr, size) : this.codes.code(e);
    }
  }

  /**
   * The H200's cuMemUnmap does not wait for queued work and answers 0 (Note
   * [Queued work and access changes]); core's unmap finishes that work
   * first, so a fault of it surfaces here, before anything was unmapped.
   * The fault is the device's (codes.code marks it: Note [Faulted devices]),
   * not the unmap's: the queued work has all run, so the unmap is made
   * again, once, and answers as the driver's does. (Over the real driver a
   * faulted context fails every synchronisation, so there the second try
   * fails too and the fault is the answer.)
   */
  #unmapAfterFault(fault: unknown, ptr: CUdeviceptr, size: Size): number {
    const code = this.codes.code(fault);
    if (this.#unmappingAfterFault) return code;
    this.#unmappingAfterFault = true;
    try {
      return this.unmap(ptr, size);
    } finally {
      this.#unmappingAfterFault = false;
    }
  }

  /**
   * Unmap these mappings (address order, none split), one core unmap per run
   * of adjacent ones, all or nothing (Note [Unmapping around holes]).
   */
  #unmapRuns(mappings: readonly Mapping[]): void {
    const runs = runsOf(mappings);
    if (runs.length === 1) {
      this.runtime.unmap(runs[0].va, runs[0].end - runs[0].va);
      return;
    }
    const held = this.#holdDying(mappings);
    try {
      Transaction.run(this.codes.report, (tx) => {
        for (const run of runs) {
          const saved = run.mappings.map((m) => ({ m, descriptors: this.#accessOf(m), host: m.hostAccess }));
          this.runtime.unmap(run.va, run.end - run.va);
          tx.undo(() => {
            for (const { m, descriptors, host } of saved) {
              const again = this.runtime.map(m.va, m.size, m.allocation, m.offset);
              if (descriptors.length > 0 || host !== 0)
                this.runtime.setAccess(m.va, m.size, descriptors, host === 0 ? undefined : host);
              this.spans.replace(m, again);
            }
          });
        }
      });
    } finally {
      for (const a of held) {
        try {
          this.runtime.release(a);
        } catch (e) {
          this.codes.report('an unmap could not release memory; it stays held until dispose', e);
        }
      }
    }
  }

  /** Hold a handle reference to each allocation whose last reference these mappings are (core's books only). */
  #holdDying(mappings: readonly Mapping[]): PhysicalAllocation[] {
    const counts = new Map<PhysicalAllocation, { count: number; va: number }>();
    for (const m of mappings) {
      const c = counts.get(m.allocation);
      if (c === undefined) counts.set(m.allocation, { count: 1, va: m.va });
      else c.count++;
    }
    const held: PhysicalAllocation[] = [];
    for (const [a, { count, va }] of counts)
      if (a.handleRefs === 0 && a.mapRefs === count) held.push(this.runtime.retain(va));
    return held;
  }

  /** Every device's access to a mapping, as core's descriptors. */
  #accessOf(m: Mapping): AccessDescriptor[] {
    const out: AccessDescriptor[] = [];
    for (const d of this.runtime.devices) {
      const access = m.accessOf(d.ordinal);
      if (access !== 0) out.push({ device: d.ordinal, access });
    }
    return out;
  }

  setAccess(ptr: CUdeviceptr, size: Size, desc: readonly CUmemAccessDesc[], count: Size): number {
    const va = this.addresses.toNumber(ptr);
    const n = toCount(size);
    const k = toCount(count);
    if (va <= 0 || n <= 0 || k <= 0 || k > MAX_LIST_LENGTH) return C.CUDA_ERROR_INVALID_VALUE;
    const request = this.#readAccess(desc, k);
    if (typeof request === 'number') return request;
    const { descriptors, host } = request;
    if (this.spans.none && host === undefined) {
      // Note [Core first]: whole mappings with no hole, none of cuMemAlloc's: core's setAccess exactly.
      try {
        this.runtime.setAccess(va, n, descriptors);
        return C.CUDA_SUCCESS;
      } catch (e) {
        if (!isKind(e, 'not-mapped')) return this.codes.code(e);
      }
    }
    const end = va + n;
    const first = this.runtime.mappingAt(va);
    if (first === undefined || first.va !== va || first.reservation.origin !== 'vmm')
      return C.CUDA_ERROR_INVALID_VALUE;
    let reach = first.end;
    if (reach !== end || !this.spans.none) {
      // The range must start at a mapping's start and end at a mapping's end; holes between are
      // accepted, but only the mappings before the first hole get access (setAccess.rangeWithHole,
      // setAccess.holeInMiddleOfThree, setAccess.rangeStartingInHole, setAccess.rangeEndingInUnmapped).
      const last = this.runtime.mappingAt(end - 1);
      if (last === undefined || last.end !== end) return C.CUDA_ERROR_INVALID_VALUE;
      const firstSpan = this.spans.of(first);
      const lastSpan = this.spans.of(last);
      if (firstSpan !== undefined && firstSpan.pieces[0] !== first) return C.CUDA_ERROR_INVALID_VALUE;
      if (lastSpan !== undefined && lastSpan.pieces[lastSpan.pieces.length - 1] !== last)
        return C.CUDA_ERROR_INVALID_VALUE;
      for (let m: Mapping | undefined = first; m !== undefined && m.end < end; ) {
        m = this.runtime.nextMapping(m);
        if (m !== undefined) reach = m.end;
      }
    }
    if (host !== undefined) {
      // A host location is not supported on device memory (setAccess.locationHost); on host memory
      // it is the CPU's grant (Note [Host access]), which cuMemGetAccess does not report
      // (setAccess.hostAllocationHostLocation: the H200 answers 3 before and after).
      for (
        let m: Mapping | undefined = first;
        m !== undefined && m.va < reach;
        m = this.runtime.nextMapping(m)
      ) {
        if (m.allocation.props.location.type === 'device') return C.CUDA_ERROR_NOT_SUPPORTED;
      }
    }
    return this.codes.run(() => this.runtime.setAccess(va, reach - va, descriptors, host));
  }

  /**
   * The first `k` descriptors of the caller's list as core's (a HOST location
   * is the CPU's grant), or the CUresult refusing them. Each field is read
   * once, into locals, and a throwing read is a bad argument (Note
   * [Untrusted arguments]); no copy is allocated on this hot path.
   */
  #readAccess(
    desc: readonly CUmemAccessDesc[],
    k: number,
  ): { descriptors: readonly AccessDescriptor[]; host: Access | undefined } | number {
    let descriptors: readonly AccessDescriptor[] = [];
    let host: Access | undefined;
    let flags: unknown;
    let type: unknown;
    let id: unknown;
    try {
      if (!Array.isArray(desc) || !(desc.length >= k)) return C.CUDA_ERROR_INVALID_VALUE;
    } catch {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    for (let i = 0; i < k; i++) {
      try {
        const d: unknown = desc[i];
        if (!isStruct(d)) return C.CUDA_ERROR_INVALID_VALUE;
        const { location } = d as CUmemAccessDesc;
        flags = (d as CUmemAccessDesc).flags;
        if (!isStruct(location)) return C.CUDA_ERROR_INVALID_VALUE;
        type = location.type;
        id = location.id;
      } catch {
        return C.CUDA_ERROR_INVALID_VALUE;
      }
      if (!isAccessFlags(flags)) return C.CUDA_ERROR_INVALID_VALUE;
      if (type === C.CU_MEM_LOCATION_TYPE_HOST || type === C.CU_MEM_LOCATION_TYPE_HOST_NUMA) {
        host = flags;
        continue;
      }
      if (type !== C.CU_MEM_LOCATION_TYPE_DEVICE) return C.CUDA_ERROR_INVALID_VALUE;
      // A bad device id is INVALID_VALUE here, not INVALID_DEVICE (setAccess.badDeviceId).
      if (!this.runtime.isDevice(id as number)) return C.CUDA_ERROR_INVALID_VALUE;
      const one = this.#descriptors.get(id as number, flags);
      descriptors = k === 1 ? one : [...descriptors, one[0]];
    }
    return { descriptors, host };
  }

  getAccess(flags: Box<number>, location: CUmemLocation, ptr: CUdeviceptr): number {
    const loc = readStruct<CUmemLocation>(location, LOCATION_SHAPE);
    if (!isBox(flags) || loc === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const type = loc.type;
    const host = type === C.CU_MEM_LOCATION_TYPE_HOST || type === C.CU_MEM_LOCATION_TYPE_HOST_NUMA;
    if (!host && type !== C.CU_MEM_LOCATION_TYPE_DEVICE) return C.CUDA_ERROR_INVALID_VALUE;
    if (!host && !this.runtime.isDevice(loc.id)) return C.CUDA_ERROR_INVALID_DEVICE;
    const m = this.runtime.mappingAt(this.addresses.toNumber(ptr));
    if (m === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    // cuMemAlloc memory is no VMM mapping: 0 with no flags (getAccess.cuMemAllocPointer). The host answers
    // read-write, on device and host memory alike, whatever was set (getAccess.hostLocation,
    // setAccess.hostAllocationHostLocation).
    const value =
      m.reservation.origin === 'malloc'
        ? C.CU_MEM_ACCESS_FLAGS_PROT_NONE
        : host
          ? C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
          : m.accessOf(loc.id);
    return writeBox(flags, value) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  retain(handle: Box<bigint>, addr: CUdeviceptr): number {
    if (!isBox(handle)) return C.CUDA_ERROR_INVALID_VALUE;
    return this.#handOutAllocation(handle, () => this.runtime.retain(this.addresses.toNumber(addr)));
  }

  /** A handle core just made (a retain, an import) to the caller's box, or released again if it refuses. */
  #handOutAllocation(handle: Box<bigint>, make: () => PhysicalAllocation): number {
    return this.codes.handOut(
      handle,
      make,
      (a) => this.handles.handleOf(a),
      (a) => this.runtime.release(a),
      C.CUDA_ERROR_INVALID_VALUE,
    );
  }

  properties(prop: Box<CUmemAllocationProp>, handle: CUhandle): number {
    if (!isBox(prop)) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.handles.allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(prop, this.handles.reported(a)) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  exportFd(shareable: Box<number>, handle: CUhandle, handleType: number, flags: number): number {
    if (!isBox(shareable) || toInt(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const a = this.handles.allocation(handle);
    if (a === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    const type = toInt(handleType);
    if ((a.props.handleTypes & type) === 0 || type !== C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    return this.codes.handOut(
      shareable,
      () => this.runtime.exportFd(a),
      (fd) => fd,
      (fd) => this.#unexport(fd),
      C.CUDA_ERROR_INVALID_VALUE,
    );
  }

  /**
   * Take back an fd exported a moment ago whose box refused it: the fd is
   * closed, so nothing stays held (the allocation's export count in core
   * keeps the one, which no CUDA rule reads).
   */
  #unexport(fd: number): void {
    try {
      this.runtime.closeFd(fd);
    } catch (e) {
      this.report('could not close an fd whose box refused it', e);
    }
  }

  importFd(handle: Box<bigint>, osHandle: number | bigint, shHandleType: number): number {
    if (!isBox(handle)) return C.CUDA_ERROR_INVALID_VALUE;
    if (toInt(shHandleType) !== C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return C.CUDA_ERROR_INVALID_VALUE;
    // A descriptor that is not open (or -1) gives UNKNOWN, through the error table's invalid-fd
    // (import.bogusFd, import.afterFdClosed).
    return this.#handOutAllocation(handle, () => this.runtime.importFd(toCount(osHandle)));
  }
}

/**
 * Note [Unmapping around holes]
 * cuMemUnmap over a range with holes unmaps every mapping in it (Note [Core
 * first]): one core unmap per run of adjacent mappings, each all or nothing
 * in core, so the runs together are one transaction (Note [Transactions] in
 * core): a run that fails maps the runs before it back, with the access
 * they had, and the call changes nothing. Mapping back needs the memory, so
 * an allocation whose last reference goes with the range (its handle
 * released) is held by the flavor with a handle reference of its own while
 * the runs are unmapped, and let go at the end: that release frees the
 * memory, the call's point of no return (Note [Points of no return]); a
 * failure there is reported and the memory stays held until dispose.
 */
function runsOf(mappings: readonly Mapping[]): { va: number; end: number; mappings: Mapping[] }[] {
  const runs: { va: number; end: number; mappings: Mapping[] }[] = [];
  for (const m of mappings) {
    const last = runs[runs.length - 1];
    if (last !== undefined && last.end === m.va) {
      last.end = m.end;
      last.mappings.push(m);
    } else runs.push({ va: m.va, end: m.end, mappings: [m] });
  }
  return runs;
}

/** A VmmError of this kind. */
function isKind(e: unknown, kind: ErrorKind): boolean {
  return isVmmError(e) && e.kind === kind;
}

/** A size given as a bigint above 2^53 that is a positive multiple of `granularity`. */
function isLargeMultiple(size: unknown, granularity: number): boolean {
  return typeof size === 'bigint' && size > 0n && size % BigInt(granularity) === 0n;
}

/** The common reserve: no alignment beyond the granularity, no address hint. */
const NO_RESERVE_OPTIONS: ReserveOptions = Object.freeze({ alignment: 0, hint: 0 });

/** One-descriptor lists per (device, access), so a setAccess call allocates nothing. */
class DescriptorCache {
  readonly #lists: (readonly AccessDescriptor[])[] = [];
  get(device: number, access: Access): readonly AccessDescriptor[] {
    const key = device * 4 + access;
    let list = this.#lists[key];
    // Typed readonly, not frozen: V8 iterates a frozen array on a slow path (2.4x slower setAccess).
    if (list === undefined) this.#lists[key] = list = [{ device, access }];
    return list;
  }
}
