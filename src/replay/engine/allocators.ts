/**
 * The allocators `vmmkit replay` knows, by name. Each entry makes one
 * allocator for one device from the context replay gives it and the PyTorch
 * settings of the replay (the trace's recorded allocator_settings, or those
 * a PYTORCH_CUDA_ALLOC_CONF string given to replay sets).
 */
import type { AllocatorContext, CachingAllocator } from '../../alloc/allocator.js';
import {
  type PytorchAllocatorSettings,
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
} from '../../alloc/pytorch/index.js';
import { VmmkitAllocator } from '../../alloc/vmmkit/index.js';
import { UnknownAllocatorError } from '../errors.js';

export interface AllocatorFactory {
  readonly name: string;
  /** One line for help text. */
  readonly description: string;
  /** Replayed when no allocator is named (default true). */
  readonly byDefault?: boolean;
  create(context: AllocatorContext, settings: PytorchAllocatorSettings): CachingAllocator;
}

export type AllocatorRegistry = readonly AllocatorFactory[];

/** Every allocator replay knows. */
export const ALLOCATOR_REGISTRY: AllocatorRegistry = [
  {
    name: 'pytorch',
    description: "PyTorch's allocator exactly as the settings configure it (expandable segments or not)",
    byDefault: false,
    create: (context, settings) =>
      settings.expandableSegments
        ? new PytorchExpandableAllocator(context, settings)
        : new PytorchNativeAllocator(context, settings),
  },
  {
    name: 'pytorch-native',
    description: "PyTorch's native CUDA caching allocator (cudaMalloc'd segments, best fit, splitting)",
    create: (context, settings) => new PytorchNativeAllocator(context, settings),
  },
  {
    name: 'pytorch-expandable',
    description: "PyTorch's expandable segments (one growing VA range per stream and pool)",
    create: (context, settings) => new PytorchExpandableAllocator(context, settings),
  },
  {
    name: 'vmmkit',
    description: "vmmkit's own allocator (arenas of 2^k-page chunks per stream and size class)",
    create: (context) => new VmmkitAllocator(context),
  },
];

/** Those replayed when none is named: the two PyTorch models (each in its own mode) and vmmkit's. */
export const DEFAULT_ALLOCATORS: AllocatorRegistry = ALLOCATOR_REGISTRY.filter((a) => a.byDefault !== false);

// UnknownAllocatorError lives in errors.ts; re-exported here, where it was.
export { UnknownAllocatorError } from '../errors.js';

/**
 * The entries named, in the order named (when none is, every entry replayed
 * by default); an unknown name is an error listing the known ones.
 */
export function selectAllocators(
  names: readonly string[],
  registry: AllocatorRegistry = ALLOCATOR_REGISTRY,
): AllocatorFactory[] {
  if (names.length === 0) return registry.filter((r) => r.byDefault !== false);
  return names.map((n) => {
    const f = registry.find((r) => r.name === n);
    if (f === undefined) {
      throw new UnknownAllocatorError(
        `unknown allocator '${n}' (known: ${registry.map((r) => r.name).join(', ') || 'none'})`,
      );
    }
    return f;
  });
}
