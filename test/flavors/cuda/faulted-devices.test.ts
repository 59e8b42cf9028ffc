/**
 * Note [Faulted devices] (src/flavors/cuda/contexts.ts): the fault is the
 * device's, for the rest of the process. The H200's own answers are the
 * stickyFault.* conformance cases (one GPU); these ask what one GPU cannot,
 * on two simulated H200s, and what a capture launch's fault shares with a
 * queued copy's.
 */
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import { cudaWithContext } from './helpers.js';

const G = 2 * 1024 * 1024;
const at = (device: number) => ({ type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: device });

/** Device `d`'s primary context, retained and made current. */
function primary(cu: CudaFlavor, d: number): bigint {
  const b = { value: 0n };
  expect(cu.cuDevicePrimaryCtxRetain(b, d)).toBe(0);
  expect(cu.cuCtxSetCurrent(b.value)).toBe(0);
  return b.value;
}

/** 2 MiB of read-write memory on device `d`; returns its address. */
function mapped(cu: CudaFlavor, d: number): bigint {
  const va = { value: 0n };
  const h = { value: 0n };
  expect(cu.cuMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
  expect(cu.cuMemCreate(h, G, { type: 1, requestedHandleTypes: 0, location: at(d) }, 0)).toBe(0);
  expect(cu.cuMemMap(va.value, G, 0, h.value, 0)).toBe(0);
  expect(cu.cuMemSetAccess(va.value, G, [{ location: at(d), flags: 3 }], 1)).toBe(0);
  return va.value;
}

describe('a faulted device', () => {
  it("is that device's alone: another device's context, memory and streams answer as ever", () => {
    const cu = cudaWithContext({ devices: ['H200', 'H200'] });
    const ctx0 = primary(cu, 0);
    const p0 = mapped(cu, 0);
    const s0 = { value: 0n };
    expect(cu.cuStreamCreate(s0, 0)).toBe(0);
    primary(cu, 1);
    const p1 = mapped(cu, 1);
    const s1 = { value: 0n };
    const e1 = { value: 0n };
    expect(cu.cuStreamCreate(s1, 0)).toBe(0);
    expect(cu.cuEventCreate(e1, 0)).toBe(0);
    // A set queued on device 1, its access taken away before the stream runs it.
    expect(cu.cuMemsetD8Async(p1, 1, 64, s1.value)).toBe(0);
    expect(cu.cuMemSetAccess(p1, G, [{ location: at(1), flags: 1 }], 1)).toBe(0);
    expect(cu.cuStreamSynchronize(s1.value)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);

    // Device 0's context current: its own calls answer; device 1's stream and event answer the fault.
    expect(cu.cuCtxSetCurrent(ctx0)).toBe(0);
    expect(cu.cuCtxSynchronize()).toBe(0);
    expect(cu.cuMemAlloc({ value: 0n }, 1 << 20)).toBe(0);
    expect(cu.cuMemsetD8Async(p0, 2, 64, s0.value)).toBe(0);
    expect(cu.cuStreamSynchronize(s0.value)).toBe(0);
    expect(cu.cuMemsetD8Async(p0, 3, 64, s1.value)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuStreamQuery(s1.value)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuEventQuery(e1.value)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuEventRecord(e1.value, s1.value)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuStreamWaitEvent(s0.value, e1.value, 0)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuCtxCreate({ value: 0n }, 0, 1)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    const back = new Uint8Array(64);
    expect(cu.cuMemcpyDtoH(back, p0, 64)).toBe(0);
    expect([...back]).toEqual(new Array(64).fill(2));
    cu.dispose();
  });

  it('is the same whether a queued copy or a graph replayed into unmapped memory faulted it', () => {
    const cu = cudaWithContext();
    const p = mapped(cu, 0);
    const s = { value: 0n };
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    expect(cu.cuStreamBeginCapture(s.value, 0)).toBe(0);
    expect(cu.cuMemsetD8Async(p, 1, 64, s.value)).toBe(0);
    const graph = { value: 0n };
    expect(cu.cuStreamEndCapture(s.value, graph)).toBe(0);
    const exec = { value: 0n };
    expect(cu.cuGraphInstantiate(exec, graph.value, 0)).toBe(0);
    expect(cu.cuMemUnmap(p, G)).toBe(0);
    // The launch succeeds; the fault is the device's from then on.
    expect(cu.cuGraphLaunch(exec.value, s.value)).toBe(0);
    expect(cu.cuMemGetInfo({ value: 0 }, { value: 0 })).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuStreamSynchronize(s.value)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuStreamDestroy(s.value)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    // What uses no context still answers.
    expect(cu.cuGraphExecDestroy(exec.value)).toBe(0);
    expect(cu.cuGraphDestroy(graph.value)).toBe(0);
    expect(cu.cuMemAddressFree(p, G)).toBe(0);
    cu.dispose();
  });
});
