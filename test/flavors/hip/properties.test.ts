/** hipGetDeviceProperties (Note [HIP device properties]). */
import { describe, expect, it } from 'vitest';
import { DEVICE_PRESETS } from '../../../src/backends/sim/presets.js';
import { createCuda, createHip } from '../../../src/entry/processes.js';
import * as CU from '../../../src/flavors/cuda/constants.js';
import * as H from '../../../src/flavors/hip/constants.js';

const read = (hip: ReturnType<typeof createHip>, device: unknown) => {
  const box = { value: undefined as unknown };
  return [hip.hipGetDeviceProperties(box as never, device as number), box.value];
};

describe('hipGetDeviceProperties', () => {
  it("writes the MI300X's published figures and the device's own name and memory", () => {
    const hip = createHip({ devices: ['MI300X', 'H200'], report: () => {} });
    expect(read(hip, 0)).toEqual([
      0,
      {
        name: 'AMD Instinct MI300X',
        totalGlobalMem: DEVICE_PRESETS.MI300X.totalMemory,
        multiProcessorCount: 304,
        major: 9,
        minor: 4,
      },
    ]);
    // HIP on NVIDIA: the H200's recorded attributes.
    expect(read(hip, 1)).toEqual([
      0,
      {
        name: 'NVIDIA H200',
        totalGlobalMem: 150_109_880_320,
        multiProcessorCount: 132,
        major: 9,
        minor: 0,
      },
    ]);
    hip.dispose();
  });

  it('refuses bad devices, bad boxes and parts with no published row, writing nothing', () => {
    const hip = createHip({
      devices: [
        'MI300X',
        { name: 'Custom', totalMemory: 1 << 30, minimumGranularity: 4096, recommendedGranularity: 4096 },
      ],
      report: () => {},
    });
    expect(read(hip, 1)).toEqual([H.hipErrorInvalidValue, undefined]);
    for (const bad of [2, -1, Number.NaN, '0x', 1.5])
      expect(read(hip, bad), String(bad)).toEqual([H.hipErrorInvalidDevice, undefined]);
    for (const box of [null, 7, Object.freeze({ value: 0 }), new Proxy({ value: 0 }, { set: () => false })])
      expect(hip.hipGetDeviceProperties(box as never, 0)).toBe(H.hipErrorInvalidValue);
    hip.dispose();
    expect(read(hip, 0)).toEqual([H.hipErrorDeinitialized, undefined]);
  });
});

describe('hipDeviceGetAttribute', () => {
  const attr = (hip: ReturnType<typeof createHip>, a: unknown, dev: unknown = 0) => {
    const box = { value: -1 };
    return [hip.hipDeviceGetAttribute(box, a as number, dev as number), box.value];
  };

  it('answers the same facts as hipGetDeviceProperties, and the VMM rules', () => {
    const hip = createHip({
      devices: [
        'MI300X',
        { name: 'Custom', totalMemory: 1 << 30, minimumGranularity: 4096, recommendedGranularity: 4096 },
      ],
      report: () => {},
    });
    const props = {
      value: undefined as never as { multiProcessorCount: number; major: number; minor: number },
    };
    expect(hip.hipGetDeviceProperties(props as never, 0)).toBe(0);
    expect(attr(hip, H.hipDeviceAttributeMultiprocessorCount)).toEqual([0, props.value.multiProcessorCount]);
    expect(attr(hip, H.hipDeviceAttributeComputeCapabilityMajor)).toEqual([0, props.value.major]);
    expect(attr(hip, H.hipDeviceAttributeComputeCapabilityMinor)).toEqual([0, props.value.minor]);
    expect(attr(hip, H.hipDeviceAttributeVirtualMemoryManagementSupported)).toEqual([0, 1]);
    expect(attr(hip, H.hipDeviceAttributeComputeMode)).toEqual([0, H.hipComputeModeDefault]);
    // A part with no row: its hardware facts are refused, the rules answered.
    expect(attr(hip, H.hipDeviceAttributeMultiprocessorCount, 1)).toEqual([H.hipErrorInvalidValue, -1]);
    expect(attr(hip, H.hipDeviceAttributeVirtualMemoryManagementSupported, 1)).toEqual([0, 1]);
    for (const bad of [0, 84, 10_000, -1, 1.5, Number.NaN, '63', 63n, null])
      expect(attr(hip, bad), String(bad)).toEqual([H.hipErrorInvalidValue, -1]);
    expect(attr(hip, 63, 2)).toEqual([H.hipErrorInvalidDevice, -1]);
    expect(hip.hipDeviceGetAttribute(Object.freeze({ value: 0 }), 63, 0)).toBe(H.hipErrorInvalidValue);
    hip.dispose();
    expect(attr(hip, 63)).toEqual([H.hipErrorDeinitialized, -1]);
  });
});

describe('a device spec holds the facts the front ends answer', () => {
  it("a custom spec's published figures and driver attributes are HIP's and CUDA's answers", () => {
    const spec = {
      name: 'Custom',
      totalMemory: 1 << 30,
      minimumGranularity: 4096,
      recommendedGranularity: 4096,
    };
    const published = { ...spec, published: { multiProcessorCount: 8, major: 11, minor: 0 } };
    const recorded = {
      ...spec,
      driverAttributes: new Map([
        [CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16],
        [CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8],
        [CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 6],
      ]),
    };
    const hip = createHip({ devices: [published, recorded], report: () => {} });
    expect(read(hip, 0)).toEqual([
      0,
      { name: 'Custom', totalGlobalMem: 1 << 30, multiProcessorCount: 8, major: 11, minor: 0 },
    ]);
    expect(read(hip, 1)).toEqual([
      0,
      { name: 'Custom', totalGlobalMem: 1 << 30, multiProcessorCount: 16, major: 8, minor: 6 },
    ]);
    hip.dispose();
    const cu = createCuda({ devices: [published, recorded], report: () => {} });
    cu.cuInit(0);
    const box = { value: -1 };
    // CUDA answers a part's attributes only from a driver record: published figures are not CUDA's.
    expect(cu.cuDeviceGetAttribute(box, CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)).toBe(
      CU.CUDA_ERROR_INVALID_VALUE,
    );
    expect(cu.cuDeviceGetAttribute(box, CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1)).toBe(
      CU.CUDA_SUCCESS,
    );
    expect(box.value).toBe(16);
    // A record answers only what it holds: the front end's rules are for devices with none.
    expect(cu.cuDeviceGetAttribute(box, CU.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1)).toBe(
      CU.CUDA_ERROR_INVALID_VALUE,
    );
    cu.dispose();
  });
});
