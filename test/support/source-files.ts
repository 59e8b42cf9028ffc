import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every TypeScript file under `dir`, depth first (the tests that read the source: layers, error modules). */
export function* sourceFiles(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sourceFiles(p);
    else if (p.endsWith('.ts')) yield p;
  }
}
