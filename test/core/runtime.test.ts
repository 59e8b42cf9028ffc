import { describe, expect, it } from 'vitest';
import { createMachine, type Machine } from '../../src/backends/sim/machine.js';
import type { DeviceSpec } from '../../src/backends/sim/presets.js';
import { SimProcess } from '../../src/backends/sim/process.js';
import { Runtime } from '../../src/core/runtime.js';
import { Tracer, type TraceSpan } from '../../src/core/trace.js';
import { Access, type AllocationProperties, HandleType } from '../../src/core/types.js';
import { expectVmmError, snapshot } from './helpers.js';

const MiB = 1024 * 1024;
const G = 2 * MiB;
const TiB = 1024 * 1024 * MiB;

const onDevice = (id = 0, handleTypes = 0): AllocationProperties => ({
  location: { type: 'device', id },
  handleTypes,
  uncached: false,
});

function setup(devices: ('H200' | DeviceSpec)[] = ['H200', 'H200']): {
  machine: Machine;
  rt: Runtime;
  reports: unknown[][];
} {
  const machine = createMachine({ devices });
  const reports: unknown[][] = [];
  const rt = new Runtime(machine.spawn(), { report: (m, e) => reports.push([m, e]) });
  return { machine, rt, reports };
}

describe('Runtime: every validation is a typed error that changes nothing', () => {
  it('reserve, free, create, release, retain', () => {
    const { machine, rt } = setup();
    const other = new Runtime(machine.spawn());
    const r = rt.reserve(8 * G);
    const a = rt.create(G, onDevice());
    const dead = rt.create(G, onDevice());
    rt.release(dead);
    const m = rt.map(r.base, G, a);
    const foreign = other.create(G, onDevice());
    const foreignR = other.reserve(G);
    const allocs = [a, dead, foreign];
    const fails = (f: () => unknown, kind: Parameters<typeof expectVmmError>[1]) => {
      const before = snapshot(rt, machine, allocs);
      expectVmmError(f, kind);
      expect(snapshot(rt, machine, allocs)).toEqual(before);
    };
    for (const size of [0, 1, G + 1, -G, Number.NaN, 1.5 * G, 2 ** 60, Number.POSITIVE_INFINITY]) {
      fails(() => rt.reserve(size), 'invalid-value');
    }
    for (const alignment of [3, -1, 3 * G, 0.5, Number.NaN]) {
      fails(() => rt.reserve(G, { alignment }), 'invalid-value');
    }
    for (const hint of [-1, Number.NaN, 1.5]) fails(() => rt.reserve(G, { hint }), 'invalid-value');
    fails(() => rt.reserve(64 * TiB), 'out-of-memory');

    fails(() => rt.free(r), 'in-use');
    fails(() => rt.free(foreignR), 'not-reserved');
    const gone = rt.reserve(G);
    rt.free(gone);
    fails(() => rt.free(gone), 'not-reserved');

    for (const size of [0, -1, Number.NaN, 0.5]) fails(() => rt.create(size, onDevice()), 'invalid-value');
    for (const id of [2, -1, 0.5, 16]) fails(() => rt.create(G, onDevice(id)), 'invalid-device');
    fails(
      () => rt.create(G, { location: { type: 'disk' as 'host', id: 0 }, handleTypes: 0, uncached: false }),
      'invalid-value',
    );
    fails(
      () => rt.create(G, { location: { type: 'host', id: -1 }, handleTypes: 0, uncached: false }),
      'invalid-value',
    );
    fails(() => rt.create(200 * 1024 * MiB, onDevice()), 'out-of-memory');

    fails(() => rt.release(dead), 'invalid-handle');
    fails(() => rt.release(foreign), 'invalid-handle');

    fails(() => rt.retain(r.base + G), 'not-mapped');
    fails(() => rt.retain(0), 'not-mapped');
    expect(rt.retain(m.va)).toBe(a);
    rt.release(a);
    other.dispose();
  });

  it('map, unmap, setAccess, getAccess', () => {
    const { machine, rt } = setup();
    const r = rt.reserve(8 * G);
    const r2 = rt.reserve(2 * G);
    const a = rt.create(2 * G, onDevice());
    const b = rt.create(G, onDevice(1));
    const dead = rt.create(G, onDevice());
    rt.release(dead);
    rt.map(r.base, 2 * G, a);
    rt.map(r.base + 2 * G, G, b);
    rt.map(r.base + 4 * G, G, b);
    rt.setAccess(r.base, 2 * G, [{ device: 0, access: Access.Read }]);
    const allocs = [a, b, dead];
    const fails = (f: () => unknown, kind: Parameters<typeof expectVmmError>[1]) => {
      const before = snapshot(rt, machine, allocs);
      expectVmmError(f, kind);
      expect(snapshot(rt, machine, allocs)).toEqual(before);
    };
    const free = r.base + 5 * G;
    fails(() => rt.map(free, G, dead), 'invalid-handle');
    fails(() => rt.map(free + 4096, G, b), 'invalid-value');
    fails(() => rt.map(free, 0, b), 'invalid-value');
    fails(() => rt.map(free, G + 4096, b), 'invalid-value');
    fails(() => rt.map(free, G, a, 4096), 'invalid-value');
    fails(() => rt.map(free, 2 * G, a, G), 'invalid-value');
    fails(() => rt.map(free, 3 * G, a), 'invalid-value');
    fails(() => rt.map(-G, G, b), 'invalid-value');
    fails(() => rt.map(r.base + 8 * G + 100 * G, G, b), 'not-reserved');
    fails(() => rt.map(r.base + 7 * G, 2 * G, a), 'not-reserved'); // runs past the reservation's end
    fails(() => rt.map(r2.base + G, 2 * G, a), 'not-reserved');
    fails(() => rt.map(r.base + G, G, b), 'overlap'); // inside a's mapping
    fails(() => rt.map(r.base + 3 * G, 2 * G, a), 'overlap'); // covers the mapping at 4G
    fails(() => rt.map(r.base + 2 * G, G, b), 'overlap'); // same range

    // unmap and setAccess need a range of whole, adjacent mappings.
    const desc = [{ device: 1, access: Access.ReadWrite }] as const;
    for (const [va, size] of [
      [free, G], // nothing mapped
      [r.base + G, G], // inside a mapping
      [r.base, G], // ends inside a mapping
      [r.base, 0],
      [r.base + 2 * G, 3 * G], // hole at 3G
      [r.base, 5 * G], // hole
      [r.base + 2 * G, 2 * G], // ends in the hole
    ] as const) {
      fails(() => rt.unmap(va, size), 'not-mapped');
      fails(() => rt.setAccess(va, size, desc), 'not-mapped');
    }
    fails(() => rt.setAccess(r.base, 2 * G, [{ device: 2, access: Access.Read }]), 'invalid-device');
    fails(() => rt.setAccess(r.base, 2 * G, [{ device: 0, access: 2 as Access }]), 'invalid-value');
    fails(
      () =>
        rt.setAccess(r.base, 2 * G, [
          { device: 1, access: Access.ReadWrite },
          { device: 0, access: 7 as Access },
        ]),
      'invalid-value',
    );

    fails(() => rt.getAccess(r.base, 2), 'invalid-device');
    fails(() => rt.getAccess(r.base, -1), 'invalid-device');
    fails(() => rt.getAccess(free, 0), 'not-mapped');
    expect(rt.getAccess(r.base + G + 5, 0)).toBe(Access.Read);
    expect(rt.getAccess(r.base, 1)).toBe(Access.None);

    // Two adjacent mappings go in one call, and access set across them lands on both.
    rt.map(r.base + 3 * G, G, b);
    rt.setAccess(r.base, 5 * G, [{ device: 1, access: Access.ReadWrite }]);
    for (const va of [r.base, r.base + 2 * G, r.base + 3 * G, r.base + 4 * G])
      expect(rt.getAccess(va, 1)).toBe(3);
    rt.unmap(r.base + 2 * G, 3 * G);
    expect(rt.stats().mappings).toBe(1);
  });

  it('bytes, sharing, one-step allocations and streams', () => {
    const { machine, rt } = setup();
    const r = rt.reserve(4 * G);
    const a = rt.create(G, onDevice());
    const shareable = rt.create(G, onDevice(0, HandleType.PosixFd));
    const m = rt.map(r.base, G, a);
    const one = rt.malloc(0, 100);
    const allocs = [a, shareable];
    const fails = (f: () => unknown, kind: Parameters<typeof expectVmmError>[1]) => {
      const before = snapshot(rt, machine, allocs);
      expectVmmError(f, kind);
      expect(snapshot(rt, machine, allocs)).toEqual(before);
    };
    const buf = new Uint8Array(16).fill(1);
    fails(() => rt.write(0, m.va, buf), 'access-denied');
    fails(() => rt.read(0, m.va, buf), 'access-denied');
    fails(() => rt.fill(0, m.va, 1, 16), 'access-denied');
    rt.setAccess(m.va, G, [{ device: 0, access: Access.Read }]);
    fails(() => rt.write(0, m.va, buf), 'access-denied');
    fails(() => rt.copy(0, m.va, m.va + 100, 16), 'access-denied');
    fails(() => rt.write(1, m.va, buf), 'access-denied');
    fails(() => rt.write(2, m.va, buf), 'invalid-device');
    fails(() => rt.read(0, r.base + G, buf), 'not-mapped');
    fails(() => rt.read(0, m.va + G - 8, buf), 'not-mapped'); // runs off the mapping's end
    fails(() => rt.copy(0, m.va, m.va, -1), 'invalid-value');
    fails(() => rt.fill(0, m.va, 0, Number.NaN), 'invalid-value');
    rt.setAccess(m.va, G, [{ device: 0, access: Access.ReadWrite }]);
    fails(() => rt.copy(0, r.base + G, m.va, 16), 'not-mapped');
    rt.write(0, m.va, buf);

    fails(() => rt.exportFd(a), 'not-supported');
    const released = rt.create(G, onDevice(0, HandleType.PosixFd));
    rt.release(released);
    fails(() => rt.exportFd(released), 'invalid-handle');
    for (const fd of [-1, 1.5, 99, Number.NaN]) fails(() => rt.importFd(fd), 'invalid-fd');
    const fd = rt.exportFd(shareable);
    const imported = rt.importFd(fd);
    expect(imported).not.toBe(shareable);
    expect(imported.id).not.toBe(shareable.id);
    allocs.push(imported);

    fails(() => rt.malloc(2, G), 'invalid-device');
    fails(() => rt.malloc(0, 0), 'invalid-value');
    fails(() => rt.malloc(0, -5), 'invalid-value');
    fails(() => rt.malloc(0, 200 * 1024 * MiB), 'out-of-memory');
    fails(() => rt.mfree(r.base), 'not-reserved');
    fails(() => rt.mfree(one.base + G), 'not-reserved');
    fails(() => rt.retain(one.base), 'not-mapped');

    fails(() => rt.createStream(2), 'invalid-device');
    fails(() => rt.destroyStream(99), 'invalid-stream');
    fails(() => rt.synchronizeStream(99), 'invalid-stream');
    fails(() => rt.synchronize(5), 'invalid-device');
    fails(() => rt.write(0, m.va, buf, 12345), 'invalid-stream');
    const s = rt.createStream(1);
    // A stream of another device: refused at the call.
    fails(() => rt.write(0, m.va, buf, s), 'invalid-context');
    rt.destroyStream(s);
    fails(() => rt.destroyStream(s), 'invalid-stream');
    rt.mfree(one.base);
    fails(() => rt.mfree(one.base), 'not-reserved');
  });
});

describe('Runtime: reference counts', () => {
  it('create 1, +1 per map and retain, -1 per unmap and release; memory goes exactly at 0', () => {
    const { machine, rt } = setup();
    const r = rt.reserve(4 * G);
    const a = rt.create(G, onDevice());
    const live = () => machine.liveAllocations;
    expect([a.refCount, live()]).toEqual([1, 1]);
    const m1 = rt.map(r.base, G, a);
    const m2 = rt.map(r.base + 2 * G, G, a);
    expect(a.refCount).toBe(3);
    expect(rt.retain(m1.va)).toBe(a);
    expect(rt.retain(m2.va + 12345)).toBe(a); // interior address of the alias
    expect([a.handleRefs, a.mapRefs, a.refCount]).toEqual([3, 2, 5]);
    rt.release(a);
    rt.release(a);
    rt.release(a);
    expect(a.handleRefs).toBe(0);
    expect(rt.allocation(a.id)).toBeUndefined();
    expectVmmError(() => rt.release(a), 'invalid-handle');
    expect([a.refCount, live(), machine.devices[0].pool.used]).toEqual([2, 1, G]);
    // Mapped memory is still usable with no handle reference.
    rt.setAccess(r.base, G, [{ device: 0, access: Access.ReadWrite }]);
    rt.write(0, r.base + 10, Uint8Array.of(42));
    // retain brings the same handle back.
    expect(rt.retain(r.base + 5)).toBe(a);
    expect(rt.allocation(a.id)).toBe(a);
    rt.release(a);
    rt.unmap(m1.va, G);
    expect([a.refCount, live()]).toEqual([1, 1]);
    rt.unmap(m2.va, G);
    expect([a.refCount, live(), machine.devices[0].pool.used]).toEqual([0, 0, 0]);
    expect(a.owner).toBeUndefined();
    rt.free(r);
    expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  });

  it('an imported handle holds the memory independently of the exporter’s handle', () => {
    const { machine, rt } = setup();
    const a = rt.create(G, onDevice(0, HandleType.PosixFd));
    const fd = rt.exportFd(a);
    const b = rt.importFd(fd);
    rt.release(a);
    expect(machine.liveAllocations).toBe(1);
    rt.release(b);
    // The descriptor still holds the memory until the process exits.
    expect(machine.liveAllocations).toBe(1);
    rt.dispose();
    expect(machine.liveAllocations).toBe(0);
  });
});

describe('Runtime: multi-step operations roll back', () => {
  it('malloc on a device too small for the create leaves no reservation behind', () => {
    const tiny: DeviceSpec = {
      name: 'tiny',
      totalMemory: 4 * MiB,
      minimumGranularity: G,
      recommendedGranularity: G,
    };
    const { machine, rt, reports } = setup([tiny]);
    const probe = rt.reserve(G);
    rt.free(probe);
    const before = snapshot(rt, machine);
    expectVmmError(() => rt.malloc(0, 5 * MiB), 'out-of-memory');
    expect(snapshot(rt, machine)).toEqual(before);
    expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    expect(reports).toEqual([]);
    // The VA went back too: the next reservation lands where the first did.
    expect(rt.reserve(G).base).toBe(probe.base);
    // And what fits still works.
    const ok = rt.malloc(0, 3 * MiB);
    expect(machine.devices[0].pool.used).toBe(4 * MiB);
    expect(rt.getAccess(ok.base, 0)).toBe(Access.ReadWrite);
    rt.write(0, ok.base, new Uint8Array(4 * MiB).fill(1));
    rt.mfree(ok.base);
    expect(machine.devices[0].pool.used).toBe(0);
  });

  // A setAccess failing at its second descriptor: test/core/fault-injection.test.ts, with every other step.
  it('unmap waits for work queued on streams', () => {
    const { machine, rt } = setup();
    const r = rt.reserve(2 * G);
    const a = rt.create(G, onDevice());
    rt.map(r.base, G, a);
    rt.map(r.base + G, G, a); // alias
    rt.setAccess(r.base, 2 * G, [{ device: 0, access: Access.ReadWrite }]);
    const s = rt.createStream(0);
    rt.fill(0, r.base + 100, 0x5a, 10, s);
    rt.write(0, r.base + 200, Uint8Array.of(1, 2, 3), s);
    // Nothing ran yet: the alias reads zeros.
    const out = new Uint8Array(3);
    const view = new Uint8Array(3);
    rt.read(0, r.base + G + 200, view, s); // queued too
    rt.unmap(r.base, G);
    rt.read(0, r.base + G + 100, out);
    expect(out).toEqual(Uint8Array.of(0x5a, 0x5a, 0x5a));
    expect(view).toEqual(Uint8Array.of(1, 2, 3));
    expect(machine.devices[0].bytesMoved).toBeGreaterThan(0);
    rt.dispose();
  });

  it('a queued copy runs in order after earlier queued work on its stream', () => {
    const { rt } = setup();
    const m = rt.malloc(0, G);
    const s = rt.createStream(0);
    rt.fill(0, m.base, 7, 64, s);
    rt.copy(0, m.base + 64, m.base, 64, s);
    rt.fill(0, m.base, 9, 32, s);
    const out = new Uint8Array(128);
    rt.read(0, m.base, out, s);
    expect(out.some((x) => x !== 0)).toBe(false);
    rt.synchronizeStream(s);
    const expected = new Uint8Array(128).fill(7);
    expected.fill(9, 0, 32);
    expect(out).toEqual(expected);
    rt.dispose();
  });

  // Found by this suite: a failing drain used to leave the stream counted in the runtime forever.
  it('a destroyStream whose queued work fails still forgets the stream', () => {
    const { rt, reports } = setup();
    const r = rt.reserve(G);
    const a = rt.create(G, onDevice());
    rt.map(r.base, G, a);
    rt.setAccess(r.base, G, [{ device: 0, access: Access.ReadWrite }]);
    const s = rt.createStream(0);
    rt.fill(0, r.base, 1, 10, s); // accepted at enqueue
    rt.setAccess(r.base, G, [{ device: 0, access: Access.None }]); // fails when it runs
    expectVmmError(() => rt.destroyStream(s), 'device-fault');
    expect(rt.hasStream(s)).toBe(false);
    expect(rt.stats().streams).toBe(0);
    rt.dispose();
    expect(reports).toEqual([]);
  });

  it('dispose never throws, reports what failed, and leaves the machine empty', () => {
    const machine = createMachine({ devices: ['H200', 'H200'] });
    class Broken extends SimProcess {
      override unmap(va: number, size: number): void {
        super.unmap(va, size);
        throw new Error('injected unmap failure');
      }
    }
    const reports: unknown[] = [];
    const rt = new Runtime(new Broken(machine, 77_777), { report: (m, e) => reports.push([m, e]) });
    const r = rt.reserve(8 * G);
    const a = rt.create(G, onDevice(0, HandleType.PosixFd));
    const b = rt.create(2 * G, onDevice(1));
    rt.map(r.base, G, a);
    rt.map(r.base + G, 2 * G, b);
    rt.map(r.base + 4 * G, G, a);
    rt.setAccess(r.base, 3 * G, [{ device: 0, access: Access.ReadWrite }]);
    rt.release(b);
    rt.retain(r.base);
    rt.exportFd(a);
    rt.malloc(1, 5);
    const s = rt.createStream(0);
    rt.write(0, r.base, new Uint8Array(10).fill(3), s);
    // Queued work that will fail when the stream runs: device 0 loses access first.
    rt.setAccess(r.base + G, 2 * G, [{ device: 0, access: Access.None }]);
    rt.fill(0, r.base, 1, 10, s);
    rt.setAccess(r.base, G, [{ device: 0, access: Access.Read }]);
    expect(machine.residentBytes).toBe(0);
    expect(() => rt.dispose()).not.toThrow();
    expect(rt.disposed).toBe(true);
    expect(reports.length).toBeGreaterThan(0);
    expect(machine.liveAllocations).toBe(0);
    expect(machine.devices.map((d) => d.pool.used)).toEqual([0, 0]);
    expect(machine.residentBytes).toBe(0);
    expect(machine.processes).toEqual([]);
    expect(() => rt.dispose()).not.toThrow();
    expect(() => rt[Symbol.dispose]()).not.toThrow();
  });

  it('dispose of a healthy runtime reports nothing and empties everything', () => {
    const { machine, rt, reports } = setup();
    const r = rt.reserve(4 * G);
    const a = rt.create(G, onDevice());
    rt.map(r.base, G, a);
    rt.retain(r.base);
    rt.malloc(0, 1);
    rt.createStream(1);
    rt.dispose();
    expect(reports).toEqual([]);
    expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    expect(machine.liveAllocations).toBe(0);
    expect(machine.devices.map((d) => d.pool.used)).toEqual([0, 0]);
  });
});

describe('Runtime: tracing', () => {
  function find(spans: readonly TraceSpan[], pred: (s: TraceSpan) => boolean): TraceSpan | undefined {
    for (const s of spans) {
      if (pred(s)) return s;
      const inner = find(s.children, pred);
      if (inner) return inner;
    }
    return undefined;
  }

  it('a core call opens a core span with a backend child holding device events', () => {
    const machine = createMachine();
    const tracer = new Tracer();
    const rt = new Runtime(machine.spawn({ tracer }), { tracer });
    const r = rt.reserve(2 * G);
    const a = rt.create(G, onDevice());
    tracer.clear();
    rt.map(r.base, G, a);
    expect(tracer.roots).toHaveLength(1);
    const map = tracer.roots[0];
    expect(map).toMatchObject({ layer: 'core', name: 'map' });
    expect(map.args[0]).toBe(r.base);
    expect(map.error).toBeUndefined();
    const backendMap = map.children.find((c) => c.layer === 'backend' && c.name === 'map');
    expect(backendMap).toBeDefined();
    expect(backendMap!.children.some((c) => c.layer === 'device' && c.name === 'vm.bind')).toBe(true);

    tracer.clear();
    rt.setAccess(r.base, G, [{ device: 0, access: Access.ReadWrite }]);
    const set = tracer.roots[0];
    expect(set).toMatchObject({ layer: 'core', name: 'setAccess' });
    expect(find(set.children, (s) => s.layer === 'device' && s.name === 'pte.set')).toBeDefined();

    tracer.clear();
    rt.write(0, r.base, new Uint8Array(8));
    expect(find(tracer.roots, (s) => s.layer === 'device' && s.name.startsWith('copyEngine'))).toBeDefined();

    // A failing call records its error.
    tracer.clear();
    expect(() => rt.unmap(r.base + G, G)).toThrow();
    expect(tracer.roots[0]).toMatchObject({ layer: 'core', name: 'unmap' });
    expect(tracer.roots[0].error).toMatch(/not-mapped/);
    expect(tracer.roots[0].durationUs).toBeGreaterThanOrEqual(0);
    rt.dispose();
  });

  it('without a tracer the methods are the prototype’s, not wrappers', () => {
    const rt = new Runtime(createMachine().spawn());
    for (const name of [
      'reserve',
      'free',
      'create',
      'release',
      'map',
      'unmap',
      'setAccess',
      'write',
      'malloc',
    ] as const) {
      expect(Object.hasOwn(rt, name)).toBe(false);
      expect(rt[name]).toBe(Runtime.prototype[name]);
    }
    const backend = createMachine().spawn();
    expect(Object.hasOwn(backend, 'map')).toBe(false);
    expect(backend.map).toBe(SimProcess.prototype.map);
    const tracer = new Tracer();
    const traced = new Runtime(createMachine().spawn({ tracer }), { tracer });
    expect(Object.hasOwn(traced, 'map')).toBe(true);
    expect(traced.map).not.toBe(Runtime.prototype.map);
  });
});

describe('Runtime: objects are disposable', () => {
  it('`using` unmaps, releases and frees in reverse order, leaving nothing behind', () => {
    const machine = createMachine({ devices: ['H200'] });
    const rt = new Runtime(machine.spawn());
    {
      using r = rt.reserve(2 * G);
      using a = rt.create(G, onDevice());
      using m = rt.map(r.base, G, a);
      rt.setAccess(m.va, G, [{ device: 0, access: Access.ReadWrite }]);
      rt.write(0, m.va, new Uint8Array([1, 2, 3]));
      expect(rt.stats()).toMatchObject({ reservations: 1, mappings: 1, handles: 1 });
    }
    expect(rt.stats()).toMatchObject({ reservations: 0, mappings: 0, handles: 0 });
    expect(machine.liveAllocations).toBe(0);
  });

  it('disposing an object that cannot go reports instead of throwing, and disposing twice is harmless', () => {
    const reports: string[] = [];
    const rt = new Runtime(createMachine({ devices: ['H200'] }).spawn(), { report: (m) => reports.push(m) });
    const r = rt.reserve(G);
    const a = rt.create(G, onDevice());
    const m = rt.map(r.base, G, a);
    expect(() => r[Symbol.dispose]()).not.toThrow(); // still mapped: refused, reported
    expect(reports).toHaveLength(1);
    expect(rt.reservationAt(r.base)).toBe(r);
    m[Symbol.dispose]();
    m[Symbol.dispose]();
    a[Symbol.dispose]();
    a[Symbol.dispose]();
    r[Symbol.dispose]();
    expect(reports).toHaveLength(1);
    expect(rt.stats()).toMatchObject({ reservations: 0, mappings: 0, handles: 0 });
  });
});
