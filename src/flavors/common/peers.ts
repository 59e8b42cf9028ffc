/** Which device can reach which, for the peer queries of every front end (Note [Peer access] in the CUDA flavour). */
import type { DeviceInfo } from '../../core/types.js';

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
