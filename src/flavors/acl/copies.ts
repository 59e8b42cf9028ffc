/** ACL's copies and sets (aclrtMemcpy, aclrtMemset and their async forms) over core's byte operations. */
import type { Runtime } from '../../core/runtime.js';
import { hostBytes, isHostBuffer, isNull, type Size, show, toCount, toInt } from '../common/args.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import type { AclDevices } from './devices.js';
import type { AclStreams } from './streams.js';
import type { MemcpyPointer, Pointer } from './structs.js';

export class AclCopies {
  constructor(
    readonly runtime: Runtime,
    readonly codes: AclCodes,
    readonly devices: AclDevices,
    readonly streams: AclStreams,
  ) {}

  /** On `stream` (NULL: the default stream), count bytes from src to dst; the operands say the direction where kind does not. */
  memcpy(
    stream: Pointer,
    dst: MemcpyPointer,
    destMax: Size,
    src: MemcpyPointer,
    count: Size,
    kind: number,
  ): number {
    if (isNullPointer(dst)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'dst is NULL');
    if (isNullPointer(src)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'src is NULL');
    const n = toCount(count);
    const max = toCount(destMax);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `count ${show(count)} must be positive`);
    if (max < n)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `count ${n} exceeds destMax ${show(destMax)}`);
    // Host operands by the views' internal slots, as plain views of the same bytes (Note [Untrusted arguments]).
    const srcBytes = hostBytes(src);
    const dstBytes = hostBytes(dst);
    let k = toInt(kind);
    if (k === C.ACL_MEMCPY_DEFAULT) {
      // The runtime infers the direction from the pointers.
      k =
        srcBytes !== undefined && dstBytes !== undefined
          ? C.ACL_MEMCPY_HOST_TO_HOST
          : srcBytes !== undefined
            ? C.ACL_MEMCPY_HOST_TO_DEVICE
            : dstBytes !== undefined
              ? C.ACL_MEMCPY_DEVICE_TO_HOST
              : C.ACL_MEMCPY_DEVICE_TO_DEVICE;
    } else if (k === C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE || k === C.ACL_MEMCPY_INTER_DEVICE_TO_DEVICE) {
      k = C.ACL_MEMCPY_DEVICE_TO_DEVICE;
    } else if (k === C.ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
      k = C.ACL_MEMCPY_HOST_TO_DEVICE;
    }
    const hostSrc = k === C.ACL_MEMCPY_HOST_TO_HOST || k === C.ACL_MEMCPY_HOST_TO_DEVICE;
    const hostDst = k === C.ACL_MEMCPY_HOST_TO_HOST || k === C.ACL_MEMCPY_DEVICE_TO_HOST;
    if (k < C.ACL_MEMCPY_HOST_TO_HOST || k > C.ACL_MEMCPY_DEVICE_TO_DEVICE)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `kind ${show(kind)}`);
    if (hostSrc !== (srcBytes !== undefined) || hostDst !== (dstBytes !== undefined))
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `the pointers do not match kind ${show(kind)}`);
    if (srcBytes !== undefined && srcBytes.length < n)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `src holds fewer than ${n} bytes`);
    if (dstBytes !== undefined && dstBytes.length < n)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `dst holds fewer than ${n} bytes`);
    if (srcBytes !== undefined && dstBytes !== undefined) {
      dstBytes.set(srcBytes.subarray(0, n));
      return C.ACL_SUCCESS;
    }
    const code = this.devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const s = this.streams.stream(stream);
    if (typeof s === 'number') return s;
    const d = this.devices.current;
    return this.codes.run(() => {
      if (srcBytes !== undefined)
        this.runtime.write(d, toCount(dst as Pointer), srcBytes.subarray(0, n), s.id);
      else if (dstBytes !== undefined)
        this.runtime.read(d, toCount(src as Pointer), dstBytes.subarray(0, n), s.id);
      else this.runtime.copy(d, toCount(dst as Pointer), toCount(src as Pointer), n, s.id);
    });
  }

  memset(stream: Pointer, devPtr: Pointer, maxCount: Size, value: number, count: Size): number {
    const va = toCount(devPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    const n = toCount(count);
    const max = toCount(maxCount);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `count ${show(count)} must be positive`);
    if (max < n)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `count ${n} exceeds maxCount ${show(maxCount)}`);
    if (!Number.isInteger(value)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `value ${show(value)}`);
    const code = this.devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const s = this.streams.stream(stream);
    if (typeof s === 'number') return s;
    return this.codes.run(() => this.runtime.fill(this.devices.current, va, value, n, s.id));
  }
}

function isNullPointer(p: MemcpyPointer): boolean {
  return !isHostBuffer(p) && isNull(p);
}
