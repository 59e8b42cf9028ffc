/**
 * Per device, three uPlot charts on one time axis (the trace's time_us, or
 * its events when it has no times): memory (requested, each allocator's
 * reserved and allocated), the reserved bytes a request could not use (Note
 * [Reserved but unusable]), and driver
 * calls. They share cursor and zoom: drag to zoom into a time range, the
 * wheel to zoom around the cursor, a double click to zoom out. The tooltip
 * shows each series' greatest value among the points drawn within a pixel
 * of the cursor (and its least, where they differ), so hovering over a
 * peak reads it exactly (Note [Min-max buckets]).
 */
import uPlot from 'uplot';
import type { ReportData, ReportDevice } from '../../report/report-data.js';
import { formatBytes as fmtBytes } from '../../util/format.js';

const GiB = 1073741824;
const MiB = 1048576;

/** Bytes as the command line writes them (one formatter for the page and the terminal). */
export { formatBytes as fmtBytes } from '../../util/format.js';

function fmtX(dev: ReportDevice, v: number): string {
  return dev.xUnit === 'seconds' ? `${v.toFixed(3)} s` : `event ${Math.round(v).toLocaleString('en-US')}`;
}

export interface PageChart {
  readonly kind: 'memory' | 'unusable' | 'calls';
  readonly device: number;
  readonly chart: uPlot;
}

const NICE: number[] = [];
for (let p = -3; p <= 6; p++) for (const m of [1, 2, 2.5, 5]) NICE.push(m * 10 ** p);

export function chartWidth(): number {
  return Math.max(480, Math.min(1400, document.documentElement.clientWidth - 48));
}

type Format = (v: number) => string;

function tooltipPlugin(dev: ReportDevice, kind: PageChart['kind'], format: Format): uPlot.Plugin {
  let tip: HTMLDivElement;
  return {
    hooks: {
      init: (u) => {
        tip = document.createElement('div');
        tip.className = 'tooltip';
        tip.dataset.chart = kind;
        tip.style.display = 'none';
        u.over.appendChild(tip);
      },
      setCursor: (u) => {
        const idx = u.cursor.idx;
        if (idx === null || idx === undefined || (u.cursor.left ?? -1) < 0) {
          tip.style.display = 'none';
          return;
        }
        const left = u.cursor.left ?? 0;
        // Every point drawn within a pixel of the cursor counts (a pixel may hold many buckets, and events
        // may share a time), and both points of each bucket: what is under the cursor is what it reads.
        const xs = u.data[0] as number[];
        let lo = idx;
        let hi = idx;
        const xl = Math.min(xs[idx], u.posToVal(left - 1, 'x'));
        const xr = Math.max(xs[idx], u.posToVal(left + 1, 'x'));
        while (lo > 0 && xs[lo - 1] >= xl) lo--;
        while (hi < xs.length - 1 && xs[hi + 1] <= xr) hi++;
        lo &= ~1;
        hi |= 1;
        const first = (lo >> 1) * dev.bucketWidth;
        const last = Math.min(dev.events - 1, ((hi >> 1) + 1) * dev.bucketWidth - 1);
        tip.replaceChildren();
        const head = document.createElement('div');
        head.className = 'tip-x';
        const events = document.createElement('span');
        events.className = 'tip-events';
        events.textContent = ` (event${last > first ? `s ${first.toLocaleString('en-US')}\u2013${last.toLocaleString('en-US')}` : ` ${first.toLocaleString('en-US')}`})`;
        head.append(fmtX(dev, xs[idx]), events);
        tip.append(head);
        for (let s = 1; s < u.series.length; s++) {
          const series = u.series[s];
          if (!series.show) continue;
          const ys = u.data[s] as number[];
          let top = Number.NEGATIVE_INFINITY;
          let bottom = Number.POSITIVE_INFINITY;
          for (let k = lo; k <= hi; k++) {
            if (ys[k] > top) top = ys[k];
            if (ys[k] < bottom) bottom = ys[k];
          }
          // Calls are counts per bucket: the buckets at this time add up.
          if (kind === 'calls') {
            top = 0;
            for (let k = lo; k <= hi; k += 2) top += ys[k];
          }
          const label = String(series.label);
          const row = document.createElement('div');
          row.className = 'tip-row';
          row.dataset.series = label;
          row.dataset.value = String(top);
          const swatch = document.createElement('span');
          swatch.className = 'swatch';
          swatch.style.background = String((series as { _stroke?: unknown })._stroke ?? series.stroke);
          const value = document.createElement('b');
          value.textContent = format(top);
          row.append(swatch, `${label}: `, value);
          if (bottom !== top && kind !== 'calls') {
            const low = document.createElement('span');
            low.className = 'tip-lo';
            low.textContent = ` (low ${format(bottom)})`;
            row.append(low);
          }
          tip.append(row);
        }
        tip.style.display = 'block';
        let x = left + 14;
        const y = Math.max(0, (u.cursor.top ?? 0) - 10);
        if (x + tip.offsetWidth > u.over.clientWidth) x = left - tip.offsetWidth - 14;
        tip.style.left = `${x}px`;
        tip.style.top = `${y}px`;
      },
    },
  };
}

function wheelZoomPlugin(): uPlot.Plugin {
  return {
    hooks: {
      ready: (u) => {
        u.over.addEventListener(
          'wheel',
          (e) => {
            e.preventDefault();
            const xs = u.data[0] as number[];
            const lo0 = xs[0];
            const hi0 = xs[xs.length - 1];
            const min = u.scales.x.min ?? lo0;
            const max = u.scales.x.max ?? hi0;
            const at = u.posToVal(e.offsetX, 'x');
            const f = e.deltaY < 0 ? 0.75 : 1 / 0.75;
            const nmin = Math.max(lo0, at - (at - min) * f);
            const nmax = Math.min(hi0, at + (max - at) * f);
            if (nmax - nmin <= 0) return;
            u.setScale('x', { min: nmin, max: nmax });
          },
          { passive: false },
        );
      },
    },
  };
}

function peakPlugin(data: ReportData, dev: ReportDevice): uPlot.Plugin {
  return {
    hooks: {
      draw: (u) => {
        const ctx = u.ctx;
        const dpr = devicePixelRatio;
        ctx.save();
        ctx.font = `${Math.round(11 * dpr)}px system-ui, sans-serif`;
        // Labels never overlap: each moves up until it clears the ones placed before it.
        const placed: { x: number; y: number; w: number }[] = [];
        const lh = 13 * dpr;
        for (const s of dev.series) {
          const a = data.allocators[s.allocator];
          const x = u.valToPos(s.peakX, 'x', true);
          const y = u.valToPos(s.peakReservedBytes, 'y', true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.fillStyle = a.color;
          ctx.beginPath();
          ctx.arc(x, y, 4 * dpr, 0, 2 * Math.PI);
          ctx.fill();
          const label = `peak ${fmtBytes(s.peakReservedBytes)}`;
          const w = ctx.measureText(label).width;
          let lx = x + 6 * dpr;
          if (lx + w > u.bbox.left + u.bbox.width) lx = x - w - 6 * dpr;
          let ly = y - 6 * dpr;
          for (let moved = true; moved; ) {
            moved = false;
            for (const p of placed) {
              if (lx < p.x + p.w && p.x < lx + w && ly > p.y - lh && ly - lh < p.y) {
                ly = p.y - lh;
                moved = true;
              }
            }
          }
          placed.push({ x: lx, y: ly, w });
          ctx.fillText(label, lx, ly);
        }
        ctx.restore();
      },
    },
  };
}

/** A dashed line and a label at each optimizer step's start (Note [Steps from the optimizer's frames]). */
function stepsPlugin(steps: readonly { event: number; x: number }[]): uPlot.Plugin {
  return {
    hooks: {
      draw: (u) => {
        if (steps.length === 0) return;
        const ctx = u.ctx;
        const dpr = devicePixelRatio;
        ctx.save();
        ctx.strokeStyle = 'rgba(80,80,80,0.5)';
        ctx.fillStyle = '#555';
        ctx.setLineDash([3 * dpr, 3 * dpr]);
        ctx.font = `${Math.round(10 * dpr)}px system-ui, sans-serif`;
        let lastLabel = Number.NEGATIVE_INFINITY;
        steps.forEach((s, k) => {
          const x = u.valToPos(s.x, 'x', true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          // Labels only where they do not run into the one before.
          if (x - lastLabel > 48 * dpr) {
            ctx.fillText(`step ${k + 1}`, x + 2 * dpr, u.bbox.top + 10 * dpr);
            lastLabel = x;
          }
        });
        ctx.restore();
      },
    },
  };
}

/**
 * The x scale: linear, or, where the optimizer's steps are known and the stretch before the first
 * takes more than a fifth of the trace (loading, warm-up), with that stretch drawn in a tenth of the
 * width, so the steps are not squeezed into the end.
 */
function stepScale(dev: ReportDevice): Partial<uPlot.Scale> {
  const steps = dev.steps ?? [];
  const t0 = dev.x[0];
  const t = dev.x[dev.x.length - 1];
  if (steps.length === 0 || !(t > t0)) return {};
  const t1 = steps[0].x;
  if (t1 - t0 <= 0.2 * (t - t0)) return {};
  const c = (0.1 * (t - t1)) / (0.9 * (t1 - t0));
  return {
    distr: 100,
    fwd: (v) => (v < t1 ? t0 + (v - t0) * c : t0 + (t1 - t0) * c + (v - t1)),
    bwd: (v) => {
      const knee = t0 + (t1 - t0) * c;
      return v < knee ? t0 + (v - t0) / c : t1 + (v - knee);
    },
  };
}

/** Ticks of a compressed axis in view: its left end, the first step where in view, and six after it. */
function compressedSplits(u: uPlot, firstStep: number): number[] {
  const min = u.scales.x.min ?? 0;
  const max = u.scales.x.max ?? 0;
  const from = Math.max(min, firstStep);
  const out = min < firstStep ? [min] : [];
  for (let k = 0; k <= 6; k++) out.push(from + ((max - from) * k) / 6);
  return out;
}

function syncZoom(group: uPlot[]): (u: uPlot, key: string) => void {
  let busy = false;
  return (u, key) => {
    if (key !== 'x' || busy) return;
    busy = true;
    for (const o of group) {
      if (o !== u && (o.scales.x.min !== u.scales.x.min || o.scales.x.max !== u.scales.x.max))
        o.setScale('x', { min: u.scales.x.min ?? 0, max: u.scales.x.max ?? 0 });
    }
    busy = false;
  };
}

/** Draw a device's three charts into `root` (which holds .chart-memory, .chart-unusable, .chart-calls). */
export function drawDeviceCharts(data: ReportData, dev: ReportDevice, root: HTMLElement): PageChart[] {
  const out: PageChart[] = [];
  const group: uPlot[] = [];
  const steps = uPlot.paths.stepped?.({ align: 1 });
  const recordedPeak = dev.recorded === null || dev.recorded === undefined ? 0 : Math.max(...dev.recorded);
  const peak = Math.max(
    ...dev.series.map((s) => s.peakReservedBytes),
    dev.peakRequestedBytes,
    recordedPeak,
    1,
  );
  const unit: [string, number] = peak >= GiB ? ['GiB', GiB] : ['MiB', MiB];
  const xLabel = dev.xUnit === 'seconds' ? 'trace time (s)' : 'trace event';
  const key = `device-${dev.device}-${Math.random().toString(36).slice(2)}`;
  const stepMarks = dev.steps ?? [];
  const xScale = stepScale(dev);
  const make = (
    kind: PageChart['kind'],
    title: string,
    yLabel: string,
    yValue: (v: number) => string | number,
    series: uPlot.Series[],
    ys: number[][],
    format: Format,
    plugins: uPlot.Plugin[],
    yRange: uPlot.Scale.Range,
    yIncrs?: number[],
  ) => {
    // Memory holds between events: every line is drawn as steps.
    for (const s of series) s.paths = steps;
    const target = root.querySelector<HTMLElement>(`.chart-${kind}`)!;
    const opts: uPlot.Options = {
      title,
      width: chartWidth(),
      height: kind === 'memory' ? 360 : 220,
      scales: { x: { time: false, ...xScale }, y: { range: yRange } },
      axes: [
        {
          label: xLabel,
          labelSize: 28,
          size: 44,
          // A compressed axis (stepScale) gets its ticks where the eye needs them: the start, the first step, and
          // evenly after it.
          splits: xScale.distr === 100 ? (u) => compressedSplits(u, stepMarks[0].x) : undefined,
          // uPlot's default tick filter for distributions past 2 keeps powers of ten only (a log axis).
          filter: (_u, splits) => splits,
          values: (_u, vals) => {
            // As many decimals as the tick spacing needs, so close ticks never read the same.
            const shown = vals.filter((v) => v !== null && v !== undefined);
            const step = shown.length > 1 ? Math.abs(shown[shown.length - 1] - shown[shown.length - 2]) : 1;
            let digits = 0;
            // A compressed axis's ticks are not round numbers: enough digits to tell them apart.
            if (xScale.distr === 100) digits = Math.min(6, Math.max(0, Math.ceil(-Math.log10(step)) + 1));
            else
              while (digits < 9 && Math.abs(Math.round(step * 10 ** digits) - step * 10 ** digits) > 1e-6)
                digits++;
            return vals.map((v) =>
              v === null || v === undefined
                ? ''
                : dev.xUnit === 'seconds'
                  ? v.toFixed(digits)
                  : Math.round(v).toLocaleString('en-US'),
            );
          },
        },
        { label: yLabel, labelSize: 28, size: 70, incrs: yIncrs, values: (_u, vals) => vals.map(yValue) },
      ],
      series: [{ label: xLabel, value: (_u, v) => (v === null ? '' : fmtX(dev, v)) }, ...series],
      cursor: {
        y: false,
        drag: { x: true, y: false, setScale: true },
        sync: { key },
        points: { show: false },
      },
      legend: { show: true, live: false },
      plugins: [tooltipPlugin(dev, kind, format), wheelZoomPlugin(), ...plugins],
      hooks: { setScale: [syncZoom(group)] },
    };
    const u = new uPlot(opts, [dev.x, ...ys] as uPlot.AlignedData, target);
    group.push(u);
    out.push({ kind, device: dev.device, chart: u });
  };
  const memSeries: uPlot.Series[] = [{ label: 'requested', stroke: '#444', width: 1.5 }];
  const memYs = [dev.series[0].requested];
  for (const s of dev.series) {
    const a = data.allocators[s.allocator];
    memSeries.push({ label: `${a.name} reserved`, stroke: a.color, width: 2 });
    memYs.push(s.reserved);
  }
  for (const s of dev.series) {
    const a = data.allocators[s.allocator];
    memSeries.push({ label: `${a.name} allocated`, stroke: a.color, width: 1, dash: [5, 4] });
    memYs.push(s.allocated);
  }
  // The recorded run's own curve, on the same axis: what each model is set against.
  if (dev.recorded !== null && dev.recorded !== undefined) {
    memSeries.push({ label: 'recorded reserved', stroke: '#000', width: 2.5, dash: [2, 3] });
    memYs.push(dev.recorded);
  }
  make(
    'memory',
    'Memory over time: requested, reserved (solid), allocated (dashed) and what the recorded run reserved (dotted, black)',
    `memory (${unit[0]})`,
    (v) => +(v / unit[1]).toFixed(2),
    memSeries,
    memYs,
    fmtBytes,
    [peakPlugin(data, dev), stepsPlugin(stepMarks)],
    (_u, _min, max) => [0, Math.max(max, 1) * 1.08],
    NICE.map((m) => m * unit[1]),
  );
  const unusablePeak = Math.max(1, ...dev.series.flatMap((s) => s.unusable));
  const unusableUnit: [string, number] = unusablePeak >= GiB ? ['GiB', GiB] : ['MiB', MiB];
  make(
    'unusable',
    'Reserved but unusable: the cached bytes a request could not use, at each request that made the allocator reserve more or run out (cache that served its request is not counted)',
    `unusable (${unusableUnit[0]})`,
    (v) => +(v / unusableUnit[1]).toFixed(2),
    dev.series.map((s) => {
      const a = data.allocators[s.allocator];
      return { label: a.name, stroke: a.color, width: 1.5, fill: `${a.color}22` };
    }),
    dev.series.map((s) => s.unusable),
    fmtBytes,
    [],
    (_u, _min, max) => [0, Math.max(max, 1) * 1.1],
    NICE.map((m) => m * unusableUnit[1]),
  );
  make(
    'calls',
    `Driver calls per ${dev.bucketWidth.toLocaleString('en-US')} event${dev.bucketWidth > 1 ? 's' : ''}`,
    'driver calls',
    (v) => v.toLocaleString('en-US'),
    dev.series.map((s) => {
      const a = data.allocators[s.allocator];
      return { label: a.name, stroke: a.color, width: 1.5, fill: `${a.color}22` };
    }),
    dev.series.map((s) => s.calls),
    (v) => `${v.toLocaleString('en-US')} calls`,
    [],
    (_u, _min, max) => [0, Math.max(max, 1) * 1.1],
  );
  return out;
}
