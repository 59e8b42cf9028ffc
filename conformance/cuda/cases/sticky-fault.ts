/**
 * What the driver answers after work faulted on the device (issue 17; Note
 * [Faulted devices] in src/flavors/cuda/contexts.ts): the fault is made by
 * replaying a captured memset into memory unmapped since the capture (as
 * capture.replay.afterUnmap), which needs no kernel and no race. Then every
 * kind of call is asked once, with objects made before the fault, so that
 * each answer is about the fault and not about a bad argument; then what
 * ends the fault (on the H200: neither cuDevicePrimaryCtxReset nor the last
 * release) and whether it reaches another context (it does).
 *
 * Every case poisons its process (Note [Cases that may poison the context]).
 * Handles are compared, never recorded.
 */
import type { Box } from '../api.js';
import { CU_MEM_ACCESS_FLAGS_PROT_READWRITE as RW } from '../api.js';
import { type Define, pattern, type Trace } from './trace.js';

const N = 4096;
/** cuda.h's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL and CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT. */
const PTR_DEVICE_ORDINAL = 9;
const DEV_ATTR_SM_COUNT = 16;
/** The other CU_POINTER_ATTRIBUTE_* asked after a fault (cuda.h's values). */
const POINTER_ATTRIBUTES = {
  context: 1,
  memoryType: 2,
  rangeStart: 11,
  mapped: 13,
  accessFlags: 16,
  mappingBase: 19,
};

function current(t: Trace): bigint {
  const c = { value: 0n };
  return t.cu.cuCtxGetCurrent(c) === 0 ? c.value : 0n;
}

/** What made the fault: its stream, graph and executable graph. */
interface Fault {
  stream: bigint;
  graph: bigint;
  exec: bigint;
}

/**
 * Fault the current context: a graph whose memset targets a range unmapped
 * after the capture is launched on a stream of its own. The launch and the
 * stream's synchronisation are recorded. Returns what it made (undefined if a
 * step before the launch failed), destroyed at cleanup unless `ownObjects` is
 * false: then the caller destroys them (dropFault), as it must before a
 * primary context's reset, after which the driver follows a stale stream
 * (primaryDestroy.resetOldStreamDestroy crashed).
 */
function fault(t: Trace, ownObjects = true): Fault | undefined {
  const { base } = t.mapped(t.G, RW);
  const box = { value: 0n };
  const code = ownObjects ? 0 : t.call('faultStream', t.cu.cuStreamCreate(box, 0));
  const stream = ownObjects ? t.stream('faultStream') : code === 0 ? box.value : 0n;
  if (!base || !stream) return undefined;
  const f: Fault = { stream, graph: 0n, exec: 0n };
  const made = () => (ownObjects ? undefined : f);
  if (t.call('begin', t.cu.cuStreamBeginCapture(stream, 0)) !== 0) return made();
  t.call('memset', t.cu.cuMemsetD8Async(base, 0x11, N, stream));
  const graph = { value: 0n };
  if (t.call('end', t.cu.cuStreamEndCapture(stream, graph)) !== 0) return made();
  f.graph = graph.value;
  if (ownObjects) t.later('cuGraphDestroy', () => t.cu.cuGraphDestroy(f.graph));
  const exec = { value: 0n };
  if (t.call('instantiate', t.cu.cuGraphInstantiate(exec, graph.value, 0)) !== 0) return made();
  f.exec = exec.value;
  if (ownObjects) t.later('cuGraphExecDestroy', () => t.cu.cuGraphExecDestroy(f.exec));
  t.unmap(base, t.G);
  t.call('launch', t.cu.cuGraphLaunch(exec.value, stream));
  t.call('faultSynchronize', t.cu.cuStreamSynchronize(stream));
  return f;
}

/** Destroy what fault(t, false) made, recording each answer. */
function dropFault(t: Trace, f: Fault): void {
  if (f.exec) t.call('dropExec', t.cu.cuGraphExecDestroy(f.exec));
  if (f.graph) t.call('dropGraph', t.cu.cuGraphDestroy(f.graph));
  t.call('dropStream', t.cu.cuStreamDestroy(f.stream));
}

/** cuMemAlloc of n bytes, freed at cleanup unless freed by the case (`a.freed`). */
function allocation(t: Trace, n: number, label = 'cuMemAlloc'): { ptr: bigint; freed: boolean } {
  const box = { value: 0n };
  const a = { ptr: 0n, freed: false };
  if (t.call(label, t.cu.cuMemAlloc(box, n)) !== 0) return a;
  a.ptr = box.value;
  t.later('cuMemFree', () => (a.freed ? 0 : t.cu.cuMemFree(a.ptr)));
  return a;
}

/** An event, destroyed at cleanup unless destroyed by the case (`e.destroyed`). */
function event(t: Trace, label = 'cuEventCreate'): { handle: bigint; destroyed: boolean } {
  const box = { value: 0n };
  const e = { handle: 0n, destroyed: false };
  if (t.call(label, t.cu.cuEventCreate(box, 2)) !== 0) return e;
  e.handle = box.value;
  t.later('cuEventDestroy', () => (e.destroyed ? 0 : t.cu.cuEventDestroy(e.handle)));
  return e;
}

/** The calls that make, use and drop a stream, an event and device memory: the context's own objects. */
function contextCalls(t: Trace, prefix: string): void {
  t.call(`${prefix}ctxSynchronize`, t.cu.cuCtxSynchronize());
  const mem = { value: 0n };
  const alloc = t.cu.cuMemAlloc(mem, 1 << 20);
  t.call(`${prefix}memAlloc`, alloc);
  if (alloc === 0) t.call(`${prefix}memFree`, t.cu.cuMemFree(mem.value));
  const s = { value: 0n };
  const made = t.cu.cuStreamCreate(s, 0);
  t.call(`${prefix}streamCreate`, made);
  if (made === 0) t.call(`${prefix}streamDestroy`, t.cu.cuStreamDestroy(s.value));
  const e = { value: 0n };
  const ev = t.cu.cuEventCreate(e, 2);
  t.call(`${prefix}eventCreate`, ev);
  if (ev === 0) t.call(`${prefix}eventDestroy`, t.cu.cuEventDestroy(e.value));
  t.call(`${prefix}memGetInfo`, t.cu.cuMemGetInfo({ value: 0 }, { value: 0 }));
}

/**
 * Fault the primary context, destroy it by `destroy` (recorded as its
 * lower-case `what`), and ask for it anew: a retain, and if that is given,
 * the context's calls.
 */
function destroyThenRetain(t: Trace, what: string, destroy: (t: Trace) => number): void {
  const f = fault(t, false);
  if (!f) return;
  dropFault(t, f);
  t.call(what.toLowerCase(), destroy(t));
  t.call(`ctxSynchronizeAfter${what}`, t.cu.cuCtxSynchronize());
  const box = { value: 0n };
  const code = t.cu.cuDevicePrimaryCtxRetain(box, t.env.dev);
  t.call('retain', code);
  if (code !== 0) return;
  t.later('cuDevicePrimaryCtxRelease', () => t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
  t.call('setCurrent', t.cu.cuCtxSetCurrent(box.value));
  contextCalls(t, 'afterRetain:');
}

export function stickyFaultCases(def: Define): void {
  // Every kind of call once after the fault, each with objects made before it.
  def(
    'stickyFault.callsAfter',
    (t) => {
      const other = t.stream('otherStream');
      const ev = event(t);
      const e = ev.handle;
      const a = allocation(t, 1 << 20);
      const { base: vmm, h: vmmHandle } = t.mapped(t.G, RW);
      const host: Box<Uint8Array | null> = { value: null };
      const pinned = t.call('cuMemAllocHost', t.cu.cuMemAllocHost(host, N));
      if (pinned === 0 && host.value) {
        const p = host.value;
        t.later('cuMemFreeHost', () => t.cu.cuMemFreeHost(p));
      }
      if (!other || !e || !a.ptr || !vmm || !vmmHandle || !host.value) return;
      t.write(vmm, pattern(N, 5), 'fillBefore');
      if (!fault(t)) return;
      const bytes = host.value;

      // Synchronisation and queries of the context's streams and events.
      t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
      t.call('otherStreamSynchronize', t.cu.cuStreamSynchronize(other));
      t.call('otherStreamQuery', t.cu.cuStreamQuery(other));
      t.call('legacyStreamSynchronize', t.cu.cuStreamSynchronize(0n));
      t.call('eventRecord', t.cu.cuEventRecord(e, other));
      t.call('eventQuery', t.cu.cuEventQuery(e));
      t.call('eventSynchronize', t.cu.cuEventSynchronize(e));
      t.call('streamWaitEvent', t.cu.cuStreamWaitEvent(other, e, 0));
      t.call('isCapturing', t.cu.cuStreamIsCapturing(other, { value: -1 }));

      // Copies and sets, synchronous and on a stream.
      t.call('memcpyDtoH', t.cu.cuMemcpyDtoH(bytes, vmm, N));
      t.call('memcpyHtoD', t.cu.cuMemcpyHtoD(vmm, bytes, N));
      t.call('memcpyDtoD', t.cu.cuMemcpyDtoD(a.ptr, vmm, N));
      t.call('memsetD8', t.cu.cuMemsetD8(vmm, 1, N));
      t.call('memsetD8Async', t.cu.cuMemsetD8Async(vmm, 2, N, other));
      t.call('memcpyHtoDAsync', t.cu.cuMemcpyHtoDAsync(vmm, bytes, N, other));
      t.call('otherStreamSynchronizeAgain', t.cu.cuStreamSynchronize(other));

      // What the context owns: memory, host memory, streams, events.
      contextCalls(t, 'own:');
      const host2: Box<Uint8Array | null> = { value: null };
      const pinned2 = t.cu.cuMemAllocHost(host2, N);
      t.call('memAllocHost', pinned2);
      if (pinned2 === 0 && host2.value) t.call('memFreeHost', t.cu.cuMemFreeHost(host2.value));
      if (t.call('memFree', t.cu.cuMemFree(a.ptr)) === 0) a.freed = true;
      if (t.call('eventDestroy', t.cu.cuEventDestroy(e)) === 0) ev.destroyed = true;

      // The VMM calls: reservations and handles are the device's, not the context's.
      const r = { value: 0n };
      const reserved = t.cu.cuMemAddressReserve(r, t.G, 0, 0n, 0);
      t.call('addressReserve', reserved);
      const h = { value: 0n };
      const created = t.cu.cuMemCreate(h, t.G, t.prop(), 0);
      t.call('memCreate', created);
      if (reserved === 0 && created === 0) {
        t.call('memMap', t.cu.cuMemMap(r.value, t.G, 0, h.value, 0));
        t.call('memSetAccess', t.cu.cuMemSetAccess(r.value, t.G, [t.desc(RW)], 1));
        t.getAccess(r.value, 'memGetAccess');
        t.call('memUnmap', t.cu.cuMemUnmap(r.value, t.G));
      }
      if (created === 0) t.call('memRelease', t.cu.cuMemRelease(h.value));
      if (reserved === 0) t.call('addressFree', t.cu.cuMemAddressFree(r.value, t.G));
      t.props(vmmHandle, 'getPropertiesOfOld');
      t.retain(vmm, 'retainOfOld');
      t.gran('granularity', t.prop(), 0);

      // Pointer, context and device queries.
      const ord: Box<number | bigint> = { value: -1 };
      const pc = t.cu.cuPointerGetAttribute(ord, PTR_DEVICE_ORDINAL, vmm);
      t.call('pointerDeviceOrdinal', pc, pc === 0 ? Number(ord.value) : undefined);
      const rb = { value: 0n };
      const rs = { value: 0 };
      const rc = t.cu.cuMemGetAddressRange(rb, rs, vmm + 16n);
      t.call('addressRange', rc, rc === 0 ? [Number(vmm - rb.value), rs.value] : undefined);
      t.call('ctxGetCurrent', t.cu.cuCtxGetCurrent({ value: 0n }));
      t.call('ctxGetDevice', t.cu.cuCtxGetDevice({ value: -1 }));
      t.call('primaryState', t.cu.cuDevicePrimaryCtxGetState(t.env.dev, { value: -1 }, { value: -1 }));
      t.call('deviceGet', t.cu.cuDeviceGet({ value: -1 }, t.env.dev));
      t.call('deviceAttribute', t.cu.cuDeviceGetAttribute({ value: -1 }, DEV_ATTR_SM_COUNT, t.env.dev));
      t.call('deviceTotalMem', t.cu.cuDeviceTotalMem({ value: 0 }, t.env.dev));
      t.call('driverVersion', t.cu.cuDriverGetVersion({ value: 0 }));
      t.call('beginCapture', t.cu.cuStreamBeginCapture(other, 0));
      const g = { value: 0n };
      const ended = t.cu.cuStreamEndCapture(other, g);
      t.call('endCapture', ended);
      if (ended === 0 && g.value !== 0n) t.call('graphDestroy', t.cu.cuGraphDestroy(g.value));
    },
    true,
  );

  // What destroys a primary context (Note [Destroying a primary context]) does not end the fault: the
  // retain that would make it anew answers it. The recorder's process holds one retain to release.
  const destroys = {
    primaryReset: ['Reset', (t: Trace) => t.cu.cuDevicePrimaryCtxReset(t.env.dev)],
    releaseToZero: ['Release', (t: Trace) => t.cu.cuDevicePrimaryCtxRelease(t.env.dev)],
  } as const;
  for (const [name, [what, destroy]] of Object.entries(destroys))
    def(`stickyFault.${name}`, (t) => destroyThenRetain(t, what, destroy), true);

  // The calls stickyFault.callsAfter did not ask, with a graph captured before the fault to instantiate after it.
  def(
    'stickyFault.moreCallsAfter',
    (t) => {
      const primary = current(t);
      const other = t.stream('otherStream');
      const e1 = event(t, 'event1');
      const e2 = event(t, 'event2');
      const { base: vmm } = t.mapped(t.G, RW);
      const host: Box<Uint8Array | null> = { value: null };
      if (t.call('cuMemHostAlloc', t.cu.cuMemHostAlloc(host, N, 0)) === 0 && host.value) {
        const p = host.value;
        t.later('cuMemFreeHost', () => t.cu.cuMemFreeHost(p));
      }
      // A graph made before the fault, to instantiate and launch after it.
      let graph = 0n;
      if (other && vmm && t.call('beginClean', t.cu.cuStreamBeginCapture(other, 0)) === 0) {
        t.call('memsetClean', t.cu.cuMemsetD8Async(vmm, 3, N, other));
        const g = { value: 0n };
        if (t.call('endClean', t.cu.cuStreamEndCapture(other, g)) === 0) {
          graph = g.value;
          t.later('cuGraphDestroy', () => t.cu.cuGraphDestroy(graph));
        }
      }
      t.call('record1', t.cu.cuEventRecord(e1.handle, other));
      t.call('record2', t.cu.cuEventRecord(e2.handle, other));
      t.call('synchronizeClean', t.cu.cuStreamSynchronize(other));
      if (!other || !e1.handle || !e2.handle || !vmm || !host.value || !graph) return;
      if (!fault(t)) return;
      const bytes = host.value;

      t.call('memsetD16', t.cu.cuMemsetD16(vmm, 1, N / 2));
      t.call('memsetD32', t.cu.cuMemsetD32(vmm, 1, N / 4));
      t.call('memsetD32Async', t.cu.cuMemsetD32Async(vmm, 1, N / 4, other));
      t.call('memcpyUnified', t.cu.cuMemcpy(vmm + BigInt(N), vmm, N));
      t.call('memcpyAsyncUnified', t.cu.cuMemcpyAsync(vmm + BigInt(N), vmm, N, other));
      t.call('memcpyDtoHAsync', t.cu.cuMemcpyDtoHAsync(bytes, vmm, N, other));
      t.call('memcpyPeer', t.cu.cuMemcpyPeer(vmm + BigInt(N), primary, vmm, primary, N));
      t.call('eventElapsedTime', t.cu.cuEventElapsedTime({ value: 0 }, e1.handle, e2.handle));
      t.call('eventRecordWithFlags', t.cu.cuEventRecordWithFlags(e1.handle, other, 0));
      t.call('hostGetFlags', t.cu.cuMemHostGetFlags({ value: -1 }, bytes));
      t.call('hostGetDevicePointer', t.cu.cuMemHostGetDevicePointer({ value: 0n }, bytes, 0));
      const more: Box<Uint8Array | null> = { value: null };
      const hostAlloc = t.cu.cuMemHostAlloc(more, N, 0);
      t.call('memHostAlloc', hostAlloc);
      if (hostAlloc === 0 && more.value) t.call('memFreeHostOfNew', t.cu.cuMemFreeHost(more.value));
      for (const [name, attribute] of Object.entries(POINTER_ATTRIBUTES))
        t.call(`pointer:${name}`, t.cu.cuPointerGetAttribute({ value: -1 }, attribute, vmm));
      t.call('pointerAttributes', t.cu.cuPointerGetAttributes(1, [PTR_DEVICE_ORDINAL], [{ value: -1 }], vmm));
      t.call('pointerOfHost', t.cu.cuPointerGetAttribute({ value: -1 }, PTR_DEVICE_ORDINAL, bytes));
      t.call('captureInfo', t.cu.cuStreamGetCaptureInfo(other, { value: -1 }, null, null, null, null, null));
      t.call('exchangeMode', t.cu.cuThreadExchangeStreamCaptureMode({ value: 0 }));
      t.call('graphNodes', t.cu.cuGraphGetNodes(graph, null, { value: -1 }));
      const exec = { value: 0n };
      const inst = t.cu.cuGraphInstantiate(exec, graph, 0);
      t.call('graphInstantiate', inst);
      if (inst === 0) {
        t.call('graphLaunch', t.cu.cuGraphLaunch(exec.value, other));
        t.call('graphExecDestroy', t.cu.cuGraphExecDestroy(exec.value));
      }
      t.call('ctxSynchronizeV2', t.cu.cuCtxSynchronize_v2(primary));
      t.call('ctxGetDeviceV2', t.cu.cuCtxGetDevice_v2({ value: -1 }, primary));
      t.call('ctxPush', t.cu.cuCtxPushCurrent(primary));
      t.call('ctxPop', t.cu.cuCtxPopCurrent({ value: 0n }));
      t.call('setCurrentNull', t.cu.cuCtxSetCurrent(0n));
      t.call('setCurrentPrimary', t.cu.cuCtxSetCurrent(primary));
      t.call('canAccessPeer', t.cu.cuDeviceCanAccessPeer({ value: -1 }, t.env.dev, t.env.dev));
      t.call('enablePeerAccess', t.cu.cuCtxEnablePeerAccess(primary, 0));
      t.call('primaryRetain', t.cu.cuDevicePrimaryCtxRetain({ value: 0n }, t.env.dev));
      t.call('primaryRelease', t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
      t.call('errorName', t.cu.cuGetErrorName(719, { value: '' }));
    },
    true,
  );

  // A fault in a created context: the primary context beside it, and after the created one's destroy.
  def(
    'stickyFault.inCreatedContext',
    (t) => {
      const primary = current(t);
      // Cleanup runs last to first: these two run after the created context's destroy.
      t.later('primaryMemGetInfoAfterDestroy', () => t.cu.cuMemGetInfo({ value: 0 }, { value: 0 }));
      t.later('primaryCtxSynchronizeAfterDestroy', () => t.cu.cuCtxSynchronize());
      const box = { value: 0n };
      if (t.call('create', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
      const created = box.value;
      t.later('cuCtxDestroy', () => t.cu.cuCtxDestroy(created));
      if (!fault(t)) return;
      contextCalls(t, 'created:');
      t.call('setPrimary', t.cu.cuCtxSetCurrent(primary));
      contextCalls(t, 'primary:');
      t.call('setCreated', t.cu.cuCtxSetCurrent(created));
      t.call('created:ctxSynchronizeAgain', t.cu.cuCtxSynchronize());
      t.call('setPrimaryAgain', t.cu.cuCtxSetCurrent(primary));
    },
    true,
  );

  // A fault in the primary context: a context created afterwards, and the primary one from it.
  def(
    'stickyFault.thenCreateContext',
    (t) => {
      const primary = current(t);
      if (!fault(t)) return;
      const box = { value: 0n };
      const code = t.cu.cuCtxCreate(box, 0, t.env.dev);
      t.call('create', code);
      if (code !== 0) return;
      const created = box.value;
      t.later('cuCtxDestroy', () => t.cu.cuCtxDestroy(created));
      contextCalls(t, 'created:');
      t.call('setPrimary', t.cu.cuCtxSetCurrent(primary));
      t.call('primary:ctxSynchronize', t.cu.cuCtxSynchronize());
    },
    true,
  );
}
