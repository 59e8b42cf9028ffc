/**
 * Replay benchmark: makes a deterministic 1,000,000-event memory snapshot
 * with our pickle writer, then times, each in a fresh Node process (so its
 * peak RSS is its own):
 *   parse   read + unpickle + check the snapshot
 *   replay  parse, plan, and replay through every registered allocator
 * Target (issue 8): parse + replay <= 10 s and <= 1 GiB peak RSS.
 * Writes bench/results/replay.json.
 *
 *   node dist/bench/replay.js [--events N] [--keep FILE]
 *
 * The workload (Note [Bench workload]): a few thousand long-lived blocks
 * first (weights, 1 to 256 MiB), then a stream of allocations and frees on
 * three streams: 60% of requests under 1 MiB, 30% from 1 to 64 MiB, 10%
 * from 64 MiB to 1 GiB, scaled by a "sequence length" factor that changes
 * every 20,000 events (variable shapes are what fragments a caching
 * allocator); frees mostly in reverse order of allocation, a third of them
 * of a random live block; live requested bytes held under 48 GiB. Every free
 * is recorded as PyTorch records it, free_requested then free_completed.
 * Each event carries a frames list of shared frame dicts, as PyTorch's
 * symbolized tracebacks do.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_ALLOCATORS } from '../src/replay/allocators.js';
import { readSnapshotFile } from '../src/replay/load.js';
import { type PickleDict, type PickleValue, pickle } from '../src/replay/pickle/index.js';
import { replay } from '../src/replay/replay.js';
import { planReplay } from '../src/replay/trace-plan.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Build the snapshot value (see Note [Bench workload]). */
export function makeBenchSnapshot(events: number, seed = 8): PickleValue {
  const rnd = random(seed);
  const logUniform = (lo: number, hi: number) =>
    Math.exp(Math.log(lo) + rnd() * (Math.log(hi) - Math.log(lo)));
  const streams = [0, 0x5600_0a00_1000, 0x5600_0a00_2000];
  const files = ['model.py', 'attention.py', 'mlp.py', 'optimizer.py', 'train.py', 'functional.py'];
  const framePool = Array.from({ length: 400 }, (_, i) => ({
    filename: `/opt/venv/lib/python3.11/site-packages/workload/${files[i % files.length]}`,
    line: 10 + ((i * 37) % 900),
    name: `fn_${i}`,
  }));
  const stacks = Array.from({ length: 150 }, () =>
    Array.from({ length: 3 + Math.floor(rnd() * 6) }, () => framePool[Math.floor(rnd() * framePool.length)]),
  );
  const trace: PickleDict[] = [];
  let time = 1_733_000_000_000_000;
  const base = 0x7f00_0000_0000;
  let bump = base;
  const freeAddresses = new Map<number, number[]>();
  const live: { addr: number; size: number; stream: number; key: number }[] = [];
  let liveBytes = 0;
  const budget = 48 * GiB;

  const emit = (action: string, addr: number, size: number, stream: number, stack: number) => {
    time += 1 + Math.floor(rnd() * 40);
    trace.push({ action, addr, size, stream, time_us: time, frames: [...stacks[stack]] });
  };
  const alloc = (size: number, stream: number) => {
    // Addresses come back at the same rounded size, as a caching allocator reuses blocks.
    const key = Math.ceil(size / (2 * MiB));
    const reuse = freeAddresses.get(key);
    const addr = reuse !== undefined && reuse.length > 0 ? reuse.pop()! : bump;
    if (addr === bump) bump += key * 2 * MiB;
    live.push({ addr, size, stream, key });
    liveBytes += size;
    emit('alloc', addr, size, stream, Math.floor(rnd() * stacks.length));
  };
  const freeAt = (i: number) => {
    const b = live[i];
    live[i] = live[live.length - 1];
    live.pop();
    liveBytes -= b.size;
    const stack = Math.floor(rnd() * stacks.length);
    emit('free_requested', b.addr, b.size, b.stream, stack);
    emit('free_completed', b.addr, b.size, b.stream, stack);
    let list = freeAddresses.get(b.key);
    if (list === undefined) freeAddresses.set(b.key, (list = []));
    list.push(b.addr);
  };

  // Weights: allocated once, never freed.
  for (let i = 0; i < 3000 && liveBytes < 16 * GiB; i++) alloc(Math.round(logUniform(MiB, 256 * MiB)), 0);
  const persistent = live.length;
  let scale = 1;
  while (trace.length < events) {
    if (trace.length % 20_000 < 3) scale = 0.25 + rnd() * 1.75;
    const transient = live.length - persistent;
    const wantFree = transient > 0 && (liveBytes > budget || rnd() < 0.48);
    if (!wantFree || trace.length + 2 > events) {
      if (trace.length + 1 > events) break;
      const r = rnd();
      const size =
        r < 0.6
          ? logUniform(512, MiB)
          : r < 0.9
            ? logUniform(MiB, 64 * MiB) * scale
            : logUniform(64 * MiB, GiB) * scale;
      const u = rnd();
      alloc(Math.max(1, Math.round(size)), streams[u < 0.8 ? 0 : u < 0.9 ? 1 : 2]);
    } else {
      // Mostly the newest block (reverse order), a third of the time any live one.
      const i = rnd() < 0.66 ? live.length - 1 : persistent + Math.floor(rnd() * transient);
      freeAt(i);
    }
  }
  return {
    segments: [],
    device_traces: [trace],
    allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: null, max_split_size: -1, expandable_segments: false },
    external_annotations: [],
  };
}

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

function child(file: string, mode: 'parse' | 'replay'): Measurement {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--measure', file, mode], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`the ${mode} run failed (exit ${r.status}): ${r.stderr.trim()}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Measurement;
}

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
      script: 'bench/replay.ts',
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
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
    if (options.write === true)
      writeFileSync(
        new URL('../../bench/results/replay.json', import.meta.url),
        `${JSON.stringify(result, null, 2)}\n`,
      );
    return met;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  if (args[0] === '--measure') measure(args[1], args[2] as 'parse' | 'replay');
  else {
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
