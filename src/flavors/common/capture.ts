/** What CUDA's and HIP's capture calls share over core's captures (Note [Stream capture] in src/core/graphs.ts). */
import { rangeUsable } from '../../core/address-book.js';
import { vmmError } from '../../core/errors.js';
import type { Capture, CaptureMode, CaptureStatus } from '../../core/graphs.js';
import type { Runtime } from '../../core/runtime.js';
import { Access } from '../../core/types.js';
import { type Box, handleKey, isBox, writeBox } from './args.js';
import type { VendorCodes } from './error-table.js';

const NO_CAPTURES: readonly Capture[] = [];

/** cudaStreamCaptureMode and hipStreamCaptureMode: GLOBAL 0, THREAD_LOCAL 1, RELAXED 2 (cuda.h, hip_runtime_api.h). */
export const CAPTURE_MODES: ReadonlyMap<number, CaptureMode> = new Map([
  [0, 'global'],
  [1, 'thread-local'],
  [2, 'relaxed'],
]);
const CAPTURE_MODE_RELAXED = 2;

/** CUstreamCaptureStatus and hipStreamCaptureStatus: NONE 0, ACTIVE 1, INVALIDATED 2. */
export function captureStatusValue(s: CaptureStatus): number {
  return s === 'none' ? 0 : s === 'active' ? 1 : 2;
}

/**
 * A copy from the host captured into a graph has its destination checked when
 * it is captured, while a memset's is checked only at launch: the H200's
 * answer (capture.validate.badAddressesInCapture), HIP modelled alike. So the
 * flavours' host-to-device copies call this first; core captures any work as
 * given. Throws core's not-mapped error, which each vendor's table answers.
 */
export function checkCapturedHostCopy(
  runtime: Runtime,
  device: number,
  va: number,
  size: number,
  stream: number,
): void {
  if (
    runtime.captures.captureOf(stream) !== undefined &&
    !rangeUsable(runtime, device, va, size, Access.ReadWrite)
  )
    throw vmmError('not-mapped', `a captured copy to ${va} of ${size} bytes`);
}

/** Graphs and executable graphs: opaque handles over core's ids, never reused in a process. */
const GRAPH_BASE = 1n << 48n;
const EXEC_BASE = 2n << 48n;
/** Ids below this are core's; a graph handle given out during its capture is above it. */
const ID_LIMIT = 1n << 47n;
/** The handle a capture's graph is given before its end. */
const pendingHandle = (captureId: number): bigint => GRAPH_BASE + ID_LIMIT + BigInt(captureId);

/**
 * Graph and executable-graph handles, and the calls both vendors hand them
 * out by the same steps (an end, an instantiation, a node count), each
 * undoing what it made when the out-parameter cannot take it. A graph asked
 * for during its capture (cuStreamGetCaptureInfo's graph_out) gets its
 * handle then, and the end gives the same one.
 */
export class GraphHandles {
  /** Captures whose graph handle was given out before their end (GRAPH_BASE + ID_LIMIT + the capture's id). */
  readonly #pending = new Set<number>();
  /** Core graph ids of those handles, once the capture ended. */
  readonly #bound = new Map<bigint, number>();

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    /** The vendor's "invalid value" code: a bad handle or an out-parameter that cannot be written. */
    readonly invalidValue: number,
  ) {}

  /**
   * End the capture begun on core's `stream` and write its graph's handle to
   * `out`; a NULL `out` drops the graph (the caller refuses NULL first where
   * its vendor does). The capture is over either way.
   */
  end(stream: number, out: Box<bigint> | null): number {
    const capture = this.runtime.captures.captureOf(stream);
    let graph: number | undefined;
    const code = this.codes.run(() => {
      graph = this.runtime.endCapture(stream);
    });
    const h = this.#ended(capture, graph);
    const made = graph;
    if (code !== this.codes.success || made === undefined) return code;
    if (isBox(out) && writeBox(out, h)) return this.codes.success;
    this.runtime.quietly(() => this.runtime.destroyGraph(made));
    return isBox(out) ? this.invalidValue : this.codes.success;
  }

  /** An executable graph of graph handle `h`, its handle written to `out`. */
  instantiate(out: Box<bigint>, h: unknown): number {
    const graph = this.graph(h);
    if (graph < 0) return this.invalidValue;
    let exec = 0;
    const code = this.codes.run(() => {
      exec = this.runtime.instantiateGraph(graph);
    });
    if (code !== this.codes.success) return code;
    if (writeBox(out, EXEC_BASE + BigInt(exec))) return this.codes.success;
    this.runtime.quietly(() => this.runtime.destroyGraphExec(exec));
    return this.invalidValue;
  }

  /** The node count of graph handle `h`, written to `numNodes`. */
  nodes(h: unknown, numNodes: Box<number> | null): number {
    if (!isBox(numNodes)) return this.invalidValue;
    const graph = this.graph(h);
    if (graph < 0) return this.invalidValue;
    let n = 0;
    const code = this.codes.run(() => {
      n = this.runtime.captures.graph(graph).work.length;
    });
    if (code !== this.codes.success) return code;
    return writeBox(numNodes, n) ? this.codes.success : this.invalidValue;
  }

  /** The handle of the graph capture `c` is making. */
  pending(c: Capture): bigint {
    this.#pending.add(c.id);
    return pendingHandle(c.id);
  }

  /** The handle of core graph `graph`, made by capture `c` (undefined: the capture failed). */
  #ended(c: Capture | undefined, graph: number | undefined): bigint {
    const pending = c !== undefined && this.#pending.delete(c.id);
    if (graph === undefined) return 0n;
    if (!pending) return GRAPH_BASE + BigInt(graph);
    const h = pendingHandle(c.id);
    this.#bound.set(h, graph);
    return h;
  }

  /** A graph handle as core's graph id, or -1. */
  graph(h: unknown): number {
    const key = handleKey(h);
    if (typeof key !== 'bigint') return -1;
    return this.#bound.get(key) ?? idFrom(key, GRAPH_BASE);
  }

  /** Destroy the graph of handle `h` (the vendor's "invalid value" for no graph). */
  destroy(h: unknown): number {
    const graph = this.graph(h);
    if (graph < 0) return this.invalidValue;
    const code = this.codes.run(() => this.runtime.destroyGraph(graph));
    const key = handleKey(h);
    if (code === this.codes.success && key !== undefined) this.#bound.delete(key);
    return code;
  }

  /** Destroy the executable graph of handle `h`. */
  destroyExec(h: unknown): number {
    const exec = this.exec(h);
    if (exec < 0) return this.invalidValue;
    return this.codes.run(() => this.runtime.destroyGraphExec(exec));
  }

  exec(h: unknown): number {
    const key = handleKey(h);
    return typeof key === 'bigint' ? idFrom(key, EXEC_BASE) : -1;
  }
}

function idFrom(key: bigint, base: bigint): number {
  return key <= base || key >= base + ID_LIMIT ? -1 : Number(key - base);
}

/**
 * The calling thread's capture mode (cuThreadExchangeStreamCaptureMode,
 * hipThreadExchangeStreamCaptureMode), GLOBAL at first; one JavaScript
 * thread is one driver thread.
 */
export class ThreadCaptureMode {
  #mode = 0;

  /**
   * Swap: `box.value` in, the previous mode out; false (the vendor's
   * "invalid value") when the box cannot be read or written or `accepts`
   * refuses the value, the mode then unchanged.
   */
  exchange(box: Box<number>, accepts: (value: unknown) => value is number): boolean {
    if (!isBox(box)) return false;
    let wanted: unknown;
    try {
      wanted = box.value;
    } catch {
      return false;
    }
    if (!accepts(wanted) || !writeBox(box, this.#mode)) return false;
    this.#mode = wanted;
    return true;
  }

  /**
   * The captures a potentially unsafe call (cuMemAlloc, hipMalloc) is
   * refused for: none from a relaxed thread, else every open capture not
   * begun relaxed (one thread, so GLOBAL and THREAD_LOCAL act alike here).
   * The caller invalidates them and answers the vendor's "unsupported
   * during capture". `open` is the open captures (runtime.captures.captures());
   * with none, the answer is that same empty array, nothing built.
   */
  prohibiting(open: readonly Capture[]): readonly Capture[] {
    if (open.length === 0 || this.#mode === CAPTURE_MODE_RELAXED) return NO_CAPTURES;
    return open.filter((c) => c.mode !== 'relaxed');
  }
}
