/** CUDA's copies and sets (cuMemcpy*, cuMemsetD8/D16/D32) over core's byte operations. */
import type { Runtime } from '../../core/runtime.js';
import { type BigIntMemo, hostBytes, type Size, toCount } from '../common/args.js';
import { checkCapturedHostCopy } from '../common/capture.js';
import type { VendorCodes } from '../common/error-table.js';
import { fillWide, patternBytes } from '../common/fill.js';
import type { HostBuffers } from '../common/host-buffers.js';
import { copyAcross } from '../common/peer-copy.js';
import * as C from './constants.js';
import type { CudaContexts } from './contexts.js';
import type { CUdeviceptr, CUstream } from './handle-types.js';
import type { CudaStreams } from './streams.js';

/**
 * Every call here runs in the current context (the facade checked there is
 * one), by its device, or by its stream's (Note [Copies on another device's stream]).
 */
export class CudaCopies {
  constructor(
    readonly hostBuffers: HostBuffers,
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly contexts: CudaContexts,
    readonly streams: CudaStreams,
    readonly addresses: BigIntMemo,
  ) {}

  htod(dstDevice: CUdeviceptr, srcHost: Uint8Array, byteCount: Size, hStream: CUstream): number {
    return this.#hostSide('write', dstDevice, srcHost, byteCount, hStream);
  }

  dtoh(dstHost: Uint8Array, srcDevice: CUdeviceptr, byteCount: Size, hStream: CUstream): number {
    return this.#hostSide('read', srcDevice, dstHost, byteCount, hStream);
  }

  /** A copy between device memory and the caller's bytes (by the view's internal slots, Note [Untrusted arguments]). */
  #hostSide(
    move: 'read' | 'write',
    device: CUdeviceptr,
    host: Uint8Array,
    byteCount: Size,
    hStream: CUstream,
  ): number {
    const n = toCount(byteCount);
    const bytes = hostBytes(host);
    if (bytes === undefined || n < 0 || n > bytes.length) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    const va = this.addresses.toNumber(device);
    const hostTarget = this.#hostBytesAt(va);
    if (hostTarget !== undefined)
      return move === 'write'
        ? this.#hostCopy(hostTarget, bytes, n, stream)
        : this.#hostCopy(bytes, hostTarget, n, stream);
    const on = this.streams.deviceOf(hStream);
    return this.codes.run(() => {
      if (move === 'write') checkCapturedHostCopy(this.runtime, on, va, n, stream);
      this.runtime[move](on, va, bytes.subarray(0, n), stream);
    });
  }

  /**
   * cuMemcpy / cuMemcpyAsync: with unified addressing the pointers say the
   * direction. A host buffer (a Uint8Array, read by its internal slots) is
   * the host side, a pointer device memory (the driver's UVA also takes a
   * pinned or pageable host address there; here host memory has no address,
   * Note [Host buffers]); two host buffers are a host-to-host copy, done at
   * once after the stream's earlier work, as the driver orders it.
   */
  unified(
    dst: CUdeviceptr | Uint8Array,
    src: CUdeviceptr | Uint8Array,
    byteCount: Size,
    hStream: CUstream,
  ): number {
    // A device pointer of page-locked host memory is its host side too (Note [Host device pointers]).
    const dstHost = hostBytes(dst) ?? this.#hostAt(dst);
    const srcHost = hostBytes(src) ?? this.#hostAt(src);
    if (dstHost !== undefined && srcHost !== undefined) {
      const n = toCount(byteCount);
      if (n < 0 || n > dstHost.length || n > srcHost.length) return C.CUDA_ERROR_INVALID_VALUE;
      const stream = this.streams.stream(hStream);
      if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
      return this.#hostCopy(dstHost, srcHost, n, stream);
    }
    if (srcHost !== undefined) return this.htod(dst as CUdeviceptr, srcHost, byteCount, hStream);
    if (dstHost !== undefined) return this.dtoh(dstHost, src as CUdeviceptr, byteCount, hStream);
    return this.dtod(dst as CUdeviceptr, src as CUdeviceptr, byteCount, hStream);
  }

  dtod(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, byteCount: Size, hStream: CUstream): number {
    const n = toCount(byteCount);
    if (n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    // Each pointer converted once (the address memo holds one, and the two alternate).
    const dst = this.addresses.toNumber(dstDevice);
    const src = this.addresses.toNumber(srcDevice);
    const dstHost = this.#hostBytesAt(dst);
    const srcHost = this.#hostBytesAt(src);
    if (dstHost !== undefined || srcHost !== undefined)
      return this.unified(dstHost ?? dstDevice, srcHost ?? srcDevice, n, hStream);
    const on = this.streams.deviceOf(hStream);
    return this.codes.run(() => this.runtime.copy(on, dst, src, n, stream));
  }

  /**
   * cuMemcpyPeer (common/peer-copy.ts): each side is read or written through
   * its own context's device, so no peer access is needed, as on the driver.
   * A context that is not a retained primary or a created one is
   * CUDA_ERROR_INVALID_CONTEXT; a NULL one is the current one
   * (peer.memcpyPeerNullContext).
   */
  peer(
    dstDevice: CUdeviceptr,
    dstContext: bigint | number,
    srcDevice: CUdeviceptr,
    srcContext: bigint | number,
    byteCount: Size,
  ): number {
    const to = this.contexts.deviceOrCurrent(dstContext);
    const from = this.contexts.deviceOrCurrent(srcContext);
    if (to < 0 || from < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (this.contexts.faulted(to) || this.contexts.faulted(from)) return C.CUDA_ERROR_LAUNCH_FAILED;
    const n = toCount(byteCount);
    if (n < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const dst = this.addresses.toNumber(dstDevice);
    const src = this.addresses.toNumber(srcDevice);
    return this.codes.run(() => copyAcross(this.runtime, to, dst, from, src, n));
  }

  memset(dstDevice: CUdeviceptr, uc: number, n: Size, hStream: CUstream): number {
    const count = toCount(n);
    if (count < 0 || !Number.isInteger(uc)) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    const va = this.addresses.toNumber(dstDevice);
    const host = this.#hostBytesAt(va);
    if (host !== undefined) return this.#hostFill(host, [uc & 0xff], count, stream);
    const on = this.streams.deviceOf(hStream);
    return this.codes.run(() => this.runtime.fill(on, va, uc, count, stream));
  }

  /** cuMemsetD16 and D32 (and their Async on `hStream`): `count` elements of `width` bytes, little-endian; the destination aligned to the width. */
  memsetWide(dstDevice: CUdeviceptr, value: number, n: Size, width: 2 | 4, hStream: CUstream = 0n): number {
    const count = toCount(n);
    const va = this.addresses.toNumber(dstDevice);
    if (count < 0 || !Number.isInteger(value) || count * width > Number.MAX_SAFE_INTEGER)
      return C.CUDA_ERROR_INVALID_VALUE;
    // Nothing to set is a success, aligned or not (memset.alignment).
    if (count === 0) return C.CUDA_SUCCESS;
    if (va > 0 && va % width !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    const host = this.#hostBytesAt(va);
    if (host !== undefined) return this.#hostFill(host, patternBytes(value, width), count, stream);
    const on = this.streams.deviceOf(hStream);
    return this.codes.run(() => fillWide(this.runtime, on, va, value, count, width, stream));
  }

  /** The bytes from a device pointer of page-locked host memory to its buffer's end; undefined for any other pointer. */
  #hostAt(p: unknown): Uint8Array | undefined {
    return this.#hostBytesAt(this.addresses.toNumber(p));
  }

  #hostBytesAt(va: number): Uint8Array | undefined {
    const at = this.hostBuffers.at(va);
    return at?.buffer.bytes.subarray(at.offset);
  }

  /**
   * A copy with host memory on both sides, on core's stream `stream`: at
   * once, after the work it comes after (CudaStreams.finish), and only that:
   * another stream's failed work is that stream's to answer (the fuzzer's
   * seed 4006).
   */
  #hostCopy(dst: Uint8Array, src: Uint8Array, n: number, stream: number): number {
    if (n > dst.length || n > src.length) return C.CUDA_ERROR_INVALID_VALUE;
    return this.codes.run(() => {
      if (n > 0) this.streams.finish(stream);
      dst.set(src.subarray(0, n));
    });
  }

  /** A set of `count` elements (the value's little-endian bytes) in host memory, after the work it comes after. */
  #hostFill(dst: Uint8Array, value: readonly number[], count: number, stream: number): number {
    const width = value.length;
    if (count * width > dst.length) return C.CUDA_ERROR_INVALID_VALUE;
    return this.codes.run(() => {
      if (count > 0) this.streams.finish(stream);
      for (let i = 0; i < count * width; i++) dst[i] = value[i % width]!;
    });
  }
}
