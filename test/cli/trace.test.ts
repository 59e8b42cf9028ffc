/**
 * Issue 10, the trace command as a new user meets it: a missing script is a
 * one-line error (bad input, exit 1, as under inspect and map), and a traced
 * process's dispose is a span of the front end (the vendor layer), not a
 * parentless core span.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { capture } from '../support/capture.js';

/** The scripts' folders, removed when the file's tests are done. */
const folders: string[] = [];
function scriptFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vmmkit-trace-'));
  folders.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

describe('vmmkit trace', () => {
  it('a missing script is one line on stderr and exit code 1', async () => {
    const c = capture();
    expect(await runCli(['trace', 'missing-script-for-the-test.mjs'], c.io)).toBe(1);
    expect(c.err).toEqual(['vmmkit trace: cannot load missing-script-for-the-test.mjs: no such file']);
  });

  it('a script whose own import is missing says so in one line', async () => {
    const dir = scriptFolder();
    const script = join(dir, 'bad.mjs');
    writeFileSync(script, "import 'no-such-package-anywhere';\nexport default () => {};\n");
    const c = capture();
    expect(await runCli(['trace', script], c.io)).toBe(1);
    expect(c.err).toHaveLength(1);
    expect(c.err[0]).toMatch(/^vmmkit trace: cannot load .*bad\.mjs: .*no-such-package-anywhere/);
  });

  it("a process's dispose is a span of its front end, with core's work under it", async () => {
    const dir = scriptFolder();
    const script = join(dir, 's.mjs');
    writeFileSync(
      script,
      `export default ({ createCuda }) => {
  const cu = createCuda();
  const b = { value: 0n };
  cu.cuInit(0);
  cu.cuDevicePrimaryCtxRetain(b, 0);
  cu.cuCtxSetCurrent(b.value);
  cu.cuMemAlloc(b, 2 * 1024 * 1024);
  cu.dispose();
};
`,
    );
    const c = capture();
    expect(await runCli(['trace', script, '--json'], c.io)).toBe(0);
    interface Span {
      name: string;
      layer?: string;
      children?: Span[];
    }
    const roots = JSON.parse(c.out.join('\n')) as Span[];
    // Every root is a call of the script; nothing of core's or the backend's hangs loose.
    expect(roots.map((r) => r.name)).toEqual([
      'cuInit',
      'cuDevicePrimaryCtxRetain',
      'cuCtxSetCurrent',
      'cuMemAlloc',
      'dispose',
    ]);
    const dispose = roots[4];
    // The teardown's steps (named in the vendor's layers: the driver's unbind and frees) sit under it.
    expect(dispose?.children?.length).toBe(4);
  });
});
