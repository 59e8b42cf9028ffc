/**
 * advise's cost against one replay of the same snapshot, side by side in one
 * run: on each committed trace (traces/h200/*.pickle.gz) and on a
 * 1,000,000-event snapshot (makeBenchSnapshot, Note [Bench workload]), the
 * two take turns: one replay as `vmmkit replay` makes it (plan given,
 * every default allocator), one replay through `pytorch` alone (what each
 * setting of the search costs), and the whole search (src/replay/advise/
 * advise.ts) on worker threads, as the command runs it. The ratio is the
 * search's wall time over the replay's, each the best of its rounds (noise
 * only adds time); the target is at most 5x (issue 28). Beside it, the two
 * commands as a user runs them on the same file (Note [The commands side by
 * side]), and on each committed trace the floor: the settings the search
 * replayed, each once in full with no search around them (Note [The
 * search's floor]). With --unpruned, the search with every replay run to
 * its end (Note [Pruning]) beside it.
 * The big snapshot gets two rounds at most; a trace of fewer than
 * SMALL_TRACE events at least SMALL_ROUNDS (its sides take milliseconds, and
 * one busy moment of the machine would otherwise be its figure).
 * Prints a table; with --write, also bench/results/advise.json.
 *
 *   node dist/bench/advise.js [--write] [--unpruned] [--events N] [--rounds N]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { advise, replay } from '../src/entry/replay-library.js';
import { DEFAULT_ALLOCATORS, selectAllocators } from '../src/replay/engine/allocators.js';
import { planReplay } from '../src/replay/engine/trace-plan.js';
import { readSnapshotBytes, readSnapshotFile } from '../src/replay/read/load.js';
import { pickle } from '../src/replay/read/pickle/index.js';
import type { MemorySnapshot } from '../src/replay/read/snapshot.js';
import { makeBenchSnapshot } from '../test/support/bench-snapshot.js';
import { headCommit, runFacts, writeResult } from './result-file.js';

const MiB = 1024 * 1024;
const TRACES = new URL('../../traces/h200/', import.meta.url);
const SMALL_TRACE = 10_000;
const SMALL_ROUNDS = 10;

/*
 * Note [The commands side by side]: the target is the search against one
 * engine replay, as issue 28 set it. Every answer now starts by reproducing
 * the recording (Note [As recorded]), in `vmmkit replay` as in `vmmkit
 * advise`, so beside it the bench times the two commands as a user runs
 * them: each its own OS process (`node dist/src/cli/main.js`), started
 * afresh on the same file (its output to nowhere), so Node's start, the
 * read, the plan, the reproduction and a cold JIT are in both. That is what
 * the user waits for, and the like-for-like reading of "advise against one
 * replay". Both figures are written; the speed table in docs/FIDELITY.md
 * shows both and says which is the target's.
 */

/*
 * Note [The search's floor]: on a small trace the ratio is set by how many
 * settings the search must tell apart, not by how it replays them. Beside
 * the search, the bench replays each setting it replayed (one per
 * candidate: equivalent strings share a replay) once in full, back to back
 * in this thread, with vmmkit's run: no pruning, no slices, no bars. Where
 * that alone is over the target, no way of running the same search meets
 * it; only a search of fewer settings would (docs/performance.md). The big
 * snapshot skips it: its search is under the target, and some thirty full
 * replays of it would take minutes a round.
 */

/** Issue 28: the whole search at most this many times one replay. */
export const ADVISE_TARGET = 5;

interface AdviseRow {
  trace: string;
  events: number;
  /** One replay as `vmmkit replay` makes it: every default allocator, in this thread. */
  replayMs: number;
  /** One replay through `pytorch` alone, in this thread. */
  replayOneMs: number;
  /** The whole search, on the command's default workers (0: the trace stays in this thread). */
  adviseMs: number;
  workers: number;
  /** adviseMs / replayMs: the figure issue 28 asks to keep at most 5. */
  ratio: number;
  /** adviseMs / replayOneMs. */
  ratioOne: number;
  /** The same search with every replay run to its end (only with --unpruned). */
  unprunedMs?: number;
  /**
   * Every distinct setting the search replayed, each replayed once in full,
   * back to back, and vmmkit's run: what those replays cost with no search
   * around them (Note [The search's floor]); null for the big snapshot.
   */
  floorMs: number | null;
  /** floorMs / replayMs. */
  floorRatio: number | null;
  /** `vmmkit replay FILE` and `vmmkit advise FILE`, each the whole command in its own process (Note [The commands side by side]). */
  replayCommandMs: number;
  adviseCommandMs: number;
  /** adviseCommandMs / replayCommandMs. */
  commandRatio: number;
  proposed: number;
  replays: number;
  stopped: number;
  /** Replayed events over those of every replay run to its end. */
  eventsShare: number;
  recommended: string | null;
  peakReservedMiB: number | null;
}

function best(times: number[]): number {
  return Math.round(Math.min(...times));
}

const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

/** Wall time of `vmmkit ARGV` as its own process (Note [The commands side by side]). */
function command(argv: string[]): number {
  const t = performance.now();
  const run = spawnSync(process.execPath, [CLI, ...argv], { stdio: 'ignore' });
  const ms = performance.now() - t;
  // advise exits 3 when nothing fits; neither is expected of these files.
  if (run.status !== 0) throw new Error(`vmmkit ${argv.join(' ')} exited ${run.status ?? run.signal}`);
  return ms;
}

async function measure(
  trace: string,
  file: string,
  snapshot: MemorySnapshot,
  rounds: number,
  unpruned: boolean,
  floor: boolean,
): Promise<AdviseRow> {
  const plan = planReplay(snapshot);
  const turns = plan.events < SMALL_TRACE ? Math.max(rounds, SMALL_ROUNDS) : rounds;
  const pytorch = selectAllocators(['pytorch']);
  const vmmkit = selectAllocators(['vmmkit']);
  const replays: number[] = [];
  const floors: number[] = [];
  const ones: number[] = [];
  const searches: number[] = [];
  const full: number[] = [];
  const replayCommands: number[] = [];
  const adviseCommands: number[] = [];
  let a: Awaited<ReturnType<typeof advise>> | undefined;
  // The sides take turns in every round, so a noisy spell lands on each alike.
  for (let r = 0; r < turns; r++) {
    let t = performance.now();
    replay(snapshot, { allocators: DEFAULT_ALLOCATORS, plan, keepEvents: false });
    replays.push(performance.now() - t);
    t = performance.now();
    replay(snapshot, { allocators: pytorch, plan, keepEvents: false });
    ones.push(performance.now() - t);
    t = performance.now();
    a = await advise(snapshot, { plan });
    searches.push(performance.now() - t);
    if (unpruned) {
      t = performance.now();
      await advise(snapshot, { plan, prune: false });
      full.push(performance.now() - t);
    }
    if (floor) {
      // Note [The search's floor]: the settings this search replayed, each once in full, and vmmkit's run.
      const confs = a.candidates.map((c) => c.allocConf);
      t = performance.now();
      for (const allocConf of confs)
        replay(snapshot, { allocators: pytorch, plan, keepEvents: false, allocConf });
      replay(snapshot, { allocators: vmmkit, plan, keepEvents: false });
      floors.push(performance.now() - t);
    }
    replayCommands.push(command(['replay', file]));
    adviseCommands.push(command(['advise', file]));
  }
  const s = a!.search;
  return {
    trace,
    events: plan.events,
    replayMs: best(replays),
    replayOneMs: best(ones),
    adviseMs: best(searches),
    workers: s.workers,
    ratio: Math.min(...searches) / Math.min(...replays),
    ratioOne: Math.min(...searches) / Math.min(...ones),
    ...(unpruned ? { unprunedMs: best(full) } : {}),
    floorMs: floor ? best(floors) : null,
    floorRatio: floor ? Math.min(...floors) / Math.min(...replays) : null,
    replayCommandMs: best(replayCommands),
    adviseCommandMs: best(adviseCommands),
    commandRatio: Math.min(...adviseCommands) / Math.min(...replayCommands),
    proposed: s.proposed,
    replays: s.replays,
    stopped: s.stopped,
    eventsShare: s.eventsReplayed / s.eventsInFull,
    recommended: a!.recommended?.allocConf ?? null,
    peakReservedMiB: a!.recommended === null ? null : a!.recommended.peakReservedBytes / MiB,
  };
}

export async function runAdviseBench(
  options: { write?: boolean; unpruned?: boolean; events?: number; rounds?: number } = {},
): Promise<AdviseRow[]> {
  // What is measured: the commit as it is at the start.
  const commit = headCommit();
  const dir = fileURLToPath(TRACES);
  const rounds = options.rounds ?? 3;
  const unpruned = options.unpruned ?? false;
  const rows: AdviseRow[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.pickle.gz'))
    .sort()) {
    const path = `${dir}${file}`;
    rows.push(
      await measure(file.replace(/\.pickle\.gz$/, ''), path, readSnapshotFile(path), rounds, unpruned, true),
    );
  }
  // The million-event snapshot, made in memory and read back as a file of it would be (the commands read the file).
  const events = options.events ?? 1_000_000;
  const bytes = pickle(makeBenchSnapshot(events));
  const big = readSnapshotBytes(bytes);
  const folder = mkdtempSync(join(tmpdir(), 'vmmkit-advise-bench-'));
  try {
    const file = join(folder, 'bench-snapshot.pickle');
    writeFileSync(file, bytes);
    // Two rounds at most: each side of a round takes seconds here, and the best of two already drops a noisy one.
    rows.push(
      await measure(
        `bench-snapshot (${events.toLocaleString('en-US')} events)`,
        file,
        big,
        Math.min(rounds, 2),
        unpruned,
        false,
      ),
    );
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }

  const w = Math.max(...rows.map((r) => r.trace.length));
  console.log(
    `advise bench: the whole search against one replay of the same snapshot, wall ms (best of ${rounds} rounds, ${Math.max(rounds, SMALL_ROUNDS)} under ${SMALL_TRACE.toLocaleString('en-US')} events, ${Math.min(rounds, 2)} for the big one), ${availableParallelism()} cores; target <= ${ADVISE_TARGET}x`,
  );
  console.log(
    `  ${'trace'.padEnd(w)}  ${'events'.padStart(9)}  ${'replay'.padStart(6)}  ${'pytorch'.padStart(7)}  ${'advise'.padStart(6)}  ${'ratio'.padStart(5)}  ${'vs one'.padStart(6)}  ${'floor'.padStart(5)}${unpruned ? '  unpruned' : ''}  ${'commands'.padStart(14)}  replays (stopped)  events  recommended`,
  );
  for (const r of rows) {
    console.log(
      `  ${r.trace.padEnd(w)}  ${String(r.events).padStart(9)}  ${String(r.replayMs).padStart(6)}  ${String(r.replayOneMs).padStart(7)}  ${String(r.adviseMs).padStart(6)}  ${`${r.ratio.toFixed(1)}x`.padStart(5)}  ${`${r.ratioOne.toFixed(1)}x`.padStart(6)}  ${(r.floorRatio === null ? '-' : `${r.floorRatio.toFixed(1)}x`).padStart(5)}${unpruned ? `  ${String(r.unprunedMs).padStart(8)}` : ''}  ${`${r.adviseCommandMs}/${r.replayCommandMs} ${r.commandRatio.toFixed(1)}x`.padStart(14)}  ${`${r.replays} (${r.stopped})`.padStart(17)}  ${`${(r.eventsShare * 100).toFixed(0)}%`.padStart(6)}  ${r.recommended === null ? '(nothing fits)' : r.recommended || '(defaults)'}`,
    );
  }
  const worst = Math.max(...rows.map((r) => r.ratio));
  const worstCommands = Math.max(...rows.map((r) => r.commandRatio));
  console.log(
    `  worst ratio ${worst.toFixed(1)}x (${worst <= ADVISE_TARGET ? 'within' : 'over'} the ${ADVISE_TARGET}x target); the commands (\`vmmkit advise\` over \`vmmkit replay\`, Note [The commands side by side]) ${worstCommands.toFixed(1)}x`,
  );
  if (options.write) {
    writeResult('advise', {
      ...runFacts('bench/advise.ts', availableParallelism()),
      commit,
      // Other work on the machine adds wall time to both sides: its load when the runs ended.
      loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
      rows,
    });
  }
  return rows;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = (name: string) => {
    const i = process.argv.indexOf(name);
    return i < 0 ? undefined : Number(process.argv[i + 1]);
  };
  await runAdviseBench({
    write: process.argv.includes('--write'),
    unpruned: process.argv.includes('--unpruned'),
    events: at('--events'),
    rounds: at('--rounds'),
  });
}
