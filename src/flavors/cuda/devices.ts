/** The CUDA device queries (cuDeviceGet*, cuDeviceCanAccessPeer) and the error-text calls, once cuInit has run. */
import type { Runtime } from '../../core/runtime.js';
import { type Box, isBox, toInt, writeBox } from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import { answerCanAccessPeer } from '../common/peers.js';
import { deviceAttribute } from './attributes.js';
import * as C from './constants.js';

/** Writes `value` to `box`: CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE for a box that takes no write. */
const answer = <T>(box: Box<T>, value: T): number =>
  writeBox(box, value) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;

export class CudaDevices {
  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
  ) {}

  get(device: Box<number>, ordinal: number): number {
    if (!isBox(device)) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(ordinal))) return C.CUDA_ERROR_INVALID_DEVICE;
    return answer(device, toInt(ordinal));
  }

  count(count: Box<number>): number {
    if (!isBox(count)) return C.CUDA_ERROR_INVALID_VALUE;
    return answer(count, this.runtime.devices.length);
  }

  name(name: Box<string>, len: number, dev: number): number {
    if (!isBox(name) || toInt(len) <= 0) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(dev))) return C.CUDA_ERROR_INVALID_DEVICE;
    // The C call writes at most len - 1 characters and a terminating NUL.
    return answer(name, this.runtime.devices[toInt(dev)].name.slice(0, toInt(len) - 1));
  }

  totalMem(bytes: Box<number>, dev: number): number {
    if (!isBox(bytes)) return C.CUDA_ERROR_INVALID_VALUE;
    if (!this.runtime.isDevice(toInt(dev))) return C.CUDA_ERROR_INVALID_DEVICE;
    return answer(bytes, this.runtime.devices[toInt(dev)].totalMemory);
  }

  attribute(pi: Box<number>, attrib: number, dev: number): number {
    if (!isBox(pi)) return C.CUDA_ERROR_INVALID_VALUE;
    // The device is checked first (attribute.badDevice: a bad device with a bad attribute is INVALID_DEVICE).
    const d = toInt(dev);
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    const a = typeof attrib === 'number' ? attrib : Number.NaN;
    if (!Number.isInteger(a) || a < 1) return C.CUDA_ERROR_INVALID_VALUE;
    // The part's own answers where the device reports them, else the front end's rules (Note [Device attributes]).
    const value = deviceAttribute(this.runtime.devices[d], a);
    if (value === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    return answer(pi, value);
  }

  canAccessPeer(canAccessPeer: Box<number>, dev: number, peerDev: number): number {
    if (!isBox(canAccessPeer)) return C.CUDA_ERROR_INVALID_VALUE;
    return answerCanAccessPeer(this.runtime, this.codes, canAccessPeer, dev, peerDev);
  }
}

/** A CUresult's name (0) or description (1) from the driver's table; NULL and INVALID_VALUE for a value it lacks. */
export function errorText(error: number, pStr: Box<string | null>, which: 0 | 1): number {
  if (!isBox(pStr)) return C.CUDA_ERROR_INVALID_VALUE;
  const entry = C.CUDA_RESULTS.get(toInt(error));
  if (!writeBox(pStr, entry?.[which] ?? null)) return C.CUDA_ERROR_INVALID_VALUE;
  return entry === undefined ? C.CUDA_ERROR_INVALID_VALUE : C.CUDA_SUCCESS;
}
