import { describe, expect, it } from 'vitest';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { createAcl } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/acl/constants.js';
import { snapshot } from '../../core/helpers.js';

/**
 * Seed 2 (CANN's reference for the VMM calls) gives one flow, the same in
 * every entry: 1. aclrtReserveMemAddress, 2. aclrtMallocPhysical,
 * 3. aclrtMapMem, 4. run tasks on the memory, 5. aclrtUnmapMem,
 * 6. aclrtFreePhysical, 7. aclrtReleaseMemAddress. Here it is as written,
 * with no call in between: a user following the reference must succeed.
 */
describe("seed 2's seven steps, exactly as written", () => {
  const prop = (device = 0) => ({
    handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
    allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
    memAttr: C.ACL_HBM_MEM_HUGE,
    location: { id: device, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
    reserve: 0,
  });

  it.each([
    ['one 2 MiB granule, device 0', 1, 0],
    ['three granules, device 1', 3, 1],
  ])('%s: every step succeeds, the task sees its own bytes, nothing is left', (_name, granules, device) => {
    const machine = createMachine({ devices: ['Ascend910B', 'Ascend910B'] });
    const acl = createAcl({ machine });
    expect(acl.aclInit(null)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtSetDevice(device)).toBe(C.ACL_SUCCESS);
    const granularity = { value: 0 };
    expect(
      acl.aclrtMemGetAllocationGranularity(prop(device), C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, granularity),
    ).toBe(C.ACL_SUCCESS);
    const size = granules * granularity.value;
    const before = snapshot(acl.runtime, machine);

    // 1. Reserve virtual addresses.
    const virPtr = { value: 0n };
    expect(acl.aclrtReserveMemAddress(virPtr, size, 0, null, 0)).toBe(C.ACL_SUCCESS);
    // 2. Allocate physical memory.
    const handle = { value: 0n };
    expect(acl.aclrtMallocPhysical(handle, size, prop(device), 0)).toBe(C.ACL_SUCCESS);
    // 3. Map.
    expect(acl.aclrtMapMem(virPtr.value, size, 0, handle.value, 0)).toBe(C.ACL_SUCCESS);
    // 4. Tasks: fill, write, copy within the range, read back; the last byte of the range too.
    expect(acl.aclrtMemset(virPtr.value, size, 0x5a, size)).toBe(C.ACL_SUCCESS);
    const n = 4096;
    const src = new Uint8Array(n);
    for (let i = 0; i < n; i++) src[i] = (i * 13 + device) & 0xff;
    expect(acl.aclrtMemcpy(virPtr.value, size, src, n, C.ACL_MEMCPY_HOST_TO_DEVICE)).toBe(C.ACL_SUCCESS);
    const far = virPtr.value + BigInt(size - n);
    expect(acl.aclrtMemcpy(far, n, virPtr.value, n, C.ACL_MEMCPY_DEVICE_TO_DEVICE)).toBe(C.ACL_SUCCESS);
    const back = new Uint8Array(n);
    expect(acl.aclrtMemcpy(back, n, far, n, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(C.ACL_SUCCESS);
    expect(back).toEqual(src);
    const middle = new Uint8Array(1);
    expect(acl.aclrtMemcpy(middle, 1, virPtr.value + BigInt(n), 1, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(
      C.ACL_SUCCESS,
    );
    expect(middle[0]).toBe(0x5a);
    expect(acl.aclrtSynchronizeDevice()).toBe(C.ACL_SUCCESS);
    // 5. Unmap. 6. Free the physical memory. 7. Release the addresses.
    expect(acl.aclrtUnmapMem(virPtr.value)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtFreePhysical(handle.value)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtReleaseMemAddress(virPtr.value)).toBe(C.ACL_SUCCESS);

    expect(snapshot(acl.runtime, machine)).toEqual(before);
    expect(acl.aclGetRecentErrMsg()).toBeNull();
    acl.dispose();
  });

  it('the same seven steps with aclrtMemMapNoAccess at step 3 fail at step 4, as its reference says', () => {
    const acl = createAcl();
    acl.aclInit(null);
    acl.aclrtSetDevice(0);
    const g = 2 * 1024 * 1024;
    const virPtr = { value: 0n };
    const handle = { value: 0n };
    expect(acl.aclrtReserveMemAddress(virPtr, g, 0, null, 0)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtMallocPhysical(handle, g, prop(), 0)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtMemMapNoAccess(virPtr.value, g, 0, handle.value, 0)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtMemset(virPtr.value, g, 1, 16)).toBe(C.ACL_ERROR_RT_NO_PERMISSION);
    expect(acl.aclrtUnmapMem(virPtr.value)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtFreePhysical(handle.value)).toBe(C.ACL_SUCCESS);
    expect(acl.aclrtReleaseMemAddress(virPtr.value)).toBe(C.ACL_SUCCESS);
    acl.dispose();
  });
});
