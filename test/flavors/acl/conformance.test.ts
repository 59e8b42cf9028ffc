import { afterEach, describe, expect, it } from 'vitest';
import type { Machine } from '../../../src/backends/sim/machine.js';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { ERROR_KINDS } from '../../../src/core/errors.js';
import { type AclFlavor, aclMallocSize } from '../../../src/flavors/acl/acl.js';
import * as C from '../../../src/flavors/acl/constants.js';
import { ACL_ERROR_TABLE } from '../../../src/flavors/acl/error-table.js';
import {
  DEVICES,
  disposeAll,
  expectOk,
  G,
  MiB,
  makeAcl,
  mallocPhysical,
  mapped,
  ON_CUDA,
  pattern,
  prop,
  RW,
  ready,
  reserve,
  SKIP,
  TOTAL,
  TWO_DEVICES,
  twoDevices,
} from './helpers.js';

afterEach(disposeAll);

const INVALID = C.ACL_ERROR_INVALID_PARAM;
const RT_PARAM = C.ACL_ERROR_RT_PARAM_INVALID;

type Row = [string, (acl: AclFlavor) => number, number];

describe('initialisation and devices', () => {
  const rows: Row[] = [
    [
      'aclrtSetDevice before aclInit',
      (a) => makeAcl().aclrtSetDevice(0) + 0 * a.pid,
      C.ACL_ERROR_UNINITIALIZE,
    ],
    [
      'aclrtReserveMemAddress before aclInit',
      () => makeAcl().aclrtReserveMemAddress({ value: 0n }, G, 0, null, 0),
      C.ACL_ERROR_UNINITIALIZE,
    ],
    ['aclInit twice', (a) => a.aclInit(null), C.ACL_ERROR_REPEAT_INITIALIZE],
    ['aclFinalize without aclInit', () => makeAcl().aclFinalize(), C.ACL_ERROR_REPEAT_FINALIZE],
    [
      `aclrtSetDevice(${DEVICES}) past the last device`,
      (a) => a.aclrtSetDevice(DEVICES),
      C.ACL_ERROR_RT_INVALID_DEVICEID,
    ],
    ['aclrtSetDevice(-1)', (a) => a.aclrtSetDevice(-1), C.ACL_ERROR_RT_INVALID_DEVICEID],
    ['aclrtResetDevice(7)', (a) => a.aclrtResetDevice(7), C.ACL_ERROR_RT_INVALID_DEVICEID],
    ['aclrtGetDeviceCount(NULL)', (a) => a.aclrtGetDeviceCount(null as never), INVALID],
    [
      'aclrtMalloc without aclrtSetDevice',
      () => {
        const b = makeAcl();
        b.aclInit(null);
        return b.aclrtMalloc({ value: 0n }, 64, C.ACL_MEM_MALLOC_HUGE_FIRST);
      },
      C.ACL_ERROR_RT_CONTEXT_NULL,
    ],
    [
      'aclrtSynchronizeDevice after aclrtResetDevice',
      (a) => {
        a.aclrtResetDevice(0);
        return a.aclrtSynchronizeDevice();
      },
      C.ACL_ERROR_RT_CONTEXT_NULL,
    ],
    ['aclFinalize after aclInit', (a) => a.aclFinalize(), C.ACL_SUCCESS],
  ];
  it.each(rows)('%s', (_name, call, code) => {
    expect(call(ready())).toBe(code);
  });

  it('aclrtGetDeviceCount and aclrtDeviceGetBareTgid', () => {
    // On the simulator a machine of two; on the GPU machine, its devices.
    const acl = ready(ON_CUDA ? {} : { machine: createMachine({ devices: ['Ascend910B', 'Ascend910B'] }) });
    const count = { value: 0 };
    expect(acl.aclrtGetDeviceCount(count)).toBe(C.ACL_SUCCESS);
    expect(count.value).toBe(ON_CUDA ? DEVICES : 2);
    const pid = { value: 0 };
    expect(acl.aclrtDeviceGetBareTgid(pid)).toBe(C.ACL_SUCCESS);
    expect(pid.value).toBe(acl.runtime.pid);
  });

  it.skipIf(ON_CUDA)(`the default machine is one Ascend 910B [cuda: ${SKIP.ascend}]`, () => {
    const acl = makeAcl();
    expect(acl.runtime.devices.map((d) => d.name)).toEqual(['Ascend910B']);
  });
});

describe('NULL pointers and zero sizes -> ACL_ERROR_INVALID_PARAM', () => {
  const rows: [string, (acl: AclFlavor, va: bigint, h: bigint) => number][] = [
    ['reserve virPtr NULL', (a) => a.aclrtReserveMemAddress(null as never, G, 0, null, 0)],
    ['reserve size 0', (a) => a.aclrtReserveMemAddress({ value: 0n }, 0, 0, null, 0)],
    ['reserve flags 2', (a) => a.aclrtReserveMemAddress({ value: 0n }, G, 0, null, 2)],
    ['release virPtr NULL', (a) => a.aclrtReleaseMemAddress(null)],
    ['release virPtr 0n', (a) => a.aclrtReleaseMemAddress(0n)],
    ['mallocPhysical handle NULL', (a) => a.aclrtMallocPhysical(null as never, G, prop(), 0)],
    ['mallocPhysical prop NULL', (a) => a.aclrtMallocPhysical({ value: 0n }, G, null as never, 0)],
    ['mallocPhysical size 0', (a) => a.aclrtMallocPhysical({ value: 0n }, 0, prop(), 0)],
    ['mallocPhysical flags 1', (a) => a.aclrtMallocPhysical({ value: 0n }, G, prop(), 1)],
    [
      'mallocPhysical handleType POSIX',
      (a) => a.aclrtMallocPhysical({ value: 0n }, G, prop({ handleType: C.ACL_MEM_HANDLE_TYPE_POSIX }), 0),
    ],
    [
      'mallocPhysical allocationType 1',
      (a) => a.aclrtMallocPhysical({ value: 0n }, G, prop({ allocationType: 1 }), 0),
    ],
    [
      'mallocPhysical location UNREGISTERED',
      (a) =>
        a.aclrtMallocPhysical(
          { value: 0n },
          G,
          prop({ location: { id: 0, type: C.ACL_MEM_LOCATION_TYPE_UNREGISTERED } }),
          0,
        ),
    ],
    [
      'mallocPhysical DDR attribute on a device',
      (a) => a.aclrtMallocPhysical({ value: 0n }, G, prop({ memAttr: C.ACL_DDR_MEM_HUGE }), 0),
    ],
    [
      'mallocPhysical unknown memAttr',
      (a) => a.aclrtMallocPhysical({ value: 0n }, G, prop({ memAttr: 99 }), 0),
    ],
    ['freePhysical NULL', (a) => a.aclrtFreePhysical(0n)],
    ['map virPtr NULL', (a, _va, h) => a.aclrtMapMem(0n, G, 0, h, 0)],
    ['map handle NULL', (a, va) => a.aclrtMapMem(va, G, 0, null, 0)],
    ['map size 0', (a, va, h) => a.aclrtMapMem(va, 0, 0, h, 0)],
    ['map flags 1', (a, va, h) => a.aclrtMapMem(va, G, 0, h, 1)],
    ['unmap virPtr NULL', (a) => a.aclrtUnmapMem(null)],
    ['setAccess virPtr NULL', (a) => a.aclrtMemSetAccess(0n, G, RW(), 1)],
    ['setAccess size 0', (a, va) => a.aclrtMemSetAccess(va, 0, RW(), 1)],
    ['setAccess desc NULL', (a, va) => a.aclrtMemSetAccess(va, G, null as never, 1)],
    ['setAccess count 0', (a, va) => a.aclrtMemSetAccess(va, G, RW(), 0)],
    ['getAccess virPtr NULL', (a) => a.aclrtMemGetAccess(0n, { id: 0, type: 1 }, { value: 0 })],
    ['getAccess location NULL', (a, va) => a.aclrtMemGetAccess(va, null as never, { value: 0 })],
    ['getAccess flag NULL', (a, va) => a.aclrtMemGetAccess(va, { id: 0, type: 1 }, null as never)],
    ['retain virPtr NULL', (a) => a.aclrtMemRetainAllocationHandle(0n, { value: 0n })],
    ['retain handle NULL', (a, va) => a.aclrtMemRetainAllocationHandle(va, null as never)],
    ['granularity prop NULL', (a) => a.aclrtMemGetAllocationGranularity(null as never, 0, { value: 0 })],
    ['granularity out NULL', (a) => a.aclrtMemGetAllocationGranularity(prop(), 0, null as never)],
    ['properties handle NULL', (a) => a.aclrtMemGetAllocationPropertiesFromHandle(0n, { value: prop() })],
    ['properties prop NULL', (a, _va, h) => a.aclrtMemGetAllocationPropertiesFromHandle(h, null as never)],
    ['export handle NULL', (a) => a.aclrtMemExportToShareableHandle(0n, 0, 0, { value: 0n })],
    ['export handleType POSIX', (a, _va, h) => a.aclrtMemExportToShareableHandle(h, 2, 0, { value: 0n })],
    ['export shareableHandle NULL', (a, _va, h) => a.aclrtMemExportToShareableHandle(h, 0, 0, null as never)],
    ['setPid pid NULL', (a) => a.aclrtMemSetPidToShareableHandle(1n, null, 1)],
    ['setPid pidNum 0', (a) => a.aclrtMemSetPidToShareableHandle(1n, [4001], 0)],
    ['import handle NULL', (a) => a.aclrtMemImportFromShareableHandle(1n, 0, null as never)],
    ['getBareTgid NULL', (a) => a.aclrtDeviceGetBareTgid(null as never)],
    ['malloc devPtr NULL', (a) => a.aclrtMalloc(null as never, 64, 0)],
    ['malloc size 0', (a) => a.aclrtMalloc({ value: 0n }, 0, 0)],
    ['free NULL', (a) => a.aclrtFree(null)],
    ['memcpy dst NULL', (a) => a.aclrtMemcpy(0n, 16, new Uint8Array(16), 16, C.ACL_MEMCPY_HOST_TO_DEVICE)],
    ['memcpy src NULL', (a) => a.aclrtMemcpy(new Uint8Array(16), 16, 0n, 16, C.ACL_MEMCPY_DEVICE_TO_HOST)],
    ['memcpy count 0', (a, va) => a.aclrtMemcpy(va, 16, new Uint8Array(16), 0, C.ACL_MEMCPY_HOST_TO_DEVICE)],
    [
      'memcpy count > destMax',
      (a, va) => a.aclrtMemcpy(va, 8, new Uint8Array(16), 16, C.ACL_MEMCPY_HOST_TO_DEVICE),
    ],
    ['memcpy bad kind', (a, va) => a.aclrtMemcpy(va, 16, new Uint8Array(16), 16, 42)],
    ['memset devPtr NULL', (a) => a.aclrtMemset(0n, 16, 0, 16)],
    ['memset count 0', (a, va) => a.aclrtMemset(va, 16, 0, 0)],
    ['memset count > maxCount', (a, va) => a.aclrtMemset(va, 8, 0, 16)],
    ['createStream NULL', (a) => a.aclrtCreateStream(null as never)],
    ['destroyStream NULL', (a) => a.aclrtDestroyStream(null)],
    ['getMemInfo free NULL', (a) => a.aclrtGetMemInfo(C.ACL_HBM_MEM, null as never, { value: 0 })],
  ];
  it.each(rows)('%s', (_name, call) => {
    const acl = ready();
    const va = reserve(acl, G);
    const h = mallocPhysical(acl);
    expect(call(acl, va, h)).toBe(INVALID);
    expect(acl.aclGetRecentErrMsg()).toMatch(/ACL_ERROR_INVALID_PARAM \(100000\)/);
  });
});

describe('sizes, alignment and map rules -> runtime codes', () => {
  const rows: [string, (acl: AclFlavor, va: bigint, h: bigint) => number, number][] = [
    // CANN's one size rule for a reservation is size != 0; other sizes round up to the granularity.
    ['reserve 1 MiB (rounds up)', (a) => a.aclrtReserveMemAddress({ value: 0n }, MiB, 0, null, 0), 0],
    ['reserve 3 MiB (rounds up)', (a) => a.aclrtReserveMemAddress({ value: 0n }, 3 * MiB, 0, null, 0), 0],
    ['reserve 512 bytes, flags 1', (a) => a.aclrtReserveMemAddress({ value: 0n }, 512, 0, null, 1), 0],
    [
      'reserve alignment 4096 (reserved, 0)',
      (a) => a.aclrtReserveMemAddress({ value: 0n }, G, 4096, null, 0),
      RT_PARAM,
    ],
    ['reserve flags 1 (huge page hint)', (a) => a.aclrtReserveMemAddress({ value: 0n }, G, 0, null, 1), 0],
    [
      'reserve at a taken expectPtr',
      (a, va) => a.aclrtReserveMemAddress({ value: 0n }, G, 0, va, 0),
      RT_PARAM,
    ],
    [
      'reserve at a misaligned expectPtr',
      (a, va) => a.aclrtReserveMemAddress({ value: 0n }, G, 0, va + 4096n, 0),
      RT_PARAM,
    ],
    ['mallocPhysical 1 MiB', (a) => a.aclrtMallocPhysical({ value: 0n }, MiB, prop(), 0), RT_PARAM],
    [
      'mallocPhysical 2 MiB + 4 KiB',
      (a) => a.aclrtMallocPhysical({ value: 0n }, G + 4096, prop(), 0),
      RT_PARAM,
    ],
    [
      'mallocPhysical HUGE1G with 2 MiB',
      (a) => a.aclrtMallocPhysical({ value: 0n }, G, prop({ memAttr: C.ACL_HBM_MEM_HUGE1G }), 0),
      RT_PARAM,
    ],
    [
      'mallocPhysical on device 3',
      (a) => a.aclrtMallocPhysical({ value: 0n }, G, prop({}, 3), 0),
      C.ACL_ERROR_RT_INVALID_DEVICEID,
    ],
    [
      'mallocPhysical MANAGED location',
      (a) =>
        a.aclrtMallocPhysical(
          { value: 0n },
          G,
          prop({ location: { id: 0, type: C.ACL_MEM_LOCATION_TYPE_MANAGED } }),
          0,
        ),
      C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
    ],
    [
      `mallocPhysical past the device's memory (${TOTAL} bytes; 64 GiB on a 910B)`,
      (a) => a.aclrtMallocPhysical({ value: 0n }, (Math.ceil(TOTAL / G) + 1) * G, prop(), 0),
      C.ACL_ERROR_RT_MEMORY_ALLOCATION,
    ],
    ['freePhysical of an unknown handle', (a) => a.aclrtFreePhysical(999n), C.ACL_ERROR_RT_INVALID_HANDLE],
    ['map offset 2 MiB', (a, va, h) => a.aclrtMapMem(va, G, G, h, 0), RT_PARAM],
    ['map size != physical size', (a, va, h) => a.aclrtMapMem(va, 2 * G, 0, h, 0), RT_PARAM],
    ['map at a misaligned address', (a, va, h) => a.aclrtMapMem(va + 4096n, G, 0, h, 0), RT_PARAM],
    ['map past the reservation end', (a, va, h) => a.aclrtMapMem(va + 2n * BigInt(G), G, 0, h, 0), RT_PARAM],
    [
      'map outside every reservation',
      (_a, _va, h) => _a.aclrtMapMem(0x1000_0000_0000n, G, 0, h, 0),
      RT_PARAM,
    ],
    ['map an unknown handle', (a, va) => a.aclrtMapMem(va, G, 0, 999n, 0), C.ACL_ERROR_RT_INVALID_HANDLE],
    [
      'map over a mapping',
      (a, va, h) => {
        expectOk(a.aclrtMapMem(va, G, 0, h, 0));
        return a.aclrtMapMem(va, G, 0, mallocPhysical(a), 0);
      },
      RT_PARAM,
    ],
    [
      'map one handle at a second range (alias)',
      (a, va, h) => {
        expectOk(a.aclrtMapMem(va, G, 0, h, 0));
        return a.aclrtMapMem(va + BigInt(G), G, 0, h, 0);
      },
      0,
    ],
    [
      'map an aclrtMalloc pointer',
      (a, _va, h) => {
        const p = { value: 0n };
        expectOk(a.aclrtMalloc(p, G - 64, 0));
        return a.aclrtMapMem(p.value, G, 0, h, 0);
      },
      RT_PARAM,
    ],
  ];
  it.each(rows)('%s', (_name, call, code) => {
    const acl = ready();
    const va = reserve(acl, 2 * G);
    const h = mallocPhysical(acl);
    expect(call(acl, va, h)).toBe(code);
  });

  // Free as the driver places reservations (Note [Driver VA placement]): a freed 64 MiB range was a chunk
  // of its own, gone with it; a 32 MiB request at a 32 MiB boundary in it gets a new chunk right there.
  it('an expectPtr that is free is honoured exactly', () => {
    const acl = ready();
    const va = reserve(acl, 32 * G);
    expectOk(acl.aclrtReleaseMemAddress(va));
    const p = { value: 0n };
    expect(acl.aclrtReserveMemAddress(p, 16 * G, 0, va + 16n * BigInt(G), 0)).toBe(C.ACL_SUCCESS);
    expect(p.value).toBe(va + 16n * BigInt(G));
  });

  it('an expectPtr the driver would place elsewhere is refused (2 MiB into a freed range that was a chunk of its own)', () => {
    const acl = ready();
    const va = reserve(acl, 32 * G);
    expectOk(acl.aclrtReleaseMemAddress(va));
    const p = { value: 0n };
    expect(acl.aclrtReserveMemAddress(p, G, 0, va + BigInt(G), 0)).toBe(RT_PARAM);
    expect(p.value).toBe(0n);
    expect(acl.runtime.stats().reservations).toBe(0);
  });

  it('a 512-byte reservation (an allocator start-up probe) is one granule: a granule maps, two do not, release frees it', () => {
    const acl = ready();
    const out = { value: 0n };
    expectOk(acl.aclrtReserveMemAddress(out, 512, 0, null, 1));
    const r = acl.runtime.reservationAt(Number(out.value));
    expect(r?.size).toBe(G);
    const big = { value: 0n };
    expectOk(acl.aclrtMallocPhysical(big, 2 * G, prop(), 0));
    expect(acl.aclrtMapMem(out.value, 2 * G, 0, big.value, 0)).not.toBe(C.ACL_SUCCESS);
    const h = mallocPhysical(acl);
    expectOk(acl.aclrtMapMem(out.value, G, 0, h, 0));
    const bytes = pattern(512);
    expectOk(acl.aclrtMemcpy(out.value, 512, bytes, 512, C.ACL_MEMCPY_HOST_TO_DEVICE));
    expectOk(acl.aclrtUnmapMem(out.value));
    expectOk(acl.aclrtReleaseMemAddress(out.value));
    expect(acl.runtime.reservationAt(Number(out.value))).toBeUndefined();
  });
});

describe('unmap and release take no size', () => {
  const rows: [string, (acl: AclFlavor, va: bigint) => number, number][] = [
    ['unmap inside a mapping, not at its start', (a, va) => a.aclrtUnmapMem(va + BigInt(G)), RT_PARAM],
    ['unmap where nothing is mapped', (a, va) => a.aclrtUnmapMem(va + 2n * BigInt(G)), RT_PARAM],
    ['unmap at the mapping start', (a, va) => a.aclrtUnmapMem(va), 0],
    ['release while mapped', (a, va) => a.aclrtReleaseMemAddress(va), RT_PARAM],
    ['release inside the reservation', (a, va) => a.aclrtReleaseMemAddress(va + BigInt(G)), RT_PARAM],
    [
      'release after unmap',
      (a, va) => {
        a.aclrtUnmapMem(va);
        return a.aclrtReleaseMemAddress(va);
      },
      0,
    ],
    [
      'release twice',
      (a, va) => {
        a.aclrtUnmapMem(va);
        a.aclrtReleaseMemAddress(va);
        return a.aclrtReleaseMemAddress(va);
      },
      RT_PARAM,
    ],
    [
      'release an aclrtMalloc pointer',
      (a) => {
        const p = { value: 0n };
        expectOk(a.aclrtMalloc(p, 64, 0));
        return a.aclrtReleaseMemAddress(p.value);
      },
      RT_PARAM,
    ],
    ['aclrtFree a reserved address', (a, va) => a.aclrtFree(va), RT_PARAM],
  ];
  it.each(rows)('%s', (_name, call, code) => {
    const acl = ready();
    const va = reserve(acl, 4 * G);
    const h = mallocPhysical(acl, 2 * G);
    expectOk(acl.aclrtMapMem(va, 2 * G, 0, h, 0));
    expect(call(acl, va)).toBe(code);
  });

  it('release of a still-mapped range is refused and changes nothing', () => {
    const acl = ready();
    const { va } = mapped(acl);
    expect(acl.aclrtReleaseMemAddress(va)).toBe(RT_PARAM);
    expect(acl.runtime.stats().reservations).toBe(1);
    expect(acl.aclGetRecentErrMsg()).toMatch(
      /aclrtReleaseMemAddress failed: ACL_ERROR_RT_PARAM_INVALID \(107000\)/,
    );
    expectOk(acl.aclrtUnmapMem(va));
    expect(acl.aclrtReleaseMemAddress(va)).toBe(C.ACL_SUCCESS);
  });
});

describe('a reservation may not hold handles of two devices', () => {
  const rows: [string, number, boolean, number][] = [
    ['device 1 beside device 0 in one reservation', 1, true, RT_PARAM],
    ['device 0 beside device 0 in one reservation', 0, true, 0],
    ['device 1 in a reservation of its own', 1, false, 0],
  ];
  it.skipIf(!TWO_DEVICES).each(rows)(`%s [${SKIP.twoDevices}]`, (_name, device, same, code) => {
    const acl = ready(twoDevices());
    const va = reserve(acl, 2 * G);
    expectOk(acl.aclrtMapMem(va, G, 0, mallocPhysical(acl, G, 0), 0));
    const other = same ? va + BigInt(G) : reserve(acl, G);
    expect(acl.aclrtMapMem(other, G, 0, mallocPhysical(acl, G, device), 0)).toBe(code);
  });

  it.skipIf(!TWO_DEVICES)(
    `after the device-0 mapping goes, device 1 may use the reservation [${SKIP.twoDevices}]`,
    () => {
      const acl = ready(twoDevices());
      const va = reserve(acl, 2 * G);
      expectOk(acl.aclrtMapMem(va, G, 0, mallocPhysical(acl, G, 0), 0));
      expectOk(acl.aclrtUnmapMem(va));
      expect(acl.aclrtMapMem(va + BigInt(G), G, 0, mallocPhysical(acl, G, 1), 0)).toBe(C.ACL_SUCCESS);
    },
  );
});

describe('aclrtFreePhysical while mapped defers the free to the unmap', () => {
  // Each sequence runs twice: as the API shows it (every backend), and also checking when the
  // simulated machine frees the memory.
  type Live = (acl: AclFlavor, n: number) => void;
  const apiOnly: Live = () => {};
  const simLive: Live = (acl, n) => expect((acl.machine as Machine).liveAllocations).toBe(n);

  function deferred(live: Live) {
    const acl = ready();
    const { va, handle } = mapped(acl);
    const bytes = pattern(4096);
    expectOk(acl.aclrtMemcpy(va, 4096, bytes, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE));
    expect(acl.aclrtFreePhysical(handle)).toBe(C.ACL_SUCCESS);
    live(acl, 1);
    // The handle is gone for the API ...
    expect(acl.aclrtFreePhysical(handle)).toBe(C.ACL_ERROR_RT_INVALID_HANDLE);
    expect(acl.aclrtMapMem(reserve(acl, G), G, 0, handle, 0)).toBe(C.ACL_ERROR_RT_INVALID_HANDLE);
    // ... while the mapping still shows the memory.
    const out = new Uint8Array(4096);
    expectOk(acl.aclrtMemcpy(out, 4096, va, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST));
    expect(out).toEqual(bytes);
    expect(acl.aclrtUnmapMem(va)).toBe(C.ACL_SUCCESS);
    live(acl, 0);
    expect(acl.aclrtReleaseMemAddress(va)).toBe(C.ACL_SUCCESS);
  }

  function retained(live: Live) {
    const acl = ready();
    const { va, handle } = mapped(acl, 2 * G);
    const h = { value: 0n };
    expect(acl.aclrtMemRetainAllocationHandle(va + BigInt(G) + 100n, h)).toBe(C.ACL_SUCCESS);
    expect(h.value).toBe(handle);
    expect(acl.aclrtMemRetainAllocationHandle(va + 4n * BigInt(G), h)).toBe(RT_PARAM);
    expectOk(acl.aclrtFreePhysical(handle));
    expectOk(acl.aclrtFreePhysical(handle));
    expect(acl.aclrtFreePhysical(handle)).toBe(C.ACL_ERROR_RT_INVALID_HANDLE);
    expectOk(acl.aclrtUnmapMem(va));
    live(acl, 0);
  }

  it('keeps the bytes until the last unmap', () => deferred(apiOnly));
  it.skipIf(ON_CUDA)(`keeps memory and bytes until the last unmap [cuda: ${SKIP.internals}]`, () =>
    deferred(simLive),
  );
  it('retain from inside a mapping gives the handle; each reference needs its aclrtFreePhysical', () =>
    retained(apiOnly));
  it.skipIf(ON_CUDA)(`retain ...; memory freed at the last unmap [cuda: ${SKIP.internals}]`, () =>
    retained(simLive),
  );
});

describe('access: what aclrtMapMem, aclrtMemMapNoAccess and aclrtMemSetAccess grant', () => {
  const H2D = C.ACL_MEMCPY_HOST_TO_DEVICE;
  const D2H = C.ACL_MEMCPY_DEVICE_TO_HOST;
  // A copy the access level forbids: the simulated 910B answers ACL_ERROR_RT_NO_PERMISSION; the NVIDIA
  // driver refuses it at the call with CUDA_ERROR_INVALID_VALUE, which ACL over CUDA answers as
  // ACL_ERROR_RT_PARAM_INVALID (conformance/results/h200-driver.md, "Copies and access").
  const NO = ON_CUDA ? RT_PARAM : C.ACL_ERROR_RT_NO_PERMISSION;
  // [name, map call, grant READWRITE afterwards, copy kind, expected code, expected flag of device 0]
  const rows: [string, 'map' | 'noAccess', boolean, number, number, number][] = [
    ['aclrtMapMem: write', 'map', false, H2D, 0, 3],
    ['aclrtMapMem: read', 'map', false, D2H, 0, 3],
    ['aclrtMemMapNoAccess: write', 'noAccess', false, H2D, NO, 0],
    ['aclrtMemMapNoAccess: read', 'noAccess', false, D2H, NO, 0],
    ['aclrtMemMapNoAccess, then READWRITE: write', 'noAccess', true, H2D, 0, 3],
    ['aclrtMemMapNoAccess, then READWRITE: read', 'noAccess', true, D2H, 0, 3],
  ];
  it.each(rows)('%s', (_name, how, grant, kind, code, want) => {
    const acl = ready();
    const va = reserve(acl, G);
    const h = mallocPhysical(acl);
    expectOk(how === 'map' ? acl.aclrtMapMem(va, G, 0, h, 0) : acl.aclrtMemMapNoAccess(va, G, 0, h, 0));
    if (grant) expectOk(acl.aclrtMemSetAccess(va, G, RW(), 1));
    const flag = { value: -1 };
    expectOk(acl.aclrtMemGetAccess(va, { id: 0, type: C.ACL_MEM_LOCATION_TYPE_DEVICE }, flag));
    expect(flag.value).toBe(want);
    const host = new Uint8Array(64);
    const call =
      kind === H2D ? acl.aclrtMemcpy(va, 64, host, 64, kind) : acl.aclrtMemcpy(host, 64, va, 64, kind);
    expect(call).toBe(code);
  });

  const setRows: [string, (acl: AclFlavor, va: bigint) => number, number][] = [
    [
      'flags 2',
      (a, va) => a.aclrtMemSetAccess(va, G, [{ flags: 2, location: { id: 0, type: 1 } }], 1),
      RT_PARAM,
    ],
    ['size not the mapped size', (a, va) => a.aclrtMemSetAccess(va, 2 * G, RW(), 1), RT_PARAM],
    ['inside the mapping', (a, va) => a.aclrtMemSetAccess(va + 4096n, G, RW(), 1), RT_PARAM],
    ['device 4', (a, va) => a.aclrtMemSetAccess(va, G, RW(4), 1), C.ACL_ERROR_RT_INVALID_DEVICEID],
    [
      'host location',
      (a, va) =>
        a.aclrtMemSetAccess(
          va,
          G,
          [{ flags: 3, location: { id: 0, type: C.ACL_MEM_LOCATION_TYPE_HOST } }],
          1,
        ),
      0,
    ],
    [
      'flags NONE (only READWRITE is supported)',
      (a, va) => a.aclrtMemSetAccess(va, G, [{ flags: 0, location: { id: 0, type: 1 } }], 1),
      RT_PARAM,
    ],
    [
      'flags READ (only READWRITE is supported)',
      (a, va) => a.aclrtMemSetAccess(va, G, [{ flags: 1, location: { id: 0, type: 1 } }], 1),
      RT_PARAM,
    ],
    ['count beyond desc', (a, va) => a.aclrtMemSetAccess(va, G, RW(), 2), INVALID],
    [
      'getAccess inside the mapping',
      (a, va) => a.aclrtMemGetAccess(va + 4096n, { id: 0, type: 1 }, { value: 0 }),
      RT_PARAM,
    ],
    [
      'getAccess device 4',
      (a, va) => a.aclrtMemGetAccess(va, { id: 4, type: 1 }, { value: 0 }),
      C.ACL_ERROR_RT_INVALID_DEVICEID,
    ],
  ];
  it.each(setRows)('setAccess/getAccess: %s', (_name, call, code) => {
    const acl = ready();
    const va = reserve(acl, 2 * G);
    expectOk(acl.aclrtMapMem(va, G, 0, mallocPhysical(acl), 0));
    expect(call(acl, va)).toBe(code);
  });

  it('a re-map with aclrtMapMem grants read-write again; with aclrtMemMapNoAccess it has none', () => {
    const acl = ready();
    const { va, handle } = mapped(acl);
    const flag = { value: -1 };
    expectOk(acl.aclrtUnmapMem(va));
    expectOk(acl.aclrtMapMem(va, G, 0, handle, 0));
    expectOk(acl.aclrtMemGetAccess(va, { id: 0, type: 1 }, flag));
    expect(flag.value).toBe(C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE);
    expectOk(acl.aclrtUnmapMem(va));
    expectOk(acl.aclrtMemMapNoAccess(va, G, 0, handle, 0));
    expectOk(acl.aclrtMemGetAccess(va, { id: 0, type: 1 }, flag));
    expect(flag.value).toBe(C.ACL_RT_MEM_ACCESS_FLAGS_NONE);
  });

  it('a HOST grant is recorded for the mapping, reported by aclrtMemGetAccess, and gone after a re-map', () => {
    const acl = ready();
    const { va, handle } = mapped(acl);
    const host = { id: 0, type: C.ACL_MEM_LOCATION_TYPE_HOST };
    const flag = { value: -1 };
    expectOk(acl.aclrtMemGetAccess(va, host, flag));
    expect(flag.value).toBe(C.ACL_RT_MEM_ACCESS_FLAGS_NONE);
    expectOk(acl.aclrtMemSetAccess(va, G, [{ flags: 3, location: host }], 1));
    expectOk(acl.aclrtMemGetAccess(va, host, flag));
    expect(flag.value).toBe(C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE);
    expectOk(acl.aclrtUnmapMem(va));
    expectOk(acl.aclrtMapMem(va, G, 0, handle, 0));
    expectOk(acl.aclrtMemGetAccess(va, host, flag));
    expect(flag.value).toBe(C.ACL_RT_MEM_ACCESS_FLAGS_NONE);
  });

  it('a refused grant changes nothing: the second descriptor names no device', () => {
    const acl = ready();
    const va = reserve(acl, G);
    expectOk(acl.aclrtMemMapNoAccess(va, G, 0, mallocPhysical(acl), 0));
    expect(acl.aclrtMemSetAccess(va, G, [...RW(), ...RW(4)], 2)).toBe(C.ACL_ERROR_RT_INVALID_DEVICEID);
    const flag = { value: -1 };
    expectOk(acl.aclrtMemGetAccess(va, { id: 0, type: 1 }, flag));
    expect(flag.value).toBe(C.ACL_RT_MEM_ACCESS_FLAGS_NONE);
  });
});

describe('sharing between two processes', () => {
  // On the GPU machine only the argument rows of one process run (b is made but not used there): the
  // CUDA backend has no machine-wide shareable tokens, so nothing is exported there.
  function pair(exportFlags = C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT) {
    const machine = ON_CUDA ? undefined : createMachine({ devices: ['Ascend910B'] });
    const a = ready({ machine });
    const b = ready({ machine });
    const handle = mallocPhysical(a);
    const token = { value: 0n };
    if (!ON_CUDA)
      expectOk(a.aclrtMemExportToShareableHandle(handle, C.ACL_MEM_HANDLE_TYPE_NONE, exportFlags, token));
    return { machine, a, b, handle, token: token.value };
  }
  const tgid = (acl: AclFlavor) => {
    const p = { value: 0 };
    expectOk(acl.aclrtDeviceGetBareTgid(p));
    return p.value;
  };

  const rows: [string, (s: ReturnType<typeof pair>) => number, number][] = [
    [
      'import without being whitelisted',
      (s) => s.b.aclrtMemImportFromShareableHandle(s.token, 0, { value: 0n }),
      C.ACL_ERROR_RT_NO_PERMISSION,
    ],
    [
      'import after aclrtMemSetPidToShareableHandle',
      (s) => {
        expectOk(s.a.aclrtMemSetPidToShareableHandle(s.token, [tgid(s.b)], 1));
        return s.b.aclrtMemImportFromShareableHandle(s.token, 0, { value: 0n });
      },
      0,
    ],
    [
      'import when another pid was whitelisted',
      (s) => {
        expectOk(s.a.aclrtMemSetPidToShareableHandle(s.token, [tgid(s.b) + 1000], 1));
        return s.b.aclrtMemImportFromShareableHandle(s.token, 0, { value: 0n });
      },
      C.ACL_ERROR_RT_NO_PERMISSION,
    ],
    [
      'import in the exporting process',
      (s) => s.a.aclrtMemImportFromShareableHandle(s.token, 0, { value: 0n }),
      C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
    ],
    [
      'export the same handle twice',
      (s) => s.a.aclrtMemExportToShareableHandle(s.handle, 0, 0, { value: 0n }),
      RT_PARAM,
    ],
    [
      'export with flags 2',
      (s) => s.a.aclrtMemExportToShareableHandle(mallocPhysical(s.a), 0, 2, { value: 0n }),
      RT_PARAM,
    ],
    [
      'export an unknown handle',
      (s) => s.a.aclrtMemExportToShareableHandle(999n, 0, 0, { value: 0n }),
      C.ACL_ERROR_RT_INVALID_HANDLE,
    ],
    [
      'setPid from a process that did not export',
      (s) => s.b.aclrtMemSetPidToShareableHandle(s.token, [tgid(s.b)], 1),
      RT_PARAM,
    ],
    [
      'setPid with fewer pids than pidNum',
      (s) => s.a.aclrtMemSetPidToShareableHandle(s.token, [1], 2),
      INVALID,
    ],
    [
      'import an unknown shareable handle',
      (s) => s.b.aclrtMemImportFromShareableHandle(12345n, 0, { value: 0n }),
      RT_PARAM,
    ],
    [
      'import onto device 3',
      (s) => s.b.aclrtMemImportFromShareableHandle(s.token, 3, { value: 0n }),
      C.ACL_ERROR_RT_INVALID_DEVICEID,
    ],
    [
      're-export an imported handle',
      (s) => {
        expectOk(s.a.aclrtMemSetPidToShareableHandle(s.token, [tgid(s.b)], 1));
        const h = { value: 0n };
        expectOk(s.b.aclrtMemImportFromShareableHandle(s.token, 0, h));
        return s.b.aclrtMemExportToShareableHandle(h.value, 0, 1, { value: 0n });
      },
      RT_PARAM,
    ],
    [
      'map an imported and an allocated handle in one reservation',
      (s) => {
        expectOk(s.a.aclrtMemSetPidToShareableHandle(s.token, [tgid(s.b)], 1));
        const h = { value: 0n };
        expectOk(s.b.aclrtMemImportFromShareableHandle(s.token, 0, h));
        const va = reserve(s.b, 2 * G);
        expectOk(s.b.aclrtMapMem(va, G, 0, h.value, 0));
        return s.b.aclrtMapMem(va + BigInt(G), G, 0, mallocPhysical(s.b), 0);
      },
      RT_PARAM,
    ],
  ];
  const oneProcess = new Set([
    'export with flags 2',
    'export an unknown handle',
    'setPid with fewer pids than pidNum',
  ]);
  it.each(rows.filter((r) => oneProcess.has(r[0])))('%s', (_name, call, code) => {
    expect(call(pair())).toBe(code);
  });
  it.skipIf(ON_CUDA).each(rows.filter((r) => !oneProcess.has(r[0])))(
    `%s [cuda: ${SKIP.processes}; ${SKIP.tokens}]`,
    (_name, call, code) => {
      expect(call(pair())).toBe(code);
    },
  );

  // Over the CUDA backend a token is a kept fd in the machine-wide registry (Note [Token registry]);
  // processes of other OS pids import it (conformance/gpu/share.ts), the exporter itself never may.
  it.skipIf(!ON_CUDA)('the CUDA backend: export gives a token the exporting process may not import', () => {
    const acl = ready();
    const token = { value: 0n };
    expectOk(acl.aclrtMemExportToShareableHandle(mallocPhysical(acl), 0, 0, token));
    expect(token.value).not.toBe(0n);
    expect(acl.aclrtMemImportFromShareableHandle(token.value, 0, { value: 0n })).toBe(
      C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
    );
  });

  it.skipIf(ON_CUDA)(
    `ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION lets any other process import [cuda: ${SKIP.processes}]`,
    () => {
      const s = pair(C.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
      expect(s.b.aclrtMemImportFromShareableHandle(s.token, 0, { value: 0n })).toBe(C.ACL_SUCCESS);
      expect(s.a.aclrtMemImportFromShareableHandle(s.token, 0, { value: 0n })).toBe(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
      );
    },
  );

  it.skipIf(ON_CUDA)(
    `bytes written by one process are read by the other through its own mapping [cuda: ${SKIP.processes}]`,
    () => {
      const s = pair();
      const va = reserve(s.a, G);
      expectOk(s.a.aclrtMapMem(va, G, 0, s.handle, 0));
      expectOk(s.a.aclrtMemSetAccess(va, G, RW(), 1));
      const bytes = pattern(8192, 5);
      expectOk(s.a.aclrtMemcpy(va + 4096n, 8192, bytes, 8192, C.ACL_MEMCPY_HOST_TO_DEVICE));

      expectOk(s.a.aclrtMemSetPidToShareableHandle(s.token, [tgid(s.b)], 1));
      const h = { value: 0n };
      expectOk(s.b.aclrtMemImportFromShareableHandle(s.token, 0, h));
      const vb = reserve(s.b, G);
      expectOk(s.b.aclrtMapMem(vb, G, 0, h.value, 0));
      expectOk(s.b.aclrtMemSetAccess(vb, G, RW(), 1));
      const out = new Uint8Array(8192);
      expectOk(s.b.aclrtMemcpy(out, 8192, vb + 4096n, 8192, C.ACL_MEMCPY_DEVICE_TO_HOST));
      expect(out).toEqual(bytes);

      // And back: B writes, A reads.
      expectOk(s.b.aclrtMemset(vb, 16, 0xab, 16));
      const back = new Uint8Array(16);
      expectOk(s.a.aclrtMemcpy(back, 16, va, 16, C.ACL_MEMCPY_DEVICE_TO_HOST));
      expect([...back]).toEqual(new Array(16).fill(0xab));

      const p = { value: prop() };
      expectOk(s.b.aclrtMemGetAllocationPropertiesFromHandle(h.value, p));
      expect(p.value.location).toEqual({ id: 0, type: C.ACL_MEM_LOCATION_TYPE_DEVICE });

      // Memory lives until every process has let go.
      expectOk(s.a.aclrtUnmapMem(va));
      expectOk(s.a.aclrtFreePhysical(s.handle));
      expectOk(s.b.aclrtMemcpy(out, 16, vb, 16, C.ACL_MEMCPY_DEVICE_TO_HOST));
      expectOk(s.b.aclrtUnmapMem(vb));
      expectOk(s.b.aclrtFreePhysical(h.value));
      s.a.dispose();
      s.b.dispose();
      expect(s.machine!.liveAllocations).toBe(0);
    },
  );
});

describe('aclrtMalloc rounds to 32 bytes and adds 32 of padding', () => {
  const rows: [number, number, number][] = [
    // [requested, policy, bytes accounted on the device]
    [1, C.ACL_MEM_MALLOC_HUGE_FIRST, G],
    [G - 64, C.ACL_MEM_MALLOC_HUGE_FIRST, G],
    [G - 32, C.ACL_MEM_MALLOC_HUGE_FIRST, G],
    [G - 31, C.ACL_MEM_MALLOC_HUGE_FIRST, 2 * G],
    [G, C.ACL_MEM_MALLOC_HUGE_FIRST, 2 * G],
    [G, C.ACL_MEM_MALLOC_NORMAL_ONLY, 2 * G],
    [G, C.ACL_MEM_MALLOC_HUGE1G_ONLY, G],
    [G, 0x7777, 2 * G],
  ];
  it.skipIf(ON_CUDA).each(rows)(
    `aclrtMalloc(%i, policy %i) takes %i bytes [cuda: ${SKIP.accounting}]`,
    (size, policy, taken) => {
      const acl = ready();
      const before = { value: 0 };
      const after = { value: 0 };
      const total = { value: 0 };
      expectOk(acl.aclrtGetMemInfo(C.ACL_HBM_MEM, before, total));
      const p = { value: 0n };
      expect(acl.aclrtMalloc(p, size, policy)).toBe(C.ACL_SUCCESS);
      expectOk(acl.aclrtGetMemInfo(C.ACL_HBM_MEM, after, total));
      expect(before.value - after.value).toBe(taken);
      expect(total.value).toBe(62_423 * MiB);
      expect(p.value % 64n).toBe(0n);
      expect(acl.aclrtFree(p.value + 32n)).toBe(RT_PARAM);
      expect(acl.aclrtFree(p.value)).toBe(C.ACL_SUCCESS);
      expectOk(acl.aclrtGetMemInfo(C.ACL_HBM_MEM, after, total));
      expect(after.value).toBe(before.value);
    },
  );

  it('the padding is mapped: bytes just past the requested size are usable', () => {
    const acl = ready();
    const p = { value: 0n };
    expectOk(acl.aclrtMalloc(p, G, C.ACL_MEM_MALLOC_HUGE_FIRST));
    const tail = pattern(32, 9);
    expect(acl.aclrtMemcpy(p.value + BigInt(G), 32, tail, 32, C.ACL_MEMCPY_HOST_TO_DEVICE)).toBe(
      C.ACL_SUCCESS,
    );
    expect(aclMallocSize(G)).toBe(G + 32);
    expect(aclMallocSize(1)).toBe(64);
    expect(aclMallocSize(33)).toBe(96);
  });
});

describe('streams, memset and queries', () => {
  it('copies queued on a stream land at synchronisation', () => {
    const acl = ready();
    const { va } = mapped(acl);
    const s = { value: 0n };
    expectOk(acl.aclrtCreateStream(s));
    const bytes = pattern(1024, 3);
    expectOk(acl.aclrtMemcpyAsync(va, 1024, bytes, 1024, C.ACL_MEMCPY_HOST_TO_DEVICE, s.value));
    expectOk(acl.aclrtMemcpyAsync(va + 4096n, 1024, va, 1024, C.ACL_MEMCPY_DEVICE_TO_DEVICE, s.value));
    expect(acl.aclrtSynchronizeStream(s.value)).toBe(C.ACL_SUCCESS);
    const out = new Uint8Array(1024);
    expectOk(acl.aclrtMemcpy(out, 1024, va + 4096n, 1024, C.ACL_MEMCPY_DEFAULT));
    expect(out).toEqual(bytes);
    expect(acl.aclrtSynchronizeStream(null)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtSynchronizeDevice()).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtDestroyStream(s.value)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtDestroyStream(s.value)).toBe(RT_PARAM);
    expect(acl.aclrtSynchronizeStream(s.value)).toBe(RT_PARAM);
    expect(acl.aclrtMemcpyAsync(va, 16, bytes, 16, C.ACL_MEMCPY_HOST_TO_DEVICE, 0xdeadn)).toBe(RT_PARAM);
  });

  it('memcpy kinds must match the pointers', () => {
    const acl = ready();
    const { va } = mapped(acl);
    expect(acl.aclrtMemcpy(va, 16, va, 16, C.ACL_MEMCPY_HOST_TO_DEVICE)).toBe(RT_PARAM);
    const a = pattern(16);
    const b = new Uint8Array(16);
    expect(acl.aclrtMemcpy(b, 16, a, 16, C.ACL_MEMCPY_HOST_TO_HOST)).toBe(C.ACL_SUCCESS);
    expect(b).toEqual(a);
  });

  it('granularity and properties', () => {
    const acl = ready();
    const g = { value: 0 };
    expectOk(acl.aclrtMemGetAllocationGranularity(prop(), C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, g));
    expect(g.value).toBe(G);
    expectOk(acl.aclrtMemGetAllocationGranularity(prop(), C.ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, g));
    expect(g.value).toBe(G);
    expectOk(acl.aclrtMemGetAllocationGranularity(prop({ memAttr: C.ACL_HBM_MEM_HUGE1G }), 0, g));
    expect(g.value).toBe(1024 * MiB);
    expect(acl.aclrtMemGetAllocationGranularity(prop(), 7, g)).toBe(RT_PARAM);
    const h = { value: 0n };
    expectOk(acl.aclrtMallocPhysical(h, G, prop({ memAttr: C.ACL_HBM_MEM_NORMAL }), 0));
    const p = { value: prop() };
    expect(acl.aclrtMemGetAllocationPropertiesFromHandle(h.value, p)).toBe(C.ACL_SUCCESS);
    expect(p.value).toEqual({
      handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: C.ACL_HBM_MEM_NORMAL,
      location: { id: 0, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
      reserve: 0n,
    });
    expect(acl.aclrtMemGetAllocationPropertiesFromHandle(77n, p)).toBe(C.ACL_ERROR_RT_INVALID_HANDLE);
  });
});

describe('aclGetRecentErrMsg', () => {
  it('describes the last failure of this process, once', () => {
    const machine = ON_CUDA ? undefined : createMachine({ devices: ['Ascend910B'] });
    const a = ready({ machine });
    const b = ready({ machine });
    expect(a.aclGetRecentErrMsg()).toBeNull();
    expect(a.aclrtMapMem(reserve(a, G), G, G, mallocPhysical(a), 0)).toBe(RT_PARAM);
    expect(a.aclrtSetDevice(0)).toBe(C.ACL_SUCCESS);
    const msg = a.aclGetRecentErrMsg();
    expect(msg).toMatch(/^aclrtMapMem failed: ACL_ERROR_RT_PARAM_INVALID \(107000\): offset/);
    expect(a.aclGetRecentErrMsg()).toBeNull();
    expect(b.aclGetRecentErrMsg()).toBeNull();
  });
});

describe('error table', () => {
  it.each([...ERROR_KINDS])('%s has an aclError', (kind) => {
    expect(Number.isInteger(ACL_ERROR_TABLE[kind])).toBe(true);
    expect(ACL_ERROR_TABLE[kind]).not.toBe(C.ACL_SUCCESS);
    expect(C.ACL_ERROR_NAMES.has(ACL_ERROR_TABLE[kind])).toBe(true);
  });

  it('keeps the documented numbers', () => {
    expect([
      C.ACL_SUCCESS,
      C.ACL_ERROR_INVALID_PARAM,
      C.ACL_ERROR_RT_PARAM_INVALID,
      C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
      C.ACL_ERROR_RT_MEMORY_ALLOCATION,
      C.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
    ]).toEqual([0, 100000, 107000, 207000, 207001, 1]);
  });
});

describe('calls of ported programs', () => {
  it('aclrtGetDevice: the device aclrtSetDevice made current, ACL_ERROR_RT_CONTEXT_NULL before one is set', () => {
    const fresh = makeAcl();
    expectOk(fresh.aclInit(null));
    expect(fresh.aclrtGetDevice({ value: -1 })).toBe(C.ACL_ERROR_RT_CONTEXT_NULL);
    const acl = ready();
    const d = { value: -1 };
    expectOk(acl.aclrtGetDevice(d));
    expect(d.value).toBe(0);
    expect(acl.aclrtGetDevice(null as never)).toBe(INVALID);
  });

  it('aclrtMemsetAsync sets bytes when its stream is synchronised; count past maxCount and NULL are refused', () => {
    const acl = ready();
    const { va } = mapped(acl);
    const s = { value: 0n };
    expectOk(acl.aclrtCreateStream(s));
    expectOk(acl.aclrtMemsetAsync(va, 64, 0x3c, 64, s.value));
    expectOk(acl.aclrtSynchronizeStream(s.value));
    const back = new Uint8Array(65);
    expectOk(acl.aclrtMemcpy(back, 65, va, 65, C.ACL_MEMCPY_DEVICE_TO_HOST));
    expect(back.subarray(0, 64).every((b) => b === 0x3c)).toBe(true);
    expect(back[64]).toBe(0);
    expect(acl.aclrtMemsetAsync(va, 16, 1, 32, s.value)).toBe(INVALID);
    expect(acl.aclrtMemsetAsync(null, 16, 1, 16, s.value)).toBe(INVALID);
    expectOk(acl.aclrtDestroyStream(s.value));
  });

  it('aclrtMallocHost buffers are copy sources and targets, freed once', () => {
    const acl = ready();
    const { va } = mapped(acl);
    const host = { value: null as Uint8Array | null };
    expectOk(acl.aclrtMallocHost(host, 4096));
    host.value!.set(pattern(4096, 9));
    expectOk(acl.aclrtMemcpy(va, 4096, host.value!, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE));
    const back = new Uint8Array(4096);
    expectOk(acl.aclrtMemcpy(back, 4096, va, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST));
    expect(back).toEqual(pattern(4096, 9));
    expectOk(acl.aclrtFreeHost(host.value!));
    expect(acl.aclrtFreeHost(host.value!)).toBe(RT_PARAM);
    expect(acl.aclrtMallocHost({ value: null }, 0)).toBe(INVALID);
  });
});

// Events on every backend (Note [Events] in src/backend/backend.ts): rows that hold on the GPU as on
// the simulator, so nothing here asserts "not ready" after a record (the GPU may already be done).
describe('events', () => {
  it('cross-stream free: set on A, record, B waits and reads the bytes, the status says complete, then free', () => {
    const acl = ready();
    const p = { value: 0n };
    expectOk(acl.aclrtMalloc(p, G, C.ACL_MEM_MALLOC_HUGE_FIRST));
    const a = { value: 0n };
    const b = { value: 0n };
    expectOk(acl.aclrtCreateStream(a));
    expectOk(acl.aclrtCreateStream(b));
    const e = { value: 0n };
    expectOk(acl.aclrtCreateEvent(e));
    const status = { value: -1 };
    expectOk(acl.aclrtQueryEventStatus(e.value, status));
    expect(status.value).toBe(C.ACL_EVENT_RECORDED_STATUS_NOT_READY);
    expectOk(acl.aclrtMemsetAsync(p.value, G, 9, 4096, a.value));
    expectOk(acl.aclrtRecordEvent(e.value, a.value));
    expectOk(acl.aclrtStreamWaitEvent(b.value, e.value));
    const back = new Uint8Array(4096);
    expectOk(acl.aclrtMemcpyAsync(back, 4096, p.value, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST, b.value));
    expectOk(acl.aclrtSynchronizeStream(b.value));
    expect(back.every((x) => x === 9)).toBe(true);
    expectOk(acl.aclrtQueryEventStatus(e.value, status));
    expect(status.value).toBe(C.ACL_EVENT_RECORDED_STATUS_COMPLETE);
    expectOk(acl.aclrtFree(p.value));
    expectOk(acl.aclrtDestroyEvent(e.value));
    expect(acl.aclrtDestroyEvent(e.value)).toBe(RT_PARAM);
    expect(acl.aclrtDestroyEvent(null)).toBe(INVALID);
    for (const s of [a, b]) expectOk(acl.aclrtDestroyStream(s.value));
  });

  it('aclrtSynchronizeEvent waits for the recorded work; aclrtResetDevice releases the events', () => {
    const acl = ready();
    const p = { value: 0n };
    expectOk(acl.aclrtMalloc(p, G, C.ACL_MEM_MALLOC_HUGE_FIRST));
    const s = { value: 0n };
    expectOk(acl.aclrtCreateStream(s));
    const e = { value: 0n };
    expectOk(acl.aclrtCreateEvent(e));
    expectOk(acl.aclrtMemsetAsync(p.value, G, 3, G, s.value));
    expectOk(acl.aclrtRecordEvent(e.value, s.value));
    expectOk(acl.aclrtSynchronizeEvent(e.value));
    const status = { value: -1 };
    expectOk(acl.aclrtQueryEventStatus(e.value, status));
    expect(status.value).toBe(C.ACL_EVENT_RECORDED_STATUS_COMPLETE);
    const back = new Uint8Array(16);
    expectOk(acl.aclrtMemcpy(back, 16, p.value + BigInt(G - 16), 16, C.ACL_MEMCPY_DEVICE_TO_HOST));
    expect(back.every((x) => x === 3)).toBe(true);
    expectOk(acl.aclrtResetDevice(0));
    expectOk(acl.aclrtSetDevice(0));
    expect(acl.aclrtQueryEventStatus(e.value, status)).toBe(RT_PARAM);
    expectOk(acl.aclrtMalloc(p, G, C.ACL_MEM_MALLOC_HUGE_FIRST));
    expectOk(acl.aclrtFree(p.value));
  });
});
