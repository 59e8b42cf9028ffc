/**
 * The report page's own script, run in the browser (a string: it is
 * embedded, never imported). It reads the JSON in #report-data and draws,
 * per device, three uPlot charts on one time axis (memory, fragmentation,
 * driver calls), synchronised in cursor and zoom: drag to zoom into a time
 * range, the wheel to zoom around the cursor, a double click to zoom out.
 * The tooltip shows each series' greatest value among the points drawn
 * within a pixel of the cursor (and its least, where they differ), so
 * hovering over a peak reads it exactly.
 * window.vmmkitReport holds the data and the charts, for tests.
 */
export const REPORT_SCRIPT = String.raw`
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var GiB = 1073741824, MiB = 1048576, KiB = 1024;
  function fmtBytes(n) {
    var a = Math.abs(n);
    if (a >= GiB) return (n / GiB).toFixed(2) + ' GiB';
    if (a >= MiB) return (n / MiB).toFixed(1) + ' MiB';
    if (a >= KiB) return (n / KiB).toFixed(0) + ' KiB';
    return n + ' B';
  }
  function fmtX(dev, v) {
    return dev.xUnit === 'seconds' ? v.toFixed(3) + ' s' : 'event ' + Math.round(v).toLocaleString('en-US');
  }
  var charts = [];
  var steps = uPlot.paths.stepped({ align: 1 });
  var NICE = [];
  for (var p = -3; p <= 6; p++) [1, 2, 2.5, 5].forEach(function (m) { NICE.push(m * Math.pow(10, p)); });
  function chartWidth() {
    return Math.max(480, Math.min(1400, document.documentElement.clientWidth - 48));
  }

  function tooltipPlugin(dev, kind, format) {
    var tip;
    return {
      hooks: {
        init: function (u) {
          tip = document.createElement('div');
          tip.className = 'tooltip';
          tip.dataset.chart = kind;
          tip.style.display = 'none';
          u.over.appendChild(tip);
        },
        setCursor: function (u) {
          var idx = u.cursor.idx;
          if (idx == null || u.cursor.left < 0) { tip.style.display = 'none'; return; }
          // Every point drawn within a pixel of the cursor counts (a pixel may hold many buckets, and
          // events may share a time), and both points of each bucket: what is under the cursor is what it reads.
          var xs = u.data[0], lo = idx, hi = idx;
          var xl = Math.min(xs[idx], u.posToVal(u.cursor.left - 1, 'x')), xr = Math.max(xs[idx], u.posToVal(u.cursor.left + 1, 'x'));
          while (lo > 0 && xs[lo - 1] >= xl) lo--;
          while (hi < xs.length - 1 && xs[hi + 1] <= xr) hi++;
          lo = lo & ~1;
          hi = hi | 1;
          var first = (lo >> 1) * dev.bucketWidth;
          var last = Math.min(dev.events - 1, ((hi >> 1) + 1) * dev.bucketWidth - 1);
          var html = '<div class="tip-x">' + fmtX(dev, xs[idx]) +
            ' <span class="tip-events">(event' + (last > first ? 's ' + first.toLocaleString('en-US') + '\u2013' + last.toLocaleString('en-US') : ' ' + first.toLocaleString('en-US')) + ')</span></div>';
          for (var s = 1; s < u.series.length; s++) {
            if (!u.series[s].show) continue;
            var top = -Infinity, bottom = Infinity;
            for (var k = lo; k <= hi; k++) {
              var v = u.data[s][k];
              if (v > top) top = v;
              if (v < bottom) bottom = v;
            }
            // Calls are counts per bucket: the buckets at this time add up.
            if (kind === 'calls') for (top = 0, k = lo; k <= hi; k += 2) top += u.data[s][k];
            html += '<div class="tip-row" data-series="' + u.series[s].label + '" data-value="' + top + '"><span class="swatch" style="background:' + u.series[s]._stroke + '"></span>' +
              u.series[s].label + ': <b>' + format(top) + '</b>' + (bottom !== top && kind !== 'calls' ? ' <span class="tip-lo">(low ' + format(bottom) + ')</span>' : '') + '</div>';
          }
          tip.innerHTML = html;
          tip.style.display = 'block';
          var left = u.cursor.left + 14, y = Math.max(0, u.cursor.top - 10);
          if (left + tip.offsetWidth > u.over.clientWidth) left = u.cursor.left - tip.offsetWidth - 14;
          tip.style.left = left + 'px';
          tip.style.top = y + 'px';
        }
      }
    };
  }

  function wheelZoomPlugin(dev) {
    return {
      hooks: {
        ready: function (u) {
          u.over.addEventListener('wheel', function (e) {
            e.preventDefault();
            var xs = u.data[0];
            var lo0 = xs[0], hi0 = xs[xs.length - 1];
            var min = u.scales.x.min, max = u.scales.x.max;
            var at = u.posToVal(e.offsetX, 'x');
            var f = e.deltaY < 0 ? 0.75 : 1 / 0.75;
            var nmin = at - (at - min) * f, nmax = at + (max - at) * f;
            if (nmin < lo0) nmin = lo0;
            if (nmax > hi0) nmax = hi0;
            if (nmax - nmin <= 0) return;
            u.setScale('x', { min: nmin, max: nmax });
          }, { passive: false });
        }
      }
    };
  }

  function peakPlugin(dev) {
    return {
      hooks: {
        draw: function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.font = Math.round(11 * devicePixelRatio) + 'px system-ui, sans-serif';
          // Labels never overlap: each moves up until it clears the ones placed before it.
          var placed = [];
          var lh = 13 * devicePixelRatio;
          dev.series.forEach(function (s) {
            var a = data.allocators[s.allocator];
            var x = u.valToPos(s.peakX, 'x', true), y = u.valToPos(s.peakReservedBytes, 'y', true);
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
            ctx.fillStyle = a.color;
            ctx.beginPath();
            ctx.arc(x, y, 4 * devicePixelRatio, 0, 2 * Math.PI);
            ctx.fill();
            var label = 'peak ' + fmtBytes(s.peakReservedBytes);
            var w = ctx.measureText(label).width;
            var lx = x + 6 * devicePixelRatio;
            if (lx + w > u.bbox.left + u.bbox.width) lx = x - w - 6 * devicePixelRatio;
            var ly = y - 6 * devicePixelRatio;
            for (var moved = true; moved; ) {
              moved = false;
              for (var i = 0; i < placed.length; i++) {
                var p = placed[i];
                if (lx < p.x + p.w && p.x < lx + w && ly > p.y - lh && ly - lh < p.y) {
                  ly = p.y - lh;
                  moved = true;
                }
              }
            }
            placed.push({ x: lx, y: ly, w: w });
            ctx.fillText(label, lx, ly);
          });
          ctx.restore();
        }
      }
    };
  }

  function syncZoom(group) {
    var busy = false;
    return function (u, key) {
      if (key !== 'x' || busy) return;
      busy = true;
      group.forEach(function (o) {
        if (o !== u && (o.scales.x.min !== u.scales.x.min || o.scales.x.max !== u.scales.x.max))
          o.setScale('x', { min: u.scales.x.min, max: u.scales.x.max });
      });
      busy = false;
    };
  }

  data.devices.forEach(function (dev) {
    var root = document.getElementById('device-' + dev.device);
    var group = [];
    var peak = Math.max.apply(null, dev.series.map(function (s) { return s.peakReservedBytes; }).concat([dev.peakRequestedBytes, 1]));
    var unit = peak >= GiB ? ['GiB', GiB] : ['MiB', MiB];
    var xLabel = dev.xUnit === 'seconds' ? 'trace time (s)' : 'trace event';
    var key = 'device-' + dev.device;
    function make(kind, title, yLabel, yValues, series, ys, format, plugins, yRange, yIncrs) {
      // Memory holds between events: every line is drawn as steps.
      series.forEach(function (s) { s.paths = steps; });
      var el = root.querySelector('.chart-' + kind);
      var opts = {
        title: title,
        width: chartWidth(),
        height: kind === 'memory' ? 360 : 220,
        scales: { x: { time: false }, y: { range: yRange } },
        axes: [
          { label: xLabel, labelSize: 28, size: 44, values: function (u, vals) {
            // As many decimals as the tick spacing needs, so close ticks never read the same.
            var step = vals.length > 1 ? Math.abs(vals[1] - vals[0]) : 1;
            var digits = 0;
            while (digits < 9 && Math.abs(Math.round(step * Math.pow(10, digits)) - step * Math.pow(10, digits)) > 1e-6) digits++;
            return vals.map(function (v) { return dev.xUnit === 'seconds' ? v.toFixed(digits) : Math.round(v).toLocaleString('en-US'); });
          } },
          { label: yLabel, labelSize: 28, size: 70, incrs: yIncrs, values: function (u, vals) { return vals.map(yValues); } }
        ],
        series: [{ label: xLabel, value: function (u, v) { return v == null ? '' : fmtX(dev, v); } }].concat(series),
        cursor: { y: false, drag: { x: true, y: false, setScale: true }, sync: { key: key }, points: { show: false } },
        legend: { show: true, live: false },
        plugins: [tooltipPlugin(dev, kind, format), wheelZoomPlugin(dev)].concat(plugins || []),
        hooks: { setScale: [syncZoom(group)] }
      };
      var u = new uPlot(opts, [dev.x].concat(ys), el);
      group.push(u);
      charts.push({ kind: kind, device: dev.device, chart: u });
      return u;
    }
    var memSeries = [{ label: 'requested', stroke: '#444', width: 1.5 }];
    var memYs = [dev.series[0].requested];
    dev.series.forEach(function (s) {
      var a = data.allocators[s.allocator];
      memSeries.push({ label: a.name + ' reserved', stroke: a.color, width: 2 });
      memYs.push(s.reserved);
    });
    dev.series.forEach(function (s) {
      var a = data.allocators[s.allocator];
      memSeries.push({ label: a.name + ' allocated', stroke: a.color, width: 1, dash: [5, 4] });
      memYs.push(s.allocated);
    });
    make('memory', 'Memory over time: requested, reserved (solid) and allocated (dashed) bytes', 'memory (' + unit[0] + ')',
      function (v) { return +(v / unit[1]).toFixed(2); }, memSeries, memYs, fmtBytes, [peakPlugin(dev)],
      function (u, min, max) { return [0, Math.max(max, 1) * 1.08]; },
      NICE.map(function (m) { return m * unit[1]; }));
    make('fragmentation', 'Fragmentation: share of reserved bytes no block holds (1 \u2212 allocated / reserved)', 'unused (%)',
      function (v) { return +(v * 100).toFixed(1); },
      dev.series.map(function (s) { var a = data.allocators[s.allocator]; return { label: a.name, stroke: a.color, width: 1.5 }; }),
      dev.series.map(function (s) { return s.fragmentation; }),
      function (v) { return (v * 100).toFixed(1) + '%'; }, [],
      function () { return [0, 1]; });
    make('calls', 'Driver calls per ' + dev.bucketWidth.toLocaleString('en-US') + ' event' + (dev.bucketWidth > 1 ? 's' : ''), 'driver calls',
      function (v) { return v.toLocaleString('en-US'); },
      dev.series.map(function (s) { var a = data.allocators[s.allocator]; return { label: a.name, stroke: a.color, width: 1.5, fill: a.color + '22' }; }),
      dev.series.map(function (s) { return s.calls; }),
      function (v) { return v.toLocaleString('en-US') + ' calls'; }, [],
      function (u, min, max) { return [0, Math.max(max, 1) * 1.1]; });
  });

  window.addEventListener('resize', function () {
    charts.forEach(function (c) { c.chart.setSize({ width: chartWidth(), height: c.chart.height }); });
  });
  window.vmmkitReport = { data: data, charts: charts, formatBytes: fmtBytes };
})();
`;
