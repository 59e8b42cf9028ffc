/**
 * One core, three front ends (zod-style parity): every core error kind has a
 * code in every vendor's table, and the same scenario run through CUDA, HIP
 * and ACL on the same simulated machine leaves the same bytes.
 */
import { describe, expect, it } from 'vitest';
import {
  ACL_ERROR_TABLE,
  ACL_HBM_MEM_HUGE,
  ACL_MEM_ALLOCATION_TYPE_PINNED,
  ACL_MEM_HANDLE_TYPE_NONE,
  ACL_MEM_LOCATION_TYPE_DEVICE,
  ACL_MEMCPY_DEVICE_TO_DEVICE,
  ACL_MEMCPY_DEVICE_TO_HOST,
  ACL_MEMCPY_HOST_TO_DEVICE,
  ACL_RT_MEM_ACCESS_FLAGS_READWRITE,
  CUDA_ERROR_TABLE,
  createAcl,
  createCuda,
  createHip,
  ERROR_KINDS,
  HIP_ERROR_TABLE,
  hipMemcpyDeviceToDevice,
  hipMemcpyDeviceToHost,
  hipMemcpyHostToDevice,
} from '../../src/index.js';

const G = 2 * 1024 * 1024;

describe('error tables', () => {
  const tables = { CUDA: CUDA_ERROR_TABLE, HIP: HIP_ERROR_TABLE, ACL: ACL_ERROR_TABLE };
  it.each(Object.entries(tables))(
    '%s has a code for every core error kind, and only for those',
    (_, table) => {
      expect(Object.keys(table).sort()).toEqual([...ERROR_KINDS].sort());
      for (const kind of ERROR_KINDS) {
        expect(Number.isInteger(table[kind]), kind).toBe(true);
        expect(table[kind], kind).not.toBe(0);
      }
    },
  );
});

/** The scenario, as plain steps each flavor implements in its own calls. */
interface Steps {
  /** Reserve 3 granules, back the first two with two handles, grant read-write. */
  setup(): bigint;
  write(va: bigint, bytes: Uint8Array): void;
  copy(dst: bigint, src: bigint, n: number): void;
  fill(va: bigint, value: number, n: number): void;
  read(va: bigint, n: number): Uint8Array;
  teardown(): void;
  leftovers(): number;
}

function expectOk(code: number, what: string): void {
  expect(code, what).toBe(0);
}

function cudaSteps(): Steps {
  const cu = createCuda({ devices: ['H200'] });
  const ctx = { value: 0n };
  const base = { value: 0n };
  const handles: bigint[] = [];
  return {
    setup() {
      expectOk(cu.cuInit(0), 'cuInit');
      expectOk(cu.cuDevicePrimaryCtxRetain(ctx, 0), 'ctx');
      expectOk(cu.cuCtxSetCurrent(ctx.value), 'ctx');
      expectOk(cu.cuMemAddressReserve(base, 3 * G, 0, 0n, 0), 'reserve');
      const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
      for (let i = 0; i < 2; i++) {
        const h = { value: 0n };
        expectOk(cu.cuMemCreate(h, G, prop, 0), 'create');
        expectOk(cu.cuMemMap(base.value + BigInt(i * G), G, 0, h.value, 0), 'map');
        handles.push(h.value);
      }
      expectOk(
        cu.cuMemSetAccess(base.value, 2 * G, [{ location: { type: 1, id: 0 }, flags: 3 }], 1),
        'access',
      );
      return base.value;
    },
    write: (va, bytes) => expectOk(cu.cuMemcpyHtoD(va, bytes, bytes.length), 'HtoD'),
    copy: (dst, src, n) => expectOk(cu.cuMemcpyDtoD(dst, src, n), 'DtoD'),
    fill: (va, value, n) => expectOk(cu.cuMemsetD8(va, value, n), 'memset'),
    read(va, n) {
      const out = new Uint8Array(n);
      expectOk(cu.cuMemcpyDtoH(out, va, n), 'DtoH');
      return out;
    },
    teardown() {
      expectOk(cu.cuMemUnmap(base.value, 2 * G), 'unmap');
      for (const h of handles) expectOk(cu.cuMemRelease(h), 'release');
      expectOk(cu.cuMemAddressFree(base.value, 3 * G), 'free');
    },
    leftovers: () => cu.machine!.liveAllocations + cu.runtime.stats().reservations,
  };
}

function hipSteps(): Steps {
  const hip = createHip({ devices: ['H200'] });
  const base = { value: 0n };
  const handles: bigint[] = [];
  return {
    setup() {
      expectOk(hip.hipInit(0), 'hipInit');
      expectOk(hip.hipSetDevice(0), 'hipSetDevice');
      expectOk(hip.hipMemAddressReserve(base, 3 * G, 0, null, 0), 'reserve');
      const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
      for (let i = 0; i < 2; i++) {
        const h = { value: 0n };
        expectOk(hip.hipMemCreate(h, G, prop, 0), 'create');
        expectOk(hip.hipMemMap(base.value + BigInt(i * G), G, 0, h.value, 0), 'map');
        handles.push(h.value);
      }
      expectOk(
        hip.hipMemSetAccess(base.value, 2 * G, [{ location: { type: 1, id: 0 }, flags: 3 }], 1),
        'access',
      );
      return base.value;
    },
    write: (va, bytes) => expectOk(hip.hipMemcpy(va, bytes, bytes.length, hipMemcpyHostToDevice), 'HtoD'),
    copy: (dst, src, n) => expectOk(hip.hipMemcpy(dst, src, n, hipMemcpyDeviceToDevice), 'DtoD'),
    fill: (va, value, n) => expectOk(hip.hipMemset(va, value, n), 'memset'),
    read(va, n) {
      const out = new Uint8Array(n);
      expectOk(hip.hipMemcpy(out, va, n, hipMemcpyDeviceToHost), 'DtoH');
      return out;
    },
    teardown() {
      expectOk(hip.hipMemUnmap(base.value, 2 * G), 'unmap');
      for (const h of handles) expectOk(hip.hipMemRelease(h), 'release');
      expectOk(hip.hipMemAddressFree(base.value, 3 * G), 'free');
    },
    leftovers: () => hip.machine!.liveAllocations + hip.runtime.stats().reservations,
  };
}

function aclSteps(): Steps {
  const acl = createAcl({ devices: ['H200'] });
  const base = { value: 0n };
  const handles: bigint[] = [];
  return {
    setup() {
      expectOk(acl.aclInit(null), 'aclInit');
      expectOk(acl.aclrtSetDevice(0), 'aclrtSetDevice');
      expectOk(acl.aclrtReserveMemAddress(base, 3 * G, 0, null, 0), 'reserve');
      const prop = {
        handleType: ACL_MEM_HANDLE_TYPE_NONE,
        allocationType: ACL_MEM_ALLOCATION_TYPE_PINNED,
        memAttr: ACL_HBM_MEM_HUGE,
        location: { id: 0, type: ACL_MEM_LOCATION_TYPE_DEVICE },
        reserve: 0,
      };
      for (let i = 0; i < 2; i++) {
        const h = { value: 0n };
        expectOk(acl.aclrtMallocPhysical(h, G, prop, 0), 'malloc physical');
        const va = base.value + BigInt(i * G);
        expectOk(acl.aclrtMapMem(va, G, 0, h.value, 0), 'map');
        const desc = [
          {
            flags: ACL_RT_MEM_ACCESS_FLAGS_READWRITE,
            location: { id: 0, type: ACL_MEM_LOCATION_TYPE_DEVICE },
          },
        ];
        expectOk(acl.aclrtMemSetAccess(va, G, desc, 1), 'access');
        handles.push(h.value);
      }
      return base.value;
    },
    write: (va, bytes) =>
      expectOk(acl.aclrtMemcpy(va, bytes.length, bytes, bytes.length, ACL_MEMCPY_HOST_TO_DEVICE), 'HtoD'),
    copy: (dst, src, n) => expectOk(acl.aclrtMemcpy(dst, n, src, n, ACL_MEMCPY_DEVICE_TO_DEVICE), 'DtoD'),
    fill: (va, value, n) => expectOk(acl.aclrtMemset(va, n, value, n), 'memset'),
    read(va, n) {
      const out = new Uint8Array(n);
      expectOk(acl.aclrtMemcpy(out, n, va, n, ACL_MEMCPY_DEVICE_TO_HOST), 'DtoH');
      return out;
    },
    teardown() {
      for (let i = 0; i < 2; i++) expectOk(acl.aclrtUnmapMem(base.value + BigInt(i * G)), 'unmap');
      for (const h of handles) expectOk(acl.aclrtFreePhysical(h), 'free physical');
      expectOk(acl.aclrtReleaseMemAddress(base.value), 'release address');
    },
    leftovers: () => acl.machine!.liveAllocations + acl.runtime.stats().reservations,
  };
}

/** Writes, copies and fills that cross the boundary between the two handles; returns all 4 MiB read back. */
function scenario(s: Steps): Uint8Array {
  const base = s.setup();
  const pattern = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 2654435761) >>> 24);
  s.write(base + BigInt(G - 100_000), pattern);
  s.copy(base + 4096n, base + BigInt(G - 50_000), 120_000);
  s.fill(base + BigInt(G + 500_000), 0x3c, 70_000);
  s.copy(base + BigInt(2 * G - 65_536), base + 8192n, 65_536);
  const bytes = s.read(base, 2 * G);
  s.teardown();
  expect(s.leftovers()).toBe(0);
  return bytes;
}

describe('the same scenario through every flavor', () => {
  it('leaves the same bytes through CUDA, HIP and ACL', () => {
    const cuda = scenario(cudaSteps());
    const hip = scenario(hipSteps());
    const acl = scenario(aclSteps());
    // Something was written (not all zeros), and all three agree byte for byte.
    expect(cuda.some((b) => b !== 0)).toBe(true);
    expect(Buffer.from(hip).equals(Buffer.from(cuda))).toBe(true);
    expect(Buffer.from(acl).equals(Buffer.from(cuda))).toBe(true);
  });
});
