import { expect } from 'vitest';
import type { Machine } from '../../src/backends/sim/machine.js';
import type { SimProcess } from '../../src/backends/sim/process.js';
import { type ErrorKind, VmmError } from '../../src/core/errors.js';
import type { PhysicalAllocation } from '../../src/core/objects.js';
import type { Runtime } from '../../src/core/runtime.js';

/** Runs `f`, expecting a VmmError of `kind`; returns it. */
export function expectVmmError(f: () => unknown, kind: ErrorKind): VmmError {
  let thrown: unknown;
  try {
    f();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, `expected VmmError '${kind}'`).toBeInstanceOf(VmmError);
  expect((thrown as VmmError).kind).toBe(kind);
  return thrown as VmmError;
}

/** Everything observable about a runtime and its machine, for before/after comparisons. */
export function snapshot(
  rt: Runtime,
  machine: Machine,
  allocations: readonly PhysicalAllocation[] = [],
): unknown {
  // The machine's own record of the process (rt.backend may be a wrapper, as in fault injection).
  const backend: SimProcess = machine.process(rt.pid);
  return {
    stats: rt.stats(),
    reservations: [...rt.reservations()].map((r) => [r.base, r.size, r.mappingCount, r.origin]),
    mappings: [...rt.mappings()].map((m) => [
      m.va,
      m.size,
      m.offset,
      m.allocation.id,
      m.accessBits,
      m.hostAccess,
    ]),
    allocations: allocations.map((a) => [a.id, a.handleRefs, a.mapRefs, a.exports, a.owner === rt]),
    pools: machine.devices.map((d) => d.pool.used),
    host: machine.host.used,
    live: machine.liveAllocations,
    resident: machine.residentBytes,
    pageTables: rt.devices.map((_, d) => backend.pageTable(d)),
    hostPageTable: backend.hostPageTable(),
  };
}
