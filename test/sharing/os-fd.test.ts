/**
 * Taking descriptors from real OS processes (pidfd_getfd) and the token
 * registry's liveness rule, across real child processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { takeFd } from '../../src/backends/cuda/os-fd.js';
import { processStartTime, TokenRegistry } from '../../src/backends/cuda/token-registry.js';
import { isVmmError } from '../../src/core/errors.js';

const linux = process.platform === 'linux';
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'vmmkit-fd-test-'));
  dirs.push(d);
  return d;
}

/** A child that opens `file`, prints the fd's number and waits to be killed. */
function holder(file: string): Promise<{ child: ChildProcess; fd: number }> {
  const code = `const fd = require('fs').openSync(${JSON.stringify(file)}, 'r'); console.log(fd); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (d) => resolve({ child, fd: Number(String(d).trim()) }));
    child.once('error', reject);
  });
}

function kindOf(work: () => unknown): string | undefined {
  try {
    work();
    return undefined;
  } catch (e) {
    return isVmmError(e) ? e.kind : String(e);
  }
}

const dead = (c: ChildProcess) => new Promise<void>((resolve) => c.once('exit', () => resolve()));

describe.skipIf(!linux)('takeFd (pidfd_open + pidfd_getfd)', () => {
  it("duplicates another process's open descriptor into this one", async () => {
    const file = join(tempDir(), 'shared.txt');
    writeFileSync(file, 'bytes of the other process');
    const { child, fd } = await holder(file);
    const mine = takeFd(child.pid!, fd);
    expect(readFileSync(mine, 'utf8')).toBe('bytes of the other process');
    expect(kindOf(() => takeFd(child.pid!, 987))).toBe('invalid-fd'); // a number it has not opened
  });

  it('refuses a process that is gone, and arguments that are no pid or fd', async () => {
    const file = join(tempDir(), 'x');
    writeFileSync(file, 'x');
    const { child, fd } = await holder(file);
    const pid = child.pid!;
    child.kill('SIGKILL');
    await dead(child);
    expect(kindOf(() => takeFd(pid, fd))).toBe('invalid-fd');
    expect(kindOf(() => takeFd(0, 1))).toBe('invalid-fd');
    expect(kindOf(() => takeFd(process.pid, -1))).toBe('invalid-fd');
  });
});

describe.skipIf(!linux)('the token registry (Note [Token registry])', () => {
  const props = { location: { type: 'device' as const, id: 0 }, handleTypes: 1, uncached: false };

  it("keeps a live exporter's entry, refuses and removes one whose exporter was killed", async () => {
    const dir = tempDir();
    const registry = new TokenRegistry(dir);
    const file = join(dir, 'payload');
    writeFileSync(file, '');
    const { child } = await holder(file);
    const pid = child.pid!;
    const entry = registry.publish({
      pid,
      startTime: processStartTime(pid)!,
      fd: 3,
      size: 2 << 20,
      props,
      checkPid: true,
      allowed: [],
    });
    expect(registry.lookup(entry.token)).toEqual(entry);
    registry.update({ ...entry, allowed: [process.pid] });
    expect(registry.lookup(entry.token)?.allowed).toEqual([process.pid]);
    child.kill('SIGKILL');
    await dead(child);
    expect(registry.lookup(entry.token)).toBeUndefined();
    expect(readdirSync(dir).filter((n) => n.startsWith('token-'))).toEqual([]);
  });

  it('refuses an entry whose pid now names a process that started at another time', () => {
    const registry = new TokenRegistry(tempDir());
    const entry = registry.publish({
      pid: process.pid,
      startTime: `${processStartTime(process.pid)}0`,
      fd: 3,
      size: 2 << 20,
      props,
      checkPid: false,
      allowed: [],
    });
    expect(registry.lookup(entry.token)).toBeUndefined();
  });

  it('publishes under distinct tokens, leaves no staging files, and withdraws', () => {
    const dir = tempDir();
    const registry = new TokenRegistry(dir);
    const base = {
      pid: process.pid,
      startTime: processStartTime(process.pid)!,
      fd: 3,
      size: 1,
      props,
      checkPid: false,
      allowed: [],
    };
    const a = registry.publish(base);
    const b = registry.publish(base);
    expect(a.token).not.toBe(b.token);
    expect(readdirSync(dir).sort()).toEqual(
      [`token-${a.token.toString(16)}.json`, `token-${b.token.toString(16)}.json`].sort(),
    );
    registry.withdraw(a.token);
    registry.withdraw(a.token);
    expect(existsSync(join(dir, `token-${a.token.toString(16)}.json`))).toBe(false);
    expect(registry.lookup(b.token)?.token).toBe(b.token);
  });
});
