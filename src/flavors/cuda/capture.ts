/**
 * CUDA's stream capture calls over core's captures (Note [Stream capture]
 * in src/core/graphs.ts), with the driver's rules in front (Note [CUDA
 * capture rules]).
 */

import { rangeUsable } from '../../core/address-book.js';
import { type CapturedWork, workRanges } from '../../core/graphs.js';
import type { Runtime } from '../../core/runtime.js';
import { type Box, isBox, isNull, toCount, toInt, writeBox } from '../common/args.js';
import { CAPTURE_MODES, captureStatusValue, GraphHandles, ThreadCaptureMode } from '../common/capture.js';
import type { VendorCodes } from '../common/error-table.js';
import * as C from './constants.js';
import type { CudaContexts } from './contexts.js';
import type { CUevent, CUhandle, CUstream } from './handle-types.js';
import type { CudaStreams } from './streams.js';

/** The capture calls of CUDA_FUNCTIONS. */
export const CUDA_CAPTURE_FUNCTIONS = [
  'cuStreamBeginCapture',
  'cuStreamBeginCapture_v2',
  'cuStreamEndCapture',
  'cuStreamGetCaptureInfo',
  'cuGraphInstantiate',
  'cuGraphInstantiateWithFlags',
  'cuGraphLaunch',
  'cuGraphDestroy',
  'cuGraphExecDestroy',
  'cuGraphGetNodes',
] as const;

/** CUgraphInstantiate_flags (cuda.h): AUTO_FREE_ON_LAUNCH 1, UPLOAD 2, DEVICE_LAUNCH 4, USE_NODE_PRIORITY 8. */
const INSTANTIATE_FLAG_BITS = 1 | 2 | 4 | 8;
/** UPLOAD needs cuGraphInstantiateWithParams' upload stream: CUDA_ERROR_INVALID_VALUE here (capture.graph.badHandles). */
const INSTANTIATE_FLAG_UPLOAD = 2;

/** What a call is, for the rules of what may run during a capture (Note [CUDA capture rules]). */
export type CaptureGuard =
  /** A call the documentation calls potentially unsafe during capture (cuMemAlloc, cuMemFree). */
  | 'unsafe'
  /** A call that waits for every stream (cuCtxSynchronize). */
  | 'device-sync';

/**
 * Note [CUDA capture rules]
 * Modelled from the CUDA driver API documentation (cuStreamBeginCapture,
 * cuThreadExchangeStreamCaptureMode, cuStreamIsCapturing) until the H200's
 * answers (conformance/cuda/cases/capture.ts) say otherwise:
 * - Begin on the legacy NULL stream is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
 *   on a capturing stream CUDA_ERROR_ILLEGAL_STATE; a mode that is none of
 *   GLOBAL, THREAD_LOCAL, RELAXED is CUDA_ERROR_INVALID_VALUE.
 * - While a capture that was not begun RELAXED is open, a potentially unsafe
 *   call (cuMemAlloc, cuMemFree) from a thread whose mode is not RELAXED is
 *   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates that capture. One
 *   JavaScript thread is one CUDA thread, so GLOBAL and THREAD_LOCAL differ
 *   only across threads and act alike here.
 * - Synchronising with a capturing stream (cuStreamSynchronize or
 *   cuStreamQuery of it, cuCtxSynchronize while any capture is open) is
 *   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture.
 * - The legacy NULL stream synchronises with every blocking stream, so work
 *   on it (a synchronous copy or set, or async work given to it) while a
 *   blocking stream captures is CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and
 *   invalidates that capture; cuStreamIsCapturing of it answers
 *   CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates nothing.
 * - An event whose last record was in a capture cannot be queried,
 *   synchronised or waited on outside that capture:
 *   CUDA_ERROR_CAPTURED_EVENT, until a plain record or a launch of the
 *   graph records it again.
 * - Work on an invalidated capture is CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
 *   and so is its end, which still ends it.
 */
export class CudaCapture {
  readonly #threadMode = new ThreadCaptureMode();
  readonly #handles: GraphHandles;

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly streams: CudaStreams,
    readonly contexts: CudaContexts,
  ) {
    this.#handles = new GraphHandles(runtime, codes, C.CUDA_ERROR_INVALID_VALUE);
  }

  /**
   * Swap the calling thread's capture mode: `mode.value` in, the previous
   * mode out. The driver takes any int and hands it back at the next
   * exchange (capture.exchangeModeBadValues); anything else is no C int.
   */
  exchangeMode(mode: Box<number>): number {
    return this.#threadMode.exchange(mode, isCInt) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  begin(hStream: CUstream, mode: number): number {
    const m = CAPTURE_MODES.get(toInt(mode));
    if (m === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    // A destroyed stream: CUDA_ERROR_INVALID_CONTEXT, as cuStreamIsCapturing (capture.begin.destroyedStream).
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (this.#isLegacy(hStream)) return C.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return this.codes.run(() => this.runtime.beginCapture(stream, this.streams.deviceOf(hStream), m));
  }

  /** A NULL phGraph still ends the capture, its graph dropped (capture.end.nullGraphBox). */
  end(hStream: CUstream, phGraph: Box<bigint> | null): number {
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    return this.#handles.end(stream, phGraph);
  }

  /** cuStreamIsCapturing (Note [CUDA capture rules] for the legacy stream). */
  isCapturing(hStream: CUstream, captureStatus: Box<number>): number {
    if (!isBox(captureStatus)) return C.CUDA_ERROR_INVALID_VALUE;
    // A destroyed stream is CUDA_ERROR_INVALID_CONTEXT here, not INVALID_HANDLE (capture.isCapturingDestroyedStream).
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_CONTEXT;
    if (this.#isLegacy(hStream) && this.#blockingCapture() !== undefined)
      return C.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    return writeBox(captureStatus, this.#status(stream)) ? C.CUDA_SUCCESS : C.CUDA_ERROR_INVALID_VALUE;
  }

  /** cuda.h 13.0's cuStreamGetCaptureInfo (_v3); every out-parameter may be NULL. */
  info(
    hStream: CUstream,
    status: Box<number> | null,
    id: Box<bigint> | null,
    graph: Box<bigint> | null,
    numDependencies: Box<number> | null,
  ): number {
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    if (this.#isLegacy(hStream) && this.#blockingCapture() !== undefined)
      return C.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    const c = this.runtime.captures.captureOf(stream);
    const s = this.#status(stream);
    // captureStatus_out is required (capture.info's allNull); the count is written even when not capturing.
    if (!isBox(status) || !writeBox(status, s)) return C.CUDA_ERROR_INVALID_VALUE;
    if (c === undefined || s !== C.CU_STREAM_CAPTURE_STATUS_ACTIVE)
      return !isBox(numDependencies) || writeBox(numDependencies, 0)
        ? C.CUDA_SUCCESS
        : C.CUDA_ERROR_INVALID_VALUE;
    if (isBox(id) && !writeBox(id, BigInt(c.id))) return C.CUDA_ERROR_INVALID_VALUE;
    if (isBox(graph) && !writeBox(graph, this.#handles.pending(c))) return C.CUDA_ERROR_INVALID_VALUE;
    // The stream's work so far is one dependency (its last step), or none before its first.
    const deps = c.steps(stream) > 0 || stream !== c.origin ? 1 : 0;
    if (isBox(numDependencies) && !writeBox(numDependencies, deps)) return C.CUDA_ERROR_INVALID_VALUE;
    return C.CUDA_SUCCESS;
  }

  instantiate(phExec: Box<bigint> | null, hGraph: CUhandle, flags: unknown): number {
    if (!isBox(phExec)) return C.CUDA_ERROR_INVALID_VALUE;
    const f = toCount(flags);
    if (f < 0 || (f & ~INSTANTIATE_FLAG_BITS) !== 0 || (f & INSTANTIATE_FLAG_UPLOAD) !== 0)
      return C.CUDA_ERROR_INVALID_VALUE;
    return this.#handles.instantiate(phExec, hGraph);
  }

  launch(hExec: CUhandle, hStream: CUstream): number {
    const exec = this.#handles.exec(hExec);
    if (exec < 0) return C.CUDA_ERROR_INVALID_VALUE;
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_ERROR_INVALID_HANDLE;
    const code = this.onStream(hStream);
    if (code !== C.CUDA_SUCCESS) return code;
    // A launch into a capture is refused and invalidates it (capture.replay.launchIntoCapture).
    if (this.runtime.captures.status(stream) !== 'none') {
      this.runtime.invalidateCapture(stream);
      return C.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return this.codes.run(() => {
      // Work whose memory is gone faults on the device: the launch succeeds, and the stream's device
      // is faulted from then on (Note [Faulted devices] in contexts.ts). The work is not issued, so
      // over the real driver the real context stays usable (KNOWN_BACKEND_DIVERGENCES).
      // Each step is checked for the device it was captured on, the one core issues it to.
      const usable = (w: CapturedWork) =>
        w.kind === 'record' ||
        workRanges(w).every((r) => rangeUsable(this.runtime, w.device, r.va, r.size, r.access));
      if (this.runtime.captures.exec(exec).work.every(usable)) this.runtime.launchGraph(exec, stream);
      else this.contexts.fault(this.streams.deviceOf(hStream));
    });
  }

  destroyGraph(hGraph: CUhandle): number {
    return this.#handles.destroy(hGraph);
  }

  destroyExec(hExec: CUhandle): number {
    return this.#handles.destroyExec(hExec);
  }

  /** cuGraphGetNodes with NULL nodes: the count. */
  nodes(hGraph: CUhandle, numNodes: Box<number> | null): number {
    return this.#handles.nodes(hGraph, numNodes);
  }

  // --- the rules for other calls during a capture (Note [CUDA capture rules]) ---

  /** A call that is not stream work: what it answers while captures are open (CUDA_SUCCESS: go on). */
  guard(kind: CaptureGuard): number {
    const open = this.runtime.captures.captures();
    if (open.length === 0) return C.CUDA_SUCCESS;
    const prohibiting = kind === 'device-sync' ? open : this.#threadMode.prohibiting(open);
    if (prohibiting.length === 0) return C.CUDA_SUCCESS;
    for (const c of prohibiting) this.runtime.invalidateCapture(c.origin);
    return C.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }

  /** Stream work given to `hStream` (0n: the synchronous calls'): the legacy stream's implicit synchronisation. */
  onStream(hStream: CUstream): number {
    if (!this.#isLegacy(hStream)) return C.CUDA_SUCCESS;
    const c = this.#blockingCapture();
    if (c === undefined) return C.CUDA_SUCCESS;
    this.runtime.invalidateCapture(c);
    return C.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }

  /**
   * cuStreamSynchronize and cuStreamQuery: of a capturing stream refused in
   * every mode; a synchronisation of another stream is an unsafe call
   * (capture.during.otherStreamAsync); the legacy stream's implicit rule.
   */
  onSynchronize(hStream: CUstream, query = false): number {
    const stream = this.streams.stream(hStream);
    if (stream < 0) return C.CUDA_SUCCESS;
    if (this.runtime.captures.status(stream) !== 'none') {
      this.runtime.invalidateCapture(stream);
      return C.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (this.#isLegacy(hStream)) return this.onStream(hStream);
    return query ? C.CUDA_SUCCESS : this.guard('unsafe');
  }

  /**
   * cuEventQuery, cuEventSynchronize and cuStreamWaitEvent of an event whose
   * last record was captured: while its capture is open a wait joins it (or
   * merges two: core's answer) and a query or synchronisation is
   * CUDA_ERROR_CAPTURED_EVENT and invalidates it (capture.during.eventQuery);
   * once the capture ended, CUDA_ERROR_INVALID_VALUE (capture.event.afterCaptureEnded).
   */
  onEvent(hEvent: CUevent, hStream?: CUstream): number {
    const id = this.streams.events.idOf(hEvent);
    if (id <= 0 || !this.runtime.captures.lastRecordCaptured(id)) return C.CUDA_SUCCESS;
    const c = this.runtime.captures.eventCapture(id);
    if (c === undefined) return C.CUDA_ERROR_INVALID_VALUE;
    if (hStream !== undefined) return C.CUDA_SUCCESS;
    this.runtime.invalidateCapture(c.origin);
    return C.CUDA_ERROR_CAPTURED_EVENT;
  }

  // --- helpers ---

  #status(stream: number): number {
    return captureStatusValue(this.runtime.captures.status(stream));
  }

  /** The NULL stream and CU_STREAM_LEGACY; CU_STREAM_PER_THREAD is a stream of its own. */
  #isLegacy(h: CUstream): boolean {
    return isNull(h) || h === C.CU_STREAM_LEGACY || h === 1;
  }

  /** A capturing blocking stream (one the legacy stream synchronises with), as core's stream id. */
  #blockingCapture(): number | undefined {
    for (const c of this.runtime.captures.captures())
      for (const s of c.streams) if (s !== 0 && !this.streams.nonBlocking(s)) return s;
    return undefined;
  }
}

/** A C int: what cuThreadExchangeStreamCaptureMode takes (capture.exchangeModeBadValues). */
function isCInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31;
}
