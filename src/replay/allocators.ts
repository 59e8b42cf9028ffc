/**
 * The allocators `vmmkit replay` knows, by name. Each entry makes one
 * allocator for one device from the context replay gives it and the trace's
 * recorded allocator_settings.
 */
import type { AllocatorContext, CachingAllocator } from '../alloc/allocator.js';
import {
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
  settingsFromSnapshot,
} from '../alloc/pytorch/index.js';
import { VmmkitAllocator } from '../alloc/vmmkit/index.js';
import type { PickleDict } from './pickle/value.js';

export interface AllocatorFactory {
  readonly name: string;
  /** One line for help text. */
  readonly description: string;
  create(context: AllocatorContext, allocatorSettings: PickleDict | undefined): CachingAllocator;
}

export type AllocatorRegistry = readonly AllocatorFactory[];

export const DEFAULT_ALLOCATORS: AllocatorRegistry = [
  {
    name: 'pytorch-native',
    description: "PyTorch's native CUDA caching allocator (cudaMalloc'd segments, best fit, splitting)",
    create: (context, settings) => new PytorchNativeAllocator(context, settingsFromSnapshot(settings)),
  },
  {
    name: 'pytorch-expandable',
    description: "PyTorch's expandable segments (one growing VA range per stream and pool)",
    create: (context, settings) => new PytorchExpandableAllocator(context, settingsFromSnapshot(settings)),
  },
  {
    name: 'vmmkit',
    description: "vmmkit's own allocator (arenas of 2^k-page chunks per stream and size class)",
    create: (context) => new VmmkitAllocator(context),
  },
];

export class UnknownAllocatorError extends Error {
  override readonly name = 'UnknownAllocatorError';
}

/** The entries named, in the order named (all of them when none is); an unknown name is an error listing the known ones. */
export function selectAllocators(names: readonly string[], registry: AllocatorRegistry): AllocatorFactory[] {
  if (names.length === 0) return [...registry];
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
