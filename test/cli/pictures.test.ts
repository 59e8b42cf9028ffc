import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { captureScript } from '../../src/cli/map.js';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import { renderMap } from '../../src/report/address-map.js';
import { capture } from '../support/capture.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const TRACE = join(root, 'traces/h200/phases_streams-native.pickle.gz');
const SCRIPT = fileURLToPath(new URL('../report/fixtures/two-processes.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'vmmkit-report-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The report's data, as the page embeds it and draws it (Note [One page]; the drawing: test/browser/report.test.ts). */
interface Piece {
  readonly size: number;
  readonly pinnedBy: readonly { readonly stack: readonly string[] }[];
}
interface EmbeddedAnswer {
  readonly recordedPeakBytes: number;
  readonly memoryLimit: number;
  readonly rows: readonly { readonly name: string; readonly fits: boolean; readonly verdict: string }[];
  readonly advice: { readonly allocConf: string } | null;
  readonly oomMaps: readonly { readonly svg: string; readonly pieces: readonly Piece[] }[];
  readonly notes?: readonly string[];
}
function embedded(html: string): { answer: EmbeddedAnswer } {
  const open = 'id="vmmkit-data">';
  const at = html.indexOf(open);
  expect(at, 'the report embeds its data').toBeGreaterThan(0);
  return JSON.parse(html.slice(at + open.length, html.indexOf('</script>', at)));
}

describe('vmmkit report', () => {
  it('shows, at an OOM, the stacks that allocated the blocks pinning the free pieces (a snapshot with stacks)', async () => {
    const c = capture();
    const out = join(dir, 'stacks.html');
    const stacks = join(root, 'traces/h200-whatif/gpt_train--stacks.pickle');
    const args = ['report', stacks, '--memory-limit', '4000MiB', '--allocator', 'pytorch-native'];
    expect(await runCli([...args, '--out', out], c.io), c.err.join('\n')).toBe(0);
    const { answer } = embedded(readFileSync(out, 'utf8'));
    // The program's Python frames, as _dump_snapshot recorded them, under each pinning block.
    const pinning = answer.oomMaps.flatMap((m) => m.pieces.flatMap((p) => p.pinnedBy.map((b) => b.stack)));
    expect(pinning.length).toBeGreaterThan(0);
    expect(pinning.some((frames) => frames.some((f) => /\(\S*record\.py:\d+\)/.test(f)))).toBe(true);
    expect(pinning.some((frames) => frames.some((f) => f.includes('DeviceCachingAllocator::malloc')))).toBe(
      false,
    );
  });

  it("says what a snapshot's private pools leave open, as replay's notes do (Note [Recording CUDA graphs])", async () => {
    const verl = fileURLToPath(new URL('../replay/fixtures/wild/verl-mempools.pickle.gz', import.meta.url));
    const replayed = capture();
    expect(await runCli(['replay', verl], replayed.io)).toBe(0);
    const said = replayed.err.filter((l) => l.startsWith('note: the snapshot shows ')).map((l) => l.slice(6));
    expect(said).toHaveLength(1);
    const out = join(dir, 'verl.html');
    expect(await runCli(['report', verl, '--out', out], capture().io)).toBe(0);
    expect(embedded(readFileSync(out, 'utf8')).answer.notes).toEqual(said);
    const plain = join(dir, 'plain.html');
    expect(await runCli(['report', TRACE, '--out', plain], capture().io)).toBe(0);
    expect(embedded(readFileSync(plain, 'utf8')).answer.notes).toEqual([]);
  });

  it('searches for advice only when asked (Note [The answer, then the advice]): the same answer, no setting named', async () => {
    const c = capture();
    const moe = join(root, 'traces/h200/moe_train-native.pickle.gz');
    const answers = [];
    for (const extra of [[], ['--advise']]) {
      const out = join(dir, `advice-${extra.length}.html`);
      expect(await runCli(['report', moe, '--memory-limit', '3.2GiB', ...extra, '--out', out], c.io)).toBe(0);
      answers.push(embedded(readFileSync(out, 'utf8')).answer);
    }
    const [plain, advised] = answers;
    expect(plain.advice).toBeNull();
    expect(advised.advice?.allocConf).toMatch(/expandable_segments:True/);
    expect({ ...plain, advice: null }).toEqual({ ...advised, advice: null });
  });

  it('opens with the answer: the recorded peak, each verdict under the limit, the advice, the map at an OOM', async () => {
    const c = capture();
    const out = join(dir, 'answer.html');
    const moe = join(root, 'traces/h200/moe_train-native.pickle.gz');
    // Under 3.2 GiB the native allocator runs out and expandable segments fit (advise recommends a setting).
    const code = await runCli(['report', moe, '--memory-limit', '3.2GiB', '--advise', '--out', out], c.io);
    expect(code, c.err.join('\n')).toBe(0);
    const data = embedded(readFileSync(out, 'utf8'));
    // The recorded run's own peak: the running sum of its segment events (4554 MiB, traces/README.md).
    expect(data.answer.recordedPeakBytes).toBe(4554 * 1024 ** 2);
    expect(data.answer.memoryLimit).toBe(Math.floor(3.2 * 1024 ** 3));
    expect(data.answer.rows.map((r) => r.name)).toEqual(['pytorch-native', 'pytorch-expandable', 'vmmkit']);
    expect(data.answer.rows[0].verdict).toMatch(
      /^pytorch-native runs out of memory at event [\d,]+: a 64\.0 MiB request/,
    );
    expect(data.answer.advice?.allocConf).toMatch(/expandable_segments:True/);
    // The address space at the failed request, with its largest free pieces and the blocks beside them.
    expect(data.answer.oomMaps.some((m) => m.svg.includes('data-oom="true"'))).toBe(true);
    expect(data.answer.oomMaps[0].pieces[0].size).toBeGreaterThan(0);
  });

  it('writes one self-contained HTML file, and with --export-snapshot a snapshot per allocator', async () => {
    const c = capture();
    const out = join(dir, 'r.html');
    const snap = join(dir, 'run.pickle.gz');
    const code = await runCli(
      [
        'report',
        TRACE,
        '--allocator',
        'vmmkit',
        '--allocator',
        'pytorch-native',
        '--out',
        out,
        '--export-snapshot',
        snap,
      ],
      c.io,
    );
    expect(code, c.err.join('\n')).toBe(0);
    const html = readFileSync(out, 'utf8');
    expect(html).toContain('<script type="application/json" id="vmmkit-data">');
    expect(embedded(html).answer.rows.map((r) => r.name)).toEqual(['vmmkit', 'pytorch-native']);
    // The page's script (uPlot inside it) is inline: no script element names a source.
    expect(html).not.toMatch(/<script[^>]*\ssrc=/);
    // Nothing to fetch: no src= or href= attribute pointing anywhere.
    expect(html).not.toMatch(/\s(src|href)=["']?(https?:|\/\/)/);
    for (const name of ['vmmkit', 'pytorch-native']) {
      const file = join(dir, `run-${name}.pickle.gz`);
      const back = readSnapshotFile(file);
      expect(planReplay(back).peakRequestedBytes).toBe(
        planReplay(readSnapshotFile(TRACE)).peakRequestedBytes,
      );
    }
    expect(c.out).toEqual([
      `wrote ${out}`,
      `wrote ${join(dir, 'run-vmmkit.pickle.gz')} (vmmkit)`,
      `wrote ${join(dir, 'run-pytorch-native.pickle.gz')} (pytorch-native)`,
    ]);
  });

  it('reports progress to a terminal (rising to 1, then cleared) and prints none without one', async () => {
    const tty = capture();
    expect(await runCli(['report', TRACE, '--out', join(dir, 'p.html')], tty.tty)).toBe(0);
    expect(tty.progress.length).toBeGreaterThan(1);
    expect(tty.progress[tty.progress.length - 1]).toBe(-1);
    const rising = tty.progress.slice(0, -1);
    expect(rising[rising.length - 1]).toBe(1);
    expect(rising.every((f, i) => i === 0 || f >= rising[i - 1])).toBe(true);
    const pipe = capture();
    expect(await runCli(['report', TRACE, '--out', join(dir, 'q.html')], pipe.io)).toBe(0);
    expect(pipe.err).toEqual([]);
  });

  const bad: [string, string[], number, RegExp][] = [
    [
      'a missing snapshot',
      ['report', join(dir, 'nope.pickle'), '--out', join(dir, 'x.html')],
      1,
      /nope\.pickle/,
    ],
    [
      'an unknown allocator',
      ['report', TRACE, '--allocator', 'jemalloc', '--out', join(dir, 'x.html')],
      2,
      /unknown allocator 'jemalloc'/,
    ],
    [
      'an --out in a folder that does not exist',
      ['report', TRACE, '--out', join(dir, 'no/such/r.html')],
      1,
      /cannot write .*no folder/,
    ],
    ['an --out that is a folder', ['report', TRACE, '--out', dir], 1, /cannot write .*is a folder/],
    [
      'an --export-snapshot that cannot be written',
      ['report', TRACE, '--out', join(dir, 'x.html'), '--export-snapshot', join(dir, 'none/s.pickle')],
      1,
      /cannot write/,
    ],
    ['no snapshot', ['report'], 2, /no snapshot file given/],
    ['an --out with no value', ['report', TRACE, '--out'], 2, /--out needs a value/],
    ['a map option of its own', ['map', SCRIPT, '--allocator', 'vmmkit'], 2, /unknown option '--allocator'/],
    ['an unknown option', ['report', TRACE, '--colour'], 2, /unknown option '--colour'/],
    [
      'a corrupt snapshot',
      ['report', join(root, 'test/replay/fixtures/corrupt.pickle.gz'), '--out', join(dir, 'x.html')],
      1,
      /./,
    ],
    ['a missing script', ['map', join(dir, 'nope.mjs'), '--out', join(dir, 'm.html')], 1, /cannot load/],
    [
      'a map --out in a folder that does not exist',
      ['map', SCRIPT, '--out', join(dir, 'no/m.svg')],
      1,
      /cannot write/,
    ],
    [
      'a mark the script never makes',
      ['map', SCRIPT, '--at', 'never', '--out', join(dir, 'm.html')],
      1,
      /never called mark\('never'\)/,
    ],
  ];
  for (const [what, argv, code, message] of bad) {
    it(`${what}: one line on stderr and exit ${code}, nothing written`, async () => {
      const c = capture();
      expect(await runCli(argv, c.io)).toBe(code);
      expect(c.err.length).toBe(1);
      expect(c.err[0]).not.toContain('\n');
      expect(c.err[0]).toMatch(message);
      expect(c.out).toEqual([]);
      expect(existsSync(join(dir, 'x.html'))).toBe(false);
    });
  }
});

describe('vmmkit map and renderMap', () => {
  it('describes each process at its end: A just before dispose, B when the script returned', async () => {
    const caps = await captureScript(SCRIPT);
    expect(caps.map((c) => c.label.replace(/process \d+ /, ''))).toEqual([
      'just before it was disposed',
      'when the script returned',
    ]);
    const [a, b] = caps.map((c) => c.description);
    expect(a.reservations.map((r) => r.mappings.length)).toEqual([1]);
    expect(b.reservations[0].mappings[0].access).toEqual([0]);
    const svg = renderMap(a);
    expect(svg.match(/class="reservation"/g)?.length).toBe(1);
    expect(svg.match(/class="mapping"/g)?.length).toBe(1);
    expect(svg).toContain('device 0 read-write');
    expect(renderMap(b)).toContain('device 0 none');
    // Access bands: device 0's read-write band under A's mapping, none under B's.
    expect(svg.match(/class="access"[^>]*data-device="0"/g)?.length).toBe(1);
    expect(renderMap(b)).not.toContain('class="access"');
  });

  it('--at draws every live process at the mark', async () => {
    const caps = await captureScript(SCRIPT, 'mapped');
    expect(caps.length).toBe(2);
    expect(caps[0].description.reservations[0].mappings.length).toBe(2);
    expect(caps[1].description.allocations.length).toBe(1);
  });

  it('writes HTML (a map and tables per process) or SVG by the --out name', async () => {
    const c = capture();
    const html = join(dir, 'm.html');
    const svg = join(dir, 'm.svg');
    expect(await runCli(['map', SCRIPT, '--at', 'mapped', '--out', html], c.io)).toBe(0);
    expect(await runCli(['map', SCRIPT, '--out', svg], c.io)).toBe(0);
    expect(c.out).toEqual([`wrote ${html} (2 processes)`, `wrote ${svg} (2 processes)`]);
    const page = readFileSync(html, 'utf8');
    expect(page.match(/<section class="process"/g)?.length).toBe(2);
    expect(page.match(/class="mapping-row"/g)?.length).toBe(3);
    expect(page.match(/class="handle-row"/g)?.length).toBe(3);
    const text = readFileSync(svg, 'utf8');
    expect(text.startsWith('<svg')).toBe(true);
    expect(text.match(/class="address-map"/g)?.length).toBe(2);
  });
});

/** The built command line (npm ci's prepare builds dist/), when it is newer than the sources it runs. */
function builtCli(): string | undefined {
  const main = join(root, 'dist/src/cli/report.js');
  if (!existsSync(main)) return undefined;
  const newest = Math.max(
    ...['src/cli/report.ts', 'src/cli/cli.ts', 'src/report/collect.ts'].map(
      (f) => statSync(join(root, f)).mtimeMs,
    ),
  );
  return statSync(main).mtimeMs >= newest ? join(root, 'dist/src/cli/main.js') : undefined;
}

const cli = builtCli();
const scriptMissing = spawnSync('script', ['--version']).error !== undefined;

describe.skipIf(cli === undefined || scriptMissing)(
  'the progress bar of the built vmmkit (skipped unless dist/ is current and util-linux script is here)',
  () => {
    it('draws on a terminal and stays quiet on a pipe', () => {
      const out = join(dir, 'tty');
      mkdirSync(out, { recursive: true });
      const args = `report ${TRACE} --out ${join(out, 'r.html')}`;
      // Under script(1) stderr is a pseudo-terminal.
      const tty = spawnSync('script', ['-qec', `node ${cli} ${args}`, '/dev/null'], { encoding: 'utf8' });
      expect(tty.status, tty.stderr).toBe(0);
      expect(tty.stdout).toMatch(/\r\[#+ *\] \d+%/);
      expect(tty.stdout).toContain('\x1b[K');
      const pipe = spawnSync('node', [cli!, ...args.split(' ')], { encoding: 'utf8' });
      expect(pipe.status).toBe(0);
      expect(pipe.stderr).not.toContain('%');
      expect(pipe.stderr).not.toContain('\r');
    });
  },
);
