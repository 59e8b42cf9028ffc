import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every TypeScript file under `dir`, depth first (the tests that read the source: layers, error modules). */
export function* sourceFiles(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sourceFiles(p);
    else if (p.endsWith('.ts')) yield p;
  }
}

/**
 * Whether `root`'s dist/src holds a build at least as new as every source
 * file under src/ (as `npm ci`'s prepare leaves it): tests that need compiled
 * JavaScript use it then, and build their own (or skip) otherwise.
 */
export function builtIsCurrent(root: string): boolean {
  for (const source of sourceFiles(join(root, 'src'))) {
    const built = join(root, 'dist', source.slice(root.length).replace(/^\/?/, '').replace(/\.ts$/, '.js'));
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(source).mtimeMs) return false;
  }
  return true;
}
