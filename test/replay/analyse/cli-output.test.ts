/**
 * Where users look for the analyses in the existing commands: `vmmkit replay`
 * prints what holds memory at the peak and its --json carries analysePeak's
 * answer as `peak`; `vmmkit advise` with several ranks prints them and its
 * --json carries summariseRanks' answer as `ranks`.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../../src/cli/cli.js';

import { readSnapshotFile } from '../../../src/replay/read/load.js';
import { capture } from '../../support/capture.js';
import { analysePeak } from '../../support/replay.js';

const at = (p: string) => fileURLToPath(new URL(`../../../${p}`, import.meta.url));
const STACKS = at('traces/h200-whatif/gpt_train--stacks.pickle');
const TWO = at('test/replay/fixtures/wild/memsnapdump-multi-devices.pickle.gz');

describe('the analyses in the existing commands', () => {
  it("replay --json carries the peak breakdown; with --alloc-conf, where that setting's bytes go", async () => {
    const c = capture();
    const args = [
      'replay',
      STACKS,
      '--allocator',
      'pytorch',
      '--alloc-conf',
      'expandable_segments:True',
      '--json',
    ];
    expect(await runCli(args, c.io)).toBe(0);
    const j = JSON.parse(c.out[0]);
    const direct = analysePeak(readSnapshotFile(STACKS), { allocConf: 'expandable_segments:True' });
    expect(j.peak).toEqual(JSON.parse(JSON.stringify(direct)));
    expect(j.peak.devices[0].reservedBytes).toBe(j.asRecorded.devices[0].recordedPeakBytes);
  });

  it('replay prints the categories and the top stacks after its answer', async () => {
    const c = capture();
    expect(await runCli(['replay', STACKS, '--allocator', 'pytorch-native'], c.io)).toBe(0);
    const from = c.out.findIndex((l) => l.startsWith('at the peak ('));
    expect(from).toBeGreaterThan(0);
    expect(c.out[0]).toMatch(/^as recorded: reproduced/);
    expect(c.out.slice(from)).toContain('  parameters: 213.2 MiB (3.8%)');
    expect(c.out.slice(from)).toContain('  top stacks by bytes live:');
  });

  it('advise over a two-device snapshot adds the ranks, in its text and its --json', async () => {
    const c = capture();
    const args = ['advise', TWO, '--workers', '0', '--memory-limit', '600MiB', '--json'];
    expect(await runCli(args, c.io)).toBe(0);
    const j = JSON.parse(c.out[0]);
    expect(j.ranks.ranks.map((r: { device: number }) => r.device)).toEqual([0, 1]);
    expect(j.ranks.advice.allocConf).toBe(j.recommended.allocConf);
    expect(j.ranks.firstToRunOut.rank).toBe(0);
    const t = capture();
    expect(await runCli(args.slice(0, -1), t.io)).toBe(0);
    expect(t.out.some((l) => l.startsWith('ranks: 2; the highest peak is '))).toBe(true);
    expect(t.out.some((l) => l.startsWith('first to run out: '))).toBe(true);
  });
});
