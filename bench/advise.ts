/**
 * advise's wall time on the committed traces (traces/h200/*.pickle.gz):
 * for each, reading the snapshot, then the whole search (src/replay/
 * advise.ts) on worker threads (one per core, the command's default) and in
 * one thread, the two taking turns. Prints a table; with --write, also
 * bench/results/advise.json.
 *
 *   node dist/bench/advise.js [--write]
 */
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { advise } from '../src/replay/advise/advise.js';
import { planReplay } from '../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../src/replay/read/load.js';
import { runFacts, writeResult } from './result-file.js';

const MiB = 1024 * 1024;
const TRACES = new URL('../../traces/h200/', import.meta.url);

interface AdviseRow {
  trace: string;
  events: number;
  parseMs: number;
  /** The search on availableParallelism() worker threads (0: the trace is small enough to stay in one thread). */
  workers: number;
  adviseMs: number;
  /** CPU time of the process over the search, every thread's (a loaded machine stretches wall time, not this). */
  adviseCpuMs: number;
  /** The same search in this thread. */
  inThreadMs: number;
  inThreadCpuMs: number;
  proposed: number;
  replays: number;
  recommended: string;
  peakReservedMiB: number;
  recordedMiB: number | null;
  boundMiB: number;
  traps: number;
}

function cpuMs(u: NodeJS.CpuUsage): number {
  return Math.round((u.user + u.system) / 1000);
}

export async function runAdviseBench(options: { write?: boolean } = {}): Promise<AdviseRow[]> {
  const dir = fileURLToPath(TRACES);
  const rows: AdviseRow[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.pickle.gz'))
    .sort()) {
    const t0 = performance.now();
    const snapshot = readSnapshotFile(`${dir}${file}`);
    const parseMs = performance.now() - t0;
    const plan = planReplay(snapshot);
    // Default workers (the command's), then one thread; the first run of a process also pays for its JIT.
    const t1 = performance.now();
    const c1 = process.cpuUsage();
    const a = await advise(snapshot, { plan });
    const adviseMs = performance.now() - t1;
    const adviseCpuMs = cpuMs(process.cpuUsage(c1));
    const t2 = performance.now();
    const c2 = process.cpuUsage();
    await advise(snapshot, { plan, workers: 0 });
    const inThreadMs = performance.now() - t2;
    const inThreadCpuMs = cpuMs(process.cpuUsage(c2));
    rows.push({
      trace: file.replace(/\.pickle\.gz$/, ''),
      events: plan.events,
      parseMs: Math.round(parseMs),
      workers: a.search.workers,
      adviseMs: Math.round(adviseMs),
      adviseCpuMs,
      inThreadMs: Math.round(inThreadMs),
      inThreadCpuMs,
      proposed: a.search.proposed,
      replays: a.search.replays,
      recommended: a.recommended.allocConf,
      peakReservedMiB: a.recommended.peakReservedBytes / MiB,
      recordedMiB: a.recorded.peakReservedBytes === null ? null : a.recorded.peakReservedBytes / MiB,
      boundMiB: a.bound.peakBytes / MiB,
      traps: a.traps.length,
    });
  }
  const w = Math.max(...rows.map((r) => r.trace.length));
  console.log(
    `advise bench: the whole search per trace, wall / CPU ms (all threads), ${availableParallelism()} cores`,
  );
  console.log(
    `  ${'trace'.padEnd(w)}  ${'events'.padStart(7)}  read  ${'advise (workers)'.padStart(16)}  ${'one thread'.padStart(11)}  replays  recommended`,
  );
  for (const r of rows) {
    console.log(
      `  ${r.trace.padEnd(w)}  ${String(r.events).padStart(7)}  ${String(r.parseMs).padStart(4)}  ${`${r.adviseMs} / ${r.adviseCpuMs} (${r.workers})`.padStart(16)}  ${`${r.inThreadMs} / ${r.inThreadCpuMs}`.padStart(11)}  ${`${r.replays}/${r.proposed}`.padStart(7)}  ${r.recommended || '(defaults)'} ${r.peakReservedMiB.toFixed(0)} MiB (recorded ${r.recordedMiB?.toFixed(0) ?? '-'}, bound ${r.boundMiB.toFixed(0)})`,
    );
  }
  if (options.write) {
    writeResult('advise', { ...runFacts('bench/advise.ts', availableParallelism()), rows });
  }
  return rows;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runAdviseBench({ write: process.argv.includes('--write') });
}
