import type { Backend } from '../backend/backend.js';
import { vmmError } from './errors.js';
import { EXPORTS, type PhysicalAllocation, TOKENS } from './objects.js';
import { HandleType } from './types.js';

/**
 * What one process shares of its memory: the fds it exported, each with the
 * allocation it shares, so closing one lowers that allocation's count, and
 * the machine-wide tokens it shares (exportShareable, exportMalloc) and has
 * not withdrawn, with their memory. The Runtime checks liveness and handles
 * first; each step here is one backend call, booked only once it succeeded,
 * so a failed export leaves nothing to take back.
 */
export class SharingBook {
  readonly #exportedFds = new Map<number, PhysicalAllocation>();
  readonly #sharedTokens = new Map<number, PhysicalAllocation>();

  constructor(readonly backend: Backend) {}

  /** Export `a` as a POSIX file descriptor in the process's table. */
  exportFd(a: PhysicalAllocation): number {
    if ((a.props.handleTypes & HandleType.PosixFd) === 0) {
      throw vmmError('not-supported', 'the allocation was not created exportable as a POSIX fd');
    }
    const fd = this.backend.exportFd(a.backendHandle);
    a[EXPORTS]++;
    this.#exportedFds.set(fd, a);
    return fd;
  }

  /** Close a descriptor of the process's fd table; an export closed no longer counts. */
  closeFd(fd: number): void {
    this.backend.closeFd(fd);
    const a = this.#exportedFds.get(fd);
    if (a !== undefined) {
      this.#exportedFds.delete(fd);
      a[EXPORTS]--;
    }
  }

  /** Share `a` as a machine-wide token (with `checkPid`, only to processes allowImport names). */
  share(a: PhysicalAllocation, checkPid: boolean): number {
    const token = this.backend.exportShareable(a.backendHandle, checkPid);
    a[EXPORTS]++;
    (a[TOKENS] ??= []).push(token);
    this.#sharedTokens.set(token, a);
    return token;
  }

  /** Withdraw a token this process shares; the memory behind it is untouched. */
  unshare(token: number): void {
    const a = this.#sharedTokens.get(token);
    if (a === undefined) throw vmmError('invalid-fd', `this process shares no token ${token}`);
    this.backend.unshare(token);
    this.#sharedTokens.delete(token);
    a[EXPORTS]--;
    a[TOKENS] = a[TOKENS]?.filter((t) => t !== token);
  }

  /**
   * Withdraw the tokens of `a`, whose memory was just released: freeing the
   * exporter's memory withdraws its shareable tokens (ACL's
   * aclrtFreePhysical does). Each withdrawal runs through `quietly`, so one
   * that fails is reported, not thrown: the memory is gone already.
   */
  withdrawTokens(a: PhysicalAllocation, quietly: (step: () => void) => void): void {
    const tokens = a[TOKENS];
    if (tokens === undefined) return;
    for (const t of tokens) {
      if (!this.#sharedTokens.delete(t)) continue;
      quietly(() => this.backend.unshare(t));
    }
  }
}
