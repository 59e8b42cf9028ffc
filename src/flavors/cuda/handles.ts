/** CUmemGenericAllocationHandle values and the CUmemAllocationProp behind each: checked at create, reported back. */
import type { CUmemAllocationProp } from '../../c-api/cuda-structs.js';
import type { PhysicalAllocation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import type { AllocationProperties, Location } from '../../core/types.js';
import { type AllocationPropReader, BigIntMemo, toInt } from '../common/args.js';
import * as C from './constants.js';

type CUhandle = bigint | number;

const WINDOWS_HANDLE_TYPES = C.CU_MEM_HANDLE_TYPE_WIN32 | C.CU_MEM_HANDLE_TYPE_WIN32_KMT;
/** NUMA nodes of the simulated host (CU_MEM_LOCATION_TYPE_HOST_NUMA ids 0 to this - 1). */
const HOST_NUMA_NODES = 1;
const NO_ALLOC_FLAGS = Object.freeze({ compressionType: 0, gpuDirectRDMACapable: 0, usage: 0 });

/**
 * Note [Last handle]: the handle a call names is most often the one the
 * previous create, retain or import returned (map it, then release it). The
 * flavor remembers that allocation and, when the same value comes back,
 * asks the allocation itself whether it is still live in this process
 * (owner and handle references, kept by core) instead of looking the value
 * up. Any other value, or that one once released, goes to core's lookup.
 */
export class CudaHandles {
  readonly #props = new Map<number, AllocationProperties | number>();
  readonly #memo = new BigIntMemo();
  /** The allocation whose handle the flavor handed out last. */
  #last: PhysicalAllocation | undefined;
  /** allocFlags given at cuMemCreate, when any is set: core does not interpret them, the driver reports them. */
  readonly #allocFlags = new WeakMap<
    PhysicalAllocation,
    Required<NonNullable<CUmemAllocationProp['allocFlags']>>
  >();

  constructor(readonly runtime: Runtime) {}

  /**
   * The handle value the program sees for `a`: core's id as a bigint. Core
   * never hands an id out twice in a process, so a released handle's value
   * stays invalid for good; the flavor keeps no table of its own, only the
   * last allocation it handed out (Note [Last handle]).
   */
  handleOf(a: PhysicalAllocation): bigint {
    this.#last = a;
    return this.#memo.toBigInt(a.id);
  }

  /** The live allocation a handle value names in this process (Note [Last handle]). */
  allocation(handle: CUhandle): PhysicalAllocation | undefined {
    const id = this.#memo.toNumber(handle);
    if (id < 0) return undefined;
    const last = this.#last;
    if (last !== undefined && last.id === id && last.owner === this.runtime && last.handleRefs > 0)
      return last;
    return this.runtime.allocation(id);
  }

  /** Keep the allocFlags a create gave, when any is set (create.gpuDirectRDMACapable reports them back). */
  keepAllocFlags(a: PhysicalAllocation, prop: AllocationPropReader): void {
    if (prop.allocFlagsIsStruct && (prop.compressionType || prop.gpuDirectRDMACapable || prop.usage)) {
      this.#allocFlags.set(a, {
        compressionType: toInt(prop.compressionType ?? 0) || 0,
        gpuDirectRDMACapable: toInt(prop.gpuDirectRDMACapable ?? 0) || 0,
        usage: toInt(prop.usage ?? 0) || 0,
      });
    }
  }

  /** The GPUDirect RDMA flag a create asked for (a pointer attribute reports it). */
  gpuDirectRDMACapable(a: PhysicalAllocation): number {
    return this.#allocFlags.get(a)?.gpuDirectRDMACapable ?? 0;
  }

  /** What cuMemGetAllocationPropertiesFromHandle reports for `a`. */
  reported(a: PhysicalAllocation): CUmemAllocationProp {
    const { location, handleTypes } = a.props;
    return {
      type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
      // An imported handle reports no requested types (import.sameProcess).
      requestedHandleTypes: a.origin === 'imported' ? C.CU_MEM_HANDLE_TYPE_NONE : handleTypes,
      location: {
        // Host memory reads back as HOST_NUMA, even when created as HOST (create.host).
        type: location.type === 'device' ? C.CU_MEM_LOCATION_TYPE_DEVICE : C.CU_MEM_LOCATION_TYPE_HOST_NUMA,
        id: location.id,
      },
      win32HandleMetaData: 0n,
      allocFlags: { ...(this.#allocFlags.get(a) ?? NO_ALLOC_FLAGS) },
    };
  }

  /** Validate a CUmemAllocationProp, as read, in the driver's order; a CUresult if it is bad. */
  check(prop: AllocationPropReader): AllocationProperties | number {
    // Note [Property cache]: programs pass the same few properties over and over. The answer for a
    // given (type, location, handle types) never changes in a process, so it is worked out once and
    // kept, error codes included: allocations share one frozen properties object, and a create call
    // allocates nothing to check its argument (the struct is read into a reader, not copied).
    const t = prop.type;
    const h = prop.requestedHandleTypes ?? 0;
    const locType = prop.locationType;
    const locId = prop.locationId;
    if (
      prop.locationIsStruct &&
      isSmall(t, 16) &&
      isSmall(h, 256) &&
      isSmall(locType, 16) &&
      isSmall(locId, 4096)
    ) {
      const key = ((t * 16 + locType) * 256 + h) * 4096 + locId;
      let cached = this.#props.get(key);
      if (cached === undefined) {
        const parsed = this.#parse(prop);
        this.#props.set(key, (cached = typeof parsed === 'number' ? parsed : Object.freeze(parsed)));
      }
      return cached;
    }
    return this.#parse(prop);
  }

  #parse(prop: AllocationPropReader): AllocationProperties | number {
    if (prop.type !== C.CU_MEM_ALLOCATION_TYPE_PINNED) return C.CUDA_ERROR_INVALID_VALUE;
    // A C enum: a number, never a bigint (issue 10 H).
    const requested = prop.requestedHandleTypes ?? 0;
    let types = typeof requested === 'number' ? toInt(requested) : Number.NaN;
    if (!(types >= 0)) return C.CUDA_ERROR_INVALID_VALUE;
    // Windows handles on Linux: INVALID_VALUE (create.handleTypeWin32); fabric handles need an IMEX
    // channel the H200 machine lacks: NOT_PERMITTED (create.handleTypeFabric).
    if ((types & WINDOWS_HANDLE_TYPES) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    if ((types & C.CU_MEM_HANDLE_TYPE_FABRIC) !== 0) return C.CUDA_ERROR_NOT_PERMITTED;
    // Unknown bits are accepted and dropped (create.handleTypeInvalidBits, create.invalidBitsThenProperties).
    types &= C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (!prop.locationIsStruct) return C.CUDA_ERROR_INVALID_VALUE;
    const locType = prop.locationType;
    const locId = prop.locationId;
    let location: Location;
    if (locType === C.CU_MEM_LOCATION_TYPE_DEVICE) {
      if (!this.runtime.isDevice(locId as number)) return C.CUDA_ERROR_INVALID_DEVICE;
      location = { type: 'device', id: locId as number };
    } else if (locType === C.CU_MEM_LOCATION_TYPE_HOST) {
      // HOST memory cannot be exported as a POSIX fd (create.hostWithPosixFd); its id is ignored.
      if (types !== 0) return C.CUDA_ERROR_INVALID_VALUE;
      location = { type: 'host', id: 0 };
    } else if (locType === C.CU_MEM_LOCATION_TYPE_HOST_NUMA) {
      // A NUMA node the host lacks is INVALID_VALUE (create.hostNumaBadId).
      const id = toInt(locId);
      if (!(id >= 0 && id < HOST_NUMA_NODES)) return C.CUDA_ERROR_INVALID_VALUE;
      location = { type: 'host', id };
    } else {
      // HOST_NUMA_CURRENT included (create.hostNumaCurrent).
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    return { location, handleTypes: types, uncached: false };
  }
}

/** An integer in [0, limit), limit at most 2^31 (`>>> 0` keeps exactly the integers in [0, 2^32)). */
function isSmall(x: unknown, limit: number): x is number {
  return typeof x === 'number' && x >>> 0 === x && x < limit;
}
