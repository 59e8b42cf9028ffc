/**
 * `vmmkit map`'s output: the address-space maps of a script's processes, as
 * one HTML page (a map and tables of reservations, mappings and handles per
 * process) or one SVG (the maps stacked).
 */
import type { RuntimeDescription } from '../core/runtime.js';
import { Access } from '../core/types.js';
import { layoutMap } from './address-map.js';
import { escapeXml, formatBytes, hex } from './format.js';

/** One process's state at one moment, with a line saying which. */
export interface MapCapture {
  readonly label: string;
  readonly description: RuntimeDescription;
}

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 20px 24px; color: #1d1d1f; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0 14px; }
th, td { padding: 3px 9px; border-bottom: 1px solid #eee; text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f6f6f6; } td:first-child, th:first-child { text-align: left; }
p.none { color: #666; }
`;

function access(a: readonly Access[]): string {
  return a.map((x, d) => `${d}:${x === Access.ReadWrite ? 'rw' : x === Access.Read ? 'r' : '-'}`).join(' ');
}

/** An HTML page with each capture's map and tables. */
export function renderMapPage(captures: readonly MapCapture[], title = 'vmmkit map'): string {
  const sections = captures
    .map((c, i) => {
      const d = c.description;
      const { svg } = layoutMap(d, { title: c.label, idPrefix: `map-${i}` });
      const reservations = d.reservations
        .map(
          (r) =>
            `<tr class="reservation-row"><td>${hex(r.base)}</td><td>${formatBytes(r.size)}</td><td>${r.origin}</td><td>${r.mappings.length}</td></tr>`,
        )
        .join('');
      const mappings = d.reservations
        .flatMap((r) => r.mappings)
        .map(
          (m) =>
            `<tr class="mapping-row"><td>${hex(m.va)}</td><td>${formatBytes(m.size)}</td><td>${m.handle}</td><td>${formatBytes(m.offset)}</td><td>${access(m.access)}</td></tr>`,
        )
        .join('');
      const handles = d.allocations
        .map(
          (a) =>
            `<tr class="handle-row"><td>${a.handle}</td><td>${formatBytes(a.size)}</td><td>${a.location.type} ${a.location.id}</td><td>${a.origin}</td><td>${a.handleRefs}</td><td>${a.mapRefs}</td></tr>`,
        )
        .join('');
      const devices = d.devices
        .map((v) => `${v.ordinal}: ${escapeXml(v.name)} (${formatBytes(v.totalMemory)})`)
        .join(', ');
      return `<section class="process" data-pid="${d.pid}">
<h2>${escapeXml(c.label)}</h2>
<p>devices ${devices}</p>
${svg}
${reservations === '' ? '<p class="none">no reservations</p>' : `<table><thead><tr><th>reservation</th><th>size</th><th>origin</th><th>mappings</th></tr></thead><tbody>${reservations}</tbody></table>`}
${mappings === '' ? '' : `<table><thead><tr><th>mapping</th><th>size</th><th>handle</th><th>offset</th><th>access (device:rw)</th></tr></thead><tbody>${mappings}</tbody></table>`}
${handles === '' ? '<p class="none">no handles</p>' : `<table><thead><tr><th>handle</th><th>size</th><th>location</th><th>origin</th><th>handle refs</th><th>map refs</th></tr></thead><tbody>${handles}</tbody></table>`}
</section>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${escapeXml(title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeXml(title)}</h1>
${sections || '<p class="none">The script made no process.</p>'}
</body></html>
`;
}

/** One SVG with each capture's map, one under another. */
export function renderMapSvg(captures: readonly MapCapture[]): string {
  let y = 0;
  let width = 960;
  const parts = captures.map((c, i) => {
    const svg = layoutMap(c.description, { title: c.label, idPrefix: `map-${i}` }).svg;
    const h = Number(/height="(\d+)"/.exec(svg)?.[1] ?? 0);
    width = Math.max(width, Number(/width="(\d+)"/.exec(svg)?.[1] ?? 0));
    const placed = svg.replace('<svg ', `<svg x="0" y="${y}" `);
    y += h + 12;
    return placed;
  });
  if (parts.length === 0) {
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="40"><text x="12" y="24" font-family="system-ui, sans-serif" font-size="13">The script made no process.</text></svg>\n`;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}">\n${parts.join('\n')}\n</svg>\n`;
}
