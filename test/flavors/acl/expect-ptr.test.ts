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
    expect(acl.runtime.describe()).toEqual(before);
    expect(acl.aclGetRecentErrMsg()).toMatch(/is not free/);
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

  it("the alignment is the driver's: the size's power of two (at least 2 MiB), 1 GiB past 512 MiB", () => {
    const acl = ready();
    const GiB = 1n << 30n;
    const start = 0x7100_0000_0000n; // 1 GiB aligned
    const cases: [number, bigint][] = [
      [3 * G, start + BigInt(G)], // 6 MiB needs 8 MiB
      [4 * G + 1, start + BigInt(4 * G)], // just past 8 MiB needs 16 MiB
      [300 * G, start + 256n * BigInt(G)], // 600 MiB needs 1 GiB
      [512 * G + 1, start + GiB / 2n], // past 1 GiB needs 1 GiB
    ];
    const before = acl.runtime.describe();
    for (const [size, at] of cases) {
      const p = { value: 0n };
      expect(acl.aclrtReserveMemAddress(p, size, 0, at, 0), `${size} at 0x${at.toString(16)}`).toBe(
        C.ACL_ERROR_RT_PARAM_INVALID,
      );
      expect(acl.aclGetRecentErrMsg()).toMatch(/-aligned/);
      expect(p.value).toBe(0n);
    }
    expect(acl.runtime.describe()).toEqual(before);
    acl.dispose();
  });
});
