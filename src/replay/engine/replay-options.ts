/**
 * replay()'s options as people write them, made into the ReplayOptions the
 * engine runs with: the defaults filled in, sizes and devices read as the
 * command line reads them, and a wrong first argument named for what it is.
 *
 * Note [replay()'s arguments]
 * - allocators: factories or registry names; none given means ['pytorch'],
 *   PyTorch as the snapshot's settings (or allocConf) configure it, the
 *   answer most callers want (the CLI's default list is for comparing).
 * - memoryLimit: bytes, or text with a unit ('2900MiB'), or a fraction of
 *   the device (0.9, '90%'), as parseMemoryLimit reads them (Note [Memory
 *   limits] in src/util/memory-limit.ts); a fraction needs `device`.
 * - device: a preset, a spec, or a name as `--device` takes it ('H100',
 *   'a100_80gb', 'Ascend-910B').
 * - allocConf: what people paste (PYTORCH_CUDA_ALLOC_CONF=..., quotes).
 * - snapshot: a MemorySnapshot. A Promise (loadSnapshotFile without await)
 *   or a path is refused with what to write instead: replay is synchronous,
 *   and loading streams a file of up to gigabytes, so it is not done here.
 * Every refusal is a ReplayError (an unknown allocator name an
 * UnknownAllocatorError), thrown before anything runs.
 */
import { allocConfFromPaste } from '../../alloc/pytorch/alloc-conf.js';
import { parseByteSize } from '../../util/byte-size.js';
import {
  DEVICE_NAMES,
  DEVICE_SPECS,
  type DeviceChoice,
  type DeviceKey,
  deviceOfMemory,
  deviceSizes,
  findDevice,
} from '../../util/device-specs.js';
import { MemoryLimitError, UnknownDeviceError } from '../../util/errors.js';
import { parseMemoryLimit } from '../../util/memory-limit.js';
import { ReplayError } from '../errors.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import { type AllocatorFactory, selectAllocators } from './allocators.js';
import type { ReplayOptions } from './replay.js';

/** What replay() takes (Note [replay()'s arguments]): ReplayOptions, with what people write. */
export interface ReplayInput extends Omit<ReplayOptions, 'allocators' | 'memoryLimit' | 'device'> {
  /** Allocators, as factories or by name (default: ['pytorch']). */
  readonly allocators?: readonly (AllocatorFactory | string)[];
  /** Bytes, '2900MiB', '13.7GiB', or a fraction of `device` (0.9, '90%'). */
  readonly memoryLimit?: number | string;
  /** The simulated device: a preset, a spec, or a name ('H100', 'a100_80gb'); default H200. */
  readonly device?: DeviceChoice | string;
}

/** The options replay() runs with; throws ReplayError (Note [replay()'s arguments]). */
export function replayOptions(snapshot: unknown, input: ReplayInput | undefined = {}): ReplayOptions {
  checkSnapshot(snapshot);
  if (input === null || typeof input !== 'object')
    throw new ReplayError(`replay()'s options are an object, not ${describe(input)}`);
  const device = readDevice(input.device);
  const names = input.allocators ?? ['pytorch'];
  if (!Array.isArray(names)) throw new ReplayError(`allocators is a list, not ${describe(names)}`);
  const allocators = names.map((a) => (typeof a === 'string' ? selectAllocators([a])[0] : a));
  return {
    ...input,
    allocators,
    device,
    allocConf: input.allocConf === undefined ? undefined : allocConfFromPaste(input.allocConf),
    memoryLimit: readLimit(input.memoryLimit, device),
  };
}

/** Throws ReplayError unless `snapshot` is one: a Promise and a path are named for what they are. */
export function checkSnapshot(snapshot: unknown): asserts snapshot is MemorySnapshot {
  if (typeof (snapshot as { then?: unknown } | null | undefined)?.then === 'function')
    throw new ReplayError(
      'replay() was given a Promise, not a snapshot: did you forget await? (const snapshot = await loadSnapshotFile(path))',
    );
  if (typeof snapshot === 'string')
    throw new ReplayError(
      `replay() takes a loaded snapshot, not the path ${JSON.stringify(snapshot)}: load it first, replay(await loadSnapshotFile(${JSON.stringify(snapshot)}), options)`,
    );
  if (
    snapshot === null ||
    typeof snapshot !== 'object' ||
    !Array.isArray((snapshot as MemorySnapshot).traces)
  )
    throw new ReplayError(
      `replay() was given ${describe(snapshot)}, not a snapshot (loadSnapshotFile, readSnapshotFile or parseSnapshot makes one)`,
    );
}

function readDevice(device: ReplayInput['device']): DeviceChoice | undefined {
  if (device === undefined || typeof device === 'object') return device;
  if (typeof device !== 'string')
    throw new ReplayError(`device is a name or a spec, not ${describe(device)}`);
  if (Object.hasOwn(DEVICE_SPECS, device)) return device as DeviceKey;
  try {
    // Every key of the device table is a preset of the simulator.
    return findDevice(device).key as DeviceKey;
  } catch (e) {
    // Not a name: a size of at least 1 MiB is the device's memory ('80GiB').
    const bytes = sizeOf(device);
    if (e instanceof UnknownDeviceError && bytes !== undefined && bytes >= 2 ** 20)
      return deviceOfMemory(bytes);
    if (e instanceof UnknownDeviceError)
      throw new ReplayError(
        `device: ${e.message}; or give its memory ('80GiB') or a spec { name, totalMemory, ... }`,
        {
          cause: e,
        },
      );
    throw e;
  }
}

function readLimit(limit: number | string | undefined, device: DeviceChoice | undefined): number | undefined {
  if (limit === undefined) return undefined;
  try {
    return parseMemoryLimit(limit, device === undefined ? undefined : deviceSizes(device));
  } catch (e) {
    if (e instanceof MemoryLimitError && e.kind === 'fraction-needs-device')
      throw new ReplayError(
        `memoryLimit: ${e.message}: pass device (${DEVICE_NAMES.join(', ')}, or a spec), or give bytes`,
        {
          cause: e,
        },
      );
    if (e instanceof MemoryLimitError) throw new ReplayError(`memoryLimit: ${e.message}`, { cause: e });
    throw e;
  }
}

/** The bytes `text` names, or undefined when it is no size. */
function sizeOf(text: string): number | undefined {
  try {
    return parseByteSize(text);
  } catch {
    return undefined;
  }
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  return typeof x === 'object' ? 'an object' : typeof x === 'undefined' ? 'undefined' : `a ${typeof x}`;
}
