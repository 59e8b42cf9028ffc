/** vmmkit's own caching allocator (Note [vmmkit allocator] in allocator.ts). */
export { VmmkitAllocator } from './allocator.js';
export type { MemoryLayout } from './layout.js';
export type { VmmkitOptions } from './options.js';
