/**
 * The simulated H200's cuDeviceGetAttribute answers against the real part's,
 * recorded by conformance/gpu/device-attributes.py (Note [Device attributes]).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { H200_ATTRIBUTES } from '../../../src/backends/sim/h200-attributes.js';
import { createCuda } from '../../../src/entry/processes.js';
import { ANSWERED_ATTRIBUTES } from '../../../src/flavors/cuda/attributes.js';
import * as CU from '../../../src/flavors/cuda/constants.js';

interface Recorded {
  devices: { name: string; values: Record<string, number> }[];
}

const record: Recorded = JSON.parse(
  readFileSync(new URL('../../../conformance/results/h200-device-attributes.json', import.meta.url), 'utf8'),
);

/** The recorded value of attribute id `a`: the script keys attributes constants.ts names by name, others by id. */
function recorded(values: Record<string, number>, a: number): number | undefined {
  const named = Object.entries(CU).find(([k, v]) => k.startsWith('CU_DEVICE_ATTRIBUTE_') && v === a);
  const key = named !== undefined && named[0] !== 'CU_DEVICE_ATTRIBUTE_MAX' ? named[0].slice(20) : String(a);
  return values[key];
}

function answer(cu: ReturnType<typeof createCuda>, a: number): [number, number] {
  const box = { value: -1 };
  return [cu.cuDeviceGetAttribute(box, a, 0), box.value];
}

describe('the simulated H200 answers what the real H200 answered', () => {
  const h200 = record.devices.find((d) => d.name === 'NVIDIA H200');

  it('the table holds exactly the record: every attribute the part answered, with its value', () => {
    expect(h200).toBeDefined();
    const fromFile = new Map<number, number>();
    for (let a = 1; a <= 255; a++) {
      const v = recorded(h200?.values ?? {}, a);
      if (v !== undefined) fromFile.set(a, v);
    }
    expect(fromFile.size).toBe(Object.keys(h200?.values ?? {}).length);
    expect(new Map(H200_ATTRIBUTES)).toEqual(fromFile);
    for (const a of ANSWERED_ATTRIBUTES) expect(fromFile.has(a), String(a)).toBe(true);
  });

  it("every attribute number answers the record's value, or INVALID_VALUE where the part answered none", () => {
    const cu = createCuda();
    const ctx = { value: 0n };
    cu.cuInit(0);
    cu.cuDevicePrimaryCtxRetain(ctx, 0);
    cu.cuCtxSetCurrent(ctx.value);
    let answered = 0;
    for (let a = -1; a <= 300; a++) {
      const [code, value] = answer(cu, a);
      const want = recorded(h200?.values ?? {}, a);
      if (want !== undefined) {
        expect([code, value], `attribute ${a}`).toEqual([CU.CUDA_SUCCESS, want]);
        answered++;
      } else {
        expect([code, value], `attribute ${a}`).toEqual([CU.CUDA_ERROR_INVALID_VALUE, -1]);
      }
    }
    expect(answered).toBe(H200_ATTRIBUTES.size);
    // The part supports fabric handles, but creating one still needs an IMEX channel.
    const fabric = {
      type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: CU.CU_MEM_HANDLE_TYPE_FABRIC,
      location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    expect(answer(cu, CU.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)).toEqual([CU.CUDA_SUCCESS, 1]);
    expect(cu.cuMemCreate({ value: 0n }, 2 * 1024 * 1024, fabric, 0)).toBe(CU.CUDA_ERROR_NOT_PERMITTED);
    cu.dispose();
  });
});
