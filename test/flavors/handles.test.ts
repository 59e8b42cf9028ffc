/**
 * Handle values through each front end: core hands out ids that are never
 * reused within a process (Note [Handle values], runtime.ts), each flavor
 * shows them as its handle without a table of its own, and a stale value
 * (released) is an error wherever a handle is taken: release, map, property
 * query and export answer the vendor's invalid-handle code and change
 * nothing, even after newer handles were made.
 *
 * CUDA: the H200 answers CUDA_ERROR_INVALID_VALUE to a second cuMemRelease
 * (release.twice) and to exporting a released handle (export.released); it
 * crashes (SIGSEGV) mapping one (release.thenMapReleasedHandle) and returns
 * the old fields when asked for its properties (properties.released), both
 * in conformance/cuda/known-divergences.ts. The simulator answers
 * CUDA_ERROR_INVALID_VALUE to all four.
 */
import { describe, expect, it } from 'vitest';
import type { Machine } from '../../src/backends/sim/machine.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import type { AclFlavor } from '../../src/flavors/acl/acl.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import * as H from '../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../src/flavors/hip/hip.js';

const G = 2 * 1024 * 1024;

/** The handle calls of one flavor, each returning the vendor's code. */
interface HandleCalls {
  readonly invalidHandle: number;
  reserve(size: number): bigint;
  create(): bigint;
  release(h: bigint): number;
  map(va: bigint, h: bigint): number;
  unmap(va: bigint): number;
  properties(h: bigint): number;
  exportHandle(h: bigint): number;
  stats(): unknown;
  dispose(): void;
}

function expectOk(code: number, what: string): void {
  expect(code, what).toBe(0);
}

function cuda(): HandleCalls {
  const cu: CudaFlavor = createCuda();
  expectOk(cu.cuInit(0), 'cuInit');
  const prop = {
    type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
    requestedHandleTypes: CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
  };
  return {
    invalidHandle: CU.CUDA_ERROR_INVALID_VALUE,
    reserve(size) {
      const b = { value: 0n };
      expectOk(cu.cuMemAddressReserve(b, size, 0, 0n, 0), 'reserve');
      return b.value;
    },
    create() {
      const b = { value: 0n };
      expectOk(cu.cuMemCreate(b, G, prop, 0), 'create');
      return b.value;
    },
    release: (h) => cu.cuMemRelease(h),
    map: (va, h) => cu.cuMemMap(va, G, 0, h, 0),
    unmap: (va) => cu.cuMemUnmap(va, G),
    properties: (h) => cu.cuMemGetAllocationPropertiesFromHandle({ value: undefined as never }, h),
    exportHandle: (h) =>
      cu.cuMemExportToShareableHandle({ value: -1 }, h, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
    stats: () => ({ core: cu.runtime.stats(), live: (cu.machine as Machine).liveAllocations }),
    dispose: () => cu.dispose(),
  };
}

function hip(): HandleCalls {
  const p: HipFlavor = createHip();
  const prop = {
    type: H.hipMemAllocationTypePinned,
    requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor,
    location: { type: H.hipMemLocationTypeDevice, id: 0 },
  };
  return {
    invalidHandle: H.hipErrorInvalidValue,
    reserve(size) {
      const b = { value: 0n };
      expectOk(p.hipMemAddressReserve(b, size, 0, null, 0), 'reserve');
      return b.value;
    },
    create() {
      const b = { value: 0n };
      expectOk(p.hipMemCreate(b, G, prop, 0), 'create');
      return b.value;
    },
    release: (h) => p.hipMemRelease(h),
    map: (va, h) => p.hipMemMap(va, G, 0, h, 0),
    unmap: (va) => p.hipMemUnmap(va, G),
    properties: (h) => p.hipMemGetAllocationPropertiesFromHandle({ value: undefined as never }, h),
    exportHandle: (h) =>
      p.hipMemExportToShareableHandle({ value: -1 }, h, H.hipMemHandleTypePosixFileDescriptor, 0),
    stats: () => ({ core: p.runtime.stats(), live: (p.machine as Machine).liveAllocations }),
    dispose: () => p.dispose(),
  };
}

function acl(): HandleCalls {
  const p: AclFlavor = createAcl();
  expectOk(p.aclInit(), 'aclInit');
  expectOk(p.aclrtSetDevice(0), 'aclrtSetDevice');
  const prop = {
    handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
    allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
    memAttr: A.ACL_HBM_MEM_HUGE,
    location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
  };
  return {
    invalidHandle: A.ACL_ERROR_RT_INVALID_HANDLE,
    reserve(size) {
      const b = { value: 0n };
      expectOk(p.aclrtReserveMemAddress(b, size, 0, 0n, 0), 'reserve');
      return b.value;
    },
    create() {
      const b = { value: 0n };
      expectOk(p.aclrtMallocPhysical(b, G, prop, 0), 'malloc physical');
      return b.value;
    },
    release: (h) => p.aclrtFreePhysical(h),
    map: (va, h) => p.aclrtMapMem(va, G, 0, h, 0),
    unmap: (va) => p.aclrtUnmapMem(va),
    properties: (h) => p.aclrtMemGetAllocationPropertiesFromHandle(h, { value: undefined as never }),
    exportHandle: (h) => p.aclrtMemExportToShareableHandle(h, A.ACL_MEM_HANDLE_TYPE_NONE, 0, { value: 0n }),
    stats: () => ({ core: p.runtime.stats(), live: (p.machine as Machine).liveAllocations }),
    dispose: () => p.dispose(),
  };
}

describe.each([
  ['CUDA', cuda],
  ['HIP', hip],
  ['ACL', acl],
] as const)('%s handle values', (_vendor, make) => {
  it('are never reused: 200 creates, released at once or kept, give 200 values', () => {
    const f = make();
    const seen = new Set<bigint>();
    const kept: bigint[] = [];
    for (let i = 0; i < 200; i++) {
      const h = f.create();
      seen.add(h);
      if (i % 3 === 0) kept.push(h);
      else expectOk(f.release(h), 'release');
    }
    expect(seen.size).toBe(200);
    for (const h of kept) expectOk(f.release(h), 'release kept');
    f.dispose();
  });

  it('a released value is an error everywhere a handle is taken, and changes nothing', () => {
    const f = make();
    const va = f.reserve(2 * G);
    const stale = f.create();
    expectOk(f.release(stale), 'release');
    // Newer handles, mapped and not, live beside the stale value.
    const live = f.create();
    const other = f.create();
    expectOk(f.map(va, live), 'map live');
    expect(new Set([stale, live, other]).size).toBe(3);
    const before = f.stats();
    expect(f.release(stale), 'release').toBe(f.invalidHandle);
    expect(f.map(va + BigInt(G), stale), 'map').toBe(f.invalidHandle);
    expect(f.properties(stale), 'properties').toBe(f.invalidHandle);
    expect(f.exportHandle(stale), 'export').toBe(f.invalidHandle);
    expect(f.stats()).toEqual(before);
    // The live handles still work.
    expectOk(f.properties(live), 'properties live');
    expectOk(f.unmap(va), 'unmap');
    expectOk(f.release(live), 'release live');
    expectOk(f.release(other), 'release other');
    expect(f.release(live), 'release live again').toBe(f.invalidHandle);
    f.dispose();
  });

  it('values that were never handed out are errors too', () => {
    const f = make();
    const h = f.create();
    for (const bogus of [h + 1n, h + 1000n, 0xdeadbeefn]) {
      expect(f.release(bogus), `release ${bogus}`).toBe(f.invalidHandle);
      expect(f.properties(bogus), `properties ${bogus}`).toBe(f.invalidHandle);
    }
    expectOk(f.release(h), 'release');
    f.dispose();
  });
});
