/**
 * Where the ACL conformance tables run: VMMKIT_TEST_BACKEND chooses.
 *
 * - `sim` (default): the simulated machine, one Ascend 910B (64 GiB of HBM)
 *   unless a row makes a machine of its own.
 * - `cuda`: the real NVIDIA driver through libcuda (ACL over CUDA); the
 *   machine's devices apply (an H200: 2 MiB granularity, as the 910B's).
 *   Without a driver every row fails with CudaDriverUnavailableError, naming
 *   the libraries tried.
 * - `fake-cuda`: the `cuda` code path over conformance/gpu/fake-driver.ts (a
 *   stand-in for libcuda played by a simulated H200), to rehearse a GPU run
 *   where there is none.
 *
 * Rows that depend on a simulator-only fact are skipped on `cuda` with
 * `it.skipIf(ON_CUDA)` and a reason (SKIP below).
 */
import { createFakeDriver } from '../../../conformance/gpu/fake-driver.js';
import { createMachine } from '../../../src/backends/sim/machine.js';
import type { FlavorOptions } from '../../../src/entry/processes.js';
import { createAcl } from '../../../src/entry/processes.js';
import type { AclFlavor, aclrtPhysicalMemProp } from '../../../src/flavors/acl/acl.js';
import * as C from '../../../src/flavors/acl/constants.js';

export const MiB = 1024 * 1024;
/** ACL's 2 MiB granularity (an Ascend 910B's, and an H200's). */
export const G = 2 * MiB;

export type TestBackend = 'sim' | 'cuda' | 'fake-cuda';

export function testBackend(): TestBackend {
  const b = process.env.VMMKIT_TEST_BACKEND ?? 'sim';
  if (b === 'sim' || b === 'cuda' || b === 'fake-cuda') return b;
  throw new Error(`VMMKIT_TEST_BACKEND=${b}: expected sim, cuda or fake-cuda`);
}

export const BACKEND = testBackend();
/** The rows run on the CUDA backend (the real driver, or its fake stand-in). */
export const ON_CUDA = BACKEND !== 'sim';

const live = new Set<AclFlavor>();

/**
 * An ACL process on the chosen backend (not initialised). On the simulator
 * `options` are used as given (default: one Ascend 910B); on `cuda` the
 * machine's devices apply and `devices` / `machine` are ignored.
 */
export function makeAcl(options: FlavorOptions = {}): AclFlavor {
  const { tracer, report } = options;
  const acl =
    BACKEND === 'sim'
      ? createAcl(options)
      : BACKEND === 'cuda'
        ? createAcl({ backend: 'cuda', tracer, report })
        : createAcl({
            backend: 'cuda',
            cuda: { driver: createFakeDriver({ devices: ['H200'] }) },
            tracer,
            report,
          });
  live.add(acl);
  return acl;
}

/** End every process makeAcl made (afterEach): on a GPU, their memory goes back to the driver. */
export function disposeAll(): void {
  for (const acl of live) acl.dispose();
  live.clear();
}

function probe(): { devices: number; total: number; name: string } {
  const acl = makeAcl();
  try {
    const d = acl.runtime.devices[0]!;
    return { devices: acl.runtime.devices.length, total: d.totalMemory, name: d.name };
  } finally {
    acl.dispose();
    live.delete(acl);
  }
}
const facts = probe();
/** Devices of the default process: 1 on the simulator, the machine's on `cuda`. */
export const DEVICES = facts.devices;
/** Device 0's memory: 64 GiB on a 910B. */
export const TOTAL = facts.total;
/** Rows with two devices: on the simulator they make two; on `cuda` they need the machine to have two. */
export const TWO_DEVICES = !ON_CUDA || DEVICES >= 2;

/** Options for a process on a machine of two devices (the real machine on `cuda`). */
export function twoDevices(): FlavorOptions {
  return ON_CUDA ? {} : { machine: createMachine({ devices: ['Ascend910B', 'Ascend910B'] }) };
}

export const SKIP = {
  ascend: 'simulator-only: the Ascend 910B preset (its name)',
  twoDevices: 'needs two devices; this machine has one',
  processes: 'simulator-only: two processes on one machine (aclrtMemSetPidToShareableHandle between pids)',
  tokens:
    'the CUDA backend has no machine-wide shareable tokens (an Ascend feature; NVIDIA shares by fd): export answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT',
  internals: 'simulator-only: machine.liveAllocations (the driver does not show when memory is freed)',
  accounting: "simulator-only: aclrtGetMemInfo's exact accounting of aclrtMalloc on a 910B",
} as const;

export function prop(over: Partial<aclrtPhysicalMemProp> = {}, device = 0): aclrtPhysicalMemProp {
  return {
    handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
    allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
    memAttr: C.ACL_HBM_MEM_HUGE,
    location: { id: device, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
    reserve: 0,
    ...over,
  };
}

/** A process after aclInit and aclrtSetDevice(0). */
export function ready(options: FlavorOptions = {}): AclFlavor {
  const acl = makeAcl(options);
  expectOk(acl.aclInit(null));
  expectOk(acl.aclrtSetDevice(0));
  return acl;
}

export function expectOk(code: number): void {
  if (code !== C.ACL_SUCCESS) throw new Error(`expected ACL_SUCCESS, got ${code}`);
}

export function reserve(acl: AclFlavor, size = 4 * G): bigint {
  const p = { value: 0n };
  expectOk(acl.aclrtReserveMemAddress(p, size, 0, null, 0));
  return p.value;
}

export function mallocPhysical(acl: AclFlavor, size = G, device = 0): bigint {
  const h = { value: 0n };
  expectOk(acl.aclrtMallocPhysical(h, size, prop({}, device), 0));
  return h.value;
}

export const RW = (device = 0) => [
  {
    flags: C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE,
    location: { id: device, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
  },
];

/** Reserve, allocate, map and grant read-write: a ready range of `size` bytes. */
export function mapped(acl: AclFlavor, size = G): { va: bigint; handle: bigint } {
  const va = reserve(acl, size);
  const handle = mallocPhysical(acl, size);
  expectOk(acl.aclrtMapMem(va, size, 0, handle, 0));
  expectOk(acl.aclrtMemSetAccess(va, size, RW(), 1));
  return { va, handle };
}

export function pattern(n: number, seed = 1): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 17) & 0xff;
  return b;
}
