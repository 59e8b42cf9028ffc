import type { Tracer } from '../../core/trace.js';
import { createAcl } from '../../entry/processes.js';
import * as C from '../../flavors/acl/constants.js';

/**
 * Seed 2's seven steps, exactly as CANN's reference lists them, on a
 * simulated Ascend 910B: reserve, allocate, map, a real task (write a
 * pattern through the mapping and check every byte), unmap, free, release.
 * There is no access step: aclrtMapMem grants the memory's own device
 * read-write (Note [ACL map grants access]). One line per call; the caller
 * prints `tracer`'s tree afterwards. True when every call succeeded and
 * every byte matched.
 */
export function aclDemo(print: (line: string) => void, tracer: Tracer): boolean {
  const acl = createAcl({ tracer });
  let ok = true;
  const step = (label: string, code: number): boolean => {
    print(`${label} -> ${C.ACL_ERROR_NAMES.get(code) ?? 'aclError'} (${code})`);
    if (code !== C.ACL_SUCCESS) print(`  ${acl.aclGetRecentErrMsg() ?? ''}`);
    if (code !== C.ACL_SUCCESS) ok = false;
    return code === C.ACL_SUCCESS;
  };
  try {
    step('aclInit(NULL)', acl.aclInit(null));
    step('aclrtSetDevice(0)', acl.aclrtSetDevice(0));
    const prop = {
      handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: C.ACL_HBM_MEM_HUGE,
      location: { id: 0, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
      reserve: 0,
    };
    const granularity = { value: 0 };
    step(
      'aclrtMemGetAllocationGranularity(MINIMUM)',
      acl.aclrtMemGetAllocationGranularity(prop, C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, granularity),
    );
    const size = granularity.value;
    print(`  granularity = ${size} bytes`);

    // 1. Reserve virtual addresses.
    const virPtr = { value: 0n };
    step(`1. aclrtReserveMemAddress(size ${size})`, acl.aclrtReserveMemAddress(virPtr, size, 0, null, 0));
    print(`  virPtr = 0x${virPtr.value.toString(16)}`);
    // 2. Allocate physical memory.
    const handle = { value: 0n };
    step(`2. aclrtMallocPhysical(size ${size})`, acl.aclrtMallocPhysical(handle, size, prop, 0));
    // 3. Map: the device may use the memory from here on.
    step(
      '3. aclrtMapMem(virPtr, size, 0, handle, 0)',
      acl.aclrtMapMem(virPtr.value, size, 0, handle.value, 0),
    );
    // 4. The task: write a pattern host -> device, read it back, check every byte.
    const n = 64 * 1024;
    const pattern = new Uint8Array(n);
    for (let i = 0; i < n; i++) pattern[i] = (i * 7 + 3) & 0xff;
    step(
      `4. aclrtMemcpy(virPtr, ${n} bytes, HOST_TO_DEVICE)`,
      acl.aclrtMemcpy(virPtr.value, size, pattern, n, C.ACL_MEMCPY_HOST_TO_DEVICE),
    );
    const back = new Uint8Array(n);
    step(
      `   aclrtMemcpy(host, ${n} bytes, DEVICE_TO_HOST)`,
      acl.aclrtMemcpy(back, n, virPtr.value, n, C.ACL_MEMCPY_DEVICE_TO_HOST),
    );
    let bad = 0;
    for (let i = 0; i < n; i++) if (back[i] !== pattern[i]) bad++;
    print(bad === 0 ? `   checked ${n} bytes: all match` : `   checked ${n} bytes: ${bad} differ`);
    // 5-7. Undo in reverse.
    step('5. aclrtUnmapMem(virPtr)', acl.aclrtUnmapMem(virPtr.value));
    step('6. aclrtFreePhysical(handle)', acl.aclrtFreePhysical(handle.value));
    step('7. aclrtReleaseMemAddress(virPtr)', acl.aclrtReleaseMemAddress(virPtr.value));
    step('aclrtResetDevice(0)', acl.aclrtResetDevice(0));
    step('aclFinalize()', acl.aclFinalize());
    return ok && bad === 0;
  } finally {
    acl.dispose();
  }
}
