/**
 * memory_viz's active memory timeline, drawn on a canvas: the recording's
 * largest live blocks as bands over the trace's events, stacked in the order
 * they were allocated, the bands above a freed block moving down into its
 * place, and every smaller block as one grey band on top (Note [Timeline of
 * the largest blocks], src/report/active-timeline.ts). Hovering over a band
 * shows its size, its lifetime and the stack that allocated it; a click
 * keeps them below the chart. The plot's geometry is on the canvas's data
 * attributes (data-left, data-top, data-width, data-height), for tests.
 */
import type { ActiveTimeline, TimelineBand } from '../../report/active-timeline.js';
import { chartWidth, fmtBytes } from './charts.js';
import { el } from './dom.js';

const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
];
const MARGIN = { left: 72, right: 12, top: 10, bottom: 34 };
const HEIGHT = 320;

/** The band's offset at `event` (undefined: not live then). */
function offsetAt(band: TimelineBand, event: number, events: number): number | undefined {
  const end = band.freeEvent < 0 ? events : band.freeEvent;
  if (event < band.allocEvent || event >= end) return undefined;
  let offset = band.moves[1];
  for (let k = 0; k < band.moves.length && band.moves[k] <= event; k += 2) offset = band.moves[k + 1];
  return offset;
}

function describe(band: TimelineBand): string[] {
  const life = `allocated ${band.allocEvent < 0 ? 'before the trace began' : `at event ${band.allocEvent.toLocaleString('en-US')}`}, ${band.freeEvent < 0 ? 'live at the end' : `freed at event ${band.freeEvent.toLocaleString('en-US')}`}`;
  return [
    `${fmtBytes(band.size)} block: ${life}`,
    ...(band.stack.length === 0 ? ['(no stack recorded)'] : band.stack),
  ];
}

export function renderTimeline(tl: ActiveTimeline, steps: readonly { event: number }[] = []): HTMLElement {
  const width = chartWidth();
  const dpr = devicePixelRatio;
  const canvas = el('canvas', {
    class: 'timeline-canvas',
    width: Math.round(width * dpr),
    height: Math.round(HEIGHT * dpr),
    style: `width:${width}px;height:${HEIGHT}px`,
  });
  const plot = {
    left: MARGIN.left,
    top: MARGIN.top,
    width: width - MARGIN.left - MARGIN.right,
    height: HEIGHT - MARGIN.top - MARGIN.bottom,
  };
  for (const [k, v] of Object.entries(plot)) canvas.dataset[k] = String(v);
  canvas.dataset.events = String(tl.events);
  canvas.dataset.maxBytes = String(tl.maxBytes);
  const top = Math.max(tl.maxBytes, 1);
  const x = (event: number) => plot.left + ((event + 1) / Math.max(tl.events, 1)) * plot.width;
  const y = (bytes: number) => plot.top + plot.height - (bytes / top) * plot.height;
  const ctx = canvas.getContext('2d');
  if (ctx !== null) {
    ctx.scale(dpr, dpr);
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#666';
    ctx.strokeStyle = '#ddd';
    for (let t = 0; t <= 4; t++) {
      const bytes = (top * t) / 4;
      ctx.beginPath();
      ctx.moveTo(plot.left, y(bytes));
      ctx.lineTo(plot.left + plot.width, y(bytes));
      ctx.stroke();
      ctx.fillText(fmtBytes(bytes), 4, y(bytes) + 4);
    }
    for (let t = 0; t <= 5; t++) {
      const event = Math.round(((tl.events - 1) * t) / 5);
      ctx.fillText(
        `event ${event.toLocaleString('en-US')}`,
        Math.min(x(event) - 20, width - 90),
        HEIGHT - 12,
      );
    }
    tl.bands.forEach((band, i) => {
      ctx.fillStyle = PALETTE[i % PALETTE.length];
      const end = band.freeEvent < 0 ? tl.events : band.freeEvent;
      for (let k = 0; k < band.moves.length; k += 2) {
        const from = Math.max(band.moves[k], band.allocEvent);
        const to = k + 2 < band.moves.length ? band.moves[k + 2] : end;
        const offset = band.moves[k + 1];
        ctx.fillRect(
          x(from),
          y(offset + band.size),
          Math.max(0.5, x(to) - x(from)),
          y(offset) - y(offset + band.size),
        );
      }
    });
    ctx.strokeStyle = 'rgba(80,80,80,0.55)';
    ctx.setLineDash([3, 3]);
    for (const step of steps) {
      ctx.beginPath();
      ctx.moveTo(x(step.event - 1), plot.top);
      ctx.lineTo(x(step.event - 1), plot.top + plot.height);
      ctx.stroke();
    }
    ctx.setLineDash([]);
    ctx.fillStyle = 'rgba(120,120,120,0.45)';
    tl.other.forEach((bytes, k) => {
      if (bytes <= 0) return;
      const from = k * tl.bucketWidth;
      const to = Math.min(tl.events, (k + 1) * tl.bucketWidth);
      const base = tl.bandsTop[k];
      ctx.fillRect(
        x(from - 1),
        y(base + bytes),
        Math.max(0.5, x(to - 1) - x(from - 1)),
        y(base) - y(base + bytes),
      );
    });
  }
  const tip = el('div', { class: 'tooltip timeline-tip' });
  tip.style.display = 'none';
  const pinned = el('div', { class: 'timeline-pinned' });
  const bandAt = (px: number, py: number): TimelineBand | undefined => {
    const event = Math.floor(((px - plot.left) / plot.width) * Math.max(tl.events, 1)) - 1;
    const bytes = ((plot.top + plot.height - py) / plot.height) * top;
    return tl.bands.find((band) => {
      const offset = offsetAt(band, event, tl.events);
      return offset !== undefined && bytes >= offset && bytes < offset + band.size;
    });
  };
  const show = (into: HTMLElement, band: TimelineBand) => {
    const [head, ...frames] = describe(band);
    into.replaceChildren(
      el('div', { class: 'tip-x' }, head),
      el('div', { class: 'stack' }, frames.join('\n')),
    );
    into.dataset.block = String(band.block);
  };
  canvas.addEventListener('mousemove', (e) => {
    const band = bandAt(e.offsetX, e.offsetY);
    if (band === undefined) {
      tip.style.display = 'none';
      return;
    }
    show(tip, band);
    tip.style.display = 'block';
    tip.style.left = `${Math.max(0, Math.min(e.offsetX + 14, width - 660))}px`;
    tip.style.top = `${e.offsetY + 10}px`;
  });
  canvas.addEventListener('mouseleave', () => {
    tip.style.display = 'none';
  });
  canvas.addEventListener('click', (e) => {
    const band = bandAt(e.offsetX, e.offsetY);
    if (band !== undefined) show(pinned, band);
  });
  const drawnNote =
    tl.otherBlocks === 0
      ? `every one of the ${tl.bands.length.toLocaleString('en-US')} blocks is a band`
      : `the ${tl.bands.length.toLocaleString('en-US')} largest blocks (${fmtBytes(tl.smallestBandBytes)} and up) are bands; the ${tl.otherBlocks.toLocaleString('en-US')} smaller ones are the grey band on top`;
  return el(
    'div',
    { class: 'timeline' },
    el('h3', {}, 'Active memory timeline (as recorded)'),
    el(
      'p',
      { class: 'hint' },
      `The recording's live blocks over its events, each stacked on those allocated before it (${drawnNote}). Hover over a band for the stack that allocated it; click to keep it below.`,
    ),
    el('div', { class: 'timeline-plot' }, canvas, tip),
    pinned,
  );
}
