import { describe, expect, it } from 'vitest';
import { H200_ATTRIBUTES } from '../../../src/backends/sim/h200-attributes.js';
import { createMachine, Machine } from '../../../src/backends/sim/machine.js';
import { deviceOffTheWire, deviceOnTheWire } from '../../../src/backends/sim/machine-server.js';
import { DEVICE_PRESETS, type DeviceSpec } from '../../../src/backends/sim/presets.js';
import { VmmError } from '../../../src/core/errors.js';
import type { AllocationProperties } from '../../../src/core/types.js';
import { thrown } from '../../support/thrown.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

const dev = (id = 0, handleTypes = 0): AllocationProperties => ({
  location: { type: 'device', id },
  handleTypes,
  uncached: false,
});
const HOST: AllocationProperties = { location: { type: 'host', id: 0 }, handleTypes: 0, uncached: false };

const vmmErrorOf = (f: () => unknown) => thrown(f, VmmError);

describe('Machine: devices', () => {
  it('presets have the real parts’ sizes and granularities', () => {
    const m = createMachine({ devices: ['H200', 'MI300X', 'Ascend910B'] });
    const [h200, mi300x, ascend] = m.devices.map((d) => d.info);
    expect(h200).toMatchObject({
      ordinal: 0,
      totalMemory: 150_109_880_320,
      minimumGranularity: 2 * MiB,
      recommendedGranularity: 2 * MiB,
    });
    expect(h200.name).toContain('H200');
    expect(mi300x).toMatchObject({
      ordinal: 1,
      totalMemory: 192 * GiB,
      minimumGranularity: 4 * KiB,
      recommendedGranularity: 2 * MiB,
    });
    expect(ascend).toMatchObject({
      ordinal: 2,
      totalMemory: 62_423 * MiB,
      minimumGranularity: 2 * MiB,
      recommendedGranularity: 2 * MiB,
    });
    expect(m.devices.map((d) => d.pool.capacity)).toEqual([150_109_880_320, 192 * GiB, 62_423 * MiB]);
    expect(m.devices.map((d) => d.pool.used)).toEqual([0, 0, 0]);
    expect(DEVICE_PRESETS.H200.totalMemory).toBe(150_109_880_320);
  });

  it('defaults to one H200', () => {
    const m = new Machine();
    expect(m.devices).toHaveLength(1);
    expect(m.devices[0].info.totalMemory).toBe(150_109_880_320);
  });

  it("reports each preset's facts with its device, and a served machine's client gets them too", () => {
    const m = createMachine({ devices: ['H200', 'MI300X', 'Ascend910B'] });
    const [h200, mi300x, ascend] = m.spawn().devices;
    expect(h200.driverAttributes).toBe(H200_ATTRIBUTES);
    expect(mi300x.published).toEqual({ multiProcessorCount: 304, major: 9, minor: 4 });
    expect(mi300x.driverAttributes).toBeUndefined();
    expect([ascend.driverAttributes, ascend.published]).toEqual([undefined, undefined]);
    // JSON has no Map: the attributes cross the served machine's wire as pairs and arrive as the Map.
    for (const d of [h200, mi300x, ascend])
      expect(deviceOffTheWire(JSON.parse(JSON.stringify(deviceOnTheWire(d))))).toEqual(d);
  });

  it('takes custom specs, mixed with presets', () => {
    const small: DeviceSpec = {
      name: 'tiny',
      totalMemory: 8 * MiB,
      minimumGranularity: 64 * KiB,
      recommendedGranularity: 1 * MiB,
    };
    const m = createMachine({ devices: [small, 'H200'] });
    expect(m.devices[0].info).toEqual({ ordinal: 0, ...small });
    expect(m.devices[1].info.ordinal).toBe(1);
    const p = m.spawn();
    expect(p.devices.map((d) => d.name)).toEqual(['tiny', DEVICE_PRESETS.H200.name]);
    expect(p.memoryInfo(0)).toEqual({ free: 8 * MiB, total: 8 * MiB });
  });

  it('refuses more than 16 devices, no devices and unknown presets', () => {
    expect(() => createMachine({ devices: Array(17).fill('H200') })).toThrow(RangeError);
    expect(() => createMachine({ devices: [] })).toThrow(RangeError);
    expect(() => createMachine({ devices: ['B200' as 'H200'] })).toThrow(TypeError);
    expect(createMachine({ devices: Array(16).fill('Ascend910B') }).devices).toHaveLength(16);
  });
});

describe('Machine: memory pools', () => {
  it('out of memory past a device’s capacity: VmmError out-of-memory, nothing changed', () => {
    const spec: DeviceSpec = {
      name: 'small',
      totalMemory: 6 * MiB,
      minimumGranularity: 2 * MiB,
      recommendedGranularity: 2 * MiB,
    };
    const m = createMachine({ devices: [spec, spec] });
    const p = m.spawn();
    const h1 = p.create(4 * MiB, dev(0));
    expect(m.devices[0].pool.used).toBe(4 * MiB);
    expect(m.liveAllocations).toBe(1);
    const e = vmmErrorOf(() => p.create(4 * MiB, dev(0)));
    expect(e.kind).toBe('out-of-memory');
    expect(m.devices[0].pool.used).toBe(4 * MiB);
    expect(m.devices[1].pool.used).toBe(0);
    expect(m.liveAllocations).toBe(1);
    expect(p.memoryInfo(0)).toEqual({ free: 2 * MiB, total: 6 * MiB });
    // Exactly what is left still fits; the other device is unaffected.
    const h2 = p.create(2 * MiB, dev(0));
    expect(m.devices[0].pool.free).toBe(0);
    const h3 = p.create(6 * MiB, dev(1));
    expect(vmmErrorOf(() => p.create(1, dev(0))).kind).toBe('out-of-memory');
    p.release(h1);
    p.release(h2);
    p.release(h3);
    expect(m.devices.map((d) => d.pool.used)).toEqual([0, 0]);
    expect(m.liveAllocations).toBe(0);
  });

  it('host allocations draw on the host pool', () => {
    const m = createMachine({ devices: ['H200'], hostMemory: 8 * MiB });
    const p = m.spawn();
    expect(m.host.capacity).toBe(8 * MiB);
    const h = p.create(6 * MiB, HOST);
    expect(m.host.used).toBe(6 * MiB);
    expect(m.devices[0].pool.used).toBe(0);
    expect(vmmErrorOf(() => p.create(4 * MiB, HOST)).kind).toBe('out-of-memory');
    expect(m.host.used).toBe(6 * MiB);
    p.release(h);
    expect(m.host.used).toBe(0);
    expect(createMachine().host.capacity).toBe(2 ** 40);
  });

  it('memory lives until its last holder (handle or mapping) goes', () => {
    const m = createMachine();
    const p = m.spawn();
    const h = p.create(2 * MiB, dev());
    const va = p.reserve(2 * MiB, 2 * MiB, 0);
    p.map(va, 2 * MiB, h, 0);
    p.release(h);
    expect(m.liveAllocations).toBe(1);
    expect(m.devices[0].pool.used).toBe(2 * MiB);
    expect(vmmErrorOf(() => p.release(h)).kind).toBe('invalid-handle');
    p.unmap(va, 2 * MiB);
    expect(m.liveAllocations).toBe(0);
    expect(m.devices[0].pool.used).toBe(0);
    p.free(va, 2 * MiB);
  });
});

describe('Machine: processes and file descriptors', () => {
  it('spawns processes with distinct pids, each findable', () => {
    const m = createMachine();
    const ps = [m.spawn(), m.spawn(), m.spawn()];
    expect(new Set(ps.map((p) => p.pid)).size).toBe(3);
    for (const p of ps) {
      expect(m.process(p.pid)).toBe(p);
      expect(m.process(p)).toBe(p);
    }
    expect(m.processes).toEqual(ps);
    expect(() => m.process(1)).toThrow(TypeError);
    ps[1].dispose();
    expect(m.processes).toEqual([ps[0], ps[2]]);
    expect(() => m.process(ps[1].pid)).toThrow(TypeError);
  });

  it('processes have separate address spaces that give the same addresses', () => {
    const m = createMachine();
    const a = m.spawn();
    const b = m.spawn();
    expect(a.reserve(2 * MiB, 2 * MiB, 0)).toBe(b.reserve(2 * MiB, 2 * MiB, 0));
    a.dispose();
    b.dispose();
  });

  it('passFd installs the descriptor at the lowest free fd of the receiver', () => {
    const m = createMachine();
    const a = m.spawn();
    const b = m.spawn();
    const h = a.create(2 * MiB, dev(0, 1));
    const fd1 = a.exportFd(h);
    const fd2 = a.exportFd(h);
    expect(fd1).toBe(3);
    expect(fd2).toBe(4);
    a.closeFd(fd1);
    expect(a.exportFd(h)).toBe(3);
    // b: fds 3, 4 then close 3: the next passed one lands at 3.
    expect(m.passFd(a, fd2, b)).toBe(3);
    expect(m.passFd(a.pid, 3, b.pid)).toBe(4);
    b.closeFd(3);
    expect(m.passFd(a, fd2, b)).toBe(3);
    // An unknown descriptor: invalid-fd, nothing opened in the receiver.
    expect(vmmErrorOf(() => m.passFd(a, 99, b)).kind).toBe('invalid-fd');
    expect(vmmErrorOf(() => m.passFd(a, fd1 + 10, b)).kind).toBe('invalid-fd');
    expect(b.fileAt(5)).toBeUndefined();
    // The passed descriptor imports the same memory.
    const imported = b.importFd(4);
    expect(imported.size).toBe(2 * MiB);
    expect(imported.props.location).toEqual({ type: 'device', id: 0 });
    expect(m.liveAllocations).toBe(1);
    expect(vmmErrorOf(() => b.importFd(42)).kind).toBe('invalid-fd');
    expect(vmmErrorOf(() => b.closeFd(42)).kind).toBe('invalid-fd');
    a.dispose();
    // b's descriptors and handle still hold the memory.
    expect(m.liveAllocations).toBe(1);
    expect(m.devices[0].pool.used).toBe(2 * MiB);
    b.dispose();
    expect(m.liveAllocations).toBe(0);
    expect(m.devices[0].pool.used).toBe(0);
  });

  it('process exit releases every mapping, handle, descriptor and stream it held', () => {
    const m = createMachine({ devices: ['H200', 'H200'], hostMemory: 64 * MiB });
    const p = m.spawn();
    const other = m.spawn();
    const keep = other.create(2 * MiB, dev(1));
    const handles = [p.create(2 * MiB, dev(0, 1)), p.create(4 * MiB, dev(1)), p.create(2 * MiB, HOST)];
    const va = p.reserve(16 * MiB, 2 * MiB, 0);
    p.map(va, 2 * MiB, handles[0], 0);
    p.map(va + 2 * MiB, 4 * MiB, handles[1], 0);
    p.map(va + 6 * MiB, 2 * MiB, handles[0], 0); // alias
    p.setAccess(va, 8 * MiB, 0, 3);
    p.write(0, va, new Uint8Array(100).fill(7), 0);
    p.release(handles[1]); // held by its mapping only
    p.exportFd(handles[0]);
    const s = p.createStream(0);
    p.fill(0, va, 1, 10, s); // queued, never run
    expect(m.liveAllocations).toBe(4);
    expect(m.residentBytes).toBeGreaterThan(0);
    p.dispose();
    expect(m.liveAllocations).toBe(1);
    expect(m.devices.map((d) => d.pool.used)).toEqual([0, 2 * MiB]);
    expect(m.host.used).toBe(0);
    expect(m.residentBytes).toBe(0);
    expect(m.processes).toEqual([other]);
    // Dispose twice is harmless.
    p.dispose();
    other.release(keep);
    expect(m.liveAllocations).toBe(0);
  });
});

describe('Machine: shareable tokens', () => {
  it('refuses the exporter, honours the pid list, and withdraws the token on unshare', () => {
    const m = createMachine();
    const a = m.spawn();
    const b = m.spawn();
    const c = m.spawn();
    const h = a.create(2 * MiB, dev());
    const token = a.exportShareable(h, true);
    expect(vmmErrorOf(() => a.importShareable(token)).kind).toBe('permission-denied');
    expect(vmmErrorOf(() => b.importShareable(token)).kind).toBe('permission-denied');
    // Only the exporter may extend the list.
    expect(vmmErrorOf(() => b.allowImport(token, [b.pid])).kind).toBe('invalid-fd');
    a.allowImport(token, [b.pid]);
    const imported = b.importShareable(token);
    expect(imported.size).toBe(2 * MiB);
    expect(vmmErrorOf(() => c.importShareable(token)).kind).toBe('permission-denied');
    expect(vmmErrorOf(() => b.importShareable(token + 1)).kind).toBe('invalid-fd');
    // Without pid checking anyone but the exporter may import.
    const open = a.exportShareable(h, false);
    c.release(c.importShareable(open).handle);
    expect(vmmErrorOf(() => a.importShareable(open)).kind).toBe('permission-denied');
    // Unshare: withdrawn for later importers; b's handle lives on.
    expect(vmmErrorOf(() => b.unshare(token)).kind).toBe('invalid-fd');
    a.unshare(token);
    a.allowImport(open, [c.pid]);
    a.unshare(open);
    expect(vmmErrorOf(() => c.importShareable(token)).kind).toBe('invalid-fd');
    expect(vmmErrorOf(() => c.importShareable(open)).kind).toBe('invalid-fd');
    a.release(h);
    expect(m.liveAllocations).toBe(1);
    b.release(imported.handle);
    expect(m.liveAllocations).toBe(0);
    expect(m.devices[0].pool.used).toBe(0);
  });

  it('a token holds its memory until its exporter exits', () => {
    const m = createMachine();
    const a = m.spawn();
    const b = m.spawn();
    const h = a.create(2 * MiB, dev());
    const token = a.exportShareable(h, false);
    a.release(h);
    expect(m.liveAllocations).toBe(1);
    const imported = b.importShareable(token);
    a.dispose();
    expect(vmmErrorOf(() => b.importShareable(token)).kind).toBe('invalid-fd');
    expect(m.liveAllocations).toBe(1);
    b.release(imported.handle);
    expect(m.liveAllocations).toBe(0);
    b.dispose();
  });
});
