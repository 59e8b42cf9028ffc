/**
 * How advise orders the settings it replayed (Note [Ranking]): the figures
 * of a run, the order of strings among equals (fewer keys, then PyTorch's
 * defaults and documented advice before single values before tuned lists),
 * and the ranking itself, tiers first. Pure functions of the figures and the
 * strings; the search (advise.ts) ranks as replays finish, and its answer
 * is the ranking's head.
 */
import { keyCount } from './search.js';

/** An entry's figures over its snapshots: the worst of each. */
export interface Figures {
  readonly failed: boolean;
  /** Some replay stopped past the bar: the figures are lower bounds. */
  readonly stopped: boolean;
  readonly ooms: number;
  readonly peak: number;
  /** The most any one device reserved (headroom is the limit less this). */
  readonly devicePeak: number;
  readonly calls: number;
}

/** What rank() reads of an entry: its string, and its figures once every replay of it is back. */
export interface Ranked {
  readonly conf: string;
  readonly figures: Figures | undefined;
}

/** Keys, then tuning (Note [Ranking]): how equals are ordered before their peaks. */
export function comparePrefix(a: string, b: string): number {
  return keyCount(a) - keyCount(b) || tuning(a) - tuning(b);
}

export function simpler(a: string, b: string): boolean {
  return compareConf(a, b) < 0;
}

/** Fewer keys, then shorter, then in character order: a total order on strings. */
export function compareConf(a: string, b: string): number {
  return keyCount(a) - keyCount(b) || compareConfOfLength(a, b);
}

/** compareConf between strings of as many keys: shorter, then in character order. */
export function compareConfOfLength(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}

/**
 * How tuned a string is, for Note [Ranking]: PyTorch's defaults and its own
 * documented advice (expandable_segments:True, which its OOM message names)
 * 0; single values 1; a roundup_power2_divisions list, fitted per size
 * interval to this trace's shapes, 2.
 */
export function tuning(conf: string): number {
  if (conf === '' || conf === 'expandable_segments:True') return 0;
  return conf.includes('[') ? 2 : 1;
}

/** Lexicographic (failed, stopped, OOMs, peak, driver calls): the order of the runs themselves. */
export function compareFigures(a: Figures, b: Figures): number {
  if (a.failed !== b.failed) return a.failed ? 1 : -1;
  if (a.stopped !== b.stopped) return a.stopped ? 1 : -1;
  if (a.ooms !== b.ooms) return a.ooms - b.ooms;
  if (a.peak !== b.peak) return a.peak - b.peak;
  return a.calls - b.calls;
}

/**
 * Note [Ranking]: the candidates fall in tiers, in this order: replays that
 * ran to the end before those stopped past the best (Note [Pruning]) before
 * those that failed; fewer OOMs first; under a limit, a setting that fits
 * with room (the limit less its highest device peak is at least the
 * tolerance) before one that fits by less, which a run with other shapes
 * may not fit. Within a tier (but the tight one, which goes by room
 * alone), peaks within the tolerance of the tier's lowest are equal: measured peaks of the same job move by more than that
 * between runs, and a line fitted to the last MiB of one run is not worth
 * more keys. Among equals the fewest keys come first, then PyTorch's
 * defaults and documented advice before single values before a tuned
 * roundup list (tuning()), then the lower peak, then fewer driver calls
 * (time in the driver, Note [Per-handle prices]), then the simpler string.
 * Below the equals, the rest of the tier by peak, driver calls, string.
 */
export function rank<E extends Ranked>(
  entries: readonly E[],
  tol: number,
  limit: number | undefined,
): { entry: E; tier: string; tight: boolean; equal: boolean }[] {
  // Each row's sort keys once: the search ranks after every finished replay (Note [Pruning]).
  const rows = entries.map((entry) => {
    const f = entry.figures!;
    const fits = !f.failed && !f.stopped && f.ooms === 0;
    const tight = fits && limit !== undefined && limit - f.devicePeak < tol;
    return {
      entry,
      f,
      tight,
      tier: `${f.failed ? 1 : 0}.${f.stopped ? 1 : 0}.${f.ooms}.${tight ? 1 : 0}`,
      keys: keyCount(entry.conf),
      tuning: tuning(entry.conf),
      equal: false,
    };
  });
  const lowest = new Map<string, number>();
  for (const r of rows)
    lowest.set(r.tier, Math.min(lowest.get(r.tier) ?? Number.POSITIVE_INFINITY, r.f.peak));
  // Failed and stopped runs have no figure to be equal by; among tight fits more room is worth more than fewer keys.
  for (const r of rows)
    r.equal = !r.f.failed && !r.f.stopped && !r.tight && r.f.peak <= lowest.get(r.tier)! + tol;
  rows.sort((a, b) => {
    if (a.f.failed !== b.f.failed) return a.f.failed ? 1 : -1;
    if (a.f.stopped !== b.f.stopped) return a.f.stopped ? 1 : -1;
    if (a.f.ooms !== b.f.ooms) return a.f.ooms - b.f.ooms;
    if (a.tight !== b.tight) return a.tight ? 1 : -1;
    if (a.equal !== b.equal) return a.equal ? -1 : 1;
    if (a.equal) {
      const byKeys = a.keys - b.keys;
      if (byKeys !== 0) return byKeys;
      const byTuning = a.tuning - b.tuning;
      if (byTuning !== 0) return byTuning;
    }
    return (
      a.f.peak - b.f.peak ||
      a.f.calls - b.f.calls ||
      a.keys - b.keys ||
      compareConfOfLength(a.entry.conf, b.entry.conf)
    );
  });
  return rows.map(({ entry, tier, tight, equal }) => ({ entry, tier, tight, equal }));
}
