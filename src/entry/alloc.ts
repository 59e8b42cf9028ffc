/** `vmmkit/alloc`: the allocators built on core (GrowableBuffer, PyTorch's two caching allocators, vmmkit's own). */
export {
  type AllocatorContext,
  AllocatorOutOfMemoryError,
  type AllocatorStats,
  type CachingAllocator,
  type SegmentEvent,
} from '../alloc/allocator.js';
export {
  AllocatorArgumentError,
  AllocatorInternalError,
  AllocatorStateError,
  AllocConfError,
  GrowPastMaximumError,
} from '../alloc/errors.js';
export { type ChunkPolicy, GrowableBuffer, type GrowableBufferOptions } from '../alloc/growable-buffer.js';
export {
  AllocatorSettingsError,
  type BlockSnapshot,
  DEFAULT_PYTORCH_SETTINGS,
  type PytorchAllocatorSettings,
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
  type SegmentSnapshot,
  settingsFromSnapshot,
  validateSettings,
} from '../alloc/pytorch/index.js';
export { VmmkitAllocator, type VmmkitOptions } from '../alloc/vmmkit/index.js';
