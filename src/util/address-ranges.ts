/**
 * The range holding `address` among `ranges` ([start, end) each, disjoint, sorted by start), by
 * binary search; undefined where none holds it.
 */
export function rangeHolding<T extends { readonly start: number; readonly end: number }>(
  ranges: readonly T[],
  address: number,
): T | undefined {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = ranges[mid];
    if (address < r.start) hi = mid - 1;
    else if (address >= r.end) lo = mid + 1;
    else return r;
  }
  return undefined;
}
