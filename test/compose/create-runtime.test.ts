import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMachine } from '../../src/backends/sim/machine.js';
import { createProcess, createRuntime } from '../../src/compose/create-runtime.js';
import { Tracer } from '../../src/core/trace.js';
import { FaultyBackend } from '../support/faulty-backend.js';

describe('createRuntime / createProcess: the composition root', () => {
  it('makes one process on a fresh simulated H200 by default', () => {
    const p = createProcess();
    expect(p.runtime.devices.map((d) => d.name)).toEqual(['NVIDIA H200']);
    expect(p.runtime.devices[0].totalMemory).toBe(150_109_880_320);
    expect(p.machine?.processes.map((x) => x.pid)).toEqual([p.runtime.pid]);
    p.runtime.dispose();
  });

  it('takes devices, or joins a given machine as a new process with its own pid', () => {
    const two = createRuntime({ devices: ['H200', 'MI300X'] });
    expect(two.devices.map((d) => d.minimumGranularity)).toEqual([2 << 20, 4096]);
    const machine = createMachine({ devices: ['Ascend910B'] });
    const a = createRuntime({ machine });
    const b = createRuntime({ machine });
    expect(a.pid).not.toBe(b.pid);
    expect(machine.processes.map((p) => p.pid)).toEqual([a.pid, b.pid]);
    for (const rt of [two, a, b]) rt.dispose();
  });

  it('uses a Backend object as it is, and traces through the given tracer', () => {
    const machine = createMachine();
    const faults = new FaultyBackend(machine.spawn());
    const tracer = new Tracer();
    const rt = createRuntime({ backend: faults.backend, tracer });
    rt.reserve(2 << 20);
    expect(tracer.roots.map((s) => `${s.layer}:${s.name}`)).toEqual(['core:reserve']);
    expect(faults.log).toEqual(['reserve']);
    rt.dispose();
  });

  it('refuses contradictory options with a TypeError', () => {
    const machine = createMachine();
    expect(() => createRuntime({ backend: 'cuda', machine })).toThrow(TypeError);
    expect(() => createRuntime({ backend: 'cuda', devices: ['H200'] })).toThrow(TypeError);
    expect(() => createRuntime({ backend: 'gpu' as 'sim' })).toThrow(TypeError);
    expect(() =>
      createRuntime({ backend: new FaultyBackend(machine.spawn()).backend, devices: ['H200'] }),
    ).toThrow(TypeError);
  });
});

describe("importing 'vmmkit' does not load the native FFI addon (Note [Lazy FFI])", () => {
  const entry = 'dist/src/index.js';
  it.skipIf(!existsSync(entry) || !existsSync('/proc/self/maps'))(
    'a simulator-only program has no koffi mapped, until it asks for the real driver',
    () => {
      const script = `
        import { readFileSync } from 'node:fs';
        const v = await import('./${entry}');
        const hip = v.createHip(); const box = { value: 0n };
        hip.hipMalloc(box, 4096); hip.hipFree(box.value); hip.dispose();
        const koffiMaps = () => (readFileSync('/proc/self/maps', 'utf8').match(/koffi/g) ?? []).length;
        const before = koffiMaps();
        try { v.createCuda({ backend: 'cuda', cuda: { libraryPaths: ['/nonexistent/libcuda.so.1'] } }); } catch {}
        console.log(JSON.stringify({ before, after: koffiMaps() }));`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
      const { before, after } = JSON.parse(out.trim().split('\n').pop() as string);
      expect(before).toBe(0);
      // Asking for the real backend loads koffi (and fails here only for want of libcuda).
      expect(after).toBeGreaterThan(0);
    },
  );
});
