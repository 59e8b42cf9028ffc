/**
 * Replay benchmark: makes a deterministic 1,000,000-event memory snapshot
 * with our pickle writer, then times, each in a fresh Node process (so its
 * peak RSS is its own):
 *   parse   read + unpickle + check the snapshot
 *   replay  parse, plan, and replay through every registered allocator
 * Target (issue 8): parse + replay <= 10 s and <= 1 GiB peak RSS. Prints
 * the figures; writes the tracked bench/results/replay.json only when asked
 * (--write).
 *
 * With --granularity it times instead vmmkit's allocator replaying committed
 * H200 traces on a simulated MI300X (4 KiB VMM granularity) and on the H200
 * (2 MiB), turn about in one process, and writes the ratio of the medians,
 * MI300X over H200, per trace to bench/results/replay-granularity.json
 * (--write): Note [Page books by range] in src/alloc/vmmkit/arena.ts says
 * why it stays near 1 however many pages the device has.
 *
 *   node dist/bench/replay.js [--events N] [--keep FILE] [--write]
 *   node dist/bench/replay.js --granularity [--rounds N] [--write]
 *
 * The workload is makeBenchSnapshot's (Note [Bench workload] in
 * test/support/bench-snapshot.ts), which the browser test of a
 * million-event report reads too.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { replay } from '../src/entry/replay-library.js';
import { ALLOCATOR_REGISTRY, DEFAULT_ALLOCATORS } from '../src/replay/engine/allocators.js';
import { planReplay } from '../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../src/replay/read/load.js';
import { pickle } from '../src/replay/read/pickle/index.js';
import { makeBenchSnapshot } from '../test/support/bench-snapshot.js';
import { measureInChild } from './measure-in-child.js';
import { runFacts, writeResult } from './result-file.js';

const MiB = 1024 * 1024;

interface Measurement {
  mode: 'parse' | 'replay';
  ms: number;
  parseMs: number;
  maxRssMiB: number;
  events: number;
  allocators?: {
    name: string;
    replayMs: number;
    peakReservedBytes: number;
    ratio: number | null;
    utilization: number | null;
    ooms: number;
    error: string | null;
  }[];
  peakRequestedBytes?: number;
}

/** In the child: time one mode on the file and print a Measurement. */
function measure(file: string, mode: 'parse' | 'replay'): void {
  const t0 = performance.now();
  const snapshot = readSnapshotFile(file);
  const parseMs = performance.now() - t0;
  const events = snapshot.traces.reduce((s, t) => s + t.length, 0);
  const out: Measurement = { mode, ms: parseMs, parseMs, maxRssMiB: 0, events };
  if (mode === 'replay') {
    const plan = planReplay(snapshot);
    const r = replay(snapshot, { allocators: DEFAULT_ALLOCATORS, plan, keepEvents: false });
    out.ms = performance.now() - t0;
    out.peakRequestedBytes = plan.peakRequestedBytes;
    out.allocators = r.allocators.map((a) => ({
      name: a.name,
      replayMs: Math.round(a.replayMs),
      peakReservedBytes: a.peakReservedBytes,
      ratio: a.ratio,
      utilization: a.utilization,
      ooms: a.ooms,
      error: a.error ?? null,
    }));
  }
  out.maxRssMiB = Math.round(process.resourceUsage().maxRSS / 1024);
  console.log(JSON.stringify(out));
}

const child = (file: string, mode: 'parse' | 'replay') =>
  measureInChild<Measurement>(import.meta.url, [file, mode], mode);

export function runReplayBench(options: { events?: number; keep?: string; write?: boolean } = {}): boolean {
  const events = options.events ?? 1_000_000;
  const t0 = performance.now();
  const bytes = pickle(makeBenchSnapshot(events));
  const writeMs = performance.now() - t0;
  const dir = mkdtempSync(join(tmpdir(), 'vmmkit-replay-bench-'));
  const file = options.keep ?? join(dir, 'bench.pickle');
  writeFileSync(file, bytes);
  try {
    const parse = child(file, 'parse');
    const full = child(file, 'replay');
    const met =
      full.ms <= 10_000 && full.maxRssMiB <= 1024 && full.allocators!.every((a) => a.error === null);
    console.log(
      `replay bench: ${parse.events.toLocaleString('en-US')} events, ${(statSync(file).size / MiB).toFixed(0)} MiB pickle (written in ${(writeMs / 1000).toFixed(2)} s)`,
    );
    console.log(
      `  parse:                        ${(parse.ms / 1000).toFixed(2)} s, peak RSS ${parse.maxRssMiB} MiB`,
    );
    console.log(
      `  parse + replay (${full.allocators!.length} allocators): ${(full.ms / 1000).toFixed(2)} s, peak RSS ${full.maxRssMiB} MiB  (target <= 10 s, <= 1024 MiB: ${met ? 'met' : 'NOT MET'})`,
    );
    for (const a of full.allocators!) {
      console.log(
        `    ${a.name.padEnd(20)} ${(a.replayMs / 1000).toFixed(2)} s  ratio ${a.ratio?.toFixed(3) ?? '-'}  utilization ${a.utilization?.toFixed(3) ?? '-'}  OOMs ${a.ooms}${a.error ? `  FAILED: ${a.error}` : ''}`,
      );
    }
    const result = {
      ...runFacts('bench/replay.ts'),
      events: parse.events,
      pickleBytes: statSync(file).size,
      writeMs: Math.round(writeMs),
      parse: { ms: Math.round(parse.ms), maxRssMiB: parse.maxRssMiB },
      replay: {
        ms: Math.round(full.ms),
        parseMs: Math.round(full.parseMs),
        maxRssMiB: full.maxRssMiB,
        peakRequestedBytes: full.peakRequestedBytes,
        allocators: full.allocators,
      },
      target: { ms: 10_000, maxRssMiB: 1024 },
      met,
    };
    if (options.write === true) writeResult('replay', result);
    return met;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Committed traces the granularity ratio is measured on: the most events, and the most driver calls on 4 KiB pages. */
const GRANULARITY_TRACES = [
  'traces/h200/kv_cache_decode-native.pickle.gz',
  'traces/h200/transformer_train-native.pickle.gz',
];

/** The repository's root, from dist/bench/ or bench/. */
function repoRoot(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  return join(here, here.includes('/dist/') ? '../..' : '..');
}

function commitOf(root: string): string {
  try {
    return execFileSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * vmmkit's replay of the same snapshot on the MI300X (4 KiB pages) and on the H200 (2 MiB), in turns
 * (H200 first, then MI300X, each round), after one unmeasured round of each: the ratio of the medians.
 */
export function runGranularityBench(options: { rounds?: number; write?: boolean } = {}): void {
  const rounds = options.rounds ?? 5;
  const root = repoRoot();
  const vmmkit = ALLOCATOR_REGISTRY.filter((a) => a.name === 'vmmkit');
  const devices = ['H200', 'MI300X'] as const;
  const traces = GRANULARITY_TRACES.map((file) => {
    const snapshot = readSnapshotFile(join(root, file));
    const plan = planReplay(snapshot);
    const ms: Record<(typeof devices)[number], number[]> = { H200: [], MI300X: [] };
    const runs: Record<string, { peakReservedBytes: number; driverCalls: number }> = {};
    for (let round = -1; round < rounds; round++) {
      for (const device of devices) {
        const t0 = performance.now();
        const r = replay(snapshot, { allocators: vmmkit, plan, device, keepEvents: false });
        const t = performance.now() - t0;
        const run = r.allocators[0];
        if (run.error !== undefined) throw new Error(`${file} on ${device}: ${run.error}`);
        if (round >= 0) ms[device].push(t);
        runs[device] = {
          peakReservedBytes: run.peakReservedBytes,
          driverCalls: Object.values(run.driverCalls).reduce((a, b) => a + b, 0),
        };
      }
    }
    const h200Ms = median(ms.H200);
    const mi300xMs = median(ms.MI300X);
    const row = {
      trace: file,
      events: plan.events,
      h200: { medianMs: Math.round(h200Ms * 10) / 10, ...runs.H200 },
      mi300x: { medianMs: Math.round(mi300xMs * 10) / 10, ...runs.MI300X },
      mi300xOverH200: Math.round((mi300xMs / h200Ms) * 100) / 100,
    };
    console.log(
      `  ${file}: vmmkit on MI300X ${mi300xMs.toFixed(0)} ms (${row.mi300x.driverCalls} driver calls), on H200 ${h200Ms.toFixed(0)} ms (${row.h200.driverCalls}): ratio ${row.mi300xOverH200}`,
    );
    return row;
  });
  const result = {
    ...runFacts('bench/replay.ts --granularity'),
    commit: commitOf(root),
    loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
    rounds,
    method:
      'each trace parsed and planned once, then replayed through vmmkit on the H200 and on the MI300X in turns, one unmeasured round first; medians of the rounds; the ratio is MI300X over H200',
    traces,
  };
  if (options.write === true) writeResult('replay-granularity', result);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  if (args[0] === '--measure') measure(args[1], args[2] as 'parse' | 'replay');
  else if (args.includes('--granularity')) {
    const i = args.indexOf('--rounds');
    runGranularityBench({
      rounds: i >= 0 ? Number(args[i + 1]) : undefined,
      write: args.includes('--write'),
    });
  } else {
    const at = (name: string) => {
      const i = args.indexOf(name);
      return i >= 0 ? args[i + 1] : undefined;
    };
    const n = at('--events');
    const write = args.includes('--write');
    if (!runReplayBench({ events: n === undefined ? undefined : Number(n), keep: at('--keep'), write }))
      process.exitCode = 1;
  }
}
