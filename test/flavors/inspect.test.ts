/** The inspection view from code (src/flavors/inspect.ts); `vmmkit inspect` prints it (test/cli/inspect.test.ts). */
import { describe, expect, it } from 'vitest';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import { inspect } from '../../src/flavors/inspect.js';
import { cudaWithContext } from './cuda/helpers.js';

describe('inspect', () => {
  it('inspect(process) from code, in CUDA’s and ACL’s words', () => {
    const cu = cudaWithContext(); // cuInit, device 0's primary context current, each step checked
    const ptr = { value: 0n };
    expect(cu.cuMemAddressReserve(ptr, 2 * 1024 * 1024, 0, 0n, 0)).toBe(0);
    expect(inspect(cu)).toContain('address reservation 0x');
    expect(inspect(cu).split('\n')[0]).toMatch(/^CUDA process \d+ \(1 x /);
    const acl = createAcl();
    expect(inspect(acl)).toContain('(nothing reserved, mapped or allocated)');
    expect(inspect(acl.runtime)).toMatch(/^process \d+/);
  });

  it('knows a front end by its vendor, and takes another vendor when asked', () => {
    const hip = createHip();
    expect([hip.vendor, createCuda().vendor, createAcl().vendor]).toEqual(['HIP', 'CUDA', 'ACL']);
    expect(inspect(hip).split('\n')[0]).toMatch(/^HIP process \d+/);
    expect(inspect(hip, 'CUDA').split('\n')[0]).toMatch(/^CUDA process \d+/);
    expect(inspect(hip.runtime, 'HIP').split('\n')[0]).toMatch(/^HIP process \d+/);
    // A wrapper of one's own that carries a runtime is shown in vmmkit's words.
    expect(inspect({ runtime: hip.runtime })).toMatch(/^process \d+/);
  });
});
