// lockbench report.html: sortable tables and interactive charts, drawn
// with uPlot from the data embedded in the page (#lockbench-data). It
// loads nothing: the page opens from disk, offline.
//
// window.lockbench is what the browser test reads: the charts made (their
// uPlot instances and series) and ready, set when everything was drawn.
(function () {
  "use strict";

  var api = (window.lockbench = { charts: [], ready: false });
  var data = JSON.parse(document.getElementById("lockbench-data").textContent);

  // ---- Formatting: values for people, as report.md writes them.

  function sig3(v) {
    var a = Math.abs(v);
    if (a >= 99.95) return v.toFixed(0);
    if (a >= 9.995) return v.toFixed(1);
    return v.toFixed(2);
  }

  function fmtMs(v) {
    if (v < 1) return sig3(v * 1000) + " µs";
    if (v < 1000) return sig3(v) + " ms";
    return sig3(v / 1000) + " s";
  }

  function fmtRate(v) {
    return (v >= 100 ? Math.round(v).toLocaleString("en-US") : sig3(v)) + "/s";
  }

  // fmtPercentile shows x = 1/(1−p) as p, with as many decimals as its
  // depth in the tail needs ("99.90%", "99.968%").
  function fmtPercentile(x) {
    if (x <= 1) return "0%";
    var d = Math.max(1, Math.ceil(Math.log10(x)) - 1);
    return "p" + (100 * (1 - 1 / x)).toFixed(d);
  }

  function fmtValue(unit, v) {
    if (v == null || !isFinite(v)) return "—";
    switch (unit) {
      case "ms": return fmtMs(v);
      case "rate": return fmtRate(v);
      case "percentile": return fmtPercentile(v);
      case "s": return v.toFixed(1) + " s";
      default: return String(+v.toPrecision(4));
    }
  }

  // ---- Tables: click a header to sort by it, again to reverse.

  var units = { ns: 1, "µs": 1e3, us: 1e3, ms: 1e6, s: 1e9, "%": 1 };

  // cellKey is the value a cell sorts by: its data-sort, or its text read
  // as a number with an optional unit; NaN for text.
  function cellKey(td) {
    var s = td.getAttribute("data-sort");
    if (s !== null) return parseFloat(s);
    var m = /^(-?[\d,]*\.?\d+)\s*(ns|µs|us|ms|s|%)?/.exec(td.textContent.trim());
    if (!m) return NaN;
    return parseFloat(m[1].replace(/,/g, "")) * (m[2] ? units[m[2]] : 1);
  }

  function makeSortable(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.setAttribute("role", "button");
      th.tabIndex = 0;
      var sort = function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows).map(function (tr, i) {
          var td = tr.cells[col];
          return { tr: tr, i: i, k: td ? cellKey(td) : NaN, t: td ? td.textContent : "" };
        });
        rows.sort(function (a, b) {
          var an = isNaN(a.k), bn = isNaN(b.k), c;
          if (an !== bn) c = an ? 1 : -1; // numbers before text
          else if (!an) c = a.k - b.k;
          else c = a.t.localeCompare(b.t);
          return dir * c || a.i - b.i;
        });
        rows.forEach(function (r) { body.appendChild(r.tr); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);

  // ---- The safety grid: the hovered cell's figures under it.

  Array.prototype.forEach.call(document.querySelectorAll('figure[data-kind="grid"]'), function (fig) {
    var readout = fig.querySelector(".readout");
    fig.addEventListener("mouseover", function (e) {
      var td = e.target.closest("td.cell");
      if (td && readout) readout.textContent = td.title;
    });
    api.charts.push({
      name: fig.getAttribute("data-chart"), kind: "grid", el: fig,
      rows: Array.prototype.map.call(fig.querySelectorAll("tbody tr"), function (tr) { return tr.getAttribute("data-strategy"); }),
    });
  });

  // ---- Line charts.

  var HEIGHT = 420;

  // alpha returns a CSS colour "#rrggbb" with opacity a.
  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }

  // pointIndex maps each series' x values to its own point indices, so the
  // hover readout finds a point's interval in the joined data.
  function pointIndex(s) {
    var m = new Map();
    s.x.forEach(function (x, i) { if (!m.has(x)) m.set(x, i); });
    return m;
  }

  // onlyPoints is a series' point filter: its lone values (s.only), as
  // indices of the joined data xs; undefined (every point) without.
  function onlyPoints(s, xs) {
    if (!s.only) return undefined;
    var at = new Map(xs.map(function (x, i) { return [x, i]; }));
    var idxs = s.only.map(function (j) { return at.get(s.x[j]); });
    return function () { return idxs; };
  }

  // readout is the legend value of series s at its point j.
  function readout(ch, s, j) {
    var v = s.y[j];
    var out = fmtValue(ch.y.unit, v);
    if (s.ylo && s.n && s.n[j] > 1 && s.ylo[j] != null) {
      out += " (" + s.spread + " " + fmtValue(ch.y.unit, s.ylo[j]) + "–" + fmtValue(ch.y.unit, s.yhi[j]) + ", " + s.n[j] + " trials)";
    }
    if (s.tags && s.tags[j]) out += ", " + s.tags[j];
    return out;
  }

  function axisSplits(ax, xs) {
    if (ax.ticks) {
      var vs = ax.ticks.map(function (t) { return t.v; });
      return function (u, i, min, max) {
        return vs.filter(function (v) { return v >= min * 0.999 && v <= max * 1.001; });
      };
    }
    if (ax.unit === "count" && xs.length <= 10) {
      return function (u, i, min, max) {
        return xs.filter(function (v) { return v >= min && v <= max; });
      };
    }
    return undefined;
  }

  function axisValues(ax) {
    if (ax.unit === "count") {
      return function (u, splits) { return splits.map(function (v) { return String(+v.toPrecision(4)); }); };
    }
    if (ax.ticks) {
      var labels = new Map(ax.ticks.map(function (t) { return [t.v, t.label]; }));
      return function (u, splits) { return splits.map(function (v) { return labels.get(v) || ""; }); };
    }
    if (ax.log) {
      // Label the decades (and 2× and 5× of them), as the PNG charts do.
      return function (u, splits) {
        return splits.map(function (v) {
          var m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
          return Math.abs(m - 1) < 1e-6 || Math.abs(m - 2) < 1e-6 || Math.abs(m - 5) < 1e-6 ? String(+v.toPrecision(6)) : "";
        });
      };
    }
    return undefined;
  }

  // drawBand shades the fault window, under the lines.
  function drawBand(ch) {
    return function (u) {
      var b = ch.band, ctx = u.ctx, bb = u.bbox;
      var x0 = Math.max(bb.left, u.valToPos(b.x0, "x", true));
      var x1 = Math.min(bb.left + bb.width, u.valToPos(b.x1, "x", true));
      if (x1 <= x0) return;
      ctx.save();
      ctx.fillStyle = "rgba(128,128,128,0.22)";
      ctx.fillRect(x0, bb.top, x1 - x0, bb.height);
      ctx.restore();
    };
  }

  // drawIntervals draws each point's interval over trials: error bars on
  // the charts with points, a shaded band around the line otherwise.
  function drawIntervals(ch) {
    return function (u) {
      var ctx = u.ctx, bb = u.bbox, px = uPlot.pxRatio;
      ctx.save();
      ctx.beginPath();
      ctx.rect(bb.left, bb.top, bb.width, bb.height);
      ctx.clip();
      ch.series.forEach(function (s, i) {
        if (!s.ylo || !u.series[i + 1].show) return;
        var X = function (v) { return u.valToPos(v, "x", true); };
        var Y = function (v) { return u.valToPos(v, "y", true); };
        if (s.points) {
          ctx.strokeStyle = s.color;
          ctx.lineWidth = 1.5 * px;
          var cap = 4 * px;
          s.x.forEach(function (x, j) {
            if (s.ylo[j] == null || s.n[j] < 2) return;
            var cx = X(x), y0 = Y(s.ylo[j]), y1 = Y(s.yhi[j]);
            ctx.beginPath();
            ctx.moveTo(cx, y0); ctx.lineTo(cx, y1);
            ctx.moveTo(cx - cap, y0); ctx.lineTo(cx + cap, y0);
            ctx.moveTo(cx - cap, y1); ctx.lineTo(cx + cap, y1);
            if (s.xlo && s.xlo[j] != null) {
              var cy = Y(s.y[j]);
              ctx.moveTo(X(s.xlo[j]), cy); ctx.lineTo(X(s.xhi[j]), cy);
            }
            ctx.stroke();
          });
          return;
        }
        ctx.fillStyle = alpha(s.color, 0.16);
        var seg = [];
        var flush = function () {
          if (seg.length > 1) {
            ctx.beginPath();
            seg.forEach(function (j, k) { (k ? ctx.lineTo : ctx.moveTo).call(ctx, X(s.x[j]), Y(s.yhi[j])); });
            for (var k = seg.length - 1; k >= 0; k--) ctx.lineTo(X(s.x[seg[k]]), Y(s.ylo[seg[k]]));
            ctx.closePath();
            ctx.fill();
          }
          seg = [];
        };
        s.x.forEach(function (x, j) { if (s.ylo[j] == null) flush(); else seg.push(j); });
        flush();
      });
      ctx.restore();
    };
  }

  function makeLines(fig, ch) {
    var el = fig.querySelector(".plot");
    var aligned = uPlot.join(ch.series.map(function (s) { return [s.x, s.y]; }));
    var xs = aligned[0];
    var idx = ch.series.map(pointIndex);
    var series = [{
      label: ch.x.label.split(" (")[0], // the legend names the axis, briefly
      value: function (u, v) { return fmtValue(ch.x.unit, v); },
    }];
    ch.series.forEach(function (s, i) {
      series.push({
        label: s.label,
        stroke: s.color,
        width: 2,
        dash: s.dashed ? [7, 4] : undefined,
        spanGaps: false,
        points: { show: s.points ? true : false, size: 7, fill: s.color, stroke: s.color, filter: onlyPoints(s, xs) },
        value: function (u, v, si, di) {
          if (di == null) return "—";
          var j = idx[i].get(u.data[0][di]);
          return j === undefined ? "—" : readout(ch, s, j);
        },
      });
    });
    var scale = function (ax) { return ax.log ? { time: false, distr: 3, log: 10 } : { time: false }; };
    var axis = function (ax, xsFor) {
      return {
        label: ax.label, labelSize: 20, size: 58, stroke: "#444",
        grid: { stroke: "#e3e3e3", width: 1 }, ticks: { stroke: "#ccc", width: 1 },
        font: '12px "Liberation Sans", Arial, sans-serif', labelFont: '13px "Liberation Sans", Arial, sans-serif',
        splits: axisSplits(ax, xsFor), values: axisValues(ax),
        // Label every split given (uPlot would thin a log axis's to its
        // decades); axisValues leaves the ones to skip blank.
        filter: ax.ticks || ax.unit === "count" ? function (u, splits) { return splits; } : undefined,
      };
    };
    // A chart of points keeps its first and last clear of the edges, as
    // the PNG does: 15% beyond them on a log axis, 5% of the span on a
    // linear one.
    var padded = function (ax) {
      return function (u, min, max) {
        if (ax.log) return [min / 1.15, max * 1.15];
        var pad = Math.max((max - min) * 0.05, Math.abs(max) * 0.02, 0.5);
        return [min >= 0 ? Math.max(0, min - pad) : min - pad, max + pad];
      };
    };
    var scales = { x: scale(ch.x), y: scale(ch.y) };
    if (ch.series.some(function (s) { return s.points; }) && ch.x.unit !== "s") scales.x.range = padded(ch.x);
    // The percentile axis runs from 0% to the deepest percentile drawn, as
    // the PNG's does, not to the next decade.
    if (ch.x.unit === "percentile") scales.x.range = function (u, min, max) { return [1, Math.max(max, 10)]; };
    // With intervals, the y range takes them in, so no error bar or band
    // is cut off.
    if (ch.series.some(function (s) { return s.ylo; })) {
      scales.y.range = function (u, min, max) {
        if (min == null || max == null) return ch.y.log ? [1, 10] : [0, 1]; // nothing shown
        ch.series.forEach(function (s, i) {
          if (!s.ylo || !u.series[i + 1].show) return;
          s.ylo.forEach(function (v) { if (v != null && (v > 0 || !ch.y.log)) min = Math.min(min, v); });
          s.yhi.forEach(function (v) { if (v != null) max = Math.max(max, v); });
        });
        return ch.y.log ? uPlot.rangeLog(min, max, 10, true) : uPlot.rangeNum(min, max, 0.1, true);
      };
    }
    var hooks = { draw: [drawIntervals(ch)] };
    if (ch.band) hooks.drawAxes = [drawBand(ch)];
    var opts = {
      width: Math.max(320, el.clientWidth), height: HEIGHT,
      scales: scales,
      axes: [axis(ch.x, xs), axis(ch.y, [])],
      series: series,
      cursor: { drag: { x: true, y: true, uni: 30 } },
      legend: { live: true },
      hooks: hooks,
    };
    var u = new uPlot(opts, aligned, el);
    if (ch.band) {
      var note = document.createElement("p");
      note.className = "band-note";
      note.textContent = "Shaded: " + ch.band.label + ", " + fmtValue("s", ch.band.x0) + " to " + fmtValue("s", ch.band.x1) + ".";
      el.appendChild(note);
    }
    api.charts.push({
      name: ch.name, kind: "lines", el: fig, plot: u,
      series: ch.series.map(function (s) { return { label: s.label, strategy: s.strategy, color: s.color }; }),
    });
    return u;
  }

  var plots = [];
  data.charts.forEach(function (ch) {
    var fig = document.querySelector('figure[data-chart="' + ch.name + '"]');
    if (fig) plots.push(makeLines(fig, ch));
  });
  var resizeTimer = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      plots.forEach(function (u) { u.setSize({ width: Math.max(320, u.root.parentNode.clientWidth), height: HEIGHT }); });
    }, 100);
  });
  api.ready = true;
})();
