/** Which device can reach which, and the peer grants every front end records. */
import type { Runtime } from '../../core/runtime.js';
import type { DeviceInfo } from '../../core/types.js';
import { type Box, toInt } from './args.js';
import type { VendorCodes } from './error-table.js';
import { writeBox } from './untrusted.js';

/**
 * Note [Peer access]: on the simulated machine every device can be granted
 * access to every other device's memory (cuMemSetAccess / hipMemSetAccess
 * for a peer succeed, and that peer's copies then read it), so the answer of
 * cuDeviceCanAccessPeer / hipDeviceCanAccessPeer is 1 for two different
 * devices; a device is not its own peer, 0, as both drivers answer. Over the
 * real driver the answer is the driver's own, read once per pair when the
 * backend opens the devices (DeviceInfo.peers). cuCtxEnablePeerAccess /
 * hipDeviceEnablePeerAccess (and ACL's aclrtDeviceEnablePeerAccess) keep the
 * drivers' rules and record the grant per direction, but the grant changes
 * nothing: on the drivers it opens a peer's cuMemAlloc / hipMalloc memory to
 * this device's kernels, and the simulator has no kernels. One known
 * difference stays: a cuMemcpyDtoD to or from another device's cuMemAlloc
 * memory is refused here (core grants one-step memory to its own device
 * only), where the driver, with unified addressing, copies it; cuMemcpyPeer
 * copies it here as there.
 */

/**
 * Whether device `dev` can reach device `peer`'s memory directly: never
 * itself; over a real driver, what the driver answered when the backend
 * opened the devices (DeviceInfo.peers); on the simulated machine, every
 * other device (whose access grants work there).
 */
export function canReachPeer(devices: readonly DeviceInfo[], dev: number, peer: number): boolean {
  if (dev === peer) return false;
  const peers = devices[dev]?.peers;
  return peers === undefined || peers.includes(peer);
}

/**
 * cuDeviceCanAccessPeer's and hipDeviceCanAccessPeer's answer after their
 * box check: both devices must exist (the vendor's invalid-device code), then
 * 1 or 0 as canReachPeer says.
 */
export function answerCanAccessPeer(
  runtime: Runtime,
  codes: VendorCodes,
  canAccessPeer: Box<number>,
  dev: unknown,
  peerDev: unknown,
): number {
  const d = toInt(dev);
  const peer = toInt(peerDev);
  if (!runtime.isDevice(d) || !runtime.isDevice(peer)) return codes.table['invalid-device'];
  return writeBox(canAccessPeer, canReachPeer(runtime.devices, d, peer) ? 1 : 0)
    ? codes.success
    : codes.table['invalid-value'];
}

/** Peer access a process enabled, per direction (from the current device to a peer); it gates nothing (the Note). */
export class PeerGrants {
  readonly #pairs = new Set<number>();

  constructor(readonly deviceCount: number) {}

  /** Record from -> to; false if it was enabled already. */
  enable(from: number, to: number): boolean {
    const key = this.#key(from, to);
    if (this.#pairs.has(key)) return false;
    this.#pairs.add(key);
    return true;
  }

  /** Drop from -> to; false if it was not enabled. */
  disable(from: number, to: number): boolean {
    return this.#pairs.delete(this.#key(from, to));
  }

  /** Drop every grant from `device`. */
  forgetFrom(device: number): void {
    for (const key of this.#pairs) if (Math.floor(key / this.deviceCount) === device) this.#pairs.delete(key);
  }

  /** Drop every grant from or to `device`. */
  forgetTouching(device: number): void {
    for (const key of this.#pairs) {
      if (Math.floor(key / this.deviceCount) === device || key % this.deviceCount === device)
        this.#pairs.delete(key);
    }
  }

  #key(from: number, to: number): number {
    return from * this.deviceCount + to;
  }
}
