/**
 * Errors that keep the driver's code (Note [Driver codes] in src/core/errors.ts):
 * a failure the CUDA backend reports carries its CUresult, which the CUDA
 * front end answers as it is; HIP and ACL over the same backend answer their
 * own table's code for the failure's kind, and a failure with no driver code
 * goes through the table for CUDA too.
 */
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { CudaDriverError } from '../../src/backends/cuda/checked.js';
import { createMachine } from '../../src/backends/sim/machine.js';
import { vmmError } from '../../src/core/errors.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;

/** A simulated process whose device copies fail with `error`, as a driver's asynchronous fault would. */
function failingCopies(error: Error): Backend {
  const inner = createMachine({ devices: ['H200'] }).spawn();
  return new Proxy(inner, {
    get(target, name, receiver) {
      if (name === 'write' || name === 'read') {
        return () => {
          throw error;
        };
      }
      const value = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Backend;
}

/** A host-to-device copy into freshly granted memory, through each front end; its answer. */
const COPY = {
  CUDA(backend: Backend): number {
    const cu = createCuda({ backend });
    const ctx = { value: 0n };
    const ptr = { value: 0n };
    const h = { value: 0n };
    cu.cuInit(0);
    cu.cuDevicePrimaryCtxRetain(ctx, 0);
    cu.cuCtxSetCurrent(ctx.value);
    expect(cu.cuMemAddressReserve(ptr, G, 0, 0n, 0)).toBe(CU.CUDA_SUCCESS);
    const prop = {
      type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: 0,
      location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
    };
    expect(cu.cuMemCreate(h, G, prop, 0)).toBe(CU.CUDA_SUCCESS);
    expect(cu.cuMemMap(ptr.value, G, 0, h.value, 0)).toBe(CU.CUDA_SUCCESS);
    const rw = [{ location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }, flags: 3 }];
    expect(cu.cuMemSetAccess(ptr.value, G, rw, 1)).toBe(CU.CUDA_SUCCESS);
    return cu.cuMemcpyHtoD(ptr.value, new Uint8Array(16), 16);
  },
  HIP(backend: Backend): number {
    const hip = createHip({ backend });
    const ptr = { value: 0n };
    expect(hip.hipMalloc(ptr, G)).toBe(H.hipSuccess);
    return hip.hipMemcpyHtoD(ptr.value, new Uint8Array(16), 16);
  },
  ACL(backend: Backend): number {
    const acl = createAcl({ backend });
    const ptr = { value: 0n };
    acl.aclInit(null);
    acl.aclrtSetDevice(0);
    expect(acl.aclrtMalloc(ptr, G, 0)).toBe(A.ACL_SUCCESS);
    return acl.aclrtMemcpy(ptr.value, 16, new Uint8Array(16), 16, A.ACL_MEMCPY_HOST_TO_DEVICE);
  },
};

describe("a driver's own code", () => {
  const illegal = () => new CudaDriverError('cuMemcpyHtoD', CU.CUDA_ERROR_ILLEGAL_ADDRESS);

  it('rides on the VmmError beside its kind', () => {
    const e = illegal();
    expect(e.kind).toBe('access-denied');
    expect(e.driver).toEqual({ vendor: 'CUDA', code: 700 });
  });

  it('CUDA answers CUDA_ERROR_ILLEGAL_ADDRESS as the driver did, not its table code for access-denied', () => {
    expect(COPY.CUDA(failingCopies(illegal()))).toBe(CU.CUDA_ERROR_ILLEGAL_ADDRESS);
  });

  it("HIP and ACL answer their own table's code for the kind", () => {
    expect(COPY.HIP(failingCopies(illegal()))).toBe(H.hipErrorIllegalAddress);
    expect(COPY.ACL(failingCopies(illegal()))).toBe(A.ACL_ERROR_RT_NO_PERMISSION);
  });

  it("a failure with no driver code goes through CUDA's table", () => {
    expect(COPY.CUDA(failingCopies(vmmError('access-denied', 'no grant')))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
  });

  it('a code of another vendor is not answered as it is', () => {
    const foreign = vmmError('access-denied', 'a HIP driver said so', { vendor: 'HIP', code: 12345 });
    expect(COPY.CUDA(failingCopies(foreign))).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(COPY.HIP(failingCopies(foreign))).toBe(12345);
  });
});
