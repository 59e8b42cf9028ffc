import { describe, expect, it } from 'vitest';
import { createMachine } from '../../src/backends/sim/machine.js';
import { Runtime } from '../../src/core/runtime.js';
import { Access, type AllocationProperties } from '../../src/core/types.js';
import { expectVmmError, snapshot } from './helpers.js';

const G = 2 * 1024 * 1024;
const onDevice = (handleTypes = 0): AllocationProperties => ({
  location: { type: 'device', id: 0 },
  handleTypes,
  uncached: false,
});

describe('invariant 6: a disposed runtime refuses everything and changes nothing', () => {
  it('every operation throws not-initialized; the shared machine is untouched', () => {
    const machine = createMachine();
    const neighbour = new Runtime(machine.spawn());
    const kept = neighbour.malloc(0, G);
    const rt = new Runtime(machine.spawn());
    const r = rt.reserve(4 * G);
    const a = rt.create(G, onDevice(1));
    rt.map(r.base, G, a);
    const s = rt.createStream(0);
    rt.dispose();
    const before = snapshot(neighbour, machine);
    const buf = new Uint8Array(8);
    const calls: [string, () => unknown][] = [
      ['reserve', () => rt.reserve(G)],
      ['free', () => rt.free(r)],
      ['create', () => rt.create(G, onDevice())],
      ['release', () => rt.release(a)],
      ['retain', () => rt.retain(r.base)],
      ['map', () => rt.map(r.base, G, a)],
      ['unmap', () => rt.unmap(r.base, G)],
      ['setAccess', () => rt.setAccess(r.base, G, [{ device: 0, access: Access.ReadWrite }])],
      ['exportFd', () => rt.exportFd(a)],
      ['importFd', () => rt.importFd(3)],
      ['closeFd', () => rt.closeFd(3)],
      ['exportShareable', () => rt.exportShareable(a, false)],
      ['allowImport', () => rt.allowImport(1, [1])],
      ['importShareable', () => rt.importShareable(1)],
      ['write', () => rt.write(0, kept.base, buf)],
      ['read', () => rt.read(0, kept.base, buf)],
      ['copy', () => rt.copy(0, kept.base, kept.base, 8)],
      ['fill', () => rt.fill(0, kept.base, 1, 8)],
      ['malloc', () => rt.malloc(0, G)],
      ['mfree', () => rt.mfree(kept.base)],
      ['createStream', () => rt.createStream(0)],
      ['destroyStream', () => rt.destroyStream(s)],
      ['synchronizeStream', () => rt.synchronizeStream(s)],
      ['synchronize', () => rt.synchronize()],
      ['memoryInfo', () => rt.memoryInfo(0)],
      ['getAccess', () => rt.getAccess(r.base, 0)],
    ];
    for (const [name, call] of calls) {
      const e = expectVmmError(call, 'not-initialized');
      expect(e.message, name).toContain('torn down');
    }
    expect(snapshot(neighbour, machine)).toEqual(before);
    expect(machine.devices[0].pool.used).toBe(G);
    rt.dispose(); // twice is fine
    neighbour.dispose();
    expect(machine.liveAllocations).toBe(0);
  });
});

describe('invariant 5: handle values are never reused within a process', () => {
  it('a released handle stays invalid while new ones get new values', () => {
    const rt = new Runtime(createMachine().spawn());
    const first = rt.create(G, onDevice());
    const id = first.id;
    rt.release(first);
    const seen = new Set([id]);
    for (let i = 0; i < 50; i++) {
      const a = rt.create(G, onDevice());
      expect(seen.has(a.id)).toBe(false);
      seen.add(a.id);
      rt.release(a);
    }
    expect(rt.allocation(id)).toBeUndefined();
    expectVmmError(() => rt.release(first), 'invalid-handle');
    const live = rt.create(G, onDevice());
    expectVmmError(() => rt.release(first), 'invalid-handle');
    expect(live.handleRefs).toBe(1);
    rt.dispose();
  });
});

describe("Note [Core-owned state]: only core changes its objects' state", () => {
  it('owner, counts and access bits cannot be written from outside', () => {
    const rt = new Runtime(createMachine().spawn());
    const r = rt.reserve(G);
    const a = rt.create(G, onDevice());
    const m = rt.map(r.base, G, a);
    rt.setAccess(m.va, m.size, [{ device: 0, access: Access.ReadWrite }]);
    const writes: (() => void)[] = [
      () => ((r as { owner: unknown }).owner = undefined),
      () => ((r as { mappingCount: number }).mappingCount = 0),
      () => ((a as { handleRefs: number }).handleRefs = 5),
      () => ((a as { mapRefs: number }).mapRefs = 0),
      () => ((m as { accessBits: number }).accessBits = 0),
    ];
    for (const w of writes) expect(w).toThrow(TypeError);
    expect([r.owner, r.mappingCount, a.handleRefs, a.mapRefs, m.accessOf(0)]).toEqual([rt, 1, 1, 1, 3]);
    rt.dispose();
  });
});

describe('VMM calls never touch one-step allocations', () => {
  it('unmap, setAccess, map into and free of malloc memory are refused; mfree still works', () => {
    const machine = createMachine();
    const rt = new Runtime(machine.spawn());
    const p = rt.malloc(0, G);
    const a = rt.create(G, onDevice());
    const before = snapshot(rt, machine, [a]);
    expectVmmError(() => rt.unmap(p.base, G), 'not-mapped');
    expectVmmError(() => rt.setAccess(p.base, G, [{ device: 0, access: Access.Read }]), 'not-mapped');
    expectVmmError(() => rt.free(p), 'not-reserved');
    expect(snapshot(rt, machine, [a])).toEqual(before);
    rt.mfree(p.base);
    expectVmmError(() => rt.mfree(p.base), 'not-reserved');
    rt.release(a);
    expect(machine.liveAllocations).toBe(0);
    rt.dispose();
  });
});

describe('describe(): a process as plain data', () => {
  it('lists reservations with their mappings in order, access per device, and live handles', () => {
    const rt = new Runtime(createMachine({ devices: ['H200', 'H200'] }).spawn());
    const r = rt.reserve(4 * G);
    const a = rt.create(2 * G, onDevice());
    rt.map(r.base + 2 * G, 2 * G, a);
    rt.map(r.base, 2 * G, a);
    rt.setAccess(r.base, 4 * G, [{ device: 1, access: Access.Read }]);
    const p = rt.malloc(0, G);
    // The malloc's 2 MiB lands in the start-up heap's hole, below r (Note [Driver VA placement]).
    expect(p.base).toBeLessThan(r.base);
    const d = rt.describe();
    expect(d.pid).toBe(rt.pid);
    expect(d.reservations.map((x) => [x.base, x.size, x.origin, x.mappings.length])).toEqual([
      [p.base, G, 'malloc', 1],
      [r.base, 4 * G, 'vmm', 2],
    ]);
    expect(d.reservations[1].mappings.map((m) => [m.va - r.base, m.handle, m.access])).toEqual([
      [0, a.id, [0, 1]],
      [2 * G, a.id, [0, 1]],
    ]);
    expect(d.allocations.find((x) => x.handle === a.id)).toMatchObject({
      size: 2 * G,
      handleRefs: 1,
      mapRefs: 2,
    });
    expect(JSON.parse(JSON.stringify(d)).reservations[0].mappings[0].access).toEqual([3, 0]);
    rt.dispose();
  });
});

describe('malloc with a placement hint', () => {
  it('is placed at a free hinted address and is an ordinary one-step allocation; a taken hint is ignored', () => {
    const machine = createMachine();
    const rt = new Runtime(machine.spawn());
    const probe = rt.reserve(8 * G);
    const at = probe.base + 4 * G;
    rt.free(probe);
    const p = rt.malloc(0, G, { hint: at });
    expect(p.base).toBe(at);
    expect(p.origin).toBe('malloc');
    const q = rt.malloc(0, G, { hint: at });
    expect(q.base).not.toBe(at);
    rt.mfree(p.base);
    rt.mfree(q.base);
    expect(machine.liveAllocations).toBe(0);
    rt.dispose();
  });
});
