/** What the CUDA driver answers about an address: cuMemGetAddressRange and the pointer attributes. */
import type { Mapping, Reservation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import {
  type BigIntMemo,
  type Box,
  isBox,
  MAX_LIST_LENGTH,
  readList,
  toCount,
  writeAllBoxes,
  writeBox,
} from '../common/args.js';
import type { HostBuffer, HostBuffers } from '../common/host-buffers.js';
import * as C from './constants.js';
import { type CudaContexts, contextHandle } from './contexts.js';
import type { CUdeviceptr } from './handle-types.js';
import type { CudaHandles } from './handles.js';
import type { CudaSpans } from './spans.js';

/**
 * Note [Pointer ranges]: what cuMemGetAddressRange and the pointer
 * attributes answer, as the H200 answered them (conformance cases
 * addressRange.* and pointer.*, recorded on driver 580):
 *  - cuMemAlloc memory: the allocation, of the size the program asked for
 *    (1 MiB + 1 byte answers 1 MiB + 1, though core holds 2 MiB), through
 *    both calls; its context is the one current at the allocation.
 *  - VMM memory: cuMemGetAddressRange answers the one cuMemMap that mapped
 *    the address (two adjacent handles are two ranges), and CUDA_ERROR_NOT_FOUND
 *    until some device has been granted access to it, as for an address
 *    nothing is mapped at. The pointer attributes' range
 *    (RANGE_START_ADDR, RANGE_SIZE) is the whole reservation instead, and
 *    their context is NULL: VMM memory belongs to no context. Without
 *    access, every attribute but DEVICE_POINTER still answers.
 *  - A cuMemMap past a reservation's end is one range, all its pieces together.
 *  - VMM memory located on the host (HOST_NUMA): cuMemGetAddressRange answers
 *    a NULL base and the mapping's size, as the H200 did when the case
 *    (pointer.vmmHostNumaAndReadOnly) was recorded again with unsigned reads
 *    that tell NULL from unwritten (the first recording's negative base was
 *    NULL less the reservation's address).
 *  - cuPointerGetAttributes on an address that is no CUDA memory answers
 *    each attribute's NULL value, the device ordinal CU_DEVICE_INVALID (-2).
 * The other attributes recorded there (BUFFER_ID, MEMORY_BLOCK_ID nonzero
 * ids; ACCESS_FLAGS; ALLOWED_HANDLE_TYPES; the legacy-IPC and GPUDirect
 * RDMA flags, 1 for cuMemAlloc memory and as created for VMM memory;
 * MAPPING_SIZE and MAPPING_BASE_ADDR, the mapping) are answered alike;
 * HOST_POINTER is CUDA_ERROR_INVALID_VALUE for device memory, as there.
 *  - Page-locked host memory (cuMemAllocHost, cuMemHostAlloc), asked by its
 *    address or its Uint8Array: the buffer is the range, its memory type
 *    HOST, and DEVICE_POINTER and HOST_POINTER are both the address asked,
 *    as cuMemHostGetDevicePointer answers it (Note [Host device pointers]);
 *    the context is the one current at the allocation.
 */
export class CudaPointers {
  /** The size each cuMemAlloc asked for, which the driver's ranges report. */
  readonly #requestedSizes = new WeakMap<Reservation, number>();
  /** The context current at each cuMemAlloc: a created one or the device's primary one. */
  readonly #contextsOf = new WeakMap<Reservation, bigint>();
  /** The context current at each cuMemAllocHost / cuMemHostAlloc. */
  readonly #hostContexts = new WeakMap<Uint8Array, bigint>();

  constructor(
    readonly hostBuffers: HostBuffers,
    readonly runtime: Runtime,
    readonly contexts: CudaContexts,
    readonly handles: CudaHandles,
    readonly spans: CudaSpans,
    readonly addresses: BigIntMemo,
  ) {}

  /** Remember what a cuMemAlloc asked for, when core holds more, and the context it was made in. */
  requested(r: Reservation, size: number): void {
    if (size !== r.size) this.#requestedSizes.set(r, size);
    this.#contextsOf.set(r, this.contexts.handle);
  }

  /** Remember the context a host buffer was allocated in. */
  hostAllocated(buffer: Uint8Array): void {
    this.#hostContexts.set(buffer, this.contexts.handle);
  }

  /** cuMemGetAddressRange; either out box may be null. CUDA_ERROR_NOT_FOUND where nothing is mapped. */
  addressRange(pbase: Box<bigint> | null, psize: Box<number> | null, dptr: CUdeviceptr): number {
    if (
      (pbase !== null && pbase !== undefined && !isBox(pbase)) ||
      (psize !== null && psize !== undefined && !isBox(psize))
    )
      return C.CUDA_ERROR_INVALID_VALUE;
    const range = this.#rangeOf(this.addresses.toNumber(dptr));
    // VMM memory no device may access yet is not found (addressRange.vmmNoAccess).
    if (range === undefined || !range.accessible) return C.CUDA_ERROR_NOT_FOUND;
    const out: Box<number | bigint>[] = [];
    const values: (number | bigint)[] = [];
    if (pbase !== null && pbase !== undefined) {
      out.push(pbase);
      // VMM memory located on the host: a NULL base (Note [Pointer ranges]).
      const onHost = !range.malloc && range.mapping.allocation.props.location.type !== 'device';
      values.push(onHost ? 0n : this.addresses.toBigInt(range.base));
    }
    if (psize !== null && psize !== undefined) {
      out.push(psize);
      values.push(range.size);
    }
    return writeAllBoxes(out, values) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /** cuPointerGetAttribute: an address nothing is mapped at, or an attribute vmmkit does not answer, is INVALID_VALUE. */
  attribute(data: Box<number | bigint>, attribute: number, ptr: CUdeviceptr | Uint8Array): number {
    const a = typeof attribute === 'number' ? attribute : Number.NaN;
    if (!isBox(data) || !POINTER_ATTRIBUTES.has(a)) return C.CUDA_ERROR_INVALID_VALUE;
    const answer = this.#answerAt(this.#address(ptr));
    const value = answer === undefined ? undefined : answer(a);
    if (value === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    return writeBox(data, value) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /**
   * cuPointerGetAttributes: unlike cuPointerGetAttribute, an address nothing
   * is mapped at is no error: every attribute gets its NULL value (0), as the
   * driver documents. Every argument is checked before any box is written.
   */
  attributes(
    numAttributes: number,
    attributes: readonly number[],
    data: readonly Box<number | bigint>[],
    ptr: CUdeviceptr,
  ): number {
    const n = toCount(numAttributes);
    if (n <= 0 || n > MAX_LIST_LENGTH) return C.CUDA_ERROR_INVALID_VALUE;
    const names = readList(attributes, n);
    const boxes = readList(data, n);
    if (names === 'not-array' || boxes === 'not-array' || names.length < n || boxes.length < n)
      return C.CUDA_ERROR_INVALID_VALUE;
    for (let i = 0; i < n; i++) {
      const a = names[i];
      if (typeof a !== 'number' || !POINTER_ATTRIBUTES.has(a) || !isBox(boxes[i]))
        return C.CUDA_ERROR_INVALID_VALUE;
    }
    const answer = this.#answerAt(this.addresses.toNumber(ptr)) ?? nullAttribute;
    const values = names.map((a) => answer(a as number));
    // One attribute the memory cannot answer fails the call (pointer.vmmNoAccess's device pointer).
    if (values.includes(undefined)) return C.CUDA_ERROR_INVALID_VALUE;
    return writeAllBoxes(boxes as Box<number | bigint>[], values as (number | bigint)[])
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_INVALID_VALUE;
  }

  /** How the memory at `va` answers an attribute: a host buffer's way or a device range's; undefined where there is none. */
  #answerAt(va: number): ((a: number) => number | bigint | undefined) | undefined {
    const host = this.hostBuffers.at(va);
    if (host !== undefined) return (a) => this.#hostAttribute(a, va, host.buffer);
    const range = this.#rangeOf(va);
    return range === undefined ? undefined : (a) => this.#attribute(a, va, range);
  }

  /** A pointer as a number: a host buffer (or a view in one) as its address (Note [Host device pointers]), -1 for other bytes. */
  #address(ptr: CUdeviceptr | Uint8Array): number {
    if (typeof ptr === 'bigint' || typeof ptr === 'number') return this.addresses.toNumber(ptr);
    return this.hostBuffers.addressOf(ptr) ?? -1;
  }

  /** The value of attribute `a` at `va` inside page-locked host buffer `b` (Note [Pointer ranges]). */
  #hostAttribute(a: number, va: number, b: HostBuffer): number | bigint | undefined {
    switch (a) {
      case C.CU_POINTER_ATTRIBUTE_CONTEXT:
        return this.#hostContexts.get(b.bytes) ?? 0n;
      case C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        return C.CU_MEMORYTYPE_HOST;
      case C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      case C.CU_POINTER_ATTRIBUTE_HOST_POINTER:
        return this.addresses.toBigInt(va);
      case C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return this.contexts.device;
      case C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      case C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        return this.addresses.toBigInt(b.start);
      case C.CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      case C.CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        return b.bytes.length;
      case C.CU_POINTER_ATTRIBUTE_MAPPED:
        return 1;
      case C.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return 0n;
      default:
        return 0;
    }
  }

  #rangeOf(va: number): PointerRange | undefined {
    if (va <= 0) return undefined;
    const m = this.runtime.mappingAt(va);
    if (m === undefined) return undefined;
    if (m.reservation.origin === 'malloc') {
      const size = this.#requestedSizes.get(m.reservation) ?? m.size;
      return { base: m.va, size, mapping: m, accessible: true, malloc: true };
    }
    const accessible = m.accessBits !== 0;
    const span = this.spans.of(m);
    if (span === undefined) return { base: m.va, size: m.size, mapping: m, accessible, malloc: false };
    const first = span.pieces[0];
    const last = span.pieces[span.pieces.length - 1];
    return { base: first.va, size: last.end - first.va, mapping: m, accessible, malloc: false };
  }

  /** The value of pointer attribute `a` at `va`, inside `range`; undefined where the driver refuses it. */
  #attribute(a: number, va: number, range: PointerRange): number | bigint | undefined {
    const { mapping, malloc } = range;
    const allocation = mapping.allocation;
    const location = allocation.props.location;
    const current = this.contexts.device;
    switch (a) {
      case C.CU_POINTER_ATTRIBUTE_CONTEXT:
        if (!malloc) return 0n;
        return (
          this.#contextsOf.get(mapping.reservation) ??
          contextHandle(location.type === 'device' ? location.id : current)
        );
      case C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        return location.type === 'device' ? C.CU_MEMORYTYPE_DEVICE : C.CU_MEMORYTYPE_HOST;
      case C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        return range.accessible ? this.addresses.toBigInt(va) : undefined;
      case C.CU_POINTER_ATTRIBUTE_HOST_POINTER:
        // Device memory has no host pointer (pointer.* cases).
        return undefined;
      case C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return location.type === 'device' ? location.id : current;
      case C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        return this.addresses.toBigInt(malloc ? range.base : mapping.reservation.base);
      case C.CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        return malloc ? range.size : mapping.reservation.size;
      case C.CU_POINTER_ATTRIBUTE_MAPPED:
        return 1;
      case C.CU_POINTER_ATTRIBUTE_BUFFER_ID:
      case C.CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return allocation.id + 1;
      case C.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        return malloc ? 1 : 0;
      case C.CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        return allocation.props.handleTypes;
      case C.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        return malloc ? 1 : this.handles.gpuDirectRDMACapable(allocation);
      case C.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        return current < 0 ? 0 : mapping.accessOf(current);
      case C.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return 0n;
      case C.CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        return malloc ? mapping.size : range.size;
      case C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        return this.addresses.toBigInt(range.base);
      default:
        // CU_POINTER_ATTRIBUTE_IS_MANAGED and SYNC_MEMOPS: no managed memory, no synchronous memops.
        return 0;
    }
  }
}

/** What #rangeOf finds at an address (Note [Pointer ranges]). */
interface PointerRange {
  /** cuMemGetAddressRange's range: the allocation, or the mapping. */
  readonly base: number;
  readonly size: number;
  readonly mapping: Mapping;
  /** Some device may access it (VMM memory nobody may access is not found). */
  readonly accessible: boolean;
  /** cuMemAlloc memory. */
  readonly malloc: boolean;
}

/** The pointer attributes vmmkit answers (Note [Pointer ranges]). */
const POINTER_ATTRIBUTES: ReadonlySet<number> = new Set([
  C.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
  C.CU_POINTER_ATTRIBUTE_BUFFER_ID,
  C.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
  C.CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
  C.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE,
  C.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
  C.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
  C.CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
  C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
  C.CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID,
  C.CU_POINTER_ATTRIBUTE_CONTEXT,
  C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
  C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
  C.CU_POINTER_ATTRIBUTE_HOST_POINTER,
  C.CU_POINTER_ATTRIBUTE_IS_MANAGED,
  C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
  C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
  C.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
  C.CU_POINTER_ATTRIBUTE_MAPPED,
]);

/** What cuPointerGetAttributes writes for an address that is no CUDA memory: the attribute's NULL value. */
function nullAttribute(a: number): number | bigint {
  if (a === C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return C.CU_DEVICE_INVALID;
  return a === C.CU_POINTER_ATTRIBUTE_CONTEXT ||
    a === C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
    a === C.CU_POINTER_ATTRIBUTE_HOST_POINTER ||
    a === C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
    a === C.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE ||
    a === C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR
    ? 0n
    : 0;
}
