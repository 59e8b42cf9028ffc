/// <reference lib="dom" />
/**
 * Two snapshots compared at their peaks (src/replay/analyse/compare.ts),
 * drawn: per device the figures before and after with the difference, the
 * categories, the stacks whose live bytes changed most (each opens to its
 * frames), and both replayed under the setting where one was given. Every
 * string from the snapshots goes in as text (dom.ts).
 */
import type { SnapshotComparison } from '../../replay/analyse/compare.js';
import { settingWords } from '../../replay/analyse/lines.js';
import { formatBytes } from '../../util/format.js';
import { el } from './dom.js';
import { bytesCell, signedBytes, stackItem, table } from './peak.js';

/** Draw `data` into `root`, in place of what it held; `names` label the two sides (default A and B). */
export function renderCompare(
  root: HTMLElement,
  data: SnapshotComparison,
  names: readonly [string, string] = ['A', 'B'],
): void {
  const [a, b] = names;
  const section = el('section', { class: 'compare' }, el('h2', {}, `${a} against ${b}, at their peaks`));
  section.append(
    el(
      'p',
      { class: 'compare-as-recorded' },
      `${a}: as recorded ${data.a.reproduced ? 'reproduced' : 'not reproduced'}; ${b}: as recorded ${data.b.reproduced ? 'reproduced' : 'not reproduced'}.`,
    ),
  );
  const diff = (n: number) => ({ text: signedBytes(n), bytes: n });
  for (const d of data.devices) {
    const block = el('div', { class: 'compare-device', 'data-device': d.device });
    if (data.devices.length > 1) block.append(el('h3', {}, `Device ${d.device}`));
    const rows: (string | { text: string; bytes: number })[][] = [
      [
        'peak reserved',
        bytesCell(d.a.reservedBytes),
        bytesCell(d.b.reservedBytes),
        diff(d.reservedDifferenceBytes),
      ],
      [
        'allocated at the peak',
        bytesCell(d.a.allocatedBytes),
        bytesCell(d.b.allocatedBytes),
        diff(d.allocatedDifferenceBytes),
      ],
      [
        'peak requested (any moment)',
        bytesCell(d.a.peakAllocatedBytes),
        bytesCell(d.b.peakAllocatedBytes),
        diff(d.b.peakAllocatedBytes - d.a.peakAllocatedBytes),
      ],
    ];
    if (d.a.slack !== null && d.b.slack !== null)
      rows.push([
        'allocator slack',
        bytesCell(d.a.slack.totalBytes),
        bytesCell(d.b.slack.totalBytes),
        diff(d.b.slack.totalBytes - d.a.slack.totalBytes),
      ]);
    for (const c of d.categories)
      if (c.aBytes > 0 || c.bBytes > 0)
        rows.push([c.label, bytesCell(c.aBytes), bytesCell(c.bBytes), diff(c.differenceBytes)]);
    const u = d.underSetting;
    if (u !== null && data.setting !== null) {
      const setting = settingWords(data.setting.allocConf, data.setting.memoryLimit);
      rows.push([
        `peak reserved under ${setting}`,
        bytesCell(u.aPeakBytes),
        bytesCell(u.bPeakBytes),
        diff(u.differenceBytes),
      ]);
      rows.push([
        `allocated at that peak`,
        bytesCell(u.aAllocatedBytes),
        bytesCell(u.bAllocatedBytes),
        diff(u.bAllocatedBytes - u.aAllocatedBytes),
      ]);
    }
    block.append(table('compare-figures', ['', a, b, 'difference'], rows));
    if (data.verdicts !== null)
      block.append(
        el(
          'p',
          { class: 'compare-verdicts' },
          `Under the setting: ${a} ${data.verdicts.a}, ${b} ${data.verdicts.b}.`,
        ),
      );
    if (d.stacks.length > 0) {
      block.append(el('h4', {}, 'Stacks whose live bytes at the peak changed most'));
      const list = el('ol', { class: 'compare-stacks' });
      for (const s of d.stacks)
        list.append(
          stackItem(
            { 'data-bytes': s.differenceBytes },
            `${signedBytes(s.differenceBytes)} (${formatBytes(s.aBytes)} to ${formatBytes(s.bBytes)}), ${s.category}: ${s.summary}`,
            s.frames,
          ),
        );
      block.append(list);
    }
    section.append(block);
  }
  if (data.onlyInA.length > 0)
    section.append(el('p', {}, `Devices only in ${a}: ${data.onlyInA.join(', ')}.`));
  if (data.onlyInB.length > 0)
    section.append(el('p', {}, `Devices only in ${b}: ${data.onlyInB.join(', ')}.`));
  root.replaceChildren(section);
}
