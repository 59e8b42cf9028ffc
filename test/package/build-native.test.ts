/**
 * scripts/build-native.mjs, the install step that builds the fast-call addon:
 * it builds against headers of the Node running it, the one that will load
 * the addon, even where npm's nodedir (an .npmrc left from another Node)
 * names another's.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'vmmkit-build-native-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(process.platform !== 'linux')('build-native', () => {
  it("passes over a nodedir of another Node's ABI and builds against the running Node's headers", () => {
    // Headers of a Node whose addons this one cannot load (and whose node.h would not even compile).
    const other = join(dir, 'other-node');
    mkdirSync(join(other, 'include', 'node'), { recursive: true });
    writeFileSync(join(other, 'include', 'node', 'node.h'), '#error "not these headers"\n');
    writeFileSync(
      join(other, 'include', 'node', 'node_version.h'),
      '#define NODE_MAJOR_VERSION 1\n#define NODE_MODULE_VERSION 1\n',
    );
    const out = join(dir, 'cycle-calls.node');
    execFileSync(process.execPath, ['scripts/build-native.mjs', '--require', '--out', out], {
      env: { ...process.env, npm_config_nodedir: other },
      stdio: 'pipe',
    });
    expect(existsSync(out)).toBe(true);
    // It loads here: built for this Node's ABI.
    const addon = createRequire(import.meta.url)(out) as { bind: unknown };
    expect(typeof addon.bind).toBe('function');
  });
});
