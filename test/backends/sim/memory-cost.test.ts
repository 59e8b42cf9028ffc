import { expect, it } from 'vitest';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { Runtime } from '../../../src/core/runtime.js';
import { Access } from '../../../src/core/types.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

it('a fully mapped H200 with 1 GiB written costs about 1 GiB of host memory', () => {
  const machine = createMachine({ devices: ['H200'] });
  const rt = new Runtime(machine.spawn());
  const chunk = 2 * MiB;
  const count = Math.floor(machine.devices[0].info.totalMemory / chunk);
  expect(count).toBe(71_577);
  const rssBefore = process.memoryUsage().rss;

  const r = rt.reserve(count * chunk);
  const handles = [];
  for (let i = 0; i < count; i++) {
    const a = rt.create(chunk, { location: { type: 'device', id: 0 }, handleTypes: 0, uncached: false });
    rt.map(r.base + i * chunk, chunk, a, 0);
    handles.push(a);
  }
  rt.setAccess(r.base, count * chunk, [{ device: 0, access: Access.ReadWrite }]);
  // The device is full.
  expect(machine.devices[0].pool.free).toBeLessThan(chunk);
  expect(rt.stats().mappings).toBe(count);

  // 1 GiB of nonzero bytes, written 2 MiB at a time, spread over the whole range.
  const src = new Uint8Array(chunk).fill(0xa5);
  const written = GiB / chunk;
  const stride = Math.floor(count / written);
  for (let i = 0; i < written; i++) rt.write(0, r.base + i * stride * chunk, src);
  const probe = new Uint8Array(16);
  rt.read(0, r.base + (written - 1) * stride * chunk + 100, probe);
  expect(probe).toEqual(new Uint8Array(16).fill(0xa5));
  rt.read(0, r.base + chunk, probe);
  expect(probe).toEqual(new Uint8Array(16));

  expect(machine.residentBytes).toBeGreaterThanOrEqual(GiB);
  expect(machine.residentBytes).toBeLessThanOrEqual(1.1 * GiB);
  const grown = process.memoryUsage().rss - rssBefore;
  expect(grown).toBeLessThan(1.25 * GiB);

  rt.dispose();
  expect(machine.residentBytes).toBe(0);
  expect(machine.liveAllocations).toBe(0);
  expect(machine.devices[0].pool.used).toBe(0);
});
