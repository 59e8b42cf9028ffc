/**
 * cuCtxDestroy of a primary context (issue 17, item 2): what the driver
 * answers afterwards for the context itself and for the memory, streams,
 * events and VMM mappings made while it was current (Note [Destroying a
 * primary context], src/flavors/cuda/contexts.ts).
 *
 * The driver's own state is fragile here (its process once aborted at exit
 * after such a destroy), so every case may poison (Note [Cases that may
 * poison the context]: the recorder starts a fresh process after each), and
 * each object gets a case of its own, with the riskiest call last, so that one
 * crash loses one case. Handles are compared, never recorded.
 *
 * The H200 (driver 580, 2026-12-01 23:13 UTC) refused every one of these
 * destroys with CUDA_ERROR_INVALID_CONTEXT and changed nothing, so a label
 * "NoContext" names a call made after the refused destroy, with the primary
 * context still current. The cases after vmmNoContext ask what the older
 * record of ctx.destroyPrimary (0, in a process that had run other cases)
 * depended on, and what cuDevicePrimaryCtxReset destroys.
 */
import type { Box } from '../api.js';
import { CU_MEM_ACCESS_FLAGS_PROT_READWRITE as RW } from '../api.js';
import { type Define, pattern, type Trace } from './trace.js';

/** cuda.h's CU_POINTER_ATTRIBUTE_CONTEXT and _DEVICE_ORDINAL. */
const PTR_CONTEXT = 1;
const PTR_DEVICE_ORDINAL = 9;
/** 64 MiB: what cuMemGetInfo shows given back is well above the driver's own bookkeeping. */
const ALLOC_BYTES = 64 * 1024 * 1024;

function current(t: Trace): bigint {
  const c = { value: 0n };
  return t.cu.cuCtxGetCurrent(c) === 0 ? c.value : 0n;
}

function freeBytes(t: Trace): number {
  return t.memInfo()?.free ?? -1;
}

/** Which context is current, as the case can say it on any machine. */
function whichCurrent(t: Trace, label: string, named: Record<string, bigint>): void {
  const c = { value: -1n };
  const code = t.cu.cuCtxGetCurrent(c);
  let value: string | undefined;
  if (code === 0) {
    value = c.value === 0n ? 'none' : 'other';
    for (const [name, h] of Object.entries(named)) if (h !== 0n && c.value === h) value = name;
  }
  t.call(label, code, value);
}

function ctxDevice(t: Trace, label: string): void {
  const d = { value: -1 };
  const code = t.cu.cuCtxGetDevice(d);
  t.call(label, code, code === 0 ? d.value === t.env.dev : undefined);
}

function primaryState(t: Trace, label: string): void {
  const flags = { value: -1 };
  const active = { value: -1 };
  const code = t.cu.cuDevicePrimaryCtxGetState(t.env.dev, flags, active);
  t.call(label, code, code === 0 ? { flags: flags.value, active: active.value } : undefined);
}

/** cuDevicePrimaryCtxRetain after the destroy; records whether the handle is the destroyed one's. */
function retainAgain(t: Trace, old: bigint, label = 'retainAgain'): bigint {
  const box = { value: 0n };
  const code = t.cu.cuDevicePrimaryCtxRetain(box, t.env.dev);
  t.call(label, code, code === 0 ? box.value === old : undefined);
  return code === 0 ? box.value : 0n;
}

/** Retain the primary context again and make it current: the calls after it have a live context. */
function freshPrimary(t: Trace, old: bigint): bigint {
  const fresh = retainAgain(t, old);
  if (fresh) t.call('setFresh', t.cu.cuCtxSetCurrent(fresh));
  return fresh;
}

function destroyPrimary(t: Trace): bigint {
  const primary = current(t);
  t.call('destroyPrimary', t.cu.cuCtxDestroy(primary));
  return primary;
}

function pointerQueries(t: Trace, label: string, p: bigint, primary: bigint, fresh: bigint): void {
  const v: Box<number | bigint> = { value: -1 };
  let code = t.cu.cuPointerGetAttribute(v, PTR_DEVICE_ORDINAL, p);
  t.call(`${label}:deviceOrdinal`, code, code === 0 ? Number(v.value) : undefined);
  code = t.cu.cuPointerGetAttribute(v, PTR_CONTEXT, p);
  const which = (h: number | bigint) =>
    h === primary
      ? h === fresh
        ? 'oldAndFresh'
        : 'old'
      : h === fresh
        ? 'fresh'
        : h === 0n
          ? 'none'
          : 'other';
  t.call(`${label}:context`, code, code === 0 ? which(v.value) : undefined);
  const base = { value: 0n };
  const size = { value: 0 };
  code = t.cu.cuMemGetAddressRange(base, size, p + 4096n);
  t.call(`${label}:addressRange`, code, code === 0 ? [Number(p - base.value), size.value] : undefined);
}

export function primaryDestroyCases(def: Define): void {
  // The context alone: its handle, its device's primary-context state, and a new retain.
  def(
    'primaryDestroy.contextState',
    (t) => {
      primaryState(t, 'stateBefore');
      const primary = destroyPrimary(t);
      whichCurrent(t, 'currentAfterDestroy', { old: primary });
      ctxDevice(t, 'deviceAfterDestroy');
      t.call('synchronizeAfterDestroy', t.cu.cuCtxSynchronize());
      primaryState(t, 'stateAfterDestroy');
      const fresh = retainAgain(t, primary);
      primaryState(t, 'stateAfterRetain');
      if (!fresh) return;
      t.call('setFresh', t.cu.cuCtxSetCurrent(fresh));
      whichCurrent(t, 'currentAfterSet', { old: primary, fresh });
      ctxDevice(t, 'deviceFresh');
      t.call('synchronizeFresh', t.cu.cuCtxSynchronize());
      t.call('memGetInfoFresh', t.cu.cuMemGetInfo({ value: 0 }, { value: 0 }));
      t.call('setOld', t.cu.cuCtxSetCurrent(primary));
      t.call('synchronizeOld', t.cu.cuCtxSynchronize());
      t.call('setFreshAgain', t.cu.cuCtxSetCurrent(fresh));
      t.call('synchronizeFreshAgain', t.cu.cuCtxSynchronize());
    },
    true,
  );
  // cuDevicePrimaryCtxRelease of the retain the process made before the destroy.
  def(
    'primaryDestroy.releaseAfter',
    (t) => {
      const primary = destroyPrimary(t);
      t.call('release', t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
      primaryState(t, 'stateAfterRelease');
      t.call('releaseAgain', t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
      const fresh = freshPrimary(t, primary);
      if (fresh) t.call('synchronizeFresh', t.cu.cuCtxSynchronize());
      primaryState(t, 'stateFresh');
    },
    true,
  );
  def(
    'primaryDestroy.resetAfter',
    (t) => {
      const primary = destroyPrimary(t);
      t.call('reset', t.cu.cuDevicePrimaryCtxReset(t.env.dev));
      primaryState(t, 'stateAfterReset');
      whichCurrent(t, 'currentAfterReset', { old: primary });
      const fresh = freshPrimary(t, primary);
      if (fresh) t.call('synchronizeFresh', t.cu.cuCtxSynchronize());
      primaryState(t, 'stateFresh');
    },
    true,
  );
  // A context cuCtxCreate made on top of the primary one on the thread's stack.
  def(
    'primaryDestroy.createdOnTop',
    (t) => {
      const primary = current(t);
      const box = { value: 0n };
      if (t.call('ctxCreate', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
      const created = box.value;
      t.call('destroyPrimaryBelow', t.cu.cuCtxDestroy(primary));
      whichCurrent(t, 'currentAfterDestroy', { old: primary, created });
      t.call('synchronizeCreated', t.cu.cuCtxSynchronize());
      primaryState(t, 'stateAfterDestroy');
      t.call('destroyCreated', t.cu.cuCtxDestroy(created));
      whichCurrent(t, 'currentAfterCreatedGone', { old: primary, created });
      t.call('synchronizeAfterCreatedGone', t.cu.cuCtxSynchronize());
      const fresh = freshPrimary(t, primary);
      if (fresh) t.call('synchronizeFresh', t.cu.cuCtxSynchronize());
    },
    true,
  );
  // cuMemAlloc memory is the context's: asked about with no live context, then with a new primary one.
  def(
    'primaryDestroy.memAllocQueries',
    (t) => {
      const before = freeBytes(t);
      withMemAlloc(t, ALLOC_BYTES, (p) => {
        t.call('memset', t.cu.cuMemsetD8(p, 0x3c, ALLOC_BYTES));
        const held = freeBytes(t);
        t.see('allocationHeld', held >= 0 && held < before);
        const primary = destroyPrimary(t);
        pointerQueries(t, 'noContext', p, primary, 0n);
        const fresh = freshPrimary(t, primary);
        if (!fresh) return;
        const after = freeBytes(t);
        t.see('givenBack', after > held);
        t.see('freeAsBefore', after === before);
        pointerQueries(t, 'fresh', p, primary, fresh);
        t.call('copyFromOld', t.cu.cuMemcpyDtoH(new Uint8Array(64), p, 64));
      });
    },
    true,
  );
  def(
    'primaryDestroy.memFreeAfter',
    (t) => {
      const p = { value: 0n };
      if (t.call('memAlloc', t.cu.cuMemAlloc(p, ALLOC_BYTES)) !== 0) return;
      const primary = destroyPrimary(t);
      if (!freshPrimary(t, primary)) return;
      const before = freeBytes(t);
      t.call('memFreeOld', t.cu.cuMemFree(p.value));
      t.see('freeUnchanged', freeBytes(t) === before);
    },
    true,
  );
  def(
    'primaryDestroy.memFreeNoContext',
    (t) => {
      const p = { value: 0n };
      if (t.call('memAlloc', t.cu.cuMemAlloc(p, ALLOC_BYTES)) !== 0) return;
      destroyPrimary(t);
      t.call('memFreeOld', t.cu.cuMemFree(p.value));
    },
    true,
  );
  // Page-locked host memory (cuMemHostAlloc) is the context's too. Its bytes are not touched after.
  def(
    'primaryDestroy.hostAlloc',
    (t) => {
      const box: Box<Uint8Array | null> = { value: null };
      if (t.call('hostAlloc', t.cu.cuMemHostAlloc(box, 65536, 0)) !== 0 || !box.value) return;
      const host = box.value;
      const primary = destroyPrimary(t);
      const flags = { value: -1 };
      let code = t.cu.cuMemHostGetFlags(flags, host);
      t.call('hostGetFlagsNoContext', code, code === 0 ? flags.value : undefined);
      if (!freshPrimary(t, primary)) return;
      code = t.cu.cuMemHostGetFlags(flags, host);
      t.call('hostGetFlagsFresh', code, code === 0 ? flags.value : undefined);
      t.call('freeHostOld', t.cu.cuMemFreeHost(host));
    },
    true,
  );
  // A stream whose work has finished, asked about before and after a new primary context.
  def(
    'primaryDestroy.stream',
    (t) => {
      withMemAlloc(t, t.G, (p) => {
        const s = { value: 0n };
        if (t.call('streamCreate', t.cu.cuStreamCreate(s, 0)) !== 0) return;
        t.call('memsetAsync', t.cu.cuMemsetD8Async(p, 0x11, t.G, s.value));
        t.call('streamSynchronize', t.cu.cuStreamSynchronize(s.value));
        t.call('streamQuery', t.cu.cuStreamQuery(s.value));
        const primary = destroyPrimary(t);
        t.call('queryNoContext', t.cu.cuStreamQuery(s.value));
        t.call('synchronizeNoContext', t.cu.cuStreamSynchronize(s.value));
        if (!freshPrimary(t, primary)) return;
        t.call('queryFresh', t.cu.cuStreamQuery(s.value));
        t.call('synchronizeFresh', t.cu.cuStreamSynchronize(s.value));
        t.call('destroyFresh', t.cu.cuStreamDestroy(s.value));
      });
    },
    true,
  );
  def(
    'primaryDestroy.event',
    (t) => {
      withMemAlloc(t, t.G, (p) => {
        const e = { value: 0n };
        if (t.call('eventCreate', t.cu.cuEventCreate(e, 0)) !== 0) return;
        t.call('memsetAsync', t.cu.cuMemsetD8Async(p, 0x22, t.G, 0n));
        t.call('record', t.cu.cuEventRecord(e.value, 0n));
        t.call('eventSynchronize', t.cu.cuEventSynchronize(e.value));
        const primary = destroyPrimary(t);
        t.call('queryNoContext', t.cu.cuEventQuery(e.value));
        t.call('synchronizeNoContext', t.cu.cuEventSynchronize(e.value));
        if (!freshPrimary(t, primary)) return;
        t.call('queryFresh', t.cu.cuEventQuery(e.value));
        t.call('synchronizeFresh', t.cu.cuEventSynchronize(e.value));
        t.call('destroyFresh', t.cu.cuEventDestroy(e.value));
      });
    },
    true,
  );
  // VMM memory is the device's, not the context's: used and undone after a new primary context is current.
  def(
    'primaryDestroy.vmmFresh',
    (t) => {
      const data = pattern(4096, 17);
      const { base, h } = vmmMapping(t, data);
      if (!base || !h) return;
      const held = freeBytes(t);
      const primary = destroyPrimary(t);
      if (!freshPrimary(t, primary)) {
        undoVmm(t, 'undo', base, h);
        return;
      }
      t.see('stillHeld', freeBytes(t) <= held);
      t.getAccess(base, 'getAccessFresh');
      t.readEquals(base, data, 'readFresh');
      t.write(base, pattern(4096, 18), 'writeFresh');
      undoVmm(t, 'undo', base, h);
      t.see('givenBack', freeBytes(t) > held);
    },
    true,
  );
  // The same with no live context: what cuMemGetAccess, a copy and the undoing calls answer then.
  def(
    'primaryDestroy.vmmNoContext',
    (t) => {
      const data = pattern(4096, 19);
      const { base, h } = vmmMapping(t, data);
      if (!base || !h) return;
      const primary = destroyPrimary(t);
      t.getAccess(base, 'getAccessNoContext');
      t.readEquals(base, data, 'readNoContext');
      const undone = undoVmm(t, 'noContext', base, h);
      // Whatever the calls without a context refused, undone with a live one.
      if (undone || !freshPrimary(t, primary)) return;
      undoVmm(t, 'fresh', base, h);
    },
    true,
  );
  // The older ctx.destroyPrimary ran after ctx.createDestroy: the primary context current again by a pop.
  def(
    'primaryDestroy.afterCreatedContextGone',
    (t) => {
      const primary = current(t);
      const box = { value: 0n };
      if (t.call('ctxCreate', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
      t.call('destroyCreated', t.cu.cuCtxDestroy(box.value));
      whichCurrent(t, 'currentAfterPop', { primary });
      t.call('destroyPrimary', t.cu.cuCtxDestroy(primary));
      whichCurrent(t, 'currentAfterDestroy', { primary });
      t.call('setPrimaryAgain', t.cu.cuCtxSetCurrent(primary));
      t.call('synchronize', t.cu.cuCtxSynchronize());
      primaryState(t, 'state');
    },
    true,
  );
  // ... and after event.destroyedHandle, whose query reads the freed event.
  def(
    'primaryDestroy.afterDestroyedEventQueried',
    (t) => {
      const primary = current(t);
      const e = { value: 0n };
      if (t.call('eventCreate', t.cu.cuEventCreate(e, 0)) !== 0) return;
      t.call('eventDestroy', t.cu.cuEventDestroy(e.value));
      t.call('queryDestroyed', t.cu.cuEventQuery(e.value));
      t.call('destroyPrimary', t.cu.cuCtxDestroy(primary));
      t.call('synchronize', t.cu.cuCtxSynchronize());
      primaryState(t, 'state');
    },
    true,
  );
  // What cuDevicePrimaryCtxReset destroys of the current primary context, and what its handle answers after.
  // The H200 ended this one with SIGSEGV (2026-12-01 23:29 UTC); the cases after it ask the same in pieces.
  def(
    'primaryDestroy.resetWithObjects',
    (t) => {
      const primary = current(t);
      const p = { value: 0n };
      const s = { value: 0n };
      const e = { value: 0n };
      const before = freeBytes(t);
      if (t.call('memAlloc', t.cu.cuMemAlloc(p, ALLOC_BYTES)) !== 0) return;
      t.call('streamCreate', t.cu.cuStreamCreate(s, 0));
      t.call('eventCreate', t.cu.cuEventCreate(e, 0));
      const data = pattern(4096, 21);
      const { base, h } = vmmMapping(t, data);
      t.call('reset', t.cu.cuDevicePrimaryCtxReset(t.env.dev));
      whichCurrent(t, 'currentAfterReset', { primary });
      primaryState(t, 'stateAfterReset');
      t.call('synchronizeAfterReset', t.cu.cuCtxSynchronize());
      ctxDevice(t, 'deviceAfterReset');
      t.call('memGetInfoAfterReset', t.cu.cuMemGetInfo({ value: 0 }, { value: 0 }));
      const fresh = retainAgain(t, primary);
      primaryState(t, 'stateAfterRetain');
      t.call('synchronizeAfterRetain', t.cu.cuCtxSynchronize());
      t.see('memAllocGivenBack', freeBytes(t) >= before - t.G);
      pointerQueries(t, 'afterRetain', p.value, primary, fresh);
      t.call('streamQuery', t.cu.cuStreamQuery(s.value));
      t.call('eventQuery', t.cu.cuEventQuery(e.value));
      if (base && h) {
        t.getAccess(base, 'getAccessAfterRetain');
        t.readEquals(base, data, 'readAfterRetain');
        undoVmm(t, 'undo', base, h);
      }
      t.call('memFreeOld', t.cu.cuMemFree(p.value));
      t.call('streamDestroyOld', t.cu.cuStreamDestroy(s.value));
      t.call('eventDestroyOld', t.cu.cuEventDestroy(e.value));
      t.call('releaseAfterReset', t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
      t.call('releaseAgain', t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
    },
    true,
  );
  // resetWithObjects without the calls on the old stream and event, whose objects a reset may have freed.
  def(
    'primaryDestroy.resetReleases',
    (t) => {
      const primary = current(t);
      const p = { value: 0n };
      const before = freeBytes(t);
      if (t.call('memAlloc', t.cu.cuMemAlloc(p, ALLOC_BYTES)) !== 0) return;
      t.call('memset', t.cu.cuMemsetD8(p.value, 0x5c, ALLOC_BYTES));
      const data = pattern(4096, 22);
      const { base, h } = vmmMapping(t, data);
      t.call('reset', t.cu.cuDevicePrimaryCtxReset(t.env.dev));
      whichCurrent(t, 'currentAfterReset', { primary });
      primaryState(t, 'stateAfterReset');
      t.call('synchronizeAfterReset', t.cu.cuCtxSynchronize());
      ctxDevice(t, 'deviceAfterReset');
      t.call('memGetInfoAfterReset', t.cu.cuMemGetInfo({ value: 0 }, { value: 0 }));
      const fresh = retainAgain(t, primary);
      primaryState(t, 'stateAfterRetain');
      t.call('synchronizeAfterRetain', t.cu.cuCtxSynchronize());
      t.see('memAllocGivenBack', freeBytes(t) >= before - t.G);
      if (base && h) {
        t.getAccess(base, 'getAccessAfterRetain');
        t.readEquals(base, data, 'readAfterRetain');
        undoVmm(t, 'undo', base, h);
      }
      pointerQueries(t, 'afterRetain', p.value, primary, fresh);
      t.call('memFreeOld', t.cu.cuMemFree(p.value));
      t.call('releaseAfterReset', t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
      t.call('releaseAgain', t.cu.cuDevicePrimaryCtxRelease(t.env.dev));
    },
    true,
  );
  // A stream made before a reset, asked about after a retain: query, then destroy (each its own case).
  for (const op of ['query', 'destroy'] as const)
    def(
      op === 'query' ? 'primaryDestroy.resetOldStreamQuery' : 'primaryDestroy.resetOldStreamDestroy',
      (t) => {
        const primary = current(t);
        const s = { value: 0n };
        if (t.call('streamCreate', t.cu.cuStreamCreate(s, 0)) !== 0) return;
        t.call('reset', t.cu.cuDevicePrimaryCtxReset(t.env.dev));
        retainAgain(t, primary);
        t.call(op, op === 'query' ? t.cu.cuStreamQuery(s.value) : t.cu.cuStreamDestroy(s.value));
      },
      true,
    );
  // An event made before a reset, the same way.
  for (const op of ['query', 'destroy'] as const)
    def(
      op === 'query' ? 'primaryDestroy.resetOldEventQuery' : 'primaryDestroy.resetOldEventDestroy',
      (t) => {
        const primary = current(t);
        const e = { value: 0n };
        if (t.call('eventCreate', t.cu.cuEventCreate(e, 0)) !== 0) return;
        t.call('record', t.cu.cuEventRecord(e.value, 0n));
        t.call('reset', t.cu.cuDevicePrimaryCtxReset(t.env.dev));
        retainAgain(t, primary);
        t.call(op, op === 'query' ? t.cu.cuEventQuery(e.value) : t.cu.cuEventDestroy(e.value));
      },
      true,
    );
}

/**
 * cuMemAlloc of `bytes`, recorded, then `body`; the memory is freed after it
 * without a record, so that a simulated run ends as clean as the driver's
 * process does (the recorder ends it after the case). Added after the H200
 * recorded these cases, whose records hold no such call.
 */
function withMemAlloc(t: Trace, bytes: number, body: (p: bigint) => void): void {
  const p = { value: 0n };
  if (t.call('memAlloc', t.cu.cuMemAlloc(p, bytes)) !== 0) return;
  try {
    body(p.value);
  } finally {
    t.cu.cuMemFree(p.value);
  }
}

/** One granule reserved, created, mapped read-write and written, each step recorded; undone by undoVmm. */
function vmmMapping(t: Trace, data: Uint8Array): { base: bigint; h: bigint } {
  const base = { value: 0n };
  const h = { value: 0n };
  if (t.call('reserve', t.cu.cuMemAddressReserve(base, t.G, 0, 0n, 0)) !== 0) return { base: 0n, h: 0n };
  if (t.call('create', t.cu.cuMemCreate(h, t.G, t.prop(), 0)) !== 0) {
    t.call('addressFree', t.cu.cuMemAddressFree(base.value, t.G));
    return { base: 0n, h: 0n };
  }
  t.call('map', t.cu.cuMemMap(base.value, t.G, 0, h.value, 0));
  t.call('setAccess', t.cu.cuMemSetAccess(base.value, t.G, [t.desc(RW)], 1));
  t.write(base.value, data);
  return { base: base.value, h: h.value };
}

/** Unmap, release and free one granule's mapping; true when all three succeeded. */
function undoVmm(t: Trace, label: string, base: bigint, h: bigint): boolean {
  const unmap = t.call(`${label}:unmap`, t.cu.cuMemUnmap(base, t.G));
  const release = t.call(`${label}:release`, t.cu.cuMemRelease(h));
  const free = t.call(`${label}:addressFree`, t.cu.cuMemAddressFree(base, t.G));
  return unmap === 0 && release === 0 && free === 0;
}
