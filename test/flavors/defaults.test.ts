/**
 * Each front end's two ways in agree: createX(options), and new XFlavor over
 * the process the composition root makes of the same options (with the
 * vendor's default devices), start the same process on the same machine,
 * for the default options and for the options that name a machine; a
 * vendor's default devices are never handed to a real backend (the
 * composition root refuses devices there). The flavor itself takes a process
 * and makes none (issue 29: the composition root sits above the front ends).
 */
import { describe, expect, it } from 'vitest';
import { createFakeDriver } from '../../conformance/gpu/fake-driver.js';
import { createMachine } from '../../src/backends/sim/machine.js';
import { DEVICE_PRESETS } from '../../src/backends/sim/presets.js';
import { createRuntime } from '../../src/compose/create-runtime.js';
import type { FlavorOptions } from '../../src/entry/processes.js';
import {
  createAcl,
  createCuda,
  createHip,
  frontEndProcess,
  withDefaultDevices,
} from '../../src/entry/processes.js';
import { AclFlavor } from '../../src/flavors/acl/acl.js';
import { CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import { HipFlavor } from '../../src/flavors/hip/hip.js';

type Devices = { name: string; totalMemory: number; minimumGranularity: number }[];

const pairs = [
  ['CUDA', createCuda, (o: FlavorOptions = {}) => new CudaFlavor(frontEndProcess(o)), 'H200'],
  [
    'HIP',
    createHip,
    (o: FlavorOptions = {}) => new HipFlavor(frontEndProcess(withDefaultDevices(o, ['MI300X']))),
    'MI300X',
  ],
  [
    'ACL',
    createAcl,
    (o: FlavorOptions = {}) => new AclFlavor(frontEndProcess(withDefaultDevices(o, ['Ascend910B']))),
    'Ascend910B',
  ],
] as const;

function devicesOf(p: { runtime: { devices: readonly Devices[number][] } }): Devices {
  return p.runtime.devices.map(({ name, totalMemory, minimumGranularity }) => ({
    name,
    totalMemory,
    minimumGranularity,
  }));
}

describe.each(pairs)('%s: create function and constructor', (_vendor, create, construct, preset) => {
  it(`give the same default machine (${preset})`, () => {
    const a = create();
    const b = construct();
    expect(devicesOf(a)).toEqual(devicesOf(b));
    expect(devicesOf(a).map((d) => d.name)).toEqual([DEVICE_PRESETS[preset].name]);
    a.dispose();
    b.dispose();
  });

  it('take the devices named, and join a machine given', () => {
    const a = create({ devices: ['H200', 'H200'] });
    const b = construct({ devices: ['H200', 'H200'] });
    expect(devicesOf(a)).toEqual(devicesOf(b));
    expect(devicesOf(a).map((d) => d.name)).toHaveLength(2);
    const machine = createMachine({ devices: ['MI300X'] });
    const c = create({ machine });
    const d = construct({ machine });
    expect(c.machine).toBe(machine);
    expect(d.machine).toBe(machine);
    expect(devicesOf(c)).toEqual(devicesOf(d));
    for (const p of [a, b, c, d]) p.dispose();
  });

  it('hand a real backend no default devices (its own apply)', () => {
    const driver = createFakeDriver({ devices: ['H200'] });
    const a = create({ backend: 'cuda', cuda: { driver } });
    expect(a.machine).toBeUndefined();
    expect(a.runtime.devices).toHaveLength(1);
    a.dispose();
  });
});

describe('a flavor over a runtime it is given', () => {
  it('speaks its vendor over any runtime, and reports through the hook given with it', () => {
    const reports: string[] = [];
    const runtime = createRuntime({ devices: ['MI300X'] });
    const hip = new HipFlavor({ runtime, report: (m) => reports.push(m) });
    expect(hip.machine).toBeUndefined();
    expect(hip.runtime).toBe(runtime);
    const ptr = { value: 0n };
    expect(hip.hipMalloc(ptr, 4096)).toBe(0);
    expect(runtime.reservationContaining(Number(ptr.value))).toBeDefined();
    expect(hip.hipFree(ptr.value)).toBe(0);
    hip.dispose();
    expect(runtime.disposed).toBe(true);
    expect(reports).toEqual([]);
  });
});
