import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { createMachine, type Machine } from '../../src/backends/sim/machine.js';
import type { SimProcess } from '../../src/backends/sim/process.js';
import { VmmError } from '../../src/core/errors.js';
import type { PhysicalAllocation } from '../../src/core/objects.js';
import { Runtime } from '../../src/core/runtime.js';
import { Access, type AllocationProperties } from '../../src/core/types.js';
import { createAcl } from '../../src/entry/processes.js';
import type { AclFlavor } from '../../src/flavors/acl/acl.js';
import type { VendorProcess } from '../../src/flavors/common/process.js';
import type { CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import { mallocPhysical, reserve } from '../flavors/acl/helpers.js';
import { cudaWithContext, DEVICE_PROP, RW0 } from '../flavors/cuda/helpers.js';
import { FaultyBackend } from '../support/faulty-backend.js';
import { snapshot } from './helpers.js';

/**
 * Invariant 1 by fault injection: every multi-step core operation is run
 * once to count its backend steps, then again with each step k failing in
 * turn. Before a point of no return (Note [Points of no return]) the call
 * must throw and leave core and the machine exactly as they were; after
 * one, it must complete and report. Either way, dispose leaves nothing.
 * The front ends' own multi-step calls are swept the same way, through a
 * flavor over the faulty backend: a call that fails must answer a code
 * other than success and leave everything as it was.
 */

const G = 2 * 1024 * 1024;
const onDevice = (id = 0, handleTypes = 0): AllocationProperties => ({
  location: { type: 'device', id },
  handleTypes,
  uncached: false,
});

interface World {
  machine: Machine;
  rt: Runtime;
  faults: FaultyBackend;
  reports: string[];
  allocations: PhysicalAllocation[];
  /** Other processes of the machine a scenario needs (an exporter): disposed before the leak checks. */
  others: Runtime[];
  /** The front end whose call is swept, over the faulty backend (its runtime is rt). */
  front?: VendorProcess;
}

interface Scenario {
  readonly name: string;
  /** Build the state the operation starts from; returns the allocations to watch. */
  readonly prepare: (w: World) => () => unknown;
  /** Steps k after which the operation completes (and reports) instead of throwing. */
  readonly completesAt?: readonly number[];
  /** A front end to make over the faulty backend; the operation is then its call, and answers a code. */
  readonly front?: (backend: Backend, report: (message: string) => void) => VendorProcess;
}

function world(front?: Scenario['front']): World {
  const machine = createMachine({ devices: ['H200', 'H200'] });
  const faults = new FaultyBackend(machine.spawn());
  const reports: string[] = [];
  const report = (m: string) => reports.push(m);
  if (front !== undefined) {
    const f = front(faults.backend, report);
    return { machine, rt: f.runtime, faults, reports, allocations: [], others: [], front: f };
  }
  const rt = new Runtime(faults.backend, { report });
  return { machine, rt, faults, reports, allocations: [], others: [] };
}

const RW = (device: number) => ({ device, access: Access.ReadWrite });

const SCENARIOS: readonly Scenario[] = [
  { name: 'malloc (reserve, create, map, setAccess)', prepare: (w) => () => void w.rt.malloc(1, 3 * G) },
  {
    name: 'mfree (unmap, release, free)',
    prepare: (w) => {
      const r = w.rt.malloc(0, G);
      return () => w.rt.mfree(r.base);
    },
    // The memory is gone once released; the address range goes at dispose.
    completesAt: [3],
  },
  {
    name: "setAccess with the CPU's grant over two host mappings (setHostAccess, then two devices)",
    prepare: (w) => {
      const r = w.rt.reserve(2 * G);
      const host = { location: { type: 'host' as const, id: 0 }, handleTypes: 0, uncached: false };
      const a = w.rt.create(G, host);
      const b = w.rt.create(G, host);
      w.allocations.push(a, b);
      w.rt.map(r.base, G, a);
      w.rt.map(r.base + G, G, b);
      w.rt.setAccess(r.base, G, [], Access.Read);
      return () => w.rt.setAccess(r.base, 2 * G, [RW(0), RW(1)], Access.ReadWrite);
    },
  },
  {
    name: 'setAccess for two devices over two mappings',
    prepare: (w) => {
      const r = w.rt.reserve(2 * G);
      const a = w.rt.create(G, onDevice(0));
      const b = w.rt.create(G, onDevice(1));
      w.allocations.push(a, b);
      w.rt.map(r.base, G, a);
      w.rt.map(r.base + G, G, b);
      w.rt.setAccess(r.base, 2 * G, [{ device: 0, access: Access.Read }]);
      return () => w.rt.setAccess(r.base, 2 * G, [RW(0), RW(1)]);
    },
  },
  {
    name: 'unmap of two mappings whose allocations lose their last reference',
    prepare: (w) => {
      const r = w.rt.reserve(2 * G);
      const a = w.rt.create(G, onDevice(0));
      const b = w.rt.create(G, onDevice(0));
      w.rt.map(r.base, G, a);
      w.rt.map(r.base + G, G, b);
      w.rt.setAccess(r.base, 2 * G, [RW(0), { device: 1, access: Access.Read }]);
      w.rt.release(a);
      w.rt.release(b);
      return () => w.rt.unmap(r.base, 2 * G);
    },
    // Step 4 is the second release: the first allocation's memory is already gone.
    completesAt: [4],
  },
  {
    name: 'unmap of one mapping holding the last reference',
    prepare: (w) => {
      const r = w.rt.reserve(G);
      const a = w.rt.create(G, onDevice(0));
      w.rt.map(r.base, G, a);
      w.rt.setAccess(r.base, G, [RW(0)]);
      w.rt.release(a);
      return () => w.rt.unmap(r.base, G);
    },
  },
  {
    name: 'release of the last reference of an exported allocation',
    prepare: (w) => {
      const a = w.rt.create(G, onDevice(0, 1));
      w.allocations.push(a);
      w.rt.exportShareable(a, false);
      return () => w.rt.release(a);
    },
    // Step 2 withdraws the token of memory already released.
    completesAt: [2],
  },
  {
    // Note [One-step sharing]: the import is undone with the rest.
    name: 'importMalloc (importShareable, reserve, map, setAccess)',
    prepare: (w) => {
      const exporter = new Runtime(w.machine.spawn());
      w.others.push(exporter);
      const token = exporter.exportMalloc(exporter.malloc(0, 2 * G).base, false);
      return () => void w.rt.importMalloc(token, 1);
    },
  },
  {
    name: 'mfree of an exported one-step allocation (unmap, release, unshare, free)',
    prepare: (w) => {
      const r = w.rt.malloc(0, G);
      w.rt.exportMalloc(r.base, false);
      return () => w.rt.mfree(r.base);
    },
    // Step 3 withdraws the token of memory already released; step 4 frees the address range.
    completesAt: [3, 4],
  },
  ...(['exportMalloc', 'unshare'] as const).map(
    (op): Scenario => ({
      name: `${op} (one step)`,
      prepare: (w) => {
        const r = w.rt.malloc(0, G);
        const token = w.rt.exportMalloc(r.base, true);
        return {
          exportMalloc: () => void w.rt.exportMalloc(r.base, false),
          unshare: () => w.rt.unshare(token),
        }[op];
      },
    }),
  ),
  {
    // Note [Device reset]: every step is past a point of no return; a failed one is reported and
    // its object stays held (dispose takes it), device 1's memory is untouched.
    name: 'resetDevice (events, streams, unmaps, releases, frees)',
    prepare: (w) => {
      w.rt.malloc(0, G);
      const r = w.rt.reserve(2 * G);
      const a = w.rt.create(G, onDevice(0));
      w.rt.map(r.base, G, a);
      w.rt.release(a);
      w.allocations.push(w.rt.create(G, onDevice(1)));
      const s = w.rt.createStream(0);
      w.rt.recordEvent(w.rt.createEvent(0), s);
      return () => w.rt.resetDevice(0);
    },
    completesAt: Array.from({ length: 32 }, (_, i) => i + 1),
  },
  ...(['map', 'reserve', 'create', 'free', 'exportFd', 'importFd'] as const).map(
    (op): Scenario => ({
      name: `${op} (one step)`,
      prepare: (w) => {
        const r = w.rt.reserve(2 * G);
        const a = w.rt.create(G, onDevice(0, 1));
        w.allocations.push(a);
        const fd = w.rt.exportFd(a);
        return {
          map: () => void w.rt.map(r.base + G, G, a),
          reserve: () => void w.rt.reserve(G),
          create: () => void w.rt.create(G, onDevice(1)),
          free: () => w.rt.free(r),
          exportFd: () => void w.rt.exportFd(a),
          importFd: () => void w.rt.importFd(fd),
        }[op];
      },
    }),
  ),
  ...FRONT_END_SCENARIOS(),
];

describe('fault injection: every step of every multi-step operation', () => {
  for (const s of SCENARIOS) {
    it(s.name, () => {
      const dry = world(s.front);
      const op = s.prepare(dry);
      dry.faults.arm(0);
      const answer = op();
      const steps = dry.faults.calls;
      expect(steps).toBeGreaterThan(0);
      // A front end's call succeeds when nothing fails (every vendor's success is 0).
      if (s.front !== undefined) expect(answer).toBe(0);
      dry.rt.dispose();
      for (const o of dry.others) o.dispose();

      for (let k = 1; k <= steps; k++) {
        const w = world(s.front);
        const run = s.prepare(w);
        const before = snapshot(w.rt, w.machine, w.allocations);
        w.faults.arm(k);
        let thrown: unknown;
        let code: unknown;
        try {
          code = run();
        } catch (e) {
          thrown = e;
        }
        const failedAt = w.faults.log[k - 1];
        if (s.completesAt?.includes(k)) {
          expect(thrown, `step ${k} (${failedAt}) is past the point of no return`).toBeUndefined();
          if (s.front !== undefined) expect(code, `step ${k} (${failedAt}) answers success`).toBe(0);
          expect(w.reports.length, `step ${k} (${failedAt}) is reported`).toBeGreaterThan(0);
        } else {
          if (s.front === undefined)
            expect(thrown, `step ${k} (${failedAt}) fails the call`).toBeInstanceOf(VmmError);
          else {
            expect(thrown, `step ${k} (${failedAt}): a front end never throws`).toBeUndefined();
            expect(code, `step ${k} (${failedAt}) fails the call`).not.toBe(0);
          }
          expect(
            snapshot(w.rt, w.machine, w.allocations),
            `state after step ${k} (${failedAt}) failed`,
          ).toEqual(before);
        }
        w.faults.arm(0);
        if (w.front !== undefined) w.front.dispose();
        w.rt.dispose();
        for (const o of w.others) o.dispose();
        expect(w.machine.liveAllocations, `leak after step ${k}`).toBe(0);
        expect(w.machine.devices.map((d) => d.pool.used)).toEqual([0, 0]);
        expect((w.faults.inner as SimProcess).pageTable(0)).toEqual([]);
      }
    });
  }
});

/** A CUDA process over the faulty backend with device 0's primary context current. */
function cudaOver(backend: Backend, report: (message: string) => void): CudaFlavor {
  return cudaWithContext({ backend, report });
}

/** A CUDA reservation and a handle of `size` bytes on device 0. */
function cudaMemory(
  cu: CudaFlavor,
  reserve: number,
  size: number,
  hint = 0n,
): { ptr: bigint; handle: bigint } {
  const ptr = { value: 0n };
  const handle = { value: 0n };
  expect(cu.cuMemAddressReserve(ptr, reserve, 0, hint, 0)).toBe(0);
  if (hint !== 0n) expect(ptr.value).toBe(hint);
  expect(cu.cuMemCreate(handle, size, DEVICE_PROP, 0)).toBe(0);
  return { ptr: ptr.value, handle: handle.value };
}

/**
 * An address with `size` bytes of free VA from it: a reservation made and
 * freed at once. A map past the end of a reservation placed there runs into
 * free VA, as the driver requires (Note [Mappings past a reservation's end]);
 * a lone G reservation would land in the start-up heap's hole instead, just
 * below the driver's own memory.
 */
function freeVa(cu: CudaFlavor, size: number): bigint {
  const ptr = { value: 0n };
  expect(cu.cuMemAddressReserve(ptr, size, 0, 0n, 0)).toBe(0);
  expect(cu.cuMemAddressFree(ptr.value, size)).toBe(0);
  return ptr.value;
}

/**
 * A mapping of 2G at a reservation of G (a span: a piece there and one in a
 * hidden reservation), then a reservation of 2G right after it whose second
 * half is mapped: [span | span | hole | mapping]. Returns the span's start.
 */
function spanAndHole(cu: CudaFlavor): bigint {
  const { ptr, handle } = cudaMemory(cu, G, 2 * G, freeVa(cu, 4 * G));
  expect(cu.cuMemMap(ptr, 2 * G, 0, handle, 0)).toBe(0);
  const { ptr: next, handle: other } = cudaMemory(cu, 2 * G, G, ptr + BigInt(2 * G));
  expect(next).toBe(ptr + BigInt(2 * G));
  expect(cu.cuMemMap(next + BigInt(G), G, 0, other, 0)).toBe(0);
  return ptr;
}

/**
 * The front ends' calls of several core steps: a CUDA mapping past its
 * reservation's end (Note [Mappings past a reservation's end]: pieces and a
 * hidden reservation made in one transaction), its access and its unmap
 * (whose hidden reservation is freed last, past the point of no return),
 * an unmap over a hole (Note [Unmapping around holes]), and ACL's map with
 * its grant (Note [ACL map grants access]).
 */
function FRONT_END_SCENARIOS(): Scenario[] {
  const cuda = (w: World) => w.front as CudaFlavor;
  return [
    {
      name: 'CUDA cuMemMap past its reservation into free VA (map, reserve, map)',
      front: cudaOver,
      prepare: (w) => {
        const { ptr, handle } = cudaMemory(cuda(w), G, 2 * G, freeVa(cuda(w), 2 * G));
        return () => cuda(w).cuMemMap(ptr, 2 * G, 0, handle, 0);
      },
    },
    {
      name: 'CUDA cuMemMap across two reservations (map, map)',
      front: cudaOver,
      prepare: (w) => {
        const { ptr, handle } = cudaMemory(cuda(w), G, 2 * G, freeVa(cuda(w), 2 * G));
        const next = { value: 0n };
        expect(cuda(w).cuMemAddressReserve(next, G, 0, ptr + BigInt(G), 0)).toBe(0);
        expect(next.value).toBe(ptr + BigInt(G));
        return () => cuda(w).cuMemMap(ptr, 2 * G, 0, handle, 0);
      },
    },
    {
      name: 'CUDA cuMemSetAccess over a mapping held as two pieces',
      front: cudaOver,
      prepare: (w) => {
        const { ptr, handle } = cudaMemory(cuda(w), G, 2 * G, freeVa(cuda(w), 2 * G));
        expect(cuda(w).cuMemMap(ptr, 2 * G, 0, handle, 0)).toBe(0);
        return () => cuda(w).cuMemSetAccess(ptr, 2 * G, RW0, 1);
      },
    },
    {
      name: 'CUDA cuMemUnmap of a released handle held as two pieces (unmap, unmap, release, free)',
      front: cudaOver,
      prepare: (w) => {
        const { ptr, handle } = cudaMemory(cuda(w), G, 2 * G, freeVa(cuda(w), 2 * G));
        expect(cuda(w).cuMemMap(ptr, 2 * G, 0, handle, 0)).toBe(0);
        expect(cuda(w).cuMemSetAccess(ptr, 2 * G, RW0, 1)).toBe(0);
        expect(cuda(w).cuMemRelease(handle)).toBe(0);
        return () => cuda(w).cuMemUnmap(ptr, 2 * G);
      },
      // Step 4 frees the hidden reservation, after the memory is gone.
      completesAt: [4],
    },
    {
      // Note [Unmapping around holes]: the runs are one transaction; the memory goes last.
      name: 'CUDA cuMemUnmap over a hole of two released handles (unmap, unmap, release, release)',
      front: cudaOver,
      prepare: (w) => {
        const cu = cuda(w);
        const { ptr, handle } = cudaMemory(cu, 3 * G, G);
        const { handle: other } = cudaMemory(cu, G, G);
        expect(cu.cuMemMap(ptr, G, 0, handle, 0)).toBe(0);
        expect(cu.cuMemMap(ptr + BigInt(2 * G), G, 0, other, 0)).toBe(0);
        expect(cu.cuMemSetAccess(ptr, G, RW0, 1)).toBe(0);
        expect(cu.cuMemRelease(handle)).toBe(0);
        expect(cu.cuMemRelease(other)).toBe(0);
        return () => cu.cuMemUnmap(ptr, 3 * G);
      },
      completesAt: [3, 4],
    },
    {
      name: 'CUDA cuMemUnmap over a two-piece span, a hole and a mapping (unmap, unmap, unmap, free)',
      front: cudaOver,
      prepare: (w) => {
        const cu = cuda(w);
        const span = spanAndHole(cu);
        return () => cu.cuMemUnmap(span, 4 * G);
      },
      // Step 4 frees the span's hidden reservation, after every run is unmapped.
      completesAt: [4],
    },
    {
      name: 'ACL aclrtMapMem (map, the grant to its own device)',
      front: (backend, report) => {
        const acl = createAcl({ backend, report });
        acl.aclInit(null);
        acl.aclrtSetDevice(0);
        return acl;
      },
      prepare: (w) => {
        const acl = w.front as AclFlavor;
        const va = reserve(acl, G);
        const handle = mallocPhysical(acl, G);
        return () => acl.aclrtMapMem(va, G, 0, handle, 0);
      },
    },
  ];
}
