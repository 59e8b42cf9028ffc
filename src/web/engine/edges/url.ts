/** node:url in the page (Note [Browser edges], fs.ts): no URL is a file of its own. */
export function fileURLToPath(url: unknown): never {
  throw new Error(`the page has no file paths (${String(url)})`);
}
