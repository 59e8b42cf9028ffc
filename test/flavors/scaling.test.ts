/**
 * Each flavor's map, setAccess and unmap do work independent of how many
 * mappings are live (item 7: no quadratic paths), counted, not timed: the
 * runtime's query methods are wrapped so every Mapping they hand out (to the
 * flavor, or to core's own public calls) counts as one visit. One
 * map + setAccess + unmap among 3,000 live mappings of one reservation must
 * visit exactly as many mappings as among 30. (bench/scaling.ts times the
 * same calls at 1,000 and 1,000,000.)
 */
import { describe, expect, it } from 'vitest';
import type { Mapping } from '../../src/core/objects.js';
import type { Runtime } from '../../src/core/runtime.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';

const S = 2 * 1024 * 1024;

/** The Runtime methods through which anyone outside core reaches mappings. */
const QUERIES = ['mappingAt', 'mappingsIn', 'nextMapping', 'wholeMappings', 'mappings'] as const;

/** Count every Mapping the runtime's query methods return from now on. */
function countVisits(rt: Runtime): { readonly count: number } {
  const counter = { count: 0 };
  const methods = rt as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of QUERIES) {
    const original = methods[name].bind(rt);
    methods[name] = (...args: unknown[]) => {
      const result = original(...args);
      if (Array.isArray(result)) counter.count += result.length;
      else if (result !== undefined && typeof (result as Iterable<Mapping>)[Symbol.iterator] === 'function') {
        const items = [...(result as Iterable<Mapping>)];
        counter.count += items.length;
        return items[Symbol.iterator]();
      } else if (result !== undefined) counter.count++;
      return result;
    };
  }
  return counter;
}

interface Calls {
  readonly runtime: Runtime;
  reserve(size: number): bigint;
  create(): bigint;
  map(va: bigint, h: bigint): number;
  setAccess(va: bigint): number;
  unmap(va: bigint): number;
  dispose(): void;
}

function cuda(): Calls {
  const cu = createCuda();
  const b = { value: 0n };
  const out = (code: number) => {
    expect(code).toBe(0);
    return b.value;
  };
  expect(cu.cuInit(0)).toBe(0);
  return {
    runtime: cu.runtime,
    reserve: (size) => out(cu.cuMemAddressReserve(b, size, 0, 0n, 0)),
    create: () =>
      out(cu.cuMemCreate(b, S, { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } }, 0)),
    map: (va, h) => cu.cuMemMap(va, S, 0, h, 0),
    setAccess: (va) => cu.cuMemSetAccess(va, S, [{ location: { type: 1, id: 0 }, flags: 3 }], 1),
    unmap: (va) => cu.cuMemUnmap(va, S),
    dispose: () => cu.dispose(),
  };
}

function hip(): Calls {
  const p = createHip();
  const b = { value: 0n };
  const out = (code: number) => {
    expect(code).toBe(0);
    return b.value;
  };
  return {
    runtime: p.runtime,
    reserve: (size) => out(p.hipMemAddressReserve(b, size, 0, null, 0)),
    create: () =>
      out(p.hipMemCreate(b, S, { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } }, 0)),
    map: (va, h) => p.hipMemMap(va, S, 0, h, 0),
    setAccess: (va) => p.hipMemSetAccess(va, S, [{ location: { type: 1, id: 0 }, flags: 3 }], 1),
    unmap: (va) => p.hipMemUnmap(va, S),
    dispose: () => p.dispose(),
  };
}

function acl(): Calls {
  const p = createAcl();
  const b = { value: 0n };
  const out = (code: number) => {
    expect(code).toBe(0);
    return b.value;
  };
  expect(p.aclInit()).toBe(0);
  expect(p.aclrtSetDevice(0)).toBe(0);
  const prop = {
    handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
    allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
    memAttr: A.ACL_HBM_MEM_HUGE,
    location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
  };
  const rw = [
    { flags: A.ACL_RT_MEM_ACCESS_FLAGS_READWRITE, location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 } },
  ];
  return {
    runtime: p.runtime,
    reserve: (size) => out(p.aclrtReserveMemAddress(b, size, 0, 0n, 0)),
    create: () => out(p.aclrtMallocPhysical(b, S, prop, 0)),
    map: (va, h) => p.aclrtMapMem(va, S, 0, h, 0),
    setAccess: (va) => p.aclrtMemSetAccess(va, S, rw, 1),
    unmap: (va) => p.aclrtUnmapMem(va),
    dispose: () => p.dispose(),
  };
}

/**
 * Mappings visited by one map + setAccess + unmap of a free slot in the
 * middle of `live` mapped slots of one reservation (aliases of one handle).
 */
function visitsAmong(make: () => Calls, live: number): number {
  const f = make();
  const base = f.reserve((live + 1) * S);
  const h = f.create();
  const hole = Math.floor(live / 2);
  for (let i = 0; i <= live; i++) if (i !== hole) expect(f.map(base + BigInt(i * S), h)).toBe(0);
  const va = base + BigInt(hole * S);
  const visits = countVisits(f.runtime);
  expect(f.map(va, h)).toBe(0);
  expect(f.setAccess(va)).toBe(0);
  expect(f.unmap(va)).toBe(0);
  const count = visits.count;
  expect(f.runtime.stats().mappings).toBe(live);
  f.dispose();
  return count;
}

describe.each([
  ['CUDA', cuda],
  ['HIP', hip],
  ['ACL', acl],
] as const)('%s map + setAccess + unmap', (_vendor, make) => {
  it('visits as many mappings among 3,000 live ones as among 30', () => {
    const few = visitsAmong(make, 30);
    const many = visitsAmong(make, 3_000);
    expect(many).toBe(few);
    // And a handful: the mapping itself, looked up by each call and by core.
    expect(few).toBeLessThan(10);
  });
});
