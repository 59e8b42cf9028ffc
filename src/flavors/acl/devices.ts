/** ACL's process state: initialised or not, the devices aclrtSetDevice holds, contexts, the current one, peers. */
import type { Runtime } from '../../core/runtime.js';
import {
  type Box,
  handleKey,
  isBox,
  isNull,
  type Size,
  show,
  toCount,
  toInt,
  writeBox,
} from '../common/args.js';
import { PeerGrants } from '../common/peers.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import type { Pointer } from './structs.js';

/** aclrtContext handles: each device's default context, then those aclrtCreateContext makes. */
const DEFAULT_CONTEXT_BASE = 0xc7_0000n;
const CONTEXT_BASE = 0xc8_0000n;

/**
 * Note [ACL peer access]
 * aclrtDeviceEnablePeerAccess is recorded per (current device, peer) pair
 * and undone by aclrtDeviceDisablePeerAccess or the current device's reset.
 * It gates nothing in the simulator: a copy between devices is governed by
 * the mappings' access (aclrtMemSetAccess), which is what core checks.
 * Enabling a pair twice succeeds (unsure: CANN documents no code for it).
 */
export class AclDevices {
  initialized = false;
  /** Set by dispose(): the process is gone (Note [ACL after dispose]). */
  gone = false;
  /** aclrtSetDevice count per device ordinal (aclrtResetDevice undoes one). */
  readonly #refs: number[];
  /** The calling thread's current device, or -1. */
  #current = -1;
  /** Contexts aclrtCreateContext made -> their device. */
  readonly #contexts = new Map<bigint, number>();
  #nextContext = 1n;
  /** The calling thread's current context (0n: none); a device's default one after aclrtSetDevice. */
  #context = 0n;
  /** Pairs aclrtDeviceEnablePeerAccess enabled (the Note). */
  readonly peers: PeerGrants;

  constructor(
    readonly runtime: Runtime,
    readonly codes: AclCodes,
  ) {
    this.#refs = runtime.devices.map(() => 0);
    this.peers = new PeerGrants(runtime.devices.length);
  }

  /** The current device, or -1. */
  get current(): number {
    return this.#current;
  }

  /** What a call answers before aclInit, after aclFinalize, and after dispose (Note [ACL after dispose]). */
  uninitialized(): number {
    return this.codes.bad(
      C.ACL_ERROR_UNINITIALIZE,
      this.gone ? 'the process was disposed' : 'aclInit was not called',
    );
  }

  /** ACL_SUCCESS when initialised with a device set, else the refusal. */
  needDevice(): number {
    if (!this.initialized) return this.uninitialized();
    if (this.#current === -1)
      return this.codes.bad(C.ACL_ERROR_RT_CONTEXT_NULL, 'no device was set (aclrtSetDevice)');
    return C.ACL_SUCCESS;
  }

  /** A bad device ordinal's refusal, or undefined for a device of the machine. */
  badDevice(deviceId: unknown): number | undefined {
    return this.runtime.isDevice(toInt(deviceId))
      ? undefined
      : this.codes.bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(deviceId)}`);
  }

  /** aclFinalize after its checks: the devices still held, each to be reset once more. */
  finalize(): number[] {
    const held: number[] = [];
    for (let d = 0; d < this.#refs.length; d++) {
      if (this.#refs[d] > 0) {
        this.#refs[d] = 1;
        held.push(d);
      }
    }
    return held;
  }

  /** After aclFinalize's resets: no context, no device, not initialised. */
  finalized(): void {
    this.#contexts.clear();
    this.#context = 0n;
    this.#current = -1;
    this.initialized = false;
  }

  /** Gone for good (dispose). */
  dispose(): void {
    this.gone = true;
    this.initialized = false;
    this.#current = -1;
  }

  setDevice(d: number): void {
    this.#refs[d]++;
    this.#current = d;
    this.#context = DEFAULT_CONTEXT_BASE + BigInt(d);
  }

  /** Whether aclrtSetDevice's count for `d` is above 0 (Note [Resetting a reset device]). */
  held(d: number): boolean {
    return this.#refs[d] > 0;
  }

  /** Undo one aclrtSetDevice of a device held (held(d)): true when that was the last (the device's resources go). */
  release(d: number): boolean {
    if (--this.#refs[d] > 0) return false;
    if (this.#context === DEFAULT_CONTEXT_BASE + BigInt(d)) {
      this.#current = -1;
      this.#context = 0n;
    }
    this.peers.forgetFrom(d);
    return true;
  }

  /** aclrtResetDeviceForce: the next release is the last. */
  releaseAll(d: number): void {
    if (this.#refs[d] > 1) this.#refs[d] = 1;
  }

  // --- contexts ---

  /** A context on deviceId, made the calling thread's current one (as CANN does). */
  createContext(context: Box<bigint>, deviceId: number): number {
    if (!isBox(context)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    const bad = this.badDevice(deviceId);
    if (bad !== undefined) return bad;
    const d = toInt(deviceId);
    const h = CONTEXT_BASE + this.#nextContext++;
    if (!writeBox(context, h)) return this.codes.unwritable();
    this.#contexts.set(h, d);
    this.#context = h;
    this.#current = d;
    return C.ACL_SUCCESS;
  }

  /** Only aclrtCreateContext's contexts are destroyed; a device's default one goes with aclrtResetDevice. */
  destroyContext(context: Pointer): number {
    if (isNull(context)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    const h = handleKey(context);
    if (h === undefined || !this.#contexts.has(h))
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `no context ${show(context)} made by aclrtCreateContext`,
      );
    this.#contexts.delete(h);
    if (this.#context === h) {
      this.#context = 0n;
      this.#current = -1;
    }
    return C.ACL_SUCCESS;
  }

  setCurrentContext(context: Pointer): number {
    if (isNull(context)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    const h = handleKey(context);
    const d = h === undefined ? undefined : this.#contextDevice(h);
    if (h === undefined || d === undefined)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `no context ${show(context)}`);
    this.#context = h;
    this.#current = d;
    return C.ACL_SUCCESS;
  }

  /** The current context: the one set or created last, or the current device's default one. */
  getCurrentContext(context: Box<bigint>): number {
    if (!isBox(context)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    return writeBox(context, this.#context) ? C.ACL_SUCCESS : this.codes.unwritable();
  }

  /** The device of a live context: a created one, or the default one of a device aclrtSetDevice holds. */
  #contextDevice(h: bigint): number | undefined {
    const created = this.#contexts.get(h);
    if (created !== undefined) return created;
    const d = Number(h - DEFAULT_CONTEXT_BASE);
    return h >= DEFAULT_CONTEXT_BASE && this.runtime.isDevice(d) && this.#refs[d] > 0 ? d : undefined;
  }

  // --- peers (the Note) ---

  /** 1 when both devices exist and differ (every pair of simulated devices can exchange data). */
  canAccessPeer(canAccessPeer: Box<number>, deviceId: number, peerDeviceId: number): number {
    if (!isBox(canAccessPeer)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'canAccessPeer is NULL');
    const bad = this.badDevice(deviceId) ?? this.badDevice(peerDeviceId);
    if (bad !== undefined) return bad;
    return writeBox(canAccessPeer, toInt(deviceId) === toInt(peerDeviceId) ? 0 : 1)
      ? C.ACL_SUCCESS
      : this.codes.unwritable();
  }

  /** peerDeviceId may not be the current device; flags are reserved (0). */
  enablePeer(peerDeviceId: number, flags: Size): number {
    if (toCount(flags) !== 0)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const bad = this.badDevice(peerDeviceId);
    if (bad !== undefined) return bad;
    const peer = toInt(peerDeviceId);
    if (peer === this.#current)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `device ${peer} is the current device`);
    this.peers.enable(this.#current, peer);
    return C.ACL_SUCCESS;
  }

  disablePeer(peerDeviceId: number): number {
    const bad = this.badDevice(peerDeviceId);
    if (bad !== undefined) return bad;
    const peer = toInt(peerDeviceId);
    if (!this.peers.disable(this.#current, peer))
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `peer access to device ${peer} is not enabled`);
    return C.ACL_SUCCESS;
  }
}
