/**
 * Events in the three flavors (Note [Events] in src/backend/backend.ts):
 * the vendors' codes, "not yet" while recorded work is queued, the
 * cross-stream free of a caching allocator, stale handles; cuCtxCreate /
 * cuCtxDestroy and hipDeviceReset.
 */
import { describe, expect, it } from 'vitest';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;
const box = <T>(value: T) => ({ value });

function cuda(devices: ('H200' | 'MI300X')[] = ['H200']) {
  const cu = createCuda({ devices });
  const b = box(0n);
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  cu.cuCtxSetCurrent(b.value);
  return { cu, ctx: b.value };
}

function alloc(cu: ReturnType<typeof createCuda>): bigint {
  const b = box(0n);
  expect(cu.cuMemAlloc(b, G)).toBe(0);
  return b.value;
}

describe('CUDA events', () => {
  it('query says NOT_READY while the recorded work is queued, SUCCESS once it ran; a never-recorded event is complete', () => {
    const { cu } = cuda();
    const p = alloc(cu);
    const s = box(0n);
    const e = box(0n);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    expect(cu.cuEventCreate(e, CU.CU_EVENT_DEFAULT)).toBe(0);
    expect(cu.cuEventQuery(e.value)).toBe(0);
    expect(cu.cuMemsetD8Async(p, 7, 64, s.value)).toBe(0);
    expect(cu.cuEventRecord(e.value, s.value)).toBe(0);
    expect(cu.cuEventQuery(e.value)).toBe(CU.CUDA_ERROR_NOT_READY);
    // Work queued after the record is not what the event waits for: synchronising it runs only the set.
    expect(cu.cuMemsetD8Async(p, 9, 64, s.value)).toBe(0);
    expect(cu.cuEventSynchronize(e.value)).toBe(0);
    expect(cu.cuEventQuery(e.value)).toBe(0);
    const seen = new Uint8Array(64);
    // cuMemcpyDtoH is a legacy-stream call, which runs the second set first: read through the runtime instead.
    cu.runtime.read(0, Number(p), seen, 0);
    expect(seen[0]).toBe(9);
    expect(cu.cuEventDestroy(e.value)).toBe(0);
    expect(cu.cuStreamDestroy(s.value)).toBe(0);
    cu.dispose();
  });

  it('cross-stream free: record on A, wait on B, free after the query says done; B ran after A', () => {
    const { cu } = cuda();
    const p = alloc(cu);
    const out = alloc(cu);
    const a = box(0n);
    const b = box(0n);
    const e = box(0n);
    cu.cuStreamCreate(a, 0);
    cu.cuStreamCreate(b, 0);
    cu.cuEventCreate(e, CU.CU_EVENT_DISABLE_TIMING);
    const data = new Uint8Array(256).map((_, i) => (i * 7) & 0xff);
    expect(cu.cuMemcpyHtoDAsync(p, data, 256, a.value)).toBe(0);
    expect(cu.cuEventRecord(e.value, a.value)).toBe(0);
    expect(cu.cuStreamWaitEvent(b.value, e.value, 0)).toBe(0);
    expect(cu.cuMemcpyDtoDAsync(out, p, 256, b.value)).toBe(0);
    // Only B is synchronised: its wait runs A's recorded work first, so the copy reads the data.
    expect(cu.cuStreamSynchronize(b.value)).toBe(0);
    expect(cu.cuEventQuery(e.value)).toBe(0);
    expect(cu.cuMemFree(p)).toBe(0);
    const back = new Uint8Array(256);
    expect(cu.cuMemcpyDtoH(back, out, 256)).toBe(0);
    expect([...back]).toEqual([...data]);
    cu.dispose();
  });

  it('the driver codes: flags, handles, context mismatch, stale events, elapsed time', () => {
    const { cu } = cuda(['H200', 'H200']);
    const e = box(0n);
    expect(cu.cuEventCreate(e, 8)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuEventCreate(e, CU.CU_EVENT_INTERPROCESS)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuEventCreate(Object.freeze(box(0n)), 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.runtime.eventCount).toBe(0);
    expect(cu.cuEventCreate(e, CU.CU_EVENT_INTERPROCESS | CU.CU_EVENT_DISABLE_TIMING)).toBe(0);
    expect(cu.cuEventRecordWithFlags(e.value, 0n, 2)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    // External records and waits belong under stream capture: outside it the H200 answers ILLEGAL_STATE.
    expect(cu.cuEventRecordWithFlags(e.value, CU.CU_STREAM_LEGACY, CU.CU_EVENT_RECORD_EXTERNAL)).toBe(
      CU.CUDA_ERROR_ILLEGAL_STATE,
    );
    expect(cu.cuStreamWaitEvent(0n, e.value, CU.CU_EVENT_WAIT_EXTERNAL)).toBe(CU.CUDA_ERROR_ILLEGAL_STATE);
    expect(cu.cuEventRecord(e.value, 0x12345n)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuStreamWaitEvent(0n, e.value, 2)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuStreamWaitEvent(CU.CU_STREAM_PER_THREAD, e.value, 0)).toBe(0);
    // A stream of device 1 and an event of device 0: not one context.
    const ctx1 = box(0n);
    const s1 = box(0n);
    cu.cuDevicePrimaryCtxRetain(ctx1, 1);
    cu.cuCtxSetCurrent(ctx1.value);
    cu.cuStreamCreate(s1, 0);
    expect(cu.cuEventRecord(e.value, s1.value)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    // But a stream of any context may wait on it.
    expect(cu.cuStreamWaitEvent(s1.value, e.value, 0)).toBe(0);
    const ms = box(-1);
    expect(cu.cuEventElapsedTime(ms, e.value, e.value)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    const t0 = box(0n);
    const t1 = box(0n);
    cu.cuEventCreate(t0, 0);
    cu.cuEventCreate(t1, 0);
    expect(cu.cuEventElapsedTime(ms, t0.value, t1.value)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    cu.cuEventRecord(t0.value, 0n);
    cu.cuEventRecord(t1.value, 0n);
    expect(cu.cuEventElapsedTime(null as never, t0.value, t1.value)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuEventElapsedTime(ms, t0.value, t1.value)).toBe(0);
    expect(ms.value).toBe(0);
    expect(cu.cuEventDestroy(e.value)).toBe(0);
    // A destroyed event reads as a destroyed context on the H200 (event.destroyedHandle).
    for (const call of [
      () => cu.cuEventDestroy(e.value),
      () => cu.cuEventQuery(e.value),
      () => cu.cuEventSynchronize(e.value),
      () => cu.cuEventRecord(e.value, 0n),
      () => cu.cuStreamWaitEvent(0n, e.value, 0),
    ])
      expect(call()).toBe(CU.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    expect(cu.cuEventQuery((e.value + 1n) << 40n)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    // A new event never takes the old value.
    const again = box(0n);
    cu.cuEventCreate(again, 0);
    expect(again.value).not.toBe(e.value);
    cu.dispose();
    expect(cu.cuEventQuery(again.value)).toBe(CU.CUDA_ERROR_DEINITIALIZED);
  });

  it('an event recorded on a stream stays valid, and complete, after the stream is destroyed', () => {
    const { cu } = cuda();
    const p = alloc(cu);
    const s = box(0n);
    const e = box(0n);
    cu.cuStreamCreate(s, 0);
    cu.cuEventCreate(e, 0);
    cu.cuMemsetD8Async(p, 1, 16, s.value);
    cu.cuEventRecord(e.value, s.value);
    expect(cu.cuEventQuery(e.value)).toBe(CU.CUDA_ERROR_NOT_READY);
    expect(cu.cuStreamDestroy(s.value)).toBe(0);
    expect(cu.cuEventQuery(e.value)).toBe(0);
    expect(cu.cuEventSynchronize(e.value)).toBe(0);
    cu.dispose();
  });
});

describe('cuCtxCreate / cuCtxDestroy', () => {
  it('a created context is current, owns its streams, events and cuMemAlloc memory, and gives them back when destroyed', () => {
    const { cu, ctx } = cuda();
    const free0 = box(0);
    const total = box(0);
    cu.cuMemGetInfo(free0, total);
    const c = box(0n);
    expect(cu.cuCtxCreate(c, 0, 5)).toBe(CU.CUDA_ERROR_INVALID_DEVICE);
    expect(cu.cuCtxCreate(c, 3, 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuCtxCreate(c, 0x100, 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuCtxCreate(c, CU.CU_CTX_SCHED_BLOCKING_SYNC | CU.CU_CTX_MAP_HOST, 0)).toBe(0);
    const current = box(0n);
    cu.cuCtxGetCurrent(current);
    expect(current.value).toBe(c.value);
    expect(c.value).not.toBe(ctx);
    const s = box(0n);
    const e = box(0n);
    cu.cuStreamCreate(s, 0);
    cu.cuEventCreate(e, 0);
    alloc(cu);
    // VMM memory is not the context's.
    const h = box(0n);
    const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
    expect(cu.cuMemCreate(h, G, prop, 0)).toBe(0);
    expect(cu.cuCtxDestroy(c.value)).toBe(0);
    // The primary context below it is current again.
    cu.cuCtxGetCurrent(current);
    expect(current.value).toBe(ctx);
    expect(cu.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 1, streams: 0 });
    expect(cu.runtime.eventCount).toBe(0);
    expect(cu.cuStreamSynchronize(s.value)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuEventQuery(e.value)).toBe(CU.CUDA_ERROR_CONTEXT_IS_DESTROYED);
    expect(cu.cuCtxDestroy(c.value)).toBe(CU.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuCtxSetCurrent(c.value)).toBe(CU.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuCtxDestroy(ctx)).toBe(CU.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuCtxDestroy(0n)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemRelease(h.value)).toBe(0);
    const free1 = box(0);
    cu.cuMemGetInfo(free1, total);
    expect(free1.value).toBe(free0.value);
    cu.dispose();
  });

  it('destroying the only context leaves none current; a refused out box creates nothing', () => {
    const cu = createCuda();
    cu.cuInit(0);
    expect(cu.cuCtxCreate(Object.freeze(box(0n)), 0, 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    const c = box(0n);
    expect(cu.cuCtxCreate(c, 0, 0)).toBe(0);
    expect(cu.cuCtxDestroy(c.value)).toBe(0);
    const s = box(0n);
    expect(cu.cuStreamCreate(s, 0)).toBe(CU.CUDA_ERROR_INVALID_CONTEXT);
    cu.dispose();
  });
});

describe('HIP events and hipDeviceReset', () => {
  it('codes follow clr: flags, NULL, destroyed, device mismatch, not ready', () => {
    const hip = createHip({ devices: ['MI300X', 'MI300X'] });
    const e = box(0n);
    expect(hip.hipEventCreateWithFlags(e, H.hipEventInterprocess)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipEventCreateWithFlags(e, H.hipEventReleaseToDevice | H.hipEventReleaseToSystem)).toBe(
      H.hipErrorInvalidValue,
    );
    expect(hip.hipEventCreateWithFlags(e, 0x100)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipEventCreate(null as never)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipEventCreate(e)).toBe(0);
    expect(hip.hipEventQuery(null)).toBe(H.hipErrorInvalidHandle);
    expect(hip.hipEventDestroy(null)).toBe(H.hipErrorInvalidHandle);
    const p = box(0n);
    hip.hipMalloc(p, G);
    const s = box(0n);
    hip.hipStreamCreate(s);
    hip.hipMemsetAsync(p.value, 3, 64, s.value);
    expect(hip.hipEventRecord(e.value, s.value)).toBe(0);
    expect(hip.hipEventQuery(e.value)).toBe(H.hipErrorNotReady);
    const ms = box(0);
    expect(hip.hipEventElapsedTime(ms, e.value, e.value)).toBe(H.hipErrorNotReady);
    expect(hip.hipEventSynchronize(e.value)).toBe(0);
    expect(hip.hipEventElapsedTime(ms, e.value, e.value)).toBe(0);
    hip.hipSetDevice(1);
    const s1 = box(0n);
    hip.hipStreamCreate(s1);
    expect(hip.hipEventRecord(e.value, s1.value)).toBe(H.hipErrorInvalidResourceHandle);
    expect(hip.hipStreamWaitEvent(s1.value, e.value, 0)).toBe(0);
    expect(hip.hipStreamWaitEvent(s1.value, e.value, 4)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipEventDestroy(e.value)).toBe(0);
    expect(hip.hipEventDestroy(e.value)).toBe(H.hipErrorContextIsDestroyed);
    expect(hip.hipEventQuery(e.value)).toBe(H.hipErrorInvalidHandle);
    hip.dispose();
  });

  it('hipDeviceReset releases the current device’s memory, VMM objects, streams and events, and later calls work', () => {
    const hip = createHip({ devices: ['MI300X', 'MI300X'] });
    const before = hip.runtime.memoryInfo(0).free;
    const p = box(0n);
    hip.hipMalloc(p, G);
    const prop = {
      type: H.hipMemAllocationTypePinned,
      requestedHandleTypes: H.hipMemHandleTypeNone,
      location: { type: H.hipMemLocationTypeDevice, id: 0 },
    };
    const va = box(0n);
    const h = box(0n);
    hip.hipMemAddressReserve(va, G, 0, null, 0);
    hip.hipMemCreate(h, G, prop, 0);
    hip.hipMemMap(va.value, G, 0, h.value, 0);
    const s = box(0n);
    const e = box(0n);
    hip.hipStreamCreate(s);
    hip.hipEventCreate(e);
    hip.hipMemsetAsync(p.value, 5, 64, s.value);
    hip.hipEventRecord(e.value, s.value);
    // Device 1's stream is not touched.
    hip.hipSetDevice(1);
    const s1 = box(0n);
    hip.hipStreamCreate(s1);
    hip.hipSetDevice(0);
    expect(hip.hipDeviceReset()).toBe(0);
    expect(hip.runtime.memoryInfo(0).free).toBe(before);
    expect(hip.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 1 });
    expect(hip.runtime.eventCount).toBe(0);
    expect(hip.hipStreamSynchronize(s.value)).toBe(H.hipErrorInvalidHandle);
    expect(hip.hipStreamSynchronize(s1.value)).toBe(0);
    expect(hip.hipEventQuery(e.value)).toBe(H.hipErrorInvalidHandle);
    expect(hip.hipFree(p.value)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipMalloc(p, G)).toBe(0);
    expect(hip.hipFree(p.value)).toBe(0);
    hip.dispose();
  });
});

describe('ACL events', () => {
  function acl() {
    const a = createAcl();
    a.aclInit(null);
    a.aclrtSetDevice(0);
    return a;
  }

  it('status NOT_READY until recorded work ran (and for one never recorded); waits order streams', () => {
    const a = acl();
    const p = box(0n);
    expect(a.aclrtMalloc(p, G, 0)).toBe(0);
    const s1 = box(0n);
    const s2 = box(0n);
    a.aclrtCreateStream(s1);
    a.aclrtCreateStream(s2);
    const e = box(0n);
    expect(a.aclrtCreateEvent(e)).toBe(0);
    const status = box(-1);
    expect(a.aclrtQueryEventStatus(e.value, status)).toBe(0);
    expect(status.value).toBe(A.ACL_EVENT_RECORDED_STATUS_NOT_READY);
    expect(a.aclrtMemsetAsync(p.value, G, 4, 64, s1.value)).toBe(0);
    expect(a.aclrtRecordEvent(e.value, s1.value)).toBe(0);
    expect(a.aclrtQueryEventStatus(e.value, status)).toBe(0);
    expect(status.value).toBe(A.ACL_EVENT_RECORDED_STATUS_NOT_READY);
    expect(a.aclrtStreamWaitEvent(s2.value, e.value)).toBe(0);
    expect(a.aclrtSynchronizeStream(s2.value)).toBe(0);
    expect(a.aclrtQueryEventStatus(e.value, status)).toBe(0);
    expect(status.value).toBe(A.ACL_EVENT_RECORDED_STATUS_COMPLETE);
    expect(a.aclrtResetEvent(e.value, s2.value)).toBe(0);
    expect(a.aclrtQueryEventStatus(e.value, status)).toBe(0);
    expect(status.value).toBe(A.ACL_EVENT_RECORDED_STATUS_NOT_READY);
    expect(a.aclrtSynchronizeEvent(e.value)).toBe(0);
    expect(a.aclrtDestroyEvent(e.value)).toBe(0);
    expect(a.aclrtDestroyEvent(e.value)).toBe(A.ACL_ERROR_RT_PARAM_INVALID);
    expect(a.aclrtDestroyEvent(null)).toBe(A.ACL_ERROR_INVALID_PARAM);
    a.dispose();
  });

  it('flags: a bitmap of the documented ones; without ACL_EVENT_SYNC no waits or resets', () => {
    const a = acl();
    const e = box(0n);
    expect(a.aclrtCreateEventWithFlag(e, 0)).toBe(A.ACL_ERROR_INVALID_PARAM);
    expect(a.aclrtCreateEventWithFlag(e, 0x4)).toBe(A.ACL_ERROR_INVALID_PARAM);
    expect(a.aclrtCreateEventWithFlag(e, A.ACL_EVENT_TIME_LINE)).toBe(0);
    expect(a.aclrtStreamWaitEvent(null, e.value)).toBe(A.ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    expect(a.aclrtResetEvent(e.value, null)).toBe(A.ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    expect(a.aclrtRecordEvent(e.value, null)).toBe(0);
    const status = box(-1);
    expect(a.aclrtQueryEventStatus(e.value, status)).toBe(0);
    expect(status.value).toBe(A.ACL_EVENT_RECORDED_STATUS_COMPLETE);
    expect(a.aclrtQueryEventStatus(e.value, Object.freeze(box(0)))).toBe(A.ACL_ERROR_INVALID_PARAM);
    a.dispose();
  });
});

describe('event calls in the vendors’ layers', () => {
  it('each flavor traces its event calls in its own words', async () => {
    const { Tracer } = await import('../../src/core/trace.js');
    const names = (spans: readonly { layer: string; name: string; children: readonly never[] }[]): string[] =>
      spans.flatMap((s) => [`${s.layer}:${s.name}`, ...names(s.children)]);
    const hipTracer = new Tracer();
    const hip = createHip({ tracer: hipTracer });
    const e = box(0n);
    hip.hipEventCreate(e);
    hip.hipEventRecord(e.value, null);
    hip.hipEventQuery(e.value);
    expect(names(hipTracer.roots as never)).toEqual([
      'hip:hipEventCreate',
      'hip:ihipEventCreateWithFlags',
      'hip:hipEventRecord',
      'hip:hipEventRecord_common',
      'hip:hip::Event::addMarker',
      'hip:hipEventQuery',
      'hip:ihipEventQuery',
      'hip:hip::Event::query',
    ]);
    const aclTracer = new Tracer();
    const a = createAcl({ tracer: aclTracer });
    a.aclInit(null);
    a.aclrtSetDevice(0);
    aclTracer.clear();
    a.aclrtCreateEvent(e);
    a.aclrtRecordEvent(e.value, null);
    expect(names(aclTracer.roots as never)).toEqual([
      'acl:aclrtCreateEvent',
      'rts:rtEventCreateWithFlag',
      'acl:aclrtRecordEvent',
      'rts:rtEventRecord',
    ]);
    const cuTracer = new Tracer();
    const cu = createCuda({ tracer: cuTracer });
    cu.cuInit(0);
    cu.cuDevicePrimaryCtxRetain(e, 0);
    cu.cuCtxSetCurrent(e.value);
    cuTracer.clear();
    cu.cuEventCreate(e, 0);
    cu.cuEventRecord(e.value, 0n);
    expect(names(cuTracer.roots as never)).toEqual(['cuda:cuEventCreate', 'cuda:cuEventRecord']);
  });
});
