/**
 * The scaling benchmark (part of `npm run bench`): one map + setAccess +
 * unmap through each front end, among 1,000 and among 1,000,000 live
 * mappings of one reservation. Every flavour's map, unmap and setAccess stay
 * O(log n) in the live mappings, so the ratio's target is <= 2 for each.
 * (test/flavors/scaling.test.ts counts the mappings each call visits, so the
 * suite checks the same property without timing anything.)
 */
import {
  ACL_HBM_MEM_HUGE,
  ACL_MEM_ALLOCATION_TYPE_PINNED,
  ACL_MEM_HANDLE_TYPE_NONE,
  ACL_MEM_LOCATION_TYPE_DEVICE,
  ACL_RT_MEM_ACCESS_FLAGS_READWRITE,
  createAcl,
  createCuda,
  createHip,
  hipMemAccessFlagsProtReadWrite,
  hipMemAllocationTypePinned,
  hipMemLocationTypeDevice,
  type Runtime,
} from '../src/index.js';

const S = 2 * 1024 * 1024;

/** The calls the benchmark makes, in one flavour's words; each returns the vendor's code. */
interface MappingCalls {
  readonly vendor: string;
  readonly runtime: Runtime;
  reserve(size: number): bigint;
  /** One S-byte handle. */
  create(): bigint;
  map(va: bigint, handle: bigint): number;
  setAccess(va: bigint): number;
  unmap(va: bigint): number;
  dispose(): void;
}

function ok(code: number, what: string): void {
  if (code !== 0) throw new Error(`${what} returned ${code}`);
}

function cudaCalls(): MappingCalls {
  const cu = createCuda();
  const ctx = { value: 0n };
  ok(cu.cuInit(0), 'cuInit');
  ok(cu.cuDevicePrimaryCtxRetain(ctx, 0), 'ctx');
  ok(cu.cuCtxSetCurrent(ctx.value), 'ctx');
  const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
  const rw = [{ location: { type: 1, id: 0 }, flags: 3 }];
  const box = { value: 0n };
  return {
    vendor: 'CUDA',
    runtime: cu.runtime,
    reserve(size) {
      ok(cu.cuMemAddressReserve(box, size, 0, 0n, 0), 'reserve');
      return box.value;
    },
    create() {
      ok(cu.cuMemCreate(box, S, prop, 0), 'create');
      return box.value;
    },
    map: (va, h) => cu.cuMemMap(va, S, 0, h, 0),
    setAccess: (va) => cu.cuMemSetAccess(va, S, rw, 1),
    unmap: (va) => cu.cuMemUnmap(va, S),
    dispose: () => cu.dispose(),
  };
}

function hipCalls(): MappingCalls {
  const hip = createHip();
  const prop = {
    type: hipMemAllocationTypePinned,
    requestedHandleTypes: 0,
    location: { type: hipMemLocationTypeDevice, id: 0 },
  };
  const rw = [{ location: { type: hipMemLocationTypeDevice, id: 0 }, flags: hipMemAccessFlagsProtReadWrite }];
  const box = { value: 0n };
  return {
    vendor: 'HIP',
    runtime: hip.runtime,
    reserve(size) {
      ok(hip.hipMemAddressReserve(box, size, 0, null, 0), 'reserve');
      return box.value;
    },
    create() {
      ok(hip.hipMemCreate(box, S, prop, 0), 'create');
      return box.value;
    },
    map: (va, h) => hip.hipMemMap(va, S, 0, h, 0),
    setAccess: (va) => hip.hipMemSetAccess(va, S, rw, 1),
    unmap: (va) => hip.hipMemUnmap(va, S),
    dispose: () => hip.dispose(),
  };
}

function aclCalls(): MappingCalls {
  const acl = createAcl();
  ok(acl.aclInit(), 'aclInit');
  ok(acl.aclrtSetDevice(0), 'aclrtSetDevice');
  const prop = {
    handleType: ACL_MEM_HANDLE_TYPE_NONE,
    allocationType: ACL_MEM_ALLOCATION_TYPE_PINNED,
    memAttr: ACL_HBM_MEM_HUGE,
    location: { type: ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
  };
  const rw = [
    { flags: ACL_RT_MEM_ACCESS_FLAGS_READWRITE, location: { type: ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 } },
  ];
  const box = { value: 0n };
  return {
    vendor: 'ACL',
    runtime: acl.runtime,
    reserve(size) {
      ok(acl.aclrtReserveMemAddress(box, size, 0, 0n, 0), 'reserve');
      return box.value;
    },
    create() {
      ok(acl.aclrtMallocPhysical(box, S, prop, 0), 'create');
      return box.value;
    },
    map: (va, h) => acl.aclrtMapMem(va, S, 0, h, 0),
    setAccess: (va) => acl.aclrtMemSetAccess(va, S, rw, 1),
    unmap: (va) => acl.aclrtUnmapMem(va),
    dispose: () => acl.dispose(),
  };
}

export const SCALING_FLAVOURS: readonly (() => MappingCalls)[] = [cudaCalls, hipCalls, aclCalls];

/**
 * A process with `live` mappings (aliases of one handle: the same bytes, no
 * memory per mapping) and 1024 evenly spread free slots among them in one
 * reservation; `triple` maps, grants and unmaps one free slot.
 */
function scalingSetup(
  make: () => MappingCalls,
  live: number,
): { vendor: string; triple: () => void; finish: () => void } {
  const f = make();
  const slots = live + 1024;
  const base = f.reserve(slots * S);
  const h = f.create();
  const isFree = new Uint8Array(slots);
  for (let k = 0; k < 1024; k++) isFree[Math.floor((k * slots) / 1024)] = 1;
  const free: bigint[] = [];
  for (let i = 0; i < slots; i++) {
    const va = base + BigInt(i * S);
    if (isFree[i]) free.push(va);
    else ok(f.map(va, h), 'map');
  }
  let k = 0;
  const triple = () => {
    const va = free[k];
    k = (k + 337) & 1023;
    f.map(va, h);
    f.setAccess(va);
    f.unmap(va);
  };
  // Check once that the triple really succeeds, then time it.
  ok(f.map(free[0], h), 'map');
  ok(f.setAccess(free[0]), 'setAccess');
  ok(f.unmap(free[0]), 'unmap');
  const finish = () => {
    if (f.runtime.stats().mappings !== slots - free.length)
      throw new Error(`${f.vendor}: scaling bench lost a mapping`);
    f.dispose();
  };
  return { vendor: f.vendor, triple, finish };
}

interface Timing {
  best: number;
  median: number;
}

export interface ScalingRow {
  name: string;
  value: number;
  median: number;
  unit: string;
  target: string;
  met: boolean;
}

/**
 * Each flavour in turn (one at a time, so only two big processes are alive):
 * its 1,000 and 1,000,000 sides timed in alternation by `alternate`.
 */
export function scalingRows(
  alternate: (fns: readonly (() => void)[], n: number, rounds: number) => Timing[],
): ScalingRow[] {
  const rows: ScalingRow[] = [];
  for (const make of SCALING_FLAVOURS) {
    const small = scalingSetup(make, 1_000);
    const large = scalingSetup(make, 1_000_000);
    alternate([small.triple, large.triple], 20_000, 2);
    const [s, l] = alternate([small.triple, large.triple], 50_000, 9);
    small.finish();
    large.finish();
    const ratio = l.best / s.best;
    const v = small.vendor;
    rows.push(
      {
        name: `map+setAccess+unmap, 1,000 live mappings, ${v}`,
        value: s.best,
        median: s.median,
        unit: 'ns',
        target: '',
        met: true,
      },
      {
        name: `map+setAccess+unmap, 1,000,000 live mappings, ${v}`,
        value: l.best,
        median: l.median,
        unit: 'ns',
        target: '',
        met: true,
      },
      {
        name: `scaling: 1,000,000 / 1,000 live mappings, ${v}`,
        value: ratio,
        median: l.median / s.median,
        unit: 'x',
        target: '<= 2',
        met: ratio <= 2,
      },
    );
  }
  return rows;
}
