/**
 * replay()'s options as people write them (`vmmkit/replay`), made into the
 * ReplayOptions the engine runs with: the defaults filled in, sizes and
 * devices read as the command line reads them, the plan made and the way to
 * start a process chosen (the engine makes neither), and a wrong first
 * argument named for what it is.
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
 * - plan: made here when not given, once, as the command line makes it
 *   (planReplay under memoryLimit and the device's memory: Note [Inferred
 *   empty_cache]; inferEmptyCache: false leaves the inferred calls out).
 * - startProcess: each run's process; when not given, a simulated machine
 *   of `device` (default H200), or the real GPUs with backend 'cuda' (and
 *   `cuda`, the driver or libcuda paths), replay-processes.ts.
 * - snapshot: a MemorySnapshot. A Promise (loadSnapshotFile without await)
 *   or a path is refused with what to write instead: replay is synchronous,
 *   and loading streams a file of up to gigabytes, so it is not done here.
 * Every refusal is a ReplayError (an unknown allocator name an
 * UnknownAllocatorError), thrown before anything runs.
 */
import { allocConfFromPaste } from '../alloc/pytorch/alloc-conf.js';
import type { ProcessOptions } from '../compose/create-runtime.js';
import { type AllocatorFactory, selectAllocators } from '../replay/engine/allocators.js';
import type { StartProcess } from '../replay/engine/process-start.js';
import type { ReplayOptions } from '../replay/engine/replay.js';
import { planReplay, type TracePlan } from '../replay/engine/trace-plan.js';
import { ReplayError } from '../replay/errors.js';
import type { MemorySnapshot } from '../replay/read/snapshot.js';
import { parseByteSize } from '../util/byte-size.js';
import {
  DEVICE_NAMES,
  DEVICE_SPECS,
  type DeviceChoice,
  type DeviceKey,
  deviceOfMemory,
  deviceSizes,
  findDevice,
} from '../util/device-specs.js';
import { MemoryLimitError, UnknownDeviceError } from '../util/errors.js';
import { parseMemoryLimit } from '../util/memory-limit.js';
import { DEFAULT_REPLAY_DEVICE, startProcessOf } from './replay-processes.js';

/** What replay() takes (Note [replay()'s arguments]): ReplayOptions, with what people write. */
export interface ReplayInput
  extends Omit<ReplayOptions, 'allocators' | 'memoryLimit' | 'plan' | 'startProcess'> {
  /** Allocators, as factories or by name (default: ['pytorch']). */
  readonly allocators?: readonly (AllocatorFactory | string)[];
  /** Bytes, '2900MiB', '13.7GiB', or a fraction of `device` (0.9, '90%'). */
  readonly memoryLimit?: number | string;
  /** The simulated device: a preset, a spec, or a name ('H100', 'a100_80gb'); default H200. */
  readonly device?: DeviceChoice | string;
  /** A plan already made for this snapshot (planReplay), to skip making it again. */
  readonly plan?: TracePlan;
  /** When making the plan here: infer empty_cache() calls (default true; Note [Inferred empty_cache]). */
  readonly inferEmptyCache?: boolean;
  /** Starts each run's process (default: a simulated machine of `device`, or the real GPUs with backend 'cuda'). */
  readonly startProcess?: StartProcess;
  /** With backend 'cuda': the driver to use or the libcuda paths to try (a stand-in driver rehearses a GPU run). */
  readonly cuda?: ProcessOptions['cuda'];
}

/**
 * The options replay() runs with, and the device read (the one the plan and
 * the simulated processes are made for); throws ReplayError (Note [replay()'s arguments]).
 */
export function replayOptions(
  snapshot: unknown,
  input: ReplayInput | undefined = {},
): ReplayOptions & { readonly device: DeviceChoice | undefined } {
  checkSnapshot(snapshot);
  if (input === null || typeof input !== 'object')
    throw new ReplayError(`replay()'s options are an object, not ${describe(input)}`);
  const device = readDevice(input.device);
  const names = input.allocators ?? ['pytorch'];
  if (!Array.isArray(names)) throw new ReplayError(`allocators is a list, not ${describe(names)}`);
  const allocators = names.map((a) => (typeof a === 'string' ? selectAllocators([a])[0] : a));
  const memoryLimit = readLimit(input.memoryLimit, device);
  const { device: _device, cuda, inferEmptyCache, ...rest } = input;
  return {
    ...rest,
    allocators,
    device,
    allocConf: input.allocConf === undefined ? undefined : allocConfFromPaste(input.allocConf),
    memoryLimit,
    plan: input.plan ?? planOf(snapshot, { memoryLimit, device, inferEmptyCache }),
    startProcess: input.startProcess ?? startProcessOf({ backend: input.backend, cuda, device }),
  };
}

/**
 * The plan the package's entry makes where none is given, as the command
 * line makes it: under the limit and the device's memory (Note [Inferred
 * empty_cache] tells empty_cache from an OOM retry by how full the recorded
 * allocator was: under a limit, full means the limit).
 */
export function planOf(
  snapshot: MemorySnapshot,
  options: { memoryLimit?: number; device?: DeviceChoice; inferEmptyCache?: boolean },
): TracePlan {
  return planReplay(snapshot, {
    inferEmptyCache: options.inferEmptyCache,
    memoryLimit: options.memoryLimit,
    deviceMemory: deviceSizes(options.device ?? DEFAULT_REPLAY_DEVICE).totalMemory,
  });
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
