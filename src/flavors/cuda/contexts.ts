/** CUDA contexts: retained primary contexts, those cuCtxCreate makes, and the calling thread's current one. */
import { isVmmError } from '../../core/errors.js';
import type { Runtime } from '../../core/runtime.js';
import { type Box, handleKey, isNull, toInt, writeBox } from '../common/args.js';
import * as C from './constants.js';

/** Context handles are opaque; these are deterministic per device. */
const CONTEXT_BASE = 0xc0_0000n;
/** Created contexts: opaque handles, never reused in a process. */
const CREATED_CONTEXT_BASE = 0xcc_0000_0000n;
const CTX_SCHED_MASK = 7;
const CTX_FLAG_BITS = 0xff;

/** What a context owns, released with it (Notes [Created contexts], [Destroying a primary context]). */
export interface ContextObjects {
  readonly streams: Set<bigint>;
  readonly events: Set<number>;
  readonly allocations: Set<number>;
  readonly hostBuffers: Set<Uint8Array>;
}

/** A context cuCtxCreate made: its device and what it owns (Note [Created contexts]). */
export interface CreatedContext extends ContextObjects {
  readonly device: number;
  /** The backend's id for it (Backend.createContext), undefined where the backend places on its own. */
  readonly heap: number | undefined;
}

function noObjects(): ContextObjects {
  return { streams: new Set(), events: new Set(), allocations: new Set(), hostBuffers: new Set() };
}

/**
 * Note [Created contexts]
 * cuCtxCreate makes a context of its own on a device and pushes it on the
 * calling thread's context stack (the current context goes below it).
 * Everything a call does for "the current context" it does for that
 * context's device, as with a primary context; what the created context adds
 * is ownership. The streams, events, cuMemAlloc and cuMemAllocHost memory
 * made while it is current are its, and cuCtxDestroy releases them all
 * (after finishing the device's work), as the driver's documentation says;
 * VMM memory (cuMemCreate, cuMemMap) is not a context's and stays. If the
 * destroyed context was current, the one below it on the stack becomes
 * current (none: no context). A handle of a destroyed context, or of
 * anything it owned, is never valid again (handles are not reused).
 * A primary context is destroyed the same way (Note [Destroying a primary
 * context]). One thread only: a context current to "other threads" does not
 * arise.
 *
 * Note [The context stack]
 * The calling thread's current context is the top of its context stack
 * (cuCtxSetCurrent's documentation): cuCtxCreate and cuCtxPushCurrent push,
 * cuCtxPopCurrent pops and hands back the context it popped (none current:
 * CUDA_ERROR_INVALID_CONTEXT), cuCtxSetCurrent replaces the top, and
 * cuCtxSetCurrent(NULL) "is equivalent to popping the top" (a no-op on an
 * empty stack), so the context below becomes current, not none. The H200
 * agrees (settle.setCurrentNullWithStack): with two created contexts over
 * the primary one, cuCtxSetCurrent(NULL) leaves the first current, pops hand
 * back each top down to the primary context, a pop with none current is
 * CUDA_ERROR_INVALID_CONTEXT, and a push of NULL CUDA_ERROR_INVALID_VALUE.
 *
 * Note [Destroying a primary context]
 * cuCtxDestroy does not destroy a primary context: on the H200 it answers
 * CUDA_ERROR_INVALID_CONTEXT and changes nothing (driver 580, the
 * primaryDestroy.* cases, each in a fresh process): the context stays current
 * and active, its cuMemAlloc memory, host memory, streams and events stay
 * usable and are freed by their own calls, and a later retain hands back the
 * same handle. (ctx.destroyPrimary's first record, where it answered 0, was
 * made in a process that had run eleven cases first; recorded alone it
 * answers 201 too, and so it does after a created context's destroy or a
 * freed event's query: primaryDestroy.after*.)
 * What destroys a primary context is cuDevicePrimaryCtxReset, which
 * "destroys all allocations and resets all state" (its documentation), and
 * the release of its last retain ("destroyed regardless of how many threads
 * it is current to", cuDevicePrimaryCtxRelease's). The streams, events,
 * cuMemAlloc and page-locked host memory made while it was current go as a
 * created context's do with cuCtxDestroy (Note [Created contexts]), after the
 * device's work has finished, so each primary context keeps its objects'
 * books as a created one does; VMM memory is the device's and stays. The
 * H200 (primaryDestroy.reset*, 2026-12-01 23:44 UTC): after a reset the
 * context is inactive (cuDevicePrimaryCtxGetState's active 0) and still
 * current, cuCtxSynchronize and cuMemGetInfo answer
 * CUDA_ERROR_CONTEXT_IS_DESTROYED (709) while cuCtxGetDevice still answers
 * its device; a retain makes it anew with the same handle, after which the
 * old cuMemAlloc pointer is unknown to the pointer calls and cuMemFree, an
 * old event answers CUDA_ERROR_INVALID_CONTEXT (streams.ts), the VMM mapping
 * is as it was, and the retain count was kept ("resetting the primary
 * context does not release it"); after the last release, with the context
 * current, cuCtxSynchronize answers 709 (resetReleases' contextAfter). An old
 * stream is CUDA_ERROR_INVALID_HANDLE here, where the driver crashed
 * (listed). cuCtxSetCurrent takes a reset context's handle while it is
 * retained; a released one is refused, CUDA_ERROR_INVALID_CONTEXT, as before
 * (the model's choice: not asked of the H200).
 *
 * Note [Faulted devices]
 * Work that meets memory it may not touch when it runs (a queued copy whose
 * access went, a graph replayed into memory unmapped since its capture)
 * faults on the device, and on the H200 the fault is the process's for
 * good (driver 580, the stickyFault.* cases, 2026-12-02 12:53 UTC): the
 * synchronisation that meets it answers CUDA_ERROR_LAUNCH_FAILED (719),
 * and so from then on does every call that uses one of the device's
 * contexts: synchronisations and queries of streams and events, copies and
 * sets of every kind (cuMemcpyPeer too), event records and waits,
 * cuEventElapsedTime, making or destroying a stream or an event, cuMemAlloc,
 * cuMemFree, page-locked host memory and its queries, cuMemGetInfo,
 * cuMemGetAddressRange, the capture calls and cuGraphInstantiate, peer
 * access; a created context's calls as much as the primary one's, whichever
 * faulted (stickyFault.inCreatedContext). Nothing ends it: not cuCtxDestroy
 * of the context that faulted, not cuDevicePrimaryCtxReset or the last
 * release (both answer 0, and the destroyed context 709 as usual), after
 * which the retain that would make the context anew answers 719, as does
 * cuCtxCreate (stickyFault.primaryReset, releaseToZero, thenCreateContext).
 * What does not use a context still answers: every VMM call (reserve,
 * create, map, access, unmap, release, free, properties, retain,
 * granularity), cuPointerGetAttribute(s), the context stack and
 * cuCtxGetDevice, cuDevicePrimaryCtxGetState, device and version queries,
 * cuGraphGetNodes and the graph destroys. A call answered 719 changes
 * nothing here (what the driver keeps of it cannot be asked). One GPU
 * cannot say whether another device's contexts would fault too; here the
 * fault is the device's, as the hardware's is, so a call given a stream or
 * an event of a faulted device answers 719 whichever context is current,
 * and one with a healthy device's context current and objects answers as
 * ever.
 */
export class CudaContexts {
  /** Primary contexts retained, per device ordinal: retain count. */
  readonly #primaryRefs: number[];
  /** What each device's primary context owns (Note [Destroying a primary context]). */
  readonly #primaryObjects: ContextObjects[];
  /** Per device: its primary context was destroyed and not retained since. */
  readonly #primaryDestroyed: boolean[];
  /** Per device: work faulted on it, for the rest of the process (Note [Faulted devices]). */
  readonly #faulted: boolean[];
  /** Contexts cuCtxCreate made, by handle. */
  readonly #created = new Map<bigint, CreatedContext>();
  /** Created contexts since destroyed: their devices (Note [Context-taking calls of CUDA 13.0]). */
  readonly #destroyedCreated = new Map<bigint, number>();
  #nextContext = 1n;
  /** The current context's handle (0n: none). */
  #handle = 0n;
  /** The current context's device ordinal, or -1. */
  #device = -1;
  /** Contexts below the current one on the thread's context stack (cuCtxCreate pushes). */
  readonly #stack: bigint[] = [];

  constructor(readonly runtime: Runtime) {
    this.#primaryRefs = runtime.devices.map(() => 0);
    this.#primaryObjects = runtime.devices.map(noObjects);
    this.#primaryDestroyed = runtime.devices.map(() => false);
    this.#faulted = runtime.devices.map(() => false);
  }

  /** Work faulted on device `d` (Note [Faulted devices]); an ordinal that is no device is ignored. */
  fault(d: number): void {
    if (this.runtime.isDevice(d)) this.#faulted[d] = true;
  }

  /** Whether work faulted on device `d` (Note [Faulted devices]). */
  faulted(d: number): boolean {
    return this.#faulted[d] === true;
  }

  /** The current context's device, or -1 when no context is current. */
  get device(): number {
    return this.#device;
  }

  get handle(): bigint {
    return this.#handle;
  }

  retainPrimary(ctx: Box<bigint>, d: number): number {
    // On a faulted device a live one is retained; one that must be made anew is not (Note [Faulted devices]).
    if (this.#faulted[d] && !this.#primaryLive(d)) return C.CUDA_ERROR_LAUNCH_FAILED;
    if (!writeBox(ctx, contextHandle(d))) return C.CUDA_ERROR_INVALID_VALUE;
    this.#primaryRefs[d]++;
    this.#primaryDestroyed[d] = false;
    // A destroyed primary context current here is live again (Note [Destroying a primary context]).
    if (this.#handle === contextHandle(d)) this.#device = d;
    return C.CUDA_SUCCESS;
  }

  /** cuDevicePrimaryCtxGetState for a valid device: no flags set (cuDevicePrimaryCtxSetFlags is not modelled), active while retained and not reset. */
  primaryState(d: number, flags: Box<number>, active: Box<number>): number {
    if (!writeBox(flags, 0) || !writeBox(active, this.#primaryLive(d) ? 1 : 0))
      return C.CUDA_ERROR_INVALID_VALUE;
    return C.CUDA_SUCCESS;
  }

  /** The device whose primary context `ctx` names (a bigint, or a number the types allow), retained or not, or -1. */
  primaryDevice(ctx: unknown): number {
    const d =
      typeof ctx === 'bigint'
        ? Number(ctx - CONTEXT_BASE)
        : typeof ctx === 'number' && Number.isSafeInteger(ctx)
          ? ctx - Number(CONTEXT_BASE)
          : Number.NaN;
    return this.runtime.isDevice(d) ? d : -1;
  }

  /** Whether device `d`'s primary context is retained and not reset since. */
  #primaryLive(d: number): boolean {
    return this.#primaryRefs[d] > 0 && !this.#primaryDestroyed[d];
  }

  /** What device `d`'s primary context owns. */
  primaryObjects(d: number): ContextObjects {
    return this.#primaryObjects[d];
  }

  /**
   * cuDevicePrimaryCtxReset, its objects released by the caller (Note
   * [Destroying a primary context]): inactive until a retain, still current
   * where it was, its retain count kept.
   */
  resetPrimary(d: number): void {
    this.#primaryDestroyed[d] = true;
    this.#primaryObjects[d] = noObjects();
    if (this.#handle === contextHandle(d)) this.#device = -1;
  }

  /**
   * Whether a call that needs a context has one: CUDA_SUCCESS, none current
   * (CUDA_ERROR_INVALID_CONTEXT), or a destroyed one current
   * (CUDA_ERROR_CONTEXT_IS_DESTROYED, Note [Destroying a primary context]).
   */
  currentCode(): number {
    if (this.#device !== -1) return C.CUDA_SUCCESS;
    return this.#handle === 0n ? C.CUDA_ERROR_INVALID_CONTEXT : C.CUDA_ERROR_CONTEXT_IS_DESTROYED;
  }

  /** currentCode, and CUDA_ERROR_LAUNCH_FAILED when the current context's device faulted (Note [Faulted devices]). */
  usableCode(): number {
    if (this.#device !== -1) return this.#faulted[this.#device] ? C.CUDA_ERROR_LAUNCH_FAILED : C.CUDA_SUCCESS;
    return this.currentCode();
  }

  /** The current context's device, a destroyed primary one's included (cuCtxGetDevice); -1 for none. */
  namedDevice(): number {
    return this.#device !== -1 ? this.#device : this.primaryDevice(this.#handle);
  }

  /** Whether device `d`'s primary context has a retain left. */
  primaryRetained(d: number): boolean {
    return this.#primaryRefs[d] > 0;
  }

  releasePrimary(d: number): number {
    if (this.#primaryRefs[d] === 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.#primaryRefs[d]--;
    return C.CUDA_SUCCESS;
  }

  /**
   * cuCtxSetCurrent replaces the top of the thread's context stack: NULL pops
   * it (Note [The context stack]); else a retained primary or a created
   * context (a bigint or a number) takes the top's place.
   */
  makeCurrent(ctx: bigint | number | null): number {
    if (isNull(ctx)) {
      this.#popTop();
      return C.CUDA_SUCCESS;
    }
    const d = this.deviceOf(ctx);
    if (d < 0) {
      // A reset primary context's handle is taken while retained (Note [Destroying a primary context]).
      const p = this.primaryDevice(ctx);
      if (p < 0 || !this.#primaryDestroyed[p] || this.#primaryRefs[p] === 0)
        return C.CUDA_ERROR_INVALID_CONTEXT;
      this.setCurrent(contextHandle(p), -1);
      return C.CUDA_SUCCESS;
    }
    this.setCurrent(typeof ctx === 'bigint' ? ctx : BigInt(ctx), d);
    return C.CUDA_SUCCESS;
  }

  setCurrent(ctx: bigint, device: number): void {
    this.#handle = ctx;
    this.#device = device;
  }

  /** cuCtxPushCurrent: a retained primary or a created context goes on top of the stack (NULL: CUDA_ERROR_INVALID_VALUE). */
  push(ctx: unknown): number {
    if (isNull(ctx)) return C.CUDA_ERROR_INVALID_VALUE;
    const d = this.deviceOf(ctx);
    if (d < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (this.#handle !== 0n) this.#stack.push(this.#handle);
    this.setCurrent(typeof ctx === 'bigint' ? ctx : BigInt(ctx as number), d);
    return C.CUDA_SUCCESS;
  }

  /** cuCtxPopCurrent: the top's handle into `pctx` (NULL: not written), the one below it current; none: INVALID_CONTEXT. */
  pop(pctx: Box<bigint> | null): number {
    if (this.#handle === 0n) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (pctx !== null && pctx !== undefined && !writeBox(pctx, this.#handle))
      return C.CUDA_ERROR_INVALID_VALUE;
    this.#popTop();
    return C.CUDA_SUCCESS;
  }

  #popTop(): void {
    const next = this.#stack.pop() ?? 0n;
    this.setCurrent(next, next === 0n ? -1 : this.deviceOf(next));
  }

  /** cuCtxCreate after its flag checks: a new context on `d`, made current (pushed on the thread's stack). */
  create(pctx: Box<bigint>, d: number): number {
    if (!this.runtime.isDevice(d)) return C.CUDA_ERROR_INVALID_DEVICE;
    if (this.#faulted[d]) return C.CUDA_ERROR_LAUNCH_FAILED;
    const h = CREATED_CONTEXT_BASE + this.#nextContext;
    // The simulated driver's placement gives it a heap (Note [Created contexts' heaps] in backends/sim/driver-va.ts).
    let heap: number | undefined;
    try {
      heap = this.runtime.createContext();
    } catch (e) {
      // No address space left for its heap; anything else is a bug, not a code.
      if (!isVmmError(e)) throw e;
      return C.CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!writeBox(pctx, h)) {
      if (heap !== undefined) this.runtime.destroyContext(heap);
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    this.#nextContext++;
    this.#created.set(h, { device: d, heap, ...noObjects() });
    if (this.#handle !== 0n) this.#stack.push(this.#handle);
    this.setCurrent(h, d);
    return C.CUDA_SUCCESS;
  }

  /** The created context a handle names, or undefined (a primary context, or none). */
  created(h: bigint): CreatedContext | undefined {
    return this.#created.get(h);
  }

  /** Drop a created context whose resources are released; the one below it becomes current if it was. */
  remove(h: bigint): void {
    const c = this.#created.get(h);
    if (c !== undefined) this.#destroyedCreated.set(h, c.device);
    if (c?.heap !== undefined) this.runtime.destroyContext(c.heap);
    this.#created.delete(h);
    const below = this.#stack.filter((x) => x !== h);
    this.#stack.length = 0;
    this.#stack.push(...below);
    if (this.#handle === h) this.#popTop();
  }

  /** The live context that is current, whose books a create call records in; undefined when none is. */
  owner(): ContextObjects | undefined {
    if (this.#device === -1) return undefined;
    const created = this.#created.size === 0 ? undefined : this.#created.get(this.#handle);
    return created ?? this.#primaryObjects[this.#device];
  }

  /** Every context's books, created and primary (a freed resource leaves each one's). */
  *allOwners(): IterableIterator<ContextObjects> {
    yield* this.#created.values();
    yield* this.#primaryObjects;
  }

  /** The device of a retained primary context's handle or of a created one, or -1. */
  deviceOf(ctx: unknown): number {
    const created = this.#created.size === 0 ? undefined : this.#created.get(handleKey(ctx) ?? -1n);
    if (created !== undefined) return created.device;
    const d = this.primaryDevice(ctx);
    return d >= 0 && this.#primaryLive(d) ? d : -1;
  }

  /**
   * Note [Context-taking calls of CUDA 13.0]
   * cuda.h 13.0 adds cuCtxGetDevice_v2(device, ctx) and cuCtxSynchronize_v2(ctx)
   * beside the unchanged plain names. As the H200 answered them (ctxV2.*,
   * driver 580): NULL is the current context, and with none current device
   * 0 (cuCtxGetDevice_v2 answers 0, cuCtxSynchronize_v2 succeeds; one GPU
   * cannot tell device 0 from the device last current); a created context
   * answers its device whether or not it is current, and still after
   * cuCtxDestroy, when cuCtxSynchronize_v2 answers
   * CUDA_ERROR_CONTEXT_IS_DESTROYED (709). A handle that never named a
   * context is CUDA_ERROR_INVALID_CONTEXT (the documentation's code; not
   * asked of the driver, whose handles are pointers it would follow).
   */
  contextV2Device(ctx: unknown): number {
    // NULL: the current context, a reset primary one's device included, as cuCtxGetDevice answers.
    if (isNull(ctx)) return Math.max(this.namedDevice(), 0);
    const live = this.deviceOf(ctx);
    if (live >= 0) return live;
    const key = handleKey(ctx);
    const destroyed = key === undefined ? undefined : this.#destroyedCreated.get(key);
    if (destroyed !== undefined) return destroyed;
    const p = this.primaryDevice(ctx);
    return p >= 0 && this.#primaryDestroyed[p] ? p : -1;
  }

  /** Whether `ctx` names a destroyed context: a created one, or a primary one reset and not retained since (NULL: the current one). */
  isDestroyed(ctx: unknown): boolean {
    if (isNull(ctx)) return this.currentCode() === C.CUDA_ERROR_CONTEXT_IS_DESTROYED;
    const key = handleKey(ctx);
    if (key !== undefined && this.#destroyedCreated.has(key)) return true;
    const p = this.primaryDevice(ctx);
    return p >= 0 && this.#primaryDestroyed[p];
  }

  /** A context's device for cuMemcpyPeer: C's NULL context is the current one. */
  deviceOrCurrent(ctx: unknown): number {
    return isNull(ctx) ? this.#device : this.deviceOf(ctx);
  }
}

/** cuCtxCreate's flags: one scheduling choice and the other CU_CTX_* bits; -1 if they are not. */
export function contextFlags(flags: unknown): number {
  const f = toInt(flags);
  if (!(f >= 0) || f > CTX_FLAG_BITS || (f & ~CTX_FLAG_BITS) !== 0) return -1;
  const sched = f & CTX_SCHED_MASK;
  if (
    sched !== 0 &&
    sched !== C.CU_CTX_SCHED_SPIN &&
    sched !== C.CU_CTX_SCHED_YIELD &&
    sched !== C.CU_CTX_SCHED_BLOCKING_SYNC
  )
    return -1;
  return f;
}

/** The handle of device `device`'s primary context. */
export function contextHandle(device: number): bigint {
  return CONTEXT_BASE + BigInt(device);
}
