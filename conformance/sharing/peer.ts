/**
 * One process of a sharing scenario, driven through a front end's C calls:
 * the same steps whether the process is a simulated one on a shared machine
 * (the tests) or a real OS process on the GPU (conformance/gpu/share.ts runs
 * each peer in a child process, agent.ts). Every step answers plain JSON
 * (codes, numbers, base64 bytes), so it crosses a process boundary as is.
 */
import type { AclFlavor } from '../../src/flavors/acl/acl.js';
import * as A from '../../src/flavors/acl/constants.js';
import * as K from '../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../src/flavors/cuda/cuda.js';
import * as H from '../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../src/flavors/hip/hip.js';

export type FlavourName = 'cuda' | 'hip' | 'acl';

/** How a peer obtains another process's descriptor: pidfd_getfd for real, machine.passFd on the simulator. */
export type FdTaker = (fromPid: number, fd: number) => number;

export interface Answer {
  code: number;
  /** A handle, address, fd or token, as a number. */
  value?: number;
  /** Bytes read, base64. */
  bytes?: string;
  /** A struct read back. */
  props?: unknown;
}

/** The steps a scenario asks of a peer; every one answers a code (0: success) and maybe a value. */
export interface PeerSteps {
  pid(): Answer;
  freeMemory(): Answer;
  /** Physical memory of `size` bytes on device 0, exportable. */
  create(size: number): Answer;
  reserve(size: number): Answer;
  map(va: number, size: number, handle: number): Answer;
  /** Grant device 0 read-write over [va, va + size). */
  access(va: number, size: number): Answer;
  write(va: number, base64: string): Answer;
  read(va: number, size: number): Answer;
  copy(dst: number, src: number, size: number): Answer;
  unmap(va: number, size: number): Answer;
  release(handle: number): Answer;
  free(va: number, size: number): Answer;
  /** CUDA and HIP: a POSIX fd in this process. ACL: a token; `allow` the pids to whitelist, or 'any' (no pid check). */
  export(handle: number, allow: readonly number[] | 'any'): Answer;
  /** ACL only: whitelist more pids for a token this peer exported. */
  allow(token: number, pids: readonly number[]): Answer;
  /** Take descriptor `fd` of process `fromPid` into this one (code 0 and the new fd, or the error's code). */
  take(fromPid: number, fd: number): Answer;
  /** CUDA and HIP: import an fd of this process. ACL: import a token. */
  import(fdOrToken: number): Answer;
  /** Close a descriptor of this process (an export, or one taken). */
  close(fd: number): Answer;
  props(handle: number): Answer;
  /** End the process as exit does (dispose). */
  exit(): Answer;
  /** ACL only (IPC by key, Note [ACL IPC keys]): aclrtMalloc of `size` bytes; its address. */
  malloc(size: number): Answer;
  /** ACL only: aclrtFree. */
  mfree(va: number): Answer;
  /** ACL only: aclrtIpcMemGetExportKey (then aclrtIpcMemSetImportPid unless 'any'); the key in `props`. */
  keyExport(va: number, size: number, allow: readonly number[] | 'any'): Answer;
  /** ACL only: aclrtIpcMemImportByKey; the address in this process. */
  keyImport(key: string): Answer;
  /** ACL only: aclrtIpcMemClose. */
  keyClose(key: string): Answer;
}

/** The IPC-by-key steps of a flavour that has none (CUDA and HIP here). */
function noKeys(code: number): Pick<PeerSteps, 'malloc' | 'mfree' | 'keyExport' | 'keyImport' | 'keyClose'> {
  const no = () => ({ code });
  return { malloc: no, mfree: no, keyExport: no, keyImport: no, keyClose: no };
}

const b64 = (u: Uint8Array): string => Buffer.from(u.buffer, u.byteOffset, u.length).toString('base64');
const fromB64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'));

type Closer = { runtime: { closeFd(fd: number): void } };

/** A step outside the C API (take, close): code 0, or -1 with the VmmError's kind and message. */
function tryCode(work: () => number | undefined): Answer {
  try {
    const value = work();
    return value === undefined ? { code: 0 } : { code: 0, value };
  } catch (e) {
    return {
      code: -1,
      props: { kind: (e as { kind?: string }).kind, message: e instanceof Error ? e.message : String(e) },
    };
  }
}

function closeThrough(p: Closer, fd: number): Answer {
  return tryCode(() => {
    p.runtime.closeFd(fd);
    return undefined;
  });
}

export function cudaPeer(cu: CudaFlavor, take: FdTaker): PeerSteps {
  let ready = cu.cuInit(0);
  const ctx = { value: 0n };
  if (ready === 0) ready = cu.cuDevicePrimaryCtxRetain(ctx, 0);
  if (ready === 0) ready = cu.cuCtxSetCurrent(ctx.value);
  const rw = [
    { location: { type: K.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 }, flags: K.CU_MEM_ACCESS_FLAGS_PROT_READWRITE },
  ];
  const out = (code: number, value?: bigint | number): Answer =>
    code === 0 && value !== undefined ? { code, value: Number(value) } : { code };
  return {
    pid: () => ({ code: ready, value: cu.pid }),
    freeMemory() {
      const free = { value: 0 };
      const total = { value: 0 };
      return out(cu.cuMemGetInfo(free, total), free.value);
    },
    create(size) {
      const h = { value: 0n };
      const prop = {
        type: K.CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: K.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        location: { type: K.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
      };
      return out(cu.cuMemCreate(h, size, prop, 0), h.value);
    },
    reserve(size) {
      const p = { value: 0n };
      return out(cu.cuMemAddressReserve(p, size, 0, 0n, 0), p.value);
    },
    map: (va, size, handle) => out(cu.cuMemMap(BigInt(va), size, 0, BigInt(handle), 0)),
    access: (va, size) => out(cu.cuMemSetAccess(BigInt(va), size, rw, 1)),
    write(va, data) {
      const bytes = fromB64(data);
      return out(cu.cuMemcpyHtoD(BigInt(va), bytes, bytes.length));
    },
    read(va, size) {
      const back = new Uint8Array(size);
      const code = cu.cuMemcpyDtoH(back, BigInt(va), size);
      return code === 0 ? { code, bytes: b64(back) } : { code };
    },
    copy(dst, src, size) {
      const code = cu.cuMemcpyDtoD(BigInt(dst), BigInt(src), size);
      return out(code === 0 ? cu.cuCtxSynchronize() : code);
    },
    unmap: (va, size) => out(cu.cuMemUnmap(BigInt(va), size)),
    release: (handle) => out(cu.cuMemRelease(BigInt(handle))),
    free: (va, size) => out(cu.cuMemAddressFree(BigInt(va), size)),
    export(handle) {
      const fd = { value: -1 };
      return out(
        cu.cuMemExportToShareableHandle(fd, BigInt(handle), K.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        fd.value,
      );
    },
    allow: () => ({ code: K.CUDA_ERROR_NOT_SUPPORTED }),
    take: (fromPid, fd) => tryCode(() => take(fromPid, fd)),
    import(fd) {
      const h = { value: 0n };
      return out(
        cu.cuMemImportFromShareableHandle(h, fd, K.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        h.value,
      );
    },
    close: (fd) => closeThrough(cu, fd),
    props(handle) {
      const p = { value: undefined as unknown };
      const code = cu.cuMemGetAllocationPropertiesFromHandle(p as never, BigInt(handle));
      return code === 0 ? { code, props: propsOf(p.value) } : { code };
    },
    exit() {
      cu.dispose();
      return { code: 0 };
    },
    ...noKeys(K.CUDA_ERROR_NOT_SUPPORTED),
  };
}

export function hipPeer(hip: HipFlavor, take: FdTaker): PeerSteps {
  let ready = hip.hipInit(0);
  if (ready === 0) ready = hip.hipSetDevice(0);
  const rw = [
    { location: { type: H.hipMemLocationTypeDevice, id: 0 }, flags: H.hipMemAccessFlagsProtReadWrite },
  ];
  const out = (code: number, value?: bigint | number): Answer =>
    code === 0 && value !== undefined ? { code, value: Number(value) } : { code };
  return {
    pid: () => ({ code: ready, value: hip.pid }),
    freeMemory() {
      const free = { value: 0 };
      const total = { value: 0 };
      return out(hip.hipMemGetInfo(free, total), free.value);
    },
    create(size) {
      const h = { value: 0n };
      const prop = {
        type: H.hipMemAllocationTypePinned,
        requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor,
        location: { type: H.hipMemLocationTypeDevice, id: 0 },
      };
      return out(hip.hipMemCreate(h, size, prop, 0), h.value);
    },
    reserve(size) {
      const p = { value: 0n };
      return out(hip.hipMemAddressReserve(p, size, 0, null, 0), p.value);
    },
    map: (va, size, handle) => out(hip.hipMemMap(BigInt(va), size, 0, BigInt(handle), 0)),
    access: (va, size) => out(hip.hipMemSetAccess(BigInt(va), size, rw, 1)),
    write(va, data) {
      const bytes = fromB64(data);
      return out(hip.hipMemcpy(BigInt(va), bytes, bytes.length, H.hipMemcpyHostToDevice));
    },
    read(va, size) {
      const back = new Uint8Array(size);
      const code = hip.hipMemcpy(back, BigInt(va), size, H.hipMemcpyDeviceToHost);
      return code === 0 ? { code, bytes: b64(back) } : { code };
    },
    copy(dst, src, size) {
      const code = hip.hipMemcpy(BigInt(dst), BigInt(src), size, H.hipMemcpyDeviceToDevice);
      return out(code === 0 ? hip.hipDeviceSynchronize() : code);
    },
    unmap: (va, size) => out(hip.hipMemUnmap(BigInt(va), size)),
    release: (handle) => out(hip.hipMemRelease(BigInt(handle))),
    free: (va, size) => out(hip.hipMemAddressFree(BigInt(va), size)),
    export(handle) {
      const fd = { value: -1 };
      return out(
        hip.hipMemExportToShareableHandle(fd, BigInt(handle), H.hipMemHandleTypePosixFileDescriptor, 0),
        fd.value,
      );
    },
    allow: () => ({ code: H.hipErrorNotSupported }),
    take: (fromPid, fd) => tryCode(() => take(fromPid, fd)),
    import(fd) {
      const h = { value: 0n };
      return out(
        hip.hipMemImportFromShareableHandle(h, BigInt(fd), H.hipMemHandleTypePosixFileDescriptor),
        h.value,
      );
    },
    close: (fd) => closeThrough(hip, fd),
    props(handle) {
      const p = { value: undefined as unknown };
      const code = hip.hipMemGetAllocationPropertiesFromHandle(p as never, BigInt(handle));
      return code === 0 ? { code, props: propsOf(p.value) } : { code };
    },
    exit() {
      hip.dispose();
      return { code: 0 };
    },
    ...noKeys(H.hipErrorNotSupported),
  };
}

export function aclPeer(acl: AclFlavor): PeerSteps {
  let ready = acl.aclInit(null);
  if (ready === 0) ready = acl.aclrtSetDevice(0);
  const rw = [
    { flags: A.ACL_RT_MEM_ACCESS_FLAGS_READWRITE, location: { id: 0, type: A.ACL_MEM_LOCATION_TYPE_DEVICE } },
  ];
  const out = (code: number, value?: bigint | number): Answer =>
    code === 0 && value !== undefined ? { code, value: Number(value) } : { code };
  const tgid = { value: 0 };
  if (ready === 0) ready = acl.aclrtDeviceGetBareTgid(tgid);
  return {
    pid: () => ({ code: ready, value: tgid.value }),
    freeMemory() {
      const free = { value: 0 };
      const total = { value: 0 };
      return out(acl.aclrtGetMemInfo(A.ACL_HBM_MEM, free, total), free.value);
    },
    create(size) {
      const h = { value: 0n };
      const prop = {
        handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
        allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
        memAttr: A.ACL_HBM_MEM_HUGE,
        location: { id: 0, type: A.ACL_MEM_LOCATION_TYPE_DEVICE },
        reserve: 0,
      };
      return out(acl.aclrtMallocPhysical(h, size, prop, 0), h.value);
    },
    reserve(size) {
      const p = { value: 0n };
      return out(acl.aclrtReserveMemAddress(p, size, 0, null, 0), p.value);
    },
    map: (va, size, handle) => out(acl.aclrtMapMem(BigInt(va), size, 0, BigInt(handle), 0)),
    access: (va, size) => out(acl.aclrtMemSetAccess(BigInt(va), size, rw, 1)),
    write(va, data) {
      const bytes = fromB64(data);
      return out(acl.aclrtMemcpy(BigInt(va), bytes.length, bytes, bytes.length, A.ACL_MEMCPY_HOST_TO_DEVICE));
    },
    read(va, size) {
      const back = new Uint8Array(size);
      const code = acl.aclrtMemcpy(back, size, BigInt(va), size, A.ACL_MEMCPY_DEVICE_TO_HOST);
      return code === 0 ? { code, bytes: b64(back) } : { code };
    },
    copy(dst, src, size) {
      const code = acl.aclrtMemcpy(BigInt(dst), size, BigInt(src), size, A.ACL_MEMCPY_DEVICE_TO_DEVICE);
      return out(code === 0 ? acl.aclrtSynchronizeDevice() : code);
    },
    // ACL unmaps and releases by pointer alone (sizes are core's to know).
    unmap: (va) => out(acl.aclrtUnmapMem(BigInt(va))),
    release: (handle) => out(acl.aclrtFreePhysical(BigInt(handle))),
    free: (va) => out(acl.aclrtReleaseMemAddress(BigInt(va))),
    export(handle, allow) {
      const token = { value: 0n };
      const flags =
        allow === 'any' ? A.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION : A.ACL_RT_VMM_EXPORT_FLAG_DEFAULT;
      const code = acl.aclrtMemExportToShareableHandle(
        BigInt(handle),
        A.ACL_MEM_HANDLE_TYPE_NONE,
        flags,
        token,
      );
      if (code !== 0 || allow === 'any' || allow.length === 0) return out(code, token.value);
      return out(acl.aclrtMemSetPidToShareableHandle(token.value, [...allow], allow.length), token.value);
    },
    allow: (token, pids) => out(acl.aclrtMemSetPidToShareableHandle(BigInt(token), [...pids], pids.length)),
    // ACL passes no descriptors: the token names the memory machine-wide.
    take: () => ({ code: A.ACL_ERROR_RT_FEATURE_NOT_SUPPORT }),
    import(token) {
      const h = { value: 0n };
      return out(acl.aclrtMemImportFromShareableHandle(BigInt(token), 0, h), h.value);
    },
    close: () => ({ code: A.ACL_ERROR_RT_FEATURE_NOT_SUPPORT }),
    props(handle) {
      const p = { value: undefined as unknown };
      const code = acl.aclrtMemGetAllocationPropertiesFromHandle(BigInt(handle), p as never);
      return code === 0 ? { code, props: propsOf(p.value) } : { code };
    },
    exit() {
      acl.aclFinalize();
      acl.dispose();
      return { code: 0 };
    },
    malloc(size) {
      const p = { value: 0n };
      return out(acl.aclrtMalloc(p, size, A.ACL_MEM_MALLOC_HUGE_FIRST), p.value);
    },
    mfree: (va) => out(acl.aclrtFree(BigInt(va))),
    keyExport(va, size, allow) {
      const key = { value: '' };
      const flags =
        allow === 'any'
          ? A.ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION
          : A.ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT;
      let code = acl.aclrtIpcMemGetExportKey(BigInt(va), size, key, A.ACL_IPC_KEY_LEN, flags);
      if (code === 0 && allow !== 'any')
        code = acl.aclrtIpcMemSetImportPid(key.value, [...allow], allow.length);
      return code === 0 ? { code, props: key.value } : { code };
    },
    keyImport(key) {
      const p = { value: 0n };
      return out(acl.aclrtIpcMemImportByKey(p, key, A.ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT), p.value);
    },
    keyClose: (key) => out(acl.aclrtIpcMemClose(key)),
  };
}

/** A struct as JSON (bigints as numbers). */
function propsOf(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x)));
}

export { b64, fromB64 };
