/**
 * Cases whose answers depend on what the process did before them, each run
 * as the first thing a fresh process does: through the raw driver (as
 * record.ts records) and through vmmkit's CUDA flavour on the CUDA backend
 * (as prove.ts runs it), alternately, `--times` of each.
 *
 *   node dist/conformance/gpu/fresh-cases.js [--only a,b] [--times 3] [--out DIR] [--fake]
 *
 * Without --only: every startupHeap.* case (Note [Start-up heap cases in a
 * fresh process] in conformance/cuda/cases/startup-heap.ts). Writes
 * DIR/<gpu>-fresh-cases.json (h200-fresh-cases.json on an H200): when, the
 * commit built, the GPU and driver, and per case each run's two records, the
 * raw driver's against the committed transcript
 * (conformance/results/h200-driver.json) and vmmkit's against the raw
 * driver's of the same round. `--fake` rehearses the plumbing over
 * fake-driver.ts (a harness for the backend: its raw side answers no case as
 * a driver would).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRawCuda, loadCudaDriver } from '../../src/backends/cuda/driver.js';
import { wantsFreshProcess } from '../cuda/cases/startup-heap.js';
import { type CaseRecord, caseNames } from '../cuda/cases.js';
import { differences } from '../cuda/known-divergences.js';
import { type DriverInfo, nvidiaSmi, prepareEnv, runCase } from '../cuda/record.js';
import { createFakeDriver } from './fake-driver.js';
import { backendCase, commitBuilt, retainedPrimary } from './prove.js';

type Via = 'raw' | 'vmmkit';

interface ChildAnswer {
  record: CaseRecord;
  info?: DriverInfo;
  leaks?: string;
  reports?: string[];
}

/** Child: `name` through `via`, first thing in this process; one JSON line on stdout. */
function child(via: Via, name: string, fake: boolean): void {
  const driver = fake ? createFakeDriver() : loadCudaDriver();
  if (via === 'vmmkit') {
    const { record, leaks, reports } = backendCase(driver, retainedPrimary(driver), name);
    process.stdout.write(`${JSON.stringify({ record, leaks, reports } satisfies ChildAnswer)}\n`);
    return;
  }
  const cu = createRawCuda(driver);
  const { env, info } = prepareEnv(cu);
  env.closeFd = (fd) => {
    try {
      closeSync(fd);
    } catch {
      // Already closed.
    }
  };
  const record = runCase(cu, env, name);
  const after = cu.cuCtxSynchronize();
  if (after !== 0) record.contextAfter = after;
  process.stdout.write(`${JSON.stringify({ record, info } satisfies ChildAnswer)}\n`);
}

/** `name` through `via` in a fresh process; a crash is the record's `crashed`. */
function inFreshProcess(via: Via, name: string, fake: boolean): ChildAnswer {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(process.execPath, [self, '--child', via, name, ...(fake ? ['--fake'] : [])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 120_000,
  });
  const last = run.stdout.trim().split('\n').pop() ?? '';
  if (run.status === 0 && last.startsWith('{')) return JSON.parse(last) as ChildAnswer;
  return { record: { steps: [], crashed: run.signal ? `signal ${run.signal}` : `exit ${run.status}` } };
}

function main(args: readonly string[]): void {
  const opt = (flag: string): string | undefined => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const all = caseNames();
  const names = opt('--only')?.split(',') ?? all.filter(wantsFreshProcess);
  const unknown = names.filter((n) => !all.includes(n));
  if (unknown.length > 0) {
    console.error(`no such case(s): ${unknown.join(', ')}`);
    process.exit(2);
  }
  const times = Number(opt('--times') ?? 3);
  const outDir = opt('--out') ?? process.env.OUT ?? 'fresh-out';
  const transcript = JSON.parse(
    readFileSync(new URL('../../../conformance/results/h200-driver.json', import.meta.url), 'utf8'),
  ) as { cases: Record<string, CaseRecord> };
  const fake = args.includes('--fake');
  if (!fake) loadCudaDriver();
  let info: DriverInfo | null = null;
  const cases: Record<string, unknown> = {};
  for (const name of names) {
    const runs = [];
    for (let round = 0; round < times; round++) {
      // Alternate which goes first, so neither always runs right after the other's process.
      const order: Via[] = round % 2 === 0 ? ['raw', 'vmmkit'] : ['vmmkit', 'raw'];
      const got = Object.fromEntries(order.map((via) => [via, inFreshProcess(via, name, fake)])) as Record<
        Via,
        ChildAnswer
      >;
      info ??= got.raw.info ?? null;
      runs.push({
        raw: got.raw.record,
        vmmkit: got.vmmkit.record,
        ...(got.vmmkit.leaks ? { leaks: got.vmmkit.leaks } : {}),
        ...(got.vmmkit.reports ? { reports: got.vmmkit.reports } : {}),
        rawVsTranscript: differences(transcript.cases[name] ?? { steps: [] }, got.raw.record),
        vmmkitVsRaw: differences(got.raw.record, got.vmmkit.record),
      });
    }
    cases[name] = { runs };
    const summary = runs.map((r) => `raw ${r.rawVsTranscript.length}, vmmkit ${r.vmmkitVsRaw.length}`);
    console.log(`${name}: differences (raw vs transcript, vmmkit vs raw) ${summary.join('; ')}`);
  }
  const gpu = nvidiaSmi(info?.driverVersion ?? null);
  const card = fake
    ? 'fake'
    : (/H\d{3}/.exec(gpu?.name ?? info?.deviceName ?? '')?.[0]?.toLowerCase() ?? 'gpu');
  const result = {
    date: new Date().toISOString(),
    commit: commitBuilt(),
    command: `node dist/conformance/gpu/fresh-cases.js ${args.join(' ')}`.trim(),
    gpu,
    driver: info,
    node: process.version,
    fake,
    times,
    method:
      'Each run is one process per side, the case the first thing it does after cuInit and the primary context: raw is the driver through createRawCuda (as record.js records), vmmkit is createCuda({ backend: "cuda" }) over the same driver with the primary context retained beforehand (as prove.js runs it). rawVsTranscript: the raw record against conformance/results/h200-driver.json; vmmkitVsRaw: the vmmkit record against the raw one of the same round.',
    cases,
  };
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, `${card}-fresh-cases.json`);
  writeFileSync(path, `${JSON.stringify(result, null, 1)}\n`);
  console.log(`wrote ${path}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  if (args[0] === '--child') child(args[1] as Via, args[2]!, args.includes('--fake'));
  else main(args);
}
