import type { AllocatorContext } from '../allocator.js';
import { PytorchCachingAllocator } from './caching-allocator.js';
import type { PytorchAllocatorSettings } from './settings.js';

/**
 * PyTorch's native CUDACachingAllocator (expandable_segments:False): every
 * segment is one one-step allocation (runtime.malloc, PyTorch's cudaMalloc)
 * of get_allocation_size bytes, split into blocks and given back whole
 * (runtime.mfree) only by the OOM retry, emptyCache() and garbage
 * collection. Rules N1-N11 of docs/pytorch-allocators.md; the algorithm is in
 * caching-allocator.ts, its segments in native-segments.ts.
 */
export class PytorchNativeAllocator extends PytorchCachingAllocator {
  constructor(context: AllocatorContext, settings: PytorchAllocatorSettings) {
    super(context, settings, false, 'pytorch-native');
  }
}
