/**
 * HIP's stream capture (Note [HIP capture rules] in flavors/hip/capture.ts):
 * clr's codes and order, where ROCm differs from CUDA, and a capture that
 * replays the same bytes through HIP as through CUDA.
 */
import { describe, expect, it } from 'vitest';
import { createHip } from '../../../src/entry/processes.js';
import * as CU from '../../../src/flavors/cuda/constants.js';
import * as H from '../../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';
import { cudaWithContext, DEVICE_PROP, RW0 } from '../cuda/helpers.js';

const SIZE = 1 << 20;

/** A HIP process with `SIZE` bytes of hipMalloc memory, zeroed, and two streams. */
function hipSetUp(): { hip: HipFlavor; p: bigint; s1: bigint; s2: bigint } {
  const hip = createHip();
  const p = { value: 0n };
  const s1 = { value: 0n };
  const s2 = { value: 0n };
  const steps = [
    hip.hipMalloc(p, SIZE),
    hip.hipMemset(p.value, 0, SIZE),
    hip.hipStreamCreate(s1),
    hip.hipStreamCreate(s2),
  ];
  expect(steps).toEqual([0, 0, 0, 0]);
  return { hip, p: p.value, s1: s1.value, s2: s2.value };
}

const status = (hip: HipFlavor, s: bigint | null): number => {
  const box = { value: -1 };
  const code = hip.hipStreamIsCapturing(s, box);
  return code === H.hipSuccess ? box.value : -code;
};

describe('HIP capture calls, as clr answers', () => {
  it('a set into unmapped memory is captured, to be checked at launch; a copy from the host is refused at capture, as CUDA', () => {
    const { hip, s1 } = hipSetUp();
    const r = { value: 0n };
    expect(hip.hipMemAddressReserve(r, 2 * SIZE * 2, 0, 0n, 0)).toBe(H.hipSuccess);
    expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeGlobal)).toBe(H.hipSuccess);
    expect(hip.hipMemsetAsync(r.value, 7, 256, s1)).toBe(H.hipSuccess);
    expect(hip.hipMemcpyAsync(r.value, new Uint8Array(256), 256, H.hipMemcpyHostToDevice, s1)).toBe(
      H.hipErrorInvalidValue,
    );
    expect(status(hip, s1)).toBe(H.hipStreamCaptureStatusActive);
    expect(hip.hipStreamEndCapture(s1, { value: 0n })).toBe(H.hipSuccess);
    hip.dispose();
  });

  it('begin: the null stream, a bad mode, a capturing stream', () => {
    const { hip, s1 } = hipSetUp();
    expect(hip.hipStreamBeginCapture(null, H.hipStreamCaptureModeGlobal)).toBe(
      H.hipErrorStreamCaptureUnsupported,
    );
    expect(hip.hipStreamBeginCapture(s1, 3)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeGlobal)).toBe(H.hipSuccess);
    expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeRelaxed)).toBe(H.hipErrorIllegalState);
    expect(status(hip, s1)).toBe(H.hipStreamCaptureStatusActive);
    // The null stream while a stream captures.
    expect(status(hip, null)).toBe(-H.hipErrorStreamCaptureImplicit);
    const g = { value: 0n };
    expect(hip.hipStreamEndCapture(s1, g)).toBe(H.hipSuccess);
    expect(hip.hipGraphDestroy(g.value)).toBe(H.hipSuccess);
    hip.dispose();
  });

  it('end: a NULL pGraph, the null stream, no capture, another stream, an invalidated capture', () => {
    const { hip, p, s1, s2 } = hipSetUp();
    const g = { value: 0n };
    expect(hip.hipStreamEndCapture(s1, g)).toBe(H.hipErrorIllegalState);
    expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeGlobal)).toBe(H.hipSuccess);
    expect(hip.hipStreamEndCapture(s1, null)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipStreamEndCapture(null, g)).toBe(H.hipErrorIllegalState);
    const e = { value: 0n };
    expect(hip.hipEventCreate(e)).toBe(H.hipSuccess);
    expect(hip.hipEventRecord(e.value, s1)).toBe(H.hipSuccess);
    expect(hip.hipStreamWaitEvent(s2, e.value, 0)).toBe(H.hipSuccess);
    expect(hip.hipStreamEndCapture(s2, g)).toBe(H.hipErrorStreamCaptureUnmatched);
    // A synchronous set while any stream captures invalidates it (CHECK_STREAM_CAPTURING).
    expect(hip.hipMemset(p, 1, 16)).toBe(H.hipErrorStreamCaptureImplicit);
    expect(status(hip, s1)).toBe(H.hipStreamCaptureStatusInvalidated);
    expect(hip.hipMemsetAsync(p, 1, 16, s1)).toBe(H.hipErrorStreamCaptureInvalidated);
    expect(hip.hipStreamEndCapture(s1, g)).toBe(H.hipErrorStreamCaptureInvalidated);
    expect(status(hip, s1)).toBe(H.hipStreamCaptureStatusNone);
    expect(status(hip, s2)).toBe(H.hipStreamCaptureStatusNone);
    hip.dispose();
  });

  it('a synchronous copy refuses even a relaxed capture, where CUDA refuses only one on a blocking stream', () => {
    const { hip, p, s1 } = hipSetUp();
    expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeRelaxed)).toBe(H.hipSuccess);
    expect(hip.hipMemcpyHtoD(p, new Uint8Array(16), 16)).toBe(H.hipErrorStreamCaptureImplicit);
    expect(status(hip, s1)).toBe(H.hipStreamCaptureStatusInvalidated);
    expect(hip.hipStreamEndCapture(s1, { value: 0n })).toBe(H.hipErrorStreamCaptureInvalidated);
    hip.dispose();

    const cu = cudaWithContext();
    const s = { value: 0n };
    const d = { value: 0n };
    expect(cu.cuStreamCreate(s, CU.CU_STREAM_NON_BLOCKING)).toBe(CU.CUDA_SUCCESS);
    expect(cu.cuMemAlloc(d, SIZE)).toBe(CU.CUDA_SUCCESS);
    expect(cu.cuStreamBeginCapture(s.value, CU.CU_STREAM_CAPTURE_MODE_RELAXED)).toBe(CU.CUDA_SUCCESS);
    expect(cu.cuMemcpyHtoD(d.value, new Uint8Array(16), 16)).toBe(CU.CUDA_SUCCESS);
    const g = { value: 0n };
    expect(cu.cuStreamEndCapture(s.value, g)).toBe(CU.CUDA_SUCCESS);
    cu.dispose();
  });

  it('hipMalloc during a capture: refused and invalidating from a global thread, allowed from a relaxed one', () => {
    for (const threadMode of [H.hipStreamCaptureModeGlobal, H.hipStreamCaptureModeRelaxed]) {
      const { hip, s1 } = hipSetUp();
      const m = { value: threadMode };
      expect(hip.hipThreadExchangeStreamCaptureMode(m)).toBe(H.hipSuccess);
      expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeGlobal)).toBe(H.hipSuccess);
      const q = { value: 0n };
      const relaxed = threadMode === H.hipStreamCaptureModeRelaxed;
      expect(hip.hipMalloc(q, 4096)).toBe(relaxed ? H.hipSuccess : H.hipErrorStreamCaptureUnsupported);
      expect(status(hip, s1)).toBe(
        relaxed ? H.hipStreamCaptureStatusActive : H.hipStreamCaptureStatusInvalidated,
      );
      expect(hip.hipDeviceSynchronize()).toBe(H.hipErrorStreamCaptureUnsupported);
      expect(status(hip, s1)).toBe(H.hipStreamCaptureStatusInvalidated);
      hip.dispose();
    }
  });

  it('hipThreadExchangeStreamCaptureMode takes only the three modes (CUDA takes any int)', () => {
    const hip = createHip();
    for (const bad of [3, -1]) expect(hip.hipThreadExchangeStreamCaptureMode({ value: bad })).toBe(1);
    const m = { value: H.hipStreamCaptureModeThreadLocal };
    expect(hip.hipThreadExchangeStreamCaptureMode(m)).toBe(H.hipSuccess);
    expect(m.value).toBe(H.hipStreamCaptureModeGlobal);
    hip.dispose();
    const cu = cudaWithContext();
    expect(cu.cuThreadExchangeStreamCaptureMode({ value: 3 })).toBe(CU.CUDA_SUCCESS);
    cu.dispose();
  });

  it('an event recorded in an open capture is hipErrorCapturedEvent to query, and invalidates it', () => {
    const { hip, s1 } = hipSetUp();
    const e = { value: 0n };
    expect(hip.hipEventCreate(e)).toBe(H.hipSuccess);
    expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeRelaxed)).toBe(H.hipSuccess);
    expect(hip.hipEventRecord(e.value, s1)).toBe(H.hipSuccess);
    expect(hip.hipEventQuery(e.value)).toBe(H.hipErrorCapturedEvent);
    expect(status(hip, s1)).toBe(H.hipStreamCaptureStatusInvalidated);
    expect(hip.hipStreamEndCapture(s1, { value: 0n })).toBe(H.hipErrorStreamCaptureInvalidated);
    // Its capture over, the event is no event to query until it is recorded again.
    expect(hip.hipEventSynchronize(e.value)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipEventRecord(e.value, s1)).toBe(H.hipSuccess);
    expect(hip.hipEventSynchronize(e.value)).toBe(H.hipSuccess);
    hip.dispose();
  });

  it('graph handles: NULL, destroyed, any instantiate flags', () => {
    const { hip, s1 } = hipSetUp();
    expect(hip.hipGraphDestroy(null)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipGraphExecDestroy(null)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipGraphLaunch(null, s1)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipGraphGetNodes(null, null, { value: -1 })).toBe(H.hipErrorInvalidValue);
    expect(hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeGlobal)).toBe(H.hipSuccess);
    const g = { value: 0n };
    expect(hip.hipStreamEndCapture(s1, g)).toBe(H.hipSuccess);
    const x = { value: 0n };
    expect(hip.hipGraphInstantiateWithFlags(x, g.value, 0x100)).toBe(H.hipSuccess);
    expect(hip.hipGraphExecDestroy(x.value)).toBe(H.hipSuccess);
    expect(hip.hipGraphDestroy(g.value)).toBe(H.hipSuccess);
    expect(hip.hipGraphDestroy(g.value)).toBe(H.hipErrorIllegalState);
    hip.dispose();
  });
});

describe('one capture through HIP and CUDA', () => {
  /** Sets and a copy captured, the source changed, two launches: the bytes after. */
  const steps = 3;
  const expected = (() => {
    const e = new Uint8Array(256);
    e.fill(0x11, 0, 64).fill(0x22, 64, 128);
    e.set(new Uint8Array(64).fill(0x33), 128);
    return e;
  })();

  it('replays the same bytes in both', () => {
    const source = new Uint8Array(64).fill(0x99);
    // HIP.
    const { hip, p, s1 } = hipSetUp();
    const hg = { value: 0n };
    const hx = { value: 0n };
    expect([
      hip.hipStreamBeginCapture(s1, H.hipStreamCaptureModeGlobal),
      hip.hipMemsetAsync(p, 0x11, 64, s1),
      hip.hipMemsetAsync(p + 64n, 0x22, 64, s1),
      hip.hipMemcpyAsync(p + 128n, source, 64, H.hipMemcpyHostToDevice, s1),
      hip.hipStreamEndCapture(s1, hg),
      hip.hipGraphInstantiate(hx, hg.value, null, null, 0),
    ]).toEqual([0, 0, 0, 0, 0, 0]);
    const hn = { value: -1 };
    expect(hip.hipGraphGetNodes(hg.value, null, hn)).toBe(H.hipSuccess);
    expect(hn.value).toBe(steps);
    source.fill(0x33);
    for (let i = 0; i < 2; i++) expect(hip.hipGraphLaunch(hx.value, s1)).toBe(H.hipSuccess);
    expect(hip.hipStreamSynchronize(s1)).toBe(H.hipSuccess);
    const hipBytes = new Uint8Array(256);
    expect(hip.hipMemcpyDtoH(hipBytes, p, 256)).toBe(H.hipSuccess);
    hip.dispose();

    // CUDA.
    source.fill(0x99);
    const cu = cudaWithContext();
    const ptr = { value: 0n };
    const h = { value: 0n };
    const s = { value: 0n };
    const cg = { value: 0n };
    const cx = { value: 0n };
    expect([
      cu.cuMemAddressReserve(ptr, 2 * SIZE, 0, 0, 0),
      cu.cuMemCreate(h, 2 * SIZE, DEVICE_PROP, 0),
      cu.cuMemMap(ptr.value, 2 * SIZE, 0, h.value, 0),
      cu.cuMemSetAccess(ptr.value, 2 * SIZE, RW0, 1),
      cu.cuMemsetD8(ptr.value, 0, 256),
      cu.cuStreamCreate(s, 0),
      cu.cuStreamBeginCapture(s.value, CU.CU_STREAM_CAPTURE_MODE_GLOBAL),
      cu.cuMemsetD8Async(ptr.value, 0x11, 64, s.value),
      cu.cuMemsetD8Async(ptr.value + 64n, 0x22, 64, s.value),
      cu.cuMemcpyHtoDAsync(ptr.value + 128n, source, 64, s.value),
      cu.cuStreamEndCapture(s.value, cg),
      cu.cuGraphInstantiate(cx, cg.value, 0),
    ]).toEqual(new Array(12).fill(0));
    source.fill(0x33);
    for (let i = 0; i < 2; i++) expect(cu.cuGraphLaunch(cx.value, s.value)).toBe(CU.CUDA_SUCCESS);
    expect(cu.cuStreamSynchronize(s.value)).toBe(CU.CUDA_SUCCESS);
    const cudaBytes = new Uint8Array(256);
    expect(cu.cuMemcpyDtoH(cudaBytes, ptr.value, 256)).toBe(CU.CUDA_SUCCESS);
    cu.dispose();

    expect(Buffer.from(hipBytes).equals(Buffer.from(expected))).toBe(true);
    expect(Buffer.from(cudaBytes).equals(Buffer.from(hipBytes))).toBe(true);
  });
});
