/**
 * One simulated H200 served to several real OS processes (Note [A machine for
 * several OS processes]): the sharing scenarios with each peer a child process
 * (the compiled agent, dist/conformance/sharing/agent.js, which `npm ci`
 * builds) joined to a machine this process serves. SIGKILL here is a real one.
 * (A client blocks in readSync for each answer, so it cannot live in the
 * serving process itself.)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { osHarness } from '../../conformance/sharing/os-harness.js';
import type { FlavourName } from '../../conformance/sharing/peer.js';
import { exporterEndsScenario, sharedScenario } from '../../conformance/sharing/scenarios.js';
import { serveMachine } from '../../src/backends/sim/machine-server.js';

const agent = fileURLToPath(new URL('../../dist/conformance/sharing/agent.js', import.meta.url));
const remote = fileURLToPath(new URL('../../dist/src/backends/sim/remote-process.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'vmmkit-served-'));
const server = serveMachine(join(dir, 'machine'), { devices: ['H200'] });
const harness = osHarness({ agent, backend: `machine=${server.directory}` });

afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const failed = (r: { checks: { pass: boolean }[]; error?: string }) => ({
  error: r.error,
  failed: r.checks.filter((c) => !c.pass),
});

describe('a served simulated machine', () => {
  describe.skipIf(!existsSync(agent)).each(['cuda', 'hip', 'acl'] as FlavourName[])(
    '%s processes in separate OS processes',
    (flavour) => {
      it('share memory as on the GPU: both ways, freed at the last, never-passed fds refused, the stitch', async () => {
        const r = await sharedScenario(harness, flavour);
        expect(failed(r)).toEqual({ error: undefined, failed: [] });
      });

      it.each(['exit', 'kill'] as const)(
        'the exporter ends (%s) while the importer maps the memory',
        async (how) => {
          const r = await exporterEndsScenario(harness, flavour, how);
          expect(failed(r)).toEqual({ error: undefined, failed: [] });
          expect(server.machine.liveAllocations).toBe(0);
        },
      );
    },
  );
});

describe.skipIf(!existsSync(remote))('a client of a served machine', () => {
  it('whose server goes away gets not-initialized at its next call, not a read that waits for ever', async () => {
    const own = serveMachine(join(dir, 'short-lived'), { devices: ['H200'] });
    // The client: connect, say so, and on any input make one call and print its error kind.
    const script = `import { connectMachine } from ${JSON.stringify(remote)};
      const b = connectMachine(${JSON.stringify(own.directory)});
      console.log('connected');
      process.stdin.once('data', () => {
        try { b.memoryInfo(0); console.log('answered'); } catch (e) { console.log(e.kind); }
        process.exit(0);
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      const saw = (text: string) =>
        new Promise<void>((resolve) => {
          const look = () => out.includes(text) && resolve();
          child.stdout.on('data', (d) => {
            out += String(d);
            look();
          });
          look();
        });
      await saw('connected');
      own.close();
      child.stdin.write('go\n');
      await new Promise((resolve) => child.once('exit', resolve));
      expect(out.trim().split('\n')).toEqual(['connected', 'not-initialized']);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
