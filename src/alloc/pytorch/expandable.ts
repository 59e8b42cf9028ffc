import type { AllocatorContext } from '../allocator.js';
import { PytorchCachingAllocator } from './caching-allocator.js';
import type { PytorchAllocatorSettings } from './settings.js';

/**
 * PyTorch's caching allocator with expandable_segments:True: one reserved
 * range per (pool, stream), about 1.125 times device memory, into which
 * pages (2 MiB small pool, 20 MiB large pool) are mapped as the pool
 * grows, one create + map per page and one setAccess per range; blocks
 * split at 512 bytes in both pools; free never unmaps; emptyCache() and the
 * OOM retry unmap the pages lying wholly inside free blocks. Rules E1-E8 of
 * docs/pytorch-allocators.md; the algorithm is in caching-allocator.ts, its
 * pages and blocks in expandable-blocks.ts.
 */
export class PytorchExpandableAllocator extends PytorchCachingAllocator {
  constructor(context: AllocatorContext, settings: PytorchAllocatorSettings) {
    super(context, settings, true, 'pytorch-expandable');
  }
}
