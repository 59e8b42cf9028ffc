/**
 * Runs the CUDA conformance cases and records every answer.
 *
 *   node dist/conformance/cuda/record.js out.json     # against the real driver (libcuda)
 *
 * `runCases(cu, env)` runs them in this process against any CudaApi (the
 * simulator's createCuda(), say). The CLI runs them against the real driver
 * in child processes: a case may leave the CUDA context unusable (a sticky
 * error) or end the process, so the child checks the context after each case
 * and the parent starts a new child for the cases after it (see Note [Cases
 * that may poison the context] in cases.ts).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRawCuda, loadCudaDriver, type RawCuda } from '../../src/backends/cuda/driver.js';
import { createCuda } from '../../src/flavors/cuda/cuda.js';
import {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM,
  CU_MEM_ALLOCATION_TYPE_PINNED,
  CU_MEM_LOCATION_TYPE_DEVICE,
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
    const s = cu.runtime.stats();
    const leftover =
      s.reservations + s.mappings + s.handles + s.streams !== 0 ? JSON.stringify(s) : undefined;
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

interface Line {
  start?: number;
  index?: number;
  name?: string;
  record?: CaseRecord;
  info?: DriverInfo;
}

/** Child: run cases from `first` on, one JSON line per event; exit 3 when the context is gone. */
function worker(first: number, logPath: string): never {
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
  const names = caseNames();
  for (let i = first; i < names.length; i++) {
    const name = names[i]!;
    appendFileSync(logPath, `${JSON.stringify({ start: i, name } satisfies Line)}\n`);
    const record = runCase(cu, env, name);
    const after = cu.cuCtxSynchronize();
    if (after !== 0) record.contextAfter = after;
    appendFileSync(logPath, `${JSON.stringify({ index: i, name, record } satisfies Line)}\n`);
    if (after !== 0) process.exit(3);
  }
  process.exit(0);
}

function main(argv: string[]): void {
  if (argv[2] === '--worker') worker(Number(argv[3]), argv[4]!);
  const outPath = argv[2];
  if (!outPath) {
    console.error('usage: record.js OUT.json');
    process.exit(2);
  }
  // Fail early, in this process, with the loader's clear message when there is no driver.
  loadCudaDriver();
  const names = caseNames();
  const cases: Recording['cases'] = {};
  let info: DriverInfo | undefined;
  const restarts: { at: string; reason: string }[] = [];
  const logPath = join(tmpdir(), `vmmkit-record-${process.pid}.jsonl`);
  const self = fileURLToPath(import.meta.url);
  let next = 0;
  const started = Date.now();
  while (next < names.length) {
    writeFileSync(logPath, '');
    const child = spawnSync(process.execPath, [self, '--worker', String(next), logPath], {
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
  const ordered: Recording['cases'] = {};
  for (const n of names) if (cases[n]) ordered[n] = cases[n];
  const result = {
    recordedAt: new Date().toISOString(),
    driver: info ?? null,
    caseCount: names.length,
    restarts,
    cases: ordered,
  };
  writeFileSync(outPath, `${JSON.stringify(result, null, 1)}\n`);
  const poisoned = Object.entries(ordered).filter(([, r]) => r.contextAfter !== undefined || r.crashed);
  console.log(
    `recorded ${Object.keys(ordered).length}/${names.length} cases in ${((Date.now() - started) / 1000).toFixed(1)} s ` +
      `on ${info?.deviceName ?? '?'} (driver ${info?.driverVersion ?? '?'}); ${restarts.length} restart(s)`,
  );
  for (const [n, r] of poisoned) console.log(`  ${n}: context ${r.contextAfter ?? ''} ${r.crashed ?? ''}`);
  for (const [n, r] of Object.entries(ordered)) if (r.threw) console.log(`  ${n}: threw ${r.threw}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv);
