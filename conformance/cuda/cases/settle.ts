/**
 * Issue 17, item 4's "settle" list: what the driver answers for a destroyed
 * event in every call that takes one, for cuCtxSetCurrent(NULL) with a
 * context stack, and for copies, sets, waits and records on a stream of
 * another context of the same device.
 */
import type { Box } from '../api.js';
import { type Define, pattern, type Trace } from './trace.js';

/** cuda.h's CU_EVENT_DISABLE_TIMING. */
const CU_EVENT_DISABLE_TIMING = 2;

function current(t: Trace): bigint {
  const box = { value: 0n };
  return t.cu.cuCtxGetCurrent(box) === 0 ? box.value : -1n;
}

/** An event made, its create's code recorded; 0n if it failed. */
function event(t: Trace, label: string, flags = 0): bigint {
  const box = { value: 0n };
  if (t.call(label, t.cu.cuEventCreate(box, flags)) !== 0) return 0n;
  return box.value;
}

/** The calls that take an event, each given a destroyed one (`dead`); `live` is a recorded, completed timing event. */
const ON_DESTROYED: Readonly<Record<string, (t: Trace, dead: bigint, live: bigint, s: bigint) => number>> = {
  record: (t, dead) => t.cu.cuEventRecord(dead, 0n),
  recordOnStream: (t, dead, _live, s) => t.cu.cuEventRecord(dead, s),
  recordWithFlags: (t, dead) => t.cu.cuEventRecordWithFlags(dead, 0n, 0),
  synchronize: (t, dead) => t.cu.cuEventSynchronize(dead),
  query: (t, dead) => t.cu.cuEventQuery(dead),
  destroy: (t, dead) => t.cu.cuEventDestroy(dead),
  elapsedStart: (t, dead, live) => t.cu.cuEventElapsedTime({ value: -1 }, dead, live),
  elapsedEnd: (t, dead, live) => t.cu.cuEventElapsedTime({ value: -1 }, live, dead),
  elapsedV2Start: (t, dead, live) => t.cu.cuEventElapsedTime_v2({ value: -1 }, dead, live),
  elapsedV2End: (t, dead, live) => t.cu.cuEventElapsedTime_v2({ value: -1 }, live, dead),
  waitNullStream: (t, dead) => t.cu.cuStreamWaitEvent(0n, dead, 0),
  waitOnStream: (t, dead, _live, s) => t.cu.cuStreamWaitEvent(s, dead, 0),
};

/** Which of the named contexts a handle is (never the handle itself, which differs run to run). */
function which(ctx: bigint, names: Readonly<Record<string, bigint>>): string | number {
  if (ctx === 0n) return 0;
  if (ctx === -1n) return -1;
  for (const [name, h] of Object.entries(names)) if (h === ctx) return name;
  return 'other';
}

export function settleCases(def: Define): void {
  // One case a call: the driver reads a destroyed event's freed object, which may end the process.
  for (const [name, call] of Object.entries(ON_DESTROYED)) {
    def(
      `settle.destroyedEvent.${name}`,
      (t) => {
        const s = t.stream();
        const live = event(t, 'createLive');
        if (live) t.later('cuEventDestroy', () => t.cu.cuEventDestroy(live));
        const dead = event(t, 'createDead');
        if (!s || !live || !dead) return;
        t.call('recordLive', t.cu.cuEventRecord(live, 0n));
        t.call('recordDead', t.cu.cuEventRecord(dead, 0n));
        t.call('synchronizeLive', t.cu.cuEventSynchronize(live));
        t.call('destroyDead', t.cu.cuEventDestroy(dead));
        t.call(name, call(t, dead, live, s));
        t.call('streamSynchronize', t.cu.cuStreamSynchronize(s));
      },
      true,
    );
  }

  // cuCtxSetCurrent(NULL) with two created contexts pushed over the primary one.
  def('settle.setCurrentNullWithStack', (t) => {
    const primary = current(t);
    const a = { value: 0n };
    const b = { value: 0n };
    if (t.call('createA', t.cu.cuCtxCreate(a, 0, t.env.dev)) !== 0) return;
    if (t.call('createB', t.cu.cuCtxCreate(b, 0, t.env.dev)) === 0) {
      const names = { primary, a: a.value, b: b.value };
      const see = (label: string) => t.see(`${label}:current`, which(current(t), names));
      see('afterCreates');
      t.call('setNull', t.cu.cuCtxSetCurrent(0n));
      see('setNull');
      const getBox = { value: -1n };
      const got = t.cu.cuCtxGetCurrent(getBox);
      t.call('getCurrent', got, got === 0 ? which(getBox.value, names) : undefined);
      // Pop until the driver refuses (at most four): what each pop hands back and what is current after it.
      for (let i = 1; i <= 4; i++) {
        const popped: Box<bigint> = { value: -1n };
        const code = t.cu.cuCtxPopCurrent(popped);
        t.call(`pop${i}`, code, code === 0 ? which(popped.value, names) : undefined);
        see(`pop${i}`);
        if (code !== 0) break;
      }
      t.call('pushB', t.cu.cuCtxPushCurrent(b.value));
      see('pushB');
      t.call('pushA', t.cu.cuCtxPushCurrent(a.value));
      see('pushA');
      t.call('setNullAgain', t.cu.cuCtxSetCurrent(0n));
      see('setNullAgain');
      t.call('pushNull', t.cu.cuCtxPushCurrent(0n));
      see('pushNull');
      t.call('destroyB', t.cu.cuCtxDestroy(b.value));
      see('destroyB');
    }
    t.call('destroyA', t.cu.cuCtxDestroy(a.value));
    if (current(t) !== primary) t.cu.cuCtxSetCurrent(primary);
    t.see('primaryCurrentAtEnd', current(t) === primary);
  });

  // A stream (and an event) of a created context used while the primary context is current, on one device.
  def('settle.otherContextStream', (t) => {
    const primary = current(t);
    const { base, h } = t.mapped(t.G);
    if (!base || !h) return;
    const c = { value: 0n };
    if (t.call('ctxCreate', t.cu.cuCtxCreate(c, 0, t.env.dev)) !== 0) return;
    const s = { value: 0n };
    const e = { value: 0n };
    t.call('streamCreateInCreated', t.cu.cuStreamCreate(s, 0));
    t.call('eventCreateInCreated', t.cu.cuEventCreate(e, CU_EVENT_DISABLE_TIMING));
    t.call('setPrimary', t.cu.cuCtxSetCurrent(primary));
    const pe = { value: 0n };
    t.call('eventCreateInPrimary', t.cu.cuEventCreate(pe, CU_EVENT_DISABLE_TIMING));
    const data = pattern(4096, 90);
    const sc = s.value;
    t.call('HtoDAsync', t.cu.cuMemcpyHtoDAsync(base, data, data.length, sc));
    t.call('DtoDAsync', t.cu.cuMemcpyDtoDAsync(base + 8192n, base, data.length, sc));
    t.call('memsetD8Async', t.cu.cuMemsetD8Async(base + 16384n, 0x3c, 64, sc));
    t.call('memcpyAsync', t.cu.cuMemcpyAsync(base + 24576n, data, data.length, sc));
    const back = new Uint8Array(data.length);
    t.call('DtoHAsync', t.cu.cuMemcpyDtoHAsync(back, base + 8192n, data.length, sc));
    t.call('recordOwnEvent', t.cu.cuEventRecord(e.value, sc));
    t.call('recordPrimaryEvent', t.cu.cuEventRecord(pe.value, sc));
    t.call('recordPrimaryEventOnNull', t.cu.cuEventRecord(pe.value, 0n));
    t.call('waitOwnEvent', t.cu.cuStreamWaitEvent(sc, e.value, 0));
    t.call('waitPrimaryEvent', t.cu.cuStreamWaitEvent(sc, pe.value, 0));
    t.call('streamSynchronize', t.cu.cuStreamSynchronize(sc));
    t.call('eventSynchronize', t.cu.cuEventSynchronize(e.value));
    t.see('DtoHAsyncBytes', Buffer.from(back).equals(Buffer.from(data)));
    t.readEquals(base + 8192n, data, 'readDtoD');
    t.readEquals(base + 16384n, new Uint8Array(64).fill(0x3c), 'readMemset');
    t.readEquals(base + 24576n, data, 'readMemcpyAsync');
    t.call('destroyStreamFromPrimary', t.cu.cuStreamDestroy(sc));
    t.call('destroyPrimaryEvent', t.cu.cuEventDestroy(pe.value));
    t.call('setCreated', t.cu.cuCtxSetCurrent(c.value));
    t.call('eventDestroy', t.cu.cuEventDestroy(e.value));
    t.call('ctxDestroy', t.cu.cuCtxDestroy(c.value));
    if (current(t) !== primary) t.cu.cuCtxSetCurrent(primary);
  });
}
