/**
 * The devices people have, written once: each part's memory as its driver
 * reports the total (cuDeviceTotalMem / totalGlobalMem, hipDeviceTotalMem,
 * aclrtGetMemInfo) and its VMM granularity. The simulator's presets
 * (src/backends/sim/presets.ts) are built from this table, and the command
 * line and replay read it for `--device` and for fractions of a device
 * (memory-limit.ts), so a figure changes in one place.
 *
 * Note [Device memory figures]
 * The figure is what the driver reports, not the marketing size: PyTorch's
 * set_per_process_memory_fraction(f) allows static_cast<size_t>(f *
 * totalGlobalMem) bytes, and an OOM message's "total capacity" is that
 * total. Where we read it from a real part it says "measured"; elsewhere
 * `memorySource` names the public record the figure comes from, and how sure
 * it is. Drivers reserve a little more or less between versions, so a figure
 * from another driver may be off by some MiB.
 */
import { UnknownDeviceError } from './errors.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** One device model's memory and VMM granularity. */
export interface DeviceMemorySpec {
  /** The name the table and the command line use (`H200`, `A100-80GB`, `Ascend910B`). */
  readonly key: string;
  /** The name the vendor's driver gives the part. */
  readonly name: string;
  readonly vendor: 'NVIDIA' | 'AMD' | 'Huawei';
  /** Bytes of device memory, as the vendor's driver reports the total (Note [Device memory figures]). */
  readonly totalMemory: number;
  /** Bytes: the VMM calls' minimum and recommended granularity. */
  readonly minimumGranularity: number;
  readonly recommendedGranularity: number;
  /** Other names people write for it (matched as findDevice normalises them). */
  readonly aliases: readonly string[];
  /** Where totalMemory comes from. */
  readonly memorySource: string;
}

function spec(s: DeviceMemorySpec): DeviceMemorySpec {
  return Object.freeze({ ...s, aliases: Object.freeze([...s.aliases]) });
}

export const DEVICE_SPECS = Object.freeze({
  H100: spec({
    key: 'H100',
    name: 'NVIDIA H100 80GB HBM3',
    vendor: 'NVIDIA',
    totalMemory: 85_017_493_504,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
    aliases: ['H100-80GB', 'H100 SXM', 'H100-SXM5', 'NVIDIA H100 80GB HBM3'],
    memorySource:
      'measured: cuDeviceTotalMem on an H100 80GB HBM3 (SXM), driver 580.159.04, and PyTorch 2.11 total_memory agree; granularity measured 2 MiB',
  }),
  H200: spec({
    key: 'H200',
    name: 'NVIDIA H200',
    vendor: 'NVIDIA',
    totalMemory: 150_109_880_320,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
    aliases: ['H200 SXM', 'H200-141GB', 'NVIDIA H200'],
    memorySource: 'measured: cuDeviceTotalMem on an H200, driver 580; granularity measured 2 MiB',
  }),
  'A100-80GB': spec({
    key: 'A100-80GB',
    name: 'NVIDIA A100-SXM4-80GB',
    vendor: 'NVIDIA',
    totalMemory: 81_049 * MiB,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
    aliases: [
      'A100 80GB',
      'A100-SXM4-80GB',
      'A100 80GB PCIe',
      'NVIDIA A100-SXM4-80GB',
      'NVIDIA A100 80GB PCIe',
    ],
    memorySource:
      'not measured: 81,049 MiB of totalGlobalMem as mixbench printed it on an A100 80GB PCIe, CUDA 12.3 (github.com/ekondis/mixbench issue 47); nvidia-smi shows 81,920 MiB. Granularity: 2 MiB, as on every NVIDIA part we measured',
  }),
  'A100-40GB': spec({
    key: 'A100-40GB',
    name: 'NVIDIA A100-SXM4-40GB',
    vendor: 'NVIDIA',
    totalMemory: 42_298_834_944,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
    aliases: ['A100 40GB', 'A100-SXM4-40GB', 'NVIDIA A100-SXM4-40GB'],
    memorySource:
      "not measured: deviceQuery's total global memory on an A100-SXM4-40GB, driver 12.2 (github.com/bottlerocket-os/bottlerocket pull 3873). Granularity: 2 MiB, as on every NVIDIA part we measured",
  }),
  L40S: spec({
    key: 'L40S',
    name: 'NVIDIA L40S',
    vendor: 'NVIDIA',
    totalMemory: 45_486 * MiB,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
    aliases: ['NVIDIA L40S'],
    memorySource:
      'not documented exactly: PyTorch OOM messages on the L40S give "a total capacity of 44.42 GiB" (github.com/stepfun-ai/Step-Video-T2V issue 8), so totalGlobalMem is 45,486 MiB to within 5 MiB; nvidia-smi shows 46,068 MiB. Granularity: 2 MiB, as on every NVIDIA part we measured',
  }),
  MI300X: spec({
    key: 'MI300X',
    name: 'AMD Instinct MI300X',
    vendor: 'AMD',
    totalMemory: 192 * GiB,
    minimumGranularity: 4 * KiB,
    recommendedGranularity: 2 * MiB,
    aliases: ['AMD Instinct MI300X', 'MI300X OAM'],
    memorySource:
      "not measured: the data sheet's 192 GiB HBM3, which the simulator has always modelled; rocm-smi reports 206,141,652,992 bytes of VRAM (16 MiB less; github.com/ROCm/legacy-rocm-build issue 4750). Granularity: ROCm's 4 KiB minimum, 2 MiB recommended",
  }),
  MI250X: spec({
    key: 'MI250X',
    name: 'AMD Instinct MI250X',
    vendor: 'AMD',
    totalMemory: 68_702_699_520,
    minimumGranularity: 4 * KiB,
    recommendedGranularity: 2 * MiB,
    aliases: ['AMD Instinct MI250X', 'AMD Instinct MI250X/MI250'],
    memorySource:
      "not measured: one graphics compute die (each MI250X shows as two devices of 64 GiB HBM2e); rocminfo's global pool of 67,092,480 KB with a 4 KB allocation granule (github.com/ROCm/rocm_smi_lib issue 160). Recommended granularity: 2 MiB, as HIP gives on AMD parts",
  }),
  Ascend910B: spec({
    key: 'Ascend910B',
    name: 'Ascend910B',
    vendor: 'Huawei',
    totalMemory: 62_423 * MiB,
    minimumGranularity: 2 * MiB,
    recommendedGranularity: 2 * MiB,
    aliases: ['Ascend-910B', 'Ascend 910B', '910B'],
    memorySource:
      'not documented exactly: Huawei publishes 64 GB of HBM and no aclrtGetMemInfo total; torch_npu\'s OOM messages on 910B parts, whose "total capacity" is that total, give "60.96 GiB total capacity" (on a 910B2 of 64 GB: github.com/vllm-project/vllm-ascend issue 1127; also issue 1670 and github.com/xingchensong/TouchNet issue 100; 60.97 GiB on other drivers, github.com/zai-org/CogVideo issue 63), so the total is 62,423 MiB to within 5 MiB. Granularity: ACL\'s 2 MiB',
  }),
});

export type DeviceKey = keyof typeof DEVICE_SPECS;

/**
 * A device as replay and the simulator take one: a key of the table, or its
 * sizes (a spec of the simulator's, or a device of given memory). Written
 * here, beneath both, so the snapshot wing names devices without the
 * simulator's types.
 */
export type DeviceChoice = DeviceKey | DeviceSizes;

/** A device's sizes: what every device spec has. */
export interface DeviceSizes {
  readonly name: string;
  readonly totalMemory: number;
  readonly minimumGranularity: number;
  readonly recommendedGranularity: number;
}

/** The sizes of `device`: the table's for a key. */
export function deviceSizes(device: DeviceChoice): DeviceSizes {
  return typeof device === 'string' ? DEVICE_SPECS[device] : device;
}

/** What a name becomes before matching: lower case, letters and digits alone ("A100_80gb" -> "a10080gb"). */
function normalise(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** Every name of every device, normalised, and vendor prefixes dropped too ("nvidia h200" -> "h200"). */
const BY_NAME: ReadonlyMap<string, DeviceMemorySpec> = new Map(
  Object.values(DEVICE_SPECS).flatMap((s) =>
    [s.key, s.name, ...s.aliases].flatMap((n) => {
      const k = normalise(n);
      return [k, k.replace(/^(nvidia|amdinstinct|amd|huawei)/, '')].map((x) => [x, s] as const);
    }),
  ),
);

/** The keys in the order people are told them. */
export const DEVICE_NAMES: readonly string[] = Object.freeze(
  Object.values(DEVICE_SPECS).map((s) => (s.key === 'Ascend910B' ? 'Ascend-910B' : s.key)),
);

/**
 * The device `name` names: any of its names, in any case, with or without
 * spaces, hyphens and underscores ('h100', 'a100_80gb', 'Ascend910B',
 * 'NVIDIA H200'). Throws UnknownDeviceError, naming the known devices (and
 * both A100s for a bare 'A100').
 */
export function findDevice(name: string): DeviceMemorySpec {
  if (typeof name !== 'string')
    throw new UnknownDeviceError(`a device is named by a string, not ${typeof name}`);
  const k = normalise(name);
  const found = BY_NAME.get(k) ?? BY_NAME.get(k.replace(/^(nvidia|amdinstinct|amd|huawei)/, ''));
  if (found !== undefined) return found;
  const like = DEVICE_NAMES.filter((n) => normalise(n).startsWith(k) && k.length > 0);
  const hint =
    like.length > 1 ? `: which one, ${like.join(' or ')}?` : ` (known: ${DEVICE_NAMES.join(', ')})`;
  throw new UnknownDeviceError(`unknown device ${JSON.stringify(name)}${hint}`);
}

/**
 * A device by its memory (`--device 192GiB`, `--device-memory 80GiB`): with `like` (a device named
 * beside it), that device with this much memory; else the table's one device of exactly this many
 * bytes, where there is one (192GiB is the MI300X, 64GiB the Ascend 910B: their granularities
 * come with them); else a device the table does not name, with the NVIDIA parts' 2 MiB (the
 * H200's, the default device's).
 */
export function deviceOfMemory(totalMemory: number, like?: DeviceMemorySpec): DeviceMemorySpec {
  if (like === undefined) {
    const same = Object.values(DEVICE_SPECS).filter((s) => s.totalMemory === totalMemory);
    if (same.length === 1) return same[0];
  }
  const base = like ?? DEVICE_SPECS.H200;
  return spec({
    ...base,
    key: like === undefined ? 'custom' : like.key,
    name: like === undefined ? `a device of ${totalMemory} bytes` : like.name,
    totalMemory,
    aliases: [],
    memorySource: 'given',
  });
}
