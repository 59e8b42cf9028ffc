/** Device models for the simulated machine, with the real parts' sizes and granularities. */

export interface DeviceSpec {
  readonly name: string;
  /** Bytes of device memory, as the vendor's driver reports the total. */
  readonly totalMemory: number;
  readonly minimumGranularity: number;
  readonly recommendedGranularity: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

export const DEVICE_PRESETS = {
  /** NVIDIA H200: cuDeviceTotalMem on driver 580 reports 150,109,880,320 bytes; 2 MiB granularity. */
  H200: {
    name: 'NVIDIA H200',
    totalMemory: 150_109_880_320,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
  },
  /** AMD Instinct MI300X: 192 GiB HBM3; ROCm reports 4 KiB minimum and 2 MiB recommended granularity. */
  MI300X: {
    name: 'AMD Instinct MI300X',
    totalMemory: 192 * GiB,
    minimumGranularity: 4 * KiB,
    recommendedGranularity: 2 * MiB,
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
