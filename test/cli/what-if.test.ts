/**
 * What-if from the command line: `vmmkit replay` with --alloc-conf and
 * --memory-limit, and what it says of a recorded OOM (the API's side is
 * test/replay/whatif.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { pickle } from '../../src/replay/read/pickle/writer.js';
import { capture } from '../support/capture.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const trace = (name: string) => new URL(`../../traces/h200/${name}`, import.meta.url).pathname;

describe('recorded OOMs (Note [Recorded OOMs])', () => {
  it('the CLI says whether the recorded OOM would have succeeded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-whatif-'));
    try {
      const file = join(dir, 'oom.pickle');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(
        file,
        pickle({
          segments: [],
          device_traces: [
            [
              { action: 'alloc', addr: 0x1000, size: 40 * MiB, stream: 0, time_us: 1 },
              { action: 'oom', addr: 0, device_free: 0, size: 60 * MiB, stream: 0, time_us: 2 },
            ],
          ],
        }),
      );
      const c = capture();
      expect(
        await runCli(['replay', file, '--allocator', 'pytorch-native', '--memory-limit', '80MiB'], c.io),
      ).toBe(0);
      expect(c.out.join('\n')).toMatch(
        /pytorch-native: the recorded OOM at event 1 \(60\.0 MiB\) fails here too/,
      );
      const ok = capture();
      expect(
        await runCli(['replay', file, '--allocator', 'pytorch-native', '--memory-limit', '1GiB'], ok.io),
      ).toBe(0);
      expect(ok.out.join('\n')).toMatch(/the recorded OOM at event 1 \(60\.0 MiB\) would have succeeded/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('vmmkit replay --alloc-conf / --memory-limit', () => {
  const file = trace('moe_train-native.pickle.gz');

  it('a bad settings string or size is one line and exit 2', async () => {
    for (const args of [
      ['--alloc-conf', 'nosuchkey:1'],
      ['--alloc-conf', 'max_split_size_mb:banana'],
      ['--alloc-conf', 'backend:cudaMallocAsync'],
      ['--memory-limit', '12 parsecs'],
      ['--memory-limit', '-3GiB'],
      ['--memory-limit', '0'],
    ]) {
      const c = capture();
      expect(await runCli(['replay', file, ...args], c.io), args.join(' ')).toBe(2);
      expect(c.err[0], args.join(' ')).toMatch(/^vmmkit replay: --(alloc-conf|memory-limit): /);
      expect(c.err[0]).not.toContain('\n    at ');
      expect(c.out).toEqual([]);
    }
  });

  it('--json gives each allocator its OOMs and first OOM; the text says it in words', async () => {
    const c = capture();
    const args = ['replay', file, '--memory-limit', '3.1GiB', '--alloc-conf', 'expandable_segments:True'];
    expect(await runCli([...args, '--json'], c.io)).toBe(0);
    const j = JSON.parse(c.out.join('\n')) as {
      allocConf: string;
      memoryLimit: number;
      trace: { recordedPeakReservedBytes: number; startedMidRun: boolean };
      allocators: {
        name: string;
        ooms: number;
        firstOom: { event: number; bytes: number; timeUs: number } | null;
      }[];
    };
    expect(j.allocConf).toBe('expandable_segments:True');
    expect(j.memoryLimit).toBe(Math.floor(3.1 * GiB));
    expect(j.trace.startedMidRun).toBe(false);
    expect(j.trace.recordedPeakReservedBytes).toBeGreaterThan(0);
    // With a settings string, `pytorch` comes first, then the defaults.
    expect(j.allocators.map((a) => a.name)).toEqual([
      'pytorch',
      'pytorch-native',
      'pytorch-expandable',
      'vmmkit',
    ]);
    for (const a of j.allocators) {
      expect(a.ooms).toBeGreaterThan(0);
      expect(a.firstOom).toMatchObject({
        event: expect.any(Number),
        bytes: expect.any(Number),
        timeUs: expect.any(Number),
      });
    }
    const text = capture();
    expect(await runCli(args, text.io)).toBe(0);
    expect(text.out.join('\n')).toMatch(
      /pytorch-native runs out of memory at event [\d,]+: a [\d.]+ MiB request with [\d.]+ GiB reserved, [\d.]+ MiB of it free in \d+ pieces, the largest [\d.]+ MiB/,
    );
    expect(text.out[0]).toMatch(/^as recorded: reproduced \(peak [\d.]+ GiB\)$/);
  });

  it('on several devices each one is answered by its own peak, against the limit each has', async () => {
    const two = new URL('../replay/fixtures/two-devices.pickle', import.meta.url).pathname;
    const c = capture();
    expect(await runCli(['replay', two, '--allocator', 'pytorch-native'], c.io)).toBe(0);
    expect(c.out).toContain(
      'pytorch-native fits, peak device 0 22.0 MiB, device 1 20.0 MiB (42.0 MiB together)',
    );
    const capped = capture();
    expect(
      await runCli(['replay', two, '--allocator', 'pytorch-native', '--memory-limit', '30MiB'], capped.io),
    ).toBe(0);
    // 42 MiB together under a 30 MiB limit: it fits, since each device holds less than its own 30 MiB.
    expect(capped.out).toContain(
      'pytorch-native fits, peak device 0 22.0 MiB, device 1 20.0 MiB of 30.0 MiB each (42.0 MiB together)',
    );
  });

  it('a snapshot with no trace asks whether history was recorded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-whatif-'));
    try {
      const empty = join(dir, 'empty.pickle');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(empty, pickle({ segments: [], device_traces: [[]] }));
      const c = capture();
      expect(await runCli(['replay', empty], c.io)).toBe(1);
      expect(c.err.join('\n')).toMatch(
        /holds no trace events and no live blocks to replay: was history recorded\?/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
