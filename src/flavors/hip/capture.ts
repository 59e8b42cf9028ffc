/**
 * HIP's stream capture calls over core's captures (Note [Stream capture] in
 * src/core/graphs.ts), with clr's rules in front (Note [HIP capture rules]).
 */
import type { Runtime } from '../../core/runtime.js';
import { type Box, isBox, isNull, toInt, writeBox } from '../common/args.js';
import { CAPTURE_MODES, captureStatusValue, GraphHandles, ThreadCaptureMode } from '../common/capture.js';
import type { VendorCodes } from '../common/error-table.js';
import * as C from './constants.js';
import type { HipStreams } from './streams.js';
import type { HipHandle } from './structs.js';

/** The capture calls of HIP_FUNCTIONS. */
export const HIP_CAPTURE_FUNCTIONS = [
  'hipStreamBeginCapture',
  'hipStreamEndCapture',
  'hipStreamIsCapturing',
  'hipStreamGetCaptureInfo',
  'hipThreadExchangeStreamCaptureMode',
  'hipGraphInstantiate',
  'hipGraphInstantiateWithFlags',
  'hipGraphLaunch',
  'hipGraphDestroy',
  'hipGraphExecDestroy',
  'hipGraphGetNodes',
] as const;

/**
 * Note [HIP capture rules]
 * As ROCm's clr answers (hipamd/src/hip_graph.cpp, hip_internal.hpp):
 * - hipStreamBeginCapture on the null stream is
 *   hipErrorStreamCaptureUnsupported, with a mode that is none of the three
 *   hipErrorInvalidValue (checked after the stream), on a capturing stream
 *   hipErrorIllegalState.
 * - hipStreamEndCapture: a NULL pGraph hipErrorInvalidValue, the null stream
 *   or a stream not capturing hipErrorIllegalState, a stream the capture did
 *   not begin on hipErrorStreamCaptureUnmatched, an invalidated capture
 *   hipErrorStreamCaptureInvalidated, a fork not joined back
 *   hipErrorStreamCaptureUnjoined (the capture ends either way).
 * - hipStreamIsCapturing and hipStreamGetCaptureInfo: a NULL status
 *   hipErrorInvalidValue; the null stream while a stream captures
 *   hipErrorStreamCaptureImplicit, else NONE.
 * - hipThreadExchangeStreamCaptureMode takes only the three modes (NULL or
 *   another value: hipErrorInvalidValue), where CUDA's driver takes any int.
 * - CHECK_STREAM_CAPTURE_SUPPORTED (hipMalloc, hipFree): a thread in GLOBAL
 *   or THREAD_LOCAL mode with a capture not begun relaxed invalidates it and
 *   answers hipErrorStreamCaptureUnsupported. CHECK_SUPPORTED_DURING_CAPTURE
 *   (hipDeviceSynchronize) invalidates every capture, and answers the same.
 *   CHECK_STREAM_CAPTURING (the synchronous copies and sets) invalidates
 *   every capture, of any mode, and answers hipErrorStreamCaptureImplicit:
 *   where CUDA refuses only what meets a blocking stream's capture, clr
 *   refuses them while any stream captures.
 * - hipGraphInstantiateWithFlags takes any flags (clr ignores them).
 *   hipGraphLaunch with a NULL executable graph, hipGraphExecDestroy of
 *   NULL, hipGraphGetNodes with a NULL graph or count: hipErrorInvalidValue;
 *   hipGraphDestroy of NULL hipErrorInvalidValue, of a destroyed graph
 *   hipErrorIllegalState.
 * Modelled as the H200 answered CUDA's, clr's rules not read: synchronising
 * a capturing stream (hipErrorStreamCaptureUnsupported, invalidating it);
 * querying or synchronising an event recorded in an open capture
 * (hipErrorCapturedEvent, invalidating it), and one whose capture ended
 * (hipErrorInvalidValue).
 */
export class HipCapture {
  readonly #threadMode = new ThreadCaptureMode();
  readonly #handles: GraphHandles;

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly streams: HipStreams,
  ) {
    this.#handles = new GraphHandles(runtime, codes, C.hipErrorInvalidValue);
  }

  exchangeMode(mode: Box<number>): number {
    return this.#threadMode.exchange(mode, isCaptureMode) ? C.hipSuccess : C.hipErrorInvalidValue;
  }

  begin(stream: HipHandle, mode: number): number {
    if (isNull(stream)) return C.hipErrorStreamCaptureUnsupported;
    const s = this.streams.stream(stream);
    if (s === undefined) return C.hipErrorContextIsDestroyed;
    const m = CAPTURE_MODES.get(toInt(mode));
    if (m === undefined) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.beginCapture(s.id, s.device, m));
  }

  end(stream: HipHandle, pGraph: Box<bigint> | null): number {
    if (!isBox(pGraph)) return C.hipErrorInvalidValue;
    if (isNull(stream)) return C.hipErrorIllegalState;
    const s = this.streams.stream(stream);
    if (s === undefined) return C.hipErrorContextIsDestroyed;
    return this.#handles.end(s.id, pGraph);
  }

  isCapturing(stream: HipHandle, pCaptureStatus: Box<number>): number {
    return this.info(stream, pCaptureStatus, null);
  }

  /** hipStreamGetCaptureInfo(stream, pCaptureStatus, pId). */
  info(stream: HipHandle, pCaptureStatus: Box<number>, pId: Box<bigint> | null): number {
    if (!isBox(pCaptureStatus)) return C.hipErrorInvalidValue;
    const s = this.streams.stream(stream);
    if (s === undefined) return C.hipErrorContextIsDestroyed;
    if (isNull(stream) && this.runtime.captures.captures().length > 0) return C.hipErrorStreamCaptureImplicit;
    const status = isNull(stream) ? 'none' : this.runtime.captures.status(s.id);
    if (!writeBox(pCaptureStatus, captureStatusValue(status))) return C.hipErrorInvalidValue;
    const c = this.runtime.captures.captureOf(s.id);
    if (c !== undefined && isBox(pId) && !writeBox(pId, BigInt(c.id))) return C.hipErrorInvalidValue;
    return C.hipSuccess;
  }

  /** hipGraphInstantiate(pGraphExec, graph, pErrorNode, pLogBuffer, bufferSize) and ...WithFlags: clr ignores the rest. */
  instantiate(pGraphExec: Box<bigint> | null, graph: HipHandle): number {
    if (!isBox(pGraphExec) || isNull(graph)) return C.hipErrorInvalidValue;
    return this.#handles.instantiate(pGraphExec, graph);
  }

  launch(graphExec: HipHandle, stream: HipHandle): number {
    const exec = this.#handles.exec(graphExec);
    const s = this.streams.stream(stream);
    if (exec < 0 || s === undefined) return C.hipErrorInvalidValue;
    return this.codes.run(() => this.runtime.launchGraph(exec, s.id));
  }

  destroyGraph(graph: HipHandle): number {
    if (isNull(graph)) return C.hipErrorInvalidValue;
    const code = this.#handles.destroy(graph);
    // A graph clr no longer knows is hipErrorIllegalState.
    return code === C.hipErrorInvalidValue ? C.hipErrorIllegalState : code;
  }

  destroyExec(graphExec: HipHandle): number {
    return this.#handles.destroyExec(graphExec);
  }

  nodes(graph: HipHandle, numNodes: Box<number> | null): number {
    return this.#handles.nodes(graph, numNodes);
  }

  // --- the rules for other calls during a capture (Note [HIP capture rules]) ---

  /** CHECK_STREAM_CAPTURE_SUPPORTED: hipMalloc, hipFree. */
  unsafe(): number {
    return this.#refuse(
      this.#threadMode.prohibiting(this.runtime.captures.captures()),
      C.hipErrorStreamCaptureUnsupported,
    );
  }

  /** CHECK_SUPPORTED_DURING_CAPTURE: hipDeviceSynchronize. */
  deviceSync(): number {
    return this.#refuse(this.runtime.captures.captures(), C.hipErrorStreamCaptureUnsupported);
  }

  /** CHECK_STREAM_CAPTURING: the synchronous copies and sets. */
  synchronous(): number {
    return this.#refuse(this.runtime.captures.captures(), C.hipErrorStreamCaptureImplicit);
  }

  /** hipStreamSynchronize of a capturing stream. */
  onSynchronize(stream: HipHandle): number {
    const s = isNull(stream) ? undefined : this.streams.stream(stream);
    if (s === undefined || this.runtime.captures.status(s.id) === 'none') return C.hipSuccess;
    this.runtime.invalidateCapture(s.id);
    return C.hipErrorStreamCaptureUnsupported;
  }

  /** hipEventQuery and hipEventSynchronize of an event last recorded in a capture (the Note). */
  onEvent(event: HipHandle): number {
    const id = this.streams.events.idOf(event);
    if (id <= 0 || !this.runtime.captures.lastRecordCaptured(id)) return C.hipSuccess;
    const c = this.runtime.captures.eventCapture(id);
    if (c === undefined) return C.hipErrorInvalidValue;
    this.runtime.invalidateCapture(c.origin);
    return C.hipErrorCapturedEvent;
  }

  #refuse(captures: readonly { origin: number }[], code: number): number {
    if (captures.length === 0) return C.hipSuccess;
    for (const c of captures) this.runtime.invalidateCapture(c.origin);
    return code;
  }
}

/** Only the three modes (Note [HIP capture rules]). */
function isCaptureMode(v: unknown): v is number {
  return typeof v === 'number' && CAPTURE_MODES.has(v);
}
