/// <reference lib="dom" />
/**
 * The page: vmmkit's snapshot product in the browser (docs/web.md).
 *
 * Note [One page]: one page serves three ways. Opened alone (dist/web/
 * index.html, or dropped files), it reads snapshots dropped on it or chosen
 * with its file input; served by `vmmkit open`, it also reads the files
 * named on that command line, listed in #vmmkit-files and fetched from the
 * loopback server; written by `vmmkit report`, it holds the answer in
 * #vmmkit-data and draws it without a worker. The same renderers draw all
 * three. Parsing, replay, what-ifs and advise run in the engine worker
 * (engine/engine-worker.ts); the page's Content-Security-Policy lets it
 * connect to nothing but its own origin, so nothing leaves the machine.
 */
import type { RankSummary } from '../replay/analyse/ranks.js';
import type { ReportData } from '../report/report-data.js';
import EngineWorker from './engine/engine-worker.ts?worker&inline';
import type {
  Answers,
  FromWorker,
  PageSettings,
  ServedFile,
  SnapshotPage,
  StateAt,
  ToWorker,
} from './protocol.js';
import { renderAnswer } from './views/answer.js';
import { drawDeviceCharts, fmtBytes, type PageChart } from './views/charts.js';
import { renderCompare } from './views/compare.js';
import { el, svgOf } from './views/dom.js';
import { renderPeak } from './views/peak.js';
import { renderRanks } from './views/ranks.js';
import { renderTimeline } from './views/timeline.js';

/** What the page exposes for tests and scripts: the data drawn, its charts, and the last timing. */
interface PageState {
  data: ReportData | undefined;
  pages: readonly SnapshotPage[];
  charts: PageChart[];
  formatBytes: (n: number) => string;
  /** Milliseconds the engine took for the last load or settings answer. */
  engineMs: number | null;
  /** Increments each time the page draws new data. */
  drawn: number;
  /** The last refusal or failure shown, if any. */
  error: string | null;
  /** Increments each time an allocator state at a chosen point is drawn. */
  stateShown: number;
  /** Files sent to the engine to read, as many times as they were sent. */
  loads: number;
  /** Increments each time advise's setting is added to an answer drawn (Note [The answer, then the advice]). */
  advised: number;
  /** Increments each time the one setting for every rank is added to the ranks drawn. */
  ranksAdvised: number;
}

/** Where an answer names no setting yet: the worker is searching, or a report was written without one. */
const SEARCHING = "Advice: searching PyTorch's settings for the one to paste...";
const RANKS_SEARCHING = "One setting for every rank: searching PyTorch's settings...";
const NOT_SEARCHED =
  'Advice: not searched for this report. `vmmkit advise SNAPSHOT` finds the setting to paste, and `vmmkit report --advise` names it here; or drop the snapshot on this page.';

function jsonOf<T>(id: string): T | undefined {
  const node = document.getElementById(id);
  return node === null ? undefined : (JSON.parse(node.textContent ?? 'null') as T);
}

function start(): void {
  const state: PageState = {
    data: undefined,
    pages: [],
    charts: [],
    formatBytes: fmtBytes,
    engineMs: null,
    drawn: 0,
    error: null,
    stateShown: 0,
    loads: 0,
    advised: 0,
    ranksAdvised: 0,
  };
  (globalThis as unknown as { vmmkitReport: PageState }).vmmkitReport = state;
  const pagesRoot = document.getElementById('pages')!;
  const status = document.getElementById('status')!;
  const settingsForm = document.getElementById('settings') as HTMLFormElement;
  const input = document.getElementById('file-input') as HTMLInputElement;
  const drop = document.getElementById('drop')!;
  let worker: Worker | undefined;
  let settingsId = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** The id of the answer drawn (its load's or settings' id), whose advice may still come. */
  let answerId = -1;
  /** The ranks drawn, whose one setting for every rank may still come. */
  let shownRanks: RankSummary | null = null;

  const draw = ({ pages, compare, ranks }: Answers, pendingAdvice: string) => {
    for (const c of state.charts) c.chart.destroy();
    state.charts = [];
    pagesRoot.replaceChildren();
    state.pages = pages;
    state.data = pages[0]?.data;
    for (const [k, p] of pages.entries()) {
      const section = el('article', { class: 'snapshot', 'data-name': p.name, 'data-index': k });
      pagesRoot.append(section);
      state.charts.push(
        ...renderSnapshot(section, p, pages.length > 1, pendingAdvice, (device, allocator, event) =>
          ask(k, device, allocator, event),
        ),
      );
    }
    const comparePanel = document.getElementById('compare-panel')!;
    comparePanel.replaceChildren();
    comparePanel.hidden = compare === null;
    if (compare !== null) renderCompare(comparePanel, compare, [pages[0].name, pages[1].name]);
    const ranksPanel = document.getElementById('ranks-panel')!;
    ranksPanel.replaceChildren();
    ranksPanel.hidden = ranks === null;
    shownRanks = ranks;
    if (ranks !== null) renderRanks(ranksPanel, ranks, RANKS_SEARCHING);
    if (pages.length === 1) document.title = `vmmkit: ${pages[0].data.title}`;
    state.drawn++;
  };

  const onMessage = (m: FromWorker) => {
    if (m.kind === 'progress') {
      const what = m.phase === 'reading' ? 'reading' : m.phase === 'replaying' ? 'replaying' : 'advising';
      status.textContent = `${what} ${m.file}: ${(m.fraction * 100).toFixed(0)}%`;
      return;
    }
    if (m.kind === 'failed') {
      state.error = m.message;
      status.textContent = m.file === null ? m.message : `${m.file}: ${m.message}`;
      status.classList.add('error');
      return;
    }
    if (m.kind === 'refused') {
      if (m.id !== settingsId) return;
      state.error = m.message;
      showFieldError(m.field, m.message);
      status.textContent = '';
      return;
    }
    if (m.kind === 'state') {
      showState(m);
      return;
    }
    if (m.kind === 'advised') {
      showAdvice(m);
      return;
    }
    if (m.kind === 'ranks-advised') {
      showRanksAdvice(m);
      return;
    }
    if (m.kind === 'answered' && m.id !== settingsId) return;
    // A load's refusal of the settings came just before it, and stands.
    if (m.kind === 'answered') clearFieldErrors();
    state.error = null;
    state.engineMs = m.ms;
    status.classList.remove('error');
    status.textContent = `answered in ${(m.ms / 1000).toFixed(2)} s, in this page`;
    settingsForm.hidden = false;
    answerId = m.id;
    draw(m, SEARCHING);
  };

  /** advise's one setting for every rank, into the ranks drawn for the same load or settings. */
  const showRanksAdvice = (m: Extract<FromWorker, { kind: 'ranks-advised' }>) => {
    if (m.id !== answerId || shownRanks === null) return;
    shownRanks = { ...shownRanks, advice: m.advice };
    renderRanks(document.getElementById('ranks-panel')!, shownRanks);
    state.ranksAdvised++;
  };

  /** advise's setting, into the answer drawn for the same load or settings. */
  const showAdvice = (m: Extract<FromWorker, { kind: 'advised' }>) => {
    const page = state.pages[m.page];
    if (m.id !== answerId || page === undefined) return;
    const data = { ...page.data, answer: { ...page.data.answer, advice: m.advice } };
    state.pages = state.pages.map((p, k) => (k === m.page ? { ...p, data } : p));
    state.data = state.pages[0]?.data;
    const old = pagesRoot.querySelector(`article.snapshot[data-index="${m.page}"] > section.answer`);
    old?.replaceWith(renderAnswer(data.answer));
    state.advised++;
  };

  const engine = (): Worker => {
    if (worker === undefined) {
      worker = new EngineWorker();
      worker.onmessage = (e: MessageEvent<FromWorker>) => onMessage(e.data);
      worker.onerror = (e) => {
        state.error = e.message;
        status.textContent = `the engine stopped: ${e.message}`;
        status.classList.add('error');
      };
    }
    return worker;
  };

  let stateId = 0;
  /** Ask the engine for a model's state at an event (only a snapshot the engine holds: not an embedded report's). */
  const ask = (snapshot: number, device: number, allocator: string, event: number) => {
    const target = stateBox(snapshot, device);
    if (worker === undefined || target === null) {
      if (target !== null)
        target.replaceChildren(
          el('p', { class: 'hint' }, 'Drop the snapshot on this page to see its state at a point.'),
        );
      return;
    }
    stateId++;
    target.replaceChildren(
      el('p', { class: 'hint' }, `replaying ${allocator} to event ${event.toLocaleString('en-US')}...`),
    );
    worker.postMessage({ kind: 'state', id: stateId, snapshot, device, allocator, event } satisfies ToWorker);
  };
  const showState = (m: StateAt & { id: number }) => {
    if (m.id !== stateId) return;
    const target = stateBox(m.snapshot, m.device);
    if (target === null) return;
    target.replaceChildren(
      el(
        'h3',
        {},
        `${m.allocator} right after event ${m.event.toLocaleString('en-US')}: ${fmtBytes(m.reservedBytes)} reserved, ${fmtBytes(m.allocatedBytes)} allocated`,
      ),
      el('div', { class: 'map state-map', 'data-event': m.event }, svgOf(m.svg)),
    );
    state.stateShown++;
  };

  const load = (files: readonly (File | ServedFile)[]) => {
    if (files.length === 0) return;
    state.loads++;
    status.classList.remove('error');
    status.textContent = `reading ${files.map((f) => f.name).join(', ')}`;
    // Answered under what the settings box holds now.
    engine().postMessage({
      kind: 'load',
      files,
      id: settingsId,
      settings: typedSettings(),
    } satisfies ToWorker);
  };

  input.addEventListener('change', () => load(Array.from(input.files ?? [])));
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    // The window's handler below would read the same files again.
    e.stopPropagation();
    drop.classList.remove('over');
    load(Array.from(e.dataTransfer?.files ?? []));
  });
  // Dropped anywhere else, a file would replace the page: it is read as if dropped on the drop zone.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    load(Array.from(e.dataTransfer?.files ?? []));
  });

  settingsForm.addEventListener('submit', (e) => e.preventDefault());
  settingsForm.addEventListener('input', () => {
    // Answered as the user types: the newest settings a quarter second after the last key.
    clearTimeout(timer);
    timer = setTimeout(() => {
      settingsId++;
      const settings = typedSettings();
      status.textContent = 'answering under these settings...';
      engine().postMessage({ kind: 'settings', id: settingsId, settings } satisfies ToWorker);
    }, 250);
  });

  const embedded = jsonOf<ReportData>('vmmkit-data');
  if (embedded !== undefined) {
    draw({ pages: [{ name: embedded.title, data: embedded }], compare: null, ranks: null }, NOT_SEARCHED);
    status.textContent = 'Drop the snapshot here to try other settings in this page.';
  }
  const served = jsonOf<ServedFile[]>('vmmkit-files');
  // Absolute URLs: the worker runs from a blob URL, against which a relative one means nothing.
  if (served !== undefined && served.length > 0)
    load(served.map((f) => ({ ...f, url: new URL(f.url, location.href).href })));
}

/** The settings box as typed. */
function typedSettings(): PageSettings {
  const value = (id: string) => (document.getElementById(id) as HTMLInputElement).value;
  return { allocConf: value('alloc-conf'), memoryLimit: value('memory-limit'), device: value('device') };
}

function showFieldError(field: keyof PageSettings, message: string): void {
  clearFieldErrors();
  const id = field === 'allocConf' ? 'alloc-conf' : field === 'memoryLimit' ? 'memory-limit' : 'device';
  document.getElementById(`${id}-error`)!.textContent = message;
  document.getElementById(id)!.setAttribute('aria-invalid', 'true');
}

function clearFieldErrors(): void {
  for (const id of ['alloc-conf', 'memory-limit', 'device']) {
    document.getElementById(`${id}-error`)!.textContent = '';
    document.getElementById(id)!.removeAttribute('aria-invalid');
  }
}

/** The box under a device's charts where the state at a chosen point is drawn. */
function stateBox(snapshot: number, device: number): HTMLElement | null {
  return document.querySelector<HTMLElement>(
    `article.snapshot[data-index="${snapshot}"] section.device[data-device="${device}"] .state-at`,
  );
}

type AskState = (device: number, allocator: string, event: number) => void;

/** One snapshot's answer, summary, charts per device and the address space at each peak. */
function renderSnapshot(
  root: HTMLElement,
  page: SnapshotPage,
  named: boolean,
  pendingAdvice: string,
  askState: AskState,
): PageChart[] {
  const data = page.data;
  if (named) root.append(el('h2', { class: 'snapshot-name' }, page.name));
  root.append(renderAnswer(data.answer, pendingAdvice));
  if (data.peak !== null && data.peak !== undefined) {
    const panel = el('section', { class: 'panel peak-panel' });
    renderPeak(panel, data.peak);
    root.append(panel);
  }
  const t = data.trace;
  root.append(
    el(
      'p',
      { class: 'meta' },
      `${t.events.toLocaleString('en-US')} events, ${t.allocs.toLocaleString('en-US')} allocations over ${(t.durationUs / 1e6).toFixed(1)} s; peak requested ${fmtBytes(t.peakRequestedBytes)}${t.startedMidRun ? '; the trace started mid-run (blocks live before it were allocated first)' : ''}. Driver time: ${data.costs === null ? 'not estimated (no cost table)' : `estimated from ${data.costs}`}.`,
    ),
  );
  const rows = el('tbody');
  for (const a of data.allocators) {
    rows.append(
      el(
        'tr',
        { 'data-allocator': a.name },
        el(
          'td',
          {},
          el('span', { class: 'swatch', style: `background:${a.color}` }),
          a.name,
          a.error === null ? '' : ' (failed)',
        ),
        el('td', {}, fmtBytes(t.peakRequestedBytes)),
        el(
          'td',
          { class: 'peak-reserved', 'data-bytes': a.peakReservedBytes },
          fmtBytes(a.peakReservedBytes),
        ),
        el('td', {}, a.ratio === null ? '-' : a.ratio.toFixed(3)),
        el('td', {}, fmtBytes(a.peakAllocatedBytes)),
        el('td', {}, a.utilization === null ? '-' : a.utilization.toFixed(3)),
        el('td', {}, a.driverCalls.toLocaleString('en-US')),
        el('td', {}, a.driverTimeUs === null ? '-' : micros(a.driverTimeUs)),
        el('td', {}, String(a.ooms)),
      ),
    );
  }
  const head = [
    'allocator',
    'peak requested',
    'peak reserved',
    'reserved / requested',
    'peak allocated',
    'utilization',
    'driver calls',
    'driver time',
    'OOMs',
  ];
  root.append(
    el(
      'table',
      { class: 'summary' },
      el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h)))),
      rows,
    ),
  );
  const charts: PageChart[] = [];
  for (const d of data.devices) {
    const pick = el('select', { class: 'state-allocator' });
    for (const a of data.allocators) pick.append(el('option', { value: a.name }, a.name));
    const section = el(
      'section',
      { class: 'device', id: `device-${d.device}`, 'data-device': d.device },
      el('h2', {}, `Device ${d.device}: ${d.events.toLocaleString('en-US')} events`),
      el(
        'p',
        { class: 'hint' },
        `Drag across a chart to zoom into a time range, use the wheel to zoom around the cursor, double-click to zoom out. The three charts share one time axis. Each point pair is the least and greatest value of ${d.bucketWidth.toLocaleString('en-US')} event${d.bucketWidth > 1 ? 's' : ''}, so no peak is lost.`,
      ),
      el('div', { class: 'chart chart-memory' }),
      el(
        'p',
        { class: 'hint state-hint' },
        'Click on the memory chart for the segments and blocks of ',
        pick,
        ' right after that moment (hover over a block for the stack that allocated it).',
      ),
      el('div', { class: 'state-at' }),
      el('div', { class: 'chart chart-unusable' }),
      el('div', { class: 'chart chart-calls' }),
      d.timeline === undefined ? null : renderTimeline(d.timeline, d.steps ?? []),
      el('h3', {}, "Address space at each allocator's peak of reserved bytes"),
      el(
        'p',
        { class: 'hint' },
        'Reservations end to end in address order, wrapped into rows (a black tick starts each). Long unmapped runs are drawn shortened; hover for sizes.',
      ),
    );
    if (d.maps.length === 0)
      section.append(el('p', { class: 'hint' }, 'No map: the run failed before its peak.'));
    for (const m of d.maps) {
      section.append(
        el('div', { class: 'map', 'data-allocator': data.allocators[m.allocator].name }, svgOf(m.svg)),
      );
    }
    root.append(section);
    const drawnCharts = drawDeviceCharts(data, d, section);
    charts.push(...drawnCharts);
    const memory = drawnCharts.find((c) => c.kind === 'memory')?.chart;
    let down: { x: number; y: number } | undefined;
    // A click (not a drag, which zooms) chooses the point: the bucket under the cursor, its first event.
    memory?.over.addEventListener('mousedown', (e) => {
      down = { x: e.clientX, y: e.clientY };
    });
    memory?.over.addEventListener('mouseup', (e) => {
      const moved = down === undefined || Math.abs(e.clientX - down.x) + Math.abs(e.clientY - down.y) > 3;
      down = undefined;
      const idx = memory.cursor.idx;
      if (moved || idx === null || idx === undefined) return;
      const bucket = idx >> 1;
      const event =
        idx % 2 === 0 ? bucket * d.bucketWidth : Math.min(d.events - 1, (bucket + 1) * d.bucketWidth - 1);
      askState(d.device, pick.value, event);
    });
  }
  return charts;
}

function micros(us: number): string {
  return us >= 1e6 ? `${(us / 1e6).toFixed(2)} s` : `${(us / 1000).toFixed(1)} ms`;
}

start();
