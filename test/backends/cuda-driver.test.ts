import { describe, expect, it } from 'vitest';
import {
  type CudaDriver,
  CudaDriverUnavailableError,
  createRawCuda,
  DEFAULT_LIBRARY_PATHS,
  loadCudaDriver,
} from '../../src/backends/cuda/driver.js';

function tryLoad(): CudaDriver | undefined {
  try {
    return loadCudaDriver();
  } catch (e) {
    if (e instanceof CudaDriverUnavailableError) return undefined;
    throw e;
  }
}
const driver = tryLoad();

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
