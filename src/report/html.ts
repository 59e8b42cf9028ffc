/**
 * The report as one HTML file that opens from disk: uPlot's script and CSS
 * (read from the installed package when the report is written) and ours are
 * inlined, the data is a JSON script element, the maps inline SVG. Nothing
 * is fetched.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ReportAnswer } from './answer.js';
import { REPORT_SCRIPT } from './client-script.js';
import { escapeXml, formatBytes, formatMicros, hex } from './format.js';
import type { ReportData } from './report-data.js';

/** uPlot's browser build and stylesheet, from node_modules. */
function uplotAssets(): { js: string; css: string } {
  const require = createRequire(import.meta.url);
  return {
    js: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    css: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  };
}

const STYLE = `
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 20px 24px; color: #1d1d1f; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 18px 0 6px; }
p.meta { color: #555; margin: 2px 0 12px; font-size: 13px; }
table.summary { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
table.summary th, table.summary td { padding: 4px 10px; border-bottom: 1px solid #e5e5e5; text-align: right; white-space: nowrap; }
table.summary th:first-child, table.summary td:first-child { text-align: left; }
table.summary thead th { background: #f6f6f6; font-weight: 600; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.chart { margin: 6px 0 14px; position: relative; }
.uplot .u-title { font-size: 14px; font-weight: 600; }
.tooltip { position: absolute; pointer-events: none; background: rgba(255,255,255,0.96); border: 1px solid #bbb; border-radius: 4px; padding: 6px 8px; font-size: 12px; line-height: 1.45; white-space: nowrap; box-shadow: 0 2px 6px rgba(0,0,0,0.15); z-index: 10; }
.tooltip .tip-x { font-weight: 600; margin-bottom: 2px; }
.tooltip .tip-events, .tooltip .tip-lo { color: #666; font-weight: 400; }
.hint { color: #666; font-size: 12px; margin: 0 0 6px; }
.map { margin: 8px 0 18px; overflow-x: auto; }
.map svg { display: block; }
section.answer { border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 16px 12px; margin: 10px 0 18px; background: #fafbfc; }
section.answer h2 { margin-top: 4px; }
section.answer p { margin: 4px 0; font-size: 14px; }
section.answer .recommend code { font-size: 14px; background: #eef3f8; padding: 2px 6px; border-radius: 4px; }
section.answer .fits { color: #1a7f37; }
section.answer .verdict { white-space: normal; text-align: left !important; max-width: 760px; }
section.answer .oom { color: #cf222e; }
section.answer ol.pieces { font-size: 13px; }
section.answer .stack { color: #555; font-family: ui-monospace, monospace; font-size: 12px; white-space: pre; margin: 2px 0 6px 12px; }
footer { color: #666; font-size: 12px; margin-top: 30px; border-top: 1px solid #ddd; padding-top: 8px; }
`;

/** The opening section: the answer to the snapshot's question (answer.ts). */
function answerSection(a: ReportAnswer): string {
  const first = [...a.asRecorded, ...a.cap]
    .map((l, i) => `<p class="${i < a.asRecorded.length ? 'as-recorded' : 'cap'}">${escapeXml(l)}</p>`)
    .join('\n');
  const recorded =
    a.recordedPeakBytes === null
      ? '<p class="recorded">The trace has no segment events of its own, so what PyTorch reserved is not known from it.</p>'
      : `<p class="recorded" data-bytes="${a.recordedPeakBytes}">The recorded run reserved <b>${formatBytes(a.recordedPeakBytes)}</b> at its peak (its own segment events).</p>`;
  const setting = [
    a.allocConf === null ? '' : `settings <code>PYTORCH_CUDA_ALLOC_CONF=${escapeXml(a.allocConf)}</code>`,
    a.memoryLimit === null ? '' : `a memory limit of ${formatBytes(a.memoryLimit)} per device`,
  ].filter((x) => x !== '');
  const under = setting.length === 0 ? '' : `<p>Replayed under ${setting.join(' and ')}.</p>`;
  const rows = a.rows
    .map((r) => {
      const saving =
        r.savingBytes === null || !r.fits
          ? '-'
          : `${r.savingBytes >= 0 ? 'saves' : 'costs'} ${formatBytes(Math.abs(r.savingBytes))}${r.savingFraction === null ? '' : ` (${(Math.abs(r.savingFraction) * 100).toFixed(1)}%)`}`;
      return `<tr data-allocator="${escapeXml(r.name)}"><td>${escapeXml(r.name)}</td><td data-bytes="${r.peakReservedBytes}">${formatBytes(r.peakReservedBytes)}</td><td>${saving}</td><td class="verdict ${r.fits ? 'fits' : 'oom'}">${escapeXml(r.verdict)}</td></tr>`;
    })
    .join('\n');
  const advice =
    a.advice === null
      ? ''
      : a.advice.allocConf === null
        ? `<p class="recommend none">Advice: ${escapeXml(a.advice.verdict)}.</p>`
        : `<p class="recommend" data-bytes="${a.advice.peakReservedBytes}">Advised: <code>PYTORCH_CUDA_ALLOC_CONF=${escapeXml(a.advice.allocConf)}</code>: ${escapeXml(a.advice.verdict)}.</p>`;
  const recordedOoms = a.recordedOoms.map((l) => `<p class="recorded-oom">${escapeXml(l)}.</p>`).join('\n');
  const maps = a.oomMaps
    .map((m) => {
      const pieces = m.pieces
        .map((p) => {
          const pins = p.pinnedBy
            .map(
              (b) =>
                `<li>block at ${hex(b.address)} (${formatBytes(b.size)})${b.stack.length === 0 ? ', stack not recorded' : `<div class="stack">${escapeXml(b.stack.join('\n'))}</div>`}</li>`,
            )
            .join('');
          return `<li data-bytes="${p.size}">${formatBytes(p.size)} free at ${hex(p.address)}${pins === '' ? '' : `, between<ul>${pins}</ul>`}</li>`;
        })
        .join('\n');
      return `<div class="oom-map" data-allocator="${escapeXml(m.allocator)}" data-device="${m.device}">
<h3>${escapeXml(m.sentence)}</h3>
<div class="map">${m.svg}</div>
<p>The largest free pieces of the address space at that moment, and the live blocks that keep each from merging with its neighbours:</p>
<ol class="pieces">${pieces}</ol>
</div>`;
    })
    .join('\n');
  return `<section class="answer" id="answer">
<h2>The answer</h2>
${first}
${recorded}
${under}
<table class="summary answer-table"><thead><tr><th>allocator</th><th>peak reserved</th><th>against the recorded run</th><th class="verdict">verdict</th></tr></thead>
<tbody>
${rows}
</tbody></table>
${advice}
${recordedOoms}
${maps}
</section>`;
}

/** The report page for `data`. */
export function renderReportHtml(data: ReportData): string {
  const { js, css } = uplotAssets();
  const t = data.trace;
  const rows = data.allocators
    .map(
      (
        a,
      ) => `<tr data-allocator="${escapeXml(a.name)}"><td><span class="swatch" style="background:${a.color}"></span>${escapeXml(a.name)}${a.error === null ? '' : ' (failed)'}</td>
<td>${formatBytes(t.peakRequestedBytes)}</td><td class="peak-reserved" data-bytes="${a.peakReservedBytes}">${formatBytes(a.peakReservedBytes)}</td>
<td>${a.ratio === null ? '-' : a.ratio.toFixed(3)}</td><td>${formatBytes(a.peakAllocatedBytes)}</td>
<td>${a.utilization === null ? '-' : a.utilization.toFixed(3)}</td><td>${a.driverCalls.toLocaleString('en-US')}</td>
<td>${a.driverTimeUs === null ? '-' : formatMicros(a.driverTimeUs)}</td><td>${a.ooms}</td></tr>`,
    )
    .join('\n');
  const devices = data.devices
    .map((d) => {
      const maps = d.maps
        .map((m) => {
          const a = data.allocators[m.allocator];
          return `<div class="map" data-allocator="${escapeXml(a.name)}">${m.svg}</div>`;
        })
        .join('\n');
      return `<section class="device" id="device-${d.device}" data-device="${d.device}">
<h2>Device ${d.device}: ${d.events.toLocaleString('en-US')} events</h2>
<p class="hint">Drag across a chart to zoom into a time range, use the wheel to zoom around the cursor, double-click to zoom out. The three charts share one time axis. Each point pair is the least and greatest value of ${d.bucketWidth.toLocaleString('en-US')} event${d.bucketWidth > 1 ? 's' : ''}, so no peak is lost.</p>
<div class="chart chart-memory"></div>
<div class="chart chart-fragmentation"></div>
<div class="chart chart-calls"></div>
<h3>Address space at each allocator's peak of reserved bytes</h3>
<p class="hint">Reservations end to end in address order, wrapped into rows (a black tick starts each). Long unmapped runs are drawn shortened; hover for sizes.</p>
${maps || '<p class="hint">No map: the run failed before its peak.</p>'}
</section>`;
    })
    .join('\n');
  // The maps are in the page already; the script needs only the numbers.
  const json = JSON.stringify(data, (key, value) => (key === 'svg' ? undefined : value)).replace(
    /</g,
    '\\u003c',
  );
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>${escapeXml(data.title)}</title>
<style>${css}</style>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeXml(data.title)}</h1>
${answerSection(data.answer)}
<p class="meta">${t.events.toLocaleString('en-US')} events, ${t.allocs.toLocaleString('en-US')} allocations over ${(t.durationUs / 1e6).toFixed(1)} s; peak requested ${formatBytes(t.peakRequestedBytes)}${t.startedMidRun ? '; the trace started mid-run (blocks live before it were allocated first)' : ''}. Driver time: ${data.costs === null ? 'not estimated (no cost table)' : `estimated from ${escapeXml(data.costs)}`}.</p>
<table class="summary">
<thead><tr><th>allocator</th><th>peak requested</th><th>peak reserved</th><th>reserved / requested</th><th>peak allocated</th><th>utilization</th><th>driver calls</th><th>driver time</th><th>OOMs</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
${devices}
<footer>Made by vmmkit report: the trace replayed through each allocator on a simulated device. Reserved: physical memory held from the driver; allocated: bytes of blocks handed out (rounded); requested: bytes asked for.</footer>
<script type="application/json" id="report-data">${json}</script>
<script>${js}</script>
<script>${REPORT_SCRIPT}</script>
</body>
</html>
`;
}
