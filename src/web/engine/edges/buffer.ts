/**
 * node:buffer in the page (Note [Browser edges], fs.ts): the limits the
 * pickle reader checks lengths against. V8's, as Chromium builds it: a
 * string of at most 2^29 - 24 UTF-16 units, a typed array of at most
 * 2^32 bytes (V8's kMaxLength on 64-bit builds, as Node 20 reports it too).
 */
export const constants = {
  MAX_STRING_LENGTH: 2 ** 29 - 24,
  MAX_LENGTH: 2 ** 32,
} as const;
