/**
 * The report in a real browser (Debian's chromium, headless): it loads from
 * disk with no console or page error and no request leaving file://, the
 * charts hold the series and extents a plain replay of a committed trace
 * gives, hovering shows the value under the cursor, dragging and the wheel
 * zoom, and the maps at the peaks hold the segments and blocks the trace
 * has there. A million-event trace loads and keeps its peak.
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { reportCommand } from '../../src/cli/report.js';
import { DEFAULT_ALLOCATORS } from '../../src/replay/engine/allocators.js';

import { readSnapshotFile } from '../../src/replay/read/load.js';
import { Action, parseSnapshot } from '../../src/replay/read/snapshot.js';

import { formatBytes } from '../../src/report/format.js';
import { renderReportHtml } from '../../src/report/html.js';
import { reportData } from '../../src/report/report-data.js';
import { makeBenchSnapshot } from '../support/bench-snapshot.js';
import { recordReplay, replay } from '../support/replay.js';
import { CI, chromiumMissing, launchChromium, type OpenBrowser, screenshotFolder } from './chromium.js';

const TRACE = fileURLToPath(new URL('../../traces/h200/phases_streams-native.pickle.gz', import.meta.url));
const missing = chromiumMissing();
const OUT = screenshotFolder('vmmkit-browser-');

it.runIf(CI)('chromium is installed where CI runs (npm test’s pretest installs it)', () => {
  expect(missing).toBeUndefined();
});

interface Loaded {
  readonly page: Page;
  readonly problems: string[];
  readonly requests: string[];
}

async function load(open: OpenBrowser, file: string): Promise<Loaded> {
  const page = await open.browser.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(pathToFileURL(file).href);
  await page.waitForFunction(
    () => (globalThis as unknown as { vmmkitReport?: unknown }).vmmkitReport !== undefined,
  );
  return { page, problems, requests };
}

/** The page's window as its script leaves it (the parts of uPlot the tests read). */
interface ReportWindow {
  requestAnimationFrame(callback: () => void): void;
  document: {
    querySelectorAll(selector: string): ArrayLike<{
      getAttribute(name: string): string | null;
      querySelectorAll(selector: string): { length: number };
    }>;
  };
  vmmkitReport: {
    data: { devices: { series: { peakX: number }[] }[] };
    charts: {
      kind: string;
      chart: {
        series: { label: string }[];
        scales: { x: { min: number; max: number } };
        data: number[][];
        over: { getBoundingClientRect(): { left: number; top: number; width: number; height: number } };
        setScale(key: string, range: { min: number; max: number }): void;
        valToPos(value: number, key: string): number;
      };
    }[];
  };
}

/** What the page's charts hold, read through uPlot's own objects. */
interface ChartState {
  kind: string;
  labels: string[];
  xMin: number;
  xMax: number;
  dataXMin: number;
  dataXMax: number;
  seriesMax: number[];
  points: number;
}

async function charts(page: Page): Promise<ChartState[]> {
  return page.evaluate(() => {
    const r = (globalThis as unknown as ReportWindow).vmmkitReport;
    return r.charts.map(({ kind, chart }) => ({
      kind,
      labels: chart.series.slice(1).map((s) => s.label),
      xMin: chart.scales.x.min,
      xMax: chart.scales.x.max,
      dataXMin: chart.data[0][0],
      dataXMax: chart.data[0][chart.data[0].length - 1],
      seriesMax: chart.data.slice(1).map((ys) => Math.max(...ys)),
      points: chart.data[0].length,
    }));
  });
}

describe.skipIf(missing !== undefined)('the report of phases_streams (native) in chromium', () => {
  const snapshot = readSnapshotFile(TRACE);
  // The numbers to expect, from a plain replay: nothing of the report's own.
  const plain = replay(snapshot, { allocators: DEFAULT_ALLOCATORS, keepEvents: true });
  const plan = plain.plan;
  const file = join(OUT, 'phases.html');
  let open: OpenBrowser;
  let loaded: Loaded;

  beforeAll(async () => {
    const lines: string[] = [];
    const code = await reportCommand(
      { out: (l) => lines.push(l), err: (l) => lines.push(l) },
      [TRACE, '--out', file],
      {
        defaultCosts: null,
      },
    );
    expect(code, lines.join('\n')).toBe(0);
    open = await launchChromium();
    loaded = await load(open, file);
  }, 60_000);

  afterAll(async () => {
    await open?.close();
  });

  it('loads with no console or page error, and nothing is fetched but the file itself', async () => {
    expect(loaded.problems).toEqual([]);
    expect(loaded.requests.length).toBeGreaterThan(0);
    expect(loaded.requests.filter((u) => !u.startsWith('file://'))).toEqual([]);
    expect(new Set(loaded.requests)).toEqual(new Set([pathToFileURL(file).href]));
  });

  it('written without --advise, names no setting and says how to ask for one', async () => {
    const pending = loaded.page.locator('section.answer .recommend.pending');
    expect(await pending.textContent()).toContain('vmmkit report --advise');
    expect(await loaded.page.locator('section.answer .recommend code').count()).toBe(0);
  });

  it("draws each allocator's series, the memory chart's maxima being the replay's peaks", async () => {
    const cs = await charts(loaded.page);
    expect(cs.map((c) => c.kind)).toEqual(['memory', 'unusable', 'calls']);
    const names = DEFAULT_ALLOCATORS.map((a) => a.name);
    const memory = cs[0];
    expect(memory.labels).toEqual([
      'requested',
      ...names.map((n) => `${n} reserved`),
      ...names.map((n) => `${n} allocated`),
      'recorded reserved',
    ]);
    // The recorded run's curve peaks where its own segment events do: the native model reproduces it.
    expect(memory.seriesMax[1 + 2 * names.length]).toBe(plain.allocators[0].peakReservedBytes);
    expect(memory.seriesMax[0]).toBe(plan.peakRequestedBytes);
    plain.allocators.forEach((a, i) => {
      expect(memory.seriesMax[1 + i], a.name).toBe(a.peakReservedBytes);
      expect(memory.seriesMax[1 + names.length + i], a.name).toBe(a.peakAllocatedBytes);
    });
    expect(cs[1].labels).toEqual(names);
    expect(cs[2].labels).toEqual(names);
    // Calls per interval add up to the replay's driver calls.
    const sums = await loaded.page.evaluate(() => {
      const r = (globalThis as unknown as ReportWindow).vmmkitReport;
      const c = r.charts[2].chart;
      return c.data
        .slice(1)
        .map((ys: number[]) => ys.reduce((s: number, v: number, k: number) => (k % 2 === 0 ? s + v : s), 0));
    });
    expect(sums).toEqual(
      plain.allocators.map((a) => Object.values(a.driverCalls).reduce((s, x) => s + x, 0)),
    );
    // One time axis: the trace's first to last event, in seconds.
    for (const c of cs) {
      expect(c.dataXMin).toBe(0);
      expect(c.dataXMax).toBeCloseTo(plan.durationUs / 1e6, 9);
      expect(c.xMin).toBe(0);
      expect(c.xMax).toBeCloseTo(plan.durationUs / 1e6, 9);
    }
  });

  it('shows the peak in the tooltip when hovering over it', async () => {
    const { page } = loaded;
    const peak = plain.allocators[0].peakReservedBytes;
    // The page opens with the drop zone and the answer: the chart is brought into view first.
    await page.locator('.chart-memory').first().scrollIntoViewIfNeeded();
    // Zoom close around the native allocator's peak, then hover there.
    await page.evaluate(() => {
      const r = (globalThis as unknown as ReportWindow).vmmkitReport;
      const x = r.data.devices[0].series[0].peakX;
      r.charts[0].chart.setScale('x', { min: x - 0.002, max: x + 0.002 });
    });
    // uPlot applies a new scale on its next commit: read positions after a frame.
    const at = await page.evaluate(
      () =>
        new Promise<{ x: number; y: number; min: number }>((done) =>
          (globalThis as unknown as ReportWindow).requestAnimationFrame(() => {
            const r = (globalThis as unknown as ReportWindow).vmmkitReport;
            const u = r.charts[0].chart;
            const box = u.over.getBoundingClientRect();
            const x = r.data.devices[0].series[0].peakX;
            done({ x: box.left + u.valToPos(x, 'x'), y: box.top + box.height / 2, min: u.scales.x.min });
          }),
        ),
    );
    expect(at.min).toBeGreaterThan(0);
    await page.mouse.move(at.x, at.y);
    const tip = page.locator('.chart-memory .tooltip');
    await expect.poll(() => tip.isVisible()).toBe(true);
    const row = tip.locator('[data-series="pytorch-native reserved"]');
    expect(Number(await row.getAttribute('data-value'))).toBe(peak);
    expect(await row.textContent()).toContain(formatBytes(peak));
    await page.screenshot({ path: join(OUT, 'hover.png') });
    await page.dblclick('.chart-memory .u-over');
  });

  it("reads each allocator's peak when hovering over its peak at full width", async () => {
    const { page } = loaded;
    await page.locator('.chart-memory').first().scrollIntoViewIfNeeded();
    for (const [i, a] of plain.allocators.entries()) {
      const at = await page.evaluate((k) => {
        const r = (globalThis as unknown as ReportWindow).vmmkitReport;
        const u = r.charts[0].chart;
        const box = u.over.getBoundingClientRect();
        return {
          x: box.left + u.valToPos(r.data.devices[0].series[k].peakX, 'x'),
          y: box.top + box.height / 2,
        };
      }, i);
      await page.mouse.move(at.x, at.y);
      const row = page.locator(`.chart-memory .tooltip [data-series="${a.name} reserved"]`);
      await expect.poll(async () => Number(await row.getAttribute('data-value'))).toBe(a.peakReservedBytes);
    }
  });

  it('zooms by dragging, and the other charts follow; the wheel zooms too', async () => {
    const { page } = loaded;
    const full = (await charts(page))[0];
    await page.locator('.chart-memory').first().scrollIntoViewIfNeeded();
    const box = (await page.locator('.chart-memory .u-over').boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 6 });
    await page.mouse.up();
    const dragged = await charts(page);
    const span = (c: ChartState) => c.xMax - c.xMin;
    expect(span(dragged[0])).toBeLessThan(span(full) * 0.4);
    expect(dragged[0].xMin).toBeGreaterThan(full.xMin);
    expect(dragged[1].xMin).toBe(dragged[0].xMin);
    expect(dragged[2].xMax).toBe(dragged[0].xMax);

    await page.dblclick('.chart-memory .u-over');
    const reset = await charts(page);
    expect(span(reset[0])).toBeCloseTo(span(full), 9);
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
    await page.mouse.wheel(0, -400);
    await expect.poll(async () => span((await charts(page))[0])).toBeLessThan(span(full) * 0.9);
    const wheeled = await charts(page);
    expect(wheeled[1].xMin).toBe(wheeled[0].xMin);
    await page.dblclick('.chart-memory .u-over');
  });

  it('draws at each peak the segments and live blocks the trace has there', async () => {
    const { page } = loaded;
    const d = plan.devices[0];
    const maps = await page.evaluate(() =>
      Array.from((globalThis as unknown as ReportWindow).document.querySelectorAll('.map svg')).map(
        (svg) => ({
          allocator: svg.getAttribute('data-allocator'),
          reservations: svg.querySelectorAll('.reservation').length,
          blocks: svg.querySelectorAll('g.block').length,
          releasable: svg.querySelectorAll('.releasable').length,
        }),
      ),
    );
    expect(maps.map((m) => m.allocator)).toEqual(DEFAULT_ALLOCATORS.map((a) => a.name));
    // Native and expandable segments: reserved bytes are the bytes their segment events hold, so the
    // peak's event and what is live there follow from the replay's segment events alone.
    for (const [i, kind] of [
      [0, 'whole'],
      [1, 'pages'],
    ] as const) {
      const events = plain.allocators[i].devices[0].segmentEvents;
      let held = 0;
      let peak = -1;
      let peakEvent = -2;
      const live = new Set<number>();
      let segmentsAtPeak = 0;
      for (const e of events) {
        const grow = e.action === 'segment_alloc' || e.action === 'segment_map';
        held += grow ? e.size : -e.size;
        if (e.action === 'segment_alloc') live.add(e.address);
        if (e.action === 'segment_free') live.delete(e.address);
        if (held > peak) {
          peak = held;
          peakEvent = e.eventIndex;
          segmentsAtPeak = live.size;
        }
      }
      expect(peak).toBe(plain.allocators[i].peakReservedBytes);
      let blocks = d.initialBlocks.length;
      for (let e = 0; e <= peakEvent; e++) {
        if (d.blockOf[e] < 0) continue;
        if (d.trace.action[e] === Action.alloc) blocks++;
        else if (d.trace.action[e] === Action.free_completed) blocks--;
      }
      expect(maps[i].blocks, DEFAULT_ALLOCATORS[i].name).toBe(blocks);
      if (kind === 'whole') expect(maps[i].reservations).toBe(segmentsAtPeak);
      else expect(maps[i].reservations).toBeGreaterThan(0);
    }
    for (const m of maps) expect(m.blocks).toBeGreaterThan(0);
  });

  it('takes a screenshot of the whole page', async () => {
    const path = join(OUT, 'report.png');
    await loaded.page.screenshot({ path, fullPage: true });
    expect(statSync(path).size).toBeGreaterThan(20_000);
  });
});

describe.skipIf(missing !== undefined)('a report of a million events in chromium', () => {
  let open: OpenBrowser;
  afterAll(async () => {
    await open?.close();
  });

  it('loads, draws a few thousand points per series and keeps the peak exactly', async () => {
    const snapshot = parseSnapshot(makeBenchSnapshot(1_000_000));
    const allocators = DEFAULT_ALLOCATORS.filter((a) => a.name === 'vmmkit');
    const recorded = recordReplay(snapshot, { allocators, peakLayout: false });
    const file = join(OUT, 'million.html');
    writeFileSync(file, renderReportHtml(reportData(recorded, 'a million events')));
    open = await launchChromium();
    const { page, problems } = await load(open, file);
    expect(problems).toEqual([]);
    const [memory] = await charts(page);
    expect(recorded.plan.events).toBeGreaterThanOrEqual(1_000_000);
    expect(memory.points).toBeLessThanOrEqual(4000);
    expect(memory.seriesMax[1]).toBe(recorded.result.allocators[0].peakReservedBytes);
    // Still answers: a hover shows its tooltip.
    const box = (await page.locator('.chart-memory .u-over').boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await expect.poll(() => page.locator('.chart-memory .tooltip').isVisible()).toBe(true);
  }, 120_000);
});

describe.skipIf(missing !== undefined)('the answer of a report under a memory limit, in chromium', () => {
  const MOE = fileURLToPath(new URL('../../traces/h200/moe_train-native.pickle.gz', import.meta.url));
  // Under 3.2 GiB the native allocator runs out and a setting fits (under 3.1 GiB nothing can: 3.13 GiB live).
  const limit = Math.floor(3.2 * 1024 ** 3);
  let open: OpenBrowser;
  afterAll(async () => {
    await open?.close();
  });

  it("opens with the recorded peak, each allocator's verdict and peak, the advice and the map at the failed request", async () => {
    const file = join(OUT, 'answer.html');
    const lines: string[] = [];
    const code = await reportCommand(
      { out: (l) => lines.push(l), err: (l) => lines.push(l) },
      [MOE, '--memory-limit', String(limit), '--advise', '--out', file],
      { defaultCosts: null },
    );
    expect(code, lines.join('\n')).toBe(0);
    // What to expect, from a plain replay under the same limit.
    const plain = replay(readSnapshotFile(MOE), { allocators: DEFAULT_ALLOCATORS, memoryLimit: limit });
    open = await launchChromium();
    const { page, problems, requests } = await load(open, file);
    expect(problems).toEqual([]);
    expect(requests.every((u) => u.startsWith('file:'))).toBe(true);
    const answer = page.locator('section.answer');
    expect(await answer.isVisible()).toBe(true);
    // The answer is the first thing on the page, above the charts.
    const answerBox = (await answer.boundingBox())!;
    const chartBox = (await page.locator('.chart-memory').first().boundingBox())!;
    expect(answerBox.y).toBeLessThan(chartBox.y);
    expect(await answer.locator('.recorded').getAttribute('data-bytes')).toBe(String(4554 * 1024 ** 2));
    for (const run of plain.allocators) {
      const row = answer.locator(`tr[data-allocator="${run.name}"]`);
      expect(await row.locator('td[data-bytes]').getAttribute('data-bytes')).toBe(
        String(run.peakReservedBytes),
      );
      expect(await row.locator('td.verdict').textContent()).toMatch(
        run.firstOom === null
          ? /fits/
          : new RegExp(`runs out of memory at event ${run.firstOom.event.toLocaleString('en-US')}`),
      );
    }
    expect(await answer.locator('.recommend code').textContent()).toMatch(/^PYTORCH_CUDA_ALLOC_CONF=/);
    // One map per allocator that ran out, drawn (its SVG has rectangles), with its largest free pieces listed.
    const oomRuns = plain.allocators.filter((a) => a.firstOom !== null).length;
    expect(await answer.locator('.oom-map').count()).toBe(oomRuns);
    const svgRects = await answer.locator('.oom-map svg rect').count();
    expect(svgRects).toBeGreaterThan(oomRuns);
    expect(await answer.locator('.oom-map ol.pieces > li').count()).toBeGreaterThan(0);
    await page.screenshot({
      path: join(OUT, 'answer.png'),
      clip: { ...answerBox, height: Math.min(answerBox.height, 1600) },
    });
  }, 120_000);
});

describe.skipIf(missing !== undefined)("vmmkit map's page in chromium", () => {
  let open: OpenBrowser;
  afterAll(async () => {
    await open?.close();
  });

  it('loads with no error and draws each process with its reservations and mappings', async () => {
    const script = fileURLToPath(new URL('../report/fixtures/two-processes.mjs', import.meta.url));
    const file = join(OUT, 'map.html');
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    expect(await runCli(['map', script, '--at', 'mapped', '--out', file], io), lines.join('\n')).toBe(0);
    open = await launchChromium();
    const page = await open.browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(pathToFileURL(file).href);
    const drawn = await page.evaluate(() =>
      Array.from((globalThis as unknown as ReportWindow).document.querySelectorAll('svg.address-map')).map(
        (svg) => ({
          reservations: svg.querySelectorAll('.reservation').length,
          mappings: svg.querySelectorAll('g.mapping').length,
          noAccess: svg.querySelectorAll('.no-access').length,
        }),
      ),
    );
    expect(problems).toEqual([]);
    expect(drawn.map((d) => [d.reservations, d.mappings])).toEqual([
      [1, 2],
      [1, 1],
    ]);
    expect(drawn[0].noAccess).toBe(0);
    expect(drawn[1].noAccess).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUT, 'map.png'), fullPage: true });
  });
});
