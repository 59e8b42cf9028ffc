import { describe, expect, it } from 'vitest';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { createAcl } from '../../../src/entry/processes.js';
import type { AclFlavor } from '../../../src/flavors/acl/acl.js';
import * as C from '../../../src/flavors/acl/constants.js';
import { G, pattern, prop } from './helpers.js';

/** The calls NPU allocators and framework adapters use beyond the VMM entries (Note [ACL calls of ported programs]). */

const OK = C.ACL_SUCCESS;
const INVALID = C.ACL_ERROR_INVALID_PARAM;
const RT_PARAM = C.ACL_ERROR_RT_PARAM_INVALID;
const NOT_SUPPORTED = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT;

function started(
  devices = 1,
  machine = createMachine({ devices: Array(devices).fill('Ascend910B') }),
): AclFlavor {
  const acl = createAcl({ machine });
  expect(acl.aclInit(null)).toBe(OK);
  expect(acl.aclrtSetDevice(0)).toBe(OK);
  return acl;
}

describe('aclrtMallocHost / aclrtFreeHost', () => {
  it('a pinned buffer carries bytes to the device and back; it is freed once', () => {
    const acl = started();
    const host = { value: null as Uint8Array | null };
    expect(acl.aclrtMallocHost(host, 4096)).toBe(OK);
    const buf = host.value as Uint8Array;
    expect(buf.length).toBe(4096);
    buf.set(pattern(4096, 3));
    const dev = { value: 0n };
    expect(acl.aclrtMalloc(dev, 4096, 0)).toBe(OK);
    expect(acl.aclrtMemcpy(dev.value, 4096, buf, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE)).toBe(OK);
    const back = new Uint8Array(4096);
    expect(acl.aclrtMemcpy(back, 4096, dev.value, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(OK);
    expect(back).toEqual(pattern(4096, 3));
    expect(acl.aclrtFreeHost(buf)).toBe(OK);
    expect(acl.aclrtFreeHost(buf)).toBe(RT_PARAM);
    expect(acl.aclrtFreeHost(new Uint8Array(8))).toBe(RT_PARAM);
    expect(acl.aclrtFreeHost(null)).toBe(INVALID);
    expect(acl.aclrtMallocHost(host, 0)).toBe(INVALID);
    expect(acl.aclrtMallocHost(null as never, 64)).toBe(INVALID);
    acl.dispose();
  });
});

describe('forced teardown', () => {
  it('aclrtDestroyStreamForce drops the queued copy and set: their bytes are never written', () => {
    const acl = started();
    const s = { value: 0n };
    const dev = { value: 0n };
    expect(acl.aclrtCreateStream(s)).toBe(OK);
    expect(acl.aclrtMalloc(dev, 8192, 0)).toBe(OK);
    expect(acl.aclrtMemset(dev.value, 8192, 1, 8192)).toBe(OK);
    const src = pattern(4096, 7);
    expect(acl.aclrtMemcpyAsync(dev.value, 4096, src, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE, s.value)).toBe(OK);
    expect(acl.aclrtMemsetAsync(dev.value + 4096n, 4096, 9, 4096, s.value)).toBe(OK);
    expect(acl.runtime.stats().streams).toBe(1);
    expect(acl.aclrtDestroyStreamForce(s.value)).toBe(OK);
    expect(acl.runtime.stats().streams).toBe(0);
    expect(acl.aclrtDestroyStreamForce(s.value)).toBe(RT_PARAM);
    expect(acl.aclrtDestroyStreamForce(null)).toBe(INVALID);
    // Nothing runs them later either: not a device synchronisation, not a synchronous copy.
    expect(acl.aclrtSynchronizeDevice()).toBe(OK);
    const back = new Uint8Array(8192);
    expect(acl.aclrtMemcpy(back, 8192, dev.value, 8192, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(OK);
    expect(back).toEqual(new Uint8Array(8192).fill(1));
    acl.dispose();
  });

  it('an event recorded behind the dropped work counts as complete, and a stream waiting on it runs on', () => {
    const acl = started();
    const a = { value: 0n };
    const b = { value: 0n };
    const ev = { value: 0n };
    const dev = { value: 0n };
    expect(acl.aclrtCreateStream(a)).toBe(OK);
    expect(acl.aclrtCreateStream(b)).toBe(OK);
    expect(acl.aclrtCreateEvent(ev)).toBe(OK);
    expect(acl.aclrtMalloc(dev, 4096, 0)).toBe(OK);
    expect(acl.aclrtMemsetAsync(dev.value, 4096, 3, 4096, a.value)).toBe(OK);
    expect(acl.aclrtRecordEvent(ev.value, a.value)).toBe(OK);
    expect(acl.aclrtStreamWaitEvent(b.value, ev.value)).toBe(OK);
    expect(acl.aclrtMemsetAsync(dev.value + 2048n, 2048, 4, 2048, b.value)).toBe(OK);
    const status = { value: -1 };
    expect(acl.aclrtQueryEventStatus(ev.value, status)).toBe(OK);
    expect(status.value).toBe(C.ACL_EVENT_RECORDED_STATUS_NOT_READY);
    expect(acl.aclrtDestroyStreamForce(a.value)).toBe(OK);
    expect(acl.aclrtQueryEventStatus(ev.value, status)).toBe(OK);
    expect(status.value).toBe(C.ACL_EVENT_RECORDED_STATUS_COMPLETE);
    expect(acl.aclrtSynchronizeStream(b.value)).toBe(OK);
    const back = new Uint8Array(4096);
    expect(acl.aclrtMemcpy(back, 4096, dev.value, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(OK);
    expect(back.subarray(0, 2048)).toEqual(new Uint8Array(2048));
    expect(back.subarray(2048)).toEqual(new Uint8Array(2048).fill(4));
    acl.dispose();
  });

  it('aclrtDestroyStream, unforced, runs the queued work first', () => {
    const acl = started();
    const s = { value: 0n };
    const dev = { value: 0n };
    expect(acl.aclrtCreateStream(s)).toBe(OK);
    expect(acl.aclrtMalloc(dev, 4096, 0)).toBe(OK);
    expect(
      acl.aclrtMemcpyAsync(dev.value, 4096, pattern(4096, 7), 4096, C.ACL_MEMCPY_HOST_TO_DEVICE, s.value),
    ).toBe(OK);
    expect(acl.aclrtDestroyStream(s.value)).toBe(OK);
    const back = new Uint8Array(4096);
    expect(acl.aclrtMemcpy(back, 4096, dev.value, 4096, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(OK);
    expect(back).toEqual(pattern(4096, 7));
    acl.dispose();
  });

  it('a forced destroy leaves the other streams and their work alone', () => {
    const acl = started();
    const a = { value: 0n };
    const b = { value: 0n };
    const dev = { value: 0n };
    expect(acl.aclrtCreateStream(a)).toBe(OK);
    expect(acl.aclrtCreateStream(b)).toBe(OK);
    expect(acl.aclrtMalloc(dev, 8192, 0)).toBe(OK);
    expect(acl.aclrtMemsetAsync(dev.value, 4096, 3, 4096, a.value)).toBe(OK);
    expect(acl.aclrtMemsetAsync(dev.value + 4096n, 4096, 4, 4096, b.value)).toBe(OK);
    expect(acl.aclrtDestroyStreamForce(a.value)).toBe(OK);
    expect(acl.aclrtSynchronizeStream(b.value)).toBe(OK);
    const back = new Uint8Array(8192);
    expect(acl.aclrtMemcpy(back, 8192, dev.value, 8192, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(OK);
    expect(back.subarray(0, 4096)).toEqual(new Uint8Array(4096));
    expect(back.subarray(4096)).toEqual(new Uint8Array(4096).fill(4));
    acl.dispose();
  });

  it('aclrtResetDeviceForce resets at once, however many aclrtSetDevice calls are outstanding', () => {
    const acl = started();
    expect(acl.aclrtSetDevice(0)).toBe(OK);
    expect(acl.aclrtSetDevice(0)).toBe(OK);
    expect(acl.aclrtCreateStream({ value: 0n })).toBe(OK);
    expect(acl.aclrtResetDeviceForce(0)).toBe(OK);
    expect(acl.runtime.stats().streams).toBe(0);
    expect(acl.aclrtGetDevice({ value: -1 })).toBe(C.ACL_ERROR_RT_CONTEXT_NULL);
    // The count is 0 now: a further reset of either kind is refused (Note [Resetting a reset device]).
    expect(acl.aclrtResetDeviceForce(0)).toBe(C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
    expect(acl.aclrtResetDevice(0)).toBe(C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
    expect(acl.aclrtResetDeviceForce(5)).toBe(C.ACL_ERROR_RT_INVALID_DEVICEID);
    // Set again, it resets again.
    expect(acl.aclrtSetDevice(0)).toBe(OK);
    expect(acl.aclrtResetDevice(0)).toBe(OK);
    acl.dispose();
  });
});

describe('contexts', () => {
  it('create makes current; set switches device; destroying the current one leaves none', () => {
    const acl = started(2);
    const ctx0 = { value: 0n };
    expect(acl.aclrtGetCurrentContext(ctx0)).toBe(OK);
    expect(ctx0.value).not.toBe(0n);
    const ctx1 = { value: 0n };
    expect(acl.aclrtCreateContext(ctx1, 1)).toBe(OK);
    const device = { value: -1 };
    expect(acl.aclrtGetDevice(device)).toBe(OK);
    expect(device.value).toBe(1);
    const current = { value: 0n };
    expect(acl.aclrtGetCurrentContext(current)).toBe(OK);
    expect(current.value).toBe(ctx1.value);
    expect(acl.aclrtSetCurrentContext(ctx0.value)).toBe(OK);
    expect(acl.aclrtGetDevice(device)).toBe(OK);
    expect(device.value).toBe(0);
    // The default context is not aclrtCreateContext's to destroy.
    expect(acl.aclrtDestroyContext(ctx0.value)).toBe(RT_PARAM);
    expect(acl.aclrtSetCurrentContext(ctx1.value)).toBe(OK);
    expect(acl.aclrtDestroyContext(ctx1.value)).toBe(OK);
    expect(acl.aclrtGetCurrentContext(current)).toBe(C.ACL_ERROR_RT_CONTEXT_NULL);
    expect(acl.aclrtSetCurrentContext(ctx1.value)).toBe(RT_PARAM);
    expect(acl.aclrtSetCurrentContext(0n)).toBe(INVALID);
    expect(acl.aclrtCreateContext({ value: 0n }, 7)).toBe(C.ACL_ERROR_RT_INVALID_DEVICEID);
    acl.dispose();
  });
});

describe('peer access', () => {
  it('two devices can exchange data; enabling needs another device and flags 0; disable undoes it', () => {
    const acl = started(2);
    const can = { value: -1 };
    expect(acl.aclrtDeviceCanAccessPeer(can, 0, 1)).toBe(OK);
    expect(can.value).toBe(1);
    expect(acl.aclrtDeviceCanAccessPeer(can, 0, 0)).toBe(OK);
    expect(can.value).toBe(0);
    expect(acl.aclrtDeviceCanAccessPeer(can, 0, 2)).toBe(C.ACL_ERROR_RT_INVALID_DEVICEID);
    expect(acl.aclrtDeviceEnablePeerAccess(0, 0)).toBe(RT_PARAM);
    expect(acl.aclrtDeviceEnablePeerAccess(1, 1)).toBe(INVALID);
    expect(acl.aclrtDeviceEnablePeerAccess(2, 0)).toBe(C.ACL_ERROR_RT_INVALID_DEVICEID);
    expect(acl.aclrtDeviceDisablePeerAccess(1)).toBe(RT_PARAM);
    expect(acl.aclrtDeviceEnablePeerAccess(1, 0)).toBe(OK);
    expect(acl.aclrtDeviceDisablePeerAccess(1)).toBe(OK);
    expect(acl.aclrtDeviceDisablePeerAccess(1)).toBe(RT_PARAM);
    // A reset of the current device ends what it enabled.
    expect(acl.aclrtDeviceEnablePeerAccess(1, 0)).toBe(OK);
    expect(acl.aclrtResetDevice(0)).toBe(OK);
    expect(acl.aclrtSetDevice(0)).toBe(OK);
    expect(acl.aclrtDeviceDisablePeerAccess(1)).toBe(RT_PARAM);
    acl.dispose();
  });
});

describe('V2 shareable handles', () => {
  it('DEFAULT shares memory between two processes as the first versions do; the importer reads the bytes', () => {
    const machine = createMachine({ devices: ['Ascend910B'] });
    const a = started(1, machine);
    const b = started(1, machine);
    const h = { value: 0n };
    expect(a.aclrtMallocPhysical(h, G, prop(), 0)).toBe(OK);
    const va = { value: 0n };
    expect(a.aclrtReserveMemAddress(va, G, 0, null, 0)).toBe(OK);
    expect(a.aclrtMapMem(va.value, G, 0, h.value, 0)).toBe(OK);
    expect(a.aclrtMemcpy(va.value, G, pattern(256, 5), 256, C.ACL_MEMCPY_HOST_TO_DEVICE)).toBe(OK);
    const token = { value: 0n };
    const DEFAULT = C.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT;
    expect(a.aclrtMemExportToShareableHandleV2(h.value, 0, DEFAULT, token)).toBe(OK);
    const pid = { value: 0 };
    expect(b.aclrtDeviceGetBareTgid(pid)).toBe(OK);
    const imported = { value: 0n };
    // Not whitelisted yet.
    expect(b.aclrtMemImportFromShareableHandleV2(token, DEFAULT, 0, imported)).toBe(
      C.ACL_ERROR_RT_NO_PERMISSION,
    );
    expect(a.aclrtMemSetPidToShareableHandleV2(token, DEFAULT, [pid.value], 1)).toBe(OK);
    expect(b.aclrtMemImportFromShareableHandleV2(token, DEFAULT, 1, imported)).toBe(INVALID);
    expect(b.aclrtMemImportFromShareableHandleV2(token, DEFAULT, 0, imported)).toBe(OK);
    const vb = { value: 0n };
    expect(b.aclrtReserveMemAddress(vb, G, 0, null, 0)).toBe(OK);
    expect(b.aclrtMapMem(vb.value, G, 0, imported.value, 0)).toBe(OK);
    const back = new Uint8Array(256);
    expect(b.aclrtMemcpy(back, 256, vb.value, 256, C.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(OK);
    expect(back).toEqual(pattern(256, 5));
    // Exported once only, as the first version.
    expect(a.aclrtMemExportToShareableHandleV2(h.value, 0, DEFAULT, { value: 0n })).toBe(RT_PARAM);
    a.dispose();
    b.dispose();
  });

  it('FABRIC answers not-supported, an unknown share type invalid-param, and nothing is exported', () => {
    const acl = started();
    const h = { value: 0n };
    expect(acl.aclrtMallocPhysical(h, G, prop(), 0)).toBe(OK);
    const token = { value: 0n };
    const FABRIC = C.ACL_MEM_SHARE_HANDLE_TYPE_FABRIC;
    expect(acl.aclrtMemExportToShareableHandleV2(h.value, 0, FABRIC, token)).toBe(NOT_SUPPORTED);
    expect(acl.aclrtMemExportToShareableHandleV2(h.value, 0, 7, token)).toBe(INVALID);
    expect(acl.aclrtMemSetPidToShareableHandleV2(token, FABRIC, [1], 1)).toBe(NOT_SUPPORTED);
    expect(acl.aclrtMemImportFromShareableHandleV2(token, FABRIC, 0, { value: 0n })).toBe(NOT_SUPPORTED);
    expect(acl.runtime.allocation(Number(h.value))?.exports).toBe(0);
    // DEFAULT still works afterwards.
    expect(
      acl.aclrtMemExportToShareableHandleV2(h.value, 0, C.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, token),
    ).toBe(OK);
    acl.dispose();
  });
});
