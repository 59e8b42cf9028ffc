/**
 * The proof on a GPU machine, in one command:
 *
 *   node dist/conformance/gpu/prove.js [--fake] [--out DIR] [--transcript DRIVER.json]
 *
 * 1. the backend contract (conformance/backend/contract.ts) against CudaBackend;
 * 2. every CUDA conformance case (conformance/cuda/cases.ts) through vmmkit's
 *    CUDA flavour on the CUDA backend (createCuda({ backend: 'cuda' })),
 *    compared with the raw driver's transcript
 *    (conformance/results/h200-driver.json) and with the simulated flavour;
 * 3. the HIP and ACL flavours' sequences (sequences.ts) over the CUDA backend
 *    and on the simulator;
 * 4. with two or more GPUs, the two-GPU sequence.
 *
 * Writes DIR/prove.json (summary, contract, sequences) and
 * DIR/h200-vmmkit-cases.json (every case's record). The cases run in child
 * processes, restarted after a crash, as record.ts does; the start-up heap's
 * each first in a fresh one (Note [Start-up heap cases in a fresh process]). `--fake` runs every
 * code path on a simulated stand-in for libcuda (fake-driver.ts), for
 * debugging where there is no GPU.
 *
 * Everything on the GPU in one command (this script, then the HIP and ACL
 * conformance tables under vitest with VMMKIT_TEST_BACKEND=cuda): see
 * conformance/gpu/run-all.sh. Here: `conformance/gpu/run-all.sh --prepare`;
 * there, carry [".device", "dist", ".testdeps"] and run
 * `source .device/setup.sh && bash conformance/gpu/run-all.sh`.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CudaBackend } from '../../src/backends/cuda/backend.js';
import {
  type CudaDriver,
  createRawCuda,
  loadCudaDriver,
  type RawCuda,
} from '../../src/backends/cuda/driver.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import { runBackendContract } from '../backend/contract.js';
import { wantsFreshProcess } from '../cuda/cases/startup-heap.js';
import { type CaseRecord, caseNames } from '../cuda/cases.js';
import { departuresOverTheDriver, differences, listedReason } from '../cuda/known-divergences.js';
import { prepareEnv, runCase, runSimulatedCase } from '../cuda/record.js';
import { createFakeDriver } from './fake-driver.js';
import { aclSequence, hipSequence, type SeqResult, twoGpuSequence } from './sequences.js';

const args = process.argv.slice(2);
const fake = args.includes('--fake');
const outIndex = args.indexOf('--out');
const outDir = outIndex >= 0 ? args[outIndex + 1]! : (process.env.OUT ?? 'prove-out');
// The raw driver's transcript to compare with: the committed one, or one run-all.sh just merged new cases into.
const transcriptIndex = args.indexOf('--transcript');
const transcriptPath =
  transcriptIndex >= 0
    ? args[transcriptIndex + 1]!
    : fileURLToPath(new URL('../../../conformance/results/h200-driver.json', import.meta.url));

function driverFor(devices = 1): CudaDriver {
  return fake
    ? createFakeDriver({ devices: Array.from({ length: devices }, () => 'H200' as const) })
    : loadCudaDriver();
}

// ------------------------------------------------------------------ cases, in a child

export interface CaseLine {
  start?: number;
  index?: number;
  name?: string;
  record?: CaseRecord;
  leaks?: string;
  reports?: string[];
}

/**
 * One case through vmmkit's CUDA flavour on the CUDA backend over `driver`, in a process whose device 0
 * primary context `raw` keeps retained: the case's record (the context after it as the raw driver's
 * cuCtxSynchronize answers), what it left alive in core or the backend, and what the flavour reported.
 */
export function backendCase(
  driver: CudaDriver,
  raw: RawCuda,
  name: string,
): CaseLine & { record: CaseRecord } {
  const reports: string[] = [];
  let record: CaseRecord;
  let leaks: string | undefined;
  const cu = createCuda({
    backend: 'cuda',
    cuda: { driver },
    report: (m, e) => reports.push(`${m}: ${e instanceof Error ? e.message : String(e ?? '')}`),
  });
  try {
    const { env } = prepareEnv(cu);
    env.closeFd = (fd) => {
      try {
        closeSync(fd);
      } catch {
        // Already closed.
      }
    };
    record = runCase(cu, env, name);
    const s = cu.runtime.stats();
    const b = (cu.runtime.backend as CudaBackend).stats();
    if (
      s.reservations +
      s.mappings +
      s.handles +
      s.streams +
      b.reservations +
      b.mappings +
      b.handles +
      b.streams
    )
      leaks = JSON.stringify({ core: s, backend: b });
  } catch (e) {
    record = { steps: [], threw: e instanceof Error ? e.message : String(e) };
  } finally {
    cu.dispose();
  }
  const after = raw.cuCtxSynchronize();
  if (after !== 0) record.contextAfter = after;
  const line: CaseLine & { record: CaseRecord } = { name, record };
  if (leaks) line.leaks = leaks;
  if (reports.length) line.reports = reports;
  return line;
}

/** A raw driver over `driver` with device 0's primary context retained, as prove's workers keep it. */
export function retainedPrimary(driver: CudaDriver): RawCuda {
  const raw = createRawCuda(driver);
  raw.cuInit(0);
  raw.cuDevicePrimaryCtxRetain({ value: 0n }, 0);
  return raw;
}

/** A worker's exit status when the next case is to run in a fresh process, or the last one ran in one. */
const FRESH_PROCESS = 4;

function casesWorker(first: number, logPath: string): never {
  const driver = driverFor();
  // Keep device 0's primary context alive across the cases, so each flavour's backend retains it cheaply.
  const raw = retainedPrimary(driver);
  const names = caseNames();
  for (let i = first; i < names.length; i++) {
    const name = names[i]!;
    // A case that runs first in a fresh process (Note [Start-up heap cases in a fresh process]) gets one.
    const fresh = wantsFreshProcess(name);
    if (fresh && i !== first) process.exit(FRESH_PROCESS);
    appendFileSync(logPath, `${JSON.stringify({ start: i, name } satisfies CaseLine)}\n`);
    const line = { index: i, ...backendCase(driver, raw, name) };
    appendFileSync(logPath, `${JSON.stringify(line)}\n`);
    if (line.record.contextAfter !== undefined) process.exit(3);
    if (fresh) process.exit(FRESH_PROCESS);
  }
  process.exit(0);
}

function runCasesInChildren(): {
  records: Record<string, CaseRecord>;
  restarts: string[];
  leaks: Record<string, string>;
  reports: Record<string, string[]>;
} {
  const names = caseNames();
  const records: Record<string, CaseRecord> = {};
  const leaks: Record<string, string> = {};
  const reports: Record<string, string[]> = {};
  const restarts: string[] = [];
  const logPath = join(tmpdir(), `vmmkit-prove-${process.pid}.jsonl`);
  const self = fileURLToPath(import.meta.url);
  let next = 0;
  while (next < names.length) {
    writeFileSync(logPath, '');
    const child = spawnSync(
      process.execPath,
      [self, '--cases-worker', String(next), logPath, ...(fake ? ['--fake'] : [])],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
        timeout: 300_000,
      },
    );
    let inFlight = -1;
    for (const raw of readFileSync(logPath, 'utf8').split('\n')) {
      if (!raw) continue;
      const line = JSON.parse(raw) as CaseLine;
      if (line.start !== undefined) inFlight = line.start;
      if (line.record && line.name && line.index !== undefined) {
        records[line.name] = line.record;
        if (line.leaks) leaks[line.name] = line.leaks;
        if (line.reports) reports[line.name] = line.reports;
        inFlight = -1;
        next = line.index + 1;
      }
    }
    if (child.status === 0 && inFlight < 0) break;
    if (child.status === FRESH_PROCESS && inFlight < 0) continue;
    const reason = child.signal ? `signal ${child.signal}` : `exit ${child.status}`;
    if (inFlight >= 0) {
      records[names[inFlight]!] = { steps: [], crashed: reason };
      next = inFlight + 1;
    } else if (child.status !== 3) {
      restarts.push(`worker failed before any case (${reason})`);
      break;
    }
    restarts.push(`${names[next - 1]}: ${reason}`);
  }
  rmSync(logPath, { force: true });
  return { records, restarts, leaks, reports };
}

function simulatedCase(name: string): CaseRecord {
  return runSimulatedCase(name).record;
}

// ------------------------------------------------------------------ main

/** The commit `run-all.sh --prepare` built (dist/commit.txt; the GPU machine's .git may be stale), or null. */
export function commitBuilt(): string | null {
  try {
    return readFileSync(new URL('../../commit.txt', import.meta.url), 'utf8').trim();
  } catch {
    return null;
  }
}

function timed<T>(fn: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = fn();
  return { value, ms: Math.round(performance.now() - t0) };
}

function main(): void {
  mkdirSync(outDir, { recursive: true });
  const driver = driverFor();
  const probe = new CudaBackend({ driver });
  const info = {
    fake,
    libraryPath: driver.libraryPath,
    driverVersion: probe.driverVersion,
    devices: probe.devices,
    node: process.version,
  };
  probe.dispose();
  console.log(
    `devices: ${info.devices.map((d) => `${d.ordinal} ${d.name}`).join(', ')}; driver ${info.driverVersion}`,
  );

  // 1. backend contract.
  const contract = timed(() =>
    runBackendContract(() => {
      const b = new CudaBackend({ driver: fake ? driverFor(info.devices.length) : driver });
      return b;
    }),
  );
  const contractPassed = contract.value.filter((c) => c.ok).length;
  console.log(`contract: ${contractPassed}/${contract.value.length} in ${contract.ms} ms`);
  for (const c of contract.value) if (!c.ok) console.log(`  FAIL ${c.name}: ${c.error}`);

  // 2. the CUDA cases through the flavour on the real backend.
  const transcript = JSON.parse(readFileSync(transcriptPath, 'utf8')) as {
    cases: Record<string, CaseRecord>;
    gpu?: unknown;
    driver?: unknown;
  };
  const names = caseNames();
  const cases = timed(runCasesInChildren);
  const perCase: Record<
    string,
    {
      record: CaseRecord;
      vsDriver: string[];
      vsSimulator: string[];
      knownDivergence?: string;
      departures?: string[];
    }
  > = {};
  let agreeDriver = 0;
  let agreeSim = 0;
  let agreeOrAsListed = 0;
  for (const name of names) {
    const record = cases.value.records[name] ?? { steps: [], threw: 'not run' };
    const driverRecord = transcript.cases[name] ?? { steps: [] };
    const simulated = simulatedCase(name);
    const vsDriver = differences(driverRecord, record);
    const vsSimulator = differences(simulated, record);
    if (vsDriver.length === 0) agreeDriver++;
    if (vsSimulator.length === 0) agreeSim++;
    // Agrees where no list names the case, or differs exactly as its entry says.
    const departures = departuresOverTheDriver(name, record, driverRecord, simulated);
    if (departures.length === 0) agreeOrAsListed++;
    perCase[name] = { record, vsDriver, vsSimulator };
    const known = listedReason(name);
    if (known) perCase[name].knownDivergence = known;
    if (departures.length > 0) perCase[name].departures = departures;
  }
  const disagreeing = names.filter((n) => perCase[n].vsDriver.length > 0);
  console.log(
    `cases: ${names.length}; flavour on GPU agrees with the raw driver in ${agreeDriver}, with the simulator in ${agreeSim} (${cases.ms} ms)`,
  );
  for (const n of disagreeing)
    console.log(
      `  ${n}${perCase[n].knownDivergence ? ' (known)' : ''}: ${perCase[n].vsDriver.slice(0, 3).join(' / ')}`,
    );
  const departing = names.filter((n) => perCase[n].departures);
  console.log(`${names.length - departing.length} agree or differ as listed; ${departing.length} do not:`);
  for (const n of departing) console.log(`  ${n}: ${perCase[n].departures!.join(' / ')}`);
  for (const r of cases.value.restarts) console.log(`  restart: ${r}`);

  // 3. HIP and ACL sequences over the CUDA backend, and on the simulator.
  const sequences: Record<string, { cuda: SeqResult; sim: SeqResult; sameCodes: boolean }> = {};
  const reports: string[] = [];
  const report = (m: string, e?: unknown) =>
    reports.push(`${m}: ${e instanceof Error ? e.message : String(e ?? '')}`);
  const runBoth = (name: string, run: (backend: 'cuda' | 'sim') => SeqResult) => {
    const cuda = run('cuda');
    const sim = run('sim');
    const sameCodes = JSON.stringify(cuda.steps) === JSON.stringify(sim.steps);
    sequences[name] = { cuda, sim, sameCodes };
    console.log(
      `${name}: GPU ${cuda.pass ? 'pass' : 'FAIL'}, simulator ${sim.pass ? 'pass' : 'FAIL'}, same codes ${sameCodes}`,
    );
    if (!cuda.pass) console.log(JSON.stringify(cuda).slice(0, 2000));
  };
  const opts = (b: 'cuda' | 'sim', devices: number) =>
    b === 'cuda'
      ? { backend: 'cuda' as const, cuda: { driver: fake ? driverFor(devices) : driver }, report }
      : { devices: Array.from({ length: devices }, () => 'H200' as const), report };
  runBoth('hip', (b) => {
    const hip = createHip(opts(b, 1));
    try {
      return hipSequence(hip);
    } finally {
      hip.dispose();
    }
  });
  runBoth('acl', (b) => {
    const acl = createAcl(opts(b, 1));
    try {
      return aclSequence(acl);
    } finally {
      acl.dispose();
    }
  });
  if (info.devices.length >= 2 || args.includes('--x2')) {
    for (const chunk of [0, 1 << 30]) {
      runBoth(chunk ? 'twoGpu1GiB' : 'twoGpu', (b) => {
        const cu = createCuda(opts(b, 2));
        try {
          return twoGpuSequence(cu, chunk);
        } finally {
          cu.dispose();
        }
      });
    }
  }

  const summary = {
    date: new Date().toISOString(),
    commit: commitBuilt(),
    info,
    contract: {
      passed: contractPassed,
      total: contract.value.length,
      ms: contract.ms,
      checks: contract.value,
    },
    conformance: {
      cases: names.length,
      agree: agreeDriver,
      agreeWithSimulator: agreeSim,
      agreeOrKnownDivergence: agreeOrAsListed,
      departing: Object.fromEntries(departing.map((n) => [n, perCase[n].departures!])),
      disagreeing: Object.fromEntries(
        disagreeing.map((n) => [n, { known: perCase[n].knownDivergence ?? null, diff: perCase[n].vsDriver }]),
      ),
      restarts: cases.value.restarts,
      leaks: cases.value.leaks,
      reports: cases.value.reports,
      ms: cases.ms,
    },
    sequences,
    reports,
  };
  writeFileSync(join(outDir, 'prove.json'), `${JSON.stringify(summary, null, 1)}\n`);
  writeFileSync(
    join(outDir, 'h200-vmmkit-cases.json'),
    `${JSON.stringify({ date: summary.date, commit: summary.commit, info, transcript: transcriptIndex >= 0 ? transcriptPath : 'conformance/results/h200-driver.json', cases: perCase }, null, 1)}\n`,
  );
  console.log(`wrote ${join(outDir, 'prove.json')}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (args[0] === '--cases-worker') casesWorker(Number(args[1]), args[2]!);
  else main();
}
