/**
 * `vmmkit demo` opens with what most users came for (issue 29): a committed
 * PyTorch snapshot that ended in an OOM, answered as `vmmkit replay` answers
 * it, the recording reproduced first; the vendor sequences follow.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { DEMO_REPLAY_ARGS, DEMO_SNAPSHOT, demoCommand, SNAPSHOT_TITLE } from '../../src/cli/demos/demo.js';
import { replayCommand } from '../../src/cli/replay.js';
import { packagePath } from '../../src/util/package-path.js';
import { capture } from '../support/capture.js';

describe('vmmkit demo opens with a snapshot answered', () => {
  it('`vmmkit demo` (npm run demo) prints the snapshot answer before the vendor sequences', async () => {
    const { io, out } = capture();
    expect(await runCli(['demo'], io)).toBe(0);
    const text = out.join('\n');
    expect(text.indexOf(SNAPSHOT_TITLE)).toBeGreaterThanOrEqual(0);
    expect(text.indexOf('as recorded: reproduced')).toBeLessThan(text.indexOf('CUDA driver API'));
  });

  it('the snapshot first, its as-recorded line and inferred cap before any vendor sequence', async () => {
    const { io, out } = capture();
    expect(await demoCommand(io, [])).toBe(0);
    const text = out.join('\n');
    const lines = text.split('\n');
    const title = lines.indexOf(`=== ${SNAPSHOT_TITLE} ===`);
    expect(title).toBeGreaterThanOrEqual(0);
    const command = lines.indexOf(`$ vmmkit replay ${DEMO_REPLAY_ARGS.join(' ')}`);
    expect(command).toBeGreaterThan(title);
    expect(lines[command + 1]).toBe(
      'as recorded: reproduced (peak 4.50 GiB, OOM at event 20,658: 512.0 MiB)',
    );
    expect(lines[command + 2]).toMatch(/^cap: inferred from the recording: /);
    expect(text).toMatch(/^pytorch runs out of memory under any cap in that interval at event 20,658/m);
    const vendors = text.indexOf('CUDA driver API');
    expect(vendors).toBeGreaterThan(text.indexOf('as recorded: reproduced'));
    // The vendor sequences follow, as before.
    expect(text).toContain('CUDA sequence: every call returned CUDA_SUCCESS');
    expect(text).toContain('HIP sequence: every call returned hipSuccess');
    expect(text).toContain('[hip] hipMemMap');
  });

  it("prints what vmmkit replay prints for the package's copy of the snapshot", async () => {
    const path = packagePath(DEMO_SNAPSHOT);
    expect(path).toBeDefined();
    const replay = capture();
    expect(await replayCommand(replay.io, [path as string, ...DEMO_REPLAY_ARGS.slice(1)])).toBe(0);
    const demo = capture();
    await demoCommand(demo.io, []);
    const at = demo.out.indexOf(`$ vmmkit replay ${DEMO_REPLAY_ARGS.join(' ')}`);
    const shown = demo.out.slice(at + 1, at + 1 + replay.out.length);
    const times = (l: string) => l.replace(/\b\d+(\.\d+)? s\b/g, 'N s');
    expect(shown.map(times)).toEqual(replay.out.map(times));
  });

  it('--flavor runs one vendor sequence alone; --json carries the snapshot lines', async () => {
    const one = capture();
    expect(await demoCommand(one.io, ['--flavor', 'hip'])).toBe(0);
    expect(one.out.join('\n')).not.toContain(SNAPSHOT_TITLE);
    const doc = capture();
    expect(await demoCommand(doc.io, ['--json', '--layers', 'generic'])).toBe(0);
    const parsed = JSON.parse(doc.out.join('\n')) as {
      snapshot: { lines: string[] };
      demos: { flavor: string }[];
    };
    expect(parsed.snapshot.lines[1]).toMatch(/^as recorded: reproduced/);
    expect(parsed.demos.map((d) => d.flavor)).toEqual(['cuda', 'hip', 'acl']);
  });
});
