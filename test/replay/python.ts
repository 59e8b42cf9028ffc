/** Running python3 from a test: present on the development machine, maybe not elsewhere. */
import { execFileSync, spawnSync } from 'node:child_process';

/** Why python3 cannot be used here, or undefined when it can. */
export function pythonMissing(): string | undefined {
  const r = spawnSync('python3', ['-c', 'import pickle'], { encoding: 'utf8' });
  if (r.error !== undefined) return `python3 is not available (${r.error.message})`;
  return r.status === 0 ? undefined : `python3 cannot import pickle (exit ${r.status})`;
}

/** Run a python3 program with `input` on stdin; its stdout as bytes. */
export function python(program: string, input?: Uint8Array, args: readonly string[] = []): Buffer {
  return execFileSync('python3', ['-c', program, ...args], { input, maxBuffer: 1 << 28 });
}
