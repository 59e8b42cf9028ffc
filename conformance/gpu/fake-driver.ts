/**
 * A stand-in for libcuda with the raw calling convention of driver.ts (one
 * function per DRIVER_API symbol, CUresult numbers; out-parameters as `_Out_`
 * one-element arrays or as typed arrays, structs as objects or as encoded
 * bytes, as koffi takes both: Note [Out-parameters as typed arrays]), played
 * by a process on a simulated machine. It lets the
 * CUDA backend, the proof script and the tests run their code paths where
 * there is no GPU. It is a harness, not a model of the driver: the real one's
 * answers are in conformance/results/h200-driver.json.
 *
 * Exported descriptors are real ones (of /dev/null), so that the backend's
 * close(2) through Node's fs closes something this process owns.
 */
import { openSync } from 'node:fs';
import type { Backend } from '../../src/backend/backend.js';
import type { CudaDriver } from '../../src/backends/cuda/driver.js';
import { declareDriverTypes, decodeAccessDesc, decodeProp } from '../../src/backends/cuda/driver-api.js';
import { createMachine, type MachineOptions } from '../../src/backends/sim/machine.js';
import { DEVICE_PRESETS } from '../../src/backends/sim/presets.js';
import { isVmmError } from '../../src/core/errors.js';
import type { Access, AllocationProperties } from '../../src/core/types.js';
import { CU_EVENT_DISABLE_TIMING, CU_MEM_LOCATION_TYPE_HOST } from '../../src/flavors/cuda/constants.js';
import { CUDA_ERROR_TABLE } from '../../src/flavors/cuda/error-table.js';

/** An out-parameter: a one-element array, or a typed array written in place (BigUint64Array for 64-bit values). */
type Out = unknown[] | BigUint64Array | Int32Array;
interface Loc {
  type: number;
  id: number;
}
interface Prop {
  type: number;
  requestedHandleTypes: number;
  location: Loc;
}

const HANDLE_BASE = 0x5550_0000_0000;
const CONTEXT_BASE = 0xc7_0000;
const STREAM_BASE = 0x5700_0000;
const EVENT_BASE = 0x5e00_0000;

export interface FakeDriver extends CudaDriver {
  readonly sim: Backend;
  /** Calls made, by symbol. */
  readonly calls: Map<string, number>;
}

/** A CudaDriver over a fresh simulated machine (default: one H200). */
export function createFakeDriver(options: MachineOptions = { devices: ['H200'] }): FakeDriver {
  const machine = createMachine(options);
  const sim = machine.spawn();
  const calls = new Map<string, number>();
  const handles = new Map<number, { h: number; size: number; props: AllocationProperties }>();
  const fds = new Map<number, number>();
  const ctxRefs = sim.devices.map(() => 0);
  let nextHandle = 1;
  let current = -1;

  const code = (work: () => void): number => {
    try {
      work();
      return 0;
    } catch (e) {
      if (isVmmError(e)) return CUDA_ERROR_TABLE[e.kind];
      throw e;
    }
  };
  const dev = (): number => {
    if (current < 0) throw Object.assign(new Error('no context'), { cu: 201 });
    return current;
  };
  const withCtx =
    (fn: (...a: never[]) => number) =>
    (...a: never[]): number =>
      current < 0 ? 201 : fn(...a);
  const parseProps = (p: Prop): AllocationProperties | undefined => {
    if (p.location.type === 1) {
      if (p.location.id < 0 || p.location.id >= sim.devices.length) return undefined;
      return {
        location: { type: 'device', id: p.location.id },
        handleTypes: p.requestedHandleTypes,
        uncached: false,
      };
    }
    return {
      location: { type: 'host', id: p.location.id },
      handleTypes: p.requestedHandleTypes,
      uncached: false,
    };
  };
  const streamId = (s: number | bigint): number => Number(s) - STREAM_BASE;
  /** A stream argument that may be the NULL stream. */
  const stream0 = (s: number | bigint): number => (Number(s) === 0 ? 0 : streamId(s));
  const eventId = (e: number | bigint): number => Number(e) - EVENT_BASE;
  /** Write an out-parameter as the driver would. */
  const put = (out: Out, v: number): void => {
    if (out instanceof BigUint64Array) out[0] = BigInt(v);
    else out[0] = v;
  };
  const propOf = (p: Prop | Uint8Array): Prop => (p instanceof Uint8Array ? decodeProp(p) : p);
  const descsOf = (
    d: { location: Loc; flags: number }[] | Uint8Array,
    count: number,
  ): { location: Loc; flags: number }[] =>
    d instanceof Uint8Array
      ? Array.from({ length: count }, (_, i) => decodeAccessDesc(d.subarray(12 * i, 12 * i + 12)))
      : d;

  const fns: Record<string, (...a: never[]) => number> = {
    cuInit: () => 0,
    cuDriverGetVersion: (out: Out) => {
      put(out, 13000);
      return 0;
    },
    cuDeviceGet: (out: Out, ordinal: number) => {
      if (ordinal < 0 || ordinal >= sim.devices.length) return 101;
      put(out, ordinal);
      return 0;
    },
    cuDeviceGetCount: (out: Out) => {
      put(out, sim.devices.length);
      return 0;
    },
    cuDeviceGetName: (buf: Buffer, len: number, d: number) => {
      const name = Buffer.from(`${sim.devices[d].name} (simulated)\0`);
      name.copy(buf, 0, 0, Math.min(len, name.length));
      return 0;
    },
    // The simulated H200's answers (Note [Device attributes]); an attribute it does not answer is INVALID_VALUE.
    cuDeviceGetAttribute: (out: Out, attribute: number, d: number) => {
      if (d < 0 || d >= sim.devices.length) return 101;
      const value = DEVICE_PRESETS.H200.driverAttributes.get(attribute);
      if (value === undefined) return 1;
      put(out, value);
      return 0;
    },
    cuDeviceCanAccessPeer: (out: Out, d: number, peer: number) => {
      if (d < 0 || d >= sim.devices.length || peer < 0 || peer >= sim.devices.length) return 101;
      put(out, d === peer ? 0 : 1);
      return 0;
    },
    cuDeviceTotalMem_v2: (out: Out, d: number) => {
      put(out, sim.devices[d].totalMemory);
      return 0;
    },
    cuDevicePrimaryCtxRetain: (out: Out, d: number) => {
      ctxRefs[d]++;
      put(out, CONTEXT_BASE + d);
      return 0;
    },
    cuDevicePrimaryCtxRelease_v2: (d: number) => {
      if (ctxRefs[d] === 0) return 201;
      ctxRefs[d]--;
      return 0;
    },
    cuCtxSetCurrent: (ctx: number) => {
      current = Number(ctx) === 0 ? -1 : Number(ctx) - CONTEXT_BASE;
      return 0;
    },
    cuCtxGetCurrent: (out: Out) => {
      put(out, current < 0 ? 0 : CONTEXT_BASE + current);
      return 0;
    },
    cuCtxSynchronize: withCtx(() => code(() => sim.synchronizeDevice(dev()))),
    cuMemGetAllocationGranularity: (out: Out, encoded: Prop | Uint8Array, option: number) => {
      const prop = propOf(encoded);
      const d = sim.devices[prop.location.type === 1 ? prop.location.id : 0] ?? sim.devices[0];
      put(out, option === 0 ? d.minimumGranularity : d.recommendedGranularity);
      return option === 0 || option === 1 ? 0 : 1;
    },
    cuMemAddressReserve: withCtx((out: Out, size: number, alignment: number, addr: number) =>
      code(() => {
        put(out, sim.reserve(size, Math.max(alignment, sim.devices[0].minimumGranularity), addr));
      }),
    ),
    cuMemAddressFree: (ptr: number, size: number) => code(() => sim.free(ptr, size)),
    cuMemCreate: (out: Out, size: number, prop: Prop | Uint8Array) => {
      const props = parseProps(propOf(prop));
      if (props === undefined) return 101;
      return code(() => {
        const h = sim.create(size, props);
        const value = HANDLE_BASE + nextHandle++ * 16;
        handles.set(value, { h, size, props });
        put(out, value);
      });
    },
    cuMemRelease: (handle: number) => {
      const held = handles.get(Number(handle));
      if (held === undefined) return 1; // The real driver ends the process here.
      handles.delete(Number(handle));
      return code(() => sim.release(held.h));
    },
    cuMemMap: (ptr: number, size: number, offset: number, handle: number) => {
      const held = handles.get(Number(handle));
      if (held === undefined) return 1;
      if (offset !== 0 || size !== held.size) return 801;
      return code(() => sim.map(ptr, size, held.h, offset));
    },
    cuMemUnmap: (ptr: number, size: number) => code(() => sim.unmap(ptr, size)),
    cuMemSetAccess: (
      ptr: number,
      size: number,
      encoded: { location: Loc; flags: number }[] | Uint8Array,
      count: number,
    ) =>
      code(() => {
        const descs = descsOf(encoded, count);
        for (let i = 0; i < count; i++) {
          // A HOST location is the CPU's grant (Note [Host access]).
          if (descs[i].location.type === CU_MEM_LOCATION_TYPE_HOST)
            sim.setHostAccess(ptr, size, descs[i].flags as Access);
          else sim.setAccess(ptr, size, descs[i].location.id, descs[i].flags as Access);
        }
      }),
    cuMemGetAllocationPropertiesFromHandle: (prop: Record<string, unknown> | Uint8Array, handle: number) => {
      const held = handles.get(Number(handle));
      if (held === undefined) return 1;
      const { location } = held.props;
      if (prop instanceof Uint8Array) {
        const v = new DataView(prop.buffer, prop.byteOffset, 32);
        v.setInt32(0, 1, true);
        v.setInt32(4, held.props.handleTypes, true);
        v.setInt32(8, location.type === 'device' ? 1 : 3, true);
        v.setInt32(12, location.id, true);
        return 0;
      }
      prop.type = 1;
      prop.requestedHandleTypes = held.props.handleTypes;
      prop.location = { type: location.type === 'device' ? 1 : 3, id: location.id };
      return 0;
    },
    cuMemExportToShareableHandle: (buf: Buffer, handle: number, type: number) => {
      const held = handles.get(Number(handle));
      if (held === undefined || type !== 1) return 1;
      return code(() => {
        const simFd = sim.exportFd(held.h);
        const fd = openSync('/dev/null', 'r');
        fds.set(fd, simFd);
        buf.writeInt32LE(fd, 0);
      });
    },
    cuMemImportFromShareableHandle: (out: Out, fd: number) => {
      const simFd = fds.get(Number(fd));
      if (simFd === undefined) return 999;
      return code(() => {
        const imported = sim.importFd(simFd);
        const value = HANDLE_BASE + nextHandle++ * 16;
        handles.set(value, {
          h: imported.handle,
          size: imported.size ?? 0,
          props: { ...imported.props, handleTypes: 0 },
        });
        put(out, value);
      });
    },
    cuMemGetInfo_v2: withCtx((free: Out, total: Out) =>
      code(() => {
        const info = sim.memoryInfo(dev());
        put(free, info.free);
        put(total, info.total);
      }),
    ),
    cuMemcpyHtoD_v2: withCtx((dst: number, src: Uint8Array, n: number) =>
      code(() => sim.write(dev(), dst, src.subarray(0, n), 0)),
    ),
    cuMemcpyDtoH_v2: withCtx((dst: Uint8Array, src: number, n: number) =>
      code(() => sim.read(dev(), src, dst.subarray(0, n), 0)),
    ),
    cuMemcpyDtoD_v2: withCtx((dst: number, src: number, n: number) =>
      code(() => sim.copy(dev(), dst, src, n, 0)),
    ),
    cuMemcpyHtoDAsync_v2: withCtx((dst: number, src: Uint8Array, n: number, s: number) =>
      code(() => sim.write(dev(), dst, src.subarray(0, n), streamId(s))),
    ),
    cuMemcpyDtoHAsync_v2: withCtx((dst: Uint8Array, src: number, n: number, s: number) =>
      code(() => sim.read(dev(), src, dst.subarray(0, n), streamId(s))),
    ),
    cuMemcpyDtoDAsync_v2: withCtx((dst: number, src: number, n: number, s: number) =>
      code(() => sim.copy(dev(), dst, src, n, streamId(s))),
    ),
    cuMemsetD8_v2: withCtx((dst: number, v: number, n: number) => code(() => sim.fill(dev(), dst, v, n, 0))),
    cuMemsetD8Async: withCtx((dst: number, v: number, n: number, s: number) =>
      code(() => sim.fill(dev(), dst, v, n, streamId(s))),
    ),
    cuStreamCreate: withCtx((out: Out) =>
      code(() => {
        put(out, STREAM_BASE + sim.createStream(dev()));
      }),
    ),
    cuStreamSynchronize: (s: number) => code(() => sim.synchronizeStream(streamId(s))),
    cuStreamDestroy_v2: (s: number) => code(() => sim.destroyStream(streamId(s))),
    // Events: the backend's own, on the simulated process (cuEventQuery's "not yet" is NOT_READY, 600).
    cuEventCreate: withCtx((out: Out, flags: number) =>
      code(() => {
        put(out, EVENT_BASE + sim.createEvent(dev(), (flags & CU_EVENT_DISABLE_TIMING) === 0));
      }),
    ),
    cuEventElapsedTime: (out: Out, a: number, b: number) =>
      code(() => put(out, sim.elapsedTime(eventId(a), eventId(b)))),
    cuEventRecord: (e: number, s: number) => code(() => sim.recordEvent(eventId(e), stream0(s))),
    cuEventRecordWithFlags: (e: number, s: number) => code(() => sim.recordEvent(eventId(e), stream0(s))),
    cuEventQuery: (e: number) => {
      let done = false;
      const c = code(() => {
        done = sim.queryEvent(eventId(e));
      });
      return c !== 0 ? c : done ? 0 : 600;
    },
    cuEventSynchronize: (e: number) => code(() => sim.synchronizeEvent(eventId(e))),
    cuEventDestroy_v2: (e: number) => code(() => sim.destroyEvent(eventId(e))),
    cuStreamWaitEvent: (s: number, e: number) => code(() => sim.streamWaitEvent(stream0(s), eventId(e))),
  };
  const driver: Record<string, unknown> = {
    libraryPath: '(simulated)',
    // Its addresses are the simulated process's, so the CPU's loads and stores go there too.
    processMemory: {
      read: (address: number, dst: Uint8Array) => sim.hostRead(address, dst),
      write: (address: number, src: Uint8Array) => sim.hostWrite(address, src),
    },
    types: declareDriverTypes(),
    sim,
    calls,
  };
  for (const [name, fn] of Object.entries(fns)) {
    driver[name] = (...args: never[]) => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return fn(...args);
    };
  }
  // Calls the backend never makes (the front ends answer them from core): present, and not supported.
  const unused = [
    'cuMemGetAccess',
    'cuMemRetainAllocationHandle',
    'cuMemAlloc_v2',
    'cuMemFree_v2',
    'cuCtxEnablePeerAccess',
    'cuCtxDisablePeerAccess',
    'cuMemGetAddressRange_v2',
    'cuPointerGetAttribute',
    'cuPointerGetAttributes',
    'cuMemAllocHost_v2',
    'cuMemFreeHost',
    'cuMemHostAlloc',
    'cuMemHostGetFlags',
    'cuMemHostGetDevicePointer_v2',
    'cuMemcpy',
    'cuMemcpyAsync',
    'cuMemcpyPeer',
    'cuMemsetD16_v2',
    'cuMemsetD32_v2',
    'cuStreamIsCapturing',
    'cuThreadExchangeStreamCaptureMode',
    'cuMemsetD16Async',
    'cuMemsetD32Async',
    'cuStreamBeginCapture_v2',
    'cuStreamEndCapture',
    'cuStreamGetCaptureInfo_v3',
    'cuGraphInstantiateWithFlags',
    'cuGraphLaunch',
    'cuGraphDestroy',
    'cuGraphExecDestroy',
    'cuGraphGetNodes',
    'cuCtxCreate_v2',
    'cuCtxCreate_v4',
    'cuCtxGetDevice_v2',
    'cuCtxSynchronize_v2',
    'cuCtxDestroy_v2',
    'cuCtxPushCurrent_v2',
    'cuCtxPopCurrent_v2',
    'cuEventElapsedTime_v2',
    'cuCtxGetDevice',
    'cuDevicePrimaryCtxGetState',
    'cuDevicePrimaryCtxReset_v2',
    'cuStreamQuery',
  ];
  for (const name of unused) {
    driver[name] = () => 801;
  }
  for (const name of ['cuGetErrorName', 'cuGetErrorString']) driver[name] = () => 1;
  return driver as unknown as FakeDriver;
}
