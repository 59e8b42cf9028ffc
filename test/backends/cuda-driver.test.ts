import { describe, expect, it } from 'vitest';
import { CheckedCuda, CudaDriverError } from '../../src/backends/cuda/checked.js';
import {
  type CudaDriver,
  CudaDriverUnavailableError,
  createRawCuda,
  DEFAULT_LIBRARY_PATHS,
  findCudaDriver,
  loadCudaDriver,
} from '../../src/backends/cuda/driver.js';
import {
  declareDriverTypes,
  decodeAccessDesc,
  decodeProp,
  STRUCT_LAYOUT,
} from '../../src/backends/cuda/driver-api.js';

const driver = findCudaDriver();

describe('raw CUDA driver', () => {
  it.skipIf(driver !== undefined)('without libcuda, names every library it tried', () => {
    let error: unknown;
    try {
      loadCudaDriver();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CudaDriverUnavailableError);
    const err = error as CudaDriverUnavailableError;
    expect(err.librariesTried).toEqual(DEFAULT_LIBRARY_PATHS);
    for (const path of DEFAULT_LIBRARY_PATHS) expect(err.message).toContain(path);
  });

  it('names custom library paths in the error', () => {
    const paths = ['/nonexistent/libcuda-a.so', '/nonexistent/libcuda-b.so'];
    expect(() => loadCudaDriver(paths)).toThrow(/libcuda-a\.so.*libcuda-b\.so/);
  });

  it.skipIf(driver === undefined)('reserves, creates, maps, grants access and copies on a GPU', () => {
    const cu = createRawCuda(driver!);
    expect(cu.cuInit(0)).toBe(0);
    const ctx = { value: 0n };
    expect(cu.cuDevicePrimaryCtxRetain(ctx, 0)).toBe(0);
    expect(cu.cuCtxSetCurrent(ctx.value)).toBe(0);
    const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
    const gran = { value: 0 };
    expect(cu.cuMemGetAllocationGranularity(gran, prop, 0)).toBe(0);
    const size = gran.value;
    const ptr = { value: 0n };
    expect(cu.cuMemAddressReserve(ptr, size, 0, 0, 0)).toBe(0);
    const handle = { value: 0n };
    expect(cu.cuMemCreate(handle, size, prop, 0)).toBe(0);
    expect(cu.cuMemMap(ptr.value, size, 0, handle.value, 0)).toBe(0);
    expect(cu.cuMemSetAccess(ptr.value, size, [{ location: { type: 1, id: 0 }, flags: 3 }], 1)).toBe(0);
    const data = Uint8Array.from({ length: 64 }, (_, i) => i * 3);
    expect(cu.cuMemcpyHtoD(ptr.value, data, 64)).toBe(0);
    const back = new Uint8Array(64);
    expect(cu.cuMemcpyDtoH(back, ptr.value, 64)).toBe(0);
    expect(back).toEqual(data);
    expect(cu.cuMemUnmap(ptr.value, size)).toBe(0);
    expect(cu.cuMemRelease(handle.value)).toBe(0);
    expect(cu.cuMemAddressFree(ptr.value, size)).toBe(0);
    expect(cu.cuDevicePrimaryCtxRelease(0)).toBe(0);
  });
});

describe('checked layer: out-parameters as typed arrays (Note [Out-parameters as typed arrays])', () => {
  /** A driver that records what the checked layer hands it and answers from `answer`. */
  function recording(answer: bigint) {
    const seen: Record<string, unknown[]> = {};
    const driver = new Proxy({} as Record<string, unknown>, {
      get: (_, name: string) => {
        if (name === 'libraryPath') return '(recording)';
        if (name === 'types') return declareDriverTypes();
        return (...args: unknown[]) => {
          seen[name] = args.map((a) => (a instanceof Uint8Array ? Uint8Array.from(a) : a));
          const out = args[0];
          if (out instanceof BigUint64Array) out[0] = answer;
          return 0;
        };
      },
    });
    return { cu: new CheckedCuda(driver as unknown as CudaDriver), seen };
  }

  it('koffi lays the structs out where the checked layer encodes them', () => {
    expect(() => declareDriverTypes()).not.toThrow();
    expect(STRUCT_LAYOUT.CUmemAllocationProp['location.id']).toBe(12);
    expect(STRUCT_LAYOUT.CUmemAccessDesc.flags).toBe(8);
  });

  it('reads 64-bit out-parameters as numbers when exact and bigints above 2^53', () => {
    expect(recording(0x7f00_0020_0000n).cu.addressReserve(2 << 20, 0, 0)).toBe(0x7f00_0020_0000);
    expect(recording(0x5550_0000_0010n).cu.create(2 << 20, 1, 0, 0)).toBe(0x5550_0000_0010);
    expect(recording(1n << 60n).cu.create(2 << 20, 1, 0, 0)).toBe(1n << 60n);
  });

  it('passes reused typed arrays and encoded structs, never koffi-marshalled arrays or objects', () => {
    const { cu, seen } = recording(42n);
    cu.create(4 << 20, 3, 1, 1);
    const [out, size, prop, flags] = seen.cuMemCreate;
    expect(out).toBeInstanceOf(BigUint64Array);
    expect([size, flags]).toEqual([4 << 20, 0]);
    expect(decodeProp(prop as Uint8Array)).toEqual({
      type: 1,
      requestedHandleTypes: 1,
      location: { type: 3, id: 1 },
      allocFlags: { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0 },
    });
    cu.setAccess(0x7f00_0000_0000, 2 << 20, 1, 3);
    const [ptr, n, desc, count] = seen.cuMemSetAccess;
    expect([ptr, n, count]).toEqual([0x7f00_0000_0000, 2 << 20, 1]);
    expect(decodeAccessDesc(desc as Uint8Array)).toEqual({ location: { type: 1, id: 1 }, flags: 3 });
    cu.addressReserve(2 << 20, 0, 0);
    expect(seen.cuMemAddressReserve[0]).toBe(seen.cuMemCreate[0]);
  });

  it('turns a failing CUresult into a CudaDriverError naming the function', () => {
    const failing = new Proxy({} as Record<string, unknown>, { get: () => () => 2 });
    const cu = new CheckedCuda(failing as unknown as CudaDriver);
    expect(() => cu.create(2 << 20, 1, 0, 0)).toThrow(/cuMemCreate returned CUDA_ERROR_OUT_OF_MEMORY/);
    expect(() => cu.setAccess(1, 2, 0, 3)).toThrow(CudaDriverError);
  });
});

describe('raw binding: addresses and sizes read back unsigned (Note [Unsigned reads])', () => {
  /** A driver that writes `answer` into every 64-bit out slot it is given, except for `unwritten` calls. */
  function writing(answer: bigint, unwritten: readonly string[] = []) {
    return createRawCuda(
      stubDriver((name, args) => {
        if (!unwritten.includes(name)) for (const a of args) if (a instanceof BigUint64Array) a[0] = answer;
      }),
    );
  }

  it('a CUdeviceptr, handle, context, stream or event at or above 2^63 is that bigint, never negative', () => {
    const high = (1n << 63n) + 0x20_0000n;
    const cu = writing(high);
    const box = { value: 0n };
    for (const call of [
      () => cu.cuMemAddressReserve(box, 2 << 20, 0, 0, 0),
      () => cu.cuMemAlloc(box, 64),
      () =>
        cu.cuMemCreate(box, 2 << 20, { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } }, 0),
      () => cu.cuMemRetainAllocationHandle(box, 1),
      () => cu.cuMemImportFromShareableHandle(box, 3, 1),
      () => cu.cuDevicePrimaryCtxRetain(box, 0),
      () => cu.cuCtxGetCurrent(box),
      () => cu.cuCtxCreate(box, 0, 0),
      () => cu.cuStreamCreate(box, 0),
      () => cu.cuEventCreate(box, 0),
    ]) {
      box.value = 0n;
      expect(call()).toBe(0);
      expect(box.value).toBe(high);
    }
    const base = { value: 0n };
    expect(cu.cuMemGetAddressRange(base, null, 1)).toBe(0);
    expect(base.value).toBe(high);
  });

  it('a size_t above 2^53 is a bigint, one below a number', () => {
    const big = (1n << 60n) + 1n;
    const cu = writing(big);
    const n = { value: 0 };
    expect(cu.cuDeviceTotalMem(n, 0)).toBe(0);
    expect(n.value).toBe(big);
    const [free, total] = [{ value: 0 }, { value: 0 }];
    expect(cu.cuMemGetInfo(free, total)).toBe(0);
    expect([free.value, total.value]).toEqual([big, big]);
    const size = { value: 0 };
    expect(writing(3n << 21n).cuMemGetAddressRange(null, size, 1)).toBe(0);
    expect(size.value).toBe(3 << 21);
    expect(
      writing(2n << 20n).cuMemGetAllocationGranularity(
        size,
        { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } },
        0,
      ),
    ).toBe(0);
    expect(size.value).toBe(2 << 20);
  });

  it('cuMemGetAddressRange leaves a box the driver did not write as it was, and tells NULL from it', () => {
    const base = { value: -1n };
    const size = { value: -1 };
    expect(writing(0n, ['cuMemGetAddressRange_v2']).cuMemGetAddressRange(base, size, 1)).toBe(0);
    expect([base.value, size.value]).toEqual([-1n, -1]);
    expect(writing(0n).cuMemGetAddressRange(base, size, 1)).toBe(0);
    expect([base.value, size.value]).toEqual([0n, 0]);
  });
});

describe('raw binding: cuCtxCreate in both forms (Note [Context creation parameters])', () => {
  function capturing() {
    const seen: Record<string, unknown[]> = {};
    const driver = stubDriver((name, args) => {
      // The struct's bytes as the driver would read them then.
      seen[name] = args.map((a) => (a instanceof Uint8Array ? Buffer.from(a) : a));
      if (args[0] instanceof BigUint64Array) args[0][0] = 0xcc01n;
    });
    return { cu: createRawCuda(driver), seen };
  }

  it('three arguments call cuCtxCreate_v2, four cuCtxCreate_v4 with C’s CUctxCreateParams (NULL stays NULL)', () => {
    const { cu, seen } = capturing();
    const ctx = { value: 0n };
    expect(cu.cuCtxCreate(ctx, 4, 0)).toBe(0);
    expect(seen.cuCtxCreate_v2?.slice(1)).toEqual([4, 0]);
    expect(ctx.value).toBe(0xcc01n);
    expect(cu.cuCtxCreate(ctx, null, 1, 0)).toBe(0);
    expect(seen.cuCtxCreate_v4?.slice(1)).toEqual([null, 1, 0]);
    expect(cu.cuCtxCreate_v4(ctx, {}, 0, 0)).toBe(0);
    const empty = seen.cuCtxCreate_v4?.[1] as Buffer;
    expect([empty.length, empty.readBigUInt64LE(0), empty.readInt32LE(8), empty.readBigUInt64LE(16)]).toEqual(
      [24, 0n, 0, 0n],
    );
    expect(
      cu.cuCtxCreate(
        ctx,
        {
          execAffinityParams: [{ type: 0, param: { smCount: { val: 8 } } }],
          numExecAffinityParams: 1,
          cigParams: null,
        },
        0,
        0,
      ),
    ).toBe(0);
    const withAffinity = seen.cuCtxCreate_v4?.[1] as Buffer;
    expect(withAffinity.readBigUInt64LE(0)).not.toBe(0n);
    expect([withAffinity.readInt32LE(8), withAffinity.readBigUInt64LE(16)]).toEqual([1, 0n]);
    expect(cu.cuCtxCreate_v2(ctx, 0, 0)).toBe(0);
  });
});

/** A stand-in for libcuda whose every function runs `call` and answers CUDA_SUCCESS. */
function stubDriver(call: (name: string, args: unknown[]) => void): CudaDriver {
  const driver = new Proxy({} as Record<string, unknown>, {
    get: (_, name: string) => {
      if (name === 'libraryPath') return '(stub)';
      if (name === 'types') return declareDriverTypes();
      return (...args: unknown[]) => {
        call(name, args);
        return 0;
      };
    },
  });
  return driver as unknown as CudaDriver;
}
