import { describe, expect, it } from 'vitest';
import { createMachine } from '../../src/backends/sim/machine.js';
import { Runtime } from '../../src/core/runtime.js';
import { Access } from '../../src/core/types.js';
import { expectVmmError, snapshot } from './helpers.js';

/** exportMalloc / importMalloc / unshare (Note [One-step sharing] in runtime.ts). */

const G = 2 * 1024 * 1024;

function world(processes = 2) {
  const machine = createMachine({ devices: ['H200', 'H200'] });
  const rts = Array.from({ length: processes }, () => new Runtime(machine.spawn()));
  return { machine, rts };
}

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff);

describe('one-step sharing between processes of one machine', () => {
  it('the importer maps the same bytes, writable by its device at once; both directions are seen', () => {
    const { machine, rts } = world();
    const [a, b] = rts;
    const r = a.malloc(0, 3 * G);
    a.write(0, r.base + 5, bytes(4096, 1));
    const token = a.exportMalloc(r.base, false);
    const inB = b.importMalloc(token, 1);
    expect(inB.origin).toBe('malloc');
    expect(inB.size).toBe(r.size);
    const got = new Uint8Array(4096);
    b.read(1, inB.base + 5, got);
    expect(got).toEqual(bytes(4096, 1));
    expect(b.getAccess(inB.base, 1)).toBe(Access.ReadWrite);
    expect(b.getAccess(inB.base, 0)).toBe(Access.None);
    b.write(1, inB.base + 2 * G, bytes(64, 2));
    const back = new Uint8Array(64);
    a.read(0, r.base + 2 * G, back);
    expect(back).toEqual(bytes(64, 2));
    // One memory, held twice: no second allocation on the device.
    expect(machine.devices[0].pool.used).toBe(3 * G);
    expect(machine.devices[1].pool.used).toBe(0);
    // VMM calls do not touch it: no handle, no unmap, no access change.
    expectVmmError(() => b.retain(inB.base), 'not-mapped');
    expectVmmError(() => b.unmap(inB.base, inB.size), 'not-mapped');
    expectVmmError(() => b.free(inB), 'not-reserved');
    b.mfree(inB.base);
    a.mfree(r.base);
    expect(machine.liveAllocations).toBe(0);
    expect(machine.devices[0].pool.used).toBe(0);
  });

  it('with checkPid only processes named by allowImport import it, and never the exporter', () => {
    const { machine, rts } = world(3);
    const [a, b, c] = rts;
    const r = a.malloc(0, G);
    const token = a.exportMalloc(r.base, true);
    const before = snapshot(b, machine);
    expectVmmError(() => b.importMalloc(token, 0), 'permission-denied');
    expect(snapshot(b, machine)).toEqual(before);
    a.allowImport(token, [b.pid]);
    b.importMalloc(token, 0);
    expectVmmError(() => c.importMalloc(token, 0), 'permission-denied');
    expectVmmError(() => a.importMalloc(token, 0), 'permission-denied');
    for (const rt of rts) rt.dispose();
  });

  it('memory lives until its last holder lets go: the exporter frees first, then the importer', () => {
    const { machine, rts } = world(3);
    const [a, b, c] = rts;
    const r = a.malloc(0, G);
    a.fill(0, r.base, 9, 128);
    const token = a.exportMalloc(r.base, false);
    const inB = b.importMalloc(token, 0);
    a.mfree(r.base);
    // The token went with the exporter's memory; the importer's mapping still holds the memory.
    expectVmmError(() => c.importMalloc(token, 0), 'invalid-fd');
    expectVmmError(() => a.unshare(token), 'invalid-fd');
    expect(machine.devices[0].pool.used).toBe(G);
    const got = new Uint8Array(128);
    b.read(0, inB.base, got);
    expect(got).toEqual(new Uint8Array(128).fill(9));
    b.mfree(inB.base);
    expect(machine.devices[0].pool.used).toBe(0);
    expect(machine.liveAllocations).toBe(0);
  });

  it('unshare withdraws a token early: later imports fail, earlier ones and the memory stay', () => {
    const { machine, rts } = world(3);
    const [a, b, c] = rts;
    const r = a.malloc(0, G);
    const token = a.exportMalloc(r.base, false);
    const second = a.exportMalloc(r.base, false);
    expect(second).not.toBe(token);
    const inB = b.importMalloc(token, 0);
    const exportsOf = () => a.describe().allocations.find((x) => x.origin === 'malloc')?.exports;
    expect(exportsOf()).toBe(2);
    a.unshare(token);
    // The count says what is still shared.
    expect(exportsOf()).toBe(1);
    expectVmmError(() => a.unshare(token), 'invalid-fd');
    expectVmmError(() => c.importMalloc(token, 0), 'invalid-fd');
    // The other token of the same memory still works.
    const inC = c.importMalloc(second, 0);
    a.fill(0, r.base, 4, 8);
    const got = new Uint8Array(8);
    b.read(0, inB.base, got);
    expect(got).toEqual(new Uint8Array(8).fill(4));
    c.read(0, inC.base, got);
    expect(got).toEqual(new Uint8Array(8).fill(4));
    // Freeing withdraws only what is still shared: nothing is reported as failing.
    a.mfree(r.base);
    b.mfree(inB.base);
    c.mfree(inC.base);
    expect(machine.liveAllocations).toBe(0);
  });

  it('exportMalloc takes only the start of a one-step allocation; unshare only a token this process shares', () => {
    const { rts } = world();
    const [a, b] = rts;
    const r = a.malloc(0, 2 * G);
    const v = a.reserve(G);
    expectVmmError(() => a.exportMalloc(r.base + G, false), 'not-reserved');
    expectVmmError(() => a.exportMalloc(v.base, false), 'not-reserved');
    expectVmmError(() => a.exportMalloc(12345, false), 'not-reserved');
    const token = a.exportMalloc(r.base, false);
    expectVmmError(() => b.unshare(token), 'invalid-fd');
    expectVmmError(() => b.importMalloc(token, 7), 'invalid-device');
    expectVmmError(() => b.importMalloc(token + 999, 0), 'invalid-fd');
    a.dispose();
    b.dispose();
    expectVmmError(() => a.exportMalloc(r.base, false), 'not-initialized');
  });

  it('a backend that cannot tell the size behind a token: importMalloc refuses and holds nothing', () => {
    const { machine, rts } = world(1);
    const [a] = rts;
    const token = a.exportMalloc(a.malloc(0, G).base, false);
    const inner = machine.spawn();
    const sizeless = new Proxy(inner, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver);
        if (key !== 'importShareable') return typeof v === 'function' ? v.bind(target) : v;
        return (t: number) => ({ ...target.importShareable(t), size: undefined });
      },
    });
    const b = new Runtime(sizeless);
    const before = snapshot(b, machine);
    expectVmmError(() => b.importMalloc(token, 0), 'not-supported');
    expect(snapshot(b, machine)).toEqual(before);
    b.dispose();
    a.dispose();
    expect(machine.liveAllocations).toBe(0);
  });

  it("an exporter's exit withdraws its tokens but leaves an importer's memory intact", () => {
    const { machine, rts } = world(3);
    const [a, b, c] = rts;
    const r = a.malloc(0, G);
    a.fill(0, r.base, 3, 16);
    const token = a.exportMalloc(r.base, false);
    const inB = b.importMalloc(token, 0);
    a.dispose();
    expectVmmError(() => c.importMalloc(token, 0), 'invalid-fd');
    const got = new Uint8Array(16);
    b.read(0, inB.base, got);
    expect(got).toEqual(new Uint8Array(16).fill(3));
    b.dispose();
    expect(machine.liveAllocations).toBe(0);
  });
});
