/** Models of PyTorch's two CUDA caching allocators on vmmkit's core. */
export { type AllocConf, AllocConfError, parseAllocConf } from './alloc-conf.js';
export { PytorchCachingAllocator } from './caching-allocator.js';
export { PytorchExpandableAllocator } from './expandable.js';
export { PytorchNativeAllocator } from './native.js';
export {
  AllocatorSettingsError,
  DEFAULT_PYTORCH_SETTINGS,
  type PytorchAllocatorSettings,
  settingsFromSnapshot,
  validateSettings,
} from './settings.js';
export type { BlockSnapshot, SegmentSnapshot } from './snapshot.js';
export { PytorchStats } from './stats.js';
