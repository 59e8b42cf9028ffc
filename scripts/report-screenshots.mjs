#!/usr/bin/env node
// Screenshots of a trace's report for the README (docs/), in Debian's
// chromium through playwright-core. Needs a build (npm run build).
//   node scripts/report-screenshots.mjs traces/h200/kv_cache_decode-native.pickle.gz docs/report-kv_cache_decode
// writes <prefix>.html (not committed), <prefix>-charts.png (memory
// and the reserved-but-unusable chart with the tooltip at vmmkit's peak) and <prefix>-maps.png.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const [trace, prefix] = process.argv.slice(2);
if (trace === undefined || prefix === undefined) {
  console.error('usage: node scripts/report-screenshots.mjs <snapshot.pickle.gz> <output prefix>');
  process.exit(2);
}
const html = join(tmpdir(), `vmmkit-report-${process.pid}.html`);
const made = spawnSync('node', ['dist/src/cli/main.js', 'report', trace, '--out', html], { stdio: 'inherit' });
if (made.status !== 0) process.exit(made.status ?? 1);
const profile = mkdtempSync(join(tmpdir(), 'vmmkit-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 1400 },
});
try {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  await page.goto(pathToFileURL(html).href);
  await page.waitForFunction(() => window.vmmkitReport !== undefined);
  // Hover over the last allocator's peak so the tooltip shows (the charts scrolled to the top of the view).
  await page.evaluate(() => document.querySelector('.chart-memory').scrollIntoView({ block: 'start' }));
  const at = await page.evaluate(() => {
    const r = window.vmmkitReport;
    const u = r.charts[0].chart;
    const s = r.data.devices[0].series[r.data.devices[0].series.length - 1];
    const box = u.over.getBoundingClientRect();
    return { x: box.left + u.valToPos(s.peakX, 'x'), y: box.top + u.valToPos(s.peakReservedBytes, 'y') + 40 };
  });
  await page.mouse.move(at.x, at.y);
  const memory = await page.locator('.chart-memory').first().boundingBox();
  const unusable = await page.locator('.chart-unusable').first().boundingBox();
  await page.screenshot({ path: `${prefix}-charts.png`, clip: { x: 0, y: memory.y - 8, width: 1280, height: unusable.y + unusable.height + 10 - memory.y } });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.mouse.move(0, 0);
  const maps = await page.getByText("Address space at each allocator's peak of reserved bytes").first().boundingBox();
  const last = await page.locator('.map').last().boundingBox();
  await page.screenshot({ path: `${prefix}-maps.png`, fullPage: true, clip: { x: 0, y: maps.y - 8, width: 1280, height: last.y + last.height - maps.y + 16 } });
  console.log(`wrote ${prefix}-charts.png and ${prefix}-maps.png`);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  rmSync(html, { force: true });
}
