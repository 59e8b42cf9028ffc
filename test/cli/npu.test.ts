/**
 * torch_npu snapshots through the command line (issue 31, sections 1 and 2):
 * replay, a what-if, a limit, advise with PYTORCH_NPU_ALLOC_CONF as the
 * line to paste, compare and the report answer as they do for CUDA ones,
 * each first saying the recording was reproduced and which machine made it;
 * --vendor overrides the guess.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { deviceFor, whatIfOf } from '../../src/cli/what-if-options.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import { capture } from '../support/capture.js';

const wild = (f: string) => fileURLToPath(new URL(`../replay/fixtures/wild/${f}`, import.meta.url));
const EMPTY_CACHE = wild('memsnapdump-empty-cache.pickle.gz');
const MULTI = wild('memsnapdump-multi-devices.pickle.gz');
const CUDA = wild('code-location-4dev-oom.pickle.gz');
const MiB = 1024 ** 2;

async function cli(args: string[]) {
  const c = capture();
  const code = await runCli(args, c.io);
  return { code, out: c.out, err: c.err };
}

describe('vmmkit replay on torch_npu snapshots', () => {
  it('reproduces the recording and says it came from torch_npu, with the frame that tells', async () => {
    const { code, out } = await cli(['replay', EMPTY_CACHE, '--allocator', 'pytorch']);
    expect(code).toBe(0);
    expect(out[0]).toBe(
      "as recorded: reproduced (peak 632.0 MiB) (no settings recorded; torch_npu's defaults)",
    );
    expect(out[1]).toMatch(
      /^made on: torch_npu \(Ascend NPU.*a frame in torch_npu \(.*torch_npu\/npu\/memory\.py\)$/,
    );
  });

  it('both devices of the two-device recording, each in its own mode', async () => {
    const { code, out } = await cli(['replay', MULTI, '--allocator', 'pytorch', '--json']);
    expect(code).toBe(0);
    const j = JSON.parse(out[0]);
    expect(j.vendor).toBe('npu');
    expect(j.vendorEvidence[0]).toMatch(/torch_npu/);
    expect(j.asRecorded.reproduced).toBe(true);
    expect(
      j.asRecorded.devices.map((d: { recordedPeakBytes: number; replayedPeakBytes: number }) => [
        d.recordedPeakBytes / MiB,
        d.replayedPeakBytes / MiB,
      ]),
    ).toEqual([
      [614, 614],
      [526, 526],
    ]);
  });

  it('a what-if in PYTORCH_NPU_ALLOC_CONF, and a limit under which it runs out', async () => {
    const what = await cli([
      'replay',
      EMPTY_CACHE,
      '--allocator',
      'pytorch',
      '--alloc-conf',
      'PYTORCH_NPU_ALLOC_CONF=expandable_segments:True',
    ]);
    expect(what.code).toBe(0);
    expect(what.out).toContain('settings: PYTORCH_NPU_ALLOC_CONF=expandable_segments:True');
    expect(what.out.join('\n')).toMatch(/^pytorch fits, /m);
    const limited = await cli(['replay', EMPTY_CACHE, '--allocator', 'pytorch', '--memory-limit', '400MiB']);
    expect(limited.code).toBe(0);
    expect(limited.out.join('\n')).toMatch(/^pytorch runs out of memory/m);
  });

  it("refuses a setting torch_npu refuses, in torch_npu's words", async () => {
    const npuOnly = await cli(['replay', EMPTY_CACHE, '--alloc-conf', 'base_addr_aligned_kb:32']);
    expect(npuOnly.code).toBe(2);
    expect(npuOnly.err[0]).toMatch(/--alloc-conf: CachingAllocator option base_addr_aligned_kb error/);
    // PyTorch reads roundup_power2_divisions; torch_npu 2.6's allocator does not.
    const cudaOnly = await cli(['replay', EMPTY_CACHE, '--alloc-conf', 'roundup_power2_divisions:4']);
    expect(cudaOnly.code).toBe(1);
    expect(cudaOnly.err[0]).toMatch(/Unrecognized CachingAllocator option: roundup_power2_divisions/);
    // With --vendor cuda the same snapshot is read as PyTorch's: the setting is accepted.
    const asCuda = await cli([
      'replay',
      EMPTY_CACHE,
      '--vendor',
      'cuda',
      '--allocator',
      'pytorch',
      '--alloc-conf',
      'roundup_power2_divisions:4',
    ]);
    expect(asCuda.code).toBe(0);
    // ...and PyTorch's model does not give the recording back (618 MiB where torch_npu reserved 632).
    expect(asCuda.out[0]).toMatch(/^as recorded: NOT reproduced/);
    expect(asCuda.out.find((l) => l.startsWith('made on:'))).toMatch(
      /^made on: CUDA .*--vendor cuda; the file alone suggests npu/,
    );
  });

  it('--vendor npu on a CUDA snapshot replays it with torch_npu rules, and says so', async () => {
    const { code, out } = await cli(['replay', CUDA, '--vendor', 'npu', '--allocator', 'pytorch', '--json']);
    expect(code).toBe(0);
    const j = JSON.parse(out[0]);
    expect(j.vendor).toBe('npu');
    expect(j.vendorEvidence[0]).toBe('--vendor npu');
    const bad = await cli(['replay', CUDA, '--vendor', 'tpu']);
    expect(bad.code).toBe(2);
    expect(bad.err[0]).toMatch(/--vendor: 'tpu' is not cuda, rocm or npu/);
  });
});

describe('vmmkit advise on a torch_npu snapshot', () => {
  it('gives PYTORCH_NPU_ALLOC_CONF as the line to paste, and proposes only what torch_npu reads', async () => {
    const { code, out } = await cli(['advise', EMPTY_CACHE, '--workers', '0']);
    expect(code).toBe(0);
    expect(out[0]).toMatch(/^as recorded: reproduced/);
    expect(out[1]).toMatch(/^made on: torch_npu/);
    const text = out.join('\n');
    expect(text).toMatch(/^PYTORCH_NPU_ALLOC_CONF=/m);
    expect(text).not.toMatch(/PYTORCH_CUDA_ALLOC_CONF|roundup_power2_divisions/);
    const json = await cli(['advise', EMPTY_CACHE, '--workers', '0', '--json']);
    const j = JSON.parse(json.out[0]);
    expect(j.vendor).toBe('npu');
    const confs: string[] = j.candidates.map((c: { allocConf: string }) => c.allocConf);
    expect(confs.length).toBeGreaterThan(1);
    for (const conf of confs) {
      expect(conf).not.toMatch(/roundup_power2_divisions|max_split_size_mb:20\b/);
      expect(conf).not.toMatch(/expandable_segments:True,(max_split_size_mb|garbage_collection_threshold)/);
    }
  });
});

describe('vmmkit compare and report on torch_npu snapshots', () => {
  it('compare reads both with torch_npu rules', async () => {
    const { code, out } = await cli(['compare', EMPTY_CACHE, MULTI, '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(out[0]).files).toHaveLength(2);
  });

  it("report's answer names the vendor and PYTORCH_NPU_ALLOC_CONF", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-npu-'));
    const out = join(dir, 'npu.html');
    const { code, err } = await cli(['report', EMPTY_CACHE, '--advise', '--out', out]);
    expect(code, err.join('\n')).toBe(0);
    const html = readFileSync(out, 'utf8');
    const start = html.indexOf('id="vmmkit-data">') + 'id="vmmkit-data">'.length;
    const data = JSON.parse(html.slice(start, html.indexOf('</script>', start))) as {
      answer: { asRecorded: string[]; allocConfName: string; advice: { allocConf: string | null } | null };
    };
    expect(data.answer.asRecorded[0]).toMatch(/^as recorded: reproduced/);
    expect(data.answer.asRecorded[1]).toMatch(/^made on: torch_npu/);
    expect(data.answer.allocConfName).toBe('PYTORCH_NPU_ALLOC_CONF');
    expect(data.answer.advice?.allocConf).not.toMatch(/roundup_power2_divisions/);
  });
});

describe('the device a snapshot is replayed on', () => {
  it("costs no driver time with the H200's table, and names no duration the snapshot lacks", async () => {
    const { code, out, err } = await cli(['replay', EMPTY_CACHE, '--allocator', 'pytorch']);
    expect(code).toBe(0);
    expect(err).toContain(
      'note: no driver cost table for an Ascend NPU; driver time is not estimated (see --costs)',
    );
    expect(out.find((l) => l.startsWith('trace: '))).toMatch(/on 1 device\(s\); peak requested/);
  });

  it("is its vendor's where --device names none: an Ascend 910B for torch_npu, the engine's H200 for CUDA", () => {
    const none = whatIfOf({ allocator: ['pytorch'] }).device;
    expect(deviceFor(none, readSnapshotFile(EMPTY_CACHE))?.key).toBe('Ascend910B');
    expect(deviceFor(none, readSnapshotFile(CUDA))).toBeUndefined();
    // A device named wins over the vendor's.
    const named = whatIfOf({ allocator: ['pytorch'], device: 'H100' }).device;
    expect(deviceFor(named, readSnapshotFile(EMPTY_CACHE))?.key).toBe('H100');
  });
});
