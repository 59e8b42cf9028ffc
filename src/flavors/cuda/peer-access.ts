/** cuCtxEnablePeerAccess / cuCtxDisablePeerAccess, between the current context's device and a peer context's. */
import type { Runtime } from '../../core/runtime.js';
import { toCount } from '../common/args.js';
import { canReachPeer, PeerGrants } from '../common/peers.js';
import * as C from './constants.js';
import type { CudaContexts } from './contexts.js';
import type { CUcontext } from './handle-types.js';

export class CudaPeerAccess {
  readonly #grants: PeerGrants;

  constructor(
    readonly runtime: Runtime,
    readonly contexts: CudaContexts,
  ) {
    this.#grants = new PeerGrants(runtime.devices.length);
  }

  /** With a context current (the caller checked). */
  enable(peerContext: CUcontext, flags: number): number {
    if (toCount(flags) !== 0) return C.CUDA_ERROR_INVALID_VALUE;
    const peer = this.contexts.deviceOf(peerContext);
    if (peer < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    const current = this.contexts.device;
    if (!canReachPeer(this.runtime.devices, current, peer)) return C.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    return this.#grants.enable(current, peer) ? C.CUDA_SUCCESS : C.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }

  /** With a context current (the caller checked). */
  disable(peerContext: CUcontext): number {
    const peer = this.contexts.deviceOf(peerContext);
    if (peer < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    return this.#grants.disable(this.contexts.device, peer)
      ? C.CUDA_SUCCESS
      : C.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  }
}
