import { describe, expect, it } from 'vitest';
import { createMachine, type Machine } from '../../../src/backends/sim/machine.js';
import { formatTrace, Tracer } from '../../../src/core/trace.js';
import { createAcl } from '../../../src/entry/processes.js';
import type { AclFlavor } from '../../../src/flavors/acl/acl.js';
import * as C from '../../../src/flavors/acl/constants.js';
import { FaultyBackend } from '../../support/faulty-backend.js';
import { G, pattern } from './helpers.js';

/**
 * aclrtIpcMem*: aclrtMalloc memory shared between simulated processes of one
 * machine by a string key (Note [ACL IPC keys] in src/flavors/acl/sharing.ts, Note [One-step
 * sharing] in runtime.ts).
 */

const OK = C.ACL_SUCCESS;
const INVALID = C.ACL_ERROR_INVALID_PARAM;
const RT_PARAM = C.ACL_ERROR_RT_PARAM_INVALID;
const NO_PERMISSION = C.ACL_ERROR_RT_NO_PERMISSION;
const DEFAULT = C.ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT;
const NO_VALIDATION = C.ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION;
const H2D = C.ACL_MEMCPY_HOST_TO_DEVICE;
const D2H = C.ACL_MEMCPY_DEVICE_TO_HOST;

function machine(devices = 1): Machine {
  return createMachine({ devices: Array(devices).fill('Ascend910B') });
}

function started(m: Machine, device = 0): AclFlavor {
  const acl = createAcl({ machine: m });
  expect(acl.aclInit(null)).toBe(OK);
  expect(acl.aclrtSetDevice(device)).toBe(OK);
  return acl;
}

function tgid(acl: AclFlavor): number {
  const pid = { value: 0 };
  expect(acl.aclrtDeviceGetBareTgid(pid)).toBe(OK);
  return pid.value;
}

function malloc(acl: AclFlavor, size: number): bigint {
  const p = { value: 0n };
  expect(acl.aclrtMalloc(p, size, C.ACL_MEM_MALLOC_HUGE_FIRST)).toBe(OK);
  return p.value;
}

function exportKey(acl: AclFlavor, ptr: bigint, size: number, flags: number = DEFAULT): string {
  const key = { value: '' };
  expect(acl.aclrtIpcMemGetExportKey(ptr, size, key, C.ACL_IPC_KEY_LEN, flags)).toBe(OK);
  return key.value;
}

function importKey(acl: AclFlavor, key: string): bigint {
  const p = { value: 0n };
  expect(acl.aclrtIpcMemImportByKey(p, key, C.ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT)).toBe(OK);
  return p.value;
}

function read(acl: AclFlavor, ptr: bigint, n: number): Uint8Array {
  const out = new Uint8Array(n);
  expect(acl.aclrtMemcpy(out, n, ptr, n, D2H)).toBe(OK);
  return out;
}

function freeHbm(acl: AclFlavor): number {
  const free = { value: 0 };
  const total = { value: 0 };
  expect(acl.aclrtGetMemInfo(C.ACL_HBM_MEM, free, total)).toBe(OK);
  return free.value;
}

describe('IPC by key between two processes', () => {
  it("CANN's flow: bytes written in one process are read in the other, both ways; closing and freeing give all memory back", () => {
    const m = machine();
    const a = started(m);
    const b = started(m);
    const baseline = freeHbm(a);
    const ptr = malloc(a, 4096);
    expect(a.aclrtMemcpy(ptr, 4096, pattern(4096, 3), 4096, H2D)).toBe(OK);
    const key = exportKey(a, ptr, 4096);
    expect(key.length).toBeLessThan(C.ACL_IPC_KEY_LEN);
    expect(a.aclrtIpcMemSetImportPid(key, [tgid(b)], 1)).toBe(OK);
    const inB = importKey(b, key);
    expect(read(b, inB, 4096)).toEqual(pattern(4096, 3));
    // The importer may write at once (its current device has read-write), and the exporter sees it.
    expect(b.aclrtMemcpy(inB + 1024n, 1024, pattern(1024, 9), 1024, H2D)).toBe(OK);
    expect(read(a, ptr + 1024n, 1024)).toEqual(pattern(1024, 9));
    // Its own address space: not the exporter's address, and no VMM call reaches it.
    expect(b.aclrtUnmapMem(inB)).toBe(RT_PARAM);
    expect(b.aclrtMemRetainAllocationHandle(inB, { value: 0n })).not.toBe(OK);
    expect(b.aclrtFree(inB)).toBe(RT_PARAM);
    // Importer closes first, then the exporter, then aclrtFree.
    expect(b.aclrtIpcMemClose(key)).toBe(OK);
    expect(b.aclrtMemcpy(new Uint8Array(16), 16, inB, 16, D2H)).not.toBe(OK);
    expect(a.aclrtIpcMemClose(key)).toBe(OK);
    expect(a.aclrtFree(ptr)).toBe(OK);
    expect(freeHbm(a)).toBe(baseline);
    expect(m.liveAllocations).toBe(0);
    expect(a.aclrtIpcMemClose(key)).toBe(RT_PARAM);
    a.dispose();
    b.dispose();
  });

  it('the whitelist: only named processes import; DISABLE_PID_VALIDATION lets any other process in and takes no list', () => {
    const m = machine();
    const a = started(m);
    const b = started(m);
    const c = started(m);
    const ptr = malloc(a, G);
    const key = exportKey(a, ptr, G);
    const p = { value: 0n };
    expect(b.aclrtIpcMemImportByKey(p, key, 0)).toBe(NO_PERMISSION);
    expect(a.aclrtIpcMemSetImportPid(key, [tgid(b)], 1)).toBe(OK);
    expect(c.aclrtIpcMemImportByKey(p, key, 0)).toBe(NO_PERMISSION);
    expect(p.value).toBe(0n);
    expect(c.aclGetRecentErrMsg()).toMatch(/pid list/);
    importKey(b, key);
    // Naming c later lets it in too.
    expect(a.aclrtIpcMemSetImportPid(key, [tgid(c), tgid(c) + 77], 2)).toBe(OK);
    importKey(c, key);
    // No process imports its own key.
    expect(a.aclrtIpcMemImportByKey(p, key, 0)).toBe(NO_PERMISSION);

    const open = exportKey(a, malloc(a, G), G, NO_VALIDATION);
    expect(open).not.toBe(key);
    const inC = importKey(c, open);
    expect(inC).not.toBe(0n);
    expect(a.aclrtIpcMemSetImportPid(open, [tgid(b)], 1)).toBe(NO_PERMISSION);
    // Only the exporter names importers.
    expect(b.aclrtIpcMemSetImportPid(key, [tgid(c)], 1)).toBe(RT_PARAM);
    a.dispose();
    b.dispose();
    c.dispose();
    expect(m.liveAllocations).toBe(0);
  });

  it("the exporter's aclrtFree withdraws the key; the importer's mapping keeps the memory until it closes", () => {
    const m = machine();
    const a = started(m);
    const b = started(m);
    const c = started(m);
    const baseline = freeHbm(a);
    const ptr = malloc(a, G);
    const held = baseline - freeHbm(a);
    expect(held).toBeGreaterThanOrEqual(G);
    expect(a.aclrtMemcpy(ptr, 4096, pattern(4096, 5), 4096, H2D)).toBe(OK);
    const key = exportKey(a, ptr, G, NO_VALIDATION);
    const inB = importKey(b, key);
    // The import maps the same memory: nothing more is allocated.
    expect(freeHbm(b)).toBe(baseline - held);
    expect(a.aclrtFree(ptr)).toBe(OK);
    expect(freeHbm(a)).toBe(baseline - held);
    expect(c.aclrtIpcMemImportByKey({ value: 0n }, key, 0)).toBe(RT_PARAM);
    expect(a.aclrtIpcMemClose(key)).toBe(RT_PARAM);
    expect(read(b, inB, 4096)).toEqual(pattern(4096, 5));
    expect(b.aclrtIpcMemClose(key)).toBe(OK);
    expect(freeHbm(a)).toBe(baseline);
    expect(m.liveAllocations).toBe(0);
    a.dispose();
    b.dispose();
    c.dispose();
  });

  it("the exporter's close withdraws the key: later imports fail, earlier ones keep working and holding the memory", () => {
    const m = machine();
    const a = started(m);
    const b = started(m);
    const baseline = freeHbm(a);
    const ptr = malloc(a, G);
    const held = baseline - freeHbm(a);
    const key = exportKey(a, ptr, G, NO_VALIDATION);
    const inB = importKey(b, key);
    expect(a.aclrtIpcMemClose(key)).toBe(OK);
    expect(b.aclrtIpcMemImportByKey({ value: 0n }, key, 0)).toBe(RT_PARAM);
    expect(a.aclrtMemset(ptr, 16, 7, 16)).toBe(OK);
    expect(read(b, inB, 16)).toEqual(new Uint8Array(16).fill(7));
    expect(a.aclrtFree(ptr)).toBe(OK);
    expect(freeHbm(a)).toBe(baseline - held);
    expect(b.aclrtIpcMemClose(key)).toBe(OK);
    expect(freeHbm(a)).toBe(baseline);
    a.dispose();
    b.dispose();
  });

  it('a key imported twice gives two addresses of the same bytes; each close unmaps the oldest', () => {
    const m = machine();
    const a = started(m);
    const b = started(m);
    const ptr = malloc(a, G);
    const key = exportKey(a, ptr, 100, NO_VALIDATION);
    const first = importKey(b, key);
    const second = importKey(b, key);
    expect(second).not.toBe(first);
    expect(b.aclrtMemset(first, 64, 0x5a, 64)).toBe(OK);
    expect(read(b, second, 64)).toEqual(new Uint8Array(64).fill(0x5a));
    expect(b.aclrtIpcMemClose(key)).toBe(OK);
    expect(b.aclrtMemcpy(new Uint8Array(8), 8, first, 8, D2H)).not.toBe(OK);
    expect(read(b, second, 64)).toEqual(new Uint8Array(64).fill(0x5a));
    expect(b.aclrtIpcMemClose(key)).toBe(OK);
    expect(b.aclrtIpcMemClose(key)).toBe(RT_PARAM);
    expect(b.runtime.stats().reservations).toBe(0);
    a.dispose();
    b.dispose();
    expect(m.liveAllocations).toBe(0);
  });

  it('ENABLE_PEER_ACCESS on an import from another device enables peer access to it', () => {
    const m = machine(2);
    const a = started(m, 0);
    const b = started(m, 1);
    const key = exportKey(a, malloc(a, G), G, NO_VALIDATION);
    const p = { value: 0n };
    expect(b.aclrtIpcMemImportByKey(p, key, C.ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS)).toBe(OK);
    // The pair is enabled now: disabling it succeeds (and a second disable finds nothing).
    expect(b.aclrtDeviceDisablePeerAccess(0)).toBe(OK);
    expect(b.aclrtDeviceDisablePeerAccess(0)).toBe(RT_PARAM);
    expect(read(b, p.value, 8)).toEqual(new Uint8Array(8));
    a.dispose();
    b.dispose();
  });
});

describe('IPC by key in the trace', () => {
  it("each call goes down CANN's shared-memory path, and vmmkit's token steps stay hidden", () => {
    const m = machine();
    const tracer = new Tracer({ layers: 'vendor' });
    const a = createAcl({ machine: m, tracer });
    const b = createAcl({ machine: m, tracer });
    for (const p of [a, b]) {
      expect(p.aclInit(null)).toBe(OK);
      expect(p.aclrtSetDevice(0)).toBe(OK);
    }
    const ptr = malloc(a, 4096);
    tracer.clear();
    const key = exportKey(a, ptr, 4096);
    expect(a.aclrtIpcMemSetImportPid(key, [tgid(b)], 1)).toBe(OK);
    importKey(b, key);
    expect(b.aclrtIpcMemClose(key)).toBe(OK);
    expect(a.aclrtIpcMemClose(key)).toBe(OK);
    const text = formatTrace(tracer.roots);
    const order = [
      'halShmemCreateHandle',
      'halShmemSetPidHandle',
      'halShmemOpenHandleByDevId',
      'halShmemCloseHandle',
      'halShmemDestroyHandle',
    ].map((frame) => text.indexOf(frame));
    expect(
      order.every((at) => at >= 0),
      text,
    ).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
    expect(text).not.toMatch(/exportShareable|importShareable|unshare/);
    a.dispose();
    b.dispose();
  });
});

describe('IPC by key: refusals, in the order CANN checks, each changing nothing', () => {
  it('aclrtIpcMemGetExportKey', () => {
    const m = machine();
    const a = started(m);
    const ptr = malloc(a, 4096);
    const va = { value: 0n };
    expect(a.aclrtReserveMemAddress(va, G, 0, null, 0)).toBe(OK);
    const key = { value: '' };
    const before = a.runtime.describe();
    const cases: [string, () => number, number][] = [
      ['devPtr NULL', () => a.aclrtIpcMemGetExportKey(0n, 4096, key, 65, 0), INVALID],
      ['key NULL', () => a.aclrtIpcMemGetExportKey(ptr, 4096, null as never, 65, 0), INVALID],
      ['size 0', () => a.aclrtIpcMemGetExportKey(ptr, 0, key, 65, 0), RT_PARAM],
      ['len 0', () => a.aclrtIpcMemGetExportKey(ptr, 4096, key, 0, 0), RT_PARAM],
      ['flags 2', () => a.aclrtIpcMemGetExportKey(ptr, 4096, key, 65, 2), RT_PARAM],
      ['len 64', () => a.aclrtIpcMemGetExportKey(ptr, 4096, key, 64, 0), RT_PARAM],
      ['inside the allocation', () => a.aclrtIpcMemGetExportKey(ptr + 4096n, 4096, key, 65, 0), RT_PARAM],
      ['a VMM address', () => a.aclrtIpcMemGetExportKey(va.value, 4096, key, 65, 0), RT_PARAM],
      ['size past the allocation', () => a.aclrtIpcMemGetExportKey(ptr, 4 * G, key, 65, 0), RT_PARAM],
    ];
    for (const [what, call, code] of cases) expect(call(), what).toBe(code);
    expect(key.value).toBe('');
    expect(a.runtime.describe()).toEqual(before);
    const b = createAcl({ machine: m });
    expect(b.aclrtIpcMemGetExportKey(ptr, 4096, key, 65, 0)).toBe(C.ACL_ERROR_UNINITIALIZE);
    expect(b.aclInit(null)).toBe(OK);
    expect(b.aclrtIpcMemGetExportKey(ptr, 4096, key, 65, 0)).toBe(C.ACL_ERROR_RT_CONTEXT_NULL);
    a.dispose();
    b.dispose();
  });

  it('aclrtIpcMemSetImportPid, aclrtIpcMemImportByKey and aclrtIpcMemClose', () => {
    const m = machine();
    const a = started(m);
    const b = started(m);
    const key = exportKey(a, malloc(a, 4096), 4096);
    const before = [a.runtime.describe(), b.runtime.describe()];
    const p = { value: 0n };
    const cases: [string, () => number, number][] = [
      ['setPid key NULL', () => a.aclrtIpcMemSetImportPid(null as never, [1], 1), INVALID],
      ['setPid pid NULL', () => a.aclrtIpcMemSetImportPid(key, null, 1), INVALID],
      ['setPid num 0', () => a.aclrtIpcMemSetImportPid(key, [1], 0), RT_PARAM],
      ['setPid pid short', () => a.aclrtIpcMemSetImportPid(key, [1], 2), INVALID],
      ['setPid unknown key', () => a.aclrtIpcMemSetImportPid('ipc-nothing', [1], 1), RT_PARAM],
      ['import devPtr NULL', () => b.aclrtIpcMemImportByKey(null as never, key, 0), INVALID],
      ['import key NULL', () => b.aclrtIpcMemImportByKey(p, null as never, 0), INVALID],
      ['import flags 2', () => b.aclrtIpcMemImportByKey(p, key, 2), RT_PARAM],
      ['import a string no export wrote', () => b.aclrtIpcMemImportByKey(p, 'shm-1234', 0), RT_PARAM],
      ['import a key of no token', () => b.aclrtIpcMemImportByKey(p, 'ipc-00000000000000ff', 0), RT_PARAM],
      ['import, not whitelisted', () => b.aclrtIpcMemImportByKey(p, key, 0), NO_PERMISSION],
      ['close key NULL', () => b.aclrtIpcMemClose(null as never), INVALID],
      ['close a key neither exported nor imported here', () => b.aclrtIpcMemClose(key), RT_PARAM],
    ];
    for (const [what, call, code] of cases) expect(call(), what).toBe(code);
    expect(p.value).toBe(0n);
    expect([a.runtime.describe(), b.runtime.describe()]).toEqual(before);
    expect(b.aclrtResetDevice(0)).toBe(OK);
    expect(b.aclrtIpcMemImportByKey(p, key, 0)).toBe(C.ACL_ERROR_RT_CONTEXT_NULL);
    expect(b.aclrtIpcMemClose(key)).toBe(C.ACL_ERROR_RT_CONTEXT_NULL);
    expect(a.aclrtResetDevice(0)).toBe(OK);
    expect(a.aclrtIpcMemSetImportPid(key, [tgid(b)], 1)).toBe(C.ACL_ERROR_RT_CONTEXT_NULL);
    // With a device again, the key is still there to whitelist.
    expect(a.aclrtSetDevice(0)).toBe(OK);
    expect(a.aclrtIpcMemSetImportPid(key, [tgid(b)], 1)).toBe(OK);
    a.dispose();
    b.dispose();
  });
});

describe('IPC by key: all or nothing', () => {
  it('a key box that refuses the key: the export is withdrawn (Backend.unshare), nothing is left shared', () => {
    const m = machine();
    const faults = new FaultyBackend(m.spawn());
    const reports: string[] = [];
    const a = createAcl({ backend: faults.backend, report: (msg) => reports.push(msg) });
    expect(a.aclInit(null)).toBe(OK);
    expect(a.aclrtSetDevice(0)).toBe(OK);
    const ptr = malloc(a, 4096);
    faults.arm(0);
    const refusing = new Proxy({ value: '' }, { set: () => false });
    expect(a.aclrtIpcMemGetExportKey(ptr, 4096, refusing, 65, NO_VALIDATION)).toBe(INVALID);
    expect(faults.log).toEqual(['exportShareable', 'unshare']);
    // The memory is freed with no token to withdraw, so nothing is reported.
    faults.arm(0);
    expect(a.aclrtFree(ptr)).toBe(OK);
    expect(faults.log).not.toContain('unshare');
    expect(reports).toEqual([]);
    expect(m.liveAllocations).toBe(0);
    a.dispose();
  });

  it('an import whose address box refuses it is undone: nothing is mapped and the importer holds nothing', () => {
    const m = machine();
    const a = started(m);
    const b = started(m);
    const key = exportKey(a, malloc(a, G), G, NO_VALIDATION);
    const used = m.devices[0].pool.used;
    const live = m.liveAllocations;
    const refusing = new Proxy({ value: 0n }, { set: () => false });
    expect(b.aclrtIpcMemImportByKey(refusing, key, 0)).toBe(INVALID);
    expect(b.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    expect(b.aclrtIpcMemClose(key)).toBe(RT_PARAM);
    expect([m.devices[0].pool.used, m.liveAllocations]).toEqual([used, live]);
    a.dispose();
    b.dispose();
  });

  it('a failure at each backend step of an import (import, reserve, map, grant) leaves the importer as it was', () => {
    const dry = importWorld();
    dry.faults.arm(0);
    importKey(dry.b, dry.key);
    const steps = [...dry.faults.log];
    expect(steps).toEqual(['importShareable', 'reserve', 'map', 'setAccess']);
    for (let k = 1; k <= steps.length; k++) {
      const w = importWorld();
      const before = [w.b.runtime.describe(), w.m.devices[0].pool.used, w.m.liveAllocations];
      w.faults.arm(k);
      const p = { value: 0n };
      expect(w.b.aclrtIpcMemImportByKey(p, w.key, 0), `step ${k} (${steps[k - 1]})`).not.toBe(OK);
      w.faults.arm(0);
      expect(p.value).toBe(0n);
      expect([w.b.runtime.describe(), w.m.devices[0].pool.used, w.m.liveAllocations]).toEqual(before);
      expect(w.b.aclrtIpcMemClose(w.key)).toBe(RT_PARAM);
      // And the import works once the fault is gone.
      expect(w.b.aclrtIpcMemImportByKey(p, w.key, 0)).toBe(OK);
      w.a.dispose();
      w.b.dispose();
      expect(w.m.liveAllocations).toBe(0);
    }
  });
});

describe('aclrtMemExportToShareableHandle: all or nothing', () => {
  it('a box that takes the probe but refuses the token: the token is withdrawn and the handle exports again', () => {
    const m = machine();
    const faults = new FaultyBackend(m.spawn());
    const reports: string[] = [];
    const a = createAcl({ backend: faults.backend, report: (msg) => reports.push(msg) });
    const b = started(m);
    expect(a.aclInit(null)).toBe(OK);
    expect(a.aclrtSetDevice(0)).toBe(OK);
    const h = { value: 0n };
    expect(
      a.aclrtMallocPhysical(
        h,
        G,
        {
          handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
          allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
          memAttr: C.ACL_HBM_MEM_HUGE,
          location: { id: 0, type: C.ACL_MEM_LOCATION_TYPE_DEVICE },
        },
        0,
      ),
    ).toBe(OK);
    let writes = 0;
    const onceOnly = new Proxy({ value: 0n }, { set: (t, k, v) => writes++ === 0 && Reflect.set(t, k, v) });
    faults.arm(0);
    expect(a.aclrtMemExportToShareableHandle(h.value, 0, NO_VALIDATION, onceOnly)).toBe(INVALID);
    expect(faults.log).toEqual(['exportShareable', 'unshare']);
    expect(a.runtime.allocation(Number(h.value))?.exports).toBe(0);
    const token = { value: 0n };
    expect(a.aclrtMemExportToShareableHandle(h.value, 0, NO_VALIDATION, token)).toBe(OK);
    expect(b.aclrtMemImportFromShareableHandle(token.value, 0, { value: 0n })).toBe(OK);
    expect(a.aclrtFreePhysical(h.value)).toBe(OK);
    expect(reports).toEqual([]);
    a.dispose();
    b.dispose();
    expect(m.liveAllocations).toBe(0);
  });
});

function importWorld() {
  const m = machine();
  const a = started(m);
  const faults = new FaultyBackend(m.spawn());
  const b = createAcl({ backend: faults.backend });
  expect(b.aclInit(null)).toBe(OK);
  expect(b.aclrtSetDevice(0)).toBe(OK);
  const key = exportKey(a, malloc(a, G), G, NO_VALIDATION);
  return { m, a, b, faults, key };
}
