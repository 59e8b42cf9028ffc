/**
 * Issue 10's missing calls, second batch: hipMemcpyHtoD / DtoH / DtoD,
 * cuMemsetD16 / D32 and hipMemsetD32, aclrtMemsetAsync, aclrtGetDevice,
 * hipStreamCreateWithFlags, hipGetLastError and hipPeekAtLastError.
 */
import { describe, expect, it } from 'vitest';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;
const MiB = 1024 * 1024;

function cuda(bytes = G) {
  const cu = createCuda();
  const b = { value: 0n };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  cu.cuCtxSetCurrent(b.value);
  cu.cuMemAlloc(b, bytes);
  return { cu, p: b.value };
}

describe('cuMemsetD16 and cuMemsetD32', () => {
  it('write the value little-endian, element by element, and nothing past N', () => {
    const { cu, p } = cuda();
    expect(cu.cuMemsetD8(p, 0xee, 64)).toBe(0);
    expect(cu.cuMemsetD16(p, 0xbeef, 3)).toBe(0);
    expect(cu.cuMemsetD32(p + 16n, 0x01020304, 2)).toBe(0);
    const back = new Uint8Array(32);
    expect(cu.cuMemcpyDtoH(back, p, 32)).toBe(0);
    expect([...back.subarray(0, 8)]).toEqual([0xef, 0xbe, 0xef, 0xbe, 0xef, 0xbe, 0xee, 0xee]);
    expect([...back.subarray(16, 28)]).toEqual([4, 3, 2, 1, 4, 3, 2, 1, 0xee, 0xee, 0xee, 0xee]);
    // A value wider than the element is cut to it, as C's unsigned short is.
    expect(cu.cuMemsetD16(p, 0x12345, 1)).toBe(0);
    expect(cu.cuMemcpyDtoH(back, p, 2)).toBe(0);
    expect([...back.subarray(0, 2)]).toEqual([0x45, 0x23]);
  });

  it('refuse a misaligned destination, a range past the memory, and non-integers, writing nothing', () => {
    const { cu, p } = cuda();
    expect(cu.cuMemsetD8(p, 0, 64)).toBe(0);
    expect(cu.cuMemsetD16(p + 1n, 1, 1)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemsetD32(p + 2n, 1, 1)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemsetD32(p, 1.5, 1)).toBe(CU.CUDA_ERROR_INVALID_VALUE);
    expect(cu.cuMemsetD32(p + BigInt(G - 8), 0x01020304, 4)).not.toBe(0);
    const back = new Uint8Array(8);
    expect(cu.cuMemcpyDtoH(back, p + BigInt(G - 8), 8)).toBe(0);
    expect([...back]).toEqual(new Array(8).fill(0));
  });

  it('past 64 MiB of pattern the set goes in pieces, after checking the whole range', () => {
    const { cu, p } = cuda(72 * MiB);
    const n = (66 * MiB) / 4;
    expect(cu.cuMemsetD32(p, 0x0a0b0c0d, n)).toBe(0);
    const back = new Uint8Array(8);
    // The last element and the one at the first piece's seam (1 MiB).
    expect(cu.cuMemcpyDtoH(back, p + BigInt(66 * MiB - 4), 4)).toBe(0);
    expect([...back.subarray(0, 4)]).toEqual([0x0d, 0x0c, 0x0b, 0x0a]);
    expect(cu.cuMemcpyDtoH(back, p + BigInt(MiB - 4), 8)).toBe(0);
    expect([...back]).toEqual([0x0d, 0x0c, 0x0b, 0x0a, 0x0d, 0x0c, 0x0b, 0x0a]);
    // Past the end: refused, and the start is untouched.
    expect(cu.cuMemsetD32(p, 0x01010102, (80 * MiB) / 4)).not.toBe(0);
    expect(cu.cuMemcpyDtoH(back, p, 4)).toBe(0);
    expect([...back.subarray(0, 4)]).toEqual([0x0d, 0x0c, 0x0b, 0x0a]);
  });
});

describe('HIP copies and sets with the direction in the name', () => {
  it('hipMemcpyHtoD, DtoD, DtoH and hipMemsetD32 move the bytes; wrong operands are refused', () => {
    const hip = createHip();
    const b = { value: 0n };
    expect(hip.hipMalloc(b, G)).toBe(0);
    const p = b.value;
    const src = new Uint8Array(16).map((_, i) => i);
    expect(hip.hipMemcpyHtoD(p, src, 16)).toBe(0);
    expect(hip.hipMemcpyDtoD(p + 64n, p, 16)).toBe(0);
    const back = new Uint8Array(16);
    expect(hip.hipMemcpyDtoH(back, p + 64n, 16)).toBe(0);
    expect([...back]).toEqual([...src]);
    expect(hip.hipMemsetD32(p, 0x11223344, 2)).toBe(0);
    expect(hip.hipMemcpyDtoH(back, p, 8)).toBe(0);
    expect([...back.subarray(0, 8)]).toEqual([0x44, 0x33, 0x22, 0x11, 0x44, 0x33, 0x22, 0x11]);
    expect(hip.hipMemsetD32(p + 2n, 1, 1)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipMemcpyHtoD(p, p as never, 16)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipMemcpyDtoH(p as never, p, 16)).toBe(H.hipErrorInvalidValue);
    hip.dispose();
  });

  it('hipStreamCreateWithFlags takes the two flags; hipGetLastError reads and clears, Peek only reads', () => {
    const hip = createHip();
    const s = { value: 0n };
    expect(hip.hipGetLastError()).toBe(H.hipSuccess);
    expect(hip.hipStreamCreateWithFlags(s, H.hipStreamNonBlocking)).toBe(0);
    expect(hip.hipStreamSynchronize(s.value)).toBe(0);
    expect(hip.hipStreamCreateWithFlags({ value: 0n }, 4)).toBe(H.hipErrorInvalidValue);
    expect(hip.hipStreamSynchronize(s.value)).toBe(0);
    // A success after the failure leaves the error in place.
    expect(hip.hipPeekAtLastError()).toBe(H.hipErrorInvalidValue);
    expect(hip.hipGetLastError()).toBe(H.hipErrorInvalidValue);
    expect(hip.hipGetLastError()).toBe(H.hipSuccess);
    expect(hip.hipStreamDestroy(s.value)).toBe(0);
    hip.dispose();
  });
});

describe('ACL', () => {
  it('aclrtGetDevice answers the current device, and none before aclrtSetDevice', () => {
    const acl = createAcl();
    acl.aclInit(null);
    const d = { value: -1 };
    expect(acl.aclrtGetDevice(d)).toBe(A.ACL_ERROR_RT_CONTEXT_NULL);
    expect(d.value).toBe(-1);
    expect(acl.aclrtSetDevice(0)).toBe(0);
    expect(acl.aclrtGetDevice(d)).toBe(0);
    expect(d.value).toBe(0);
    expect(acl.aclrtGetDevice(null as never)).toBe(A.ACL_ERROR_INVALID_PARAM);
    acl.dispose();
  });

  it('aclrtMemsetAsync sets on a stream or the default one; a stream it does not know is refused', () => {
    const acl = createAcl();
    acl.aclInit(null);
    acl.aclrtSetDevice(0);
    const b = { value: 0n };
    expect(acl.aclrtMalloc(b, G, 0)).toBe(0);
    const p = b.value;
    const s = { value: 0n };
    expect(acl.aclrtCreateStream(s)).toBe(0);
    expect(acl.aclrtMemsetAsync(p, 32, 7, 16, s.value)).toBe(0);
    expect(acl.aclrtMemsetAsync(p + 16n, 32, 8, 16, null)).toBe(0);
    expect(acl.aclrtSynchronizeStream(s.value)).toBe(0);
    const back = new Uint8Array(32);
    expect(acl.aclrtMemcpy(back, 32, p, 32, A.ACL_MEMCPY_DEVICE_TO_HOST)).toBe(0);
    expect([...back]).toEqual([...new Array(16).fill(7), ...new Array(16).fill(8)]);
    expect(acl.aclrtMemsetAsync(p, 32, 7, 16, 0x1234n)).toBe(A.ACL_ERROR_RT_PARAM_INVALID);
    acl.dispose();
  });
});
