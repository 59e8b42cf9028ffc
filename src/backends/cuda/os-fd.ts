/**
 * Taking a file descriptor from another process, as Linux lets a process do
 * with pidfd_open(2) and pidfd_getfd(2). Node has no call for either, so
 * they go through libc's syscall(2), declared here once and loaded on first
 * use (Note [Lazy FFI]).
 *
 * Note [Taking a descriptor]: a CUDA or HIP program shares memory by sending
 * the exported fd to another process, over a Unix socket (SCM_RIGHTS) or by
 * letting that process take it with pidfd_getfd. Node can send neither
 * (its IPC passes sockets and servers, not arbitrary descriptors), so vmmkit
 * offers the second: `takeFd(pid, fd)` duplicates descriptor `fd` of process
 * `pid` into this process and returns the new number, which
 * cuMemImportFromShareableHandle (or `rt.importFd`) then takes. The kernel
 * allows it where ptrace would be allowed (PTRACE_MODE_ATTACH_REALCREDS): the
 * same user, subject to Yama's ptrace_scope (at 1, only a process's
 * ancestors may take from it, unless it names them with PR_SET_PTRACER), or
 * CAP_SYS_PTRACE. The syscall numbers, 434 and 438, are the same on every
 * Linux architecture: both calls were added (5.3 and 5.6) after the tables
 * were unified. The simulator's `machine.passFd` plays the same part between
 * simulated processes.
 */
import { closeSync } from 'node:fs';
import { vmmError } from '../../core/errors.js';
import { koffi } from './koffi.js';

const SYS_PIDFD_OPEN = 434;
const SYS_PIDFD_GETFD = 438;
const EPERM = 1;
const ESRCH = 3;
const EBADF = 9;
const ENOSYS = 38;

type Syscall = (number: number, ...args: unknown[]) => number | bigint;

/** libc's variadic syscall(2), bound through koffi. */
function loadSyscall(): { call: Syscall; errno: () => number } {
  if (process.platform !== 'linux')
    throw vmmError('not-supported', `taking a descriptor needs Linux's pidfd_getfd, not ${process.platform}`);
  const k = koffi();
  const call = k.load('libc.so.6').func('long syscall(long number, ...)') as Syscall;
  return { call, errno: () => k.errno() };
}

function failure(what: string, errno: number, pid: number, fd: number): Error {
  const detail = `${what} (errno ${errno})`;
  if (errno === ESRCH) return vmmError('invalid-fd', `no process ${pid}: ${detail}`);
  if (errno === EBADF) return vmmError('invalid-fd', `process ${pid} has no fd ${fd}: ${detail}`);
  if (errno === EPERM)
    return vmmError('permission-denied', `may not take fd ${fd} of process ${pid}: ${detail}`);
  if (errno === ENOSYS) return vmmError('not-supported', `this kernel has no ${what}`);
  return vmmError('invalid-fd', `fd ${fd} of process ${pid}: ${detail}`);
}

/**
 * Duplicate descriptor `fd` of process `pid` into this process (Note
 * [Taking a descriptor]); returns its number here, which the caller owns and
 * closes. Throws a VmmError: invalid-fd (no such process or descriptor),
 * permission-denied (the kernel refused), not-supported (no pidfd_getfd).
 */
export function takeFd(pid: number, fd: number): number {
  if (!Number.isInteger(pid) || pid <= 0) throw vmmError('invalid-fd', `${pid} is not a process id`);
  if (!Number.isInteger(fd) || fd < 0) throw vmmError('invalid-fd', `${fd} is not a file descriptor`);
  const { call, errno } = loadSyscall();
  const pidfd = Number(call(SYS_PIDFD_OPEN, 'int', pid, 'uint', 0));
  if (pidfd < 0) throw failure('pidfd_open', errno(), pid, fd);
  try {
    const taken = Number(call(SYS_PIDFD_GETFD, 'int', pidfd, 'int', fd, 'uint', 0));
    if (taken < 0) throw failure('pidfd_getfd', errno(), pid, fd);
    return taken;
  } finally {
    closeSync(pidfd);
  }
}
