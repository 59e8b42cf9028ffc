import { describe, expect, it } from 'vitest';
import type { Machine } from '../../../src/backends/sim/machine.js';
import { createCuda } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import { CUDA_FUNCTIONS, type CudaFlavor } from '../../../src/flavors/cuda/cuda.js';

const MiB = 1024 * 1024;
const G = 2 * MiB;

/** A CUDA process on two H200s with cuInit done and device `dev`'s primary context current. */
function ready(dev = 0): { cuda: CudaFlavor; ctx: bigint } {
  const cuda = createCuda({ devices: ['H200', 'H200'], report: () => {} });
  expect(cuda.cuInit(0)).toBe(0);
  const ctx = { value: 0n };
  expect(cuda.cuDevicePrimaryCtxRetain(ctx, dev)).toBe(0);
  expect(cuda.cuCtxSetCurrent(ctx.value)).toBe(0);
  return { cuda, ctx: ctx.value };
}

describe('CUDA flavor: initialisation and devices', () => {
  it('answers NOT_INITIALIZED (3) before cuInit, except cuDriverGetVersion and error strings', () => {
    const cuda = createCuda({ devices: ['H200'] });
    const box = { value: 0 as never };
    expect(cuda.cuDeviceGet(box, 0)).toBe(C.CUDA_ERROR_NOT_INITIALIZED);
    expect(cuda.cuDeviceGetCount(box)).toBe(3);
    expect(cuda.cuDeviceTotalMem(box, 0)).toBe(3);
    expect(cuda.cuDevicePrimaryCtxRetain(box, 0)).toBe(3);
    expect(cuda.cuCtxGetCurrent(box)).toBe(3);
    expect(cuda.cuCtxSynchronize()).toBe(3);
    expect(cuda.cuMemAlloc(box, 100)).toBe(3);
    expect(cuda.cuMemAddressReserve(box, G, 0, 0, 0)).toBe(3);
    expect(cuda.cuStreamCreate(box, 0)).toBe(3);
    const version = { value: 0 };
    expect(cuda.cuDriverGetVersion(version)).toBe(0);
    expect(version.value).toBe(C.SIMULATED_DRIVER_VERSION);
    expect(cuda.cuDriverGetVersion(null as never)).toBe(1);
    const name = { value: null as string | null };
    expect(cuda.cuGetErrorName(0, name)).toBe(0);
    expect(cuda.cuInit(1)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cuda.cuDeviceGet(box, 0)).toBe(3);
    expect(cuda.cuInit(0)).toBe(0);
    expect(cuda.cuInit(0)).toBe(0);
    cuda.dispose();
  });

  it('cuDeviceGet, Count, Name, TotalMem', () => {
    const cuda = createCuda({ devices: ['H200', 'H200'] });
    expect(cuda.cuInit(0)).toBe(0);
    const n = { value: 0 };
    expect(cuda.cuDeviceGetCount(n)).toBe(0);
    expect(n.value).toBe(2);
    const d = { value: -1 };
    expect(cuda.cuDeviceGet(d, 1)).toBe(0);
    expect(d.value).toBe(1);
    expect(cuda.cuDeviceGet(d, 2)).toBe(C.CUDA_ERROR_INVALID_DEVICE);
    expect(cuda.cuDeviceGet(d, -1)).toBe(101);
    expect(cuda.cuDeviceGet(null as never, 0)).toBe(1);
    const name = { value: '' };
    expect(cuda.cuDeviceGetName(name, 256, 0)).toBe(0);
    expect(name.value).toBe('NVIDIA H200');
    expect(cuda.cuDeviceGetName(name, 7, 1)).toBe(0);
    expect(name.value).toBe('NVIDIA');
    expect(cuda.cuDeviceGetName(name, 0, 0)).toBe(1);
    expect(cuda.cuDeviceGetName(name, 256, 2)).toBe(101);
    const bytes = { value: 0 };
    expect(cuda.cuDeviceTotalMem(bytes, 1)).toBe(0);
    expect(bytes.value).toBe(150_109_880_320);
    expect(cuda.cuDeviceTotalMem(bytes, 9)).toBe(101);
    cuda.dispose();
  });
});

describe('CUDA flavor: contexts', () => {
  it('retain, set and get current, release; calls needing a context without one answer 201', () => {
    const cuda = createCuda({ devices: ['H200', 'H200'] });
    expect(cuda.cuInit(0)).toBe(0);
    const cur = { value: 1n };
    expect(cuda.cuCtxGetCurrent(cur)).toBe(0);
    expect(cur.value).toBe(0n);
    const box = { value: 0n };
    expect(cuda.cuMemAlloc(box, 100)).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    expect(cuda.cuCtxSynchronize()).toBe(201);
    expect(cuda.cuMemGetInfo({ value: 0 }, { value: 0 })).toBe(201);
    expect(cuda.cuStreamCreate(box, 0)).toBe(201);
    expect(cuda.cuMemsetD8(0x1000n, 0, 1)).toBe(201);
    expect(cuda.cuCtxGetDevice({ value: 0 })).toBe(201);
    const c0 = { value: 0n };
    const c1 = { value: 0n };
    expect(cuda.cuDevicePrimaryCtxRetain(c0, 0)).toBe(0);
    expect(cuda.cuDevicePrimaryCtxRetain(c1, 1)).toBe(0);
    expect(c0.value).not.toBe(c1.value);
    expect(cuda.cuDevicePrimaryCtxRetain(box, 2)).toBe(101);
    // The same device's primary context is the same handle.
    const again = { value: 0n };
    expect(cuda.cuDevicePrimaryCtxRetain(again, 0)).toBe(0);
    expect(again.value).toBe(c0.value);
    expect(cuda.cuCtxSetCurrent(c1.value)).toBe(0);
    expect(cuda.cuCtxGetCurrent(cur)).toBe(0);
    expect(cur.value).toBe(c1.value);
    const dev = { value: -1 };
    expect(cuda.cuCtxGetDevice(dev)).toBe(0);
    expect(dev.value).toBe(1);
    expect(cuda.cuCtxSynchronize()).toBe(0);
    expect(cuda.cuCtxSetCurrent(0xdeadn)).toBe(201);
    expect(cuda.cuCtxGetCurrent(cur)).toBe(0);
    expect(cur.value).toBe(c1.value);
    expect(cuda.cuCtxSetCurrent(null)).toBe(0);
    expect(cuda.cuCtxGetCurrent(cur)).toBe(0);
    expect(cur.value).toBe(0n);
    expect(cuda.cuMemAlloc(box, 100)).toBe(201);
    expect(cuda.cuDevicePrimaryCtxRelease(1)).toBe(0);
    expect(cuda.cuDevicePrimaryCtxRelease(1)).toBe(201);
    expect(cuda.cuDevicePrimaryCtxRelease(5)).toBe(101);
    // A released (unretained) primary context cannot be made current.
    expect(cuda.cuCtxSetCurrent(c1.value)).toBe(201);
    cuda.dispose();
  });
});

describe('CUDA flavor: cuMemAlloc, cuMemFree, cuMemGetInfo', () => {
  it('free memory drops by the rounded size and comes back', () => {
    const { cuda } = ready();
    const free = { value: 0 };
    const total = { value: 0 };
    expect(cuda.cuMemGetInfo(free, total)).toBe(0);
    expect(total.value).toBe(150_109_880_320);
    const start = free.value;
    expect(start).toBe(total.value);
    const p = { value: 0n };
    expect(cuda.cuMemAlloc(p, 100)).toBe(0);
    expect(p.value).not.toBe(0n);
    expect(cuda.cuMemGetInfo(free, total)).toBe(0);
    expect(free.value).toBe(start - G);
    const q = { value: 0n };
    expect(cuda.cuMemAlloc(q, 3 * MiB)).toBe(0);
    expect(cuda.cuMemGetInfo(free, total)).toBe(0);
    expect(free.value).toBe(start - 3 * G);
    // The memory is usable at once.
    const data = Uint8Array.from({ length: 3 * MiB }, (_, i) => i & 0xff);
    expect(cuda.cuMemcpyHtoD(q.value, data, data.length)).toBe(0);
    const back = new Uint8Array(data.length);
    expect(cuda.cuMemcpyDtoH(back, q.value, back.length)).toBe(0);
    expect(Buffer.from(back).equals(data)).toBe(true);
    expect(cuda.cuMemAlloc(p, 0)).toBe(1);
    expect(cuda.cuMemAlloc(p, 10n ** 30n)).toBe(1);
    expect(cuda.cuMemAlloc(p, 200 * 1024 * MiB)).toBe(2);
    expect(cuda.cuMemFree(q.value + 4096n)).toBe(1);
    expect(cuda.cuMemFree(q.value)).toBe(0);
    expect(cuda.cuMemFree(q.value)).toBe(1);
    expect(cuda.cuMemFree(0n)).toBe(0);
    expect(cuda.cuMemGetInfo(free, total)).toBe(0);
    expect(free.value).toBe(start - G);
    expect(cuda.cuMemGetInfo(null as never, total)).toBe(1);
    cuda.dispose();
    expect((cuda.machine as Machine).devices[0].pool.used).toBe(0);
  });
});

describe('CUDA flavor: streams', () => {
  it('create, ordered async copies, synchronize, destroy; bad streams answer 400', () => {
    const { cuda } = ready();
    const p = { value: 0n };
    expect(cuda.cuMemAlloc(p, G)).toBe(0);
    const s = { value: 0n };
    expect(cuda.cuStreamCreate(s, 0)).toBe(0);
    const s2 = { value: 0n };
    expect(cuda.cuStreamCreate(s2, C.CU_STREAM_NON_BLOCKING)).toBe(0);
    expect(s2.value).not.toBe(s.value);
    expect(cuda.cuStreamCreate({ value: 0n }, 2)).toBe(1);
    const src = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
    const out = new Uint8Array(8);
    expect(cuda.cuMemcpyHtoDAsync(p.value, src, 8, s.value)).toBe(0);
    expect(cuda.cuMemsetD8Async(p.value + 2n, 0xee, 2, s.value)).toBe(0);
    expect(cuda.cuMemcpyDtoDAsync(p.value + 100n, p.value, 8, s.value)).toBe(0);
    expect(cuda.cuMemcpyDtoHAsync(out, p.value + 100n, 8, s.value)).toBe(0);
    // Queued, not run.
    expect([...out]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(cuda.cuStreamSynchronize(s.value)).toBe(0);
    expect([...out]).toEqual([1, 2, 0xee, 0xee, 5, 6, 7, 8]);
    // The default stream (0) waits for queued work first.
    expect(cuda.cuMemsetD8Async(p.value, 9, 1, s2.value)).toBe(0);
    expect(cuda.cuMemcpyDtoH(out, p.value, 1)).toBe(0);
    expect(out[0]).toBe(9);
    expect(cuda.cuStreamSynchronize(0n)).toBe(0);
    // A failure is refused at enqueue: an unmapped address.
    expect(cuda.cuMemsetD8Async(0x1000n, 1, 1, s.value)).toBe(1);
    expect(cuda.cuStreamSynchronize(s.value)).toBe(0);
    // Destroy lets queued work finish.
    expect(cuda.cuMemsetD8Async(p.value, 4, 1, s.value)).toBe(0);
    expect(cuda.cuStreamDestroy(s.value)).toBe(0);
    expect(cuda.cuMemcpyDtoH(out, p.value, 1)).toBe(0);
    expect(out[0]).toBe(4);
    for (const bad of [s.value, 0x999n, 5, 'x']) {
      expect(cuda.cuStreamSynchronize(bad as bigint)).toBe(C.CUDA_ERROR_INVALID_HANDLE);
      expect(cuda.cuStreamDestroy(bad as bigint)).toBe(400);
      expect(cuda.cuMemcpyHtoDAsync(p.value, src, 1, bad as bigint)).toBe(400);
      expect(cuda.cuMemsetD8Async(p.value, 1, 1, bad as bigint)).toBe(400);
    }
    expect(cuda.cuStreamDestroy(0n)).toBe(400);
    expect(cuda.cuStreamDestroy(s2.value)).toBe(0);
    expect(cuda.runtime.stats().streams).toBe(0);
    cuda.dispose();
  });
});

describe('CUDA flavor: error names and strings', () => {
  it('every CUresult has its name and string; an unknown code answers 1 with null', () => {
    const cuda = createCuda();
    for (const [code, [name, text]] of C.CUDA_RESULTS) {
      const n = { value: null as string | null };
      const s = { value: null as string | null };
      expect(cuda.cuGetErrorName(code, n)).toBe(0);
      expect(cuda.cuGetErrorString(code, s)).toBe(0);
      expect(n.value).toBe(name);
      expect(s.value).toBe(text);
      // The name is the constant exported under it.
      expect((C as unknown as Record<string, number>)[name]).toBe(code);
    }
    expect(cuda.cuGetErrorName(999, { value: null })).toBe(0);
    for (const unknown of [12345, -1, 5, Number.NaN]) {
      const n = { value: 'x' as string | null };
      const s = { value: 'x' as string | null };
      expect(cuda.cuGetErrorName(unknown, n)).toBe(1);
      expect(cuda.cuGetErrorString(unknown, s)).toBe(1);
      expect(n.value).toBeNull();
      expect(s.value).toBeNull();
    }
    expect(cuda.cuGetErrorName(0, null as never)).toBe(1);
    cuda.dispose();
  });
});

describe('CUDA flavor: garbage arguments never throw', () => {
  const garbage: unknown[] = [
    undefined,
    null,
    'str',
    '0',
    -1,
    -1n,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    1.5,
    2n ** 64n + 5n,
    -(2n ** 70n),
    {},
    [],
    { value: 0 },
    Symbol('s'),
    () => 0,
    { location: { type: 'x', id: {} }, flags: 'y' },
    [{ location: null, flags: 3 }],
    new Uint8Array(0),
  ];
  const lists: unknown[][] = [
    [],
    [undefined, undefined, undefined, undefined, undefined],
    [null, null, null, null, null],
    ['a', 'b', 'c', 'd', 'e'],
    [-1, -1, -1, -1, -1],
    [Number.NaN, Number.NaN, Number.NaN, Number.NaN, Number.NaN],
    [2n ** 64n, 2n ** 64n, 2n ** 64n, 2n ** 64n, 2n ** 64n],
    [{}, {}, {}, {}, {}],
    ...garbage.map((g, i) => Array.from({ length: 5 }, (_, j) => garbage[(i + j * 3) % garbage.length] ?? g)),
    // Plausible first arguments with garbage after them.
    [{ value: 0n }, Number.NaN, -1, 'x', 2n ** 80n],
    [{ value: 0n }, G, { type: 1, location: { type: 1, id: 99 } }, 0, 0],
    [{ value: 0n }, 2n ** 53n, 0, 0, 0],
    [new Uint8Array(4), 0x7000_0000_0000n, 1e20, 0n],
  ];

  function callEverything(cuda: CudaFlavor): void {
    for (const name of CUDA_FUNCTIONS) {
      const f = (cuda as unknown as Record<string, (...a: unknown[]) => unknown>)[name];
      for (const args of lists) {
        let result: unknown;
        expect(
          () => {
            result = f.apply(cuda, args);
          },
          `${name}(${args.map(String).join(', ')})`,
        ).not.toThrow();
        expect(typeof result, name).toBe('number');
        expect(Number.isInteger(result)).toBe(true);
      }
    }
  }

  it('before cuInit, with a context, and with live VMM state', () => {
    const reports: unknown[] = [];
    const fresh = createCuda({ devices: ['H200', 'H200'], report: (m, e) => reports.push([m, e]) });
    callEverything(fresh);
    fresh.dispose();
    const { cuda } = ready();
    const p = { value: 0n };
    expect(cuda.cuMemAddressReserve(p, 4 * G, 0, 0, 0)).toBe(0);
    const h = { value: 0n };
    expect(
      cuda.cuMemCreate(h, G, { type: 1, requestedHandleTypes: 1, location: { type: 1, id: 0 } }, 0),
    ).toBe(0);
    expect(cuda.cuMemMap(p.value, G, 0, h.value, 0)).toBe(0);
    const s = { value: 0n };
    expect(cuda.cuStreamCreate(s, 0)).toBe(0);
    callEverything(cuda);
    expect(cuda.lastInternalError).toBeUndefined();
    cuda.dispose();
    expect((cuda.machine as Machine).liveAllocations).toBe(0);
    // No internal error (a vmmkit bug answered with 999) was reported along the way.
    expect(reports).toEqual([]);
  });
});
