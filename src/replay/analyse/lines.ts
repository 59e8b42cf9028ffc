/**
 * The analyses in words, as the command line prints them: what holds memory
 * at the peak, two snapshots compared, a job's ranks. The page draws the
 * same data (src/web/views); the figures here are those of --json.
 */
import { formatBytes } from '../../util/format.js';
import type { SnapshotComparison } from './compare.js';
import type { PeakBreakdown, Slack } from './peak.js';
import type { RankSummary } from './ranks.js';

/** Stacks printed per device (the rest are in --json). */
const STACKS = 5;

function share(part: number, whole: number): string {
  return whole > 0 ? ` (${((100 * part) / whole).toFixed(1)}%)` : '';
}

function signed(n: number): string {
  return n > 0 ? `+${formatBytes(n)}` : n < 0 ? `-${formatBytes(-n)}` : '0 B';
}

function slackParts(s: Slack): string {
  const parts = [
    `rounding ${formatBytes(s.roundingBytes)}`,
    `free pieces in segments ${formatBytes(s.freeInSegmentsBytes)}`,
    `cached segments ${formatBytes(s.cachedSegmentsBytes)}`,
  ];
  if (s.unexplainedBytes !== 0) parts.push(`not placed in a segment ${signed(s.unexplainedBytes)}`);
  return parts.join(', ');
}

/** A setting and a limit in words: `PYTORCH_CUDA_ALLOC_CONF=... under a limit of 8.00 GiB`, `a limit of 8.00 GiB`. */
export function settingWords(allocConf: string | null, memoryLimit: number | null): string {
  const limit = memoryLimit === null ? undefined : `a limit of ${formatBytes(memoryLimit)}`;
  if (allocConf === null) return limit ?? 'the recorded settings';
  return limit === undefined
    ? `PYTORCH_CUDA_ALLOC_CONF=${allocConf}`
    : `PYTORCH_CUDA_ALLOC_CONF=${allocConf} under ${limit}`;
}

/** What holds memory at the peak, per device, and under the setting where one was given. */
export function peakLines(p: PeakBreakdown): string[] {
  const out: string[] = [];
  const several = p.devices.length > 1;
  for (const d of p.devices) {
    const where = several ? ` on device ${d.device}` : '';
    const at = d.event < 0 ? 'before the first event' : `at event ${d.event.toLocaleString('en-US')}`;
    out.push(
      d.reservedKnown
        ? `at the peak${where} (${formatBytes(d.reservedBytes)} reserved, ${at}): ${formatBytes(d.allocatedBytes)} in ${d.liveBlocks.toLocaleString('en-US')} live blocks`
        : `at the most live${where} (${at}; the trace shows no reserved memory): ${formatBytes(d.allocatedBytes)} in ${d.liveBlocks.toLocaleString('en-US')} live blocks`,
    );
    for (const c of d.categories)
      if (c.bytes > 0)
        out.push(
          `  ${c.label}: ${formatBytes(c.bytes)}${share(c.bytes, d.reservedBytes || d.allocatedBytes)}`,
        );
    if (d.slack !== null)
      out.push(
        `  allocator slack: ${formatBytes(d.slack.totalBytes)}${share(d.slack.totalBytes, d.reservedBytes)}: ${slackParts(d.slack)}`,
      );
    const stacks = d.topStacks.slice(0, STACKS);
    if (stacks.length > 0 && p.stacksRecorded) {
      out.push('  top stacks by bytes live:');
      for (const s of stacks)
        out.push(`    ${formatBytes(s.bytes)} in ${s.blocks} block(s), ${s.category}: ${s.summary}`);
    }
  }
  if (!p.stacksRecorded && p.devices.some((d) => d.liveBlocks > 0))
    out.push(
      '  the snapshot has no stacks, so a block no private pool or annotation places is unknown (record with torch.cuda.memory._record_memory_history(), whose default keeps them)',
    );
  if (p.whatIf !== null) {
    const w = p.whatIf;
    const setting = settingWords(w.allocConf, w.memoryLimit);
    if (w.error !== null)
      out.push(`under ${setting}: the replay failed (${w.error}), so where its memory goes is not told`);
    for (const d of w.devices) {
      const where = w.devices.length > 1 ? ` on device ${d.device}` : '';
      out.push(
        `under ${setting}${where}: peak ${formatBytes(d.peakBytes)}, ${signed(d.differenceBytes)} against the recording's ${formatBytes(d.recordedPeakBytes)} (${w.verdict})`,
      );
      out.push(`  slack there: ${formatBytes(d.slack.totalBytes)}: ${slackParts(d.slack)}`);
      const moved = d.bySegmentSize.filter((r) => r.differenceBytes !== 0);
      for (const r of moved)
        out.push(
          `  ${r.label}: ${r.recordedSegments} (${formatBytes(r.recordedBytes)}) -> ${r.whatIfSegments} (${formatBytes(r.whatIfBytes)})`,
        );
      const stacks = d.byStack.filter((r) => r.differenceBytes !== 0).slice(0, STACKS);
      if (stacks.length > 0)
        out.push('  where the reserved bytes moved (each stack with the segments it holds):');
      for (const r of stacks) out.push(`    ${signed(r.differenceBytes)}: ${r.summary}`);
    }
  }
  return out;
}

/** Two snapshots compared, per device. */
export function compareLines(c: SnapshotComparison, names: readonly [string, string] = ['A', 'B']): string[] {
  const [a, b] = names;
  const out: string[] = [
    `${a}: ${c.a.reproduced ? 'as recorded: reproduced' : 'as recorded: NOT reproduced'}`,
    `${b}: ${c.b.reproduced ? 'as recorded: reproduced' : 'as recorded: NOT reproduced'}`,
  ];
  for (const d of c.devices) {
    const where = c.devices.length > 1 ? ` on device ${d.device}` : '';
    out.push(
      `peak reserved${where}: ${formatBytes(d.a.reservedBytes)} -> ${formatBytes(d.b.reservedBytes)} (${signed(d.reservedDifferenceBytes)})`,
      `allocated at the peak${where}: ${formatBytes(d.a.allocatedBytes)} -> ${formatBytes(d.b.allocatedBytes)} (${signed(d.allocatedDifferenceBytes)}); peak requested ${formatBytes(d.a.peakAllocatedBytes)} -> ${formatBytes(d.b.peakAllocatedBytes)}`,
    );
    if (d.a.slack !== null && d.b.slack !== null)
      out.push(
        `  allocator slack: ${formatBytes(d.a.slack.totalBytes)} -> ${formatBytes(d.b.slack.totalBytes)} (${signed(d.b.slack.totalBytes - d.a.slack.totalBytes)})`,
      );
    for (const k of d.categories)
      if (k.aBytes > 0 || k.bBytes > 0)
        out.push(
          `  ${k.label}: ${formatBytes(k.aBytes)} -> ${formatBytes(k.bBytes)} (${signed(k.differenceBytes)})`,
        );
    const stacks = d.stacks.slice(0, STACKS);
    if (stacks.length > 0) out.push('  stacks that changed most (bytes live at the peak):');
    for (const s of stacks)
      out.push(
        `    ${signed(s.differenceBytes)} (${formatBytes(s.aBytes)} -> ${formatBytes(s.bBytes)}): ${s.summary}`,
      );
    const u = d.underSetting;
    if (u !== null && c.setting !== null) {
      out.push(
        `under ${settingWords(c.setting.allocConf, c.setting.memoryLimit)}${where}: peak ${formatBytes(u.aPeakBytes)} -> ${formatBytes(u.bPeakBytes)} (${signed(u.differenceBytes)})${c.verdicts === null ? '' : `; ${a} ${c.verdicts.a}, ${b} ${c.verdicts.b}`}`,
      );
    }
  }
  if (c.onlyInA.length > 0) out.push(`devices only in ${a}: ${c.onlyInA.join(', ')}`);
  if (c.onlyInB.length > 0) out.push(`devices only in ${b}: ${c.onlyInB.join(', ')}`);
  return out;
}

/** A job's ranks side by side. */
export function rankLines(r: RankSummary): string[] {
  if (r.ranks.length === 0) return [];
  const top = r.ranks[r.peakRank];
  const out = [
    `ranks: ${r.ranks.length}; the highest peak is ${top.name}'s, ${formatBytes(top.peakReservedBytes)} reserved (${formatBytes(r.spreadBytes)} above the lowest)`,
  ];
  const under = r.setting === null ? '' : `under ${settingWords(r.setting.allocConf, r.setting.memoryLimit)}`;
  for (const k of r.ranks) {
    const largest = k.largestCategory === null ? '' : `; most in ${k.largestCategory.label}`;
    const there =
      k.underSetting === null
        ? ''
        : k.underSetting.firstOom === null
          ? `; ${under}: fits, peak ${formatBytes(k.underSetting.peakBytes)}`
          : `; ${under}: runs out at event ${k.underSetting.firstOom.event.toLocaleString('en-US')} (a request of ${formatBytes(k.underSetting.firstOom.bytes)})`;
    out.push(
      `  ${k.name}: peak ${formatBytes(k.peakReservedBytes)}, ${formatBytes(k.allocatedAtPeakBytes)} live then${largest}${there}${k.reproduced ? '' : ' (not reproduced as recorded)'}`,
    );
  }
  if (r.firstToRunOut !== null) {
    const k = r.ranks[r.firstToRunOut.rank];
    out.push(
      `first to run out: ${k.name} (${r.firstToRunOut.by === 'time' ? 'earliest in time' : 'earliest through its own trace: the traces have no times'})`,
    );
  } else if (r.setting !== null) out.push(`no rank runs out ${under}`);
  if (r.advice !== null)
    out.push(
      r.advice.allocConf === null
        ? `one setting for every rank: none fits (${r.advice.verdict})`
        : `one setting for every rank: PYTORCH_CUDA_ALLOC_CONF=${r.advice.allocConf} (${r.advice.verdict})`,
    );
  return out;
}
