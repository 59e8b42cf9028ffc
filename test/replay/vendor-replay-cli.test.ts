/**
 * A snapshot where a script goes (Note [A snapshot as a program] in
 * src/cli/script.ts): `vmmkit trace` and `vmmkit inspect` run its replay on
 * its vendor's front end, so breakpoints and inspection work as on any
 * program (issue 31, section 3).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { capture } from '../support/capture.js';

const NPU = 'test/replay/fixtures/wild/memsnapdump-multi-devices.pickle.gz';

describe('a torch_npu snapshot run as a program', () => {
  it('vmmkit trace prints its ACL calls and stops at each aclrtMapMem', async () => {
    const c = capture();
    expect(await runCli(['trace', NPU, '--break', 'aclrtMapMem', '--json'], c.io)).toBe(0);
    expect(c.err).toEqual([]);
    const breaks = c.out.filter((l) => l.startsWith('--- break at aclrtMapMem'));
    const tree = JSON.parse(c.out.at(-1) as string) as { layer: string; name: string }[];
    const names = tree.map((s) => s.name);
    // The recording mapped expandable segments, so the replay under its settings does too: seed 2's calls.
    expect(breaks.length).toBe(names.filter((n) => n === 'aclrtMapMem').length);
    expect(breaks.length).toBeGreaterThan(0);
    for (const call of ['aclInit', 'aclrtSetDevice', 'aclrtReserveMemAddress', 'aclrtMallocPhysical'])
      expect(names).toContain(call);
    expect(names.filter((n) => n === 'aclrtUnmapMem').length).toBe(breaks.length);
    expect(names).toContain('mark');
    expect(tree.filter((s) => s.name.startsWith('aclrt')).every((s) => s.layer === 'acl')).toBe(true);
  });

  it('vmmkit inspect --at end shows the mapped segments on the Ascend 910B before they go', async () => {
    const c = capture();
    expect(await runCli(['inspect', NPU, '--at', 'end'], c.io)).toBe(0);
    const text = c.out.join('\n');
    expect(text).toContain('ACL process');
    expect(text).toContain("at mark 'end'");
    expect(text).toMatch(/x Ascend910B/);
    expect(text).toMatch(/mapped 0x[0-9a-f]+ \+0x200000 -> aclrtDrvMemHandle/);
    // Without --at, each process as it was just before its dispose: the allocator has let everything go.
    const end = capture();
    expect(await runCli(['inspect', NPU], end.io)).toBe(0);
    expect(end.out.join('\n')).not.toContain('mapped 0x');
  });

  it('vmmkit map --at end draws the Ascend address space the replay left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-vendor-map-'));
    try {
      const out = join(dir, 'map.svg');
      const c = capture();
      expect(await runCli(['map', NPU, '--at', 'end', '--out', out], c.io)).toBe(0);
      const svg = readFileSync(out, 'utf8');
      expect(svg).toContain('at mark &#39;end&#39;');
      expect(svg).toMatch(/<title>mapping 0x[0-9a-f]+, 2\.0 MiB, handle \d+; device 0 read-write/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a snapshot that is not there is one line and exit 1', async () => {
    const c = capture();
    expect(await runCli(['trace', 'no-such-snapshot.pickle.gz'], c.io)).toBe(1);
    expect(c.err).toEqual(['vmmkit trace: cannot load no-such-snapshot.pickle.gz: no such file']);
  });
});

describe('--vendor: whose front end a snapshot runs on', () => {
  const CUDA_SHAPED = 'test/replay/fixtures/wild/cs336-ctx128-forward.pickle.gz';

  it('a CUDA-shaped snapshot as ROCm: hipMem* calls over seed 1 layers, on MI300Xs', async () => {
    const c = capture();
    expect(await runCli(['trace', CUDA_SHAPED, '--vendor', 'rocm', '--json'], c.io)).toBe(0);
    const tree = JSON.parse(c.out.at(-1) as string) as { layer: string; name: string }[];
    const names = new Set(tree.map((s) => s.name));
    // The recording's own settings: native segments, so the one-step path, as ROCm's PyTorch calls it.
    expect(names.has('hipMalloc') || names.has('hipMemCreate')).toBe(true);
    expect(tree.filter((s) => s.name.startsWith('hip')).every((s) => s.layer === 'hip')).toBe(true);
    const inspected = capture();
    expect(await runCli(['inspect', CUDA_SHAPED, '--vendor', 'rocm', '--at', 'end'], inspected.io)).toBe(0);
    expect(inspected.out.join('\n')).toMatch(/HIP process \d+ \(1 x AMD Instinct MI300X\)/);
  });

  it('is refused for a script, and must be one of the three', async () => {
    const bad = capture();
    expect(await runCli(['trace', NPU, '--vendor', 'tpu'], bad.io)).toBe(2);
    expect(bad.err[0]).toMatch(
      /^vmmkit trace: --vendor is cuda, rocm or npu, not 'tpu' \(usage: vmmkit trace /,
    );
    const script = capture();
    expect(await runCli(['trace', 'examples/grow.mjs', '--vendor', 'npu'], script.io)).toBe(1);
    expect(script.err).toEqual([
      'vmmkit trace: --vendor is for a snapshot (.pickle, .pickle.gz, .pkl), not the script examples/grow.mjs',
    ]);
  });
});
