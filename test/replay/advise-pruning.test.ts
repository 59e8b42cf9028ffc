/**
 * advise's pruning (Note [Pruning], Note [Best first]) against the full
 * search, on every committed snapshot: the recordings of traces/h200-whatif
 * and the snapshots of other people's jobs in fixtures/wild. The pruned
 * search must give the full search's answer: the same verdict, recommended
 * setting and peak, lowest equal, best setting without expandable segments,
 * known trap and baselines; every setting it replayed to the end with the
 * full search's figures, in the full search's order; every one it stopped
 * below them, with figures no higher than its whole replay's.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Advice, AdviceCandidate } from '../../src/replay/advise/advise.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import type { MemorySnapshot } from '../../src/replay/read/snapshot.js';
import { advise } from '../support/replay.js';

const WHATIF = fileURLToPath(new URL('../../traces/h200-whatif/', import.meta.url));
const WILD = fileURLToPath(new URL('./fixtures/wild/', import.meta.url));
const files = [
  ...readdirSync(WHATIF)
    .filter((f) => f.endsWith('.pickle.gz'))
    .map((f) => `${WHATIF}${f}`),
  ...readdirSync(WILD)
    .filter((f) => f.endsWith('.pickle.gz'))
    .map((f) => `${WILD}${f}`),
].sort();

/** The answer's head: what the pruned search must give as the full one does. */
const head = (a: Advice) => ({
  verdict: a.verdict,
  recommended: a.recommended === null ? null : figures(a.recommended),
  lowest: a.lowest === null ? null : figures(a.lowest),
  withoutExpandableSegments:
    a.withoutExpandableSegments === null ? null : figures(a.withoutExpandableSegments),
  tolerance: a.tolerance,
  knownTrap: a.knownTrap,
  proposed: a.search.proposed,
  recorded: figures(a.recorded.replayed),
  vmmkit: [a.vmmkit.peakReservedBytes, a.vmmkit.ooms, a.vmmkit.driverCalls],
  bound: a.bound.peakBytes,
});

/** A candidate's figures, all of them but its wall time. */
const figures = (c: AdviceCandidate) => ({
  allocConf: c.allocConf,
  equivalent: c.equivalent,
  peak: c.peakReservedBytes,
  allocated: c.peakAllocatedBytes,
  ooms: c.ooms,
  fits: c.fits,
  calls: c.driverCalls,
  tight: c.tight,
  equal: c.equal,
  verdict: c.verdict,
});

/** The answer, or the refusal's message (a snapshot advise cannot answer is refused alike either way). */
async function answer(snapshot: MemorySnapshot, prune: boolean): Promise<Advice | string> {
  try {
    return await advise(snapshot, { workers: 0, prune });
  } catch (e) {
    return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  }
}

describe('advise: the pruned search gives the full search answer on every committed snapshot', () => {
  let stopped = 0;
  let answered = 0;
  for (const file of files) {
    it(file.slice(file.lastIndexOf('/', file.lastIndexOf('/') - 1) + 1), async () => {
      const snapshot = readSnapshotFile(file);
      const full = await answer(snapshot, false);
      const pruned = await answer(snapshot, true);
      if (typeof full === 'string') {
        expect(pruned).toBe(full);
        return;
      }
      if (typeof pruned === 'string') throw new Error(`the pruned search failed: ${pruned}`);
      answered++;
      expect(full.search.stopped).toBe(0);
      expect(head(pruned)).toEqual(head(full));
      // Replayed to the end: the full search's figures, in its order.
      const whole = pruned.candidates.filter((c) => c.stoppedAt < 0);
      const inFull = (c: AdviceCandidate) => full.candidates.find((x) => x.allocConf === c.allocConf);
      expect(whole.map((c) => figures(c))).toEqual(
        full.candidates.filter((x) => whole.some((c) => c.allocConf === x.allocConf)).map((c) => figures(c)),
      );
      // Stopped: after every whole one that did not fail (those that failed come last), never equal,
      // and below its whole replay's figures.
      const cut = pruned.candidates.findIndex((c) => c.stoppedAt >= 0);
      if (cut >= 0)
        expect(pruned.candidates.slice(cut).every((c) => c.stoppedAt >= 0 || c.error !== null)).toBe(true);
      for (const c of pruned.candidates.filter((x) => x.stoppedAt >= 0)) {
        const f = inFull(c)!;
        expect(c.equal, c.allocConf).toBe(false);
        expect(c.peakReservedBytes, c.allocConf).toBeLessThanOrEqual(f.peakReservedBytes);
        expect(c.ooms, c.allocConf).toBeLessThanOrEqual(f.ooms);
        expect(c.driverCalls, c.allocConf).toBeLessThanOrEqual(f.driverCalls);
      }
      // The same settings were replayed, each once.
      expect(pruned.candidates.map((c) => c.allocConf).sort()).toEqual(
        full.candidates.map((c) => c.allocConf).sort(),
      );
      stopped += pruned.search.stopped;
    }, 120_000);
  }

  it('stops replays on them', () => {
    // Run after the cases above (vitest runs a file's tests in order): pruning did something.
    expect(answered).toBeGreaterThan(0);
    expect(stopped).toBeGreaterThan(0);
  });
});
