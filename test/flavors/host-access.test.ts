/**
 * The CPU's access to host-located VMM memory (Note [Host access] in
 * src/backend/backend.ts), in each flavor: a HOST location in the vendor's
 * set-access call grants it, `hostRead` / `hostWrite` are the CPU's loads and
 * stores (what C does by dereferencing the pointer), the devices see the
 * CPU's bytes and the CPU the devices', and every access C would fault on is
 * a refusal that changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { createMachine } from '../../src/backends/sim/machine.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';
import { FaultyBackend } from '../support/faulty-backend.js';

const G = 2 * 1024 * 1024;
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff);

function cudaProcess(options: Parameters<typeof createCuda>[0] = {}) {
  const cu = createCuda(options);
  const ctx = { value: 0n };
  expect(cu.cuInit(0)).toBe(0);
  expect(cu.cuDevicePrimaryCtxRetain(ctx, 0)).toBe(0);
  expect(cu.cuCtxSetCurrent(ctx.value)).toBe(0);
  const mapped = (location: { type: number; id: number }, size = G) => {
    const va = { value: 0n };
    const h = { value: 0n };
    expect(cu.cuMemAddressReserve(va, size, 0, 0n, 0)).toBe(0);
    expect(
      cu.cuMemCreate(
        h,
        size,
        { type: CU.CU_MEM_ALLOCATION_TYPE_PINNED, requestedHandleTypes: 0, location },
        0,
      ),
    ).toBe(0);
    expect(cu.cuMemMap(va.value, size, 0, h.value, 0)).toBe(0);
    return va.value;
  };
  return { cu, mapped };
}

const HOST_NUMA = { type: CU.CU_MEM_LOCATION_TYPE_HOST_NUMA, id: 0 };
const DEVICE = { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 };
const hostDesc = (flags: number) => [{ location: { type: CU.CU_MEM_LOCATION_TYPE_HOST, id: 0 }, flags }];
const deviceDesc = [{ location: DEVICE, flags: CU.CU_MEM_ACCESS_FLAGS_PROT_READWRITE }];

describe('CUDA: the CPU on host-located VMM memory', () => {
  it('no load or store before the grant; after it, the CPU and the device see each other\u2019s bytes', () => {
    const { cu, mapped } = cudaProcess();
    const va = mapped(HOST_NUMA);
    const back = new Uint8Array(4096);
    expect(cu.hostRead(va, back)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.hostWrite(va, bytes(16, 1))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(
      cu.cuMemSetAccess(va, G, [...hostDesc(CU.CU_MEM_ACCESS_FLAGS_PROT_READWRITE), ...deviceDesc], 2),
    ).toBe(0);
    const data = bytes(4096, 3);
    expect(cu.hostWrite(va + 100n, data)).toBe(0);
    const viaDevice = new Uint8Array(4096);
    expect(cu.cuMemcpyDtoH(viaDevice, va + 100n, 4096)).toBe(0);
    expect(viaDevice).toEqual(data);
    const fromDevice = bytes(64, 9);
    expect(cu.cuMemcpyHtoD(va + BigInt(G - 64), fromDevice, 64)).toBe(0);
    const cpu = new Uint8Array(64);
    expect(cu.hostRead(va + BigInt(G - 64), cpu)).toBe(0);
    expect(cpu).toEqual(fromDevice);
    // Past the mapping's end: not mapped, nothing read.
    const past = new Uint8Array(128).fill(0xee);
    expect(cu.hostRead(va + BigInt(G - 64), past)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(past.every((x) => x === 0xee)).toBe(true);
    cu.dispose();
  });

  it('a read-only grant allows loads, refuses stores and changes nothing; an unmap takes the grant', () => {
    const { cu, mapped } = cudaProcess();
    const va = mapped(HOST_NUMA);
    expect(cu.cuMemSetAccess(va, G, hostDesc(CU.CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 1)).toBe(0);
    expect(cu.hostWrite(va, bytes(32, 5))).toBe(0);
    expect(cu.cuMemSetAccess(va, G, hostDesc(CU.CU_MEM_ACCESS_FLAGS_PROT_READ), 1)).toBe(0);
    expect(cu.hostWrite(va, new Uint8Array(32))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    const back = new Uint8Array(32);
    expect(cu.hostRead(va, back)).toBe(0);
    expect(back).toEqual(bytes(32, 5));
    expect(cu.cuMemUnmap(va, G)).toBe(0);
    expect(cu.hostRead(va, back)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
  });

  it('device memory: a HOST descriptor is NOT_SUPPORTED and the CPU never reaches it; bad arguments are INVALID_VALUE', () => {
    const { cu, mapped } = cudaProcess();
    const va = mapped(DEVICE);
    expect(cu.cuMemSetAccess(va, G, hostDesc(CU.CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 1)).toBe(
      CU.CUDA_ERROR_NOT_SUPPORTED,
    );
    expect(cu.cuMemSetAccess(va, G, deviceDesc, 1)).toBe(0);
    expect(cu.hostRead(va, new Uint8Array(8))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    for (const [ptr, buf] of [
      [0n, new Uint8Array(8)],
      [va, null],
      [va, [1, 2, 3]],
      [-1, new Uint8Array(8)],
    ] as const)
      expect(cu.hostWrite(ptr, buf)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    cu.dispose();
    expect(cu.hostRead(va, new Uint8Array(8))).toBe(CU.CUDA_ERROR_DEINITIALIZED);
  });

  it('two adjacent host mappings granted in one call are one range for the CPU', () => {
    const { cu } = cudaProcess();
    const va = { value: 0n };
    expect(cu.cuMemAddressReserve(va, 2 * G, 0, 0n, 0)).toBe(0);
    for (const at of [0n, BigInt(G)]) {
      const h = { value: 0n };
      expect(cu.cuMemCreate(h, G, { type: 1, requestedHandleTypes: 0, location: HOST_NUMA }, 0)).toBe(0);
      expect(cu.cuMemMap(va.value + at, G, 0, h.value, 0)).toBe(0);
    }
    expect(cu.cuMemSetAccess(va.value, 2 * G, hostDesc(CU.CU_MEM_ACCESS_FLAGS_PROT_READWRITE), 1)).toBe(0);
    const data = bytes(8192, 11);
    expect(cu.hostWrite(va.value + BigInt(G - 4096), data)).toBe(0);
    const back = new Uint8Array(8192);
    expect(cu.hostRead(va.value + BigInt(G - 4096), back)).toBe(0);
    expect(back).toEqual(data);
    cu.dispose();
  });

  it('a device grant that fails after the CPU grant gives the CPU its old access back', () => {
    const faulty = new FaultyBackend(createMachine({ devices: ['H200'] }).spawn());
    const cu = createCuda({ backend: faulty.backend });
    const ctx = { value: 0n };
    cu.cuInit(0);
    cu.cuDevicePrimaryCtxRetain(ctx, 0);
    cu.cuCtxSetCurrent(ctx.value);
    const va = { value: 0n };
    const h = { value: 0n };
    expect(cu.cuMemAddressReserve(va, G, 0, 0n, 0)).toBe(0);
    expect(cu.cuMemCreate(h, G, { type: 1, requestedHandleTypes: 0, location: HOST_NUMA }, 0)).toBe(0);
    expect(cu.cuMemMap(va.value, G, 0, h.value, 0)).toBe(0);
    // The CPU's grant is step 1, the device's step 2: fail the second.
    faulty.arm(2);
    expect(cu.cuMemSetAccess(va.value, G, [...hostDesc(3), ...deviceDesc], 2)).not.toBe(0);
    expect(faulty.log.slice(0, 2)).toEqual(['setHostAccess', 'setAccess']);
    faulty.arm(0);
    expect(cu.hostRead(va.value, new Uint8Array(8))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.runtime.mappingAt(Number(va.value))?.accessOf(0)).toBe(0);
    cu.dispose();
  });
});

describe('HIP and ACL: the CPU on host-located VMM memory', () => {
  it('HIP: hipMemSetAccess with a host location grants it; the device sees the CPU\u2019s store', () => {
    const hip = createHip();
    const va = { value: 0n };
    const h = { value: 0n };
    expect(hip.hipMemAddressReserve(va, G, 0, null, 0)).toBe(0);
    const prop = {
      type: H.hipMemAllocationTypePinned,
      requestedHandleTypes: H.hipMemHandleTypeNone,
      location: { type: H.hipMemLocationTypeHost, id: 0 },
    };
    expect(hip.hipMemCreate(h, G, prop, 0)).toBe(0);
    expect(hip.hipMemMap(va.value, G, 0, h.value, 0)).toBe(0);
    expect(hip.hostWrite(va.value, bytes(8, 1))).toBe(H.hipErrorIllegalAddress);
    const descs = [
      { location: { type: H.hipMemLocationTypeHost, id: 0 }, flags: H.hipMemAccessFlagsProtReadWrite },
      { location: { type: H.hipMemLocationTypeDevice, id: 0 }, flags: H.hipMemAccessFlagsProtReadWrite },
    ];
    expect(hip.hipMemSetAccess(va.value, G, descs, 2)).toBe(0);
    expect(hip.hostWrite(va.value, bytes(512, 2))).toBe(0);
    const viaDevice = new Uint8Array(512);
    expect(hip.hipMemcpyDtoH(viaDevice, va.value, 512)).toBe(0);
    expect(viaDevice).toEqual(bytes(512, 2));
    hip.dispose();
  });

  it('ACL: aclrtMemSetAccess with a HOST location on host memory grants it; device memory stays out of reach', () => {
    const acl = createAcl();
    expect(acl.aclInit(null)).toBe(0);
    expect(acl.aclrtSetDevice(0)).toBe(0);
    const va = { value: 0n };
    expect(acl.aclrtReserveMemAddress(va, 2 * G, 0, null, 0)).toBe(0);
    const h = { value: 0n };
    const hostProp = {
      handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: A.ACL_HBM_MEM_HUGE,
      location: { type: A.ACL_MEM_LOCATION_TYPE_HOST, id: 0 },
      reserve: 0,
    };
    expect(acl.aclrtMallocPhysical(h, G, hostProp, 0)).toBe(0);
    expect(acl.aclrtMapMem(va.value, G, 0, h.value, 0)).toBe(0);
    expect(acl.hostRead(va.value, new Uint8Array(8))).toBe(A.ACL_ERROR_RT_NO_PERMISSION);
    const host = [
      { location: { type: A.ACL_MEM_LOCATION_TYPE_HOST, id: 0 }, flags: A.ACL_RT_MEM_ACCESS_FLAGS_READWRITE },
    ];
    expect(acl.aclrtMemSetAccess(va.value, G, host, 1)).toBe(0);
    expect(acl.hostWrite(va.value, bytes(64, 4))).toBe(0);
    const back = new Uint8Array(64);
    expect(acl.hostRead(va.value, back)).toBe(0);
    expect(back).toEqual(bytes(64, 4));
    acl.dispose();
  });
});
