/**
 * Driver call costs by call and size, as measured on a GPU and committed as
 * bench/results/h200-driver-costs.json:
 *
 *   { "script", "date", "gpu", "driver", "calls": { "cuMemCreate": [[bytes, us], ...], ... } }
 *
 * Points are in ascending size. A cost between two points is interpolated
 * linearly; past the last point it is extrapolated along the last two; below
 * the first it is the first point's cost (no call here is cheaper for being
 * smaller than the smallest size measured). Never negative.
 */
import { readFileSync } from 'node:fs';
import { CostTableError } from '../errors.js';

/** The driver calls replay counts, in the order results list them. */
export const DRIVER_CALLS = [
  'cuMemAddressReserve',
  'cuMemAddressFree',
  'cuMemCreate',
  'cuMemRelease',
  'cuMemMap',
  'cuMemUnmap',
  'cuMemSetAccess',
  'cuMemAlloc',
  'cuMemFree',
  'cuCtxSynchronize',
] as const;
export type DriverCall = (typeof DRIVER_CALLS)[number];

// CostTableError lives in errors.ts; re-exported here, where it was.
export { CostTableError } from '../errors.js';

export interface CostTableInfo {
  readonly script?: string;
  readonly date?: string;
  readonly gpu?: string;
  readonly driver?: string;
  /** Where the table came from (a path, or a description for tables made in code). */
  readonly source: string;
}

export class CostTable {
  /** Per call index (DRIVER_CALLS), sizes and costs, or undefined when the table lacks the call. */
  readonly #bytes: (Float64Array | undefined)[];
  readonly #us: (Float64Array | undefined)[];

  constructor(
    readonly info: CostTableInfo,
    calls: Partial<Record<DriverCall, readonly (readonly [number, number])[]>>,
  ) {
    this.#bytes = DRIVER_CALLS.map((c) => {
      const points = calls[c];
      return points === undefined ? undefined : Float64Array.from(points, (p) => p[0]);
    });
    this.#us = DRIVER_CALLS.map((c) => {
      const points = calls[c];
      return points === undefined ? undefined : Float64Array.from(points, (p) => p[1]);
    });
  }

  has(call: number): boolean {
    return this.#bytes[call] !== undefined;
  }

  /** Microseconds for one call of DRIVER_CALLS[call] on `bytes` bytes. */
  estimate(call: number, bytes: number): number {
    const xs = this.#bytes[call];
    const ys = this.#us[call]!;
    if (xs === undefined)
      throw new CostTableError(`the cost table (${this.info.source}) has no entry for ${DRIVER_CALLS[call]}`);
    const n = xs.length;
    if (n === 1 || bytes <= xs[0]) return ys[0];
    let hi = 1;
    while (hi < n - 1 && xs[hi] < bytes) hi++;
    const lo = hi - 1;
    const t = (bytes - xs[lo]) / (xs[hi] - xs[lo]);
    return Math.max(0, ys[lo] + t * (ys[hi] - ys[lo]));
  }
}

/** Check a parsed cost-table document; `source` names it in messages. */
export function parseCostTable(doc: unknown, source: string): CostTable {
  const bad = (why: string) => new CostTableError(`bad cost table ${source}: ${why}`);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad('not a JSON object');
  const d = doc as Record<string, unknown>;
  const calls = d.calls;
  if (typeof calls !== 'object' || calls === null || Array.isArray(calls)) throw bad("no 'calls' object");
  const out: Partial<Record<DriverCall, [number, number][]>> = {};
  for (const [name, points] of Object.entries(calls as Record<string, unknown>)) {
    if (!(DRIVER_CALLS as readonly string[]).includes(name)) continue;
    if (!Array.isArray(points) || points.length === 0) throw bad(`${name} has no points`);
    let prev = Number.NEGATIVE_INFINITY;
    const list: [number, number][] = [];
    for (const p of points) {
      if (
        !Array.isArray(p) ||
        p.length !== 2 ||
        !p.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0)
      )
        throw bad(`${name}: each point is [bytes, us], non-negative numbers`);
      if (p[0] <= prev) throw bad(`${name}: sizes are not ascending`);
      prev = p[0];
      list.push([p[0], p[1]]);
    }
    out[name as DriverCall] = list;
  }
  const text = (k: string) => (typeof d[k] === 'string' ? (d[k] as string) : undefined);
  return new CostTable(
    { script: text('script'), date: text('date'), gpu: text('gpu'), driver: text('driver'), source },
    out,
  );
}

export function loadCostTable(path: string): CostTable {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    // A file that is not JSON (a snapshot given by mistake) is said so; JSON.parse's message quotes its bytes.
    const why = e instanceof SyntaxError ? 'it is not JSON' : e instanceof Error ? e.message : String(e);
    throw new CostTableError(`cannot read cost table ${path}: ${why}`);
  }
  return parseCostTable(doc, path);
}
