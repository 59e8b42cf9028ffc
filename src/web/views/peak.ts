/// <reference lib="dom" />
/**
 * What holds memory at the peak (src/replay/analyse/peak.ts), drawn: per
 * device the categories with their share of the peak, the allocator's
 * slack by cause, the stacks with the most bytes live (each opens to its
 * frames), and under a setting where its reserved bytes went. Every string
 * from the snapshot goes in as text (dom.ts), so a stack that carries HTML
 * shows as text.
 */
import { settingWords } from '../../replay/analyse/lines.js';
import type { PeakBreakdown, Slack, WhatIfDevicePeak } from '../../replay/analyse/peak.js';
import { formatBytes } from '../../util/format.js';
import { el } from './dom.js';

/** Bytes with a sign: +1.0 MiB, -2.0 GiB, 0 B. */
export function signedBytes(n: number): string {
  return n > 0 ? `+${formatBytes(n)}` : n < 0 ? `-${formatBytes(-n)}` : '0 B';
}

/** A table of text cells: a head row and body rows; numeric cells carry their bytes in data-bytes. */
export function table(
  className: string,
  head: readonly string[],
  rows: readonly (readonly (string | { text: string; bytes: number })[])[],
): HTMLTableElement {
  const cell = (tag: 'td' | 'th', c: string | { text: string; bytes: number }) =>
    typeof c === 'string' ? el(tag, {}, c) : el(tag, { class: 'bytes', 'data-bytes': c.bytes }, c.text);
  return el(
    'table',
    { class: className },
    el('thead', {}, el('tr', {}, ...head.map((h) => cell('th', h)))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => cell('td', c))))),
  );
}

/** Bytes as a cell. */
/** A stack as a list item: its one-line summary, opening to its frames (text only: frames may carry markup). */
export function stackItem(
  attributes: Record<string, string | number>,
  summary: string,
  frames: readonly string[],
): HTMLElement {
  return el(
    'li',
    attributes,
    el(
      'details',
      {},
      el('summary', {}, summary),
      el('pre', { class: 'frames' }, frames.length > 0 ? frames.join('\n') : '(no stack recorded)'),
    ),
  );
}

export function bytesCell(n: number): { text: string; bytes: number } {
  return { text: formatBytes(n), bytes: n };
}

function percent(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '';
}

/** A bar of the share, drawn by width only (no string from the data reaches the style). */
function bar(part: number, whole: number): HTMLElement {
  const width = whole > 0 ? Math.max(0, Math.min(100, (100 * part) / whole)) : 0;
  return el('span', {
    class: 'share-bar',
    style: `display:inline-block;height:0.8em;background:#4a7;width:${width.toFixed(1)}%`,
  });
}

/** The slack's causes as rows; `every` keeps the row of blocks outside segments even at 0, so two tables align. */
export function slackRows(s: Slack, every = false): (string | { text: string; bytes: number })[][] {
  const rows: (string | { text: string; bytes: number })[][] = [
    ['rounding (requests rounded up)', bytesCell(s.roundingBytes)],
    ['free pieces in segments that hold live blocks', bytesCell(s.freeInSegmentsBytes)],
    ['cached segments with no live block', bytesCell(s.cachedSegmentsBytes)],
  ];
  if (every || s.unexplainedBytes !== 0)
    rows.push(['live blocks outside any segment shown', bytesCell(s.unexplainedBytes)]);
  rows.push(['all slack', bytesCell(s.totalBytes)]);
  return rows;
}

/** Draw `data` into `root`, in place of what it held. */
export function renderPeak(root: HTMLElement, data: PeakBreakdown): void {
  const section = el('section', { class: 'peak' }, el('h2', {}, 'What holds memory at the peak'));
  section.append(
    el(
      'p',
      { class: 'peak-as-recorded' },
      data.reproduced
        ? 'The peak is the recording’s own, reproduced by replay as recorded.'
        : 'The peak is the recording’s own; replay as recorded did not reproduce every device (see the answer).',
    ),
  );
  if (!data.stacksRecorded)
    section.append(
      el(
        'p',
        { class: 'peak-no-stacks' },
        'This snapshot has no stacks, so a block no private pool or annotation places is unknown: record with torch.cuda.memory._record_memory_history(), whose default keeps them.',
      ),
    );
  for (const d of data.devices) {
    const block = el('div', { class: 'peak-device', 'data-device': d.device });
    const at = d.event < 0 ? 'before the first event' : `at event ${d.event.toLocaleString('en-US')}`;
    block.append(
      el(
        'h3',
        {},
        data.devices.length > 1 ? `Device ${d.device}: ` : '',
        d.reservedKnown
          ? `${formatBytes(d.reservedBytes)} reserved ${at}, ${formatBytes(d.allocatedBytes)} in ${d.liveBlocks.toLocaleString('en-US')} live blocks`
          : `the trace shows no reserved memory; ${formatBytes(d.allocatedBytes)} live at its fullest, ${at}`,
      ),
    );
    const whole = d.reservedKnown ? d.reservedBytes : d.allocatedBytes;
    const rows = d.categories.map((c) => {
      const tr = el(
        'tr',
        { 'data-category': c.category },
        el('td', {}, c.label),
        el('td', { class: 'bytes', 'data-bytes': c.bytes }, formatBytes(c.bytes)),
        el('td', {}, percent(c.bytes, whole)),
        el('td', { class: 'bar' }, bar(c.bytes, whole)),
      );
      return tr;
    });
    if (d.slack !== null)
      rows.push(
        el(
          'tr',
          { 'data-category': 'slack' },
          el('td', {}, 'allocator slack (reserved less allocated)'),
          el('td', { class: 'bytes', 'data-bytes': d.slack.totalBytes }, formatBytes(d.slack.totalBytes)),
          el('td', {}, percent(d.slack.totalBytes, whole)),
          el('td', { class: 'bar' }, bar(d.slack.totalBytes, whole)),
        ),
      );
    block.append(
      el(
        'table',
        { class: 'peak-categories' },
        el(
          'thead',
          {},
          el('tr', {}, el('th', {}, 'category'), el('th', {}, 'bytes'), el('th', {}, 'share'), el('th', {})),
        ),
        el('tbody', {}, ...rows),
      ),
    );
    if (d.slack !== null) {
      block.append(el('h4', {}, 'The allocator’s slack, by cause'));
      block.append(table('peak-slack', ['cause', 'bytes'], slackRows(d.slack)));
    }
    if (d.topStacks.length > 0) {
      block.append(el('h4', {}, 'Stacks with the most bytes live'));
      const list = el('ol', { class: 'peak-stacks' });
      for (const s of d.topStacks)
        list.append(
          stackItem(
            { 'data-bytes': s.bytes, 'data-category': s.category },
            `${formatBytes(s.bytes)} in ${s.blocks} block(s), ${s.category}: ${s.summary}`,
            s.frames,
          ),
        );
      block.append(list);
    }
    section.append(block);
  }
  if (data.whatIf !== null) {
    const w = data.whatIf;
    const setting = settingWords(w.allocConf, w.memoryLimit);
    section.append(el('h3', {}, `Under ${setting}: where the reserved memory goes (${w.verdict})`));
    if (w.error !== null)
      section.append(el('p', { class: 'peak-whatif-error' }, `The replay under it failed: ${w.error}`));
    for (const d of w.devices) section.append(whatIfDevice(d, w.devices.length > 1));
  }
  root.replaceChildren(section);
}

function whatIfDevice(d: WhatIfDevicePeak, several: boolean): HTMLElement {
  const block = el('div', { class: 'peak-whatif', 'data-device': d.device });
  block.append(
    el(
      'p',
      {},
      several ? `Device ${d.device}: ` : '',
      `peak ${formatBytes(d.peakBytes)}, ${signedBytes(d.differenceBytes)} against the recording’s ${formatBytes(d.recordedPeakBytes)}`,
      d.firstOom === null
        ? ''
        : `; the first request it could not serve: ${formatBytes(d.firstOom.bytes)} at event ${d.firstOom.event.toLocaleString('en-US')}`,
    ),
  );
  const whatIfSlack = slackRows(d.slack, true);
  block.append(
    table(
      'peak-whatif-slack',
      ['slack', 'recorded', 'under the setting'],
      slackRows(d.recordedSlack, true).map((r, i) => [r[0], r[1], whatIfSlack[i][1]]),
    ),
  );
  block.append(
    table(
      'peak-whatif-sizes',
      ['segments', 'recorded', 'under the setting', 'difference'],
      d.bySegmentSize.map((r) => [
        r.label,
        `${r.recordedSegments} (${formatBytes(r.recordedBytes)})`,
        `${r.whatIfSegments} (${formatBytes(r.whatIfBytes)})`,
        { text: signedBytes(r.differenceBytes), bytes: r.differenceBytes },
      ]),
    ),
  );
  block.append(
    table(
      'peak-whatif-stacks',
      ['stack (with the segments it holds)', 'recorded', 'under the setting', 'difference'],
      d.byStack.map((r) => [
        r.summary,
        bytesCell(r.recordedBytes),
        bytesCell(r.whatIfBytes),
        { text: signedBytes(r.differenceBytes), bytes: r.differenceBytes },
      ]),
    ),
  );
  return block;
}
