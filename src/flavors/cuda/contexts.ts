/** CUDA contexts: retained primary contexts, those cuCtxCreate makes, and the calling thread's current one. */
import type { Runtime } from '../../core/runtime.js';
import { type Box, handleKey, toInt, writeBox } from '../common/args.js';
import * as C from './constants.js';

/** Context handles are opaque; these are deterministic per device. */
const CONTEXT_BASE = 0xc0_0000n;
/** Created contexts: opaque handles, never reused in a process. */
const CREATED_CONTEXT_BASE = 0xcc_0000_0000n;
const CTX_SCHED_MASK = 7;
const CTX_FLAG_BITS = 0xff;

/** What a context cuCtxCreate made owns (Note [Created contexts]). */
export interface CreatedContext {
  readonly device: number;
  readonly streams: Set<bigint>;
  readonly events: Set<number>;
  readonly allocations: Set<number>;
  readonly hostBuffers: Set<Uint8Array>;
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
 * A primary context cannot be destroyed here: cuCtxDestroy answers
 * CUDA_ERROR_INVALID_CONTEXT for one, which is this model's choice (the
 * documentation does not say what the driver answers; the conformance case
 * ctx.destroyPrimary records it). One thread only: a context current to
 * "other threads" does not arise.
 *
 * Note [The context stack]
 * The calling thread's current context is the top of its context stack
 * (cuCtxSetCurrent's documentation): cuCtxCreate and cuCtxPushCurrent push,
 * cuCtxPopCurrent pops and hands back the context it popped (none current:
 * CUDA_ERROR_INVALID_CONTEXT), cuCtxSetCurrent replaces the top, and
 * cuCtxSetCurrent(NULL) "is equivalent to popping the top" (a no-op on an
 * empty stack), so the context below becomes current, not none. The
 * conformance case settle.setCurrentNullWithStack records the H200's answers.
 */
export class CudaContexts {
  /** Primary contexts retained, per device ordinal: retain count. */
  readonly #primaryRefs: number[];
  /** Contexts cuCtxCreate made, by handle. */
  readonly #created = new Map<bigint, CreatedContext>();
  #nextContext = 1n;
  /** The current context's handle (0n: none). */
  #handle = 0n;
  /** The current context's device ordinal, or -1. */
  #device = -1;
  /** Contexts below the current one on the thread's context stack (cuCtxCreate pushes). */
  readonly #stack: bigint[] = [];

  constructor(readonly runtime: Runtime) {
    this.#primaryRefs = runtime.devices.map(() => 0);
  }

  /** The current context's device, or -1 when no context is current. */
  get device(): number {
    return this.#device;
  }

  get handle(): bigint {
    return this.#handle;
  }

  retainPrimary(ctx: Box<bigint>, d: number): number {
    if (!writeBox(ctx, contextHandle(d))) return C.CUDA_ERROR_INVALID_VALUE;
    this.#primaryRefs[d]++;
    return C.CUDA_SUCCESS;
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
    if (ctx === null || ctx === 0 || ctx === 0n) {
      this.#popTop();
      return C.CUDA_SUCCESS;
    }
    const d = this.deviceOf(ctx);
    if (d < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    this.setCurrent(typeof ctx === 'bigint' ? ctx : BigInt(ctx), d);
    return C.CUDA_SUCCESS;
  }

  setCurrent(ctx: bigint, device: number): void {
    this.#handle = ctx;
    this.#device = device;
  }

  /** cuCtxPushCurrent: a retained primary or a created context goes on top of the stack (NULL: CUDA_ERROR_INVALID_VALUE). */
  push(ctx: unknown): number {
    if (ctx === null || ctx === undefined || ctx === 0 || ctx === 0n) return C.CUDA_ERROR_INVALID_VALUE;
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
    const h = CREATED_CONTEXT_BASE + this.#nextContext;
    if (!writeBox(pctx, h)) return C.CUDA_ERROR_INVALID_VALUE;
    this.#nextContext++;
    this.#created.set(h, {
      device: d,
      streams: new Set(),
      events: new Set(),
      allocations: new Set(),
      hostBuffers: new Set(),
    });
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
    this.#created.delete(h);
    const below = this.#stack.filter((x) => x !== h);
    this.#stack.length = 0;
    this.#stack.push(...below);
    if (this.#handle === h) this.#popTop();
  }

  /** The created context that is current, whose resources a create call records; undefined for a primary one. */
  owner(): CreatedContext | undefined {
    return this.#created.size === 0 ? undefined : this.#created.get(this.#handle);
  }

  /** Every created context (a freed resource leaves each one's books). */
  allCreated(): IterableIterator<CreatedContext> {
    return this.#created.values();
  }

  /** The device of a retained primary context's handle or of a created one, or -1. */
  deviceOf(ctx: unknown): number {
    const created = this.#created.size === 0 ? undefined : this.#created.get(handleKey(ctx) ?? -1n);
    if (created !== undefined) return created.device;
    const d =
      typeof ctx === 'bigint'
        ? Number(ctx - CONTEXT_BASE)
        : typeof ctx === 'number' && Number.isSafeInteger(ctx)
          ? ctx - Number(CONTEXT_BASE)
          : Number.NaN;
    return this.runtime.isDevice(d) && this.#primaryRefs[d] > 0 ? d : -1;
  }

  /** A context's device for cuMemcpyPeer: C's NULL context is the current one. */
  deviceOrCurrent(ctx: unknown): number {
    return ctx === 0n || ctx === 0 || ctx === null ? this.#device : this.deviceOf(ctx);
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
