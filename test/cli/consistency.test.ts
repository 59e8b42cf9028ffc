/**
 * Issue 16, item 6: the command line behaves one way as a new user meets it.
 * One set of helpers for every script (Note [Script helpers]); a usage
 * mistake in any command is one line with its usage and exit 2; output
 * names and folders checked alike; a snapshot with no history and a cost
 * table that is not JSON said in one readable line.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { pickle } from '../../src/replay/read/pickle/writer.js';
import { capture } from '../support/capture.js';

const dir = mkdtempSync(join(tmpdir(), 'vmmkit-cli-consistency-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HAND = fileURLToPath(new URL('../replay/fixtures/hand.pickle', import.meta.url));
const TRACE = fileURLToPath(new URL('../../traces/h200/phases_streams-native.pickle.gz', import.meta.url));

async function cli(argv: string[]) {
  const c = capture();
  return { code: await runCli(argv, c.io), out: c.out, err: c.err };
}

/** Every helper, used once: a CUDA process and a bare runtime on one machine, a mark, a breakpoint of its own. */
const ALL_HELPERS = join(dir, 'all-helpers.mjs');
writeFileSync(
  ALL_HELPERS,
  `export default ({ createCuda, createHip, createAcl, createRuntime, createMachine, tracer, mark }) => {
  for (const f of [createHip, createAcl]) if (typeof f !== 'function') throw new Error('a helper is missing');
  let stops = 0;
  tracer.on('cuMemAddressReserve', () => stops++);
  const machine = createMachine({ devices: ['H200'] });
  const cu = createCuda({ machine });
  const box = { value: 0n };
  if (cu.cuInit(0) + cu.cuDevicePrimaryCtxRetain(box, 0) + cu.cuCtxSetCurrent(box.value) !== 0)
    throw new Error('no context');
  cu.cuMemAddressReserve(box, 2 * 1024 * 1024, 0, 0n, 0);
  const rt = createRuntime({ machine });
  rt.reserve(4 * 1024 * 1024);
  if (stops !== 1) throw new Error('tracer.on did not stop at cuMemAddressReserve');
  mark('both');
  cu.dispose();
};
`,
);

describe('one set of helpers for trace, inspect and map', () => {
  it('the same script runs under each; mark is a span in the tree and a place to look in inspect and map', async () => {
    const trace = await cli(['trace', '--layers', 'generic', ALL_HELPERS]);
    expect(trace.err).toEqual([]);
    expect(trace.code).toBe(0);
    expect(trace.out.at(-1)).toContain('[script] mark(both)');
    expect(trace.out.at(-1)).toContain('[core] reserve(0x400000');

    const inspect = await cli(['inspect', ALL_HELPERS]);
    expect(inspect.code, inspect.err.join('\n')).toBe(0);
    const ends = inspect.out.filter((l) => l.startsWith('=== ')).map((l) => l.split('\n')[0]);
    expect(ends.map((l) => l.replace(/process \d+/, 'process N'))).toEqual([
      '=== CUDA process N just before it was disposed',
      '=== core process N when the script returned',
    ]);
    const at = await cli(['inspect', ALL_HELPERS, '--at', 'both', '--json']);
    expect(at.code, at.err.join('\n')).toBe(0);
    const marked = JSON.parse(at.out.join('\n')) as { label: string }[];
    expect(marked.map((m) => m.label.replace(/process \d+/, 'process N'))).toEqual([
      "CUDA process N at mark 'both'",
      "core process N at mark 'both'",
    ]);

    const map = await cli(['map', ALL_HELPERS, '--at', 'both', '--out', join(dir, 'all.svg')]);
    expect(map.err).toEqual([]);
    expect(map.out).toEqual([`wrote ${join(dir, 'all.svg')} (2 processes)`]);
  });

  it('a script that throws is one line naming its line, exit 1, under each command', async () => {
    const script = join(dir, 'throws.mjs');
    writeFileSync(script, "export default () => {\n  throw new Error('no luck');\n};\n");
    for (const command of ['trace', 'inspect', 'map']) {
      const r = await cli([command, script, ...(command === 'map' ? ['--out', join(dir, 't.html')] : [])]);
      expect(r.code, command).toBe(1);
      expect(r.err, command).toEqual([`vmmkit ${command}: ${script} threw: no luck (line 2)`]);
    }
  });

  it('a script with no default function names every helper', async () => {
    const script = join(dir, 'no-default.mjs');
    writeFileSync(script, 'export const x = 1;\n');
    const r = await cli(['inspect', script]);
    expect(r.code).toBe(1);
    expect(r.err[0]).toContain(
      'must export a default function taking { createCuda, createHip, createAcl, createRuntime, createMachine, tracer, mark }',
    );
  });
});

describe('a usage mistake is one line with the usage, exit 2, in every command', () => {
  const mistakes: [string, string[], RegExp][] = [
    ['demo', ['demo', '--flavor', 'opencl'], /unknown flavor 'opencl'/],
    ['demo', ['demo', '--frobnicate'], /unknown option '--frobnicate'/],
    ['trace', ['trace', '--layers', 'rocm', ALL_HELPERS], /--layers is generic or vendor, not 'rocm'/],
    ['trace', ['trace'], /no script given/],
    ['trace', ['trace', ALL_HELPERS, '--frobnicate'], /unknown option '--frobnicate'/],
    ['inspect', ['inspect', ALL_HELPERS, '--frobnicate'], /unknown option '--frobnicate'/],
    [
      'map',
      ['map', ALL_HELPERS, '--out', join(dir, 'm.png')],
      /--out .*m\.png: a map is an HTML page or an SVG picture/,
    ],
    ['replay', ['replay', HAND, '--allocator', 'jemalloc'], /unknown allocator 'jemalloc'/],
    ['report', ['report', HAND, '--allocator', 'jemalloc'], /unknown allocator 'jemalloc'/],
    ['advise', ['advise', HAND, '--frobnicate'], /unknown option '--frobnicate'/],
    ['report', ['report', HAND, '--out', join(dir, 'x.svg')], /--out .*x\.svg: the report is one HTML page/],
  ];
  for (const [command, argv, message] of mistakes) {
    it(`${argv.slice(0, 4).join(' ').replace(dir, '…')}`, async () => {
      const r = await cli(argv);
      expect(r.code).toBe(2);
      expect(r.out).toEqual([]);
      expect(r.err).toHaveLength(1);
      expect(r.err[0]).not.toContain('\n');
      expect(r.err[0]).toMatch(message);
      expect(r.err[0].startsWith(`vmmkit ${command}: `)).toBe(true);
      expect(r.err[0]).toContain(`(usage: vmmkit ${command} `);
    });
  }

  it('an unknown command too', async () => {
    const r = await cli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([
      "vmmkit: unknown command 'frobnicate' (usage: vmmkit demo|trace|inspect|replay|advise|report|open|compare|map ..., and vmmkit COMMAND --help)",
    ]);
  });

  it('report --out x.svg writes nothing', () => {
    expect(existsSync(join(dir, 'x.svg'))).toBe(false);
  });
});

describe('bad input is one line and exit 1, said alike everywhere', () => {
  it('a missing folder: report --out, report --export-snapshot and replay --export alike, before any work', async () => {
    const missing = join(dir, 'no', 'such');
    const out = await cli(['report', HAND, '--out', join(missing, 'r.html')]);
    const snap = await cli([
      'report',
      HAND,
      '--out',
      join(dir, 'r.html'),
      '--export-snapshot',
      join(missing, 's.pickle'),
    ]);
    const exp = await cli(['replay', HAND, '--export', missing]);
    for (const r of [out, snap, exp]) {
      expect(r.code).toBe(1);
      expect(r.out).toEqual([]);
      expect(r.err).toHaveLength(1);
      expect(r.err[0]).toMatch(/^vmmkit (report|replay): cannot write .*: no folder /);
    }
    expect(existsSync(missing)).toBe(false);
    expect(existsSync(join(dir, 'r.html'))).toBe(false);
  });

  it('a snapshot with no history asks whether history was recorded, in replay, advise and report', async () => {
    const empty = join(dir, 'empty.pickle');
    writeFileSync(empty, pickle({ segments: [], device_traces: [[]] }));
    const noTraces = join(dir, 'no-traces.pickle');
    writeFileSync(noTraces, pickle({ segments: [] }));
    for (const command of ['replay', 'advise', 'report']) {
      for (const file of [empty, noTraces]) {
        const extra = command === 'report' ? ['--out', join(dir, 'e.html')] : [];
        const r = await cli([command, file, ...extra]);
        expect(r.code, `${command} ${file}`).toBe(1);
        expect(r.err, `${command} ${file}`).toHaveLength(1);
        expect(r.err[0]).toMatch(new RegExp(`^vmmkit ${command}: .*was history recorded\\?`));
      }
    }
    expect(existsSync(join(dir, 'e.html'))).toBe(false);
  });

  it('--costs of a binary file says it is not JSON and prints none of its bytes', async () => {
    for (const argv of [
      ['replay', HAND, '--costs', TRACE],
      ['report', HAND, '--costs', TRACE, '--out', join(dir, 'c.html')],
    ]) {
      const r = await cli(argv);
      expect(r.code).toBe(1);
      expect(r.err).toEqual([`vmmkit ${argv[0]}: cannot read cost table ${TRACE}: it is not JSON`]);
    }
  });
});
