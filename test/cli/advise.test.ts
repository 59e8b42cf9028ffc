/** `vmmkit advise` (src/cli/advise.ts): usage, the JSON document, the text, and one-line errors. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADVISE_EXIT_CODES, ADVISE_USAGE, adviseCommand, parseTolerance } from '../../src/cli/advise.js';
import { capture } from '../support/capture.js';

const TRACE = fileURLToPath(new URL('../../traces/h200/phases_streams-native.pickle.gz', import.meta.url));
const TRACE2 = fileURLToPath(
  new URL('../../traces/h200/phases_streams-expandable.pickle.gz', import.meta.url),
);
const GPT = fileURLToPath(
  new URL('../../traces/h200-whatif/gpt_train--reference.pickle.gz', import.meta.url),
);
const FIXTURES = new URL('../replay/fixtures/', import.meta.url);

async function advise(args: string[]) {
  const c = capture();
  const code = await adviseCommand(c.tty, args);
  return { code, ...c };
}

describe('vmmkit advise', () => {
  it('--help prints the usage and the exit codes on stdout', async () => {
    const { code, out, err } = await advise(['--help']);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(out).toEqual([`usage: ${ADVISE_USAGE}`, ADVISE_EXIT_CODES]);
    expect(ADVISE_USAGE).toContain(
      'vmmkit advise <snapshot.pickle[.gz]>... [--memory-limit SIZE] [--tolerance PCT,SIZE]',
    );
    expect(ADVISE_EXIT_CODES).toMatch(/0 .*; 1 .*; 2 .*; 3 no setting fits under --memory-limit/);
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
    // Every answer starts with the recording reproduced; the verdict follows it.
    expect(out[0]).toMatch(/^as recorded: reproduced \(peak [\d.]+ GiB\)$/);
    expect(out[3]).toMatch(/^trace: 1,880 events/);
    expect(text).toMatch(/recorded: PyTorch reserved .* at its peak, PYTORCH_CUDA_ALLOC_CONF unset/);
    expect(text).toMatch(/\n\s+1 {2}\S+/);
    expect(text).toContain("the recorded run (PyTorch's own segment events)");
    expect(text).toContain("vmmkit's own allocator");
    expect(text).toContain('lower bound: any allocator on 2 MiB pages');
    const line = out.find((l) => l.startsWith('PYTORCH_CUDA_ALLOC_CONF='));
    expect(line).toMatch(/^PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True/);
    expect(text).toMatch(/predicted peak .*; fits, peak /);
    // The verdict comes first; the trap note quotes this snapshot's replay only.
    expect(out[1]).toMatch(/^advice: expandable_segments:True fits, peak .* \(no memory limit given\)$/);
    expect(text).toMatch(
      /note: the known trap expandable_segments:True,max_split_size_mb:128 \(pytorch\/pytorch#123548\) would reserve .* on this snapshot/,
    );
    expect(text).not.toMatch(/H200|GPT training/);
  });

  it('simplest among equals and headroom: the line to paste, its margin, and the tolerance', async () => {
    const { code, out } = await advise([GPT, '--memory-limit', '5630853120']);
    expect(code).toBe(0);
    expect(out[1]).toMatch(
      /^advice: max_split_size_mb:32,\S+ fits under 5\.24 GiB with 74\.0 MiB \(1\.4%\) to spare/,
    );
    expect(out).toContain('  margin: 74.0 MiB under the limit 5.24 GiB (1.4%)');
    // Settings that fit by less than the tolerance are marked in the table, and come after those with room.
    expect(out.some((l) => /^ +\d+ {2}\S+ +5\.\d\d GiB \(tight\)/.test(l))).toBe(true);
    const j = JSON.parse((await advise([GPT, '--memory-limit', '5630853120', '--json'])).out[0]);
    const mss32 = j.candidates.find((c: { allocConf: string }) => c.allocConf === 'max_split_size_mb:32');
    expect(mss32).toMatchObject({ fits: true, tight: true, headroomBytes: 0 });
    expect(j.recommended).toMatchObject({ tight: false, headroomBytes: 74 * 1024 ** 2 });
    const plain = await advise([GPT, '--tolerance', '64MiB']);
    expect(plain.out.find((l) => l.startsWith('PYTORCH_CUDA_ALLOC_CONF='))).toBe(
      'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True',
    );
    expect(plain.out.join('\n')).toMatch(
      /the simplest of \d+ setting\(s\) within the tolerance 64\.0 MiB of the best; the lowest, expandable_segments:True,roundup_power2_divisions:8, reserves 5\.21 GiB \(40\.0 MiB less/,
    );
    const tuned = await advise([GPT, '--tolerance', '0%']);
    expect(tuned.out.find((l) => l.startsWith('PYTORCH_CUDA_ALLOC_CONF='))).toBe(
      'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,roundup_power2_divisions:8',
    );
  });

  it("a ring-wrapped snapshot: the recorded peak is the whole run's (6.35 GiB), not the window's (1.50 GiB)", async () => {
    const ring = GPT.replace('--reference', '--ring-native');
    const { code, out } = await advise([ring]);
    expect(code).toBe(0);
    expect(out[0]).toBe('as recorded: reproduced (peak 6.35 GiB)');
    expect(out).toContain('recorded: PyTorch reserved 6.35 GiB at its peak, PYTORCH_CUDA_ALLOC_CONF unset');
    // Ranked against the whole run's peak (against the window's, every setting came out 3.5x to 4.2x):
    // the recorded settings replayed are exactly it, and the best setting is below it.
    const row = out.find((l) => l.includes('PyTorch with the recorded settings'));
    expect(row).toMatch(/6\.35 GiB +1\.000 /);
    const ratios = out.flatMap((l) => /GiB +(\d\.\d{3}) /.exec(l)?.[1] ?? []).map(Number);
    expect(Math.min(...ratios)).toBeLessThan(0.9);
  });

  it('the recorded settings are named as recorded, where the search replayed them as a simpler string', async () => {
    // nishi951/triton-unfold: max_split_size_mb:512 recorded, no block that large, no segment events.
    const file = fileURLToPath(new URL('wild/triton-unfold-recorded-conf.pickle.gz', FIXTURES));
    const { code, out } = await advise([file]);
    expect(code).toBe(0);
    expect(out).toContain(
      "recorded: PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512 (no segment events: the run's own peak is not in the snapshot)",
    );
    expect(out.find((l) => l.includes('PyTorch with the recorded settings'))).toMatch(
      /^ {4}PyTorch with the recorded settings \(max_split_size_mb:512, replayed as the defaults\) +66\.0 MiB /,
    );
    // An older PyTorch's snapshot records no settings at all: not the same as recording them unset.
    const old = fileURLToPath(new URL('wild/eor-nn-no-settings.pickle.gz', FIXTURES));
    expect((await advise([old])).out).toContain(
      'recorded: PyTorch reserved 128.0 MiB at its peak, PYTORCH_CUDA_ALLOC_CONF not recorded',
    );
    // Where the recorded string is the one replayed, it is named alone.
    const { out: gpt } = await advise([GPT]);
    expect(gpt.find((l) => l.includes('PyTorch with the recorded settings'))).toMatch(
      /PyTorch with the recorded settings \(defaults\) /,
    );
  });

  it("advise says what a snapshot's private pools leave open, as replay does (Note [Recording CUDA graphs])", async () => {
    const verl = fileURLToPath(new URL('wild/verl-mempools.pickle.gz', FIXTURES));
    const { code, err } = await advise([verl]);
    expect(code).toBe(0);
    expect(err.filter((l) => l.startsWith('note: the snapshot shows '))).toEqual([
      expect.stringMatching(
        /^note: the snapshot shows private pools that graph_pool_handle\(\) or torch\.cuda\.MemPool\(\) made .*vLLM's sleep mode/,
      ),
    ]);
    const plain = await advise([GPT]);
    expect(plain.err.filter((l) => l.startsWith('note: the snapshot shows '))).toEqual([]);
  });

  it('a window that starts mid-run: no figure for another setting is printed as if it held', async () => {
    const ring = GPT.replace('--reference', '--ring-native');
    const { out } = await advise([ring]);
    expect(out[1]).toMatch(/^advice, estimated from a window that starts mid-run: expandable_segments:True/);
    // Every other setting's figure is marked an estimate (or a lower bound, '>' where pruning stopped it);
    // the recorded settings' rows are the recording reproduced, exact.
    const table = out.filter((l) => /^ *\d+ {2}\S/.test(l) && / GiB /.test(l));
    expect(table.length).toBeGreaterThan(5);
    for (const row of table)
      if (row.includes("(empty: PyTorch's defaults)")) expect(row).toMatch(/ 6\.35 GiB /);
      else expect(row).toMatch(/ (~|> )[\d.]+ GiB /);
    expect(out.find((l) => l.includes('PyTorch with the recorded settings'))).toMatch(/ 6\.35 GiB /);
    expect(out.find((l) => l.includes("vmmkit's own allocator"))).toMatch(/ ~[\d.]+ GiB /);
    expect(out.find((l) => l.startsWith('  predicted peak'))).toMatch(/^ {2}predicted peak ~[\d.]+ GiB/);
    const json = JSON.parse((await advise([ring, '--json'])).out[0]);
    expect(json.exact).toBe(false);
    expect(JSON.parse((await advise([GPT, '--json'])).out[0]).exact).toBe(true);
  });

  it('--tolerance takes a percentage, a size, or both', () => {
    expect(parseTolerance('2%')).toEqual({ fraction: 0.02, bytes: 0 });
    expect(parseTolerance('128MiB')).toEqual({ fraction: 0, bytes: 128 * 1024 ** 2 });
    expect(parseTolerance('1.5%,1GiB')).toEqual({ fraction: 0.015, bytes: 1024 ** 3 });
    for (const bad of ['lots', '2%,3%', '100%', '', '5%,'])
      expect(() => parseTolerance(bad), bad).toThrow(/--tolerance/);
  });

  it('nothing fits: the verdict first, no line to paste, null in the JSON, exit 3', async () => {
    const { code, out, err } = await advise([GPT, '--memory-limit', '4962910208']);
    expect(code).toBe(3);
    expect(err).toEqual([]);
    expect(out[1]).toMatch(
      /^no PyTorch setting fits under 4\.62 GiB: the live blocks alone need 5\.14 GiB at event [\d,]+$/,
    );
    expect(out.some((l) => l.startsWith('PYTORCH_CUDA_ALLOC_CONF='))).toBe(false);
    expect(out).toContain(`no line to use: ${out[1]}`);
    const json = await advise([GPT, '--memory-limit', '4962910208', '--json']);
    expect(json.code).toBe(3);
    const j = JSON.parse(json.out[0]);
    expect(j.recommended).toBeNull();
    expect(j.equals).toEqual([]);
    expect(j.withoutExpandableSegments).toBeNull();
    expect(j.verdict).toBe(out[1]);
    expect(j.asRecorded[0].reproduced).toBe(true);
  });

  it('several snapshots: each setting on every one, ranked by its worst', async () => {
    const { code, out } = await advise([TRACE, TRACE2, '--json']);
    expect(code).toBe(0);
    const j = JSON.parse(out[0]);
    expect(j.snapshots).toEqual([TRACE, TRACE2]);
    expect(j.recommended.perSnapshot).toHaveLength(2);
    expect(j.recommended.peakReservedBytes).toBe(
      Math.max(...j.recommended.perSnapshot.map((p: { peakReservedBytes: number }) => p.peakReservedBytes)),
    );
    const text = await advise([TRACE, TRACE2]);
    expect(text.out).toContain('2 snapshots: each setting replayed on every one and ranked by its worst');
  });

  it('usage mistakes are one line and the usage, exit 2', async () => {
    for (const [args, message] of [
      [[TRACE, '--memory-limit', '12G'], /--memory-limit: /],
      [[TRACE, '--memory-limit'], /--memory-limit needs a value/],
      [[TRACE, '--memory-limit', '0'], /--memory-limit: 0 is no memory at all/],
      [[TRACE, '--workers', 'many'], /--workers: 'many'/],
      [[TRACE, '--tolerance', 'lots'], /--tolerance: 'lots' is not a percentage/],
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
