/**
 * Cross-context and cross-device use of the event and pointer calls (issue
 * 17, item 4): each rule as the reproduction that found it broken.
 */
import { describe, expect, it } from 'vitest';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;
const box = <T>(value: T) => ({ value });

function cudaOnTwo() {
  const cu = createCuda({ devices: ['H200', 'H200'] });
  cu.cuInit(0);
  const ctx = [box(0n), box(0n)];
  for (const d of [0, 1]) expect(cu.cuDevicePrimaryCtxRetain(ctx[d], d)).toBe(0);
  return { cu, ctx: ctx.map((b) => b.value) };
}

describe('a wait on another device’s event, on the default stream', () => {
  it('CUDA: cuStreamWaitEvent(0n) then cuStreamSynchronize(0n) lands the copy queued behind the event', () => {
    const { cu, ctx } = cudaOnTwo();
    expect(cu.cuCtxSetCurrent(ctx[1])).toBe(0);
    const p = box(0n);
    const s = box(0n);
    const ev = box(0n);
    expect(cu.cuMemAlloc(p, G)).toBe(0);
    expect(cu.cuMemsetD8(p.value, 0x5a, 64)).toBe(0);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    expect(cu.cuEventCreate(ev, CU.CU_EVENT_DISABLE_TIMING)).toBe(0);
    const host = new Uint8Array(64);
    expect(cu.cuMemcpyDtoHAsync(host, p.value, 64, s.value)).toBe(0);
    expect(cu.cuEventRecord(ev.value, s.value)).toBe(0);
    expect(cu.cuEventQuery(ev.value)).toBe(CU.CUDA_ERROR_NOT_READY);
    expect(cu.cuCtxSetCurrent(ctx[0])).toBe(0);
    expect(cu.cuStreamWaitEvent(0n, ev.value, 0)).toBe(0);
    expect(cu.cuStreamSynchronize(0n)).toBe(0);
    expect(host[0]).toBe(0x5a);
    expect(cu.cuEventQuery(ev.value)).toBe(0);
    cu.dispose();
  });

  it('HIP: hipStreamWaitEvent(null) then hipStreamSynchronize(null)', () => {
    const hip = createHip({ devices: ['MI300X', 'MI300X'] });
    expect(hip.hipSetDevice(1)).toBe(0);
    const p = box(0n);
    const s = box(0n);
    const ev = box(0n);
    expect(hip.hipMalloc(p, G)).toBe(0);
    expect(hip.hipMemset(p.value, 0x5a, 64)).toBe(0);
    expect(hip.hipStreamCreate(s)).toBe(0);
    expect(hip.hipEventCreateWithFlags(ev, H.hipEventDisableTiming)).toBe(0);
    const host = new Uint8Array(64);
    expect(hip.hipMemcpyAsync(host, p.value, 64, H.hipMemcpyDeviceToHost, s.value)).toBe(0);
    expect(hip.hipEventRecord(ev.value, s.value)).toBe(0);
    expect(hip.hipEventQuery(ev.value)).toBe(H.hipErrorNotReady);
    expect(hip.hipSetDevice(0)).toBe(0);
    expect(hip.hipStreamWaitEvent(null, ev.value, 0)).toBe(0);
    expect(hip.hipStreamSynchronize(null)).toBe(0);
    expect(host[0]).toBe(0x5a);
    expect(hip.hipEventQuery(ev.value)).toBe(0);
    hip.dispose();
  });

  it('ACL: aclrtStreamWaitEvent(NULL) then aclrtSynchronizeStream(NULL)', () => {
    const acl = createAcl({ devices: ['Ascend910B', 'Ascend910B'] });
    expect(acl.aclInit(null)).toBe(0);
    expect(acl.aclrtSetDevice(1)).toBe(0);
    const p = box(0n);
    const s = box(0n);
    const ev = box(0n);
    expect(acl.aclrtMalloc(p, G, A.ACL_MEM_MALLOC_HUGE_FIRST)).toBe(0);
    expect(acl.aclrtMemset(p.value, G, 0x5a, 64)).toBe(0);
    expect(acl.aclrtCreateStream(s)).toBe(0);
    expect(acl.aclrtCreateEvent(ev)).toBe(0);
    const host = new Uint8Array(64);
    expect(acl.aclrtMemcpyAsync(host, 64, p.value, 64, A.ACL_MEMCPY_DEVICE_TO_HOST, s.value)).toBe(0);
    expect(acl.aclrtRecordEvent(ev.value, s.value)).toBe(0);
    expect(acl.aclrtSetDevice(0)).toBe(0);
    expect(acl.aclrtStreamWaitEvent(null, ev.value)).toBe(0);
    expect(acl.aclrtSynchronizeStream(null)).toBe(0);
    expect(host[0]).toBe(0x5a);
    const status = box(-1);
    expect(acl.aclrtQueryEventStatus(ev.value, status)).toBe(0);
    expect(status.value).toBe(A.ACL_EVENT_RECORDED_STATUS_COMPLETE);
    acl.dispose();
  });
});

describe('contexts on one device', () => {
  it('cuEventRecord refuses an event of another context on the same device (INVALID_HANDLE)', () => {
    const { cu, ctx } = cudaOnTwo();
    expect(cu.cuCtxSetCurrent(ctx[0])).toBe(0);
    const made = box(0n);
    const ev = box(0n);
    expect(cu.cuCtxCreate(made, 0, 0)).toBe(0);
    expect(cu.cuEventCreate(ev, 0)).toBe(0);
    expect(cu.cuCtxSetCurrent(ctx[0])).toBe(0);
    const s = box(0n);
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    expect(cu.cuEventRecord(ev.value, s.value)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuEventRecord(ev.value, 0n)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    expect(cu.cuEventRecordWithFlags(ev.value, 0n, 0)).toBe(CU.CUDA_ERROR_INVALID_HANDLE);
    // Its own context's streams take it; a wait takes an event of any context.
    expect(cu.cuStreamWaitEvent(s.value, ev.value, 0)).toBe(0);
    expect(cu.cuCtxSetCurrent(made.value)).toBe(0);
    expect(cu.cuEventRecord(ev.value, 0n)).toBe(0);
    cu.dispose();
  });

  it('CU_POINTER_ATTRIBUTE_CONTEXT answers the context current at the cuMemAlloc', () => {
    const { cu, ctx } = cudaOnTwo();
    expect(cu.cuCtxSetCurrent(ctx[0])).toBe(0);
    const made = box(0n);
    expect(cu.cuCtxCreate(made, 0, 0)).toBe(0);
    const inMade = box(0n);
    expect(cu.cuMemAlloc(inMade, G)).toBe(0);
    expect(cu.cuCtxSetCurrent(ctx[0])).toBe(0);
    const inPrimary = box(0n);
    expect(cu.cuMemAlloc(inPrimary, G)).toBe(0);
    const seen = box<bigint | number>(0n);
    expect(cu.cuPointerGetAttribute(seen, CU.CU_POINTER_ATTRIBUTE_CONTEXT, inMade.value)).toBe(0);
    expect(seen.value).toBe(made.value);
    expect(cu.cuPointerGetAttribute(seen, CU.CU_POINTER_ATTRIBUTE_CONTEXT, inPrimary.value)).toBe(0);
    expect(seen.value).toBe(ctx[0]);
    const both = [box<bigint | number>(0n), box<bigint | number>(0)];
    const names = [CU.CU_POINTER_ATTRIBUTE_CONTEXT, CU.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL];
    expect(cu.cuPointerGetAttributes(2, names, both, inMade.value + 64n)).toBe(0);
    expect(both.map((b) => b.value)).toEqual([made.value, 0]);
    cu.dispose();
  });
});
