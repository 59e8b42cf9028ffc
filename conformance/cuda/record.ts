/**
 * Runs the CUDA conformance cases and records every answer.
 *
 *   node dist/conformance/cuda/record.js out.json     # every case, against the real driver (libcuda)
 *   node dist/conformance/cuda/record.js out.json --only a,b --merge previous.json
 *                                                     # cases a and b anew, the rest from previous.json
 *   node dist/conformance/cuda/record.js out.json --combine a.json b.json
 *                                                     # no recording: each case from the newer run of the two
 *
 * `runCases(cu, env)` runs them in this process against any CudaApi (the
 * simulator's createCuda(), say). The CLI runs them against the real driver
 * in child processes: a case may leave the CUDA context unusable (a sticky
 * error) or end the process, so the child checks the context after each case
 * and the parent starts a new child for the cases after it (see Note [Cases
 * that may poison the context] in cases.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRawCuda, loadCudaDriver, type RawCuda } from '../../src/backends/cuda/driver.js';
import { createCuda } from '../../src/entry/processes.js';
import {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM,
  CU_MEM_ALLOCATION_TYPE_PINNED,
  CU_MEM_LOCATION_TYPE_DEVICE,
  CUDA_ERROR_LAUNCH_FAILED,
  type CudaApi,
} from './api.js';
import { type CaseEnv, type CaseRecord, caseNames, getCase } from './cases.js';

// The raw driver object must fit the structural interface the cases use.
const _rawFitsApi = (r: RawCuda): CudaApi => r;
void _rawFitsApi;

export interface Recording {
  cases: { [name: string]: CaseRecord };
}

export interface DriverInfo {
  driverVersion: number;
  deviceName: string;
  deviceCount: number;
  totalMem: number;
  granularityMinimum: number;
  granularityRecommended: number;
}

/** cuInit, the primary context of `dev` made current, and what the cases need to know. */
export function prepareEnv(cu: CudaApi, dev = 0): { env: CaseEnv; info: DriverInfo } {
  const must = (what: string, code: number) => {
    if (code !== 0) throw new Error(`${what} failed with CUresult ${code}`);
  };
  must('cuInit', cu.cuInit(0));
  const version = { value: 0 };
  must('cuDriverGetVersion', cu.cuDriverGetVersion(version));
  const count = { value: 0 };
  must('cuDeviceGetCount', cu.cuDeviceGetCount(count));
  const device = { value: 0 };
  must('cuDeviceGet', cu.cuDeviceGet(device, dev));
  const ctx = { value: 0n };
  must('cuDevicePrimaryCtxRetain', cu.cuDevicePrimaryCtxRetain(ctx, device.value));
  must('cuCtxSetCurrent', cu.cuCtxSetCurrent(ctx.value));
  const name = { value: '' };
  must('cuDeviceGetName', cu.cuDeviceGetName(name, 256, device.value));
  const total = { value: 0 };
  must('cuDeviceTotalMem', cu.cuDeviceTotalMem(total, device.value));
  const prop = {
    type: CU_MEM_ALLOCATION_TYPE_PINNED,
    requestedHandleTypes: 0,
    location: { type: CU_MEM_LOCATION_TYPE_DEVICE, id: device.value },
  };
  const min = { value: 0 };
  must('granularity', cu.cuMemGetAllocationGranularity(min, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const rec = { value: 0 };
  must('granularity', cu.cuMemGetAllocationGranularity(rec, prop, 1));
  return {
    env: { dev: device.value, deviceCount: count.value, gran: min.value, totalMem: total.value },
    info: {
      driverVersion: version.value,
      deviceName: name.value,
      deviceCount: count.value,
      totalMem: total.value,
      granularityMinimum: min.value,
      granularityRecommended: rec.value,
    },
  };
}

/** Run one case, turning a JS exception into a record. */
export function runCase(cu: CudaApi, env: CaseEnv, name: string): CaseRecord {
  try {
    return getCase(name).run(cu, env);
  } catch (e) {
    return { steps: [], threw: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Run one case against a fresh simulated process (vmmkit's CUDA flavour on
 * the simulator), closing exported fds in that process; also returns what
 * the case left alive there (each case undoes what it made).
 */
export function runSimulatedCase(name: string): { record: CaseRecord; leftover: string | undefined } {
  const cu = createCuda({ report: () => {} });
  try {
    const { env } = prepareEnv(cu);
    env.closeFd = (fd) => {
      try {
        cu.machine!.process(cu).closeFd(fd);
      } catch {
        // Already closed: nothing to undo, as close(2) on the real driver's fd.
      }
    };
    const record = runCase(cu, env, name);
    // As the recorder's worker does after each case: what the context answers now.
    const after = cu.cuCtxSynchronize();
    if (after !== 0) record.contextAfter = after;
    const s = cu.runtime.stats();
    // A faulted device gives nothing back: its destroys and frees answer 719 (Note [Faulted devices]).
    const faulted = after === CUDA_ERROR_LAUNCH_FAILED;
    const leftover =
      !faulted && s.reservations + s.mappings + s.handles + s.streams !== 0 ? JSON.stringify(s) : undefined;
    return { record, leftover };
  } finally {
    cu.dispose();
  }
}

/** Run every case in this process (for the simulator, or any CudaApi that cannot be poisoned). */
export function runCases(cu: CudaApi, env: CaseEnv, names: readonly string[] = caseNames()): Recording {
  const cases: Recording['cases'] = {};
  for (const name of names) cases[name] = runCase(cu, env, name);
  return { cases };
}

// ------------------------------------------------------------------ CLI

/** The GPU as nvidia-smi names it (the driver's release string is not in the CUDA API); null without nvidia-smi. */
export interface GpuInfo {
  name: string;
  driverVersion: string;
  memoryTotal: string;
  cudaDriverVersion: number | null;
}

/** One recording session: when, on what, and what it had to restart. */
export interface RunInfo {
  recordedAt: string;
  gpu: GpuInfo | null;
  driver: DriverInfo | null;
  restarts: { at: string; reason: string }[];
  /** How many cases this run recorded. */
  cases: number;
}

/**
 * What record.js writes. The top-level recordedAt, gpu, driver and restarts
 * describe the run that wrote the file; `runs` lists every run whose cases the
 * file holds and `caseRun` names each case's run (an index into `runs`): one
 * run, unless the file was written with --merge (Note [Merged transcripts]).
 */
export interface Transcript {
  recorder: string;
  recordedAt: string;
  gpu: GpuInfo | null;
  driver: DriverInfo | null;
  caseCount: number;
  restarts: RunInfo['restarts'];
  runs: RunInfo[];
  caseRun: { [name: string]: number };
  cases: { [name: string]: CaseRecord };
}

const RECORDER = 'node dist/conformance/cuda/record.js (raw driver through koffi, createRawCuda)';

interface Line {
  start?: number;
  index?: number;
  name?: string;
  record?: CaseRecord;
  info?: DriverInfo;
}

/** Child: run `names` from `first` on, one JSON line per event; exit 3 when the context is gone. */
function worker(first: number, logPath: string, names: readonly string[]): never {
  const cu = createRawCuda(loadCudaDriver());
  const { env, info } = prepareEnv(cu);
  env.closeFd = (fd) => {
    try {
      closeSync(fd);
    } catch {
      // Already closed (or not an fd): nothing to undo.
    }
  };
  appendFileSync(logPath, `${JSON.stringify({ info } satisfies Line)}\n`);
  for (let i = first; i < names.length; i++) {
    const name = names[i]!;
    appendFileSync(logPath, `${JSON.stringify({ start: i, name } satisfies Line)}\n`);
    const record = runCase(cu, env, name);
    const after = cu.cuCtxSynchronize();
    if (after !== 0) record.contextAfter = after;
    appendFileSync(logPath, `${JSON.stringify({ index: i, name, record } satisfies Line)}\n`);
    // A fresh process after a case that may poison, even one that left a working context (Note [Cases that may poison the context]).
    if (after !== 0 || getCase(name).mayPoison) process.exit(3);
  }
  process.exit(0);
}

export function nvidiaSmi(cudaDriverVersion: number | null): GpuInfo | null {
  try {
    const out = execFileSync(
      'nvidia-smi',
      ['--query-gpu=name,driver_version,memory.total', '--format=csv,noheader'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const [name, driverVersion, memoryTotal] = out
      .split('\n')[0]!
      .split(',')
      .map((s) => s.trim());
    if (!name || !driverVersion || !memoryTotal) return null;
    return { name, driverVersion, memoryTotal, cudaDriverVersion };
  } catch {
    return null;
  }
}

/** Run `names` against the real driver, a fresh child after each case that ends its process or context. */
function recordRun(names: readonly string[]): { cases: Recording['cases']; run: RunInfo; seconds: number } {
  const cases: Recording['cases'] = {};
  let info: DriverInfo | undefined;
  const restarts: RunInfo['restarts'] = [];
  const logPath = join(tmpdir(), `vmmkit-record-${process.pid}.jsonl`);
  const self = fileURLToPath(import.meta.url);
  const started = Date.now();
  let next = 0;
  while (next < names.length) {
    writeFileSync(logPath, '');
    const child = spawnSync(process.execPath, [self, '--worker', String(next), logPath, names.join(',')], {
      stdio: ['ignore', 'inherit', 'inherit'],
      timeout: 240_000,
    });
    let inFlight = -1;
    for (const raw of readFileSync(logPath, 'utf8').split('\n')) {
      if (!raw) continue;
      const line = JSON.parse(raw) as Line;
      if (line.info) info ??= line.info;
      if (line.start !== undefined) inFlight = line.start;
      if (line.record && line.name && line.index !== undefined) {
        cases[line.name] = line.record;
        inFlight = -1;
        next = line.index + 1;
      }
    }
    if (child.status === 0 && inFlight < 0) break;
    const reason = child.signal ? `signal ${child.signal}` : `exit ${child.status}`;
    if (inFlight >= 0) {
      cases[names[inFlight]!] = { steps: [], crashed: reason };
      next = inFlight + 1;
    }
    if (inFlight < 0 && child.status !== 3) {
      console.error(`worker failed before any case (${reason})`);
      if (next === 0) process.exit(1);
    }
    restarts.push({ at: names[next - 1] ?? '(start)', reason });
  }
  rmSync(logPath, { force: true });
  const run: RunInfo = {
    recordedAt: new Date().toISOString(),
    gpu: nvidiaSmi(info?.driverVersion ?? null),
    driver: info ?? null,
    restarts,
    cases: Object.keys(cases).length,
  };
  return { cases, run, seconds: (Date.now() - started) / 1000 };
}

/*
 * Note [Merged transcripts]
 * A transcript is normally one run of every case. When only some cases are
 * re-recorded (new ones, say: `--only a,b --merge previous.json`), the file
 * keeps the previous run's record of every other case, and each case says
 * which run its record came from (`caseRun`, an index into `runs`: date,
 * GPU and driver of that run). Runs no case points to any more are dropped;
 * cases that no longer exist in cases.ts are dropped and named on stderr.
 */
export function mergeTranscripts(
  previous: Pick<Transcript, 'runs' | 'caseRun' | 'cases'>,
  run: RunInfo,
  cases: Recording['cases'],
  names: readonly string[],
): Pick<Transcript, 'runs' | 'caseRun' | 'cases'> {
  const runs: RunInfo[] = [];
  const renumber = new Map<number, number>();
  const caseRun: Transcript['caseRun'] = {};
  const merged: Recording['cases'] = {};
  const dropped = Object.keys(previous.cases).filter((n) => !names.includes(n));
  if (dropped.length > 0)
    console.error(`merge: dropped ${dropped.length} case(s) no longer in cases.ts: ${dropped.join(', ')}`);
  for (const name of names) {
    if (cases[name]) continue;
    const old = previous.cases[name];
    const from = previous.caseRun[name];
    if (old === undefined || from === undefined || previous.runs[from] === undefined) continue;
    if (!renumber.has(from)) {
      renumber.set(from, runs.length);
      runs.push(previous.runs[from]!);
    }
    merged[name] = old;
    caseRun[name] = renumber.get(from)!;
  }
  const current = runs.length;
  runs.push(run);
  for (const name of names) {
    if (!cases[name]) continue;
    merged[name] = cases[name]!;
    caseRun[name] = current;
  }
  // In cases.ts order, as a single run writes them.
  const ordered: Recording['cases'] = {};
  const orderedRuns: Transcript['caseRun'] = {};
  for (const n of names) {
    if (merged[n] === undefined) continue;
    ordered[n] = merged[n]!;
    orderedRuns[n] = caseRun[n]!;
  }
  return { runs, caseRun: orderedRuns, cases: ordered };
}

/**
 * Two transcripts recorded from the same earlier one by separate --merge
 * runs (two sessions adding cases at once), joined without recording: each
 * case keeps the record of the newer run that holds it, and still names that
 * run (Note [Merged transcripts]). Runs are told apart by their recordedAt.
 */
export function combineTranscripts(
  a: Pick<Transcript, 'runs' | 'caseRun' | 'cases'>,
  b: Pick<Transcript, 'runs' | 'caseRun' | 'cases'>,
  names: readonly string[],
): Pick<Transcript, 'runs' | 'caseRun' | 'cases'> {
  const runs: RunInfo[] = [];
  const index = new Map<string, number>();
  const cases: Recording['cases'] = {};
  const caseRun: Transcript['caseRun'] = {};
  for (const name of names) {
    const fromA = a.cases[name] === undefined ? undefined : a.runs[a.caseRun[name]!];
    const fromB = b.cases[name] === undefined ? undefined : b.runs[b.caseRun[name]!];
    const useB = fromB !== undefined && (fromA === undefined || fromB.recordedAt > fromA.recordedAt);
    const run = useB ? fromB : fromA;
    if (run === undefined) continue;
    if (!index.has(run.recordedAt)) {
      index.set(run.recordedAt, runs.length);
      runs.push(run);
    }
    cases[name] = (useB ? b : a).cases[name]!;
    caseRun[name] = index.get(run.recordedAt)!;
  }
  // Runs in the order they were recorded, as --merge keeps them.
  const order = runs.map((_, i) => i).sort((x, y) => (runs[x]!.recordedAt < runs[y]!.recordedAt ? -1 : 1));
  const renumber = new Map(order.map((old, i) => [old, i]));
  for (const name of Object.keys(caseRun)) caseRun[name] = renumber.get(caseRun[name]!)!;
  return { runs: order.map((i) => runs[i]!), caseRun, cases };
}

function readTranscript(path: string): Transcript {
  const t = JSON.parse(readFileSync(path, 'utf8')) as Partial<Transcript>;
  if (!t.cases || !Array.isArray(t.runs) || !t.caseRun)
    throw new Error(
      `${path} names no run per case (runs, caseRun): record every case again instead of merging`,
    );
  return t as Transcript;
}

function main(argv: string[]): void {
  if (argv[2] === '--worker') worker(Number(argv[3]), argv[4]!, argv[5]!.split(','));
  const args = argv.slice(2);
  const flag = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const outPath = args[0];
  const combine = args.indexOf('--combine');
  if (outPath && combine > 0) {
    const [aPath, bPath] = [args[combine + 1], args[combine + 2]];
    if (!aPath || !bPath) {
      console.error('usage: record.js OUT.json --combine A.json B.json');
      process.exit(2);
    }
    const all = caseNames();
    const a = readTranscript(aPath);
    const b = readTranscript(bPath);
    const body = combineTranscripts(a, b, all);
    const latest = body.runs[body.runs.length - 1]!;
    const result: Transcript = {
      recorder: RECORDER,
      recordedAt: latest.recordedAt,
      gpu: latest.gpu,
      driver: latest.driver,
      caseCount: all.length,
      restarts: latest.restarts,
      ...body,
    };
    writeFileSync(outPath, `${JSON.stringify(result, null, 1)}\n`);
    console.log(
      `combined ${aPath} and ${bPath}: ${Object.keys(result.cases).length}/${all.length} cases in ${outPath} from ${result.runs.length} run(s)`,
    );
    return;
  }
  const mergePath = flag('--merge');
  const only = flag('--only')?.split(',');
  if (!outPath || outPath.startsWith('--') || (args.includes('--merge') && !mergePath)) {
    console.error(
      'usage: record.js OUT.json [--only CASE,CASE...] [--merge PREVIOUS.json] | OUT.json --combine A.json B.json',
    );
    process.exit(2);
  }
  const all = caseNames();
  const unknown = (only ?? []).filter((n) => !all.includes(n));
  if (unknown.length > 0) {
    console.error(`no such case(s): ${unknown.join(', ')}`);
    process.exit(2);
  }
  // Read the previous file before the run, so a bad one fails before minutes of recording.
  const previous = mergePath ? readTranscript(mergePath) : undefined;
  // Fail early, in this process, with the loader's clear message when there is no driver.
  loadCudaDriver();
  const names = only ? all.filter((n) => only.includes(n)) : all;
  const { cases, run, seconds } = recordRun(names);
  const body = mergeTranscripts(previous ?? { runs: [], caseRun: {}, cases: {} }, run, cases, all);
  const result: Transcript = {
    recorder: RECORDER,
    recordedAt: run.recordedAt,
    gpu: run.gpu,
    driver: run.driver,
    caseCount: all.length,
    restarts: run.restarts,
    ...body,
  };
  writeFileSync(outPath, `${JSON.stringify(result, null, 1)}\n`);
  const poisoned = Object.entries(cases).filter(([, r]) => r.contextAfter !== undefined || r.crashed);
  console.log(
    `recorded ${Object.keys(cases).length}/${names.length} cases in ${seconds.toFixed(1)} s ` +
      `on ${run.gpu?.name ?? run.driver?.deviceName ?? '?'} (driver ${run.gpu?.driverVersion ?? '?'}, ` +
      `${run.driver?.driverVersion ?? '?'}); ${run.restarts.length} restart(s); ` +
      `${Object.keys(result.cases).length}/${all.length} cases in ${outPath} from ${result.runs.length} run(s)`,
  );
  for (const [n, r] of poisoned) console.log(`  ${n}: context ${r.contextAfter ?? ''} ${r.crashed ?? ''}`);
  for (const [n, r] of Object.entries(cases)) if (r.threw) console.log(`  ${n}: threw ${r.threw}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv);
