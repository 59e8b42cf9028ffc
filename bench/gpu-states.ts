/**
 * What the GPU host's two process states follow (Note [Process states] in
 * bench/gpu-paired.ts), with no JavaScript involved: bench/native/
 * state_probe.c, a fresh C process that times the 2 MiB cycle and a loop of
 * pure arithmetic, run pinned to each CPU in turn (taskset) and unpinned.
 * A state that follows the CPU would show one state per pinned CPU; one
 * that follows the process shows both on the same CPU. The arithmetic
 * loop tells whether the CPU itself runs slower in the slow state; the two
 * chases of dependent loads, whether memory does (a load from far past the
 * caches) and what a driver call leaves a caller to fetch again (64 KiB
 * read just before a cycle, read again after it).
 *
 *   gcc -O2 bench/native/state_probe.c -o /tmp/state_probe -ldl
 *   node dist/bench/gpu-states.js --probe /tmp/state_probe --native /tmp/libvmm_bench.so --out DIR [--rounds 2] [--free 16]
 *
 * Writes DIR/h200-process-states.json.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { median, optionOf, processState, runHeader, STATE_GAP, stateSplit } from './gpu-run.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => optionOf(args, name);
const probe = opt('--probe');
const native = opt('--native');
if (probe === undefined || native === undefined) throw new Error('--probe PATH and --native LIB are needed');
const rounds = Number(opt('--rounds') ?? 2);
const free = Number(opt('--free') ?? 16);

interface Draw {
  pinned: number | null;
  cpu_start: number;
  cpu_end: number;
  native_p50_us: number;
  arithmetic_p50_us: number;
  memory_load_ns: number;
  after_call_load_ns: number;
}

function draw(pinned: number | null): Draw {
  const command = pinned === null ? [probe!, native!] : ['taskset', '-c', String(pinned), probe!, native!];
  const r = spawnSync(command[0], command.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command.join(' ')} failed (exit ${r.status}): ${r.stderr.trim()}`);
  return { pinned, ...(JSON.parse(r.stdout.trim()) as Omit<Draw, 'pinned'>) };
}

const hasTaskset = spawnSync('taskset', ['--version']).status === 0;
const draws: Draw[] = [];
for (let r = 0; r < rounds && hasTaskset; r++)
  for (let cpu = 0; cpu < cpus().length; cpu++) draws.push(draw(cpu));
for (let i = 0; i < free; i++) draws.push(draw(null));

const split = stateSplit(draws.map((d) => d.native_p50_us));
const rows = draws.map((d) => ({
  ...d,
  state: split === null ? 'one' : processState(d.native_p50_us, split),
}));
const summary = (state: string) => {
  const inState = rows.filter((d) => d.state === state);
  const p50 = (of: (d: Draw) => number) => (inState.length ? median(inState.map(of)) : null);
  return {
    draws: inState.length,
    native_p50_us: p50((d) => d.native_p50_us),
    arithmetic_p50_us: p50((d) => d.arithmetic_p50_us),
    memory_load_ns: p50((d) => d.memory_load_ns),
    after_call_load_ns: p50((d) => d.after_call_load_ns),
  };
};
const pinnedCpus = [...new Set(rows.filter((d) => d.pinned !== null).map((d) => d.pinned))];
const bothStates = pinnedCpus.filter(
  (cpu) => new Set(rows.filter((d) => d.pinned === cpu).map((d) => d.state)).size === 2,
);
const result = {
  ...runHeader('gpu-states', args),
  state_gap: STATE_GAP,
  split_us: split,
  fast: summary('fast'),
  slow: summary('slow'),
  pinned_cpus: pinnedCpus.length,
  pinned_cpus_with_both_states: bothStates,
  draws: rows,
  method:
    'Each row is a fresh C process (bench/native/state_probe.c): 3,000 warm-up rounds, then 3,000 rounds of one 2 MiB cycle from C, one loop of 20,000 dependent multiply-adds, and 1,024 dependent loads through 256 MiB of random lines, each timed alone, with 64 KiB of random lines chased whole just before each cycle and again right after it; the medians of each (the chases per load: memory_load_ns, after_call_load_ns). pinned: the CPU taskset bound it to (null: unpinned). state: fast below split_us, slow above it; split_us is the middle of the widest gap between the sorted native medians, when that gap is a ratio of state_gap or more (else every draw is in one state).',
};
const outDir = opt('--out') ?? process.env.OUT ?? '.';
writeFileSync(join(outDir, 'h200-process-states.json'), `${JSON.stringify(result, null, 1)}\n`);
console.log(
  JSON.stringify({ fast: result.fast, slow: result.slow, pinned_cpus_with_both_states: bothStates }),
);
