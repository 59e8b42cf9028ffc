/**
 * What holds memory at the peak (src/replay/analyse/peak.ts), on real
 * snapshots: the H200 recordings of traces/h200-whatif, whose record.py
 * says what each job holds, and other people's (test/replay/fixtures/wild).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { annotationsOf } from '../../../src/replay/analyse/categories.js';
import type { PeakBreakdown } from '../../../src/replay/analyse/peak.js';
import { ALLOCATOR_REGISTRY } from '../../../src/replay/engine/allocators.js';

import { planReplay } from '../../../src/replay/engine/trace-plan.js';

import { readPickle, readSnapshotFile } from '../../../src/replay/read/load.js';
import type { MemorySnapshot } from '../../../src/replay/read/snapshot.js';
import { analysePeak, answerWhatIf, reproduceRecording } from '../../support/replay.js';

const whatif = fileURLToPath(new URL('../../../traces/h200-whatif/', import.meta.url));
const wild = fileURLToPath(new URL('../fixtures/wild/', import.meta.url));

interface Run {
  readonly name: string;
  readonly maxMemoryReserved: number;
  readonly maxMemoryAllocated: number;
  readonly peakRequestedBytes: number;
}
const runs = (JSON.parse(readFileSync(`${whatif}results.json`, 'utf8')) as { runs: Run[] }).runs;
const run = (name: string) => runs.find((r) => r.name === name) as Run;

/**
 * gpt_train's model as record.py builds it (recording.py's gpt and decoder_layer): token and position
 * embeddings (1024 positions), six pre-norm layers (two LayerNorms, qkv, proj, up, down with biases), a
 * final LayerNorm and an untied head without bias. Its parameters' count and tensors.
 */
function gptParameters(vocab: number, d: number, layers: number): { count: number; tensors: number } {
  const linear = (i: number, o: number, bias: boolean) => i * o + (bias ? o : 0);
  const layer =
    2 * (2 * d) +
    linear(d, 3 * d, true) +
    linear(d, d, true) +
    linear(d, 4 * d, true) +
    linear(4 * d, d, true);
  const count = vocab * d + 1024 * d + layers * layer + 2 * d + linear(d, vocab, false);
  const tensors = 2 + layers * 12 + 2 + 1;
  return { count, tensors };
}

function category(p: PeakBreakdown, name: string, device = 0) {
  const d = p.devices.find((x) => x.device === device);
  return d?.categories.find((c) => c.category === name) ?? { bytes: Number.NaN, blocks: Number.NaN };
}

/** Every reserved byte at the peak is a category's or the slack's, and the slack's causes add up. */
function checkSums(p: PeakBreakdown): void {
  for (const d of p.devices) {
    const inCategories = d.categories.reduce((s, c) => s + c.bytes, 0);
    expect(inCategories).toBe(d.allocatedBytes);
    if (d.slack === null) continue;
    expect(inCategories + d.slack.totalBytes).toBe(d.reservedBytes);
    const s = d.slack;
    expect(s.roundingBytes + s.freeInSegmentsBytes + s.cachedSegmentsBytes + s.unexplainedBytes).toBe(
      s.totalBytes,
    );
  }
}

describe('the peak by category', () => {
  const stacks = readSnapshotFile(`${whatif}gpt_train--stacks.pickle`);

  it("is the as-recorded reproduction's peak, not a second definition", () => {
    const plan = planReplay(stacks);
    const asRecorded = reproduceRecording(stacks, { plan });
    const p = analysePeak(stacks, { plan, asRecorded });
    expect(p.reproduced).toBe(true);
    expect(p.devices.map((d) => d.reservedBytes)).toEqual(asRecorded.devices.map((d) => d.recordedPeakBytes));
    checkSums(p);
  });

  it("gpt_train's parameters are its model's parameter count times 4 bytes, and AdamW's state twice that", () => {
    const p = analysePeak(stacks);
    // record.py: vocab 8192, d 768, 6 layers, fp32 parameters moved to the GPU with .to(dev).
    const model = gptParameters(8192, 768, 6);
    expect(model.count).toBe(55_898_112);
    expect(category(p, 'parameters')).toMatchObject({ bytes: model.count * 4, blocks: model.tensors });
    // AdamW keeps exp_avg and exp_avg_sq per parameter, fp32 (its step counts live on the CPU).
    expect(category(p, 'optimizer-state')).toMatchObject({
      bytes: 2 * model.count * 4,
      blocks: 2 * model.tensors,
    });
    // The peak falls in a backward pass: gradients and the forward's saved activations are live, little is unknown.
    expect(category(p, 'gradients').bytes).toBeGreaterThan(0);
    expect(category(p, 'activations').bytes).toBeGreaterThan(category(p, 'gradients').bytes);
    expect(category(p, 'unknown').bytes).toBeLessThan(p.devices[0].allocatedBytes / 1000);
    expect(category(p, 'cuda-graph-pools').bytes).toBe(0);
    expect(p.stacksRecorded).toBe(true);
    const top = p.devices[0].topStacks;
    expect(top.length).toBe(10);
    for (let i = 1; i < top.length; i++) expect(top[i].bytes).toBeLessThanOrEqual(top[i - 1].bytes);
    expect(top[0].frames.some((f) => f.includes('record.py'))).toBe(true);
  });

  it("the slack's rounding is PyTorch's own: under expandable segments, allocated at the peak plus rounding is max_memory_allocated", () => {
    // Expandable segments split every block to its rounded size, so PyTorch's allocated bytes are the rounded
    // requests; the native allocator leaves remainders too small to split inside blocks (N7, N8), which our
    // recorded state counts as free pieces of their segment, not as rounding.
    const expandable = readSnapshotFile(`${whatif}gpt_train--expandable.pickle.gz`);
    const p = analysePeak(expandable);
    const d = p.devices[0];
    const pytorch = run('gpt_train--expandable');
    expect(d.reservedBytes).toBe(pytorch.maxMemoryReserved);
    expect(d.allocatedBytes).toBe(pytorch.peakRequestedBytes);
    expect(d.allocatedBytes + (d.slack?.roundingBytes ?? Number.NaN)).toBe(pytorch.maxMemoryAllocated);
    checkSums(p);
    // No stacks were recorded: the reader kept torch.optim's markers, which place AdamW's state (twice the
    // 223,592,448 parameter bytes); every other block's category is unknown, and said to be.
    expect(p.stacksRecorded).toBe(false);
    expect(category(p, 'optimizer-state').bytes).toBe(2 * 223_592_448);
    expect(category(p, 'unknown').bytes).toBe(d.allocatedBytes - 2 * 223_592_448);
    // The native reference: same requests, and its allocated figure is at least the rounded requests.
    const native = analysePeak(readSnapshotFile(`${whatif}gpt_train--reference.pickle.gz`)).devices[0];
    expect(native.reservedBytes).toBe(run('gpt_train--reference').maxMemoryReserved);
    expect(native.allocatedBytes + (native.slack?.roundingBytes ?? Number.NaN)).toBeLessThanOrEqual(
      run('gpt_train--reference').maxMemoryAllocated,
    );
  });

  it("without stacks, torch.optim's Optimizer.step annotations find AdamW's state: the same bytes the stacks show", () => {
    const file = `${whatif}gpt_train--reference.pickle.gz`;
    const annotations = annotationsOf(readPickle(readFileSync(file)));
    expect(annotations.filter((a) => a.name === 'Optimizer.step#AdamW.step')).toHaveLength(28);
    const p = analysePeak(readSnapshotFile(file), { annotations });
    const model = gptParameters(8192, 768, 6);
    expect(category(p, 'optimizer-state')).toMatchObject({
      bytes: 2 * model.count * 4,
      blocks: 2 * model.tensors,
    });
    // Nothing else is annotated: the rest stays unknown, and the sums hold.
    expect(category(p, 'unknown').bytes).toBe(p.devices[0].allocatedBytes - 2 * model.count * 4);
    checkSums(p);
    // Stacks decide first: with both, the stacks file's categories are unchanged.
    const stacksFile = `${whatif}gpt_train--stacks.pickle`;
    const both = analysePeak(stacks, { annotations: annotationsOf(readPickle(readFileSync(stacksFile))) });
    expect(both.devices[0].categories).toEqual(analysePeak(stacks).devices[0].categories);
  });

  it("CUDA graphs' private pools are a category of their own", () => {
    const graphs = readSnapshotFile(`${whatif}graphs_serve--reference.pickle.gz`);
    const p = analysePeak(graphs);
    const pools = category(p, 'cuda-graph-pools');
    expect(pools.bytes).toBeGreaterThan(0);
    expect(pools.blocks).toBeGreaterThan(0);
    checkSums(p);
  });

  it('a late start (a wrapped ring) is read from its rebuilt start state', () => {
    const ring = readSnapshotFile(`${whatif}gpt_train--ring-native.pickle.gz`);
    const plan = planReplay(ring);
    expect(plan.startedMidRun).toBe(true);
    const p = analysePeak(ring, { plan });
    expect(p.devices[0].reservedBytes).toBe(reproduceRecording(ring, { plan }).devices[0].recordedPeakBytes);
    expect(p.devices[0].slack?.unexplainedBytes).toBe(0);
    checkSums(p);
  });

  it("under a setting, says where its reserved bytes go, each side's shares adding up to its peak", () => {
    const allocConf = 'expandable_segments:True';
    const p = analysePeak(stacks, { allocConf });
    const w = p.whatIf;
    expect(w).not.toBeNull();
    if (w === null) return;
    const plan = planReplay(stacks);
    const pytorch = ALLOCATOR_REGISTRY.filter((a) => a.name === 'pytorch');
    const answer = answerWhatIf(stacks, { plan, allocators: pytorch, allocConf });
    const d = w.devices[0];
    expect(w.verdict).toBe(answer.answers[0].verdict);
    expect(d.peakBytes).toBe(answer.result.allocators[0].devices[0].peakReservedBytes);
    expect(d.recordedPeakBytes).toBe(p.devices[0].reservedBytes);
    expect(d.differenceBytes).toBe(d.peakBytes - d.recordedPeakBytes);
    // Expandable segments hold no cached segment at the peak, and fewer bytes around the live blocks.
    expect(d.slack.cachedSegmentsBytes).toBe(0);
    expect(d.slack.totalBytes).toBeLessThan(d.recordedSlack.totalBytes);
    expect(d.slack.unexplainedBytes).toBe(0);
    // By size: every recorded native segment is gone, expandable runs came.
    const sizes = d.bySegmentSize;
    expect(sizes.reduce((s, r) => s + r.recordedBytes, 0)).toBe(d.recordedPeakBytes);
    expect(sizes.reduce((s, r) => s + r.whatIfBytes, 0)).toBe(d.peakBytes);
    // By stack (all rows: topStacks large enough), the shares add up to each side's peak, to rounding per row.
    const all = analysePeak(stacks, { allocConf, topStacks: 10_000 }).whatIf?.devices[0];
    const rows = all?.byStack ?? [];
    expect(Math.abs(rows.reduce((s, r) => s + r.recordedBytes, 0) - d.recordedPeakBytes)).toBeLessThanOrEqual(
      rows.length,
    );
    expect(Math.abs(rows.reduce((s, r) => s + r.whatIfBytes, 0) - d.peakBytes)).toBeLessThanOrEqual(
      rows.length,
    );
    const cached = rows.find((r) => r.category === 'cached');
    expect(cached?.recordedBytes).toBe(d.recordedSlack.cachedSegmentsBytes);
    expect(cached?.whatIfBytes).toBe(0);
  });

  it('under a limit the replay runs out, and the first failed request is named', () => {
    const reference = readSnapshotFile(`${whatif}gpt_train--reference.pickle.gz`);
    const limit = run('gpt_train--reference').peakRequestedBytes - 512 * 2 ** 20;
    const p = analysePeak(reference, { memoryLimit: limit });
    expect(p.whatIf?.verdict).toBe('runs-out');
    const oom = p.whatIf?.devices[0].firstOom;
    expect(oom).not.toBeNull();
    expect(p.whatIf?.devices[0].peakBytes).toBeLessThanOrEqual(limit);
  });

  it("other people's snapshots: the sums hold, and every reproduced one's slack is placed in its segments", () => {
    for (const name of [
      'code-location-4dev-oom',
      'cs336-ctx128-forward',
      'memsnapdump-empty-cache',
      'memsnapdump-multi-devices',
      'octree-nca',
      'sketchkv2-late-start',
    ]) {
      const s: MemorySnapshot = readSnapshotFile(`${wild}${name}.pickle.gz`);
      const p = analysePeak(s);
      expect(p.reproduced, name).toBe(true);
      checkSums(p);
      for (const d of p.devices) expect(d.slack?.unexplainedBytes, `${name} device ${d.device}`).toBe(0);
    }
  });

  it('a segment list has no history, so no peak: a typed error', () => {
    const s = readSnapshotFile(`${wild}layoutediting-segment-list.pickle.gz`);
    expect(() => analysePeak(s)).toThrow(/no history/);
  });
});
