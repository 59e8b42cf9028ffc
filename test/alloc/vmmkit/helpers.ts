import { createMachine, type Machine } from '../../../src/backends/sim/machine.js';
import type { DeviceSpec } from '../../../src/backends/sim/presets.js';
import type { SimProcess } from '../../../src/backends/sim/process.js';
import { Runtime } from '../../../src/core/runtime.js';
import { FaultyBackend } from '../../support/faulty-backend.js';

export const MiB = 1024 * 1024;
export const G = 2 * MiB;

/** A small device (OOM tests cost little): `pages` pages of 2 MiB. */
export function smallDevice(pages: number, name = 'small'): DeviceSpec {
  return { name, totalMemory: pages * G, minimumGranularity: G, recommendedGranularity: G };
}

export interface FaultySetup {
  readonly machine: Machine;
  readonly inner: SimProcess;
  readonly faulty: FaultyBackend;
  readonly rt: Runtime;
  readonly reports: unknown[];
}

/** A runtime over a fault-injecting wrapper of one simulated process; rollback problems are collected, not printed. */
export function faultySetup(devices: readonly (DeviceSpec | 'H200')[]): FaultySetup {
  const machine = createMachine({ devices });
  const inner = machine.spawn();
  const faulty = new FaultyBackend(inner);
  const reports: unknown[] = [];
  const rt = new Runtime(faulty.backend, { report: (m, e) => reports.push([m, e]) });
  return { machine, inner, faulty, rt, reports };
}

/** Everything observable about a runtime over `inner` and its machine (test/core/helpers.ts's snapshot, through a wrapper). */
export function state(rt: Runtime, inner: SimProcess, machine: Machine): unknown {
  return {
    stats: rt.stats(),
    reservations: [...rt.reservations()].map((r) => [r.base, r.size, r.mappingCount, r.origin]),
    mappings: [...rt.mappings()].map((m) => [m.va, m.size, m.offset, m.allocation.id, m.accessBits]),
    pools: machine.devices.map((d) => d.pool.used),
    live: machine.liveAllocations,
    resident: machine.residentBytes,
    pageTables: rt.devices.map((_, d) => inner.pageTable(d)),
  };
}

/** Bytes that say where they are: byte i of the pattern for `seed`. */
export function pattern(size: number, seed: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = (i * 131 + seed * 17 + (i >>> 8)) & 0xff;
  return b;
}
