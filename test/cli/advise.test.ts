/** `vmmkit advise` (src/cli/advise.ts): usage, the JSON document, the text, and one-line errors. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADVISE_USAGE, adviseCommand } from '../../src/cli/advise.js';
import { capture } from '../support/capture.js';

const TRACE = fileURLToPath(new URL('../../traces/h200/phases_streams-native.pickle.gz', import.meta.url));
const FIXTURES = new URL('../replay/fixtures/', import.meta.url);

async function advise(args: string[]) {
  const c = capture();
  const code = await adviseCommand(c.tty, args);
  return { code, ...c };
}

describe('vmmkit advise', () => {
  it('--help prints the usage on stdout', async () => {
    const { code, out, err } = await advise(['--help']);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(out).toEqual([`usage: ${ADVISE_USAGE}`]);
    expect(ADVISE_USAGE).toContain('vmmkit advise <snapshot.pickle[.gz]> [--memory-limit SIZE]');
  });

  it('--json prints exactly one document: the recommendation, the ranked candidates, the bound, the baselines', async () => {
    const { code, out, err, progress } = await advise([TRACE, '--json', '--memory-limit', '4GiB']);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(out).toHaveLength(1);
    const j = JSON.parse(out[0]);
    expect(Object.keys(j)).toEqual(
      expect.arrayContaining([
        'recommended',
        'candidates',
        'bound',
        'recorded',
        'vmmkit',
        'memoryLimit',
        'traps',
      ]),
    );
    expect(j.memoryLimit).toBe(4 * 1024 ** 3);
    expect(j.recommended).toMatchObject({
      allocConf: expect.any(String),
      peakReservedBytes: expect.any(Number),
      ooms: 0,
    });
    expect(j.recommended).toEqual(j.candidates[0]);
    for (const c of j.candidates)
      expect(Object.keys(c)).toEqual(
        expect.arrayContaining([
          'allocConf',
          'peakReservedBytes',
          'ooms',
          'firstOom',
          'driverCalls',
          'wallMs',
          'ratioToRecorded',
        ]),
      );
    expect(j.bound).toMatchObject({
      peakBytes: expect.any(Number),
      pageBytes: 2 * 1024 * 1024,
      alignment: 512,
    });
    expect(j.recorded.peakReservedBytes).toBeGreaterThan(j.recommended.peakReservedBytes);
    expect(j.vmmkit.peakReservedBytes).toBeGreaterThanOrEqual(j.bound.peakBytes);
    // The progress bar was drawn to the end and cleared.
    expect(progress.at(-1)).toBe(-1);
    expect(progress.at(-2)).toBe(1);
  });

  it('prints the ranked table, the baselines and the one line to use', async () => {
    const { code, out } = await advise([TRACE]);
    expect(code).toBe(0);
    const text = out.join('\n');
    expect(text).toMatch(/^trace: 1,880 events/);
    expect(text).toMatch(/recorded: PyTorch reserved .* at its peak, PYTORCH_CUDA_ALLOC_CONF unset/);
    expect(text).toMatch(/\n\s+1 {2}\S+/);
    expect(text).toContain("the recorded run (PyTorch's own segment events)");
    expect(text).toContain("vmmkit's own allocator");
    expect(text).toContain('lower bound: any allocator on 2 MiB pages');
    const line = out.find((l) => l.startsWith('PYTORCH_CUDA_ALLOC_CONF='));
    expect(line).toMatch(/^PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True/);
    expect(text).toMatch(/predicted peak .*; fits, peak /);
  });

  it('usage mistakes are one line and the usage, exit 2', async () => {
    for (const [args, message] of [
      [[TRACE, '--memory-limit', '12G'], /--memory-limit: /],
      [[TRACE, '--memory-limit'], /--memory-limit needs a value/],
      [[TRACE, '--memory-limit', '0'], /--memory-limit: 0 is no memory at all/],
      [[TRACE, '--workers', 'many'], /--workers: 'many'/],
      [[TRACE, '--frobnicate'], /unknown option '--frobnicate'/],
      [[], /no snapshot file given/],
    ] as const) {
      const { code, out, err } = await advise([...args]);
      expect(code, args.join(' ')).toBe(2);
      expect(out).toEqual([]);
      expect(err).toHaveLength(1);
      expect(err[0]).toMatch(message);
      expect(err[0]).not.toContain('\n');
      expect(err[0]).toContain(' (usage: vmmkit advise');
    }
  });

  it('bad input is one line, exit 1', async () => {
    for (const [file, message] of [
      ['/nonexistent/snap.pickle', /no such file/],
      [fileURLToPath(new URL('corrupt.pickle.gz', FIXTURES)), /gzip/],
      [fileURLToPath(new URL('not-a-dict.pickle', FIXTURES)), /not a dict/],
    ] as const) {
      const { code, out, err } = await advise([file]);
      expect(code, file).toBe(1);
      expect(out).toEqual([]);
      expect(err).toHaveLength(1);
      expect(err[0]).toMatch(/^vmmkit advise: /);
      expect(err[0]).toMatch(message);
      expect(err[0]).not.toContain('\n');
    }
  });
});
