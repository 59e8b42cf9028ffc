/** vmmkit's own caching allocator (Note [vmmkit allocator] in allocator.ts). */
export { type MemoryLayout, VmmkitAllocator, type VmmkitOptions } from './allocator.js';
