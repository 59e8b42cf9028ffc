/**
 * Issue 10, A to H: hostile arguments (boxes that cannot be written, getters
 * and proxies that throw or change, lying typed arrays, values that cannot be
 * formatted, one-step memory under a VMM unmap, bigint enums) never make a
 * front end throw, and a refused call changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { createMachine, type Machine } from '../../src/backends/sim/machine.js';
import { type AclFlavor, createAcl } from '../../src/flavors/acl/acl.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import { type CudaFlavor, createCuda } from '../../src/flavors/cuda/cuda.js';
import * as H from '../../src/flavors/hip/constants.js';
import { createHip, type HipFlavor } from '../../src/flavors/hip/hip.js';

const G = 2 * 1024 * 1024;

/** Boxes a call cannot write, each made fresh. */
const HOSTILE_BOXES: Record<string, () => object> = {
  frozen: () => Object.freeze({ value: 0 }),
  sealedEmpty: () => Object.seal({}),
  getterOnly: () => ({
    get value() {
      return 0;
    },
  }),
  readOnly: () => Object.defineProperty({}, 'value', { value: 0, writable: false }),
  throwingSetter: () => ({
    set value(_v: unknown) {
      throw new Error('setter');
    },
  }),
  inheritedReadOnly: () => Object.create(Object.freeze({ value: 0 })),
  proxyThrowingSet: () =>
    new Proxy(
      { value: 0 },
      {
        set() {
          throw new Error('trap');
        },
      },
    ),
  proxyRefusingSet: () => new Proxy({ value: 0 }, { set: () => false }),
  revokedProxy: () => {
    const p = Proxy.revocable({ value: 0 }, {});
    p.revoke();
    return p.proxy;
  },
};

/** Everything a call could change: the process's objects and the machine's memory. */
function state(runtime: { describe(): unknown; stats(): unknown }, machine: Machine): string {
  return JSON.stringify(
    {
      d: runtime.describe(),
      s: runtime.stats(),
      pools: machine.devices.map((d) => d.pool.used),
      host: machine.host.used,
      live: machine.liveAllocations,
    },
    (_k, v) => (typeof v === 'bigint' ? `${v}n` : v),
  );
}

const cuProp = {
  type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
  requestedHandleTypes: CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
  location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
};
const hipProp = {
  type: H.hipMemAllocationTypePinned,
  requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor,
  location: { type: H.hipMemLocationTypeDevice, id: 0 },
};
const aclProp = {
  handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
  allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
  memAttr: A.ACL_HBM_MEM_HUGE,
  location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
};

function cudaSetup() {
  const machine = createMachine({ devices: ['H200'] });
  const cu = createCuda({ machine });
  const b = { value: 0n };
  const n = { value: 0 };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  cu.cuCtxSetCurrent(b.value);
  cu.cuMemAddressReserve(b, G, 0, 0, 0);
  const p = b.value;
  cu.cuMemCreate(b, G, cuProp, 0);
  const h = b.value;
  cu.cuMemMap(p, G, 0, h, 0);
  cu.cuMemExportToShareableHandle(n, h, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  return { machine, cu, p, h, fd: n.value };
}

function hipSetup() {
  const machine = createMachine({ devices: ['MI300X'] });
  const hip = createHip({ machine });
  const b = { value: 0n };
  const n = { value: 0 };
  hip.hipMemAddressReserve(b, G, 0, 0, 0);
  const p = b.value;
  hip.hipMemCreate(b, G, hipProp, 0);
  const h = b.value;
  hip.hipMemMap(p, G, 0, h, 0);
  hip.hipMemExportToShareableHandle(n, h, H.hipMemHandleTypePosixFileDescriptor, 0);
  return { machine, hip, p, h, fd: n.value };
}

function aclSetup() {
  const machine = createMachine({ devices: ['Ascend910B'] });
  const acl = createAcl({ machine });
  const b = { value: 0n };
  acl.aclInit(null);
  acl.aclrtSetDevice(0);
  acl.aclrtReserveMemAddress(b, G, 0, 0, 0);
  const p = b.value;
  acl.aclrtMallocPhysical(b, G, aclProp, 0);
  const h = b.value;
  acl.aclrtMapMem(p, G, 0, h, 0);
  return { machine, acl, p, h };
}

type BoxCall = (box: never) => number;

describe('A: out boxes that cannot be written', () => {
  const cases: [
    string,
    () => {
      machine: Machine;
      runtime: CudaFlavor['runtime'];
      calls: Record<string, BoxCall>;
      invalid: number;
    },
  ][] = [
    [
      'CUDA',
      () => {
        const { machine, cu, p, h, fd } = cudaSetup();
        return {
          machine,
          runtime: cu.runtime,
          invalid: CU.CUDA_ERROR_INVALID_VALUE,
          calls: {
            cuDriverGetVersion: (b) => cu.cuDriverGetVersion(b),
            cuDeviceGetCount: (b) => cu.cuDeviceGetCount(b),
            cuDeviceGet: (b) => cu.cuDeviceGet(b, 0),
            cuDeviceTotalMem: (b) => cu.cuDeviceTotalMem(b, 0),
            cuDeviceGetName: (b) => cu.cuDeviceGetName(b, 64, 0),
            cuDevicePrimaryCtxRetain: (b) => cu.cuDevicePrimaryCtxRetain(b, 0),
            cuCtxGetCurrent: (b) => cu.cuCtxGetCurrent(b),
            cuCtxGetDevice: (b) => cu.cuCtxGetDevice(b),
            cuMemGetAllocationGranularity: (b) => cu.cuMemGetAllocationGranularity(b, cuProp, 0),
            cuMemAddressReserve: (b) => cu.cuMemAddressReserve(b, G, 0, 0, 0),
            cuMemCreate: (b) => cu.cuMemCreate(b, G, cuProp, 0),
            cuMemGetAccess: (b) => cu.cuMemGetAccess(b, { type: 1, id: 0 }, p),
            cuMemRetainAllocationHandle: (b) => cu.cuMemRetainAllocationHandle(b, p),
            cuMemGetAllocationPropertiesFromHandle: (b) => cu.cuMemGetAllocationPropertiesFromHandle(b, h),
            cuMemExportToShareableHandle: (b) =>
              cu.cuMemExportToShareableHandle(b, h, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            cuMemImportFromShareableHandle: (b) =>
              cu.cuMemImportFromShareableHandle(b, fd, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            cuMemAlloc: (b) => cu.cuMemAlloc(b, G),
            cuMemGetInfoFree: (b) => cu.cuMemGetInfo(b, { value: 0 }),
            cuMemGetInfoTotal: (b) => cu.cuMemGetInfo({ value: 0 }, b),
            cuStreamCreate: (b) => cu.cuStreamCreate(b, 0),
            cuGetErrorName: (b) => cu.cuGetErrorName(0, b),
            cuGetErrorString: (b) => cu.cuGetErrorString(0, b),
          },
        };
      },
    ],
    [
      'HIP',
      () => {
        const { machine, hip, p, h, fd } = hipSetup();
        return {
          machine,
          runtime: hip.runtime,
          invalid: H.hipErrorInvalidValue,
          calls: {
            hipGetDeviceCount: (b) => hip.hipGetDeviceCount(b),
            hipGetDevice: (b) => hip.hipGetDevice(b),
            hipMemGetAllocationGranularity: (b) => hip.hipMemGetAllocationGranularity(b, hipProp, 0),
            hipMemAddressReserve: (b) => hip.hipMemAddressReserve(b, G, 0, 0, 0),
            hipMemCreate: (b) => hip.hipMemCreate(b, G, hipProp, 0),
            hipMemGetAccess: (b) => hip.hipMemGetAccess(b, { type: 1, id: 0 }, p),
            hipMemRetainAllocationHandle: (b) => hip.hipMemRetainAllocationHandle(b, p),
            hipMemGetAllocationPropertiesFromHandle: (b) => hip.hipMemGetAllocationPropertiesFromHandle(b, h),
            hipMemExportToShareableHandle: (b) =>
              hip.hipMemExportToShareableHandle(b, h, H.hipMemHandleTypePosixFileDescriptor, 0),
            hipMemImportFromShareableHandle: (b) =>
              hip.hipMemImportFromShareableHandle(b, fd, H.hipMemHandleTypePosixFileDescriptor),
            hipMalloc: (b) => hip.hipMalloc(b, G),
            hipMallocZero: (b) => hip.hipMalloc(b, 0),
            hipMemGetInfo: (b) => hip.hipMemGetInfo(b, { value: 0 }),
            hipStreamCreate: (b) => hip.hipStreamCreate(b),
          },
        };
      },
    ],
    [
      'ACL',
      () => {
        const { machine, acl, p, h } = aclSetup();
        return {
          machine,
          runtime: acl.runtime,
          invalid: A.ACL_ERROR_INVALID_PARAM,
          calls: {
            aclrtGetDeviceCount: (b) => acl.aclrtGetDeviceCount(b),
            aclrtReserveMemAddress: (b) => acl.aclrtReserveMemAddress(b, G, 0, 0, 0),
            aclrtMallocPhysical: (b) => acl.aclrtMallocPhysical(b, G, aclProp, 0),
            aclrtMemGetAccess: (b) => acl.aclrtMemGetAccess(p, { type: 1, id: 0 }, b),
            aclrtMemRetainAllocationHandle: (b) => acl.aclrtMemRetainAllocationHandle(p, b),
            aclrtMemGetAllocationGranularity: (b) => acl.aclrtMemGetAllocationGranularity(aclProp, 0, b),
            aclrtMemGetAllocationPropertiesFromHandle: (b) =>
              acl.aclrtMemGetAllocationPropertiesFromHandle(h, b),
            aclrtMemExportToShareableHandle: (b) => acl.aclrtMemExportToShareableHandle(h, 0, 0, b),
            aclrtDeviceGetBareTgid: (b) => acl.aclrtDeviceGetBareTgid(b),
            aclrtMalloc: (b) => acl.aclrtMalloc(b, G, 0),
            aclrtGetMemInfo: (b) => acl.aclrtGetMemInfo(A.ACL_HBM_MEM, b, { value: 0 }),
            aclrtCreateStream: (b) => acl.aclrtCreateStream(b),
          },
        };
      },
    ],
  ];
  for (const [vendor, make] of cases) {
    it(`${vendor}: every call with a box answers invalid-value and changes nothing, for each kind of box`, () => {
      const { machine, runtime, calls, invalid } = make();
      const failures: string[] = [];
      for (const [name, call] of Object.entries(calls)) {
        for (const [kind, makeBox] of Object.entries(HOSTILE_BOXES)) {
          const before = state(runtime, machine);
          let code: unknown;
          try {
            code = call(makeBox() as never);
          } catch (e) {
            code = `threw ${(e as Error).message}`;
          }
          if (code !== invalid) failures.push(`${name}(${kind}) answered ${String(code)}`);
          if (state(runtime, machine) !== before) failures.push(`${name}(${kind}) changed the state`);
        }
      }
      expect(failures).toEqual([]);
    });
  }
});
