/**
 * The answer, first, in the CLI's words (verdict.ts): the recording
 * reproduced or how far off, the cap given or inferred, each allocator's
 * peak, saving and verdict, advise's setting with its headroom and the line
 * to paste (with a copy button), what became of a recorded OOM, and, for a
 * run that ran out, the address space at the failed request with the
 * stacks that pin its free pieces.
 */

import type { ReportAnswer } from '../../report/answer.js';
import { formatBytes, hex } from '../../report/format.js';
import { el, svgOf } from './dom.js';

/**
 * `pendingAdvice`: what to say where the answer names no setting yet (the
 * page's worker still searching, or a report written without --advise).
 */
export function renderAnswer(a: ReportAnswer, pendingAdvice?: string): HTMLElement {
  const section = el('section', { class: 'answer' }, el('h2', {}, 'The answer'));
  for (const line of a.asRecorded) section.append(el('p', { class: 'as-recorded' }, line));
  for (const line of a.cap) section.append(el('p', { class: 'cap' }, line));
  section.append(
    a.recordedPeakBytes === null
      ? el(
          'p',
          { class: 'recorded' },
          'The trace has no segment events of its own, so what PyTorch reserved is not known from it.',
        )
      : el(
          'p',
          { class: 'recorded', 'data-bytes': a.recordedPeakBytes },
          'The recorded run reserved ',
          el('b', {}, formatBytes(a.recordedPeakBytes)),
          ' at its peak (its own segment events).',
        ),
  );
  const setting = [
    a.allocConf === null ? '' : `settings ${a.allocConfName ?? 'PYTORCH_CUDA_ALLOC_CONF'}=${a.allocConf}`,
    a.memoryLimit === null ? '' : `a memory limit of ${formatBytes(a.memoryLimit)} per device`,
  ].filter((x) => x !== '');
  if (setting.length > 0)
    section.append(el('p', { class: 'under' }, `Replayed under ${setting.join(' and ')}.`));
  const body = el('tbody');
  for (const r of a.rows) {
    const saving =
      r.savingBytes === null || !r.fits
        ? '-'
        : `${r.savingBytes >= 0 ? 'saves' : 'costs'} ${formatBytes(Math.abs(r.savingBytes))}${r.savingFraction === null ? '' : ` (${(Math.abs(r.savingFraction) * 100).toFixed(1)}%)`}`;
    body.append(
      el(
        'tr',
        { 'data-allocator': r.name },
        el('td', {}, r.name),
        el('td', { class: 'peak', 'data-bytes': r.peakReservedBytes }, formatBytes(r.peakReservedBytes)),
        el('td', {}, saving),
        el('td', { class: `verdict ${r.fits ? 'fits' : 'oom'}` }, r.verdict),
      ),
    );
  }
  section.append(
    el(
      'table',
      { class: 'summary answer-table' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          el('th', {}, 'allocator'),
          el('th', {}, 'peak reserved'),
          el('th', {}, 'against the recorded run'),
          el('th', { class: 'verdict' }, 'verdict'),
        ),
      ),
      body,
    ),
  );
  if (a.advice !== null) section.append(adviceOf(a.advice, a.allocConfName ?? 'PYTORCH_CUDA_ALLOC_CONF'));
  else if (pendingAdvice !== undefined)
    section.append(el('p', { class: 'recommend pending' }, pendingAdvice));
  for (const line of a.recordedOoms) section.append(el('p', { class: 'recorded-oom' }, `${line}.`));
  for (const line of a.notes ?? []) section.append(el('p', { class: 'note' }, `note: ${line}`));
  for (const m of a.oomMaps) {
    const pieces = el('ol', { class: 'pieces' });
    for (const p of m.pieces) {
      const item = el('li', { 'data-bytes': p.size }, `${formatBytes(p.size)} free at ${hex(p.address)}`);
      if (p.pinnedBy.length > 0) {
        const pins = el('ul');
        for (const b of p.pinnedBy) {
          pins.append(
            el(
              'li',
              {},
              `block at ${hex(b.address)} (${formatBytes(b.size)})${b.stack.length === 0 ? ', stack not recorded' : ''}`,
              b.stack.length === 0 ? null : el('div', { class: 'stack' }, b.stack.join('\n')),
            ),
          );
        }
        item.append(', between', pins);
      }
      pieces.append(item);
    }
    section.append(
      el(
        'div',
        { class: 'oom-map', 'data-allocator': m.allocator, 'data-device': m.device },
        el('h3', {}, m.sentence),
        el('div', { class: 'map' }, svgOf(m.svg)),
        el(
          'p',
          {},
          'The largest free pieces of the address space at that moment, and the live blocks that keep each from merging with its neighbours:',
        ),
        pieces,
      ),
    );
  }
  return section;
}

function adviceOf(advice: NonNullable<ReportAnswer['advice']>, name: string): HTMLElement {
  if (advice.allocConf === null) return el('p', { class: 'recommend none' }, `Advice: ${advice.verdict}.`);
  const line = `${name}=${advice.allocConf}`;
  const copy = el('button', { type: 'button', class: 'copy', title: 'copy the line to paste' }, 'copy');
  copy.addEventListener('click', () => {
    void navigator.clipboard?.writeText(line).then(
      () => {
        copy.textContent = 'copied';
      },
      () => {
        copy.textContent = 'select and copy';
      },
    );
  });
  const limit = advice.memoryLimit ?? null;
  const headroom =
    limit === null || advice.headroomBytes === null || advice.headroomBytes === undefined
      ? null
      : el(
          'p',
          { class: 'headroom', 'data-bytes': advice.headroomBytes },
          `margin: ${formatBytes(advice.headroomBytes)} under the limit ${formatBytes(limit)} (${((advice.headroomBytes / limit) * 100).toFixed(1)}%)`,
        );
  return el(
    'div',
    { class: 'recommend', 'data-bytes': advice.peakReservedBytes },
    el(
      'p',
      {},
      'Advised (vmmkit advise): ',
      el('code', { class: 'paste' }, line),
      ' ',
      copy,
      advice.allocConf === '' ? " (empty: PyTorch's defaults)" : '',
    ),
    el('p', {}, `predicted peak ${formatBytes(advice.peakReservedBytes)}; ${advice.verdict}`),
    headroom,
  );
}
