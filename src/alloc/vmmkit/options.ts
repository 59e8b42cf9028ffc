import { vmmError } from '../../core/errors.js';
import type { DeviceInfo } from '../../core/types.js';
import { isCount } from '../../util/integers.js';
import { AllocatorArgumentError } from '../errors.js';

/** Options of vmmkit's allocator (Note [vmmkit allocator] in allocator.ts says what each point is). */
export interface VmmkitOptions {
  /** Held memory may grow to (1 + slack) x peak requested before memory is moved instead of created (0.01). */
  readonly slack?: number;
  /** Rounded requests up to this go to the small arena (1 MiB, PyTorch's kSmallSize). */
  readonly smallSize?: number;
  /** Rounded requests up to this (and above smallSize) go to a medium arena (default 1 MiB: none); larger ones to the large arena. */
  readonly mediumSize?: number;
  /** The largest chunk, in pages (512: 1 GiB at 2 MiB pages); a power of two. A longer run takes several. */
  readonly maxChunkPages?: number;
  /** Below the budget, a run at the end of a large arena is mapped ahead to this many pages (8). */
  readonly prefetchPages?: number;
  /** Mapping ahead is allowed while held stays within (1 + prefetchSlack) x peak requested (0.1). */
  readonly prefetchSlack?: number;
  /** Small and medium blocks first try free space on pages large blocks already pin (false; point 6 of the Note). */
  readonly fillSlivers?: boolean;
  /** A large block of whole pages starts on a page boundary when its free block allows (false; point 6). */
  readonly alignWholePages?: boolean;
  /** Budget floor in bytes: held memory below this is never moved (0). */
  readonly minBudget?: number;
  /**
   * Past (1 + hardSlack) x peak requested, any idle chunk is moved, however
   * recently idle (default: never).
   */
  readonly hardSlack?: number;
  /** Over the budget, only chunks idle for this many mallocs are moved or released (1000): younger ones are the working set. 0: memory first. */
  readonly minIdleAge?: number;
  /**
   * When a miss first takes free space on mapped pages, in its arena or (small blocks) its
   * stream's next one up (large, or medium where there is one) (point 5 of the Note): 'grow' (default) when it would otherwise create memory past
   * the budget, 'miss' on every miss, 'never'.
   */
  readonly mappedFirst?: 'grow' | 'miss' | 'never';
  /** Each arena's reservation (default: the device's memory, rounded up to a page). */
  readonly arenaSize?: number;
}

/** The options with their defaults, checked, and the factors derived from them. */
export interface VmmkitSettings {
  /** The arenas' page: the device's minimum granularity, at least the runtime's VA granularity. */
  readonly pageSize: number;
  /** Each arena's reservation, rounded up to a page. */
  readonly arenaSize: number;
  readonly slack: number;
  readonly smallSize: number;
  readonly mediumSize: number;
  readonly prefetchPages: number;
  readonly maxChunkPages: number;
  readonly minBudget: number;
  readonly minIdleAge: number;
  /** The hard budget over the soft one: (1 + hardSlack) / (1 + slack). */
  readonly hardFactor: number;
  /** The prefetch budget over the soft one. */
  readonly prefetchFactor: number;
  readonly fillSlivers: boolean;
  readonly mappedFirst: 'grow' | 'miss' | 'never';
  readonly alignWholePages: boolean;
  /** Point 9: the most bytes held; Infinity without a limit. */
  readonly limit: number;
}

/** Fill in and check `options` for a device (info) whose runtime's VA granularity is `vaGranularity`. */
export function resolveOptions(
  options: VmmkitOptions,
  info: DeviceInfo,
  vaGranularity: number,
  memoryLimit: number | undefined,
): VmmkitSettings {
  const pageSize = Math.max(info.minimumGranularity, vaGranularity);
  const {
    slack = 0.01,
    smallSize = 1024 * 1024,
    mediumSize = 1024 * 1024,
    maxChunkPages = 512,
    prefetchPages = 8,
    minBudget = 0,
  } = options;
  if (!(slack >= 0) || !Number.isFinite(slack))
    throw new AllocatorArgumentError(`slack ${slack} is not >= 0`);
  if (!isCount(smallSize)) throw vmmError('invalid-value', `smallSize ${smallSize}`);
  if (!isCount(mediumSize) || mediumSize < smallSize)
    throw vmmError('invalid-value', `mediumSize ${mediumSize} is below smallSize ${smallSize}`);
  if (
    !isCount(maxChunkPages) ||
    maxChunkPages === 0 ||
    2 ** Math.round(Math.log2(maxChunkPages)) !== maxChunkPages
  )
    throw vmmError('invalid-value', `maxChunkPages ${maxChunkPages} is not a power of two`);
  if (!isCount(prefetchPages)) throw vmmError('invalid-value', `prefetchPages ${prefetchPages}`);
  if (!isCount(minBudget)) throw vmmError('invalid-value', `minBudget ${minBudget}`);
  const arenaSize = options.arenaSize ?? info.totalMemory;
  if (!isCount(arenaSize) || arenaSize === 0) throw vmmError('invalid-value', `arenaSize ${arenaSize}`);
  const hardSlack = options.hardSlack ?? Number.POSITIVE_INFINITY;
  if (!(hardSlack >= slack))
    throw new AllocatorArgumentError(`hardSlack ${hardSlack} is below slack ${slack}`);
  const prefetchSlack = options.prefetchSlack ?? 0.1;
  if (!(prefetchSlack >= 0)) throw new AllocatorArgumentError(`prefetchSlack ${prefetchSlack} is not >= 0`);
  if (memoryLimit !== undefined && !isCount(memoryLimit))
    throw vmmError('invalid-value', `memoryLimit ${memoryLimit}`);
  return {
    pageSize,
    arenaSize: Math.ceil(arenaSize / pageSize) * pageSize,
    slack,
    smallSize,
    mediumSize,
    prefetchPages,
    maxChunkPages,
    minBudget,
    minIdleAge: options.minIdleAge ?? 1000,
    hardFactor: (1 + hardSlack) / (1 + slack),
    prefetchFactor: (1 + prefetchSlack) / (1 + slack),
    fillSlivers: options.fillSlivers ?? false,
    mappedFirst: options.mappedFirst ?? 'grow',
    alignWholePages: options.alignWholePages ?? false,
    limit: memoryLimit ?? Number.POSITIVE_INFINITY,
  };
}
