/**
 * The what-if options replay, advise and report share, read once: the
 * allocators, the configuration string as people paste it, the device and
 * the memory limit (bytes, or a fraction of that device). Every refusal is a
 * UsageError: one line that names the forms that work, exit 2.
 */
import { AllocConfError, allocConfFromPaste, parseAllocConf } from '../alloc/pytorch/alloc-conf.js';
import { parseNpuAllocConf } from '../alloc/pytorch/npu-alloc-conf.js';
import type { DeviceSpec } from '../compose/create-runtime.js';
import { FRONT_END_OF } from '../entry/front-end-process.js';
import {
  ALLOCATOR_REGISTRY,
  type AllocatorFactory,
  type AllocatorRegistry,
  DEFAULT_ALLOCATORS,
  selectAllocators,
  UnknownAllocatorError,
} from '../replay/engine/allocators.js';
import type { MemorySnapshot } from '../replay/read/snapshot.js';
import { parseVendor, type SnapshotVendor, vendorGuessOf } from '../replay/read/vendor.js';
import { ByteSizeError, parseByteSize } from '../util/byte-size.js';
import { DEVICE_NAMES, type DeviceMemorySpec, deviceOfMemory, findDevice } from '../util/device-specs.js';
import { MemoryLimitError, UnknownDeviceError } from '../util/errors.js';
import { formatBytes } from '../util/format.js';
import { parseMemoryLimit } from '../util/memory-limit.js';
import { CommandError, UsageError } from './errors.js';

/** The what-if options as given on the command line (absent: not given). */
export interface WhatIfArguments {
  readonly allocators?: readonly string[];
  readonly allocConf?: string;
  readonly memoryLimit?: string;
  readonly device?: string;
  readonly deviceMemory?: string;
  /** --vendor: cuda, rocm or npu (absent: guessed from the snapshot, Note [Snapshot vendor]). */
  readonly vendor?: string;
}

/** What they mean. */
export interface WhatIf {
  readonly allocators: AllocatorFactory[];
  /** The configuration string itself, without the name, quotes or `export ` it was pasted with. */
  readonly allocConf: string | undefined;
  readonly memoryLimit: number | undefined;
  /** The device to simulate (its memory is the physical cap where no limit applies); undefined: the default. */
  readonly device: (DeviceSpec & { readonly key: string }) | undefined;
  /** The vendor --vendor names; undefined: the snapshot's own guess. */
  readonly vendor: SnapshotVendor | undefined;
}

const DEVICE_FORMS = `--device ${DEVICE_NAMES.join('|')} or --device-memory SIZE (80GiB)`;

/** The what-if options as parseCommand gives them (replay's and report's descriptions name them alike). */
export function whatIfOf(
  values: {
    readonly allocator?: string[];
    readonly 'alloc-conf'?: string;
    readonly 'memory-limit'?: string;
    readonly device?: string;
    readonly 'device-memory'?: string;
    readonly vendor?: string;
  },
  registry?: AllocatorRegistry,
): WhatIf {
  return readWhatIf(
    {
      allocators: values.allocator,
      allocConf: values['alloc-conf'],
      memoryLimit: values['memory-limit'],
      device: values.device,
      deviceMemory: values['device-memory'],
      vendor: values.vendor,
    },
    registry,
  );
}

/**
 * Read the what-if options: the allocators named (or the defaults, with
 * `pytorch` first when a configuration string is given), the string checked
 * as PyTorch checks it, the device, and the limit with its units or as a
 * fraction of that device.
 */
export function readWhatIf(args: WhatIfArguments, registry: AllocatorRegistry = ALLOCATOR_REGISTRY): WhatIf {
  const allocConf = args.allocConf === undefined ? undefined : allocConfFromPaste(args.allocConf);
  const names = args.allocators ?? [];
  let allocators: AllocatorFactory[];
  try {
    allocators =
      names.length === 0 && allocConf !== undefined
        ? selectAllocators(['pytorch', ...DEFAULT_ALLOCATORS.map((a) => a.name)], registry)
        : selectAllocators(names, registry);
  } catch (e) {
    throw e instanceof UnknownAllocatorError ? new UsageError(e.message) : e;
  }
  if (allocators.length === 0) throw new CommandError('no allocators are registered');
  const vendor = readVendor(args.vendor);
  if (allocConf !== undefined) checkAllocConf(args.allocConf ?? '', allocConf, vendor);
  const device = readDevice(args.device, args.deviceMemory);
  let memoryLimit: number | undefined;
  if (args.memoryLimit !== undefined) {
    try {
      memoryLimit = parseMemoryLimit(args.memoryLimit, device);
    } catch (e) {
      if (e instanceof MemoryLimitError && e.kind === 'fraction-needs-device')
        throw new UsageError(
          `--memory-limit: ${e.message}: add ${DEVICE_FORMS}, or give bytes (14000MiB, 13.7GiB, 14.7GB)`,
        );
      if (e instanceof MemoryLimitError) throw new UsageError(`--memory-limit: ${e.message}`);
      throw e;
    }
  }
  return { allocators, allocConf, memoryLimit, device, vendor };
}

/**
 * The configuration string checked as its reader checks it: torch_npu's
 * (parseNpuAllocConf) for --vendor npu or a PYTORCH_NPU_ALLOC_CONF= paste,
 * PyTorch's for --vendor cuda or rocm; with neither said, the snapshot's
 * vendor is not known yet, so a string either reads is let through and the
 * replay reads it as its snapshot's vendor does.
 */
function checkAllocConf(pasted: string, allocConf: string, vendor: SnapshotVendor | undefined): void {
  const npu = vendor === 'npu' || (vendor === undefined && /PYTORCH_NPU_ALLOC_CONF/.test(pasted));
  try {
    if (npu) parseNpuAllocConf(allocConf);
    else parseAllocConf(allocConf);
  } catch (e) {
    if (!(e instanceof AllocConfError)) throw e;
    if (vendor === undefined && !npu && readsAsNpu(allocConf)) return;
    // A key only torch_npu knows, refused by both: torch_npu's words say why.
    if (!npu && /\b(base_addr_aligned_kb|page_size)\b/.test(allocConf))
      checkAllocConf(pasted, allocConf, 'npu');
    throw new UsageError(`--alloc-conf: ${e.message}`);
  }
}

function readsAsNpu(allocConf: string): boolean {
  try {
    parseNpuAllocConf(allocConf);
    return true;
  } catch {
    return false;
  }
}

/**
 * The device a snapshot is replayed on: the one --device named, else its
 * vendor's (an Ascend 910B for torch_npu, an MI300X for ROCm: the devices
 * their front ends run on, FRONT_END_OF); a CUDA snapshot keeps the
 * engine's default, the H200 the project's recordings were made on.
 */
export function deviceFor(device: WhatIf['device'], snapshot: MemorySnapshot): WhatIf['device'] {
  if (device !== undefined) return device;
  const vendor = vendorGuessOf(snapshot).vendor;
  return vendor === 'cuda' ? undefined : (findDevice(FRONT_END_OF[vendor].device) as WhatIf['device']);
}

/**
 * The device from --device (a name, or its memory: `--device 80GiB`) and
 * --device-memory (its memory overriding the named one's).
 */
function readDevice(
  name: string | undefined,
  memory: string | undefined,
): (DeviceMemorySpec & DeviceSpec) | undefined {
  let spec: DeviceMemorySpec | undefined;
  if (name !== undefined) {
    try {
      spec = findDevice(name);
    } catch (e) {
      if (!(e instanceof UnknownDeviceError)) throw e;
      // Not a name: a size of at least 1 MiB is the device's memory (`--device 80GiB`).
      const bytes = sizeOf(name);
      if (memory === undefined && bytes !== undefined && bytes >= 2 ** 20) return readDevice(undefined, name);
      throw new UsageError(`--device: ${e.message}; or give its memory with --device-memory SIZE`);
    }
  }
  if (memory === undefined) return spec;
  let bytes: number;
  try {
    bytes = parseByteSize(memory);
  } catch (e) {
    if (e instanceof ByteSizeError) throw new UsageError(`--device-memory: ${e.message}`);
    throw e;
  }
  // Below a page nothing can be mapped; a unitless small number is a missing unit (Note [Memory limits]).
  if (bytes < 2 ** 20)
    throw new UsageError(
      `--device-memory: ${memory} is less than 1 MiB; write it with a unit (80GiB, 81559MiB)`,
    );
  const device = deviceOfMemory(bytes, spec);
  // A memory the table's own device has is that device (deviceOfMemory); any other is named by its size.
  return device.key === 'custom' ? { ...device, name: `a device of ${formatBytes(bytes)}` } : device;
}

/** The bytes `text` names, or undefined when it is no size. */
function sizeOf(text: string): number | undefined {
  try {
    return parseByteSize(text);
  } catch {
    return undefined;
  }
}

/** --vendor as given (undefined: the snapshot's own guess); a name that is none of the three is a usage mistake. */
export function readVendor(value: string | undefined): SnapshotVendor | undefined {
  if (value === undefined) return undefined;
  const vendor = parseVendor(value);
  if (vendor === undefined) throw new UsageError(`--vendor: '${value}' is not cuda, rocm or npu`);
  return vendor;
}
