import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CostTable, loadCostTable } from '../replay/cost-table.js';

/** Where the measured cost table lives in the package. */
export const DEFAULT_COSTS = 'bench/results/h200-driver-costs.json';

/** A path inside the vmmkit package, found by walking up from this file (src/ or dist/src/). */
function packagePath(relative: string): string | undefined {
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

/**
 * The cost table a command prices driver calls with: the one given (`--costs`),
 * else `fallback` (null: none), else the package's measured table when present.
 */
export function findCosts(
  given: string | undefined,
  fallback: string | null | undefined,
): CostTable | undefined {
  if (given !== undefined) return loadCostTable(given);
  if (fallback === null) return undefined;
  const path = fallback ?? packagePath(DEFAULT_COSTS);
  return path !== undefined && existsSync(path) ? loadCostTable(path) : undefined;
}

/** The package's version, from its package.json ('unknown' where that cannot be read). */
export function packageVersion(): string {
  const path = packagePath('package.json');
  try {
    return path === undefined
      ? 'unknown'
      : String((JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown }).version);
  } catch {
    return 'unknown';
  }
}
