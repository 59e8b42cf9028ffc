/**
 * hipMemGetAddressRange and hipPointerGetAttributes (Note [HIP pointer
 * ranges]) on the simulator: the range is the hipMemMap chunk or the
 * hipMalloc allocation; unknown addresses get ROCm's codes.
 */
import { describe, expect, it } from 'vitest';
import { createHip } from '../../../src/entry/processes.js';
import * as H from '../../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';

const G = 2 * 1024 * 1024;
const prop = (id: number) => ({
  type: H.hipMemAllocationTypePinned,
  requestedHandleTypes: H.hipMemHandleTypeNone,
  location: { type: H.hipMemLocationTypeDevice, id },
});

function make(): HipFlavor {
  return createHip({ devices: ['MI300X', 'MI300X'], report: () => {} });
}

/** A reservation of `chunks` granules (2 MiB), one allocation of device `dev` mapped per granule. */
function mapped(hip: HipFlavor, chunks: number, dev = 0): bigint {
  const va = { value: 0n };
  expect(hip.hipMemAddressReserve(va, chunks * G, 0, null, 0)).toBe(0);
  for (let i = 0; i < chunks; i++) {
    const h = { value: 0n };
    expect(hip.hipMemCreate(h, G, prop(dev), 0)).toBe(0);
    expect(hip.hipMemMap(va.value + BigInt(i * G), G, 0, h.value, 0)).toBe(0);
    expect(hip.hipMemRelease(h.value)).toBe(0);
  }
  return va.value;
}

function range(hip: HipFlavor, ptr: unknown): [number, bigint, number] {
  const base = { value: -1n };
  const size = { value: -1 };
  return [hip.hipMemGetAddressRange(base, size, ptr as bigint), base.value, size.value];
}

describe('hipMemGetAddressRange', () => {
  it('answers the chunk holding the address, and the hipMalloc allocation', () => {
    const hip = make();
    const va = mapped(hip, 3);
    expect(range(hip, va)).toEqual([0, va, G]);
    expect(range(hip, va + BigInt(G) + 777n)).toEqual([0, va + BigInt(G), G]);
    expect(range(hip, Number(va + BigInt(3 * G) - 1n))).toEqual([0, va + BigInt(2 * G), G]);
    const d = { value: 0n };
    expect(hip.hipMalloc(d, 2 * G)).toBe(0);
    expect(range(hip, d.value + 5n)).toEqual([0, d.value, 2 * G]);
    hip.dispose();
  });

  it('hipErrorNotFound for unknown addresses; both boxes are needed; a failure writes neither', () => {
    const hip = make();
    const va = { value: 0n };
    expect(hip.hipMemAddressReserve(va, G, 0, null, 0)).toBe(0);
    for (const p of [va.value, 0n, null, 0x1000n, -1, 1.5, 'x', 2n ** 80n])
      expect(range(hip, p), String(p)).toEqual([H.hipErrorNotFound, -1n, -1]);
    const live = mapped(hip, 1);
    const size = { value: -1 };
    expect(hip.hipMemGetAddressRange(null as never, size, live)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipMemGetAddressRange(Object.freeze({ value: 0n }), size, live)).toBe(H.hipErrorInvalidValue);
    const base = { value: -1n };
    const refusing = new Proxy({ value: 0 }, { set: () => false });
    expect(hip.hipMemGetAddressRange(base, refusing, live)).toBe(H.hipErrorInvalidValue);
    expect([base.value, size.value]).toEqual([-1n, -1]);
    expect(hip.hipGetLastError()).toBe(H.hipErrorInvalidValue);
    hip.dispose();
    expect(range(hip, live)[0]).toBe(H.hipErrorDeinitialized);
  });
});

describe('hipPointerGetAttributes', () => {
  it("answers type, device and pointers of another device's VMM memory and of hipMalloc memory", () => {
    const hip = make();
    const va = mapped(hip, 2, 1);
    const box = { value: undefined as never as Record<string, unknown> };
    expect(hip.hipPointerGetAttributes(box as never, va + BigInt(G) + 8n)).toBe(0);
    expect(box.value).toEqual({
      type: H.hipMemoryTypeDevice,
      device: 1,
      devicePointer: va + BigInt(G) + 8n,
      hostPointer: 0n,
      isManaged: 0,
      allocationFlags: 0,
    });
    expect(hip.hipSetDevice(1)).toBe(0);
    const d = { value: 0n };
    expect(hip.hipMalloc(d, G)).toBe(0);
    expect(hip.hipPointerGetAttributes(box as never, d.value)).toBe(0);
    expect([box.value.type, box.value.device]).toEqual([H.hipMemoryTypeDevice, 1]);
    hip.dispose();
  });

  it('hipErrorInvalidValue for an address that is no HIP memory and for bad boxes, writing nothing', () => {
    const hip = make();
    const box = { value: 'untouched' };
    const va = { value: 0n };
    expect(hip.hipMemAddressReserve(va, G, 0, null, 0)).toBe(0);
    for (const p of [va.value, 0n, null, 0x1000n, -1, 'x', {}])
      expect(hip.hipPointerGetAttributes(box as never, p as never), String(p)).toBe(H.hipErrorInvalidValue);
    const live = mapped(hip, 1);
    for (const bad of [null, 5, Object.freeze({ value: 0 }), new Proxy({ value: 0 }, { set: () => false })])
      expect(hip.hipPointerGetAttributes(bad as never, live)).toBe(H.hipErrorInvalidValue);
    expect(box.value).toBe('untouched');
    hip.dispose();
  });
});
