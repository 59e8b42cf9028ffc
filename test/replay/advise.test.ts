/**
 * advise (src/replay/advise/advise.ts): the search, its dedupe, the ranking, the
 * trap warning, and the page bound (src/replay/engine/bound.ts), on synthetic
 * snapshots and the two smallest committed traces.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllocConf } from '../../src/alloc/pytorch/alloc-conf.js';
import { parseNpuAllocConf } from '../../src/alloc/pytorch/npu-alloc-conf.js';
import {
  type Advice,
  type AdviceCandidate,
  DEFAULT_TOLERANCE,
  KNOWN_TRAP,
} from '../../src/replay/advise/advise.js';
import {
  confKey,
  divisionsText,
  effectiveKey,
  firstRound,
  keyCount,
  settingsConf,
  traceSizes,
} from '../../src/replay/advise/search.js';
import { selectAllocators } from '../../src/replay/engine/allocators.js';
import { memoryBound } from '../../src/replay/engine/bound.js';

import { planReplay } from '../../src/replay/engine/trace-plan.js';
import type { MemorySnapshot } from '../../src/replay/read/snapshot.js';
import { advise, replay } from '../support/replay.js';
import { type Event, readFixture, snapshotOf } from './helpers.js';

const MiB = 1024 * 1024;
const root = fileURLToPath(new URL('../..', import.meta.url));
const trace = (name: string) => readFixture(`../../../traces/h200/${name}.pickle.gz`);

/** n blocks of `size` at addresses from `base`, 64 MiB apart. */
const allocs = (
  n: number,
  size: number,
  base: number,
  action: 'alloc' | 'free_completed' = 'alloc',
): Event[] => Array.from({ length: n }, (_, k) => [action, base + k * 64 * MiB, size] as const);

/**
 * The shape of #123548: eleven 30 MiB blocks, the first ten freed (under
 * expandable segments they merge into one 300 MiB free block, the eleventh
 * still live after it), then ten more. Alone, each setting reuses the
 * freed memory; together, max_split_size forbids splitting the merged block
 * for a smaller request and expandable segments map new pages instead.
 */
const trapSnapshot = (): MemorySnapshot =>
  snapshotOf([
    ...allocs(11, 30 * MiB, 0x1000_0000),
    ...allocs(10, 30 * MiB, 0x1000_0000, 'free_completed'),
    ...allocs(10, 30 * MiB, 0x9000_0000),
  ]);

/** How tuned a string is (Note [Ranking]): the defaults and expandable_segments:True, single values, lists. */
const tuning = (conf: string) =>
  conf === '' || conf === 'expandable_segments:True' ? 0 : conf.includes('[') ? 2 : 1;

/** A candidate's tier (Note [Ranking]): failed, stopped, OOMs, tight. */
const tier = (c: AdviceCandidate) => [
  c.error === null ? 0 : 1,
  c.stoppedAt < 0 ? 0 : 1,
  c.ooms,
  c.tight ? 1 : 0,
];

/** The order Note [Ranking] promises, for two neighbours of the ranking. */
function inOrder(a: AdviceCandidate, b: AdviceCandidate): boolean {
  const ta = tier(a);
  const tb = tier(b);
  for (let i = 0; i < ta.length; i++) if (ta[i] !== tb[i]) return ta[i] < tb[i];
  if (a.equal !== b.equal) return a.equal;
  const key = (c: AdviceCandidate) =>
    c.equal
      ? [c.keys, tuning(c.allocConf), c.peakReservedBytes, c.driverCalls]
      : [c.peakReservedBytes, c.driverCalls];
  const x = key(a);
  const y = key(b);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return a.keys < b.keys || (a.keys === b.keys && a.allocConf.length <= b.allocConf.length);
}

function expectRanked(a: Advice): void {
  for (let i = 1; i < a.candidates.length; i++)
    expect(
      inOrder(a.candidates[i - 1], a.candidates[i]),
      `${a.candidates[i - 1].allocConf} before ${a.candidates[i].allocConf}`,
    ).toBe(true);
  if (a.candidates[0].fits) expect(a.recommended).toBe(a.candidates[0]);
  else expect(a.recommended).toBeNull();
  // Equal: within the tolerance of the lowest peak of the first tier.
  const lowest = Math.min(...a.equals.map((c) => c.peakReservedBytes));
  for (const c of a.equals)
    expect(c.peakReservedBytes - lowest).toBeLessThanOrEqual(a.tolerance.toleranceBytes);
}

describe('advise: the search', () => {
  it('replays each effective setting once and ranks them as Note [Ranking] says', async () => {
    const snapshot = trace('phases_streams-native');
    const a = await advise(snapshot, { workers: 0 });
    expectRanked(a);
    const sizes = traceSizes(snapshot, planReplay(snapshot));
    const keys = a.candidates.map((c) => confKey(c.allocConf, sizes, undefined));
    expect(new Set(keys).size).toBe(keys.length);
    // Every equivalent string is the same replay as the one shown, and not simpler.
    for (const c of a.candidates)
      for (const e of c.equivalent) {
        expect(confKey(e, sizes, undefined)).toBe(confKey(c.allocConf, sizes, undefined));
        expect(keyCount(e)).toBeGreaterThanOrEqual(c.keys);
      }
    expect(a.search.replays).toBeLessThan(a.search.proposed);
    // And they are: each equivalent string, replayed, gives the shown one's figures.
    const figures = (conf: string) => {
      const r = replay(snapshot, {
        allocators: selectAllocators(['pytorch']),
        allocConf: conf,
        keepEvents: false,
      }).allocators[0];
      return [r.peakReservedBytes, r.peakAllocatedBytes, r.ooms, Object.values(r.driverCalls)];
    };
    for (const c of a.candidates.filter((x) => x.equivalent.length > 0).slice(0, 3))
      expect(figures(c.equivalent[0]), c.equivalent[0]).toEqual(figures(c.allocConf));
    // The modes, both; max_split_size_mb, roundup_power2_divisions in both forms; the known trap.
    const confs = a.candidates.flatMap((c) => [c.allocConf, ...c.equivalent]);
    expect(confs).toContain('');
    expect(confs).toContain('expandable_segments:True');
    expect(confs).toContain(KNOWN_TRAP);
    expect(confs.some((c) => /^max_split_size_mb:\d+$/.test(c))).toBe(true);
    expect(confs.some((c) => /roundup_power2_divisions:\d+$/.test(c))).toBe(true);
    expect(confs.some((c) => /roundup_power2_divisions:\[/.test(c))).toBe(true);
    expect(confs.some((c) => c.includes('garbage_collection_threshold'))).toBe(false);
    // The recorded run was native: expandable segments are better here, and the recorded settings are PyTorch's defaults.
    expect(a.recommended!.expandableSegments).toBe(true);
    expect(a.recommended!.peakReservedBytes).toBeLessThan(a.recorded.peakReservedBytes!);
    expect(a.recorded.replayed.peakReservedBytes).toBe(a.recorded.peakReservedBytes);
    for (const c of [...a.candidates, a.vmmkit])
      expect(c.peakReservedBytes).toBeGreaterThanOrEqual(a.bound.peakBytes);
  });

  it('division entries that round every request of their interval alike are one replay (Note [Effective settings])', () => {
    const snapshot = trace('phases_streams-native');
    const sizes = traceSizes(snapshot, planReplay(snapshot));
    const es = (list: string) => `expandable_segments:True,roundup_power2_divisions:${list}`;
    const figures = (conf: string) => {
      const r = replay(snapshot, {
        allocators: selectAllocators(['pytorch']),
        allocConf: conf,
        keepEvents: false,
      }).allocators[0];
      return [r.peakReservedBytes, r.peakAllocatedBytes, r.ooms, r.driverCalls];
    };
    // 8 and 16 steps in [32, 64) MiB round this trace's requests there alike (neither as plain rounding does).
    const [eight, sixteen, plain] = [
      es('[16:0,32:8,>:0]'),
      es('[16:0,32:16,>:0]'),
      'expandable_segments:True',
    ];
    expect(confKey(eight, sizes, undefined)).toBe(confKey(sixteen, sizes, undefined));
    expect(confKey(eight, sizes, undefined)).not.toBe(confKey(plain, sizes, undefined));
    expect(figures(sixteen)).toEqual(figures(eight));
    // Where 2 steps round a request otherwise than 8 do, the two stay apart.
    expect(confKey(es('[16:0,32:2,>:0]'), sizes, undefined)).not.toBe(confKey(eight, sizes, undefined));
  });

  it("torch_npu's settings keep apart what its own rules tell apart (NPU2's padding, NPU5's alignment)", () => {
    // A 40 MiB request: PyTorch's segment is 40 MiB, torch_npu's 42 MiB (40 MiB + 32 bytes, rounded).
    const sizes = {
      sizes: Float64Array.of(40 * 2 ** 20),
      bytesPerInterval: new Float64Array(16),
      largestStartSegment: 0,
    };
    const npu = (conf: string) => effectiveKey(parseNpuAllocConf(conf).settings, sizes, undefined);
    const cuda = (conf: string) => effectiveKey(parseAllocConf(conf).settings, sizes, undefined);
    // max_split_size_mb:41 splits no block PyTorch makes here, but torch_npu's 42 MiB one it does.
    expect(cuda('max_split_size_mb:41')).toBe(cuda(''));
    expect(npu('max_split_size_mb:41')).not.toBe(npu(''));
    expect(npu('max_split_size_mb:43')).toBe(npu(''));
    // The base address alignment moves expandable blocks: two alignments are two replays.
    expect(npu('expandable_segments:True,base_addr_aligned_kb:4')).not.toBe(npu('expandable_segments:True'));
  });

  it('under a memory limit: what fits ranks first, and garbage_collection_threshold is searched', async () => {
    // Two 30 MiB blocks in turn, then a 50 MiB one: native segments of 30 MiB cannot serve it.
    const snapshot = snapshotOf([
      ['alloc', 0x1000_0000, 30 * MiB],
      ['free_completed', 0x1000_0000, 30 * MiB],
      ['alloc', 0x2000_0000, 30 * MiB],
      ['alloc', 0x3000_0000, 50 * MiB],
    ]);
    const a = await advise(snapshot, { workers: 0, memoryLimit: 84 * MiB });
    expectRanked(a);
    expect(a.memoryLimit).toBe(84 * MiB);
    expect(a.recommended!.fits).toBe(true);
    expect(a.recommended!.verdict).toMatch(/^fits, peak .* of 84\.0 MiB$/);
    expect(a.candidates.some((c) => !c.fits)).toBe(true);
    const firstMiss = a.candidates.findIndex((c) => !c.fits);
    expect(a.candidates.slice(firstMiss).every((c) => !c.fits)).toBe(true);
    const miss = a.candidates[firstMiss];
    expect(miss.firstOom).not.toBeNull();
    expect(miss.verdict).toMatch(/^runs out of memory at event/);
    const confs = a.candidates.flatMap((c) => [c.allocConf, ...c.equivalent]);
    expect(confs.some((c) => c.includes('garbage_collection_threshold'))).toBe(true);
    // Collection frees no expandable block (N10): no expandable candidate sets it.
    expect(confs.some((c) => c.startsWith('expandable_segments:True') && c.includes('garbage'))).toBe(false);
  });

  it('a tie goes to the simpler setting, and settings that change nothing on the trace are one replay', async () => {
    // Requests of exact powers of two: no division rounds them; no block reaches 32 MiB.
    const snapshot = snapshotOf([
      ['alloc', 0x1000_0000, 4 * MiB],
      ['alloc', 0x2000_0000, 8 * MiB],
      ['free_completed', 0x1000_0000, 4 * MiB],
      ['free_completed', 0x2000_0000, 8 * MiB],
    ]);
    const a = await advise(snapshot, { workers: 0 });
    const defaults = a.candidates.find((c) => c.allocConf === '')!;
    expect(defaults.equivalent).toEqual(
      expect.arrayContaining([
        'max_split_size_mb:32',
        'roundup_power2_divisions:4',
        'roundup_power2_divisions:16',
      ]),
    );
    // Native 4 and 8 MiB requests take 20 MiB segments (N4): a tie between '' and its equivalents goes to ''.
    const same = a.candidates.filter(
      (c) => c.peakReservedBytes === defaults.peakReservedBytes && c.driverCalls === defaults.driverCalls,
    );
    expect(same[0].keys).toBe(Math.min(...same.map((c) => c.keys)));
  });

  it('warns of the combination that blows up, with its parts and the PyTorch issue', async () => {
    // Unpruned: the other values of the trap's keys need their parts' whole replays (Note [Pruning]).
    const a = await advise(trapSnapshot(), { workers: 0, prune: false });
    const pruned = await advise(trapSnapshot(), { workers: 0 });
    // Pruned, the trap itself and its figures are the same.
    expect(pruned.traps[0].allocConf).toBe(a.traps[0].allocConf);
    expect([pruned.traps[0].peakReservedBytes, pruned.traps[0].ratio]).toEqual([
      a.traps[0].peakReservedBytes,
      a.traps[0].ratio,
    ]);
    expect(pruned.knownTrap).toEqual(a.knownTrap);
    expect(a.traps).toHaveLength(1);
    const t = a.traps[0];
    expect(t.allocConf).toBe(KNOWN_TRAP);
    expect(t.issue).toBe('pytorch/pytorch#123548');
    expect(t.peakReservedBytes).toBe(640 * MiB);
    expect(t.parts.map((p) => p.allocConf)).toEqual(['expandable_segments:True', 'max_split_size_mb:128']);
    expect(t.ratio).toBeCloseTo(640 / 340, 6);
    expect(t.message).toContain('1.9x the most of its parts alone');
    expect(t.message).toContain('#123548');
    // max_split_size_mb 20 and 32 with expandable segments are the same trap: one warning names them.
    expect(t.alsoAt.map((x) => x.allocConf).sort()).toEqual([
      'expandable_segments:True,max_split_size_mb:20',
      'expandable_segments:True,max_split_size_mb:32',
    ]);
    expect(a.knownTrap?.ratio).toBe(t.ratio);
    expect(a.recommended!.allocConf).not.toContain('max_split_size_mb');
  });

  it('names no trap where the combination does not blow up, and still gives its figures', async () => {
    const a = await advise(trace('phases_streams-native'), { workers: 0 });
    expect(a.knownTrap).not.toBeNull();
    expect(a.knownTrap!.parts).toHaveLength(2);
    for (const t of a.traps) expect(t.ratio).toBeGreaterThanOrEqual(1.5);
    if (a.knownTrap!.ratio < 1.5) expect(a.traps.map((t) => t.allocConf)).not.toContain(KNOWN_TRAP);
  });

  it('reports progress up to the end, and refuses a limit that is not a byte count', async () => {
    const seen: [number, number][] = [];
    await advise(trapSnapshot(), { workers: 0, onProgress: (d, t) => seen.push([d, t]) });
    expect(seen.length).toBeGreaterThan(0);
    for (const [d, t] of seen) expect(d).toBeLessThanOrEqual(t);
    const [d, t] = seen.at(-1)!;
    expect(d).toBe(t);
    await expect(advise(trapSnapshot(), { memoryLimit: 1.5 })).rejects.toThrow(/memory limit/);
  });
});

const whatif = (name: string) => readFixture(`../../../traces/h200-whatif/${name}.pickle.gz`);
/** limit-espeak and limit-req90 of gpt_train (traces/h200-whatif/results.json's allowedBytes). */
const GPT_ESPEAK = 5_630_853_120;
const GPT_REQ90 = 4_962_910_208;

describe('advise: advice people can paste and keep (issue 28, section 3)', () => {
  it('simplest among equals: expandable_segments:True over a tuned list that reserves within the tolerance', async () => {
    const gpt = whatif('gpt_train--reference');
    const a = await advise(gpt, { workers: 0 });
    expectRanked(a);
    expect(a.tolerance).toMatchObject(DEFAULT_TOLERANCE);
    // 1% of 5.2 GiB is 53 MiB: the 64 MiB floor decides.
    expect(a.tolerance.toleranceBytes).toBe(64 * MiB);
    expect(a.recommended!.allocConf).toBe('expandable_segments:True');
    expect(a.recommended!.peakReservedBytes).toBe(5_630_853_120);
    // The lowest peak is 40 MiB lower, with divisions (the list advised before this rule among its equals): not recommended.
    expect(a.lowest!.allocConf).toBe('expandable_segments:True,roundup_power2_divisions:8');
    expect(a.lowest!.peakReservedBytes).toBe(5_588_910_080);
    const list = a.equals.find(
      (c) => c.allocConf === 'expandable_segments:True,roundup_power2_divisions:[16:8,32:2,>:8]',
    );
    expect(list?.peakReservedBytes).toBe(5_588_910_080);
    expect(a.recommended!.peakReservedBytes - a.lowest!.peakReservedBytes).toBeLessThanOrEqual(64 * MiB);
    expect(a.equals[0]).toBe(a.recommended);
    expect(a.equals).toContain(a.lowest);
    // With no tolerance the lowest peak wins again: the rule, not the search, changed the answer.
    const exact = await advise(gpt, { workers: 0, tolerance: {} });
    expect(exact.tolerance.toleranceBytes).toBe(0);
    expect(exact.recommended!.allocConf).toBe(a.lowest!.allocConf);
    // A percentage alone: 5% of the best peak.
    const wide = await advise(gpt, { workers: 0, tolerance: { fraction: 0.05 } });
    expect(wide.tolerance.toleranceBytes).toBe(Math.ceil(0.05 * a.lowest!.peakReservedBytes));
    await expect(advise(gpt, { tolerance: { fraction: 1 } })).rejects.toThrow(/tolerance/);
  });

  it('headroom: a setting that fits by less than the tolerance is marked, and one with room recommended', async () => {
    // Under the expandable run's peak, expandable_segments:True and max_split_size_mb:32 fit to the byte.
    const a = await advise(whatif('gpt_train--reference'), { workers: 0, memoryLimit: GPT_ESPEAK });
    expectRanked(a);
    const r = a.recommended!;
    expect(r.tight).toBe(false);
    expect(r.headroomBytes).toBe(GPT_ESPEAK - r.peakReservedBytes);
    expect(r.headroomBytes!).toBeGreaterThanOrEqual(a.tolerance.toleranceBytes);
    expect(a.verdict).toBe(
      `${r.allocConf} fits under 5.24 GiB with ${(r.headroomBytes! / MiB).toFixed(1)} MiB (1.4%) to spare, peak 5.17 GiB`,
    );
    const mss32 = a.candidates.find((c) => c.allocConf === 'max_split_size_mb:32')!;
    expect(mss32.fits).toBe(true);
    expect(mss32.headroomBytes).toBe(0);
    expect(mss32.tight).toBe(true);
    // Fewer keys, and still after every setting with room.
    expect(mss32.keys).toBeLessThan(r.keys);
    const firstTight = a.candidates.findIndex((c) => c.tight);
    expect(a.candidates.slice(0, firstTight).every((c) => c.fits && !c.tight)).toBe(true);
    expect(a.candidates.indexOf(mss32)).toBeGreaterThanOrEqual(firstTight);
  });

  it('headroom: when every fit is tight, the one with the most room, marked so in the verdict', async () => {
    const a = await advise(whatif('kv_decode--reference'), { workers: 0, memoryLimit: 589_299_712 });
    expectRanked(a);
    const r = a.recommended!;
    expect(r.tight).toBe(true);
    const fits = a.candidates.filter((c) => c.fits);
    expect(r.headroomBytes).toBe(Math.max(...fits.map((c) => c.headroomBytes!)));
    expect(a.verdict).toMatch(/but by only 20\.0 MiB \(3\.6%\), less than the tolerance 64\.0 MiB/);
  });

  it('nothing fits: the verdict first, from the page bound, and nothing to paste', async () => {
    const gpt = whatif('gpt_train--reference');
    const plan = planReplay(gpt, { memoryLimit: GPT_REQ90 });
    const bound = memoryBound(plan).devices[0];
    expect(bound.peakBytes).toBeGreaterThan(GPT_REQ90);
    const a = await advise(gpt, { workers: 0, memoryLimit: GPT_REQ90, plan });
    expect(a.recommended).toBeNull();
    expect(a.equals).toEqual([]);
    expect(a.candidates.every((c) => !c.fits)).toBe(true);
    expect(a.verdict).toBe(
      `no PyTorch setting fits under 4.62 GiB: the live blocks alone need ${(bound.peakBytes / 2 ** 30).toFixed(2)} GiB at event ${bound.event.toLocaleString('en-US')}`,
    );
  });

  it('nothing fits, though the bound allows it: the closest setting and where it runs out', async () => {
    // Two 30 MiB blocks in turn, then a 50 MiB one, under 60 MiB: the live blocks need 80 MiB... so 82 MiB:
    // the bound (80 MiB) fits, no PyTorch setting does.
    const snapshot = snapshotOf([
      ['alloc', 0x1000_0000, 30 * MiB],
      ['free_completed', 0x1000_0000, 30 * MiB],
      ['alloc', 0x2000_0000, 30 * MiB],
      ['alloc', 0x3000_0000, 50 * MiB],
    ]);
    const a = await advise(snapshot, { workers: 0, memoryLimit: 80 * MiB });
    if (a.recommended === null) {
      expect(a.verdict).toMatch(
        /^no PyTorch setting tried fits under 80\.0 MiB: the closest, .* runs out of memory at event/,
      );
      expect(a.verdict).toContain('the live blocks alone need 80.0 MiB');
    } else expect(a.recommended.fits).toBe(true);
  });

  it('several runs: each setting replayed on every snapshot and ranked by its worst', async () => {
    const runs = [trace('phases_streams-native'), trace('phases_streams-expandable')];
    const both = await advise(runs, { workers: 0 });
    expectRanked(both);
    expect(both.snapshots).toBe(2);
    const alone = await Promise.all(runs.map((r) => advise(r, { workers: 0, prune: false })));
    for (const c of both.candidates.filter((x) => x.stoppedAt < 0)) {
      expect(c.perSnapshot).toHaveLength(2);
      expect(c.peakReservedBytes).toBe(Math.max(...c.perSnapshot.map((p) => p.peakReservedBytes)));
      // Each snapshot's figure is that snapshot's own replay under the setting.
      c.perSnapshot.forEach((p, k) => {
        const own = alone[k].candidates.find(
          (x) => x.allocConf === c.allocConf || x.equivalent.includes(c.allocConf),
        );
        if (own !== undefined)
          expect(p.peakReservedBytes, `${c.allocConf} on ${k}`).toBe(own.peakReservedBytes);
      });
    }
    const r = both.recommended!;
    expect(r.perSnapshot.every((p) => p.fits)).toBe(true);
    expect(both.vmmkit.peakReservedBytes).toBe(Math.max(...alone.map((x) => x.vmmkit.peakReservedBytes)));
    expect(both.bound.peakBytes).toBe(Math.max(...alone.map((x) => x.bound.peakBytes)));
  });

  it('traps are named from this snapshot: what the setting would reserve on it, no other workload', async () => {
    const a = await advise(trapSnapshot(), { workers: 0 });
    const t = a.traps[0];
    expect(t.message).toMatch(
      /^expandable_segments:True,max_split_size_mb:128 would reserve 640\.0 MiB on this snapshot, 1\.9x/,
    );
    expect(t.atLeast).toBe(false);
    const gpt = await advise(trace('phases_streams-native'), { workers: 0 });
    const k = gpt.knownTrap!;
    const own = replay(trace('phases_streams-native'), {
      allocators: selectAllocators(['pytorch']),
      allocConf: KNOWN_TRAP,
      keepEvents: false,
    }).allocators[0];
    expect(k.peakReservedBytes).toBe(own.peakReservedBytes);
    // No figure of the project's recordings is quoted anywhere in the source.
    const source = readFileSync(join(root, 'src/replay/advise/advise.ts'), 'utf8');
    expect(source).not.toMatch(/MEASURED_TRAP|7_434_403_840|5_630_853_120|traces\/h200-whatif/);
    for (const m of [...a.traps.map((x) => x.message)]) expect(m).not.toMatch(/H200|GPT|h200-whatif/);
  });

  const results = join(root, 'traces/h200-whatif/results.json');
  it.skipIf(!existsSync(results))(
    "the known trap's figure on a snapshot is what PyTorch reserved under it, to the byte",
    async () => {
      const runs = (
        JSON.parse(readFileSync(results, 'utf8')) as {
          runs: { workload: string; allocConf: string | null; kind: string; maxMemoryReserved: number }[];
        }
      ).runs;
      const measured = (w: string, conf: string) =>
        runs.find((r) => r.workload === w && r.kind === 'setting' && r.allocConf === conf)?.maxMemoryReserved;
      const a = await advise(whatif('gpt_train--reference'), { workers: 0 });
      expect(a.knownTrap!.peakReservedBytes).toBe(measured('gpt_train', KNOWN_TRAP));
      const es = a.knownTrap!.parts.find((p) => p.allocConf === 'expandable_segments:True')!;
      expect(es.peakReservedBytes).toBe(measured('gpt_train', 'expandable_segments:True'));
    },
  );
});

describe('advise: pruning (Note [Pruning])', () => {
  /** The answer's head: the verdict, the line to paste, the lowest of its equals, the baselines and the search. */
  const head = (a: Advice) => ({
    verdict: a.verdict,
    recommended: a.recommended === null ? null : [a.recommended.allocConf, a.recommended.peakReservedBytes],
    lowest: a.lowest === null ? null : [a.lowest.allocConf, a.lowest.peakReservedBytes],
    native:
      a.withoutExpandableSegments === null
        ? null
        : [a.withoutExpandableSegments.allocConf, a.withoutExpandableSegments.peakReservedBytes],
    tolerance: a.tolerance,
    knownTrap: a.knownTrap,
    proposed: a.search.proposed,
    recorded: a.recorded.replayed.peakReservedBytes,
    vmmkit: a.vmmkit.peakReservedBytes,
  });
  const figures = (c: AdviceCandidate) => [c.allocConf, c.peakReservedBytes, c.driverCalls, c.equivalent];

  it("gives the unpruned search's head on the committed traces, and stops replays that cannot win", async () => {
    let stopped = 0;
    for (const snapshot of [
      trace('phases_streams-native'),
      trace('phases_streams-expandable'),
      trace('cnn_train-native'),
      whatif('gpt_train--reference'),
      whatif('kv_decode--reference'),
      whatif('streams_pipeline--reference'),
      whatif('graphs_serve--reference'),
    ]) {
      const pruned = await advise(snapshot, { workers: 0 });
      const full = await advise(snapshot, { workers: 0, prune: false });
      expect(head(pruned)).toEqual(head(full));
      // The equals that ran to the end are the unpruned search's, in its order; one that stopped has
      // more keys or more tuning than the recommended setting, so could not have been recommended.
      const kept = pruned.equals.map(figures);
      expect(full.equals.map(figures).filter((f) => kept.some((k) => k[0] === f[0]))).toEqual(kept);
      const r = full.recommended!;
      for (const c of full.equals.filter((x) => !kept.some((k) => k[0] === x.allocConf)))
        expect(
          c.keys > r.keys || (c.keys === r.keys && tuning(c.allocConf) >= tuning(r.allocConf)),
          c.allocConf,
        ).toBe(true);
      expect(full.search.stopped).toBe(0);
      expect(full.search.eventsReplayed).toBe(full.search.eventsInFull);
      // What stopped is below the head, and its figures are lower bounds of the whole replay's.
      for (const c of pruned.candidates.filter((x) => x.stoppedAt >= 0)) {
        expect(c.equal).toBe(false);
        const whole = full.candidates.find((x) => x.allocConf === c.allocConf)!;
        expect(c.peakReservedBytes).toBeLessThanOrEqual(whole.peakReservedBytes);
      }
      stopped += pruned.search.stopped;
      expect(pruned.search.eventsReplayed).toBeLessThanOrEqual(pruned.search.eventsInFull);
    }
    expect(stopped).toBeGreaterThan(0);
  }, 120_000);
});

describe('advise: configuration strings', () => {
  it('writes division tables as PyTorch reads them back, in the shortest form', () => {
    const table = (...runs: [number, number][]) => runs.flatMap(([n, v]) => new Array(n).fill(v));
    for (const [d, text] of [
      [table([16, 4]), '4'],
      [table([9, 1], [1, 2], [1, 4], [5, 8]), '[256:1,512:2,1024:4,>:8]'],
      [table([5, 0], [11, 8]), '[16:0,>:8]'],
      [table([3, 0], [1, 16], [12, 0]), '[4:0,8:16,>:0]'],
    ] as const) {
      expect(divisionsText(d)).toBe(text);
      expect(parseAllocConf(`roundup_power2_divisions:${text}`).settings.roundupPower2Divisions).toEqual(d);
    }
    expect(divisionsText(new Array(16).fill(0))).toBeUndefined();
    expect(keyCount('')).toBe(0);
    expect(keyCount('expandable_segments:True,roundup_power2_divisions:[256:1,512:2,>:8]')).toBe(2);
  });

  it('says recorded settings as a string that reads back to them', () => {
    for (const conf of [
      '',
      'expandable_segments:True',
      'max_split_size_mb:256,max_non_split_rounding_mb:40',
      'roundup_power2_divisions:[256:1,512:2,1024:4,>:8],garbage_collection_threshold:0.6',
    ]) {
      const s = parseAllocConf(conf).settings;
      expect(parseAllocConf(settingsConf(s)!).settings).toEqual(s);
    }
  });

  it('always tries the known trap and its parts', () => {
    const sizes = traceSizes(trapSnapshot(), planReplay(trapSnapshot()));
    const confs = firstRound(sizes, false).map((s) => JSON.stringify(s));
    expect(confs).toContain(JSON.stringify({ expandable: true, maxSplitMb: 128 }));
    expect(confs).toContain(JSON.stringify({ expandable: false, maxSplitMb: 128 }));
  });
});

describe('the page bound (Note [Page bound])', () => {
  it('counts each live block in whole 512-byte slots and the live slots in whole 2 MiB pages, per device', () => {
    const snapshot = snapshotOf(
      [
        ['alloc', 0x1000, 1],
        ['alloc', 0x2000, 2 * MiB - 512],
        ['free_completed', 0x1000, 1],
        ['alloc', 0x3000, 100],
      ],
      [['alloc', 0x1000, 3 * MiB]],
    );
    const b = memoryBound(planReplay(snapshot));
    // Device 0: 512 + (2 MiB - 512) = 2 MiB at event 1; device 1: 3 MiB live, two pages.
    expect(b.devices).toEqual([
      { device: 0, peakBytes: 2 * MiB, liveSlotBytes: 2 * MiB, event: 1 },
      { device: 1, peakBytes: 4 * MiB, liveSlotBytes: 3 * MiB, event: 0 },
    ]);
    expect(b.peakBytes).toBe(6 * MiB);
  });

  it('is reached by construction: one 20 MiB block takes one expandable page, exactly the bound', async () => {
    const a = await advise(snapshotOf([['alloc', 0x1000, 20 * MiB]]), { workers: 0 });
    expect(a.bound.peakBytes).toBe(20 * MiB);
    expect(a.recommended!.peakReservedBytes).toBe(a.bound.peakBytes);
    expect(a.vmmkit.peakReservedBytes).toBe(a.bound.peakBytes);
  });

  it('counts a recorded OOM request as live at its event', () => {
    const plan = planReplay(
      snapshotOf([
        ['alloc', 0x1000, 4 * MiB],
        ['oom', 0, 9 * MiB],
      ]),
    );
    expect(memoryBound(plan).peakBytes).toBe(14 * MiB);
  });

  it('no allocator and no recording goes below it on the small committed traces', () => {
    for (const name of [
      'phases_streams-native',
      'phases_streams-expandable',
      'cnn_train-native',
      'cnn_train-expandable',
    ]) {
      const snapshot = trace(name);
      const plan = planReplay(snapshot);
      const bound = memoryBound(plan);
      expect(bound.peakBytes).toBeGreaterThanOrEqual(plan.peakRequestedBytes);
      const r = replay(snapshot, {
        allocators: selectAllocators(['pytorch-native', 'pytorch-expandable', 'vmmkit']),
        plan,
        keepEvents: false,
      });
      for (const run of r.allocators) {
        expect(run.ooms).toBe(0);
        expect(run.peakReservedBytes, `${name} ${run.name}`).toBeGreaterThanOrEqual(bound.peakBytes);
      }
    }
  });
});

/**
 * dist/ compiled after every source the worker runs (see test/report/cli.test.ts for the same check): the
 * package's advise (src/entry/replay.ts), whose worker threads load src/entry/advise-worker.ts's build.
 */
function currentDist(): string | undefined {
  const built = join(root, 'dist/src/entry/advise-worker.js');
  if (!existsSync(built)) return undefined;
  const sources = ['src/replay', 'src/entry', 'src/alloc'].flatMap((dir) =>
    readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => statSync(join(root, dir, f)).mtimeMs),
  );
  return statSync(built).mtimeMs >= Math.max(...sources) ? join(root, 'dist/src/entry/replay.js') : undefined;
}

const dist = currentDist();

describe.skipIf(dist === undefined)('advise on worker threads (skipped unless dist/ is current)', () => {
  it('gives what this thread gives', async () => {
    const built = (await import(pathToFileURL(dist!).href)) as { advise: typeof advise };
    const snapshot = trace('phases_streams-native');
    // Unpruned: which replays stop depends on which end first, so only the head is the same (Note [Pruning]).
    const here = await advise(snapshot, { workers: 0, prune: false });
    const there = await built.advise(snapshot, { workers: 2, prune: false });
    const prunedThere = await built.advise(snapshot, { workers: 2 });
    expect(prunedThere.recommended?.allocConf).toBe(here.recommended?.allocConf);
    expect(prunedThere.lowest?.allocConf).toBe(here.lowest?.allocConf);
    expect(prunedThere.verdict).toBe(here.verdict);
    expect(there.search.workers).toBe(2);
    const figures = (a: Advice) =>
      a.candidates.map((c) => [c.allocConf, c.peakReservedBytes, c.ooms, c.driverCalls]);
    expect(figures(there)).toEqual(figures(here));
    expect(there.vmmkit.peakReservedBytes).toBe(here.vmmkit.peakReservedBytes);
  });

  it("fails the search, not the process, when what this thread's turn calls throws", async () => {
    const built = (await import(pathToFileURL(dist!).href)) as { advise: typeof advise };
    const snapshot = trace('phases_streams-native');
    // This thread replays beside the worker, in turns set off by a timer: what throws there rejects advise.
    const failing = built.advise(snapshot, {
      workers: 1,
      onProgress: () => {
        throw new RangeError('told too much');
      },
    });
    await expect(failing).rejects.toThrow('told too much');
  });
});
