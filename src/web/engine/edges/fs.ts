/**
 * Note [Browser edges]: the engine is plain TypeScript, but a few of its
 * modules reach Node at their edges: advise's pool looks for its worker
 * file (node:fs, node:url) and starts worker threads (node:worker_threads),
 * advise asks for the core count (node:os), the pickle reader for Node's
 * buffer limits (node:buffer), the cost table reads its file (node:fs). The
 * page's bundle (src/web/vite.config.ts) resolves each of those imports to
 * a module in this folder instead, so the engine is the same code in both
 * places: no file exists (the pool runs its jobs in the thread it is in,
 * which in the page is the engine's Web Worker), there are no worker
 * threads, and a cost table comes as parsed JSON (parseCostTable), never a
 * path. Any other Node module reached from the page fails the build.
 */

/** No file exists in the page (advise's pool then runs in the thread it is in). */
export function existsSync(_path: unknown): boolean {
  return false;
}

/** No file can be read in the page: every caller gets data another way (Note [Browser edges]). */
export function readFileSync(path: unknown): never {
  throw new Error(`the page reads no files (${String(path)})`);
}
