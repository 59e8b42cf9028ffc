/**
 * Mappings that run past their reservation's end (Note [Mappings past a
 * reservation's end] in src/flavors/cuda/cuda.ts): the transcript shows the
 * driver accepts them; these check how the simulator holds them.
 */
import { describe, expect, it } from 'vitest';
import { createCuda } from '../../src/entry/processes.js';
import * as C from '../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../src/flavors/cuda/cuda.js';

const G = 2 * 1024 * 1024;
const g = BigInt(G);

function setup(): { cu: CudaFlavor; base: bigint; h: bigint } {
  const cu = createCuda();
  const ctx = { value: 0n };
  expect(cu.cuInit(0)).toBe(0);
  expect(cu.cuDevicePrimaryCtxRetain(ctx, 0)).toBe(0);
  expect(cu.cuCtxSetCurrent(ctx.value)).toBe(0);
  const base = { value: 0n };
  expect(cu.cuMemAddressReserve(base, 2 * G, 0, 0, 0)).toBe(0);
  const h = { value: 0n };
  const prop = {
    type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
    requestedHandleTypes: 0,
    location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
  };
  expect(cu.cuMemCreate(h, 2 * G, prop, 0)).toBe(0);
  return { cu, base: base.value, h: h.value };
}

describe('CUDA mappings past a reservation end', () => {
  it('is one mapping: no partial unmap or setAccess, and its hidden range is not the program’s', () => {
    const { cu, base, h } = setup();
    expect(cu.cuMemMap(base + g, 2 * G, 0, h, 0)).toBe(0);
    // The part past the end is no reservation of the program's.
    expect(cu.cuMemAddressFree(base + 2n * g, G)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemMap(base + 2n * g, 2 * G, 0, h, 0)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    // Either piece alone would split the mapping.
    expect(cu.cuMemUnmap(base + g, G)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemSetAccess(base + g, G, [{ location: { type: 1, id: 0 }, flags: 3 }], 1)).toBe(
      C.CUDA_ERROR_INVALID_VALUE,
    );
    expect(cu.cuMemSetAccess(base + g, 2 * G, [{ location: { type: 1, id: 0 }, flags: 3 }], 1)).toBe(0);
    const data = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(cu.cuMemcpyHtoD(base + 2n * g - 4n, data, 8)).toBe(0);
    const out = new Uint8Array(8);
    expect(cu.cuMemcpyDtoH(out, base + 2n * g - 4n, 8)).toBe(0);
    expect([...out]).toEqual([...data]);
    // Whole, it goes, and the hidden reservation with it.
    expect(cu.cuMemUnmap(base + g, 2 * G)).toBe(0);
    expect(cu.runtime.stats()).toMatchObject({ mappings: 0, reservations: 1 });
    expect(cu.cuMemRelease(h)).toBe(0);
    expect(cu.cuMemAddressFree(base, 2 * G)).toBe(0);
    expect(cu.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    cu.dispose();
  });

  it('changes nothing when a later piece overlaps a mapping', () => {
    const { cu, base, h } = setup();
    // A second reservation right after the first, with a mapping in it.
    const b = { value: 0n };
    expect(cu.cuMemAddressReserve(b, 2 * G, 0, base + 2n * g, 0)).toBe(0);
    expect(b.value).toBe(base + 2n * g);
    const other = { value: 0n };
    const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
    expect(cu.cuMemCreate(other, G, prop, 0)).toBe(0);
    expect(cu.cuMemMap(b.value, G, 0, other.value, 0)).toBe(0);
    const before = cu.runtime.stats();
    expect(cu.cuMemMap(base + g, 2 * G, 0, h, 0)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(cu.runtime.stats()).toEqual(before);
    expect(cu.cuMemUnmap(b.value, G)).toBe(0);
    expect(cu.cuMemAddressFree(b.value, 2 * G)).toBe(0);
    cu.dispose();
  });
});
