/**
 * The analysis panels (src/web/views/{peak,compare,ranks}.ts) in real
 * Chromium: bundled alone by vite, given the data analysePeak,
 * compareSnapshots and summariseRanks compute from committed snapshots,
 * they show the same figures, make no request, log no error, and show a
 * stack whose strings carry HTML or script as text, running none of it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { PeakBreakdown } from '../../src/replay/analyse/peak.js';

import { readSnapshotFile } from '../../src/replay/read/load.js';
import type { MemorySnapshot } from '../../src/replay/read/snapshot.js';
import { formatBytes } from '../../src/util/format.js';
import { analysePeak, compareSnapshots, summariseRanks } from '../support/replay.js';
import { chromiumMissing, launchChromium, type OpenBrowser } from './chromium.js';

const at = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const missing = chromiumMissing();

/** Script strings a hostile snapshot could carry in its frames. */
const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">';
const HOSTILE_FILE = '</pre><script>window.__pwned=2</script>.py';

/** The three panels as one script for the page: vite bundles them (with dom.ts and util/format.ts) alone. */
async function panelsScript(): Promise<string> {
  const { build } = await import('vite');
  const dir = mkdtempSync(join(tmpdir(), 'vmmkit-panels-'));
  try {
    const entry = join(dir, 'panels.ts');
    const views = (name: string) => JSON.stringify(at(`src/web/views/${name}.ts`));
    writeFileSync(
      entry,
      ['peak', 'compare', 'ranks']
        .map((v) => `export { render${v[0].toUpperCase()}${v.slice(1)} } from ${views(v)};`)
        .join('\n'),
    );
    const result = await build({
      configFile: false,
      logLevel: 'silent',
      root: dir,
      build: {
        write: false,
        minify: false,
        lib: { entry, formats: ['iife'], name: 'vmmkitPanels', fileName: () => 'panels.js' },
      },
    });
    const outputs = Array.isArray(result) ? result : [result];
    for (const o of outputs)
      if ('output' in o) for (const chunk of o.output) if (chunk.type === 'chunk') return chunk.code;
    throw new Error('vite made no script of the panels');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** gpt_train's stacks snapshot with its own script's frames renamed to HTML and script. */
function hostile(s: MemorySnapshot): MemorySnapshot {
  return {
    ...s,
    frames: s.frames.map((f) =>
      f.filename.endsWith('record.py')
        ? { ...f, filename: HOSTILE_FILE, name: f.name === 'gpt_train' ? HOSTILE_NAME : f.name }
        : f,
    ),
  };
}

interface Shown {
  readonly text: string;
  readonly markup: number;
  readonly pwned: unknown;
  readonly categories: { category: string; bytes: number; text: string }[];
  readonly stacks: string[];
  readonly compareFigures: (string | null)[];
  readonly rankRows: { rank: string | null; className: string }[];
  readonly copy: number;
}

describe.skipIf(missing !== undefined)('the analysis panels in chromium', () => {
  let open: OpenBrowser;
  let page: Page;
  const problems: string[] = [];
  const requests: string[] = [];
  let peak: PeakBreakdown;
  let shown: Shown;
  let ranksPeak = -1;

  beforeAll(async () => {
    const stacks = readSnapshotFile(at('traces/h200-whatif/gpt_train--stacks.pickle'));
    const bad = hostile(stacks);
    peak = analysePeak(bad, { allocConf: 'expandable_segments:True' });
    const comparison = compareSnapshots(stacks, bad);
    const two = readSnapshotFile(at('test/replay/fixtures/wild/memsnapdump-multi-devices.pickle.gz'));
    const ranks = await summariseRanks([two], {
      names: [HOSTILE_NAME],
      memoryLimit: 600 * 2 ** 20,
      workers: 0,
    });
    ranksPeak = ranks.peakRank;
    const code = await panelsScript();
    open = await launchChromium();
    page = await open.browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => requests.push(r.url()));
    await page.setContent(
      '<!doctype html><meta charset="utf-8"><body><div id="peak"></div><div id="compare"></div><div id="ranks"></div></body>',
    );
    await page.addScriptTag({ content: code });
    // The data crosses as JSON, as the page's workers hand it over.
    await page.evaluate(
      ([p, c, r]) => {
        const w = globalThis as unknown as {
          vmmkitPanels: Record<string, (root: unknown, data: unknown) => void>;
          document: { getElementById(id: string): unknown };
        };
        w.vmmkitPanels.renderPeak(w.document.getElementById('peak'), p);
        w.vmmkitPanels.renderCompare(w.document.getElementById('compare'), c);
        w.vmmkitPanels.renderRanks(w.document.getElementById('ranks'), r);
      },
      JSON.parse(JSON.stringify([peak, comparison, ranks])) as unknown[],
    );
    // An <img onerror> would have fired by now.
    await page.waitForTimeout(200);
    // Kept for a look where VMMKIT_SCREENSHOTS names a folder (as the report's tests do).
    const keep = process.env.VMMKIT_SCREENSHOTS;
    if (keep !== undefined)
      await page.screenshot({ path: join(keep, 'analysis-panels.png'), fullPage: true });
    shown = (await page.evaluate(() => {
      const d = (globalThis as unknown as { document: Document }).document;
      const all = (sel: string) => Array.from(d.querySelectorAll(sel));
      return {
        text: d.body.textContent ?? '',
        markup: all('#peak img, #peak script, #compare img, #compare script, #ranks img, #ranks script')
          .length,
        pwned: (globalThis as unknown as { __pwned?: unknown }).__pwned,
        categories: all('#peak .peak-categories tr[data-category]').map((tr) => ({
          category: tr.getAttribute('data-category') ?? '',
          bytes: Number(tr.querySelector('td.bytes')?.getAttribute('data-bytes')),
          text: tr.querySelector('td.bytes')?.textContent ?? '',
        })),
        stacks: all('#peak .peak-stacks summary').map((x) => x.textContent ?? ''),
        compareFigures: all('#compare .compare-figures tbody tr:first-child td.bytes').map((x) =>
          x.getAttribute('data-bytes'),
        ),
        rankRows: all('#ranks tbody tr').map((tr) => ({
          rank: tr.getAttribute('data-rank'),
          className: tr.getAttribute('class') ?? '',
        })),
        copy: all('#ranks button.copy').length,
      };
    })) as Shown;
  }, 120_000);

  afterAll(async () => {
    await open?.close();
  });

  it('shows the figures of the data it was given', () => {
    const d = peak.devices[0];
    const want: { category: string; bytes: number; text: string }[] = d.categories.map((c) => ({
      category: c.category,
      bytes: c.bytes,
      text: formatBytes(c.bytes),
    }));
    if (d.slack !== null)
      want.push({ category: 'slack', bytes: d.slack.totalBytes, text: formatBytes(d.slack.totalBytes) });
    expect(shown.categories).toEqual(want);
    expect(shown.stacks).toHaveLength(d.topStacks.length);
    expect(shown.compareFigures.slice(0, 2)).toEqual([String(d.reservedBytes), String(d.reservedBytes)]);
    expect(shown.rankRows.map((r) => r.rank)).toEqual(['0', '1']);
    expect(shown.rankRows[ranksPeak].className).toContain('peak-rank');
    expect(shown.copy).toBe(1);
  });

  it('shows HTML and script from the stacks as text and runs none of it', () => {
    expect(peak.devices[0].topStacks.some((s) => s.frames.some((f) => f.includes(HOSTILE_FILE)))).toBe(true);
    expect(peak.devices[0].topStacks.some((s) => s.summary.includes('<script>'))).toBe(true);
    expect(shown.text).toContain(HOSTILE_FILE);
    expect(shown.text).toContain(HOSTILE_NAME);
    expect(shown.markup).toBe(0);
    expect(shown.pwned).toBeUndefined();
  });

  it('makes no request and logs no error', () => {
    expect(requests.filter((u) => u !== 'about:blank')).toEqual([]);
    expect(problems).toEqual([]);
  });
});
