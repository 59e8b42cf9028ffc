/**
 * A disposed process, through each front end: every call of the vendor's
 * function list answers the vendor's "gone" code and changes nothing on the
 * shared machine, except the few calls that answer without any driver state
 * (Notes [CUDA after dispose], [HIP after dispose], [ACL after dispose]).
 *
 * Each flavor's call table is also run, in order, on a live twin with the
 * same setup, where every call succeeds: so each call the disposed process
 * refuses is one that would have done something.
 */
import { describe, expect, it } from 'vitest';
import { createMachine, type Machine } from '../../src/backends/sim/machine.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import { ACL_FUNCTIONS, type AclFlavor } from '../../src/flavors/acl/acl.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import { CUDA_FUNCTIONS, type CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import * as H from '../../src/flavors/hip/constants.js';
import { HIP_FUNCTIONS, type HipFlavor } from '../../src/flavors/hip/hip.js';

const G = 2 * 1024 * 1024;

/** Everything a process can change on its machine. */
function machineState(machine: Machine): unknown {
  return {
    pools: machine.devices.map((d) => d.pool.used),
    host: machine.host.used,
    live: machine.liveAllocations,
    resident: machine.residentBytes,
    pids: machine.processes.map((p) => p.pid),
  };
}

/** A call of the table, and what a live process answers (default: success). */
interface Row<P, E> {
  /** `box` makes the out-parameters, so the test can see what the call wrote into them. */
  readonly call: (p: P, env: E, box: <T>(value: T) => { value: T }) => unknown;
  readonly live?: number;
}

interface Script<P, E> {
  readonly functions: readonly string[];
  /** A process on `machine` with objects of every kind alive; `peer` is another process there. */
  make(machine: Machine, peer: P): { process: P; env: E };
  makePeer(machine: Machine): P;
  readonly rows: Readonly<Record<string, Row<P, E>>>;
  /** What a disposed process answers. */
  readonly gone: number;
  /** Calls that keep answering after dispose, as they do before. */
  readonly stillAnswer: readonly string[];
  dispose(p: P): void;
}

function suite<P, E>(vendor: string, script: Script<P, E>, devices: readonly string[]): void {
  describe(`${vendor} after dispose`, () => {
    it('the table names every function of the flavor once', () => {
      expect(Object.keys(script.rows).sort()).toEqual([...script.functions].sort());
    });

    it('on a live process every call of the table, in order, succeeds', () => {
      const machine = createMachine({ devices: devices as never });
      const peer = script.makePeer(machine);
      const { process, env } = script.make(machine, peer);
      for (const [name, row] of Object.entries(script.rows)) {
        const result = row.call(process, env, newBox);
        if (typeof result === 'number') expect(result, name).toBe(row.live ?? 0);
      }
      script.dispose(process);
      script.dispose(peer);
    });

    it('a disposed process answers every call with the gone code and changes nothing', () => {
      const machine = createMachine({ devices: devices as never });
      const peer = script.makePeer(machine);
      const twin = script.make(machine, peer);
      const { process, env } = script.make(machine, peer);
      script.dispose(process);
      const before = machineState(machine);
      const boxes: { row: string; box: { value: unknown }; initial: unknown }[] = [];
      let row = '';
      const watched = <T>(value: T) => {
        const b = { value };
        boxes.push({ row, box: b, initial: value });
        return b;
      };
      for (const [name, r] of Object.entries(script.rows)) {
        row = name;
        const result = r.call(process, env, watched);
        if (script.stillAnswer.includes(name))
          expect(result, name).toEqual(r.call(twin.process, twin.env, newBox));
        else expect(result, name).toBe(script.gone);
      }
      expect(machineState(machine)).toEqual(before);
      // Refused calls write no out-parameter: no handle, pointer, fd or count is handed out.
      const written = boxes.filter((b) => b.box.value !== b.initial && !script.stillAnswer.includes(b.row));
      expect(written.map((b) => b.row)).toEqual([]);
      expect(boxes.length).toBeGreaterThan(10);
      script.dispose(twin.process);
      script.dispose(peer);
    });
  });
}

// --- CUDA ------------------------------------------------------------------------------------

interface CudaEnv {
  ctx: bigint;
  p: bigint;
  q: bigint;
  h: bigint;
  h2: bigint;
  fd: number;
  dptr: bigint;
  stream: bigint;
  host: Uint8Array;
  event: bigint;
  event2: bigint;
}

const cuProp = {
  type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
  requestedHandleTypes: CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
  location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
};
const cuRw = [{ location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }, flags: 3 }];

function ok(code: number, what: string): void {
  expect(code, what).toBe(0);
}

/** An out-parameter. */
const newBox = <T>(value: T) => ({ value });

const cudaScript: Script<CudaFlavor, CudaEnv> = {
  functions: CUDA_FUNCTIONS,
  makePeer: (machine) => createCuda({ machine }),
  make(machine) {
    const cu = createCuda({ machine });
    const b = newBox(0n);
    const n = newBox(0);
    ok(cu.cuInit(0), 'init');
    ok(cu.cuDevicePrimaryCtxRetain(b, 0), 'ctx');
    const ctx = b.value;
    ok(cu.cuCtxSetCurrent(ctx), 'set ctx');
    ok(cu.cuMemAddressReserve(b, 2 * G, 0, 0n, 0), 'reserve p');
    const p = b.value;
    ok(cu.cuMemAddressReserve(b, G, 0, 0n, 0), 'reserve q');
    const q = b.value;
    ok(cu.cuMemCreate(b, G, cuProp, 0), 'create h');
    const h = b.value;
    ok(cu.cuMemCreate(b, G, cuProp, 0), 'create h2');
    const h2 = b.value;
    ok(cu.cuMemMap(p, G, 0, h, 0), 'map');
    ok(cu.cuMemSetAccess(p, G, cuRw, 1), 'access');
    ok(cu.cuMemExportToShareableHandle(n, h, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 'export');
    const fd = n.value;
    ok(cu.cuMemAlloc(b, G), 'alloc');
    const hostBox: { value: Uint8Array | null } = { value: null };
    ok(cu.cuMemAllocHost(hostBox, 64), 'host');
    const dptr = b.value;
    ok(cu.cuStreamCreate(b, 0), 'stream');
    const stream = b.value;
    ok(cu.cuEventCreate(b, 0), 'event');
    const event = b.value;
    ok(cu.cuEventCreate(b, 0), 'event 2');
    return {
      process: cu,
      env: { ctx, p, q, h, h2, fd, dptr, stream, host: hostBox.value as Uint8Array, event, event2: b.value },
    };
  },
  rows: {
    cuInit: { call: (cu) => cu.cuInit(0) },
    cuDriverGetVersion: { call: (cu, _e, box) => cu.cuDriverGetVersion(box(0)) },
    cuDeviceGet: { call: (cu, _e, box) => cu.cuDeviceGet(box(-1), 0) },
    cuDeviceGetCount: { call: (cu, _e, box) => cu.cuDeviceGetCount(box(-1)) },
    cuDeviceGetName: { call: (cu, _e, box) => cu.cuDeviceGetName(box(''), 64, 0) },
    cuDeviceTotalMem: { call: (cu, _e, box) => cu.cuDeviceTotalMem(box(0), 0) },
    cuDeviceGetAttribute: {
      call: (cu, _e, box) =>
        cu.cuDeviceGetAttribute(box(-1), CU.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
    },
    cuDeviceCanAccessPeer: { call: (cu, _e, box) => cu.cuDeviceCanAccessPeer(box(-1), 0, 0) },
    cuDevicePrimaryCtxRetain: { call: (cu, _e, box) => cu.cuDevicePrimaryCtxRetain(box(0n), 0) },
    cuCtxSetCurrent: { call: (cu, e) => cu.cuCtxSetCurrent(e.ctx) },
    cuCtxGetCurrent: { call: (cu, _e, box) => cu.cuCtxGetCurrent(box(0n)) },
    cuCtxGetDevice: { call: (cu, _e, box) => cu.cuCtxGetDevice(box(-1)) },
    cuCtxSynchronize: { call: (cu) => cu.cuCtxSynchronize() },
    cuCtxGetDevice_v2: { call: (cu, _e, box) => cu.cuCtxGetDevice_v2(box(-1), 0n) },
    cuCtxSynchronize_v2: { call: (cu) => cu.cuCtxSynchronize_v2(0n) },
    cuCtxPushCurrent: { call: (cu, e) => cu.cuCtxPushCurrent(e.ctx) },
    cuCtxPopCurrent: { call: (cu, _e, box) => cu.cuCtxPopCurrent(box(0n)) },
    cuCtxCreate: { call: (cu, _e, box) => cu.cuCtxCreate(box(0n), 0, 0) },
    cuCtxCreate_v2: { call: (cu, _e, box) => cu.cuCtxCreate_v2(box(0n), 0, 0) },
    cuCtxCreate_v4: { call: (cu, _e, box) => cu.cuCtxCreate_v4(box(0n), {}, 0, 0) },
    // The context just created is current: destroying it makes the primary one current again.
    cuCtxDestroy: {
      call: (cu) => {
        const c = { value: 0n };
        cu.cuCtxGetCurrent(c);
        return cu.cuCtxDestroy(c.value);
      },
    },
    // One device: it is not its own peer.
    cuCtxEnablePeerAccess: {
      call: (cu, e) => cu.cuCtxEnablePeerAccess(e.ctx, 0),
      live: CU.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
    },
    cuCtxDisablePeerAccess: {
      call: (cu, e) => cu.cuCtxDisablePeerAccess(e.ctx),
      live: CU.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
    },
    cuMemGetAllocationGranularity: {
      call: (cu, _e, box) =>
        cu.cuMemGetAllocationGranularity(box(0), cuProp, CU.CU_MEM_ALLOC_GRANULARITY_MINIMUM),
    },
    cuMemAddressReserve: { call: (cu, _e, box) => cu.cuMemAddressReserve(box(0n), G, 0, 0n, 0) },
    cuMemCreate: { call: (cu, _e, box) => cu.cuMemCreate(box(0n), G, cuProp, 0) },
    cuMemMap: { call: (cu, e) => cu.cuMemMap(e.p + BigInt(G), G, 0, e.h, 0) },
    cuMemSetAccess: { call: (cu, e) => cu.cuMemSetAccess(e.p + BigInt(G), G, cuRw, 1) },
    cuMemGetAccess: {
      call: (cu, e, box) => cu.cuMemGetAccess(box(-1), { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }, e.p),
    },
    cuMemGetAddressRange: { call: (cu, e, box) => cu.cuMemGetAddressRange(box(0n), box(0), e.p) },
    cuPointerGetAttribute: {
      call: (cu, e, box) => cu.cuPointerGetAttribute(box(-1), CU.CU_POINTER_ATTRIBUTE_RANGE_SIZE, e.p),
    },
    cuPointerGetAttributes: {
      call: (cu, e, box) => cu.cuPointerGetAttributes(1, [CU.CU_POINTER_ATTRIBUTE_MAPPED], [box(-1)], e.p),
    },
    cuMemRetainAllocationHandle: { call: (cu, e, box) => cu.cuMemRetainAllocationHandle(box(0n), e.p) },
    cuMemGetAllocationPropertiesFromHandle: {
      call: (cu, e, box) => cu.cuMemGetAllocationPropertiesFromHandle(box(undefined as never), e.h),
    },
    cuMemExportToShareableHandle: {
      call: (cu, e, box) =>
        cu.cuMemExportToShareableHandle(box(-1), e.h2, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
    },
    cuMemImportFromShareableHandle: {
      call: (cu, e, box) =>
        cu.cuMemImportFromShareableHandle(box(0n), e.fd, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
    },
    cuMemcpy: { call: (cu, e) => cu.cuMemcpy(e.p, new Uint8Array(16).fill(7), 16) },
    cuMemcpyAsync: { call: (cu, e) => cu.cuMemcpyAsync(new Uint8Array(16), e.p, 16, 0n) },
    cuMemcpyHtoD: { call: (cu, e) => cu.cuMemcpyHtoD(e.p, new Uint8Array(16).fill(7), 16) },
    cuMemcpyDtoH: { call: (cu, e) => cu.cuMemcpyDtoH(new Uint8Array(16), e.p, 16) },
    cuMemcpyDtoD: { call: (cu, e) => cu.cuMemcpyDtoD(e.p + 64n, e.p, 16) },
    cuMemcpyPeer: { call: (cu, e) => cu.cuMemcpyPeer(e.p + 64n, e.ctx, e.p, e.ctx, 16) },
    cuMemcpyHtoDAsync: { call: (cu, e) => cu.cuMemcpyHtoDAsync(e.p, new Uint8Array(16), 16, e.stream) },
    cuMemcpyDtoHAsync: { call: (cu, e) => cu.cuMemcpyDtoHAsync(new Uint8Array(16), e.p, 16, e.stream) },
    cuMemcpyDtoDAsync: { call: (cu, e) => cu.cuMemcpyDtoDAsync(e.p + 64n, e.p, 16, e.stream) },
    cuMemsetD8: { call: (cu, e) => cu.cuMemsetD8(e.p, 1, 16) },
    cuMemsetD8Async: { call: (cu, e) => cu.cuMemsetD8Async(e.p, 1, 16, e.stream) },
    cuMemsetD16: { call: (cu, e) => cu.cuMemsetD16(e.p, 0x0102, 8) },
    cuMemsetD32: { call: (cu, e) => cu.cuMemsetD32(e.p, 0x01020304, 4) },
    cuStreamCreate: { call: (cu, _e, box) => cu.cuStreamCreate(box(0n), 0) },
    cuStreamSynchronize: { call: (cu, e) => cu.cuStreamSynchronize(e.stream) },
    cuStreamQuery: { call: (cu, e) => cu.cuStreamQuery(e.stream) },
    cuStreamIsCapturing: { call: (cu, e, box) => cu.cuStreamIsCapturing(e.stream, box(-1)) },
    cuThreadExchangeStreamCaptureMode: {
      call: (cu, _e, box) => cu.cuThreadExchangeStreamCaptureMode(box(CU.CU_STREAM_CAPTURE_MODE_RELAXED)),
    },
    cuEventCreate: { call: (cu, _e, box) => cu.cuEventCreate(box(0n), 0) },
    cuEventRecord: { call: (cu, e) => cu.cuEventRecord(e.event, e.stream) },
    cuEventRecordWithFlags: { call: (cu, e) => cu.cuEventRecordWithFlags(e.event2, e.stream, 0) },
    cuStreamWaitEvent: { call: (cu, e) => cu.cuStreamWaitEvent(0n, e.event, 0) },
    cuEventSynchronize: { call: (cu, e) => cu.cuEventSynchronize(e.event2) },
    cuMemsetD16Async: { call: (cu, e) => cu.cuMemsetD16Async(e.p, 0x0102, 8, e.stream) },
    cuMemsetD32Async: { call: (cu, e) => cu.cuMemsetD32Async(e.p, 0x01020304, 4, e.stream) },
    // Stream capture: each row captures what it needs on e.stream and undoes it (captured, below).
    cuStreamBeginCapture: { call: (cu, e) => captured(cu, e.stream, 'begin') },
    cuStreamBeginCapture_v2: { call: (cu, e) => captured(cu, e.stream, 'begin', 'v2') },
    cuStreamEndCapture: { call: (cu, e) => captured(cu, e.stream, 'end') },
    cuStreamGetCaptureInfo: {
      call: (cu, e, box) => cu.cuStreamGetCaptureInfo(e.stream, box(-1), null, null, null, null, null),
    },
    cuGraphInstantiate: { call: (cu, e) => captured(cu, e.stream, 'instantiate') },
    cuGraphInstantiateWithFlags: { call: (cu, e) => captured(cu, e.stream, 'instantiate', 'v2') },
    cuGraphLaunch: { call: (cu, e) => captured(cu, e.stream, 'launch') },
    cuGraphGetNodes: { call: (cu, e) => captured(cu, e.stream, 'nodes') },
    cuGraphExecDestroy: { call: (cu, e) => captured(cu, e.stream, 'execDestroy') },
    cuGraphDestroy: { call: (cu, e) => captured(cu, e.stream, 'graphDestroy') },
    cuEventQuery: { call: (cu, e) => cu.cuEventQuery(e.event) },
    cuEventElapsedTime: { call: (cu, e, box) => cu.cuEventElapsedTime(box(-1), e.event, e.event2) },
    cuEventElapsedTime_v2: { call: (cu, e, box) => cu.cuEventElapsedTime_v2(box(-1), e.event, e.event2) },
    cuEventDestroy: { call: (cu, e) => cu.cuEventDestroy(e.event2) },
    cuStreamDestroy: { call: (cu, e) => cu.cuStreamDestroy(e.stream) },
    cuMemAlloc: { call: (cu, _e, box) => cu.cuMemAlloc(box(0n), G) },
    cuMemFree: { call: (cu, e) => cu.cuMemFree(e.dptr) },
    cuMemAllocHost: { call: (cu, _e, box) => cu.cuMemAllocHost(box(null), 64) },
    cuMemHostAlloc: { call: (cu, _e, box) => cu.cuMemHostAlloc(box(null), 64, 1) },
    cuMemHostGetFlags: { call: (cu, e, box) => cu.cuMemHostGetFlags(box(-1), e.host) },
    cuMemHostGetDevicePointer: { call: (cu, e, box) => cu.cuMemHostGetDevicePointer(box(0n), e.host, 0) },
    cuMemHostGetDevicePointer_v2: {
      call: (cu, e, box) => cu.cuMemHostGetDevicePointer_v2(box(0n), e.host, 0),
    },
    cuMemFreeHost: { call: (cu, e) => cu.cuMemFreeHost(e.host) },
    cuMemGetInfo: { call: (cu, _e, box) => cu.cuMemGetInfo(box(0), box(0)) },
    cuMemUnmap: { call: (cu, e) => cu.cuMemUnmap(e.p, G) },
    cuMemRelease: { call: (cu, e) => cu.cuMemRelease(e.h2) },
    cuMemAddressFree: { call: (cu, e) => cu.cuMemAddressFree(e.q, G) },
    cuDevicePrimaryCtxGetState: { call: (cu, _e, box) => cu.cuDevicePrimaryCtxGetState(0, box(-1), box(-1)) },
    cuDevicePrimaryCtxReset: { call: (cu) => cu.cuDevicePrimaryCtxReset(0) },
    cuDevicePrimaryCtxRelease: { call: (cu) => cu.cuDevicePrimaryCtxRelease(0) },
    cuGetErrorName: { call: (cu, _e, box) => cu.cuGetErrorName(CU.CUDA_ERROR_INVALID_VALUE, box(null)) },
    cuGetErrorString: { call: (cu, _e, box) => cu.cuGetErrorString(CU.CUDA_ERROR_INVALID_VALUE, box(null)) },
  },
  gone: CU.CUDA_ERROR_DEINITIALIZED,
  stillAnswer: ['cuDriverGetVersion', 'cuGetErrorName', 'cuGetErrorString'],
  dispose: (cu) => cu.dispose(),
};

/** The codes of one capture's calls on `stream`: begin, end, instantiate, launch, node count, destroys. */
interface CaptureCodes {
  begin: number;
  end: number;
  instantiate: number;
  launch: number;
  nodes: number;
  execDestroy: number;
  graphDestroy: number;
}

/** Capture nothing on `stream`, instantiate, launch and undo it all; the code of `pick` ('v2': the other names). */
function captured(cu: CudaFlavor, stream: bigint, pick: keyof CaptureCodes, names?: 'v2'): number {
  const g = { value: 0n };
  const x = { value: 0n };
  const c: Partial<CaptureCodes> = {};
  c.begin = names ? cu.cuStreamBeginCapture_v2(stream, 0) : cu.cuStreamBeginCapture(stream, 0);
  c.end = cu.cuStreamEndCapture(stream, g);
  c.instantiate = names
    ? cu.cuGraphInstantiateWithFlags(x, g.value, 0)
    : cu.cuGraphInstantiate(x, g.value, 0);
  c.launch = cu.cuGraphLaunch(x.value, stream);
  cu.cuStreamSynchronize(stream);
  c.nodes = cu.cuGraphGetNodes(g.value, null, { value: -1 });
  c.execDestroy = cu.cuGraphExecDestroy(x.value);
  c.graphDestroy = cu.cuGraphDestroy(g.value);
  return (c as CaptureCodes)[pick];
}

// --- HIP -------------------------------------------------------------------------------------

interface HipEnv {
  p: bigint;
  q: bigint;
  h: bigint;
  h2: bigint;
  fd: number;
  ptr: bigint;
  stream: bigint;
  host: Uint8Array;
  event: bigint;
  event2: bigint;
}

const hipProp = {
  type: H.hipMemAllocationTypePinned,
  requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor,
  location: { type: H.hipMemLocationTypeDevice, id: 0 },
};
const hipRw = [
  { location: { type: H.hipMemLocationTypeDevice, id: 0 }, flags: H.hipMemAccessFlagsProtReadWrite },
];

/** Capture nothing on `stream`, instantiate, launch and undo it all; the code of `pick` ('flags': ...WithFlags). */
function hipCaptured(hip: HipFlavor, stream: bigint, pick: keyof CaptureCodes, names?: 'flags'): number {
  const g = { value: 0n };
  const x = { value: 0n };
  const c: Partial<CaptureCodes> = {};
  c.begin = hip.hipStreamBeginCapture(stream, 0);
  c.end = hip.hipStreamEndCapture(stream, g);
  c.instantiate = names
    ? hip.hipGraphInstantiateWithFlags(x, g.value, 0)
    : hip.hipGraphInstantiate(x, g.value, null, null, 0);
  c.launch = hip.hipGraphLaunch(x.value, stream);
  hip.hipStreamSynchronize(stream);
  c.nodes = hip.hipGraphGetNodes(g.value, null, { value: -1 });
  c.execDestroy = hip.hipGraphExecDestroy(x.value);
  c.graphDestroy = hip.hipGraphDestroy(g.value);
  return (c as CaptureCodes)[pick];
}

const hipScript: Script<HipFlavor, HipEnv> = {
  functions: HIP_FUNCTIONS,
  makePeer: (machine) => createHip({ machine }),
  make(machine) {
    const hip = createHip({ machine });
    const b = newBox(0n);
    const n = newBox(0);
    ok(hip.hipMemAddressReserve(b, 2 * G, 0, null, 0), 'reserve p');
    const p = b.value;
    ok(hip.hipMemAddressReserve(b, G, 0, null, 0), 'reserve q');
    const q = b.value;
    ok(hip.hipMemCreate(b, G, hipProp, 0), 'create h');
    const h = b.value;
    ok(hip.hipMemCreate(b, G, hipProp, 0), 'create h2');
    const h2 = b.value;
    ok(hip.hipMemMap(p, G, 0, h, 0), 'map');
    ok(hip.hipMemSetAccess(p, G, hipRw, 1), 'access');
    ok(hip.hipMemExportToShareableHandle(n, h, H.hipMemHandleTypePosixFileDescriptor, 0), 'export');
    const fd = n.value;
    ok(hip.hipMalloc(b, G), 'malloc');
    const hostBox: { value: Uint8Array | null } = { value: null };
    ok(hip.hipHostMalloc(hostBox, 64, 0), 'host');
    const ptr = b.value;
    ok(hip.hipStreamCreate(b), 'stream');
    const stream = b.value;
    ok(hip.hipEventCreate(b), 'event');
    const event = b.value;
    ok(hip.hipEventCreate(b), 'event 2');
    return {
      process: hip,
      env: { p, q, h, h2, fd, ptr, stream, host: hostBox.value as Uint8Array, event, event2: b.value },
    };
  },
  rows: {
    hipInit: { call: (hip) => hip.hipInit(0) },
    hipGetDeviceCount: { call: (hip, _e, box) => hip.hipGetDeviceCount(box(-1)) },
    hipSetDevice: { call: (hip) => hip.hipSetDevice(0) },
    hipGetDevice: { call: (hip, _e, box) => hip.hipGetDevice(box(-1)) },
    hipDeviceGet: { call: (hip, _e, box) => hip.hipDeviceGet(box(-1), 0) },
    hipDeviceCanAccessPeer: { call: (hip, _e, box) => hip.hipDeviceCanAccessPeer(box(-1), 0, 0) },
    hipDeviceGetAttribute: {
      call: (hip, _e, box) => hip.hipDeviceGetAttribute(box(-1), H.hipDeviceAttributeMultiprocessorCount, 0),
    },
    hipGetDeviceProperties: {
      call: (hip, _e, box) => hip.hipGetDeviceProperties(box(undefined as never), 0),
    },
    hipRuntimeGetVersion: { call: (hip, _e, box) => hip.hipRuntimeGetVersion(box(0)) },
    hipDeviceSynchronize: { call: (hip) => hip.hipDeviceSynchronize() },
    hipMemGetAllocationGranularity: {
      call: (hip, _e, box) =>
        hip.hipMemGetAllocationGranularity(box(0), hipProp, H.hipMemAllocationGranularityMinimum),
    },
    hipMemAddressReserve: { call: (hip, _e, box) => hip.hipMemAddressReserve(box(0n), G, 0, null, 0) },
    hipMemCreate: { call: (hip, _e, box) => hip.hipMemCreate(box(0n), G, hipProp, 0) },
    hipMemMap: { call: (hip, e) => hip.hipMemMap(e.p + BigInt(G), G, 0, e.h, 0) },
    hipMemSetAccess: { call: (hip, e) => hip.hipMemSetAccess(e.p + BigInt(G), G, hipRw, 1) },
    hipMemGetAccess: {
      call: (hip, e, box) => hip.hipMemGetAccess(box(-1), { type: H.hipMemLocationTypeDevice, id: 0 }, e.p),
    },
    hipMemGetAddressRange: { call: (hip, e, box) => hip.hipMemGetAddressRange(box(0n), box(0), e.p) },
    hipPointerGetAttributes: {
      call: (hip, e, box) => hip.hipPointerGetAttributes(box(undefined as never), e.p),
    },
    hipMemRetainAllocationHandle: { call: (hip, e, box) => hip.hipMemRetainAllocationHandle(box(0n), e.p) },
    hipMemGetAllocationPropertiesFromHandle: {
      call: (hip, e, box) => hip.hipMemGetAllocationPropertiesFromHandle(box(undefined as never), e.h),
    },
    hipMemExportToShareableHandle: {
      call: (hip, e, box) =>
        hip.hipMemExportToShareableHandle(box(-1), e.h2, H.hipMemHandleTypePosixFileDescriptor, 0),
    },
    hipMemImportFromShareableHandle: {
      call: (hip, e, box) =>
        hip.hipMemImportFromShareableHandle(box(0n), e.fd, H.hipMemHandleTypePosixFileDescriptor),
    },
    hipMemcpy: {
      call: (hip, e) => hip.hipMemcpy(e.p, new Uint8Array(16).fill(7), 16, H.hipMemcpyHostToDevice),
    },
    hipMemcpyAsync: {
      call: (hip, e) => hip.hipMemcpyAsync(new Uint8Array(16), e.p, 16, H.hipMemcpyDeviceToHost, e.stream),
    },
    hipMemcpyHtoD: { call: (hip, e) => hip.hipMemcpyHtoD(e.p, new Uint8Array(16).fill(7), 16) },
    hipMemcpyDtoH: { call: (hip, e) => hip.hipMemcpyDtoH(new Uint8Array(16), e.p, 16) },
    hipMemcpyDtoD: { call: (hip, e) => hip.hipMemcpyDtoD(e.p + 64n, e.p, 16) },
    hipMemcpyPeer: { call: (hip, e) => hip.hipMemcpyPeer(e.p + 64n, 0, e.p, 0, 16) },
    hipMemsetD32: { call: (hip, e) => hip.hipMemsetD32(e.p, 0x01020304, 4) },
    hipMemset: { call: (hip, e) => hip.hipMemset(e.p, 1, 16) },
    hipMemsetAsync: { call: (hip, e) => hip.hipMemsetAsync(e.p, 1, 16, e.stream) },
    hipStreamCreate: { call: (hip, _e, box) => hip.hipStreamCreate(box(0n)) },
    hipStreamCreateWithFlags: {
      call: (hip, _e, box) => hip.hipStreamCreateWithFlags(box(0n), H.hipStreamNonBlocking),
    },
    hipStreamSynchronize: { call: (hip, e) => hip.hipStreamSynchronize(e.stream) },
    hipEventCreate: { call: (hip, _e, box) => hip.hipEventCreate(box(0n)) },
    hipEventCreateWithFlags: {
      call: (hip, _e, box) => hip.hipEventCreateWithFlags(box(0n), H.hipEventDisableTiming),
    },
    hipEventRecord: { call: (hip, e) => hip.hipEventRecord(e.event, e.stream) },
    hipStreamWaitEvent: { call: (hip, e) => hip.hipStreamWaitEvent(null, e.event, 0) },
    hipEventSynchronize: { call: (hip, e) => hip.hipEventSynchronize(e.event) },
    hipEventQuery: { call: (hip, e) => hip.hipEventQuery(e.event) },
    // Stream capture: each row captures nothing on e.stream and undoes it (hipCaptured, below).
    hipStreamBeginCapture: { call: (hip, e) => hipCaptured(hip, e.stream, 'begin') },
    hipStreamEndCapture: { call: (hip, e) => hipCaptured(hip, e.stream, 'end') },
    hipStreamIsCapturing: { call: (hip, e, box) => hip.hipStreamIsCapturing(e.stream, box(-1)) },
    hipStreamGetCaptureInfo: {
      call: (hip, e, box) => hip.hipStreamGetCaptureInfo(e.stream, box(-1), box(0n)),
    },
    hipThreadExchangeStreamCaptureMode: {
      call: (hip, _e, box) => hip.hipThreadExchangeStreamCaptureMode(box(H.hipStreamCaptureModeRelaxed)),
    },
    hipGraphInstantiate: { call: (hip, e) => hipCaptured(hip, e.stream, 'instantiate') },
    hipGraphInstantiateWithFlags: { call: (hip, e) => hipCaptured(hip, e.stream, 'instantiate', 'flags') },
    hipGraphLaunch: { call: (hip, e) => hipCaptured(hip, e.stream, 'launch') },
    hipGraphGetNodes: { call: (hip, e) => hipCaptured(hip, e.stream, 'nodes') },
    hipGraphExecDestroy: { call: (hip, e) => hipCaptured(hip, e.stream, 'execDestroy') },
    hipGraphDestroy: { call: (hip, e) => hipCaptured(hip, e.stream, 'graphDestroy') },
    hipEventElapsedTime: {
      call: (hip, e, box) => {
        hip.hipEventRecord(e.event2, e.stream);
        hip.hipEventSynchronize(e.event2);
        return hip.hipEventElapsedTime(box(-1), e.event, e.event2);
      },
    },
    hipEventDestroy: { call: (hip, e) => hip.hipEventDestroy(e.event2) },
    hipStreamDestroy: { call: (hip, e) => hip.hipStreamDestroy(e.stream) },
    hipMalloc: { call: (hip, _e, box) => hip.hipMalloc(box(0n), G) },
    hipFree: { call: (hip, e) => hip.hipFree(e.ptr) },
    hipMemGetInfo: { call: (hip, _e, box) => hip.hipMemGetInfo(box(0), box(0)) },
    hipHostMalloc: { call: (hip, _e, box) => hip.hipHostMalloc(box(null), 64, 0) },
    hipHostGetFlags: { call: (hip, e, box) => hip.hipHostGetFlags(box(-1), e.host) },
    hipHostGetDevicePointer: { call: (hip, e, box) => hip.hipHostGetDevicePointer(box(0n), e.host, 0) },
    hipHostFree: { call: (hip, e) => hip.hipHostFree(e.host) },
    hipMemUnmap: { call: (hip, e) => hip.hipMemUnmap(e.p, G) },
    hipMemRelease: { call: (hip, e) => hip.hipMemRelease(e.h2) },
    hipMemAddressFree: { call: (hip, e) => hip.hipMemAddressFree(e.q, G) },
    // Peek first: hipGetLastError clears what it reads.
    hipPeekAtLastError: { call: (hip) => hip.hipPeekAtLastError() },
    hipGetLastError: { call: (hip) => hip.hipGetLastError() },
    hipGetErrorName: { call: (hip) => hip.hipGetErrorName(H.hipErrorInvalidValue) },
    hipGetErrorString: { call: (hip) => hip.hipGetErrorString(H.hipErrorInvalidValue) },
    // One device: no peer to enable or disable (last, so the error they leave is not peeked above).
    hipDeviceEnablePeerAccess: {
      call: (hip) => hip.hipDeviceEnablePeerAccess(0, 0),
      live: H.hipErrorInvalidDevice,
    },
    hipDeviceDisablePeerAccess: {
      call: (hip) => hip.hipDeviceDisablePeerAccess(0),
      live: H.hipErrorPeerAccessNotEnabled,
    },
    // Last: it releases everything the process holds on the device.
    hipDeviceReset: { call: (hip) => hip.hipDeviceReset() },
  },
  gone: H.hipErrorDeinitialized,
  stillAnswer: ['hipGetErrorName', 'hipGetErrorString', 'hipRuntimeGetVersion'],
  dispose: (hip) => hip.dispose(),
};

// --- ACL -------------------------------------------------------------------------------------

interface AclEnv {
  p: bigint;
  host: Uint8Array;
  stream2: bigint;
  ctx0: bigint;
  ctx: bigint;
  ptr2: bigint;
  h5: bigint;
  peerToken2: bigint;
  q: bigint;
  r: bigint;
  h: bigint;
  h2: bigint;
  h3: bigint;
  h4: bigint;
  token: bigint;
  peerToken: bigint;
  peerPid: number;
  ptr: bigint;
  stream: bigint;
  event: bigint;
  /** An IPC key this process exported with pid validation, and one the peer exported without. */
  ownKey: string;
  peerKey: string;
}

const aclProp = {
  handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
  allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
  memAttr: A.ACL_HBM_MEM_HUGE,
  location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 },
};
const aclRw = [
  { flags: A.ACL_RT_MEM_ACCESS_FLAGS_READWRITE, location: { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 } },
];

const aclScript: Script<AclFlavor, AclEnv> = {
  functions: ACL_FUNCTIONS,
  makePeer(machine) {
    const acl = createAcl({ machine });
    ok(acl.aclInit(), 'peer init');
    ok(acl.aclrtSetDevice(0), 'peer device');
    return acl;
  },
  make(machine, peer) {
    const acl = createAcl({ machine });
    const b = newBox(0n);
    ok(acl.aclInit(), 'init');
    ok(acl.aclrtSetDevice(0), 'device');
    ok(acl.aclrtReserveMemAddress(b, 2 * G, 0, 0n, 0), 'reserve p');
    const p = b.value;
    ok(acl.aclrtReserveMemAddress(b, G, 0, 0n, 0), 'reserve q');
    const q = b.value;
    // Where aclrtMemMapNoAccess maps (its own range and handle, so later rows find p and q as before).
    ok(acl.aclrtReserveMemAddress(b, G, 0, 0n, 0), 'reserve r');
    const r = b.value;
    const handle = () => {
      ok(acl.aclrtMallocPhysical(b, G, aclProp, 0), 'malloc physical');
      return b.value;
    };
    const h = handle();
    const h2 = handle();
    const h3 = handle();
    const h4 = handle();
    ok(acl.aclrtMapMem(p, G, 0, h, 0), 'map');
    ok(acl.aclrtMemSetAccess(p, G, aclRw, 1), 'access');
    ok(acl.aclrtMemExportToShareableHandle(h3, A.ACL_MEM_HANDLE_TYPE_NONE, 0, b), 'export');
    const token = b.value;
    // Something this process may import: the peer's memory, exported without pid checks.
    const ph = newBox(0n);
    ok(peer.aclrtMallocPhysical(ph, G, aclProp, 0), 'peer malloc physical');
    ok(
      peer.aclrtMemExportToShareableHandle(
        ph.value,
        A.ACL_MEM_HANDLE_TYPE_NONE,
        A.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION,
        b,
      ),
      'peer export',
    );
    const peerToken = b.value;
    ok(acl.aclrtMalloc(b, 4096, 0), 'malloc');
    const ptr = b.value;
    // What the calls of ported programs need: a pinned host buffer, a second stream, contexts,
    // aclrtMalloc memory to export by key, a handle for the V2 export and another peer token for the
    // V2 import.
    const hostBox = newBox<Uint8Array | null>(null);
    ok(acl.aclrtMallocHost(hostBox, 64), 'malloc host');
    ok(acl.aclrtCreateStream(b), 'stream 2');
    const stream2 = b.value;
    ok(acl.aclrtGetCurrentContext(b), 'default context');
    const ctx0 = b.value;
    ok(acl.aclrtCreateContext(b, 0), 'context');
    const ctx = b.value;
    ok(acl.aclrtMalloc(b, 4096, 0), 'malloc 2');
    const ptr2 = b.value;
    const key = { value: '' };
    ok(acl.aclrtMalloc(b, 4096, 0), 'malloc 3');
    ok(acl.aclrtIpcMemGetExportKey(b.value, 4096, key, 65, 0), 'export key');
    const ownKey = key.value;
    ok(peer.aclrtMalloc(b, 4096, 0), 'peer malloc');
    ok(peer.aclrtIpcMemGetExportKey(b.value, 4096, key, 65, 1), 'peer export key');
    const peerKey = key.value;
    const h5 = handle();
    ok(peer.aclrtMallocPhysical(ph, G, aclProp, 0), 'peer malloc physical 2');
    ok(peer.aclrtMemExportToShareableHandle(ph.value, A.ACL_MEM_HANDLE_TYPE_NONE, 1, b), 'peer export 2');
    const peerToken2 = b.value;
    ok(acl.aclrtCreateStream(b), 'stream');
    const eventBox = newBox(0n);
    ok(acl.aclrtCreateEvent(eventBox), 'event');
    return {
      process: acl,
      env: {
        p,
        q,
        r,
        h,
        h2,
        h3,
        h4,
        h5,
        token,
        peerToken,
        peerToken2,
        peerPid: peer.pid,
        ptr,
        ptr2,
        stream: b.value,
        event: eventBox.value,
        stream2,
        host: hostBox.value as Uint8Array,
        ctx0,
        ctx,
        ownKey,
        peerKey,
      },
    };
  },
  rows: {
    aclInit: { call: (acl) => acl.aclInit(), live: A.ACL_ERROR_REPEAT_INITIALIZE },
    aclrtSetDevice: { call: (acl) => acl.aclrtSetDevice(0) },
    aclrtGetDeviceCount: { call: (acl, _e, box) => acl.aclrtGetDeviceCount(box(-1)) },
    aclrtGetDevice: { call: (acl, _e, box) => acl.aclrtGetDevice(box(-1)) },
    aclrtReserveMemAddress: { call: (acl, _e, box) => acl.aclrtReserveMemAddress(box(0n), G, 0, 0n, 0) },
    aclrtMallocPhysical: { call: (acl, _e, box) => acl.aclrtMallocPhysical(box(0n), G, aclProp, 0) },
    aclrtMapMem: { call: (acl, e) => acl.aclrtMapMem(e.p + BigInt(G), G, 0, e.h, 0) },
    aclrtMemMapNoAccess: { call: (acl, e) => acl.aclrtMemMapNoAccess(e.r, G, 0, e.h4, 0) },
    aclrtMemSetAccess: { call: (acl, e) => acl.aclrtMemSetAccess(e.p + BigInt(G), G, aclRw, 1) },
    aclrtMemGetAccess: {
      call: (acl, e, box) =>
        acl.aclrtMemGetAccess(e.p, { type: A.ACL_MEM_LOCATION_TYPE_DEVICE, id: 0 }, box(-1)),
    },
    aclrtMemRetainAllocationHandle: {
      call: (acl, e, box) => acl.aclrtMemRetainAllocationHandle(e.p, box(0n)),
    },
    aclrtMemGetAllocationGranularity: {
      call: (acl, _e, box) =>
        acl.aclrtMemGetAllocationGranularity(aclProp, A.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, box(0)),
    },
    aclrtMemGetAllocationPropertiesFromHandle: {
      call: (acl, e, box) => acl.aclrtMemGetAllocationPropertiesFromHandle(e.h, box(undefined as never)),
    },
    aclrtMemExportToShareableHandle: {
      call: (acl, e, box) =>
        acl.aclrtMemExportToShareableHandle(e.h2, A.ACL_MEM_HANDLE_TYPE_NONE, 0, box(0n)),
    },
    aclrtMemSetPidToShareableHandle: {
      call: (acl, e) => acl.aclrtMemSetPidToShareableHandle(e.token, [e.peerPid], 1),
    },
    aclrtMemImportFromShareableHandle: {
      call: (acl, e, box) => acl.aclrtMemImportFromShareableHandle(e.peerToken, 0, box(0n)),
    },
    aclrtDeviceGetBareTgid: { call: (acl, _e, box) => acl.aclrtDeviceGetBareTgid(box(-1)) },
    aclrtMemcpy: {
      call: (acl, e) => acl.aclrtMemcpy(e.p, 16, new Uint8Array(16).fill(7), 16, A.ACL_MEMCPY_HOST_TO_DEVICE),
    },
    aclrtMemcpyAsync: {
      call: (acl, e) =>
        acl.aclrtMemcpyAsync(new Uint8Array(16), 16, e.p, 16, A.ACL_MEMCPY_DEVICE_TO_HOST, e.stream),
    },
    aclrtMemset: { call: (acl, e) => acl.aclrtMemset(e.p, 16, 1, 16) },
    aclrtMemsetAsync: { call: (acl, e) => acl.aclrtMemsetAsync(e.p, 16, 1, 16, e.stream) },
    aclrtCreateStream: { call: (acl, _e, box) => acl.aclrtCreateStream(box(0n)) },
    aclrtSynchronizeStream: { call: (acl, e) => acl.aclrtSynchronizeStream(e.stream) },
    aclrtCreateEvent: { call: (acl, _e, box) => acl.aclrtCreateEvent(box(0n)) },
    aclrtCreateEventWithFlag: {
      call: (acl, _e, box) => acl.aclrtCreateEventWithFlag(box(0n), A.ACL_EVENT_TIME_LINE),
    },
    aclrtRecordEvent: { call: (acl, e) => acl.aclrtRecordEvent(e.event, e.stream) },
    aclrtStreamWaitEvent: { call: (acl, e) => acl.aclrtStreamWaitEvent(null, e.event) },
    aclrtSynchronizeEvent: { call: (acl, e) => acl.aclrtSynchronizeEvent(e.event) },
    aclrtQueryEventStatus: { call: (acl, e, box) => acl.aclrtQueryEventStatus(e.event, box(-1)) },
    aclrtResetEvent: { call: (acl, e) => acl.aclrtResetEvent(e.event, e.stream) },
    aclrtDestroyEvent: { call: (acl, e) => acl.aclrtDestroyEvent(e.event) },
    aclrtDestroyStream: { call: (acl, e) => acl.aclrtDestroyStream(e.stream) },
    aclrtSynchronizeDevice: { call: (acl) => acl.aclrtSynchronizeDevice() },
    aclrtMalloc: { call: (acl, _e, box) => acl.aclrtMalloc(box(0n), 4096, 0) },
    aclrtFree: { call: (acl, e) => acl.aclrtFree(e.ptr) },
    aclrtGetMemInfo: { call: (acl, _e, box) => acl.aclrtGetMemInfo(A.ACL_HBM_MEM, box(0), box(0)) },
    aclrtMallocHost: { call: (acl, _e, box) => acl.aclrtMallocHost(box(null), 64) },
    aclrtFreeHost: { call: (acl, e) => acl.aclrtFreeHost(e.host) },
    aclrtDestroyStreamForce: { call: (acl, e) => acl.aclrtDestroyStreamForce(e.stream2) },
    aclrtGetCurrentContext: { call: (acl, _e, box) => acl.aclrtGetCurrentContext(box(0n)) },
    aclrtSetCurrentContext: { call: (acl, e) => acl.aclrtSetCurrentContext(e.ctx0) },
    aclrtCreateContext: { call: (acl, _e, box) => acl.aclrtCreateContext(box(0n), 0) },
    aclrtDestroyContext: { call: (acl, e) => acl.aclrtDestroyContext(e.ctx) },
    aclrtDeviceCanAccessPeer: { call: (acl, _e, box) => acl.aclrtDeviceCanAccessPeer(box(-1), 0, 0) },
    // One device: no peer to enable or disable.
    aclrtDeviceEnablePeerAccess: {
      call: (acl) => acl.aclrtDeviceEnablePeerAccess(0, 0),
      live: A.ACL_ERROR_RT_PARAM_INVALID,
    },
    aclrtDeviceDisablePeerAccess: {
      call: (acl) => acl.aclrtDeviceDisablePeerAccess(0),
      live: A.ACL_ERROR_RT_PARAM_INVALID,
    },
    // IPC by key (Note [ACL IPC keys]): the close after the import unmaps that import.
    aclrtIpcMemGetExportKey: {
      call: (acl, e, box) => acl.aclrtIpcMemGetExportKey(e.ptr2, 4096, box(''), 65, 1),
    },
    aclrtIpcMemSetImportPid: { call: (acl, e) => acl.aclrtIpcMemSetImportPid(e.ownKey, [e.peerPid], 1) },
    aclrtIpcMemImportByKey: { call: (acl, e, box) => acl.aclrtIpcMemImportByKey(box(0n), e.peerKey, 0) },
    aclrtIpcMemClose: { call: (acl, e) => acl.aclrtIpcMemClose(e.peerKey) },
    aclrtMemExportToShareableHandleV2: {
      call: (acl, e, box) =>
        acl.aclrtMemExportToShareableHandleV2(e.h5, 0, A.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, box(0n)),
    },
    aclrtMemSetPidToShareableHandleV2: {
      call: (acl, e) =>
        acl.aclrtMemSetPidToShareableHandleV2(
          { value: e.token },
          A.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT,
          [e.peerPid],
          1,
        ),
    },
    aclrtMemImportFromShareableHandleV2: {
      call: (acl, e, box) =>
        acl.aclrtMemImportFromShareableHandleV2(
          { value: e.peerToken2 },
          A.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT,
          0,
          box(0n),
        ),
    },
    aclrtUnmapMem: { call: (acl, e) => acl.aclrtUnmapMem(e.p) },
    aclrtFreePhysical: { call: (acl, e) => acl.aclrtFreePhysical(e.h2) },
    aclrtReleaseMemAddress: { call: (acl, e) => acl.aclrtReleaseMemAddress(e.q) },
    aclrtResetDeviceForce: { call: (acl) => acl.aclrtResetDeviceForce(0) },
    // The forced reset above took the count to 0 (Note [Resetting a reset device]).
    aclrtResetDevice: { call: (acl) => acl.aclrtResetDevice(0), live: A.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR },
    // Not compared: it reports the last failure, which differs (checked below).
    aclGetRecentErrMsg: { call: () => undefined },
    aclFinalize: { call: (acl) => acl.aclFinalize() },
  },
  gone: A.ACL_ERROR_UNINITIALIZE,
  stillAnswer: ['aclGetRecentErrMsg'],
  dispose: (acl) => acl.dispose(),
};

suite('CUDA', cudaScript, ['H200']);
suite('HIP', hipScript, ['MI300X']);
suite('ACL', aclScript, ['Ascend910B']);

describe('ACL after dispose: the recent error says why', () => {
  it('aclGetRecentErrMsg keeps answering, naming the disposal', () => {
    const acl = createAcl();
    expect(acl.aclInit()).toBe(0);
    acl.dispose();
    expect(acl.aclrtSetDevice(0)).toBe(A.ACL_ERROR_UNINITIALIZE);
    expect(acl.aclGetRecentErrMsg()).toMatch(/aclrtSetDevice failed: ACL_ERROR_UNINITIALIZE .*disposed/);
    expect(acl.aclGetRecentErrMsg()).toBeNull();
  });
});

describe('dispose and exports', () => {
  it('a disposed process exports nothing, so no descriptor is left that no one can close', () => {
    const machine = createMachine({ devices: ['H200'] });
    const cu = createCuda({ machine });
    const b = newBox(0n);
    const fd = newBox(-1);
    ok(cu.cuInit(0), 'init');
    ok(cu.cuMemCreate(b, G, cuProp, 0), 'create');
    const pid = cu.pid;
    cu.dispose();
    expect(cu.cuMemExportToShareableHandle(fd, b.value, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)).toBe(
      CU.CUDA_ERROR_DEINITIALIZED,
    );
    expect(fd.value).toBe(-1);
    // The process has left the machine with its descriptor table, and its memory is back.
    expect(machine.processes.map((p) => p.pid)).not.toContain(pid);
    expect(machine.liveAllocations).toBe(0);
    expect(machine.devices[0].pool.used).toBe(0);
  });
});

describe('a runtime disposed under its front end', () => {
  it("answers core's not-initialized with each vendor's gone code", () => {
    const cu = createCuda();
    ok(cu.cuInit(0), 'cuInit');
    cu.runtime.dispose();
    expect(cu.cuMemAddressReserve(newBox(0n), G, 0, 0n, 0)).toBe(CU.CUDA_ERROR_DEINITIALIZED);
    const hip = createHip();
    hip.runtime.dispose();
    expect(hip.hipMemAddressReserve(newBox(0n), G, 0, null, 0)).toBe(H.hipErrorDeinitialized);
    const acl = createAcl();
    ok(acl.aclInit(), 'aclInit');
    acl.runtime.dispose();
    expect(acl.aclrtReserveMemAddress(newBox(0n), G, 0, 0n, 0)).toBe(A.ACL_ERROR_UNINITIALIZE);
  });
});
