/**
 * Note [Token registry]: ACL shares memory by a uint64 "shareable handle"
 * that any process may name, checked against a list of pids the exporter
 * whitelists (aclrtMemSetPidToShareableHandle). Ascend's driver keeps that
 * namespace in the kernel; the NVIDIA driver has none (its fabric handles
 * need an IMEX channel), only POSIX descriptors. Over the CUDA backend a
 * token is therefore a POSIX fd that the exporter keeps open, published in
 * a small machine-wide registry: one file per token in a directory of this
 * user's (by default /dev/shm/vmmkit-<uid>/, mode 0700), holding the
 * exporter's pid and start time, the fd's number there, the memory's size
 * and properties, whether pids are checked, and the pids allowed. An
 * importer reads the file, checks the list and the exporter's liveness,
 * takes the fd with pidfd_getfd (Note [Taking a descriptor]) and imports it.
 *
 * Each file is written whole and then linked (new tokens: link(2) fails if
 * the name exists, so two exporters never share a token) or renamed (later
 * whitelists) into place, so a reader sees an old or a new entry, never a
 * torn one. The exporter removes its entries when it frees the memory or
 * disposes; an exporter that dies without doing so (SIGKILL) leaves a file
 * that importers refuse, because its pid is gone or now names a process that
 * started at another time (/proc/<pid>/stat, field 22), and delete.
 *
 * What this enforces, honestly: the whitelist is checked by the library in
 * the importing process, as the simulator checks it in its machine. Any
 * process of the same user may read the directory and pidfd_getfd the
 * exporter's descriptor without asking, so this is ACL's contract kept by
 * cooperating programs, not a security boundary (the kernel's ptrace rules
 * are the only boundary, and they are the user's).
 */
import { randomInt } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AllocationProperties } from '../../core/types.js';

/** One published token: what an importer needs to find and take the memory. */
export interface TokenEntry {
  readonly token: number;
  /** The exporting process, and when it started (clock ticks since boot), to tell a reused pid. */
  readonly pid: number;
  readonly startTime: string;
  /** The exported descriptor's number in the exporting process. */
  readonly fd: number;
  readonly size: number;
  readonly props: AllocationProperties;
  readonly checkPid: boolean;
  readonly allowed: readonly number[];
}

/** Where the registry lives unless a backend is told otherwise. */
export function defaultTokenDirectory(): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  let base = '/dev/shm';
  try {
    readdirSync(base);
  } catch {
    base = tmpdir();
  }
  return join(base, `vmmkit-${uid}`);
}

/** A process's start time (field 22 of /proc/<pid>/stat), or undefined if there is no such process. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after its ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** The largest token drawn: tokens stay exact as numbers (below 2^53), as core's handles do. */
const TOKEN_LIMIT = 2 ** 48;

export class TokenRegistry {
  constructor(readonly directory: string = defaultTokenDirectory()) {}

  #path(token: number): string {
    return join(this.directory, `token-${token.toString(16)}.json`);
  }

  #staging(token: number): string {
    return join(this.directory, `.staging-${process.pid}-${token.toString(16)}`);
  }

  /** Publish a new entry under a fresh token; returns the entry with its token. */
  publish(entry: Omit<TokenEntry, 'token'>): TokenEntry {
    mkdirSync(this.directory, { recursive: true, mode: 0o700 });
    for (;;) {
      const token = randomInt(1, TOKEN_LIMIT);
      const full: TokenEntry = { token, ...entry };
      const staging = this.#staging(token);
      writeFileSync(staging, JSON.stringify(full), { mode: 0o600 });
      try {
        linkSync(staging, this.#path(token));
        return full;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      } finally {
        unlinkSync(staging);
      }
    }
  }

  /** Replace an entry this process published (a longer pid list). */
  update(entry: TokenEntry): void {
    const staging = this.#staging(entry.token);
    writeFileSync(staging, JSON.stringify(entry), { mode: 0o600 });
    renameSync(staging, this.#path(entry.token));
  }

  /** Remove an entry; one already gone is fine. */
  withdraw(token: number): void {
    try {
      unlinkSync(this.#path(token));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }

  /**
   * The live entry for a token, or undefined: no file, an unreadable one,
   * or one whose exporter has exited (that file is removed).
   */
  lookup(token: number): TokenEntry | undefined {
    let entry: TokenEntry;
    try {
      entry = JSON.parse(readFileSync(this.#path(token), 'utf8')) as TokenEntry;
    } catch {
      return undefined;
    }
    if (entry.token !== token) return undefined;
    if (processStartTime(entry.pid) !== entry.startTime) {
      try {
        this.withdraw(token);
      } catch {
        // Another process's stale file in a directory we may not write: refusing it is enough.
      }
      return undefined;
    }
    return entry;
  }
}
