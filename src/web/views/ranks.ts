/// <reference lib="dom" />
/**
 * A job's ranks side by side (src/replay/analyse/ranks.ts), drawn: each
 * rank's peak, what it holds most of, and how it fares under the setting;
 * the rank that peaks and the one that runs out first marked; advise's one
 * setting for every rank, with a button that copies the line to paste.
 * Every string from the snapshots goes in as text (dom.ts).
 */

import { settingWords } from '../../replay/analyse/lines.js';
import type { RankSummary } from '../../replay/analyse/ranks.js';
import { formatBytes } from '../../util/format.js';
import { el } from './dom.js';

/**
 * Draw `data` into `root`, in place of what it held; `pendingAdvice`: what
 * to say where the one setting for every rank is not searched yet (the
 * worker is at it).
 */
export function renderRanks(root: HTMLElement, data: RankSummary, pendingAdvice?: string): void {
  const section = el('section', { class: 'ranks' }, el('h2', {}, `${data.ranks.length} ranks`));
  const first = data.firstToRunOut?.rank;
  const setting =
    data.setting === null ? null : settingWords(data.setting.allocConf, data.setting.memoryLimit);
  const head = ['rank', 'peak reserved', 'live at the peak', 'holds most'];
  if (setting !== null) head.push(`under ${setting}`);
  const body = el('tbody');
  for (const r of data.ranks) {
    const marks = [r.rank === data.peakRank ? 'peaks' : '', r.rank === first ? 'runs out first' : '']
      .filter((x) => x !== '')
      .join(', ');
    const tr = el(
      'tr',
      {
        'data-rank': r.rank,
        class:
          [r.rank === data.peakRank ? 'peak-rank' : '', r.rank === first ? 'first-out' : '']
            .join(' ')
            .trim() || undefined,
      },
      el(
        'td',
        {},
        r.name,
        marks === '' ? '' : ` (${marks})`,
        r.reproduced ? '' : ' (not reproduced as recorded)',
      ),
      el('td', { class: 'bytes', 'data-bytes': r.peakReservedBytes }, formatBytes(r.peakReservedBytes)),
      el('td', { class: 'bytes', 'data-bytes': r.allocatedAtPeakBytes }, formatBytes(r.allocatedAtPeakBytes)),
      el(
        'td',
        {},
        r.largestCategory === null
          ? '-'
          : `${r.largestCategory.label} (${formatBytes(r.largestCategory.bytes)})`,
      ),
    );
    if (setting !== null)
      tr.append(
        el(
          'td',
          {},
          r.underSetting === null
            ? '-'
            : r.underSetting.firstOom === null
              ? `fits, peak ${formatBytes(r.underSetting.peakBytes)}`
              : `runs out at event ${r.underSetting.firstOom.event.toLocaleString('en-US')} (a request of ${formatBytes(r.underSetting.firstOom.bytes)})`,
        ),
      );
    body.append(tr);
  }
  section.append(
    el(
      'table',
      { class: 'ranks-table' },
      el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h)))),
      body,
    ),
  );
  section.append(
    el(
      'p',
      { class: 'ranks-spread' },
      `The highest peak is ${formatBytes(data.spreadBytes)} above the lowest.`,
    ),
  );
  if (data.firstToRunOut !== null)
    section.append(
      el(
        'p',
        { class: 'ranks-first-out' },
        `First to run out: ${data.ranks[data.firstToRunOut.rank].name}`,
        data.firstToRunOut.by === 'time'
          ? ' (earliest in time).'
          : ' (earliest through its own trace: the traces have no times).',
      ),
    );
  else if (setting !== null)
    section.append(el('p', { class: 'ranks-first-out' }, `No rank runs out under ${setting}.`));
  const advice = data.advice;
  if (advice !== null) {
    const p = el('p', { class: 'ranks-advice' }, 'One setting for every rank: ');
    if (advice.allocConf === null) p.append(`none fits (${advice.verdict}).`);
    else {
      const line = `PYTORCH_CUDA_ALLOC_CONF=${advice.allocConf}`;
      const copy = el('button', { type: 'button', class: 'copy' }, 'copy');
      // The clipboard may be refused (a file:// page, no permission): the line stays selectable either way.
      copy.addEventListener('click', () => void navigator.clipboard?.writeText(line).catch(() => undefined));
      p.append(el('code', {}, line), ' ', copy, ` (${advice.verdict})`);
    }
    section.append(p);
  } else if (pendingAdvice !== undefined)
    section.append(el('p', { class: 'ranks-advice pending' }, pendingAdvice));
  root.replaceChildren(section);
}
