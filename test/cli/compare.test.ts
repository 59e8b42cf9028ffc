/** `vmmkit compare` (src/cli/compare.ts): the JSON is compareSnapshots' answer, the text, and one-line errors. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { COMPARE_SPEC } from '../../src/cli/command-specs.js';
import { COMPARE_USAGE } from '../../src/cli/compare.js';

import { readSnapshotFile } from '../../src/replay/read/load.js';
import { capture } from '../support/capture.js';
import { compareSnapshots } from '../support/replay.js';

const at = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const REFERENCE = at('traces/h200-whatif/gpt_train--reference.pickle.gz');
const EXPANDABLE = at('traces/h200-whatif/gpt_train--expandable.pickle.gz');

async function compare(args: string[]) {
  const c = capture();
  const code = await runCli(['compare', ...args], c.io);
  return { code, ...c };
}

describe('vmmkit compare', () => {
  it('--json is one document: the files and compareSnapshots on them', async () => {
    const { code, out, err } = await compare([
      REFERENCE,
      EXPANDABLE,
      '--alloc-conf',
      'expandable_segments:True',
      '--json',
    ]);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(out).toHaveLength(1);
    const j = JSON.parse(out[0]);
    expect(j.files).toEqual([REFERENCE, EXPANDABLE]);
    const direct = compareSnapshots(readSnapshotFile(REFERENCE), readSnapshotFile(EXPANDABLE), {
      allocConf: 'expandable_segments:True',
    });
    expect({ ...j, files: undefined }).toEqual(JSON.parse(JSON.stringify({ ...direct, files: undefined })));
  });

  it('prints each side reproduced first, then the figures before and after, and both under the setting', async () => {
    const { code, out } = await compare([
      REFERENCE,
      EXPANDABLE,
      '--alloc-conf',
      'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True',
    ]);
    expect(code).toBe(0);
    expect(out[0]).toBe(`${REFERENCE}: as recorded: reproduced`);
    expect(out[1]).toBe(`${EXPANDABLE}: as recorded: reproduced`);
    expect(out[2]).toBe('peak reserved: 6.35 GiB -> 5.24 GiB (-1.11 GiB)');
    expect(out.at(-1)).toMatch(
      /^under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: peak 5\.24 GiB -> 5\.24 GiB \(0 B\); .* fits, .* fits$/,
    );
  });

  it('is in the command table, with its usage and exit codes', async () => {
    const { code, out } = await compare(['--help']);
    expect(code).toBe(0);
    expect(out.join('\n')).toContain(COMPARE_SPEC.exitCodes);
    expect(COMPARE_USAGE).toContain('vmmkit compare <before.pickle[.gz]> <after.pickle[.gz]>');
  });

  it('not two files is a usage mistake (exit 2); a missing file or a segment list is bad input (exit 1)', async () => {
    const one = await compare([REFERENCE]);
    expect(one.code).toBe(2);
    expect(one.err).toHaveLength(1);
    expect(one.err[0]).toMatch(/^vmmkit compare: give two snapshot files, before and after \(1 given\)/);
    const three = await compare([REFERENCE, REFERENCE, REFERENCE]);
    expect(three.code).toBe(2);
    const missing = await compare([REFERENCE, at('no-such-file.pickle')]);
    expect(missing.code).toBe(1);
    expect(missing.err).toHaveLength(1);
    const list = await compare([
      REFERENCE,
      at('test/replay/fixtures/wild/layoutediting-segment-list.pickle.gz'),
    ]);
    expect(list.code).toBe(1);
    expect(list.err).toHaveLength(1);
    expect(list.err[0]).toMatch(/^vmmkit compare: /);
    const conf = await compare([REFERENCE, EXPANDABLE, '--alloc-conf', 'expandable_segments:Maybe']);
    expect(conf.code).toBe(2);
  });
});
