/**
 * CUDA 13.0's cuCtxGetDevice_v2 and cuCtxSynchronize_v2 (the context as an
 * argument; cuda.h 13.0 keeps the plain names as they were): NULL, the
 * primary context, a created one that is not current, and a destroyed one.
 */
import type { Define, Trace } from './trace.js';

function current(t: Trace): bigint {
  const c = { value: 0n };
  return t.cu.cuCtxGetCurrent(c) === 0 ? c.value : 0n;
}

/** cuCtxGetDevice_v2 of `ctx`, recording the device when it answers. */
function deviceOf(t: Trace, label: string, ctx: bigint): void {
  const d = { value: -1 };
  const code = t.cu.cuCtxGetDevice_v2(d, ctx);
  t.call(label, code, code === 0 ? d.value : undefined);
}

export function contextV2Cases(def: Define): void {
  def('ctxV2.getDeviceAndSynchronize', (t) => {
    const primary = current(t);
    deviceOf(t, 'getDeviceNull', 0n);
    deviceOf(t, 'getDevicePrimary', primary);
    t.call('getDeviceNullBox', t.cu.cuCtxGetDevice_v2(null, primary));
    t.call('synchronizeNull', t.cu.cuCtxSynchronize_v2(0n));
    t.call('synchronizePrimary', t.cu.cuCtxSynchronize_v2(primary));
    const box = { value: 0n };
    if (t.call('create', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
    const created = box.value;
    t.later('cuCtxDestroy', () => t.cu.cuCtxDestroy(created));
    // The created context is current now; ask it while the primary one is.
    t.call('setPrimary', t.cu.cuCtxSetCurrent(primary));
    deviceOf(t, 'getDeviceCreated', created);
    t.call('synchronizeCreated', t.cu.cuCtxSynchronize_v2(created));
    t.see('primaryStillCurrent', current(t) === primary);
  });

  // No context current: NULL has none to answer for, a named one still answers.
  def('ctxV2.noCurrentContext', (t) => {
    const primary = current(t);
    t.call('setNull', t.cu.cuCtxSetCurrent(0n));
    deviceOf(t, 'getDeviceNull', 0n);
    t.call('synchronizeNull', t.cu.cuCtxSynchronize_v2(0n));
    deviceOf(t, 'getDevicePrimary', primary);
    t.call('synchronizePrimary', t.cu.cuCtxSynchronize_v2(primary));
    t.call('restore', t.cu.cuCtxSetCurrent(primary));
  });

  // A destroyed context: the driver may read what the handle pointed to.
  def(
    'ctxV2.destroyedContext',
    (t) => {
      const primary = current(t);
      const box = { value: 0n };
      if (t.call('create', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
      t.call('destroy', t.cu.cuCtxDestroy(box.value));
      if (current(t) !== primary) t.cu.cuCtxSetCurrent(primary);
      deviceOf(t, 'getDeviceDestroyed', box.value);
      t.call('synchronizeDestroyed', t.cu.cuCtxSynchronize_v2(box.value));
    },
    true,
  );
}
