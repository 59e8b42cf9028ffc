/**
 * Device models for the simulated machine: the real parts' sizes and
 * granularities, read from the device table (src/util/device-specs.ts,
 * which the command line and replay read too), and what their drivers
 * answer about them. The
 * front ends answer a device's queries (cuDeviceGetAttribute,
 * hipGetDeviceProperties, hipDeviceGetAttribute) from the DeviceInfo the
 * runtime reports, which a simulated device builds from its spec.
 */
import type { DeviceInfo, PublishedFacts } from '../../core/types.js';
import { DEVICE_SPECS, type DeviceKey } from '../../util/device-specs.js';
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

/** A simulated part: the device table's sizes (src/util/device-specs.ts, written once there) and its facts here. */
function preset<F extends Pick<DeviceSpec, 'driverAttributes' | 'published'>>(
  key: DeviceKey,
  facts: F = {} as F,
): DeviceSpec & F {
  const { name, totalMemory, minimumGranularity, recommendedGranularity } = DEVICE_SPECS[key];
  return Object.freeze({ name, totalMemory, minimumGranularity, recommendedGranularity, ...facts });
}

/**
 * Every device of the device table, by its key; the sizes come from there
 * (Note [Device memory figures] says where each figure is from).
 */
export const DEVICE_PRESETS = Object.freeze({
  /** NVIDIA H200: every cuDeviceGetAttribute answer as the real part gave it. */
  H200: preset('H200', { driverAttributes: H200_ATTRIBUTES }),
  H100: preset('H100'),
  'A100-80GB': preset('A100-80GB'),
  'A100-40GB': preset('A100-40GB'),
  L40S: preset('L40S'),
  /**
   * AMD Instinct MI300X: the data sheet gives 304 compute units; its LLVM
   * target is gfx942, which HIP reports as major 9, minor 4 (not read from
   * a ROCm driver).
   */
  MI300X: preset('MI300X', { published: { multiProcessorCount: 304, major: 9, minor: 4 } }),
  MI250X: preset('MI250X'),
  Ascend910B: preset('Ascend910B'),
} satisfies Record<DeviceKey, DeviceSpec>);

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
