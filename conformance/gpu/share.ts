/**
 * Memory shared between real OS processes on the GPU (issue 11, part 1).
 *
 *   node dist/conformance/gpu/share.js [--fake] [--out DIR]   -> DIR/h200-sharing.json
 *
 * First what the driver itself does with a descriptor from another process,
 * through the raw binding (no vmmkit logic): this process takes an exporter
 * child's fd with pidfd_getfd and records what fstat and /proc say of it, what
 * cuMemImportFromShareableHandle and cuMemGetAllocationPropertiesFromHandle
 * answer, which map sizes the driver takes, and the codes for descriptors
 * that were never passed. Then the scenarios of conformance/sharing/scenarios.ts,
 * each peer a child process (agent.js) with its own vmmkit process over the
 * CUDA backend, for the CUDA, HIP and ACL front ends; the tests run the same
 * scenarios on the simulator. `--fake` rehearses the plumbing over the fake
 * driver (one per process, so bytes and memory are not shared: most checks
 * fail there by design).
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRawCuda, loadCudaDriver } from '../../src/backends/cuda/driver.js';
import { takeFd } from '../../src/backends/cuda/os-fd.js';
import { Access, createRuntime } from '../../src/index.js';
import { osHarness } from '../sharing/os-harness.js';
import { b64 } from '../sharing/peer.js';
import { allScenarios, CHUNK, pattern, type RemotePeer } from '../sharing/scenarios.js';

const args = process.argv.slice(2);
const fake = args.includes('--fake');
const outIndex = args.indexOf('--out');
const outDir = outIndex >= 0 ? args[outIndex + 1]! : (process.env.OUT ?? 'share-out');
const agent = fileURLToPath(new URL('../sharing/agent.js', import.meta.url));
const harness = osHarness({ agent, backend: fake ? 'fake-cuda' : 'cuda' });

function gpuName(): string {
  try {
    return execFileSync('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader'], {
      encoding: 'utf8',
    }).trim();
  } catch {
    return fake ? '(fake driver)' : '(nvidia-smi not found)';
  }
}

async function must(
  peer: RemotePeer,
  step: Parameters<RemotePeer['call']>[0],
  ...a: unknown[]
): Promise<number> {
  const r = await (peer.call as (s: string, ...x: unknown[]) => Promise<{ code: number; value?: number }>)(
    step,
    ...a,
  );
  if (r.code !== 0) throw new Error(`${peer.label}.${step} answered ${JSON.stringify(r)}`);
  return r.value ?? 0;
}

/** What the raw driver does with a descriptor taken from another process. */
async function explore(): Promise<Record<string, unknown>> {
  const facts: Record<string, unknown> = { uid: process.getuid?.() };
  try {
    facts.ptraceScope = readFileSync('/proc/sys/kernel/yama/ptrace_scope', 'utf8').trim();
  } catch {
    facts.ptraceScope = '(no Yama)';
  }
  const x = await harness.spawn('cuda', 'exporter');
  try {
    const xPid = await must(x, 'pid');
    const handle = await must(x, 'create', CHUNK);
    const va = await must(x, 'reserve', CHUNK);
    await must(x, 'map', va, CHUNK, handle);
    await must(x, 'access', va, CHUNK);
    const data = pattern(CHUNK, 7);
    await must(x, 'write', va, b64(data));
    const fd = await must(x, 'export', handle, []);
    facts.exporterFd = fd;
    try {
      facts.exporterFdLink = readlinkSync(`/proc/${xPid}/fd/${fd}`);
    } catch (e) {
      facts.exporterFdLink = String(e);
    }
    const taken = takeFd(xPid, fd);
    facts.takeFd = 'pidfd_getfd succeeded';
    const st = fstatSync(taken);
    facts.takenFstat = { size: st.size, mode: st.mode.toString(8), rdev: st.rdev, ino: st.ino, dev: st.dev };
    try {
      facts.takenFdinfo = readFileSync(`/proc/self/fdinfo/${taken}`, 'utf8');
    } catch (e) {
      facts.takenFdinfo = String(e);
    }
    // Is the exporter's fd number open here too (as something else)?
    let openHere: string;
    try {
      openHere = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      openHere = '(not open)';
    }
    facts.exporterFdNumberHere = openHere;
    if (fake) return facts;

    const cu = createRawCuda(loadCudaDriver());
    const ctx = { value: 0n };
    cu.cuInit(0);
    cu.cuDevicePrimaryCtxRetain(ctx, 0);
    cu.cuCtxSetCurrent(ctx.value);
    const h = { value: 0n };
    facts.importTaken = cu.cuMemImportFromShareableHandle(h, taken, 1);
    const prop = { value: undefined as unknown };
    facts.propsCode = cu.cuMemGetAllocationPropertiesFromHandle(prop as never, h.value);
    facts.props = JSON.parse(JSON.stringify(prop.value, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)));
    const h2 = { value: 0n };
    facts.importTakenAgain = cu.cuMemImportFromShareableHandle(h2, taken, 1);
    facts.importTakenAgainSameHandle = h2.value === h.value;
    closeSync(taken);
    const p = { value: 0n };
    cu.cuMemAddressReserve(p, 2 * CHUNK, 0, 0n, 0);
    facts.mapHalf = cu.cuMemMap(p.value, CHUNK / 2, 0, h.value, 0);
    facts.mapDouble = cu.cuMemMap(p.value, 2 * CHUNK, 0, h.value, 0);
    facts.mapExact = cu.cuMemMap(p.value, CHUNK, 0, h.value, 0);
    facts.setAccess = cu.cuMemSetAccess(p.value, CHUNK, [{ location: { type: 1, id: 0 }, flags: 3 }], 1);
    const back = new Uint8Array(CHUNK);
    facts.read = cu.cuMemcpyDtoH(back, p.value, CHUNK);
    facts.bytesMatch = Buffer.compare(Buffer.from(back), Buffer.from(data)) === 0;
    facts.unmap = cu.cuMemUnmap(p.value, CHUNK);
    facts.release = cu.cuMemRelease(h.value);
    if (h2.value !== h.value && facts.importTakenAgain === 0) facts.releaseSecond = cu.cuMemRelease(h2.value);
    cu.cuMemAddressFree(p.value, 2 * CHUNK);
    // Descriptors never passed to this process.
    const none = { value: 0n };
    facts.importNeverOpened = cu.cuMemImportFromShareableHandle(none, 1000, 1);
    const devNull = openSync('/dev/null', 'r');
    facts.importDevNull = cu.cuMemImportFromShareableHandle(none, devNull, 1);
    closeSync(devNull);
    facts.importExporterNumberUnpassed = cu.cuMemImportFromShareableHandle(none, fd, 1);
    cu.cuDevicePrimaryCtxRelease(0);
    Object.assign(facts, coreImports(xPid, fd, data));
  } finally {
    await x.exit();
  }
  return facts;
}

/**
 * Core's three ways to the size of foreign memory (Note [Foreign memory sizes]) on the real driver:
 * told right, told wrong (the first map is refused), not told (the first map tells it).
 */
function coreImports(xPid: number, fd: number, data: Uint8Array): Record<string, unknown> {
  const facts: Record<string, unknown> = {};
  const rt = createRuntime({ backend: 'cuda' });
  const rw = [{ device: 0, access: Access.ReadWrite }];
  const kindOf = (work: () => unknown) => {
    try {
      work();
      return 'success';
    } catch (e) {
      return (e as { kind?: string }).kind ?? String(e);
    }
  };
  try {
    const told = takeFd(xPid, fd);
    const a = rt.importFd(told, { size: CHUNK });
    rt.closeFd(told);
    const r = rt.reserve(CHUNK);
    const m = rt.map(r.base, CHUNK, a);
    rt.setAccess(m.va, m.size, rw);
    const back = new Uint8Array(CHUNK);
    rt.read(0, m.va, back);
    facts.coreToldSize = {
      size: a.size,
      bytesMatch: Buffer.compare(Buffer.from(back), Buffer.from(data)) === 0,
    };
    const wrong = takeFd(xPid, fd);
    const b = rt.importFd(wrong, { size: 2 * CHUNK });
    rt.closeFd(wrong);
    const r2 = rt.reserve(2 * CHUNK);
    facts.coreWrongToldSizeFirstMap = kindOf(() => rt.map(r2.base, 2 * CHUNK, b));
    const unknown = takeFd(xPid, fd);
    const c = rt.importFd(unknown);
    rt.closeFd(unknown);
    const before = { sizeKnown: c.sizeKnown, size: c.size };
    const halfMap = kindOf(() => rt.map(r2.base, CHUNK / 2, c));
    rt.map(r2.base, CHUNK, c);
    facts.coreUntoldSize = { before, halfMap, after: { sizeKnown: c.sizeKnown, size: c.size } };
  } catch (e) {
    facts.coreImportsError = e instanceof Error ? e.message : String(e);
  } finally {
    rt.dispose();
  }
  return facts;
}

async function main(): Promise<void> {
  mkdirSync(outDir, { recursive: true });
  const started = Date.now();
  let explored: Record<string, unknown>;
  try {
    explored = await explore();
  } catch (e) {
    explored = { error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
  const scenarios = await allScenarios(harness);
  // The CUDA front end must report an imported handle's properties as the driver itself did above.
  const cudaShared = scenarios.find((s) => s.flavour === 'cuda' && s.scenario === 'shared');
  if (cudaShared && !fake) {
    const same = JSON.stringify(cudaShared.observed.importerProps) === JSON.stringify(explored.props);
    cudaShared.checks.push({
      name: "an imported handle's properties are what the driver reports for it",
      pass: same,
      detail: { frontEnd: cudaShared.observed.importerProps, driver: explored.props },
    });
  }
  const checks = scenarios.flatMap((s) => s.checks);
  const report = {
    recorder: 'node dist/conformance/gpu/share.js',
    recordedAt: new Date().toISOString(),
    gpu: gpuName(),
    fake,
    driverFacts: explored,
    summary: {
      scenarios: scenarios.length,
      checks: checks.length,
      passed: checks.filter((c) => c.pass).length,
      scenariosWithErrors: scenarios
        .filter((s) => s.error !== undefined)
        .map((s) => `${s.flavour}/${s.scenario}`),
      seconds: (Date.now() - started) / 1000,
    },
    scenarios,
  };
  writeFileSync(join(outDir, 'h200-sharing.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.log(JSON.stringify({ driverFacts: explored, summary: report.summary }, null, 2));
  for (const s of scenarios)
    for (const c of s.checks)
      if (!c.pass)
        console.log(`FAIL ${s.flavour}/${s.scenario}: ${c.name} ${JSON.stringify(c.detail ?? '')}`);
  process.exitCode =
    report.summary.passed === report.summary.checks && report.summary.scenariosWithErrors.length === 0
      ? 0
      : 1;
}

await main();
