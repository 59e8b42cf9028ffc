import { existsSync, readFileSync } from 'node:fs';
import { type CostTable, loadCostTable } from '../replay/engine/cost-table.js';
import type { SnapshotVendor } from '../replay/read/vendor.js';
import { packagePath } from '../util/package-path.js';

/** Where the measured cost table lives in the package. */
export const DEFAULT_COSTS = 'bench/results/h200-driver-costs.json';

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

/**
 * The cost table for a snapshot of `vendor`: the one given (read before
 * the snapshot, so a bad one fails at once), else the package's, which was
 * measured on an H200: a torch_npu or ROCm driver's costs are not it.
 */
export function costsFor(
  given: CostTable | undefined,
  vendor: SnapshotVendor,
  fallback: string | null | undefined,
): CostTable | undefined {
  return given ?? (vendor === 'cuda' ? findCosts(undefined, fallback) : undefined);
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
