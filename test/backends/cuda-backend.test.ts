/**
 * The CUDA backend. Without a GPU: createCuda({ backend: 'cuda' }) fails with
 * CudaDriverUnavailableError naming the libraries, and every code path runs
 * on the simulated stand-in for libcuda (conformance/gpu/fake-driver.ts).
 * With a GPU (libcuda loads), the contract and the sequences run for real;
 * otherwise those tests are reported as skipped.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKEND_CONTRACT, runBackendContract } from '../../conformance/backend/contract.js';
import { createFakeDriver } from '../../conformance/gpu/fake-driver.js';
import { aclSequence, hipSequence, twoGpuSequence } from '../../conformance/gpu/sequences.js';
import { CudaBackend } from '../../src/backends/cuda/backend.js';
import { CU_RESULT_KINDS, CudaDriverError } from '../../src/backends/cuda/checked.js';
import { CudaDriverUnavailableError, findCudaDriver } from '../../src/backends/cuda/driver.js';
import { createMachine } from '../../src/backends/sim/machine.js';
import { ERROR_KINDS } from '../../src/core/errors.js';
import { createAcl, createCuda, createHip, createRuntime, DEFAULT_LIBRARY_PATHS } from '../../src/index.js';

const gpu = findCudaDriver();

describe('CUDA backend without a GPU', () => {
  it.skipIf(gpu !== undefined)('createCuda({ backend: "cuda" }) names the libraries it tried', () => {
    let error: unknown;
    try {
      createCuda({ backend: 'cuda' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CudaDriverUnavailableError);
    for (const path of DEFAULT_LIBRARY_PATHS) expect((error as Error).message).toContain(path);
  });

  it('custom library paths are tried and named', () => {
    expect(() => createHip({ backend: 'cuda', cuda: { libraryPaths: ['/nowhere/libcuda-x.so'] } })).toThrow(
      /libcuda-x\.so/,
    );
  });

  it('every CUresult in the table maps to a core error kind, and errors name function and code', () => {
    for (const kind of CU_RESULT_KINDS.values()) expect(ERROR_KINDS).toContain(kind);
    const e = new CudaDriverError('cuMemMap', 801);
    expect(e.kind).toBe('not-supported');
    expect(e.message).toContain('cuMemMap');
    expect(e.message).toContain('CUDA_ERROR_NOT_SUPPORTED');
    expect(new CudaDriverError('cuMemCreate', 2).kind).toBe('out-of-memory');
  });
});

describe('CUDA backend over the simulated stand-in for libcuda', () => {
  it.each(BACKEND_CONTRACT.map((c) => [c.name] as const))('contract: %s', (name) => {
    const results = runBackendContract(() => new CudaBackend({ driver: createFakeDriver() }));
    const r = results.find((x) => x.name === name)!;
    expect(r.error ?? '').toBe('');
  });

  it('never hands an unknown handle to the driver (the real one crashes)', () => {
    const driver = createFakeDriver();
    const b = new CudaBackend({ driver });
    expect(() => b.release(12345)).toThrow(/invalid-handle/);
    expect(() => b.map(0, 0, 999, 0)).toThrow(/invalid-handle/);
    expect(driver.calls.get('cuMemRelease') ?? 0).toBe(0);
    b.dispose();
  });

  it('dispose gives back what is still held, and never throws', () => {
    const driver = createFakeDriver();
    const reports: string[] = [];
    const b = new CudaBackend({ driver, report: (m) => reports.push(m) });
    const g = b.devices[0].minimumGranularity;
    const va = b.reserve(2 * g, g, 0);
    const h = b.create(g, { location: { type: 'device', id: 0 }, handleTypes: 0, uncached: false });
    b.map(va, g, h, 0);
    b.setAccess(va, g, 0, 3);
    const s = b.createStream(0);
    b.write(0, va, new Uint8Array(64).fill(7), s);
    b.dispose();
    b.dispose();
    expect(b.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0, fds: 0 });
    expect(reports).toEqual([]);
    expect(driver.sim.memoryInfo(0).free).toBe(driver.sim.memoryInfo(0).total);
  });

  it('imports a descriptor it did not export, of a size it learns from the first map (Note [Foreign memory sizes])', () => {
    // Two backends over one stand-in driver: the second did not export the fd, so it cannot know the size.
    const driver = createFakeDriver();
    const exporter = new CudaBackend({ driver });
    const g = exporter.devices[0].minimumGranularity;
    const h = exporter.create(2 * g, {
      location: { type: 'device', id: 0 },
      handleTypes: 1,
      uncached: false,
    });
    const fd = exporter.exportFd(h);
    expect(() => exporter.importFd(fd, g)).toThrow(/invalid-value/); // its own: the size is known
    const rt = createRuntime({ backend: new CudaBackend({ driver }) });
    const a = rt.importFd(fd);
    expect([a.sizeKnown, a.size]).toEqual([false, 0]);
    const r = rt.reserve(4 * g);
    expect(() => rt.map(r.base, g, a)).toThrow(/not-supported/); // the driver refuses another size (801)
    expect(a.sizeKnown).toBe(false);
    expect(() => rt.map(r.base, 2 * g, a, g)).toThrow(/not-supported/);
    const m = rt.map(r.base, 2 * g, a);
    expect([a.sizeKnown, a.size, m.size]).toEqual([true, 2 * g, 2 * g]);
    expect(rt.importFd(fd, { size: 2 * g }).size).toBe(2 * g); // told: taken as said
    rt.dispose();
    exporter.dispose();
  });

  it('publishes ACL tokens in a registry, whitelists, refuses its own import, withdraws on release and dispose', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-tokens-'));
    try {
      const b = new CudaBackend({ driver: createFakeDriver(), tokenDirectory: dir });
      const g = b.devices[0].minimumGranularity;
      const props = { location: { type: 'device' as const, id: 0 }, handleTypes: 1, uncached: false };
      const h1 = b.create(g, props);
      const h2 = b.create(g, props);
      const t1 = b.exportShareable(h1, true);
      const t2 = b.exportShareable(h2, false);
      const entry = () => JSON.parse(readFileSync(join(dir, `token-${t1.toString(16)}.json`), 'utf8'));
      expect(entry()).toMatchObject({ token: t1, pid: process.pid, size: g, checkPid: true, allowed: [] });
      b.allowImport(t1, [4242, 4243]);
      b.allowImport(t1, [4243]);
      expect(entry().allowed).toEqual([4242, 4243]);
      expect(() => b.importShareable(t1)).toThrow(/permission-denied/);
      expect(() => b.importShareable(t1 + 1)).toThrow(/invalid-fd/);
      expect(() => b.allowImport(t1 + 1, [1])).toThrow(/invalid-fd/);
      const unexportable = b.create(g, { ...props, handleTypes: 0 });
      expect(() => b.exportShareable(unexportable, true)).toThrow(/not-supported/);
      b.unshare(t1);
      expect(readdirSync(dir)).toEqual([`token-${t2.toString(16)}.json`]);
      b.dispose();
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('HIP and ACL sequences pass over it, with the codes the simulator gives', () => {
    const hip = createHip({ backend: 'cuda', cuda: { driver: createFakeDriver() } });
    const hipSim = createHip({ devices: ['H200'] });
    const h = hipSequence(hip);
    expect(h.threw ?? '').toBe('');
    expect(h.pass).toBe(true);
    expect(h.steps).toEqual(hipSequence(hipSim).steps);
    const acl = createAcl({ backend: 'cuda', cuda: { driver: createFakeDriver() } });
    const a = aclSequence(acl);
    expect(a.threw ?? '').toBe('');
    expect(a.pass).toBe(true);
    for (const f of [hip, hipSim, acl]) f.dispose();
  });

  it('two GPUs: memory of GPU 0 copied through by GPU 1, one reservation across both', () => {
    const cu = createCuda({
      backend: 'cuda',
      cuda: { driver: createFakeDriver({ devices: ['H200', 'H200'] }) },
    });
    const r = twoGpuSequence(cu);
    expect(r.threw ?? '').toBe('');
    expect(r.steps.filter((s) => s.value === false)).toEqual([]);
    expect(r.pass).toBe(true);
    cu.dispose();
  });

  it("two GPUs on the simulator: the same sequence, copies on another device's stream included", () => {
    const cu = createCuda({ machine: createMachine({ devices: ['H200', 'H200'] }) });
    const r = twoGpuSequence(cu);
    expect(r.threw ?? '').toBe('');
    const onOtherStream = r.steps.filter((s) => s.op.startsWith('c: '));
    expect(onOtherStream).toHaveLength(7);
    expect(onOtherStream.filter((s) => s.code !== 0 || s.value === false)).toEqual([]);
    expect(r.pass).toBe(true);
    cu.dispose();
  });
});

describe.skipIf(gpu === undefined)('CUDA backend on a real GPU', () => {
  it.each(BACKEND_CONTRACT.map((c) => [c.name] as const))('contract: %s', (name) => {
    const r = runBackendContract(() => new CudaBackend({ driver: gpu! })).find((x) => x.name === name)!;
    expect(r.error ?? '').toBe('');
  });

  it('HIP and ACL sequences over the real driver', () => {
    const hip = createHip({ backend: 'cuda', cuda: { driver: gpu! } });
    expect(hipSequence(hip).pass).toBe(true);
    hip.dispose();
    const acl = createAcl({ backend: 'cuda', cuda: { driver: gpu! } });
    expect(aclSequence(acl).pass).toBe(true);
    acl.dispose();
  });
});
