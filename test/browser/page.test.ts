/**
 * The page (src/web, built into dist/web/index.html) as people use it, in
 * real Chromium: snapshots loaded through its file input from a file://
 * page, its figures against `vmmkit replay --json` on the same files,
 * settings typed and the verdict changing (PyTorch's own message for a bad
 * string), two snapshots compared and three ranks side by side, the page
 * served by `vmmkit open`, and a snapshot whose stack strings carry HTML and
 * script, shown as text with none of it run. Every case checks that no
 * console error or page error happened and that no request left the page's
 * own file, blobs, or (served) its loopback server.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AllocConfError } from '../../src/alloc/errors.js';
import { parseAllocConf } from '../../src/alloc/pytorch/alloc-conf.js';
import { runCli } from '../../src/cli/cli.js';
import { offeredFiles, startOpenServer } from '../../src/cli/open.js';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readPickle, readSnapshotFile } from '../../src/replay/read/load.js';
import { isPickleDict, type PickleValue } from '../../src/replay/read/pickle/value.js';
import { pickle } from '../../src/replay/read/pickle/writer.js';
import { Action } from '../../src/replay/read/snapshot.js';
import { CI, chromiumMissing, launchChromium, type OpenBrowser, screenshotFolder } from './chromium.js';

const trace = (name: string) =>
  fileURLToPath(new URL(`../../traces/h200/${name}.pickle.gz`, import.meta.url));
const PHASES = trace('phases_streams-native');
const PHASES_EXPANDABLE = trace('phases_streams-expandable');
const MOE = trace('moe_train-native');
const STACKS = fileURLToPath(new URL('../../traces/h200-whatif/gpt_train--stacks.pickle', import.meta.url));

interface ReportWindowCharts {
  vmmkitReport: {
    charts: {
      chart: {
        valToPos(v: number, key: string): number;
        over: { getBoundingClientRect(): { width: number } };
      };
    }[];
  };
}

interface TimelineData {
  timeline: {
    events: number;
    maxBytes: number;
    bands: { block: number; size: number; allocEvent: number; freeEvent: number; moves: number[] }[];
  };
}
const PAGE = fileURLToPath(new URL('../../dist/web/index.html', import.meta.url));
const missing = chromiumMissing() ?? (existsSync(PAGE) ? undefined : 'the page is not built (npm run build)');
const OUT = screenshotFolder('vmmkit-page-');

it.runIf(CI)('chromium is installed and the page built where CI runs', () => {
  expect(missing).toBeUndefined();
});

// Where the page is built (npm ci's prepare builds it; CI always has it).
it.skipIf(!existsSync(PAGE) && !CI)(
  'the package ships the built page (package.json files), as vmmkit open and vmmkit report read it',
  () => {
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        encoding: 'utf8',
        cwd: fileURLToPath(new URL('../../', import.meta.url)),
      }),
    ) as [{ files: { path: string }[] }];
    expect(packed.files.map((f) => f.path)).toContain('dist/web/index.html');
  },
);

interface Opened {
  readonly page: Page;
  readonly problems: string[];
  readonly requests: string[];
}

interface PageWindow {
  vmmkitReport: {
    drawn: number;
    error: string | null;
    engineMs: number | null;
    stateShown: number;
    advised: number;
    ranksAdvised: number;
  };
  __pwned?: unknown;
}

async function openPage(open: OpenBrowser, url: string): Promise<Opened> {
  const page = await open.browser.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(url);
  await page.waitForFunction(() => (globalThis as unknown as PageWindow).vmmkitReport !== undefined);
  return { page, problems, requests };
}

/** Wait until the page has drawn more than `before` times (or says what went wrong). */
async function drawnAfter(page: Page, before: number): Promise<void> {
  await page.waitForFunction(
    (n) => {
      const r = (globalThis as unknown as PageWindow).vmmkitReport;
      return r.drawn > n || r.error !== null;
    },
    before,
    { timeout: 120_000 },
  );
  const error = await page.evaluate(() => (globalThis as unknown as PageWindow).vmmkitReport.error);
  expect(error).toBeNull();
}

const drawn = (page: Page) => page.evaluate(() => (globalThis as unknown as PageWindow).vmmkitReport.drawn);

/** `vmmkit replay` on the command line: its text lines, and its --json. */
async function cliReplay(file: string, extra: string[] = []): Promise<{ lines: string[]; json: CliJson }> {
  const lines: string[] = [];
  const io = (into: string[]) => ({ out: (l: string) => into.push(l), err: () => {} });
  expect(await runCli(['replay', file, ...extra], io(lines))).toBe(0);
  const json: string[] = [];
  expect(await runCli(['replay', file, ...extra, '--json'], io(json))).toBe(0);
  return { lines, json: JSON.parse(json.join('\n')) as CliJson };
}

interface CliJson {
  trace: { recordedPeakReservedBytes: number | null };
  allocators: { name: string; peakReservedBytes: number; verdict: string }[];
}

/** What the page's answer shows. */
async function answerOf(page: Page, article = 0) {
  return page.evaluate((k) => {
    const root = document.querySelectorAll('article.snapshot')[k];
    const texts = (sel: string) => Array.from(root.querySelectorAll(sel)).map((e) => e.textContent ?? '');
    return {
      asRecorded: texts('section.answer .as-recorded'),
      cap: texts('section.answer .cap'),
      recordedBytes: root.querySelector('section.answer .recorded')?.getAttribute('data-bytes') ?? null,
      rows: Array.from(root.querySelectorAll('section.answer tr[data-allocator]')).map((tr) => ({
        name: tr.getAttribute('data-allocator'),
        bytes: Number(tr.querySelector('td.peak')?.getAttribute('data-bytes')),
        verdict: tr.querySelector('td.verdict')?.textContent ?? '',
      })),
      paste: root.querySelector('section.answer .recommend code.paste')?.textContent ?? null,
    };
  }, article);
}

/** The page's answer equals the CLI's on the same file and settings. */
function expectSameAnswer(
  shown: Awaited<ReturnType<typeof answerOf>>,
  cli: { lines: string[]; json: CliJson },
) {
  // The CLI's answer opens with the as-recorded lines and the cap's, as the page's does.
  const head = [...shown.asRecorded, ...shown.cap];
  expect(head.length).toBeGreaterThan(1);
  expect(cli.lines.slice(0, head.length)).toEqual(head);
  expect(shown.recordedBytes).toBe(String(cli.json.trace.recordedPeakReservedBytes));
  expect(shown.rows.map((r) => r.name)).toEqual(cli.json.allocators.map((a) => a.name));
  for (const [i, a] of cli.json.allocators.entries()) {
    expect(shown.rows[i].bytes, a.name).toBe(a.peakReservedBytes);
    expect(cli.lines, a.name).toContain(shown.rows[i].verdict);
  }
}

function expectPrivate(o: Opened, own: (url: string) => boolean) {
  expect(o.problems).toEqual([]);
  expect(o.requests.filter((u) => !own(u) && !u.startsWith('blob:'))).toEqual([]);
}

describe.skipIf(missing !== undefined)('the page in chromium, opened from its file', () => {
  let open: OpenBrowser;
  beforeAll(async () => {
    open = await launchChromium();
  });
  afterAll(async () => {
    await open?.close();
  });
  const fromFile = (u: string) => u === pathToFileURL(PAGE).href;

  it("answers a snapshot chosen with its file input, with the CLI's figures and words", async () => {
    const o = await openPage(open, pathToFileURL(PAGE).href);
    await o.page.setInputFiles('#file-input', PHASES);
    await drawnAfter(o.page, 0);
    const shown = await answerOf(o.page);
    expectSameAnswer(shown, await cliReplay(PHASES));
    // Note [The answer, then the advice]: advise's setting comes after the answer, the one `vmmkit advise` names.
    await o.page.waitForFunction(() => (globalThis as unknown as PageWindow).vmmkitReport.advised > 0, null, {
      timeout: 120_000,
    });
    const advised = await answerOf(o.page);
    expect({ ...advised, paste: null }).toEqual({ ...shown, paste: null });
    const json: string[] = [];
    expect(await runCli(['advise', PHASES, '--json'], { out: (l) => json.push(l), err: () => {} })).toBe(0);
    const cliAdvice = JSON.parse(json.join('\n')) as { recommended: { allocConf: string } | null };
    expect(advised.paste).toBe(`PYTORCH_CUDA_ALLOC_CONF=${cliAdvice.recommended?.allocConf}`);
    expect(await o.page.locator('.chart-memory .u-over').count()).toBe(1);
    expect(await o.page.locator('.peak-panel').count()).toBe(1);
    await o.page.screenshot({ path: join(OUT, 'page-answer.png') });

    // A click on the memory chart draws the chosen model's segments and blocks right after that event: as
    // many blocks as the trace has live there (the native model serves every request of this recording).
    await o.page.locator('.chart-memory').first().scrollIntoViewIfNeeded();
    const box = (await o.page.locator('.chart-memory .u-over').first().boundingBox())!;
    await o.page.mouse.click(box.x + box.width * 0.6, box.y + box.height / 2);
    await o.page.waitForFunction(
      () => (globalThis as unknown as PageWindow).vmmkitReport.stateShown > 0,
      null,
      {
        timeout: 60_000,
      },
    );
    const shownAt = await o.page.evaluate(() => ({
      event: Number(document.querySelector('.state-map')?.getAttribute('data-event')),
      blocks: document.querySelectorAll('.state-map g.block').length,
      allocator: document.querySelector('.state-map svg')?.getAttribute('data-allocator'),
    }));
    expect(shownAt.allocator).toBe('pytorch-native');
    const snapshot = readSnapshotFile(PHASES);
    const d = planReplay(snapshot).devices[0];
    let live = d.initialBlocks.length;
    for (let e = 0; e <= shownAt.event; e++) {
      if (d.blockOf[e] < 0) continue;
      if (d.trace.action[e] === Action.alloc) live++;
      else if (d.trace.action[e] === Action.free_completed) live--;
    }
    expect(shownAt.blocks).toBe(live);
    expectPrivate(o, fromFile);
    await o.page.close();
  }, 120_000);

  it('reads a file dropped on it once', async () => {
    const o = await openPage(open, pathToFileURL(PAGE).href);
    const bytes = readFileSync(PHASES).toString('base64');
    // A drop as the browser makes it: a DataTransfer holding the file, on the drop zone.
    await o.page.evaluate(
      ({ b64, name }) => {
        const data = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([data], name));
        const zone = document.getElementById('drop')!;
        zone.dispatchEvent(
          new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }),
        );
        zone.dispatchEvent(
          new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }),
        );
      },
      { b64: bytes, name: 'phases_streams-native.pickle.gz' },
    );
    // Read once: the drop zone's handler and the window's would each send it.
    expect(
      await o.page.evaluate(
        () => (globalThis as unknown as { vmmkitReport: { loads: number } }).vmmkitReport.loads,
      ),
    ).toBe(1);
    await drawnAfter(o.page, 0);
    expectSameAnswer(await answerOf(o.page), await cliReplay(PHASES));
    expectPrivate(o, fromFile);
    await o.page.close();
  }, 120_000);

  it("draws memory_viz's active memory timeline, with the stack of the block under the cursor", async () => {
    const o = await openPage(open, pathToFileURL(PAGE).href);
    await o.page.setInputFiles('#file-input', STACKS);
    await drawnAfter(o.page, 0);
    const canvas = o.page.locator('.timeline-canvas').first();
    await canvas.scrollIntoViewIfNeeded();
    // The largest band, halfway through its life, halfway up its height.
    const target = await o.page.evaluate(() => {
      const r = (globalThis as unknown as { vmmkitReport: { data: { devices: TimelineData[] } } })
        .vmmkitReport;
      const tl = r.data.devices[0].timeline;
      const band = [...tl.bands].sort((a, b) => b.size - a.size)[0];
      const end = band.freeEvent < 0 ? tl.events : band.freeEvent;
      const event = Math.floor((Math.max(0, band.allocEvent) + end) / 2);
      let offset = band.moves[1];
      for (let k = 0; k < band.moves.length && band.moves[k] <= event; k += 2) offset = band.moves[k + 1];
      const c = document.querySelector('.timeline-canvas') as HTMLCanvasElement;
      const g = (k: string) => Number(c.dataset[k]);
      return {
        block: band.block,
        allocEvent: band.allocEvent,
        x: g('left') + ((event + 1.5) / tl.events) * g('width'),
        y: g('top') + g('height') - ((offset + band.size / 2) / tl.maxBytes) * g('height'),
      };
    });
    const box = (await canvas.boundingBox())!;
    await o.page.mouse.move(box.x + target.x, box.y + target.y);
    const tip = o.page.locator('.timeline-tip').first();
    await expect.poll(() => tip.getAttribute('data-block')).toBe(String(target.block));
    // Its frames are the snapshot's own for the event that allocated it (Python frames, innermost first).
    const snapshot = readSnapshotFile(STACKS);
    const frames = [...snapshot.stacks![snapshot.traces[0].stack![target.allocEvent]]]
      .map((f) => snapshot.frames[f])
      .filter((f) => f.filename.endsWith('.py'));
    expect(frames.length).toBeGreaterThan(0);
    expect(await tip.locator('.stack').textContent()).toContain(
      `${frames[0].name} (${frames[0].filename}:${frames[0].line})`,
    );

    // The optimizer's steps: each starts at the first event at or after a torch.optim Optimizer.step# marker
    // (Note [Steps from the optimizer's frames]; the frames' rule, for snapshots without markers, is
    // test/report/recorder.test.ts's).
    const steps = await o.page.evaluate(
      () =>
        (
          globalThis as unknown as {
            vmmkitReport: { data: { devices: { steps: { event: number; x: number }[] }[] } };
          }
        ).vmmkitReport.data.devices[0].steps,
    );
    expect(steps.length).toBeGreaterThan(1);
    const t = snapshot.traces[0];
    const starts = (snapshot.annotations ?? [])
      .filter((a) => a.stage === 'START' && a.name.startsWith('Optimizer.step#'))
      .map((a) => {
        let e = 0;
        while (e < t.length && t.timeUs[e] < a.timeUs) e++;
        return e;
      });
    expect(steps.map((s) => s.event)).toEqual(starts);
    // The stretch before the first step (most of this recording) is drawn in a tenth of the width.
    const at = await o.page.evaluate((x) => {
      const r = (globalThis as unknown as ReportWindowCharts).vmmkitReport;
      const u = r.charts[0].chart;
      return u.valToPos(x, 'x') / u.over.getBoundingClientRect().width;
    }, steps[0].x);
    expect(at).toBeCloseTo(0.1, 2);
    expectPrivate(o, fromFile);
    await o.page.close();
  }, 120_000);

  it("answers again as settings are typed: PyTorch's message for a bad string, the CLI's verdicts for a good one", async () => {
    const o = await openPage(open, pathToFileURL(PAGE).href);
    await o.page.setInputFiles('#file-input', PHASES);
    await drawnAfter(o.page, 0);
    const before = await answerOf(o.page);
    expect(before.rows.every((r) => /fits/.test(r.verdict))).toBe(true);

    const bad = 'expandable_segments:Ture';
    let pytorchSays = '';
    try {
      parseAllocConf(bad);
    } catch (e) {
      if (e instanceof AllocConfError) pytorchSays = e.message;
    }
    expect(pytorchSays).not.toBe('');
    await o.page.fill('#alloc-conf', bad);
    await expect
      .poll(() => o.page.locator('#alloc-conf-error').textContent(), { timeout: 60_000 })
      .toBe(pytorchSays);

    const n = await drawn(o.page);
    await o.page.fill('#alloc-conf', 'expandable_segments:True');
    await o.page.fill('#memory-limit', '2GiB');
    await expect.poll(() => o.page.locator('#alloc-conf-error').textContent(), { timeout: 60_000 }).toBe('');
    await drawnAfter(o.page, n);
    // The last settings answered are the ones typed last.
    await expect
      .poll(async () => (await answerOf(o.page)).cap.join(' '), { timeout: 60_000 })
      .toContain('memory limit: 2.00 GiB per device (given)');
    const after = await answerOf(o.page);
    expectSameAnswer(
      after,
      await cliReplay(PHASES, ['--alloc-conf', 'expandable_segments:True', '--memory-limit', '2GiB']),
    );
    // The verdicts changed as the user typed: each is now against the limit, and a `pytorch` row answers the string.
    expect(after.rows.map((r) => r.verdict)).not.toEqual(before.rows.map((r) => r.verdict));
    expect(after.rows.every((r) => / of 2\.00 GiB|runs out of memory/.test(r.verdict))).toBe(true);
    expect(after.rows[0].name).toBe('pytorch');
    await o.page.screenshot({ path: join(OUT, 'page-settings.png') });
    expectPrivate(o, fromFile);
    await o.page.close();
  }, 180_000);

  it('compares two snapshots dropped together, and sets three side by side as ranks', async () => {
    const o = await openPage(open, pathToFileURL(PAGE).href);
    await o.page.setInputFiles('#file-input', [PHASES, PHASES_EXPANDABLE]);
    await drawnAfter(o.page, 0);
    expect(await o.page.locator('#compare-panel').isVisible()).toBe(true);
    expect(await o.page.locator('#compare-panel').textContent()).toContain(
      'phases_streams-expandable.pickle.gz',
    );
    expect(await o.page.locator('article.snapshot').count()).toBe(2);
    expect(await o.page.locator('#ranks-panel').isVisible()).toBe(false);
    await o.page.screenshot({ path: join(OUT, 'page-compare.png') });

    const n = await drawn(o.page);
    await o.page.setInputFiles('#file-input', [PHASES, PHASES_EXPANDABLE, MOE]);
    await drawnAfter(o.page, n);
    expect(await o.page.locator('#ranks-panel').isVisible()).toBe(true);
    expect(await o.page.locator('#compare-panel').isVisible()).toBe(false);
    expect(await o.page.locator('article.snapshot').count()).toBe(3);
    expect(await o.page.locator('#ranks-panel').textContent()).toContain('moe_train-native.pickle.gz');
    // The one setting for every rank comes after the ranks are drawn: the one `vmmkit advise` names for the three.
    await o.page.waitForFunction(
      () => (globalThis as unknown as PageWindow).vmmkitReport.ranksAdvised > 0,
      null,
      {
        timeout: 120_000,
      },
    );
    const json: string[] = [];
    const io = { out: (l: string) => json.push(l), err: () => {} };
    expect(await runCli(['advise', PHASES, PHASES_EXPANDABLE, MOE, '--json'], io)).toBe(0);
    const cliAdvice = JSON.parse(json.join('\n')) as { recommended: { allocConf: string } | null };
    expect(await o.page.locator('#ranks-panel .ranks-advice code').textContent()).toBe(
      `PYTORCH_CUDA_ALLOC_CONF=${cliAdvice.recommended?.allocConf}`,
    );
    await o.page.screenshot({ path: join(OUT, 'page-ranks.png') });
    expectPrivate(o, fromFile);
    await o.page.close();
  }, 240_000);

  it('shows stack strings that carry HTML and script as text, and runs none of it', async () => {
    // The MoE trace under 3.2 GiB runs out, and the answer lists the stacks that pin the free pieces; its
    // events are given frames whose strings are markup (the recording has none of its own).
    const value = readPickle(readFileSync(MOE));
    const IMG = '<img src=x onerror="globalThis.__pwned=1">';
    const SCRIPT = '<script>globalThis.__pwned=2</script>';
    let entries = 0;
    const walk = (v: PickleValue): void => {
      if (Array.isArray(v)) for (const x of v) walk(x);
      else if (isPickleDict(v)) {
        if (typeof v.action === 'string' && 'addr' in v) {
          v.frames = [{ filename: `${SCRIPT}train.py`, line: entries % 97, name: `${IMG}forward` }];
          entries++;
        } else for (const x of Object.values(v)) walk(x);
      }
    };
    walk(value);
    expect(entries).toBeGreaterThan(0);
    const hostile = join(OUT, 'hostile.pickle.gz');
    writeFileSync(hostile, gzipSync(pickle(value)));

    const o = await openPage(open, pathToFileURL(PAGE).href);
    await o.page.setInputFiles('#file-input', hostile);
    await drawnAfter(o.page, 0);
    const n = await drawn(o.page);
    await o.page.fill('#memory-limit', String(Math.floor(3.2 * 1024 ** 3)));
    await drawnAfter(o.page, n);
    await expect.poll(() => o.page.locator('.oom-map').count(), { timeout: 60_000 }).toBeGreaterThan(0);
    const stacks = await o.page.locator('.oom-map .stack').allTextContents();
    expect(stacks.length).toBeGreaterThan(0);
    expect(stacks.join('\n')).toContain(IMG);
    expect(stacks.join('\n')).toContain(SCRIPT);
    // Nothing of it became markup, and nothing ran.
    expect(await o.page.locator('article.snapshot img').count()).toBe(0);
    expect(await o.page.locator('article.snapshot script').count()).toBe(0);
    // The state at a point shows each block's stack on hover: as text in the SVG's title.
    await o.page.locator('.chart-memory').first().scrollIntoViewIfNeeded();
    const box = (await o.page.locator('.chart-memory .u-over').first().boundingBox())!;
    await o.page.mouse.click(box.x + box.width * 0.5, box.y + box.height / 2);
    await o.page.waitForFunction(
      () => (globalThis as unknown as PageWindow).vmmkitReport.stateShown > 0,
      null,
      {
        timeout: 60_000,
      },
    );
    const titles = await o.page.locator('.state-map g.block title').allTextContents();
    expect(titles.length).toBeGreaterThan(0);
    expect(titles.join('\n')).toContain(`${IMG}forward (${SCRIPT}train.py:`);
    expect(await o.page.locator('.state-map img, .state-map script').count()).toBe(0);
    expect(await o.page.evaluate(() => (globalThis as unknown as PageWindow).__pwned)).toBeUndefined();
    expectPrivate(o, fromFile);
    await o.page.close();
  }, 240_000);
});

describe.skipIf(missing !== undefined)('the page served by vmmkit open, in chromium', () => {
  let open: OpenBrowser;
  afterAll(async () => {
    await open?.close();
  });

  it('reads the file named on the command line from the loopback server and answers it', async () => {
    const server = await startOpenServer(offeredFiles([PHASES]));
    try {
      open = await launchChromium();
      const o = await openPage(open, server.url);
      await drawnAfter(o.page, 0);
      expectSameAnswer(await answerOf(o.page), await cliReplay(PHASES));
      expectPrivate(o, (u) => u.startsWith(server.url));
      expect(o.requests).toContain(`${server.url}snapshot/0`);
    } finally {
      await server.close();
    }
  }, 120_000);

  it('reads a file served with --vendor as made there, as the CLI does with the same --vendor', async () => {
    const server = await startOpenServer(offeredFiles([PHASES]), { vendor: 'npu' });
    try {
      open = await launchChromium();
      const o = await openPage(open, server.url);
      await drawnAfter(o.page, 0);
      const shown = await answerOf(o.page);
      expect(shown.asRecorded.join('\n')).toMatch(/made on: torch_npu/);
      expectSameAnswer(shown, await cliReplay(PHASES, ['--vendor', 'npu']));
    } finally {
      await server.close();
    }
  }, 120_000);
});
