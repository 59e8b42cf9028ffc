/**
 * Issue 10: the default report hook of a front end prints one line per
 * internal problem, with the stack only when VMMKIT_STACKS asks for it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createCuda } from '../../src/entry/processes.js';

/** A CUDA process whose runtime's synchronize fails with a bug (not a VmmError). */
function brokenProcess() {
  const cu = createCuda();
  const b = { value: 0n };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  cu.cuCtxSetCurrent(b.value);
  (cu.runtime as unknown as { synchronize: () => void }).synchronize = () => {
    throw new TypeError('a bug\nwith a second line');
  };
  return cu;
}

describe('the default report hook', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });

  it('prints one line: what failed and the error, no stack', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    vi.stubEnv('VMMKIT_STACKS', '');
    const cu = brokenProcess();
    expect(cu.cuCtxSynchronize()).toBe(999);
    expect(warn).toHaveBeenCalledTimes(1);
    const printed = warn.mock.calls[0]?.join(' ') ?? '';
    expect(printed).toBe('vmmkit: internal error in a CUDA call: TypeError: a bug');
    cu.dispose();
  });

  it('adds the stack when VMMKIT_STACKS is set', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    vi.stubEnv('VMMKIT_STACKS', '1');
    const cu = brokenProcess();
    expect(cu.cuCtxSynchronize()).toBe(999);
    const printed = warn.mock.calls[0]?.join(' ') ?? '';
    expect(printed.split('\n')[0]).toBe('vmmkit: internal error in a CUDA call: TypeError: a bug');
    expect(printed).toMatch(/\n\s+at /);
    cu.dispose();
  });

  it("a caller's hook still gets the error itself", () => {
    const seen: unknown[] = [];
    const cu = createCuda({ report: (_m, e) => seen.push(e) });
    const b = { value: 0n };
    cu.cuInit(0);
    cu.cuDevicePrimaryCtxRetain(b, 0);
    cu.cuCtxSetCurrent(b.value);
    (cu.runtime as unknown as { synchronize: () => void }).synchronize = () => {
      throw new RangeError('x');
    };
    expect(cu.cuCtxSynchronize()).toBe(999);
    expect(seen[0]).toBeInstanceOf(RangeError);
    cu.dispose();
  });
});
