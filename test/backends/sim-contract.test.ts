import { describe, expect, it } from 'vitest';
import { BACKEND_CONTRACT } from '../../conformance/backend/contract.js';
import { createMachine } from '../../src/index.js';

describe.each([
  ['one H200', ['H200'] as const],
  ['two H200s', ['H200', 'H200'] as const],
  ['one MI300X', ['MI300X'] as const],
  ['one Ascend910B', ['Ascend910B'] as const],
])('backend contract: simulator with %s', (_, devices) => {
  it.each(BACKEND_CONTRACT.map((c) => [c.name, c] as const))('%s', (_name, check) => {
    const machine = createMachine({ devices: [...devices] });
    const backend = machine.spawn();
    check.run(backend);
    backend.dispose();
    // Every check leaves nothing behind.
    expect(machine.liveAllocations).toBe(0);
    expect(machine.devices.map((d) => d.pool.used)).toEqual(devices.map(() => 0));
  });
});
