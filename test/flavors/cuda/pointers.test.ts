/**
 * cuMemGetAddressRange, cuPointerGetAttribute and cuPointerGetAttributes
 * (Note [Pointer ranges], as the H200 answered the conformance cases
 * addressRange.* and pointer.*): the address range is the cuMemMap that
 * mapped the address once a device may access it, or the cuMemAlloc
 * allocation at its requested size; the pointer attributes' range is the
 * reservation; unknown addresses get each call's code.
 */
import { describe, expect, it } from 'vitest';
import { createCuda } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';

const G = 2 * 1024 * 1024;
const prop = (id: number) => ({
  type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
  requestedHandleTypes: C.CU_MEM_HANDLE_TYPE_NONE,
  location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id },
});

function ready(dev = 0): CudaFlavor {
  const cu = createCuda({ devices: ['H200', 'H200'], report: () => {} });
  const ctx = { value: 0n };
  expect(cu.cuInit(0)).toBe(0);
  expect(cu.cuDevicePrimaryCtxRetain(ctx, dev)).toBe(0);
  expect(cu.cuCtxSetCurrent(ctx.value)).toBe(0);
  return cu;
}

/** A reservation of `chunks` granules with one allocation of device `dev` mapped per granule, `dev` granted read-write. */
function mapped(cu: CudaFlavor, chunks: number, dev = 0): bigint {
  const va = { value: 0n };
  expect(cu.cuMemAddressReserve(va, chunks * G, 0, 0n, 0)).toBe(0);
  for (let i = 0; i < chunks; i++) {
    const h = { value: 0n };
    expect(cu.cuMemCreate(h, G, prop(dev), 0)).toBe(0);
    expect(cu.cuMemMap(va.value + BigInt(i * G), G, 0, h.value, 0)).toBe(0);
    expect(cu.cuMemRelease(h.value)).toBe(0);
  }
  const rw = [{ location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: dev }, flags: 3 }];
  expect(cu.cuMemSetAccess(va.value, chunks * G, rw, 1)).toBe(0);
  return va.value;
}

function range(cu: CudaFlavor, ptr: bigint): [number, bigint, number] {
  const base = { value: -1n };
  const size = { value: -1 };
  const code = cu.cuMemGetAddressRange(base, size, ptr);
  return [code, base.value, size.value];
}

function attribute(cu: CudaFlavor, a: number, ptr: bigint): [number, number | bigint] {
  const box: { value: number | bigint } = { value: -1 };
  return [cu.cuPointerGetAttribute(box, a, ptr), box.value];
}

describe('cuMemGetAddressRange', () => {
  it('answers the mapping holding the address, not the reservation', () => {
    const cu = ready();
    const va = mapped(cu, 3);
    expect(range(cu, va)).toEqual([0, va, G]);
    expect(range(cu, va + BigInt(G) + 12345n)).toEqual([0, va + BigInt(G), G]);
    expect(range(cu, va + BigInt(3 * G) - 1n)).toEqual([0, va + BigInt(2 * G), G]);
    // Optional out boxes: either may be null.
    const base = { value: 0n };
    expect(cu.cuMemGetAddressRange(base, null, va + 5n)).toBe(0);
    expect(base.value).toBe(va);
    const size = { value: 0 };
    expect(cu.cuMemGetAddressRange(null, size, va + 5n)).toBe(0);
    expect(size.value).toBe(G);
    cu.dispose();
  });

  it('one cuMemMap of several granules is one range; cuMemAlloc memory is its allocation', () => {
    const cu = ready();
    const va = { value: 0n };
    expect(cu.cuMemAddressReserve(va, 4 * G, 0, 0n, 0)).toBe(0);
    const h = { value: 0n };
    expect(cu.cuMemCreate(h, 4 * G, prop(0), 0)).toBe(0);
    expect(cu.cuMemMap(va.value, 4 * G, 0, h.value, 0)).toBe(0);
    // No device may access it yet: not found (addressRange.vmmNoAccess).
    expect(range(cu, va.value + BigInt(3 * G))).toEqual([C.CUDA_ERROR_NOT_FOUND, -1n, -1]);
    const rw = [{ location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }, flags: 3 }];
    expect(cu.cuMemSetAccess(va.value, 4 * G, rw, 1)).toBe(0);
    expect(range(cu, va.value + BigInt(3 * G))).toEqual([0, va.value, 4 * G]);
    const d = { value: 0n };
    expect(cu.cuMemAlloc(d, 3 * G)).toBe(0);
    expect(range(cu, d.value + 100n)).toEqual([0, d.value, 3 * G]);
    // The size asked for, not the granules core holds (addressRange.cuMemAlloc).
    const odd = { value: 0n };
    expect(cu.cuMemAlloc(odd, G + 1)).toBe(0);
    expect(range(cu, odd.value + 7n)).toEqual([0, odd.value, G + 1]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_RANGE_SIZE, odd.value)).toEqual([0, G + 1]);
    cu.dispose();
  });

  it('NOT_FOUND for unmapped, reserved-only, freed and null addresses; bad boxes change nothing', () => {
    const cu = ready();
    const va = { value: 0n };
    expect(cu.cuMemAddressReserve(va, 2 * G, 0, 0n, 0)).toBe(0);
    expect(range(cu, va.value)).toEqual([C.CUDA_ERROR_NOT_FOUND, -1n, -1]);
    expect(range(cu, 0n)).toEqual([C.CUDA_ERROR_NOT_FOUND, -1n, -1]);
    expect(range(cu, 0x1000n)).toEqual([C.CUDA_ERROR_NOT_FOUND, -1n, -1]);
    const d = { value: 0n };
    expect(cu.cuMemAlloc(d, G)).toBe(0);
    expect(cu.cuMemFree(d.value)).toBe(0);
    expect(range(cu, d.value)).toEqual([C.CUDA_ERROR_NOT_FOUND, -1n, -1]);
    const live = mapped(cu, 1);
    const size = { value: -1 };
    for (const bad of [
      Object.freeze({ value: 0n }),
      5,
      'x',
      {
        get value() {
          return 0n;
        },
      },
    ])
      expect(cu.cuMemGetAddressRange(bad as never, size, live)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    expect(size.value).toBe(-1);
    for (const ptr of [-1, 1.5, Number.NaN, 'x', {}, undefined, 2n ** 80n])
      expect(cu.cuMemGetAddressRange(null, size, ptr as never), String(ptr)).toBe(C.CUDA_ERROR_NOT_FOUND);
    cu.dispose();
  });

  it('needs a context and cuInit', () => {
    const cu = createCuda({ devices: ['H200'] });
    expect(range(cu, 0n)[0]).toBe(C.CUDA_ERROR_NOT_INITIALIZED);
    cu.cuInit(0);
    expect(range(cu, 0n)[0]).toBe(C.CUDA_ERROR_INVALID_CONTEXT);
    cu.dispose();
    expect(range(cu, 0n)[0]).toBe(C.CUDA_ERROR_DEINITIALIZED);
  });
});

describe('cuPointerGetAttribute and cuPointerGetAttributes', () => {
  it("answers memory type, device ordinal, range, mapped and is-managed of another device's memory", () => {
    const cu = ready(0);
    const va = mapped(cu, 2, 1);
    const p = va + BigInt(G) + 64n;
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p)).toEqual([0, C.CU_MEMORYTYPE_DEVICE]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)).toEqual([0, 1]);
    // The reservation, not the mapping (pointer.vmm), and no context: VMM memory belongs to none.
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p)).toEqual([0, va]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_RANGE_SIZE, p)).toEqual([0, 2 * G]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p)).toEqual([0, va + BigInt(G)]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p)).toEqual([0, G]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_MAPPED, p)).toEqual([0, 1]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_IS_MANAGED, p)).toEqual([0, 0]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p)).toEqual([0, p]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_CONTEXT, p)).toEqual([0, 0n]);
    // Device 0, current, was granted nothing on device 1's memory.
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p)).toEqual([0, 0]);
    const d = { value: 0n };
    expect(cu.cuMemAlloc(d, G)).toBe(0);
    const ctx0 = { value: 0n };
    expect(cu.cuCtxGetCurrent(ctx0)).toBe(0);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_CONTEXT, d.value)).toEqual([0, ctx0.value]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, d.value)).toEqual([0, 1]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p)).toEqual([0, 0]);
    cu.dispose();
  });

  it('VMM memory no device may access answers every attribute but its device pointer', () => {
    const cu = ready();
    const va = { value: 0n };
    expect(cu.cuMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
    const h = { value: 0n };
    expect(cu.cuMemCreate(h, G, prop(0), 0)).toBe(0);
    expect(cu.cuMemMap(va.value, G, 0, h.value, 0)).toBe(0);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, va.value + 8n)).toEqual([1, -1]);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_RANGE_SIZE, va.value + 8n)).toEqual([0, G]);
    const boxes = [{ value: -1 as number | bigint }, { value: -1 as number | bigint }];
    const names = [C.CU_POINTER_ATTRIBUTE_RANGE_SIZE, C.CU_POINTER_ATTRIBUTE_DEVICE_POINTER];
    expect(cu.cuPointerGetAttributes(2, names, boxes, va.value)).toBe(1);
    expect(boxes.map((b) => b.value)).toEqual([-1, -1]);
    cu.dispose();
  });

  it('one address that is no CUDA memory: INVALID_VALUE singly, NULL values and success together', () => {
    const cu = ready();
    const va = { value: 0n };
    expect(cu.cuMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
    expect(attribute(cu, C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va.value)).toEqual([
      C.CUDA_ERROR_INVALID_VALUE,
      -1,
    ]);
    const boxes: { value: number | bigint }[] = [{ value: -1 }, { value: -1 }, { value: -1 }, { value: -1 }];
    const names = [
      C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
      C.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
      C.CU_POINTER_ATTRIBUTE_MAPPED,
      C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    ];
    expect(cu.cuPointerGetAttributes(4, names, boxes, va.value)).toBe(0);
    // The device ordinal's NULL value is CU_DEVICE_INVALID (pointer.getAttributesAtOnce).
    expect(boxes.map((b) => b.value)).toEqual([0, 0n, 0, C.CU_DEVICE_INVALID]);
    const live = mapped(cu, 1);
    expect(cu.cuPointerGetAttributes(4, names, boxes, live + 1n)).toBe(0);
    expect(boxes.map((b) => b.value)).toEqual([C.CU_MEMORYTYPE_DEVICE, live, 1, 0]);
    cu.dispose();
  });

  it('refuses unknown attributes, short lists and bad boxes before writing any box', () => {
    const cu = ready();
    const live = mapped(cu, 1);
    for (const bad of [0, 4, 5, 21, 99, -1, 1.5, Number.NaN, '2', 2n, null])
      expect(attribute(cu, bad as number, live), String(bad)).toEqual([C.CUDA_ERROR_INVALID_VALUE, -1]);
    expect(cu.cuPointerGetAttribute(Object.freeze({ value: 0 }), C.CU_POINTER_ATTRIBUTE_MAPPED, live)).toBe(
      1,
    );
    const ok = C.CU_POINTER_ATTRIBUTE_MAPPED;
    const a = { value: -1 };
    const b = { value: -1 };
    const cases: [unknown, unknown, unknown][] = [
      [2, [ok, 99], [a, b]],
      [2, [ok, ok], [a, Object.freeze({ value: 0 })]],
      [3, [ok, ok], [a, b]],
      [2, [ok, ok], [a]],
      [0, [], []],
      [-1, [ok], [a]],
      [1, 'x', [a]],
      [1, [ok], null],
      [
        1,
        new Proxy([ok], {
          get: () => {
            throw new Error('trap');
          },
        }),
        [a],
      ],
      [10_000, [ok], [a]],
    ];
    for (const [n, names, boxes] of cases)
      expect(cu.cuPointerGetAttributes(n as number, names as never, boxes as never, live)).toBe(1);
    expect([a.value, b.value]).toEqual([-1, -1]);
    cu.dispose();
  });
});
