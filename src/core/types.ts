/**
 * Vendor-neutral value types. They are the Backend contract's own
 * (src/backend/types.ts), defined beneath core so the backend imports
 * nothing from core; core and the layers above read them here.
 */
export * from '../backend/types.js';
