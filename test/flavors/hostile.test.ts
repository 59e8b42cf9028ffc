/**
 * Issue 10, A to H: hostile arguments (boxes that cannot be written, getters
 * and proxies that throw or change, lying typed arrays, values that cannot be
 * formatted, one-step memory under a VMM unmap, bigint enums) never make a
 * front end throw, and a refused call changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { createMachine, type Machine } from '../../src/backends/sim/machine.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import * as H from '../../src/flavors/hip/constants.js';

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

/** Runs `f`, turning a throw into a string the expectation shows. */
function answer(f: () => unknown): unknown {
  try {
    return f();
  } catch (e) {
    return `threw ${e instanceof Error ? e.message : 'a non-error'}`;
  }
}

const throwing = (field: string) =>
  Object.defineProperty({ type: 0, requestedHandleTypes: 0, location: { type: 1, id: 0 } }, field, {
    get() {
      throw new Error(`getter ${field}`);
    },
  });

function revoked(target: object): object {
  const p = Proxy.revocable(target, {});
  p.revoke();
  return p.proxy;
}

describe('B: getters and proxies of the caller never escape', () => {
  it('CUDA: a throwing getter in a prop or descriptor, a revoked Proxy as buffer or descriptor list', () => {
    const { machine, cu, p } = cudaSetup();
    const before = state(cu.runtime, machine);
    const I = CU.CUDA_ERROR_INVALID_VALUE;
    for (const field of ['location', 'type', 'requestedHandleTypes', 'allocFlags']) {
      expect(
        answer(() => cu.cuMemCreate({ value: 0n }, G, throwing(field) as never, 0)),
        field,
      ).toBe(I);
      expect(answer(() => cu.cuMemGetAllocationGranularity({ value: 0 }, throwing(field) as never, 0))).toBe(
        I,
      );
    }
    expect(answer(() => cu.cuMemCreate({ value: 0n }, G, revoked({}) as never, 0))).toBe(I);
    expect(answer(() => cu.cuMemcpyHtoD(p, revoked(new Uint8Array(4)) as never, 4))).toBe(I);
    expect(answer(() => cu.cuMemcpyDtoH(revoked(new Uint8Array(4)) as never, p, 4))).toBe(I);
    expect(answer(() => cu.cuMemSetAccess(p, G, revoked([]) as never, 1))).toBe(I);
    expect(answer(() => cu.cuMemSetAccess(p, G, [throwing('location')] as never, 1))).toBe(I);
    expect(answer(() => cu.cuMemGetAccess({ value: 0 }, revoked({}) as never, p))).toBe(I);
    expect(state(cu.runtime, machine)).toBe(before);
  });

  it('CUDA: a getter that calls back in mid-read cannot lend its struct to the outer call', () => {
    // The flavor reads a CUmemAllocationProp into one reader it keeps (no copy): the outer call must
    // still check the fields it read itself, not the ones the inner call left there.
    const { cu } = cudaSetup();
    const inner = { value: 0n };
    const outer = { value: 0n };
    const reentrant = {
      type: 99,
      get requestedHandleTypes() {
        expect(cu.cuMemCreate(inner, G, cuProp, 0)).toBe(CU.CUDA_SUCCESS);
        return 0;
      },
      location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    const handles = cu.runtime.stats().handles;
    expect(cu.cuMemCreate(outer, G, reentrant as never, 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(outer.value).toBe(0n);
    expect(cu.runtime.stats().handles).toBe(handles + 1);
    // And the other way: a bad inner struct does not fail a good outer one.
    const good = {
      type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
      get requestedHandleTypes() {
        expect(cu.cuMemCreate(inner, G, { type: 99 } as never, 0)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
        return 0;
      },
      location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    expect(cu.cuMemCreate(outer, G, good as never, 0)).toBe(CU.CUDA_SUCCESS);
    expect(cu.runtime.stats().handles).toBe(handles + 2);
  });

  it('HIP: the same', () => {
    const { machine, hip, p } = hipSetup();
    const before = state(hip.runtime, machine);
    const I = H.hipErrorInvalidValue;
    for (const field of ['location', 'type', 'requestedHandleTypes', 'allocFlags']) {
      expect(
        answer(() => hip.hipMemCreate({ value: 0n }, G, throwing(field) as never, 0)),
        field,
      ).toBe(I);
      expect(
        answer(() => hip.hipMemGetAllocationGranularity({ value: 0 }, throwing(field) as never, 0)),
      ).toBe(I);
    }
    expect(
      answer(() => hip.hipMemcpy(p, revoked(new Uint8Array(4)) as never, 4, H.hipMemcpyHostToDevice)),
    ).toBe(I);
    expect(
      answer(() => hip.hipMemcpy(revoked(new Uint8Array(4)) as never, p, 4, H.hipMemcpyDeviceToHost)),
    ).toBe(I);
    expect(answer(() => hip.hipMemSetAccess(p, G, revoked([]) as never, 1))).toBe(I);
    expect(answer(() => hip.hipMemSetAccess(p, G, [throwing('location')] as never, 1))).toBe(I);
    expect(answer(() => hip.hipMemGetAccess({ value: 0 }, revoked({}) as never, p))).toBe(I);
    expect(state(hip.runtime, machine)).toBe(before);
  });

  it('ACL: the same', () => {
    const { machine, acl, p } = aclSetup();
    const before = state(acl.runtime, machine);
    const I = A.ACL_ERROR_INVALID_PARAM;
    for (const field of ['location', 'handleType', 'allocationType', 'memAttr']) {
      const prop = Object.defineProperty({ ...aclProp }, field, {
        get() {
          throw new Error('getter');
        },
      });
      expect(
        answer(() => acl.aclrtMallocPhysical({ value: 0n }, G, prop as never, 0)),
        field,
      ).toBe(I);
      expect(answer(() => acl.aclrtMemGetAllocationGranularity(prop as never, 0, { value: 0 }))).toBe(I);
    }
    const H2D = A.ACL_MEMCPY_HOST_TO_DEVICE;
    expect(answer(() => acl.aclrtMemcpy(p, 4, revoked(new Uint8Array(4)) as never, 4, H2D))).toBe(
      A.ACL_ERROR_RT_PARAM_INVALID,
    );
    expect(answer(() => acl.aclrtMemSetAccess(p, G, revoked([]) as never, 1))).toBe(I);
    expect(answer(() => acl.aclrtMemSetAccess(p, G, [throwing('location')] as never, 1))).toBe(
      A.ACL_ERROR_RT_PARAM_INVALID,
    );
    expect(answer(() => acl.aclrtMemGetAccess(p, revoked({}) as never, { value: 0 }))).toBe(I);
    expect(answer(() => acl.aclrtMemSetPidToShareableHandle(1, revoked([]) as never, 1))).toBe(I);
    expect(state(acl.runtime, machine)).toBe(before);
  });
});

describe('C: ACL never throws while describing a hostile value', () => {
  it('Symbols and Object.create(null) in every argument position give a code and a message', () => {
    const { acl, p, h } = aclSetup();
    const hostile = [Symbol('s'), Object.create(null), revoked({})];
    const failures: string[] = [];
    for (const x of hostile) {
      const calls: Record<string, () => unknown> = {
        handleType: () =>
          acl.aclrtMallocPhysical({ value: 0n }, G, { ...aclProp, handleType: x } as never, 0),
        allocationType: () =>
          acl.aclrtMallocPhysical({ value: 0n }, G, { ...aclProp, allocationType: x } as never, 0),
        memAttr: () => acl.aclrtMallocPhysical({ value: 0n }, G, { ...aclProp, memAttr: x } as never, 0),
        locationId: () =>
          acl.aclrtMallocPhysical({ value: 0n }, G, { ...aclProp, location: { type: 1, id: x } } as never, 0),
        locationType: () =>
          acl.aclrtMallocPhysical({ value: 0n }, G, { ...aclProp, location: { type: x, id: 0 } } as never, 0),
        hostNumaId: () =>
          acl.aclrtMallocPhysical(
            { value: 0n },
            G,
            { ...aclProp, location: { type: A.ACL_MEM_LOCATION_TYPE_HOST_NUMA, id: x } } as never,
            0,
          ),
        accessLocation: () => acl.aclrtMemGetAccess(p, { type: x, id: x } as never, { value: 0 }),
        accessDevice: () => acl.aclrtMemGetAccess(p, { type: 1, id: x } as never, { value: 0 }),
        size: () => acl.aclrtReserveMemAddress({ value: 0n }, x as never, 0, 0, 0),
        flags: () => acl.aclrtReserveMemAddress({ value: 0n }, G, 0, 0, x as never),
        alignment: () => acl.aclrtReserveMemAddress({ value: 0n }, G, x as never, 0, 0),
        expectPtr: () => acl.aclrtReserveMemAddress({ value: 0n }, G, 0, x as never, 0),
        stream: () => acl.aclrtSynchronizeStream(x as never),
        destroyStream: () => acl.aclrtDestroyStream(x as never),
        memcpyStream: () => acl.aclrtMemcpyAsync(p, 4, p + 64n, 4, A.ACL_MEMCPY_DEVICE_TO_DEVICE, x as never),
        kind: () => acl.aclrtMemcpy(p, 4, p + 64n, 4, x as never),
        count: () => acl.aclrtMemcpy(p, 4, p + 64n, x as never, A.ACL_MEMCPY_DEVICE_TO_DEVICE),
        destMax: () => acl.aclrtMemcpy(p, x as never, p + 64n, 4, A.ACL_MEMCPY_DEVICE_TO_DEVICE),
        memsetValue: () => acl.aclrtMemset(p, 4, x as never, 4),
        memsetMax: () => acl.aclrtMemset(p, x as never, 0, 4),
        freePhysical: () => acl.aclrtFreePhysical(x as never),
        mapHandle: () => acl.aclrtMapMem(p, G, 0, x as never, 0),
        mapOffset: () => acl.aclrtMapMem(p, G, x as never, h, 0),
        exportType: () => acl.aclrtMemExportToShareableHandle(h, x as never, 0, { value: 0n }),
        exportFlags: () => acl.aclrtMemExportToShareableHandle(h, 0, x as never, { value: 0n }),
        setPid: () => acl.aclrtMemSetPidToShareableHandle(x as never, [1], 1),
        importDevice: () => acl.aclrtMemImportFromShareableHandle(1, x as never, { value: 0n }),
        setDevice: () => acl.aclrtSetDevice(x as never),
        resetDevice: () => acl.aclrtResetDevice(x as never),
        memInfo: () => acl.aclrtGetMemInfo(x as never, { value: 0 }, { value: 0 }),
        granularityOption: () => acl.aclrtMemGetAllocationGranularity(aclProp, x as never, { value: 0 }),
        malloc: () => acl.aclrtMalloc({ value: 0n }, x as never, 0),
        init: () => acl.aclInit(x as never),
      };
      for (const [name, call] of Object.entries(calls)) {
        const code = answer(call);
        if (typeof code !== 'number') failures.push(`${name}: ${String(code)}`);
        else if (code !== 0 && typeof answer(() => acl.aclGetRecentErrMsg()) !== 'string')
          failures.push(`${name}: no message`);
      }
    }
    expect(failures).toEqual([]);
  });
});

/** A Uint8Array whose buffer has been transferred away (detached). */
function detached(): Uint8Array {
  const b = new Uint8Array(8);
  structuredClone(b.buffer, { transfer: [b.buffer] });
  return b;
}

class LyingLength extends Uint8Array {
  override get length(): number {
    return 1 << 30;
  }
}

class ThrowingSubarray extends Uint8Array {
  override subarray(): Uint8Array<ArrayBuffer> {
    throw new Error('subarray');
  }
}

describe('D: host buffers are judged by their internal slots', () => {
  it('CUDA: a Proxy is no buffer, a lying subclass is its real bytes, a detached view with count 0 succeeds', () => {
    const { cu, p } = cudaSetup();
    cu.cuMemSetAccess(p, G, [{ location: { type: 1, id: 0 }, flags: 3 }], 1);
    const I = CU.CUDA_ERROR_INVALID_VALUE;
    expect(answer(() => cu.cuMemcpyHtoD(p, new Proxy(new Uint8Array(16), {}) as never, 16))).toBe(I);
    expect(answer(() => cu.cuMemcpyHtoD(p, new LyingLength(4), 16))).toBe(I);
    const src = new ThrowingSubarray(16).fill(9);
    expect(answer(() => cu.cuMemcpyHtoD(p, src, 16))).toBe(0);
    const back = new ThrowingSubarray(16);
    expect(answer(() => cu.cuMemcpyDtoH(back, p, 16))).toBe(0);
    expect([...back]).toEqual(new Array(16).fill(9));
    expect(answer(() => cu.cuMemcpyHtoD(p, detached(), 0))).toBe(0);
    expect(answer(() => cu.cuMemcpyDtoH(detached(), p, 0))).toBe(0);
    expect(answer(() => cu.cuMemcpyDtoH(detached(), p, 1))).toBe(I);
  });

  it('HIP: a host-to-host copy from a subclass whose length lies copies only its real bytes or refuses', () => {
    const { hip } = hipSetup();
    const H2H = H.hipMemcpyHostToHost;
    const dst = new Uint8Array(16);
    expect(answer(() => hip.hipMemcpy(dst, new LyingLength(4), 16, H2H))).toBe(H.hipErrorInvalidValue);
    const liar = new LyingLength(16).fill(5);
    expect(answer(() => hip.hipMemcpy(dst, liar, 16, H2H))).toBe(0);
    expect([...dst]).toEqual(new Array(16).fill(5));
    expect(answer(() => hip.hipMemcpy(new ThrowingSubarray(4), new ThrowingSubarray(4), 4, H2H))).toBe(0);
    expect(answer(() => hip.hipMemcpy(detached(), detached(), 0, H2H))).toBe(0);
    expect(answer(() => hip.hipMemcpy(new Proxy(dst, {}) as never, liar, 4, H2H))).toBe(
      H.hipErrorInvalidValue,
    );
  });

  it('ACL: the same for aclrtMemcpy', () => {
    const { acl } = aclSetup();
    const H2H = A.ACL_MEMCPY_HOST_TO_HOST;
    const dst = new Uint8Array(16);
    expect(answer(() => acl.aclrtMemcpy(dst, 16, new LyingLength(4), 16, H2H))).toBe(
      A.ACL_ERROR_INVALID_PARAM,
    );
    expect(answer(() => acl.aclrtMemcpy(new ThrowingSubarray(4), 4, new ThrowingSubarray(4), 4, H2H))).toBe(
      0,
    );
    expect(answer(() => acl.aclrtMemcpy(new Proxy(dst, {}) as never, 4, dst, 4, H2H))).toBe(
      A.ACL_ERROR_RT_PARAM_INVALID,
    );
  });
});

describe('E: each field of a struct is read once', () => {
  it('CUDA: a location id getter that changes between reads is read once', () => {
    const { cu } = cudaSetup();
    let reads = 0;
    const prop = {
      ...cuProp,
      location: {
        type: CU.CU_MEM_LOCATION_TYPE_DEVICE,
        get id() {
          reads++;
          return reads === 1 ? 0 : 'garbage';
        },
      },
    };
    expect(answer(() => cu.cuMemGetAllocationGranularity({ value: 0 }, prop as never, 0))).toBe(0);
    expect(reads).toBe(1);
    reads = 0;
    const b = { value: 0n };
    expect(answer(() => cu.cuMemCreate(b, G, prop as never, 0))).toBe(0);
    expect(reads).toBe(1);
    const out = { value: undefined as never as { location: { id: unknown } } };
    expect(cu.cuMemGetAllocationPropertiesFromHandle(out as never, b.value)).toBe(0);
    expect(out.value.location.id).toBe(0);
  });

  it('HIP: hipMemCreate stores the location id it validated', () => {
    const { hip } = hipSetup();
    let reads = 0;
    const location = {
      type: H.hipMemLocationTypeDevice,
      get id() {
        reads++;
        return reads === 1 ? 0 : 'garbage';
      },
    };
    const b = { value: 0n };
    expect(answer(() => hip.hipMemCreate(b, G, { ...hipProp, location } as never, 0))).toBe(0);
    expect(reads).toBe(1);
    const out = { value: undefined as never as { location: { id: unknown } } };
    expect(hip.hipMemGetAllocationPropertiesFromHandle(out as never, b.value)).toBe(0);
    expect(out.value.location.id).toBe(0);
  });

  it('ACL: aclrtMallocPhysical reads each field once', () => {
    const { acl } = aclSetup();
    let reads = 0;
    const prop = {
      ...aclProp,
      get memAttr() {
        reads++;
        return reads === 1 ? A.ACL_HBM_MEM_HUGE : 'garbage';
      },
    };
    const b = { value: 0n };
    expect(answer(() => acl.aclrtMallocPhysical(b, G, prop as never, 0))).toBe(0);
    expect(reads).toBe(1);
    const out = { value: undefined as never as { memAttr: unknown } };
    expect(acl.aclrtMemGetAllocationPropertiesFromHandle(b.value, out as never)).toBe(0);
    expect(out.value.memAttr).toBe(A.ACL_HBM_MEM_HUGE);
  });
});

describe('F: a VMM unmap never touches cuMemAlloc memory', () => {
  for (const mapped of [false, true]) {
    it(`cuMemUnmap over a 2 MiB reservation${mapped ? ' (mapped)' : ''} and the cuMemAlloc memory after it`, () => {
      const machine = createMachine({ devices: ['H200'] });
      const cu = createCuda({ machine });
      const b = { value: 0n };
      cu.cuInit(0);
      cu.cuDevicePrimaryCtxRetain(b, 0);
      cu.cuCtxSetCurrent(b.value);
      const baseline = machine.devices[0].pool.used;
      // A first lone 2 MiB reservation takes the start-up heap's hole (Note [Driver VA placement]),
      // so the next one and the cuMemAlloc memory share its run.
      expect(cu.cuMemAddressReserve(b, G, 0, 0, 0)).toBe(0);
      const inHole = b.value;
      expect(cu.cuMemAddressReserve(b, G, 0, 0, 0)).toBe(0);
      const r = b.value;
      expect(cu.cuMemAlloc(b, G)).toBe(0);
      const dptr = b.value;
      // The simulator places the cuMemAlloc memory right after the reservation.
      expect(dptr).toBe(r + BigInt(G));
      let h = 0n;
      if (mapped) {
        expect(cu.cuMemCreate(b, G, cuProp, 0)).toBe(0);
        h = b.value;
        expect(cu.cuMemMap(r, G, 0, h, 0)).toBe(0);
      }
      expect(cu.cuMemcpyHtoD(dptr, new Uint8Array(16).fill(3), 16)).toBe(0);
      const before = state(cu.runtime, machine);
      // The driver refuses cuMemUnmap on cuMemAlloc memory (alloc.unmapOnAllocPointer: 1).
      expect(cu.cuMemUnmap(r, 2 * G)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
      expect(state(cu.runtime, machine)).toBe(before);
      const back = new Uint8Array(16);
      expect(cu.cuMemcpyDtoH(back, dptr, 16)).toBe(0);
      expect([...back]).toEqual(new Array(16).fill(3));
      if (mapped) {
        expect(cu.cuMemUnmap(r, G)).toBe(0);
        expect(cu.cuMemRelease(h)).toBe(0);
      }
      expect(cu.cuMemFree(dptr)).toBe(0);
      expect(cu.cuMemAddressFree(r, G)).toBe(0);
      expect(cu.cuMemAddressFree(inHole, G)).toBe(0);
      expect(cu.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
      expect(machine.devices[0].pool.used).toBe(baseline);
    });
  }
});

describe('G: a disposed process takes nothing from the machine', () => {
  it('allocating and exporting calls after dispose answer the gone code and leave the pools alone', () => {
    const { machine, cu, h } = cudaSetup();
    const hip = createHip({ machine: createMachine({ devices: ['MI300X'] }) });
    const acl = createAcl({ machine: createMachine({ devices: ['Ascend910B'] }) });
    acl.aclInit(null);
    acl.aclrtSetDevice(0);
    cu.dispose();
    hip.dispose();
    acl.dispose();
    const used = machine.devices[0].pool.used;
    expect(used).toBe(0);
    expect(cu.cuMemAlloc({ value: 0n }, G)).toBe(CU.CUDA_ERROR_DEINITIALIZED);
    expect(cu.cuMemExportToShareableHandle({ value: 0 }, h, 1, 0)).toBe(CU.CUDA_ERROR_DEINITIALIZED);
    expect(hip.hipMalloc({ value: 0n }, G)).toBe(H.hipErrorDeinitialized);
    expect(acl.aclrtMalloc({ value: 0n }, G, 0)).toBe(A.ACL_ERROR_UNINITIALIZE);
    expect(machine.devices[0].pool.used).toBe(0);
  });
});

describe('H: requestedHandleTypes is a C enum, a number', () => {
  it('HIP and CUDA refuse a bigint and create nothing', () => {
    const { machine, hip } = hipSetup();
    const before = state(hip.runtime, machine);
    const p = { ...hipProp, requestedHandleTypes: 1n };
    expect(answer(() => hip.hipMemCreate({ value: 0n }, G, p as never, 0))).toBe(H.hipErrorInvalidValue);
    expect(state(hip.runtime, machine)).toBe(before);
    const c = cudaSetup();
    const cBefore = state(c.cu.runtime, c.machine);
    const q = { ...cuProp, requestedHandleTypes: 1n };
    expect(answer(() => c.cu.cuMemCreate({ value: 0n }, G, q as never, 0))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(state(c.cu.runtime, c.machine)).toBe(cBefore);
  });
});

describe('lists a Proxy claims are endless', () => {
  it('a descriptor list or pid list of 2^40 elements is refused, not read', () => {
    const endless = () =>
      new Proxy([], {
        get: (_t, key) => (key === 'length' ? 2 ** 40 : { location: { type: 1, id: 0 }, flags: 3 }),
      });
    const c = cudaSetup();
    expect(answer(() => c.cu.cuMemSetAccess(c.p, G, endless() as never, 2 ** 40))).toBe(
      CU.CUDA_ERROR_INVALID_VALUE,
    );
    const h = hipSetup();
    expect(answer(() => h.hip.hipMemSetAccess(h.p, G, endless() as never, 2 ** 40))).toBe(
      H.hipErrorInvalidValue,
    );
    const a = aclSetup();
    expect(answer(() => a.acl.aclrtMemSetAccess(a.p, G, endless() as never, 2 ** 40))).toBe(
      A.ACL_ERROR_INVALID_PARAM,
    );
    expect(
      answer(() => a.acl.aclrtMemSetPidToShareableHandle(1, { length: 2 ** 40 } as never, 2 ** 40)),
    ).toBe(A.ACL_ERROR_INVALID_PARAM);
  });
});

describe('two out boxes are written both or neither', () => {
  it('cuMemGetInfo, hipMemGetInfo and aclrtGetMemInfo leave the first box alone when the second refuses', () => {
    const refusing = () => HOSTILE_BOXES.proxyThrowingSet?.() as never;
    const c = cudaSetup();
    const f1 = { value: -1 };
    expect(answer(() => c.cu.cuMemGetInfo(f1, refusing()))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    const h = hipSetup();
    const f2 = { value: -1 };
    expect(answer(() => h.hip.hipMemGetInfo(f2, refusing()))).toBe(H.hipErrorInvalidValue);
    const a = aclSetup();
    const f3 = { value: -1 };
    expect(answer(() => a.acl.aclrtGetMemInfo(A.ACL_HBM_MEM, f3, refusing()))).toBe(
      A.ACL_ERROR_INVALID_PARAM,
    );
    expect([f1.value, f2.value, f3.value]).toEqual([-1, -1, -1]);
  });
});
