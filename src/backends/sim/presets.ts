/**
 * Device models for the simulated machine: the real parts' sizes and
 * granularities, and what their drivers answer about them, in one place. The
 * front ends answer a device's queries (cuDeviceGetAttribute,
 * hipGetDeviceProperties, hipDeviceGetAttribute) from the DeviceInfo the
 * runtime reports, which a simulated device builds from its spec.
 */
import type { DeviceInfo, PublishedFacts } from '../../core/types.js';
import { H200_ATTRIBUTES } from './h200-attributes.js';

export interface DeviceSpec {
  readonly name: string;
  /** Bytes of device memory, as the vendor's driver reports the total. */
  readonly totalMemory: number;
  readonly minimumGranularity: number;
  readonly recommendedGranularity: number;
  /**
   * Every cuDeviceGetAttribute answer of the real part, by CUdevice_attribute
   * number, where it was read from one (the H200's: h200-attributes.ts). The
   * device reports them as a real backend reports its driver's
   * (DeviceInfo.driverAttributes); without them the CUDA front end answers
   * only its own rules (Note [Device attributes] in src/flavors/cuda/attributes.ts).
   */
  readonly driverAttributes?: ReadonlyMap<number, number>;
  /**
   * The part's compute units and compute capability (AMD: its LLVM target's
   * major and minor) where its vendor publishes them and no driver record
   * gives them: what hipGetDeviceProperties writes (Note [HIP device
   * properties] in src/flavors/hip/properties.ts).
   */
  readonly published?: PublishedFacts;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

export const DEVICE_PRESETS = {
  /**
   * NVIDIA H200: cuDeviceTotalMem on driver 580 reports 150,109,880,320
   * bytes; 2 MiB granularity; every attribute as the real part answered.
   */
  H200: {
    name: 'NVIDIA H200',
    totalMemory: 150_109_880_320,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
    driverAttributes: H200_ATTRIBUTES,
  },
  /**
   * AMD Instinct MI300X: 192 GiB HBM3; ROCm reports 4 KiB minimum and 2 MiB
   * recommended granularity. The MI300X data sheet gives 304 compute units;
   * its LLVM target is gfx942, which HIP reports as major 9, minor 4 (not
   * read from a ROCm driver).
   */
  MI300X: {
    name: 'AMD Instinct MI300X',
    totalMemory: 192 * GiB,
    minimumGranularity: 4 * KiB,
    recommendedGranularity: 2 * MiB,
    published: { multiProcessorCount: 304, major: 9, minor: 4 },
  },
  /** Huawei Ascend 910B: 64 GiB HBM; ACL's granularity is 2 MiB. */
  Ascend910B: {
    name: 'Ascend910B',
    totalMemory: 64 * GiB,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
  },
} as const satisfies Record<string, DeviceSpec>;

export type DevicePreset = keyof typeof DEVICE_PRESETS;

export function resolveDeviceSpec(d: DevicePreset | DeviceSpec): DeviceSpec {
  if (typeof d !== 'string') return d;
  const spec = DEVICE_PRESETS[d];
  if (spec === undefined) {
    throw new TypeError(`unknown device preset '${d}' (known: ${Object.keys(DEVICE_PRESETS).join(', ')})`);
  }
  return spec;
}

/** What a simulated device reports as device `ordinal`: its spec's sizes and, where the spec has them, its facts. */
export function deviceInfo(spec: DeviceSpec, ordinal: number): DeviceInfo {
  const { name, totalMemory, minimumGranularity, recommendedGranularity, driverAttributes, published } = spec;
  return {
    ordinal,
    name,
    totalMemory,
    minimumGranularity,
    recommendedGranularity,
    ...(driverAttributes === undefined ? {} : { driverAttributes }),
    ...(published === undefined ? {} : { published }),
  };
}
