import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/acl/constants.js';
import { G, ready } from './helpers.js';

/**
 * expectPtr is a fixed address, not a hint (Note [ACL expectPtr]): CANN's
 * reference, runtime and driver refuse a taken or misaligned one rather than
 * place the range elsewhere, so a refusal must leave nothing reserved.
 */
describe('aclrtReserveMemAddress with an expectPtr', () => {
  it('a taken one is refused, never moved: the box is untouched and nothing more is reserved', () => {
    const acl = ready();
    const taken = { value: 0n };
    expect(acl.aclrtReserveMemAddress(taken, 4 * G, 0, null, 0)).toBe(C.ACL_SUCCESS);
    const before = acl.runtime.describe();
    for (const at of [taken.value, taken.value + BigInt(G), taken.value + BigInt(3 * G)]) {
      const p = { value: 0n };
      expect(acl.aclrtReserveMemAddress(p, G, 0, at, 0)).toBe(C.ACL_ERROR_RT_PARAM_INVALID);
      expect(p.value).toBe(0n);
    }
    // A range that overlaps the taken one from below is refused too.
    const below = { value: 0n };
    expect(acl.aclrtReserveMemAddress(below, 2 * G, 0, taken.value - BigInt(G), 0)).toBe(
      C.ACL_ERROR_RT_PARAM_INVALID,
    );
    expect(acl.runtime.describe()).toEqual(before);
    expect(acl.aclGetRecentErrMsg()).toMatch(/expectPtr/);
    acl.dispose();
  });

  it('a misaligned one is refused before anything is reserved', () => {
    const acl = ready();
    const p = { value: 0n };
    const before = acl.runtime.describe();
    expect(acl.aclrtReserveMemAddress(p, G, 0, 0x7100_0000_1000n, 0)).toBe(C.ACL_ERROR_RT_PARAM_INVALID);
    expect(p.value).toBe(0n);
    expect(acl.runtime.describe()).toEqual(before);
    acl.dispose();
  });
});
