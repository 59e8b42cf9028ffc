/**
 * A created context's own start-up heap (Note [Created contexts' heaps] in
 * src/backends/sim/driver-va.ts): the rule on DriverVaSpace itself, then the
 * H200's startupHeap.* records of created contexts replayed through the CUDA
 * flavour, with and without the flavour telling the backend of its contexts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { CaseRecord } from '../../../conformance/cuda/cases.js';
import { prepareEnv, runCase } from '../../../conformance/cuda/record.js';
import { BELOW_HOLE, CONTEXT_SPAN } from '../../../src/backends/sim/driver-va.js';
import { vmmError } from '../../../src/core/errors.js';
import { createCuda } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import { G, HOLE, MiB, space } from '../../support/driver-va-space.js';

describe("DriverVaSpace: a created context's heap (Note [Created contexts' heaps])", () => {
  it('puts a lone reservation in the context heap hole, 608 MiB below the primary one, then its run', () => {
    const va = space();
    va.createContext();
    const hole = va.allocate(G, G, 0);
    expect(HOLE - hole).toBe(608 * MiB);
    // Its tail is the driver's memory, as in the primary heap: no exact range there, so this one goes
    // where the next lone one would, the context heap's run, 37 granules up (createdContextTwoLone).
    const run = va.allocateAt(G, G, hole + G);
    expect((run - hole) / G).toBe(37);
    // 4 MiB does not fit a hole: the run too, as in the primary heap.
    expect(va.allocate(2 * G, G, 0)).toBe(run + G);
  });

  it('stacks a second context 608 MiB lower and reuses a span given back', () => {
    const va = space();
    const first = va.createContext();
    const a = va.allocate(G, G, 0);
    const second = va.createContext();
    const b = va.allocate(G, G, 0);
    expect(a - b).toBe(CONTEXT_SPAN);
    va.release(b, G);
    va.destroyContext(second);
    va.release(a, G);
    va.destroyContext(first);
    // Nothing reserved in them: both heaps went, the primary hole is the lone reservation's again.
    expect(va.heaps).toBe(1);
    expect(va.allocate(G, G, 0)).toBe(HOLE);
    va.release(HOLE, G);
    va.createContext();
    expect(va.allocate(G, G, 0)).toBe(a);
  });

  it('keeps a dead context heap while a reservation outlives it, free from its mapping bottom', () => {
    const va = space();
    const ctx = va.createContext();
    const a = va.allocate(G, G, 0);
    va.destroyContext(ctx);
    // reservationOutlivesCreatedContext: the next lone one lands at the mapping's lowest granule.
    const b = va.allocate(G, G, 0);
    expect(b).toBe(a - BELOW_HOLE);
    expect((HOLE - b) / G).toBe(511);
    va.release(b, G);
    va.release(a, G);
    expect(va.heaps).toBe(1);
    expect(va.allocate(G, G, 0)).toBe(HOLE);
    // A second destroy of the same id changes nothing and does not throw.
    va.destroyContext(ctx);
    expect(va.heaps).toBe(1);
  });

  it('chunks made after a context are searched before its heap, those before it after', () => {
    const va = space();
    const older = va.allocate(48 * MiB, G, 0);
    va.createContext();
    const inContext = va.allocate(G, G, 0);
    expect(HOLE - inContext).toBe(608 * MiB);
    const newer = va.allocate(48 * MiB, G, 0);
    expect(newer).toBe(older + 64 * MiB);
    // The newest chunk's 16 MiB tail wins over the context heap's run and the older chunk's tail.
    expect(va.allocate(G, G, 0)).toBe(newer + 48 * MiB);
  });
});

interface Transcript {
  cases: Record<string, CaseRecord>;
}
const transcript = JSON.parse(
  readFileSync(new URL('../../../conformance/results/h200-driver.json', import.meta.url), 'utf8'),
) as Transcript;

/** The startupHeap.* cases recorded in a fresh process with created contexts (run 10 of the transcript). */
const CREATED_CONTEXT_CASES = [
  'startupHeap.createdContextTwoLone',
  'startupHeap.twoCreatedContexts',
  'startupHeap.cuMemAllocInCreatedContext',
  'startupHeap.reservationOutlivesCreatedContext',
];

/** A case on a fresh simulated process; `oneSharedHeap`: the backend is never told of created contexts. */
function simulate(name: string, oneSharedHeap: boolean): CaseRecord {
  const cu = createCuda({ report: () => {} });
  try {
    if (oneSharedHeap)
      Object.assign(cu.runtime.backend, { createContext: undefined, destroyContext: undefined });
    const { env } = prepareEnv(cu);
    return runCase(cu, env, name);
  } finally {
    cu.dispose();
  }
}

describe("created contexts' heaps against the H200's records", () => {
  it('every created-context startupHeap case agrees with the H200', () => {
    for (const name of CREATED_CONTEXT_CASES) {
      const recorded = transcript.cases[name];
      expect(recorded, name).toBeDefined();
      expect(simulate(name, false).steps, name).toEqual(recorded!.steps);
    }
  });

  it('cuCtxCreate with no address space left for a heap is CUDA_ERROR_OUT_OF_MEMORY and makes nothing', () => {
    const cu = createCuda({ report: () => {} });
    try {
      prepareEnv(cu);
      const before = { value: 0n };
      expect(cu.cuCtxGetCurrent(before)).toBe(0);
      const noRoom = () => {
        throw vmmError('out-of-memory', 'no free virtual range for a context heap');
      };
      Object.assign(cu.runtime.backend, { createContext: noRoom });
      const box = { value: 0n };
      expect(cu.cuCtxCreate(box, 0, 0)).toBe(C.CUDA_ERROR_OUT_OF_MEMORY);
      expect(box.value).toBe(0n);
      const after = { value: 0n };
      expect(cu.cuCtxGetCurrent(after)).toBe(0);
      expect(after.value).toBe(before.value);
    } finally {
      cu.dispose();
    }
  });

  it('sabotage: one start-up heap shared by every context disagrees with them', () => {
    const differing = CREATED_CONTEXT_CASES.filter(
      (name) => JSON.stringify(simulate(name, true).steps) !== JSON.stringify(transcript.cases[name]!.steps),
    );
    // Each of the four places a lone reservation by the created context's heap.
    expect(differing).toEqual(CREATED_CONTEXT_CASES);
  });
});
