import { describe, expect, it } from 'vitest';
import { createProcess } from '../../src/compose/create-runtime.js';
import type { CallOutcome, RuntimeCall, RuntimeObserver } from '../../src/core/observer.js';
import { Access } from '../../src/core/types.js';

const MiB = 1024 ** 2;

/** Every call it sees, as "op@depth" before and "op@depth ok|threw" after. */
function logger(): RuntimeObserver & { log: string[]; calls: RuntimeCall[] } {
  const log: string[] = [];
  const calls: RuntimeCall[] = [];
  return {
    log,
    calls,
    before(call) {
      calls.push(call);
      log.push(`${call.op}@${call.depth}`);
    },
    after(call, outcome: CallOutcome) {
      log.push(`${call.op}@${call.depth} ${outcome.ok ? 'ok' : 'threw'}`);
    },
  };
}

describe('runtime observers (Note [Runtime observers])', () => {
  it('see every argument of every operation, typed by the operation', () => {
    const o = logger();
    const { runtime } = createProcess({ observers: [o] });
    const r = runtime.malloc(0, 2 * MiB, { hint: 0x7f00_0000_0000 });
    const host = createProcess({ observers: [o] }).runtime;
    const va = host.reserve(2 * MiB);
    const a = host.create(2 * MiB, { location: { type: 'host', id: 0 }, handleTypes: 0, uncached: false });
    host.map(va.base, 2 * MiB, a);
    host.setAccess(va.base, 2 * MiB, [], Access.Read);
    const malloc = o.calls.find((c) => c.op === 'malloc');
    const setAccess = o.calls.find((c) => c.op === 'setAccess');
    // The two arguments an untyped wrapper once dropped: malloc's options and the CPU's grant.
    expect(malloc?.op === 'malloc' && malloc.args[2]).toEqual({ hint: 0x7f00_0000_0000 });
    expect(setAccess?.op === 'setAccess' && setAccess.args[3]).toBe(Access.Read);
    expect(r.base).toBe(0x7f00_0000_0000);
    runtime.dispose();
    host.dispose();
  });

  it('see a one-step malloc as one call: core takes its inner steps privately', () => {
    const o = logger();
    const { runtime } = createProcess({ observers: [o] });
    const r = runtime.malloc(0, 2 * MiB);
    runtime.mfree(r.base);
    expect(o.log).toEqual(['malloc@0', 'malloc@0 ok', 'mfree@0', 'mfree@0 ok']);
    runtime.dispose();
  });

  it('see a call that throws, and the caller gets its error unchanged', () => {
    const o = logger();
    const { runtime } = createProcess({ observers: [o] });
    expect(() => runtime.reserve(3)).toThrow(/invalid-value|granularity/);
    expect(o.log).toEqual(['reserve@0', 'reserve@0 threw']);
    // After a throw the depth is back at 0.
    runtime.reserve(2 * MiB);
    expect(o.log[2]).toBe('reserve@0');
    runtime.dispose();
  });

  it('are called in the order given, and a runtime without observers runs its own methods', () => {
    const order: string[] = [];
    const first: RuntimeObserver = { before: () => order.push('first') };
    const second: RuntimeObserver = { before: () => order.push('second') };
    const { runtime } = createProcess({ observers: [first, second] });
    runtime.reserve(2 * MiB);
    expect(order).toEqual(['first', 'second']);
    const plain = createProcess().runtime;
    expect(Object.hasOwn(plain, 'reserve')).toBe(false);
    runtime.dispose();
    plain.dispose();
  });
});
