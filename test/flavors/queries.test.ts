/**
 * Issue 10's missing calls, first batch: device attributes (Note [Device
 * attributes]), capture queries of streams that are not capturing, and HIP's
 * hipDeviceGet and hipRuntimeGetVersion.
 */
import { describe, expect, it } from 'vitest';
import { createMachine } from '../../src/backends/sim/machine.js';
import { createCuda, createHip } from '../../src/entry/processes.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';

function initialised(devices?: NonNullable<Parameters<typeof createMachine>[0]>['devices']) {
  const cu = devices === undefined ? createCuda() : createCuda({ machine: createMachine({ devices }) });
  const b = { value: 0n };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  cu.cuCtxSetCurrent(b.value);
  return cu;
}

const attr = (cu: ReturnType<typeof createCuda>, a: unknown, dev: unknown = 0) => {
  const box = { value: -1 };
  const code = cu.cuDeviceGetAttribute(box, a as number, dev as number);
  return [code, box.value];
};

describe('cuDeviceGetAttribute', () => {
  it("answers the H200's recorded values (the part supports fabric handles and compression)", () => {
    const cu = initialised();
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)).toEqual([0, 1]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)).toEqual([0, 1]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED)).toEqual([0, 0]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)).toEqual([0, 1]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)).toEqual([0, CU.CU_COMPUTE_MODE_DEFAULT]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)).toEqual([0, 132]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)).toEqual([0, 9]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)).toEqual([0, 0]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)).toEqual([0, 1]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED)).toEqual([0, 1]);
    cu.dispose();
  });

  it('the rules agree with what the flavor does', () => {
    const cu = initialised();
    const fabric = {
      type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: CU.CU_MEM_HANDLE_TYPE_FABRIC,
      location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    expect(cu.cuMemCreate({ value: 0n }, 2 * 1024 * 1024, fabric, 0)).toBe(CU.CUDA_ERROR_NOT_PERMITTED);
    const win32 = { ...fabric, requestedHandleTypes: CU.CU_MEM_HANDLE_TYPE_WIN32 };
    expect(cu.cuMemCreate({ value: 0n }, 2 * 1024 * 1024, win32, 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
  });

  it('refuses attributes the part does not answer, bad devices, hardware attributes of a part with no published row', () => {
    const cu = initialised();
    // 144 to 147 lie past cuda.h 13.0's list, yet the H200 answered them (attribute.badNumbers); 148 it did not.
    for (const bad of [0, -1, 148, 1000, 1.5, Number.NaN, 16n, '16', null])
      expect(attr(cu, bad), String(bad)).toEqual([CU.CUDA_ERROR_INVALID_VALUE, -1]);
    expect(attr(cu, CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1)).toEqual([
      CU.CUDA_ERROR_INVALID_DEVICE,
      -1,
    ]);
    expect(cu.cuDeviceGetAttribute(Object.freeze({ value: 0 }), 102, 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
    const custom = initialised([
      { name: 'Custom', totalMemory: 1 << 30, minimumGranularity: 1 << 21, recommendedGranularity: 1 << 21 },
    ]);
    expect(attr(custom, CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)).toEqual([
      CU.CUDA_ERROR_INVALID_VALUE,
      -1,
    ]);
    expect(attr(custom, CU.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)).toEqual([0, 1]);
    expect(attr(custom, CU.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)).toEqual([0, 0]);
    custom.dispose();
    const early = createCuda();
    expect(attr(early, 102)).toEqual([CU.CUDA_ERROR_NOT_INITIALIZED, -1]);
    early.dispose();
  });
});

describe('stream capture queries', () => {
  it('cuStreamIsCapturing: a stream not capturing answers NONE; an unknown stream is an invalid context, as the H200 answers a destroyed one', () => {
    const cu = initialised();
    const s = { value: 0n };
    expect(cu.cuStreamCreate(s, 0)).toBe(0);
    for (const h of [0n, CU.CU_STREAM_LEGACY, CU.CU_STREAM_PER_THREAD, s.value]) {
      const status = { value: -1 };
      expect(cu.cuStreamIsCapturing(h, status)).toBe(0);
      expect(status.value).toBe(CU.CU_STREAM_CAPTURE_STATUS_NONE);
    }
    expect(cu.cuStreamIsCapturing(0x9999n, { value: -1 })).toBe(CU.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuStreamDestroy(s.value)).toBe(0);
    expect(cu.cuStreamIsCapturing(s.value, { value: -1 })).toBe(CU.CUDA_ERROR_INVALID_CONTEXT);
    expect(cu.cuStreamIsCapturing(0n, null as never)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
  });

  it('cuThreadExchangeStreamCaptureMode swaps the mode and gives the old one back', () => {
    const cu = initialised();
    const mode = { value: CU.CU_STREAM_CAPTURE_MODE_RELAXED };
    expect(cu.cuThreadExchangeStreamCaptureMode(mode)).toBe(0);
    expect(mode.value).toBe(CU.CU_STREAM_CAPTURE_MODE_GLOBAL);
    // The allocator's guard: restore what was there.
    expect(cu.cuThreadExchangeStreamCaptureMode(mode)).toBe(0);
    expect(mode.value).toBe(CU.CU_STREAM_CAPTURE_MODE_RELAXED);
    // Any int goes in and comes back at the next exchange, as on the H200 (capture.exchangeModeBadValues).
    const odd = { value: 7 };
    expect(cu.cuThreadExchangeStreamCaptureMode(odd)).toBe(0);
    expect(odd.value).toBe(CU.CU_STREAM_CAPTURE_MODE_GLOBAL);
    const back = { value: CU.CU_STREAM_CAPTURE_MODE_GLOBAL };
    expect(cu.cuThreadExchangeStreamCaptureMode(back)).toBe(0);
    expect(back.value).toBe(7);
    // What is no C int is refused, and the box keeps it.
    for (const v of [1.5, Number.NaN, 2 ** 31, '1', 1n]) {
      const bad = { value: v as number };
      expect(cu.cuThreadExchangeStreamCaptureMode(bad), String(v)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
      expect(bad.value).toBe(v);
    }
    cu.dispose();
  });
});

describe('HIP device and version queries', () => {
  it('hipDeviceGet names the ordinal; hipRuntimeGetVersion is HIP_VERSION-encoded', () => {
    const hip = createHip();
    const d = { value: -1 };
    expect(hip.hipDeviceGet(d, 0)).toBe(0);
    expect(d.value).toBe(0);
    expect(hip.hipDeviceGet({ value: -1 }, 1)).toBe(H.hipErrorInvalidDevice);
    expect(hip.hipDeviceGet(null as never, 0)).toBe(H.hipErrorInvalidValue);
    const v = { value: 0 };
    expect(hip.hipRuntimeGetVersion(v)).toBe(0);
    expect(Math.floor(v.value / 10_000_000)).toBe(6);
    // After dispose it still answers, as clr's does (Note [HIP after dispose]).
    const before = v.value;
    hip.dispose();
    v.value = 0;
    expect(hip.hipRuntimeGetVersion(v)).toBe(0);
    expect(v.value).toBe(before);
  });
});
