/** node:os in the page (Note [Browser edges], fs.ts): the cores the browser reports. */
export function availableParallelism(): number {
  return typeof navigator === 'undefined' ? 1 : (navigator.hardwareConcurrency ?? 1);
}
