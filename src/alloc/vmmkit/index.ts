/** vmmkit's own caching allocator (Note [vmmkit allocator] in allocator.ts). */
export { VmmkitAllocator, type VmmkitOptions } from './allocator.js';
