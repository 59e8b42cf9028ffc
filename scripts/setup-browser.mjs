#!/usr/bin/env node
// npm test's pretest: the browser tests drive Debian's chromium (through
// playwright-core, which downloads nothing). Install it when it is missing
// and this is a root shell with apt-get; otherwise say why, and the browser
// tests skip (or fail under CI=true, where they must run).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CHROMIUM = '/usr/bin/chromium';

function run(command, args) {
  const r = spawnSync(command, args, {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return r.status === 0 ? undefined : `${command} ${args.join(' ')} failed: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' / ')}`;
}

function main() {
  if (existsSync(CHROMIUM)) return 0;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !existsSync('/usr/bin/apt-get')) {
    console.error(`setup-browser: ${CHROMIUM} is missing and cannot be installed here (needs root and apt-get: apt-get install chromium); the browser tests will skip`);
    return process.env.CI ? 1 : 0;
  }
  console.error('setup-browser: installing Debian chromium for the browser tests (apt-get, about a minute)...');
  const failed = run('apt-get', ['update', '-qq']) ?? run('apt-get', ['install', '-y', '-qq', 'chromium']);
  if (failed !== undefined || !existsSync(CHROMIUM)) {
    console.error(`setup-browser: ${failed ?? `${CHROMIUM} still missing after the install`}`);
    return process.env.CI ? 1 : 0;
  }
  console.error('setup-browser: chromium installed');
  return 0;
}

process.exitCode = main();
