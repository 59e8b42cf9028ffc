import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A path inside the vmmkit package, found by walking up from this file (src/util/ or dist/src/util/). */
export function packagePath(relative: string): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'vmmkit')
          return join(dir, relative);
      } catch {
        // not ours; keep walking
      }
    }
    dir = dirname(dir);
  }
  return undefined;
}
