/**
 * Note [Backward-shift delete]: an open-addressing table with linear probing
 * (address-map.ts, int-map.ts) removes an entry without tombstones by moving
 * later entries of its run back into the gap, so no probe ever meets a gap
 * before its key. An entry may move only if its home slot is not cyclically
 * in (gap, at]: else a probe from its home would start past the gap.
 */

/** Whether the entry at slot `at`, whose home slot is `home`, may move back into the gap at slot `gap`. */
export function fillsGap(gap: number, home: number, at: number): boolean {
  return gap <= at ? !(gap < home && home <= at) : !(gap < home || home <= at);
}
