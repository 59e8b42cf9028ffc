/** HIP's copies and sets (hipMemcpy*, hipMemset*) over core's byte operations. */
import type { Runtime } from '../../core/runtime.js';
import { hostBytes, type Size, toCount, toInt } from '../common/args.js';
import { checkCapturedHostCopy } from '../common/capture.js';
import type { VendorCodes } from '../common/error-table.js';
import { fillWide } from '../common/fill.js';
import type { HostBuffers } from '../common/host-buffers.js';
import { copyAcross } from '../common/peer-copy.js';
import * as C from './constants.js';
import type { HipStreams } from './streams.js';
import type { HipHandle, HipMemory, HipPtr } from './structs.js';
import type { HipThread } from './thread.js';

const MEMCPY_KINDS = new Set([
  C.hipMemcpyHostToHost,
  C.hipMemcpyHostToDevice,
  C.hipMemcpyDeviceToHost,
  C.hipMemcpyDeviceToDevice,
  C.hipMemcpyDefault,
  C.hipMemcpyDeviceToDeviceNoCU,
]);

export class HipCopies {
  constructor(
    readonly hostBuffers: HostBuffers,
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly thread: HipThread,
    readonly streams: HipStreams,
  ) {}

  /** Host operands are Uint8Arrays, device operands pointers; hipMemcpyDefault infers the direction from them. */
  memcpy(dst: HipMemory, src: HipMemory, sizeBytes: Size, kind: number, stream: HipHandle): number {
    const n = toCount(sizeBytes);
    if (n < 0) return C.hipErrorInvalidValue;
    if (n === 0) return C.hipSuccess;
    const k = toInt(kind);
    if (!MEMCPY_KINDS.has(k)) return C.hipErrorInvalidMemcpyDirection;
    // Host operands by the views' internal slots, as plain views of the same bytes (Note [Untrusted arguments]).
    const dstView = hostBytes(dst);
    const srcView = hostBytes(src);
    const dstHost = dstView !== undefined;
    const srcHost = srcView !== undefined;
    // The device pointer of pinned host memory is a pointer whose bytes are the buffer's (Note [Host device pointers]).
    const dstBytes = dstView ?? this.#hostAt(dst);
    const srcBytes = srcView ?? this.#hostAt(src);
    const dstVa = dstHost ? 0 : toCount(dst ?? 0);
    const srcVa = srcHost ? 0 : toCount(src ?? 0);
    if ((!dstHost && dstVa <= 0) || (!srcHost && srcVa <= 0)) return C.hipErrorInvalidValue;
    if (k !== C.hipMemcpyDefault) {
      const wantDstHost = k === C.hipMemcpyHostToHost || k === C.hipMemcpyDeviceToHost;
      const wantSrcHost = k === C.hipMemcpyHostToHost || k === C.hipMemcpyHostToDevice;
      if (dstHost !== wantDstHost || srcHost !== wantSrcHost) return C.hipErrorInvalidValue;
    }
    if ((dstBytes !== undefined && dstBytes.length < n) || (srcBytes !== undefined && srcBytes.length < n))
      return C.hipErrorInvalidValue;
    const s = this.streams.stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    const device = s.id === 0 ? this.thread.device : s.device;
    if (dstBytes !== undefined && srcBytes !== undefined) {
      dstBytes.set(srcBytes.subarray(0, n));
      return C.hipSuccess;
    }
    if (srcBytes !== undefined)
      return this.codes.run(() => {
        checkCapturedHostCopy(this.runtime, device, dstVa, n, s.id);
        this.runtime.write(device, dstVa, srcBytes.subarray(0, n), s.id);
      });
    if (dstBytes !== undefined)
      return this.codes.run(() => this.runtime.read(device, srcVa, dstBytes.subarray(0, n), s.id));
    return this.codes.run(() => this.runtime.copy(device, dstVa, srcVa, n, s.id));
  }

  /**
   * Copy from `srcDeviceId`'s view of `src` to `dstDeviceId`'s view of `dst`
   * (common/peer-copy.ts): no peer access needed, as in ROCm, which stages
   * the copy when the devices cannot reach each other.
   */
  peer(dst: HipPtr, dstDeviceId: number, src: HipPtr, srcDeviceId: number, sizeBytes: Size): number {
    const to = toInt(dstDeviceId);
    const from = toInt(srcDeviceId);
    if (!this.runtime.isDevice(to) || !this.runtime.isDevice(from)) return C.hipErrorInvalidDevice;
    const n = toCount(sizeBytes);
    if (n < 0) return C.hipErrorInvalidValue;
    return this.codes.run(() => copyAcross(this.runtime, to, toCount(dst ?? 0), from, toCount(src ?? 0), n));
  }

  /** `count` 32-bit values (little-endian); the destination must be 4-byte aligned. */
  memsetD32(dst: HipPtr, value: number, count: Size): number {
    const n = toCount(count);
    const va = toCount(dst ?? 0);
    if (n < 0 || !Number.isInteger(value) || n * 4 > Number.MAX_SAFE_INTEGER) return C.hipErrorInvalidValue;
    if (n === 0) return C.hipSuccess;
    if (va <= 0 || va % 4 !== 0) return C.hipErrorInvalidValue;
    const host = this.#hostAt(dst);
    if (host !== undefined) {
      if (n * 4 > host.length) return C.hipErrorInvalidValue;
      const view = new DataView(host.buffer, host.byteOffset, n * 4);
      for (let i = 0; i < n; i++) view.setUint32(i * 4, value >>> 0, true);
      return C.hipSuccess;
    }
    return this.codes.run(() => fillWide(this.runtime, this.thread.device, va, value, n, 4));
  }

  memset(dst: HipPtr, value: number, sizeBytes: Size, stream: HipHandle): number {
    const n = toCount(sizeBytes);
    const va = toCount(dst ?? 0);
    if (n < 0 || !Number.isInteger(toInt(value))) return C.hipErrorInvalidValue;
    if (n === 0) return C.hipSuccess;
    if (va <= 0) return C.hipErrorInvalidValue;
    const s = this.streams.stream(stream);
    if (s === undefined) return C.hipErrorInvalidHandle;
    const host = this.#hostAt(dst);
    if (host !== undefined) {
      if (n > host.length) return C.hipErrorInvalidValue;
      host.fill(toInt(value) & 0xff, 0, n);
      return C.hipSuccess;
    }
    const device = s.id === 0 ? this.thread.device : s.device;
    return this.codes.run(() => this.runtime.fill(device, va, toInt(value), n, s.id));
  }

  /** The bytes from a device pointer of pinned host memory to its buffer's end; undefined for any other operand. */
  #hostAt(p: unknown): Uint8Array | undefined {
    if (typeof p !== 'bigint' && typeof p !== 'number') return undefined;
    const at = this.hostBuffers.at(toCount(p));
    return at?.buffer.bytes.subarray(at.offset);
  }
}
