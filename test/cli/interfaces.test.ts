/**
 * The command line as people use it (issue 28, section 4; issue 29's one
 * parser): --alloc-conf as pasted, a key=value typo answered in PyTorch's
 * words with the fix, --device and fractions of it, unitless numbers that
 * cannot be bytes, and every command's --help with its options and an
 * example, all read from one description per command.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { helpOf, parseCommand, UsageError, usageOf } from '../../src/cli/arguments.js';
import { runCli } from '../../src/cli/cli.js';
import * as SPECS from '../../src/cli/command-specs.js';
import { DEVICE_SPECS } from '../../src/util/device-specs.js';
import { capture } from '../support/capture.js';

const HAND = fileURLToPath(new URL('../replay/fixtures/hand.pickle', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GiB = 2 ** 30;

async function cli(argv: string[]) {
  const c = capture();
  const code = await runCli(argv, c.io);
  return { code, out: c.out, err: c.err };
}

/** `vmmkit replay HAND --allocator pytorch --json ...`: its JSON document. */
async function replayJson(...extra: string[]) {
  const r = await cli(['replay', HAND, '--allocator', 'pytorch', '--json', ...extra]);
  expect(r.err, extra.join(' ')).toEqual([]);
  expect(r.code, extra.join(' ')).toBe(0);
  return JSON.parse(r.out[0]) as { allocConf: string | null; memoryLimit: number | null };
}

/** A usage mistake: exit 2, nothing on stdout, one line on stderr with the command's usage; that line. */
async function refused(argv: string[]): Promise<string> {
  const r = await cli(argv);
  expect(r.code, argv.join(' ')).toBe(2);
  expect(r.out).toEqual([]);
  expect(r.err).toHaveLength(1);
  expect(r.err[0]).not.toContain('\n');
  expect(r.err[0]).toContain(`(usage: vmmkit ${argv[0]} `);
  return r.err[0];
}

describe('--alloc-conf takes what people paste', () => {
  it('the variable name, export, and quotes around the value or the whole', async () => {
    for (const pasted of [
      'expandable_segments:True',
      'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True',
      'PYTORCH_ALLOC_CONF=expandable_segments:True',
      'PYTORCH_NPU_ALLOC_CONF=expandable_segments:True',
      'PYTORCH_HIP_ALLOC_CONF=expandable_segments:True',
      'export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True',
      'PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"',
      "'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'",
      ' "expandable_segments:True" ',
    ])
      expect((await replayJson('--alloc-conf', pasted)).allocConf, pasted).toBe('expandable_segments:True');
  });

  it("a key=value typo gets PyTorch's refusal and the string with ':'", async () => {
    // PyTorch reads 'expandable_segments=True' as one key with no ':' after it, and trips its tokenizer's assert.
    expect(await refused(['replay', HAND, '--alloc-conf', 'expandable_segments=True'])).toMatch(
      /^vmmkit replay: --alloc-conf: Index out of bounds in ConfigTokenizer: the configuration ends inside expandable_segments=True \(did you mean expandable_segments:True\?\) \(usage: /,
    );
    expect(
      await refused(['replay', HAND, '--alloc-conf', 'max_split_size_mb=128,expandable_segments:True']),
    ).toMatch(
      /--alloc-conf: Index out of bounds in ConfigTokenizer: .* \(did you mean max_split_size_mb:128,expandable_segments:True\?\)/,
    );
    expect(
      await refused([
        'replay',
        HAND,
        '--alloc-conf',
        'PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb=128,expandable_segments=True',
      ]),
    ).toContain('(did you mean max_split_size_mb:128,expandable_segments:True?)');
    // An unknown key with '=' is only PyTorch's refusal: there is nothing to suggest.
    expect(await refused(['replay', HAND, '--alloc-conf', 'frobnicate=1'])).not.toContain('did you mean');
  });
});

describe('--memory-limit, --device and --device-memory', () => {
  it('sizes with units and plain bytes of at least 1 MiB keep working', async () => {
    expect((await replayJson('--memory-limit', '14000MiB')).memoryLimit).toBe(14000 * 2 ** 20);
    expect((await replayJson('--memory-limit', '14.7GB')).memoryLimit).toBe(14_700_000_000);
    expect((await replayJson('--memory-limit', '13.7GiB')).memoryLimit).toBe(Math.floor((137 * GiB) / 10));
    expect((await replayJson('--memory-limit', '150109880320')).memoryLimit).toBe(150_109_880_320);
  });

  it('a unitless number below 1 MiB is refused with the forms that work, exit 2', async () => {
    const line = await refused(['replay', HAND, '--memory-limit', '14000']);
    expect(line).toContain(
      '--memory-limit: 14000 has no unit and is below 1 MiB, so it cannot be meant as bytes',
    );
    expect(line).toContain('14000MiB, 13.7GiB, 14.7GB');
    expect(line).toContain('0.9 or 90%');
    await refused(['advise', HAND, '--memory-limit', '14000']);
    await refused(['report', HAND, '--memory-limit', '14000']);
  });

  it("a fraction is set_per_process_memory_fraction's: static_cast<size_t>(f * totalGlobalMem) of the device", async () => {
    expect((await replayJson('--device', 'H100', '--memory-limit', '0.9')).memoryLimit).toBe(
      Math.floor(0.9 * 85_017_493_504),
    );
    expect((await replayJson('--device', 'h200', '--memory-limit', '0.9')).memoryLimit).toBe(135_098_892_288);
    expect((await replayJson('--device', 'a100_80gb', '--memory-limit', '50%')).memoryLimit).toBe(
      Math.floor(0.5 * DEVICE_SPECS['A100-80GB'].totalMemory),
    );
    // The 910B's total as its driver reports it (62,423 MiB: device-specs.ts says where that comes from).
    expect((await replayJson('--device', 'Ascend910B', '--memory-limit', '0.25')).memoryLimit).toBe(
      Math.floor(0.25 * 62_423 * 2 ** 20),
    );
    expect((await replayJson('--device-memory', '80GiB', '--memory-limit', '0.5')).memoryLimit).toBe(
      40 * GiB,
    );
    // A device given by its memory rather than its name.
    expect((await replayJson('--device', '80GiB', '--memory-limit', '0.5')).memoryLimit).toBe(40 * GiB);
    // --device-memory overrides the named device's memory.
    expect(
      (await replayJson('--device', 'MI300X', '--device-memory', '100GiB', '--memory-limit', '0.5'))
        .memoryLimit,
    ).toBe(50 * GiB);
  });

  it('a fraction without a device is refused, naming the forms that work', async () => {
    const line = await refused(['replay', HAND, '--memory-limit', '0.9']);
    expect(line).toContain(
      "--memory-limit: 0.9 is a fraction of the device's memory, and no device is given",
    );
    expect(line).toContain('--device H100|H200|A100-80GB|A100-40GB|L40S|MI300X|MI250X|Ascend-910B');
    expect(line).toContain('--device-memory SIZE');
    await refused(['advise', HAND, '--memory-limit', '90%']);
  });

  it('an unknown device, or a device memory below 1 MiB, is a usage mistake', async () => {
    expect(await refused(['replay', HAND, '--device', 'B200'])).toContain(
      '--device: unknown device "B200" (known: H100, H200,',
    );
    expect(await refused(['replay', HAND, '--device', 'A100'])).toContain(
      'which one, A100-80GB or A100-40GB?',
    );
    expect(await refused(['replay', HAND, '--device-memory', '80'])).toContain(
      '--device-memory: 80 is less than 1 MiB',
    );
    expect(await refused(['replay', HAND, '--device-memory', '80G'])).toContain("'G' could mean either");
  });

  it('the device is the simulated machine: its memory is the physical cap where no limit applies', async () => {
    // hand.pickle needs a few MiB; a 2 MiB device cannot hold it, an H100 can.
    const small = await cli(['replay', HAND, '--allocator', 'pytorch', '--json', '--device-memory', '2MiB']);
    expect(small.code).toBe(0);
    const tiny = JSON.parse(small.out[0]);
    expect(tiny.memoryLimit).toBeNull();
    expect(tiny.allocators[0].ooms).toBeGreaterThan(0);
    const roomy = await cli(['replay', HAND, '--allocator', 'pytorch', '--json', '--device', 'H100']);
    expect(JSON.parse(roomy.out[0]).allocators[0].ooms).toBe(0);
  });
});

const COMMANDS = [
  SPECS.DEMO_SPEC,
  SPECS.TRACE_SPEC,
  SPECS.INSPECT_SPEC,
  SPECS.MAP_SPEC,
  SPECS.REPLAY_SPEC,
  SPECS.ADVISE_SPEC,
  SPECS.REPORT_SPEC,
  SPECS.OPEN_SPEC,
];

describe('--help: every option on a line, an example, the exit codes', () => {
  for (const spec of COMMANDS) {
    it(spec.name, async () => {
      const r = await cli([spec.name, '--help']);
      expect(r.code).toBe(0);
      expect(r.err).toEqual([]);
      expect(r.out).toEqual(helpOf(spec));
      expect(r.out[0]).toBe(`usage: ${usageOf(spec)}`);
      for (const name of Object.keys(spec.options)) {
        const lines = r.out.filter((l) => l.startsWith(`  --${name} `) || l === `  --${name}`);
        expect(lines, `--${name}`).toHaveLength(1);
        expect(lines[0].replace(`--${name}`, '').trim().length, `--${name}'s help`).toBeGreaterThan(10);
      }
      const at = r.out.findIndex((l) => /^examples?:$/.test(l));
      expect(at).toBeGreaterThan(0);
      expect(r.out[at + 1]).toMatch(new RegExp(`^  vmmkit ${spec.name}`));
      expect(r.out.at(-1)).toMatch(/^exit codes: 0 .*; 2 a usage mistake/);
    });
  }

  it("each example reads under its command's parser, and the files it names exist", () => {
    for (const spec of COMMANDS)
      for (const example of spec.examples) {
        const [vmmkit, name, ...argv] = example.split(' ');
        expect([vmmkit, name]).toEqual(['vmmkit', spec.name]);
        const { operands } = parseCommand(spec, argv);
        for (const file of operands) expect(existsSync(`${ROOT}${file}`), file).toBe(true);
      }
  });
});

describe('one parser (Note [Reading options])', () => {
  const spec = SPECS.REPLAY_SPEC;
  const mistake = (argv: string[]) => {
    try {
      parseCommand(spec, argv);
    } catch (e) {
      if (e instanceof UsageError) return e.message;
      throw e;
    }
    return 'accepted';
  };

  it('reads --name value and --name=value, repeats where allowed, and -- ends the options', () => {
    const { values, operands } = parseCommand(spec, [
      'a.pickle',
      '--memory-limit=2GiB',
      '--allocator',
      'pytorch',
      '--allocator=vmmkit',
      '--json',
    ]);
    expect(values['memory-limit']).toBe('2GiB');
    expect(values.allocator).toEqual(['pytorch', 'vmmkit']);
    expect(values.json).toBe(true);
    expect(operands).toEqual(['a.pickle']);
    expect(parseCommand(spec, ['--json', '--', '--odd-name.pickle']).operands).toEqual(['--odd-name.pickle']);
    // One dash is a value: the limit's own check says what is wrong with it.
    expect(parseCommand(spec, ['a', '--memory-limit', '-3GiB']).values['memory-limit']).toBe('-3GiB');
  });

  it('says what is wrong, in one line', () => {
    expect(mistake(['a', '--frobnicate'])).toBe("unknown option '--frobnicate'");
    expect(mistake(['a', '--frobnicate=1'])).toBe("unknown option '--frobnicate'");
    expect(mistake(['a', '-x'])).toBe("unknown option '-x'");
    expect(mistake(['a', '--alloc-conf'])).toBe('--alloc-conf needs a value');
    expect(mistake(['a', '--alloc-conf', '--json'])).toBe('--alloc-conf needs a value');
    expect(mistake(['a', '--json=yes'])).toBe('--json takes no value');
    expect(mistake(['a', '--memory-limit', '1GiB', '--memory-limit', '2GiB'])).toBe(
      '--memory-limit is given twice; give it once',
    );
    expect(mistake([])).toBe('no snapshot file given');
    expect(mistake(['a', 'b'])).toBe('give one snapshot file');
    expect(mistake(['a', '--toString'])).toBe("unknown option '--toString'");
    expect(mistake(['a', '--__proto__', 'x'])).toBe("unknown option '--__proto__'");
    expect(parseCommand(SPECS.ADVISE_SPEC, ['a', 'b']).operands).toEqual(['a', 'b']);
  });

  it('the commands are dispatched from one table: an unknown one names them all', async () => {
    const r = await cli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([
      "vmmkit: unknown command 'frobnicate' (usage: vmmkit demo|trace|inspect|replay|advise|report|open|compare|map ..., and vmmkit COMMAND --help)",
    ]);
  });
});
