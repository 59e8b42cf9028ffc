import { createRequire } from 'node:module';

export type Koffi = typeof import('koffi');

/**
 * koffi, loaded on first use. Note [Lazy FFI]: a static import would map the
 * native addon into every process that imports vmmkit, simulator users
 * included; requiring it here means only code that reaches the real driver
 * pays for it. Node's module cache makes later calls a map lookup.
 */
export function koffi(): Koffi {
  return createRequire(import.meta.url)('koffi') as Koffi;
}
