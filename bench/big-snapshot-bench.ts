/**
 * The big-snapshot benchmark: a 1 GiB `_dump_snapshot`-shaped pickle with
 * stacks (test/support/big-snapshot.ts, made once and kept in the temp folder under
 * a name from its source's bytes, the size and the generator's version),
 * then, each in a fresh Node process so that its peak RSS is its own:
 *
 *   parse            loadSnapshotFile (the streaming reader the CLI calls)
 *   replay native    parse, plan, and replay through pytorch-native
 *   replay all       parse, plan, and replay through every default allocator
 *
 * Target: parse + replay (one allocator) within 30 s and 2 GiB peak RSS, on
 * the 2-core machine this was written for. Writes bench/results/big-snapshot.json
 * only when asked (--write).
 *
 *   node dist/bench/big-snapshot-bench.js [--size 1GiB] [--source SNAPSHOT] [--write]
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ALLOCATOR_REGISTRY, DEFAULT_ALLOCATORS } from '../src/replay/engine/allocators.js';
import { replay } from '../src/replay/engine/replay.js';
import { planReplay } from '../src/replay/engine/trace-plan.js';
import { loadSnapshotFile } from '../src/replay/read/load.js';
import { writeBigSnapshot } from '../test/support/big-snapshot.js';
import { defaultSource, parseSize } from './big-snapshot.js';
import { measureInChild } from './measure-in-child.js';
import { runFacts, writeResult } from './result-file.js';

const MiB = 1024 * 1024;
/** Bump when the generator writes something else for the same source and size. */
const GENERATOR_VERSION = 1;
const TARGET = { ms: 30_000, maxRssMiB: 2048 };

type Mode = 'parse' | 'replay-native' | 'replay-all';

interface Measurement {
  mode: Mode;
  ms: number;
  parseMs: number;
  maxRssMiB: number;
  events: number;
  frames: number;
  stacks: number;
  allocators?: {
    name: string;
    replayMs: number;
    peakReservedBytes: number;
    ratio: number | null;
    error: string | null;
  }[];
}

/** In the child: time one mode on the file and print a Measurement. */
async function measure(file: string, mode: Mode): Promise<void> {
  const t0 = performance.now();
  const snapshot = await loadSnapshotFile(file);
  const parseMs = performance.now() - t0;
  const out: Measurement = {
    mode,
    ms: parseMs,
    parseMs,
    maxRssMiB: 0,
    events: snapshot.traces.reduce((s, t) => s + t.length, 0),
    frames: snapshot.frames.length,
    stacks: snapshot.stacks.length,
  };
  if (mode !== 'parse') {
    const allocators =
      mode === 'replay-all'
        ? DEFAULT_ALLOCATORS
        : ALLOCATOR_REGISTRY.filter((a) => a.name === 'pytorch-native');
    const plan = planReplay(snapshot);
    const r = replay(snapshot, { allocators, plan, keepEvents: false });
    out.ms = performance.now() - t0;
    out.allocators = r.allocators.map((a) => ({
      name: a.name,
      replayMs: Math.round(a.replayMs),
      peakReservedBytes: a.peakReservedBytes,
      ratio: a.ratio,
      error: a.error ?? null,
    }));
  }
  out.ms = Math.round(out.ms);
  out.parseMs = Math.round(out.parseMs);
  out.maxRssMiB = Math.round(process.resourceUsage().maxRSS / 1024);
  console.log(JSON.stringify(out));
}

const child = (file: string, mode: Mode) => measureInChild<Measurement>(import.meta.url, [file, mode], mode);

/** The generated file for this source and size, made if the temp folder does not have it yet. */
function bigSnapshot(source: string, bytes: number): { file: string; madeMs: number | null; info: unknown } {
  const key = createHash('sha256')
    .update(readFileSync(source))
    .update(`${bytes} ${GENERATOR_VERSION}`)
    .digest('hex')
    .slice(0, 16);
  const dir = join(tmpdir(), 'vmmkit-big-snapshot');
  const file = join(dir, `${key}.pickle`);
  const infoFile = `${file}.json`;
  if (existsSync(file) && existsSync(infoFile)) {
    return { file, madeMs: null, info: JSON.parse(readFileSync(infoFile, 'utf8')) };
  }
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const partial = `${file}.${process.pid}.partial`;
  const info = writeBigSnapshot({ source, bytes, out: partial });
  renameSync(partial, file);
  writeFileSync(infoFile, JSON.stringify(info));
  return { file, madeMs: performance.now() - t0, info };
}

export function runBigSnapshotBench(
  options: { size?: number; source?: string; write?: boolean } = {},
): boolean {
  const source = options.source ?? defaultSource();
  const { file, madeMs, info } = bigSnapshot(source, options.size ?? 1024 * MiB);
  const parse = child(file, 'parse');
  const native = child(file, 'replay-native');
  const all = child(file, 'replay-all');
  const ok = (m: Measurement) =>
    m.ms <= TARGET.ms &&
    m.maxRssMiB <= TARGET.maxRssMiB &&
    (m.allocators ?? []).every((a) => a.error === null);
  const met = ok(native);
  const size = statSync(file).size;
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log(
    `big snapshot bench: ${(size / MiB).toFixed(0)} MiB pickle with stacks, ${parse.events.toLocaleString('en-US')} events, ${parse.frames} frames, ${parse.stacks} stacks (${madeMs === null ? 'cached' : `made in ${s(madeMs)}`}; from ${source})`,
  );
  console.log(`  parse:                              ${s(parse.ms)}, peak RSS ${parse.maxRssMiB} MiB`);
  console.log(
    `  parse + replay (pytorch-native):    ${s(native.ms)}, peak RSS ${native.maxRssMiB} MiB  (target <= ${TARGET.ms / 1000} s, <= ${TARGET.maxRssMiB} MiB: ${met ? 'met' : 'NOT MET'})`,
  );
  console.log(
    `  parse + replay (${all.allocators!.length} allocators):       ${s(all.ms)}, peak RSS ${all.maxRssMiB} MiB${ok(all) ? '' : '  (past the target)'}`,
  );
  for (const a of all.allocators!) {
    console.log(
      `    ${a.name.padEnd(20)} ${s(a.replayMs)}  ratio ${a.ratio?.toFixed(3) ?? '-'}${a.error ? `  FAILED: ${a.error}` : ''}`,
    );
  }
  if (options.write) {
    const repo = fileURLToPath(new URL('../../', import.meta.url));
    const result = {
      ...runFacts('bench/big-snapshot-bench.ts'),
      // Other work on the machine adds wall time: its load when the runs ended.
      loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
      source: source.replace(repo, ''),
      generated: { ...(info as object), source: source.replace(repo, '') },
      pickleBytes: size,
      parse,
      replayNative: native,
      replayAll: all,
      target: TARGET,
      met,
    };
    writeResult('big-snapshot', result);
  }
  return met;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  if (args[0] === '--measure') await measure(args[1], args[2] as Mode);
  else {
    const at = (name: string) => {
      const i = args.indexOf(name);
      return i >= 0 ? args[i + 1] : undefined;
    };
    const size = at('--size');
    const met = runBigSnapshotBench({
      size: size === undefined ? undefined : parseSize(size),
      source: at('--source'),
      write: args.includes('--write'),
    });
    if (!met) process.exitCode = 1;
  }
}
