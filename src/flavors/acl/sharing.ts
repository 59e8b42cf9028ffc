/** Sharing between ACL processes: shareable handles (and their V2 calls), and aclrtMalloc memory by IPC key. */
import type { Runtime } from '../../core/runtime.js';
import {
  type Box,
  isBox,
  isNull,
  probeBox,
  readArrayLike,
  type Size,
  show,
  toCount,
  toInt,
} from '../common/args.js';
import type { AclCodes } from './codes.js';
import * as C from './constants.js';
import type { AclDevices } from './devices.js';
import type { AclPhysicalMemory } from './physical-memory.js';
import type { Pointer } from './structs.js';

/** An IPC key is its token in text (Note [ACL IPC keys]): 20 characters, well inside the 64 a key may have. */
const IPC_KEY_PREFIX = 'ipc-';

/**
 * Note [ACL IPC keys]
 * aclrtIpcMemGetExportKey shares aclrtMalloc memory with other processes
 * under a string key (CANN's reference: key buffer len fixed at 65; flags
 * DEFAULT, which needs aclrtIpcMemSetImportPid, or DISABLE_PID_VALIDATION;
 * the importer gets a device pointer from aclrtIpcMemImportByKey and both
 * sides end with aclrtIpcMemClose, importers first, then the exporter's
 * aclrtFree). It is built on core's one-step sharing (Note [One-step
 * sharing], core/one-step.ts): the key is the machine-wide token of
 * exportMalloc written as text, so whatever carries tokens between
 * processes (the simulated machine; the CUDA backend's token registry)
 * carries keys too, and aclrtMalloc creates its memory exportable for that.
 * Import maps the whole allocation (whole granules; size only has to lie
 * within it) and grants the current device read-write. Close in an importer
 * unmaps its oldest import of the key (CANN keeps a list per key and closes
 * its first); in the exporter it withdraws the key. An aclrtFree by the
 * exporter withdraws its keys with the memory; an importer's mapping keeps
 * the memory alive until it closes, so the memory goes when the last
 * holder lets go, never under a live mapping. Codes follow CANN's layers:
 * NULL pointers are the acl layer's ACL_ERROR_INVALID_PARAM; zero size or
 * len, unknown flags, num <= 0 and driver refusals (a short key buffer, an
 * address that is not the start of aclrtMalloc memory, an unknown key) are
 * ACL_ERROR_RT_PARAM_INVALID; no current device is ACL_ERROR_RT_CONTEXT_NULL;
 * an importer not whitelisted, a whitelist for a key exported without
 * validation, and a process importing its own key are
 * ACL_ERROR_RT_NO_PERMISSION (unsure for the last: the reference says
 * nothing). Unsure too: whether aclrtFree accepts an imported pointer (here
 * it refuses; aclrtIpcMemClose is the documented way). Across real
 * processes on the H200, over the CUDA backend's token registry, the
 * sharing scenario ipc-key passed every check
 * (conformance/results/h200-sharing.json).
 *
 * Note [ACL fabric handles]
 * ACL_MEM_SHARE_HANDLE_TYPE_FABRIC shares memory across servers of a
 * supernode; the simulated machine is one server, so the V2 calls answer
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT for it and work as the first versions for
 * ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT. The V2 prototypes here are
 * (handle, flags, shareType, *shareableHandle), (*shareableHandle,
 * shareType, pid, pidNum) and (*shareableHandle, shareType, flags, *handle),
 * as the 8.5 and 9.0 references give them.
 */

export class AclSharing {
  /** Shareable handles this process exported (import of one's own export is refused). */
  readonly #exported = new Set<number>();
  /** IPC keys this process exported and has not closed: each one's token and aclrtMalloc address. */
  readonly #ipcExports = new Map<
    string,
    { readonly token: number; readonly va: number; readonly checkPid: boolean }
  >();
  /** IPC keys this process imported: the address of each import not yet closed, oldest first. */
  readonly #ipcImports = new Map<string, number[]>();

  constructor(
    readonly runtime: Runtime,
    readonly codes: AclCodes,
    readonly devices: AclDevices,
    readonly physical: AclPhysicalMemory,
  ) {}

  /**
   * flags: ACL_RT_VMM_EXPORT_FLAG_DEFAULT (importers must be named with
   * aclrtMemSetPidToShareableHandle) or ..._DISABLE_PID_VALIDATION. A handle
   * is exported at most once (CANN: handle and shareableHandle are one to one).
   */
  exportShareable(handle: Pointer, handleType: number, flags: Size, shareableHandle: Box<bigint>): number {
    if (isNull(handle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    if (toInt(handleType) !== C.ACL_MEM_HANDLE_TYPE_NONE)
      return this.codes.bad(
        C.ACL_ERROR_INVALID_PARAM,
        `handleType ${show(handleType)} must be ACL_MEM_HANDLE_TYPE_NONE`,
      );
    if (!isBox(shareableHandle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'shareableHandle is NULL');
    const a = this.physical.live(handle);
    if (typeof a === 'number') return a;
    const f = toCount(flags);
    if (f !== C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT && f !== C.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `flags ${show(flags)}`);
    if (a.origin !== 'created')
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        'only memory from aclrtMallocPhysical can be exported',
      );
    if (a.props.location.type !== 'device')
      return this.codes.bad(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 'only device memory can be shared');
    if (a.exports > 0) return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, 'the handle was already exported');
    // The box must take a write before the export, not only pass isBox.
    if (!probeBox(shareableHandle)) return this.codes.unwritable();
    // A Proxy that took the probe and refuses the token: the export is withdrawn (all or nothing).
    return this.codes.handOut(
      shareableHandle,
      () => this.runtime.exportShareable(a, f === C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT),
      (token) => BigInt(token),
      (token) => this.runtime.unshare(token),
      () => this.codes.unwritable(),
      (token) => this.#exported.add(token),
    );
  }

  /** Name the processes (by aclrtDeviceGetBareTgid's pid) that may import; called by the exporter. */
  allowPids(shareableHandle: Size, pid: ArrayLike<number> | null, pidNum: Size): number {
    const pids = this.#readPids(pid, pidNum, 'pidNum', C.ACL_ERROR_INVALID_PARAM);
    if (!Array.isArray(pids)) return pids;
    const token = toCount(shareableHandle);
    if (!this.#exported.has(token))
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `this process exported no shareable handle ${show(shareableHandle)}`,
      );
    return this.codes.run(() => this.runtime.allowImport(token, pids));
  }

  /** A handle in this process to memory another process exported. deviceId names the device it is used on. */
  importShareable(shareableHandle: Size, deviceId: number, handle: Box<bigint>): number {
    if (!isBox(handle)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    const bad = this.devices.badDevice(deviceId);
    if (bad !== undefined) return bad;
    const token = toCount(shareableHandle);
    // CANN: export and import in one process is not supported.
    if (this.#exported.has(token))
      return this.codes.bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'a process may not import its own shareable handle',
      );
    return this.physical.handOut(handle, () => this.runtime.importShareable(token));
  }

  /**
   * A caller's list of `count` pids, read once (Note [Untrusted arguments]),
   * or the code of its refusal: NULL or short lists and non-integer pids are
   * refused alike by both whitelist calls; a count that is not positive with
   * `countCode` (the two calls' references give different codes).
   */
  #readPids(
    pid: ArrayLike<number> | null,
    count: Size,
    countName: string,
    countCode: number,
  ): number[] | number {
    const k = toCount(count);
    const given = readArrayLike(pid, Math.max(k, 0));
    if (given === undefined)
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'pid is NULL or cannot be read');
    if (k <= 0) return this.codes.bad(countCode, `${countName} ${show(count)} must be positive`);
    if (given === 'short')
      return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `pid holds fewer than ${k} entries`);
    const pids: number[] = [];
    for (let i = 0; i < k; i++) {
      const p = toInt(given[i]);
      if (!Number.isInteger(p)) return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `pid[${i}] is not a pid`);
      pids.push(p);
    }
    return pids;
  }

  /** undefined for ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT; the refusal otherwise (Note [ACL fabric handles]). */
  shareType(shareType: number): number | undefined {
    const t = toInt(shareType);
    if (t === C.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT) return undefined;
    if (t === C.ACL_MEM_SHARE_HANDLE_TYPE_FABRIC)
      return this.codes.bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'fabric handles (sharing across servers) are not simulated',
      );
    return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, `shareType ${show(shareType)}`);
  }

  // --- IPC keys (the Note) ---

  /**
   * Share aclrtMalloc memory by a key. devPtr must be the start of this
   * process's aclrtMalloc memory (not memory imported by key, nor a VMM
   * address), size within it, len at least 65 (the key's 64 characters and
   * NUL), flags DEFAULT (importers must be named with
   * aclrtIpcMemSetImportPid) or DISABLE_PID_VALIDATION. Each call makes a
   * new key.
   */
  exportKey(devPtr: Pointer, size: Size, key: Box<string>, len: Size, flags: Size): number {
    const va = toCount(devPtr ?? 0);
    if (va === 0) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    if (!isBox(key)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    // The runtime's checks (rtsIpcMemGetExportKey): zero size and len, flags past DISABLE_PID_VALIDATION.
    const n = toCount(size);
    if (n <= 0) return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${show(size)} must be positive`);
    const l = toCount(len);
    if (l <= 0) return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `len ${show(len)} must be positive`);
    const f = toCount(flags);
    if (
      f !== C.ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT &&
      f !== C.ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION
    )
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `flags ${show(flags)}`);
    const code = this.devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    // The driver's (halShmemCreateHandle): a name buffer of 65 or more, memory allocated directly, no offset.
    if (l < C.ACL_IPC_KEY_LEN)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `len ${l} is below ${C.ACL_IPC_KEY_LEN}`);
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc' || this.importAt(va) !== undefined)
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `0x${va.toString(16)} is not the start of aclrtMalloc memory`,
      );
    if (n > r.size)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is past the allocation (${r.size})`);
    const checkPid = f === C.ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT;
    // All or nothing: the key nobody can read is withdrawn.
    return this.codes.handOut(
      key,
      () => this.runtime.exportMalloc(va, checkPid),
      ipcKey,
      (token) => this.runtime.unshare(token),
      () => this.codes.unwritable(),
      (token) => this.#ipcExports.set(ipcKey(token), { token, va, checkPid }),
    );
  }

  /**
   * Name the processes (their aclrtDeviceGetBareTgid) that may import a key
   * this process exported with ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT. A key
   * exported with DISABLE_PID_VALIDATION takes no list:
   * ACL_ERROR_RT_NO_PERMISSION, as CANN's driver makes the two exclusive.
   */
  allowKeyPids(key: string, pid: ArrayLike<number> | null, num: Size): number {
    if (typeof key !== 'string') return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    const pids = this.#readPids(pid, num, 'num', C.ACL_ERROR_RT_PARAM_INVALID);
    if (!Array.isArray(pids)) return pids;
    // The runtime asks for a current context here, as for every IPC call (ApiImpl::SetIpcMemPid).
    const code = this.devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const e = this.#ipcExports.get(key);
    if (e === undefined)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `this process exported no key ${show(key)}`);
    if (!e.checkPid)
      return this.codes.bad(C.ACL_ERROR_RT_NO_PERMISSION, 'the key was exported with DISABLE_PID_VALIDATION');
    return this.codes.run(() => this.runtime.allowImport(e.token, pids));
  }

  /**
   * Map the memory behind a key into this process: *devPtr is an address the
   * current device may read and write at once, until aclrtIpcMemClose(key).
   * flags DEFAULT or ENABLE_PEER_ACCESS (which also enables peer access to
   * the memory's device, as aclrtDeviceEnablePeerAccess would).
   */
  importKey(devPtr: Box<bigint>, key: string, flags: Size): number {
    if (!isBox(devPtr)) return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    if (typeof key !== 'string') return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    const f = toCount(flags);
    if (f !== C.ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT && f !== C.ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS)
      return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `flags ${show(flags)}`);
    const code = this.devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const token = ipcToken(key);
    if (token === undefined) return this.codes.bad(C.ACL_ERROR_RT_PARAM_INVALID, `no key ${show(key)}`);
    const d = this.devices.current;
    return this.codes.handOut(
      devPtr,
      () => this.runtime.importMalloc(token, d),
      (r) => BigInt(r.base),
      (r) => this.runtime.mfree(r.base),
      () => this.codes.unwritable(),
      (r) => {
        const list = this.#ipcImports.get(key) ?? [];
        list.push(r.base);
        this.#ipcImports.set(key, list);
        const home = this.runtime.mappingAt(r.base)?.allocation.props.location;
        if (f === C.ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS && home?.type === 'device' && home.id !== d)
          this.devices.peers.enable(d, home.id);
      },
    );
  }

  /**
   * In an importer: unmap its oldest import of the key (the memory stays
   * while others hold it). In the exporter: withdraw the key, so no process
   * can import it any more; imports already made keep working, and the
   * memory stays the exporter's until aclrtFree. CANN asks importers to
   * close before the exporter does; nothing here depends on that order.
   */
  closeKey(key: string): number {
    if (typeof key !== 'string') return this.codes.bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    const code = this.devices.needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const imports = this.#ipcImports.get(key);
    if (imports !== undefined) {
      const va = imports[0];
      return this.codes.run(() => {
        this.runtime.mfree(va);
        imports.shift();
        if (imports.length === 0) this.#ipcImports.delete(key);
      });
    }
    const e = this.#ipcExports.get(key);
    if (e === undefined)
      return this.codes.bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `no key ${show(key)} was exported or imported here`,
      );
    return this.codes.run(() => {
      this.runtime.unshare(e.token);
      this.#ipcExports.delete(key);
    });
  }

  /** The key of an import by key that starts at `va`, if one does. */
  importAt(va: number): string | undefined {
    for (const [key, list] of this.#ipcImports) if (list.includes(va)) return key;
    return undefined;
  }

  /** After aclrtFree of `va`: core withdrew the memory's tokens with it, so its keys are gone. */
  forgetExportsOf(va: number): void {
    for (const [key, e] of this.#ipcExports) if (e.va === va) this.#ipcExports.delete(key);
  }
}

function ipcKey(token: number): string {
  return `${IPC_KEY_PREFIX}${token.toString(16).padStart(16, '0')}`;
}

/** The token a key names, or undefined for a string no aclrtIpcMemGetExportKey wrote. */
function ipcToken(key: string): number | undefined {
  if (!/^ipc-[0-9a-f]{16}$/.test(key)) return undefined;
  const token = Number.parseInt(key.slice(IPC_KEY_PREFIX.length), 16);
  return Number.isSafeInteger(token) ? token : undefined;
}
