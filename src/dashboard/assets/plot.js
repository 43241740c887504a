// The timeline: every layer on one time axis around the diagnosis, drawn as inline SVG.
// From the top: the workload's step time, the diagnosis' own signal (the reading its fault
// class is about, API "signal"), one lane per layer with a mark per reading, and a time
// axis with round-number ticks. Uses svg(), el() (app.js) and the vocabulary (vocab.js).
'use strict';

const LAYERS = ['oob', 'gpu', 'os', 'fabric', 'workload'];
const LAYER_NAMES = {oob: 'Power & cooling (BMC)', gpu: 'GPU (NVML)', os: 'Kernel log', fabric: 'Fabric', workload: 'Workload'};
const CHART_H = 64, CHART_TITLE = 16, CHART_GAP = 10, LANE_H = 22, AXIS_H = 34, LEFT = 150, RIGHT = 16;
const TICK_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
                      172800, 604800];
const MIN_TICK_PX = 96;  // an "HH:MM:SS" label and some air

function svgText(attrs, text) {
  const t = svg('text', attrs);
  t.textContent = text;
  return t;
}

// ---- time axis ---------------------------------------------------------------------

// The smallest round step that keeps ticks at least MIN_TICK_PX apart.
function tickStepNs(spanNs, widthPx) {
  const most = Math.max(2, Math.floor(widthPx / MIN_TICK_PX));
  for (const s of TICK_STEPS_S) if (spanNs / (s * 1e9) <= most) return s * 1e9;
  return TICK_STEPS_S[TICK_STEPS_S.length - 1] * 1e9;
}

function clockLabel(ns, stepNs) {
  const iso = new Date(ns / 1e6).toISOString();
  return stepNs % 60e9 === 0 ? iso.slice(11, 16) : iso.slice(11, 19);
}

// Round UTC times in [since, until]; each labelled with its clock time, the first one and
// any that starts a new day also with the date.
function drawAxis(s, x, since, until, yTop, yAxis) {
  const step = tickStepNs(until - since, x(until) - x(since));
  let day = '';
  let n = 0;
  for (let t = Math.ceil(since / step) * step; t <= until; t += step) {
    const px = x(t).toFixed(1);
    s.append(svg('line', {x1: px, x2: px, y1: String(yTop), y2: String(yAxis), class: 'grid'}));
    s.append(svgText({x: px, y: String(yAxis + 13), 'text-anchor': 'middle', class: 'axis-label'}, clockLabel(t, step)));
    const date = new Date(t / 1e6).toISOString().slice(0, 10);
    if (date !== day) s.append(svgText({x: px, y: String(yAxis + 26), 'text-anchor': 'middle', class: 'axis-date'}, date));
    day = date;
    ++n;
  }
  s.append(svgText({x: '4', y: String(yAxis + 13), class: 'axis-date'}, 'time (UTC)'));
  return n;
}

// ---- charts ----------------------------------------------------------------------

// Steps hold each value until the next reading (only H and V segments); lines join readings.
function seriesPath(points, x, y, step) {
  let d = 'M' + x(points[0][0]).toFixed(1) + ' ' + y(points[0][1]).toFixed(1);
  for (const [t, v] of points.slice(1)) {
    d += step ? ' H' + x(t).toFixed(1) + ' V' + y(v).toFixed(1) : ' L' + x(t).toFixed(1) + ' ' + y(v).toFixed(1);
  }
  return d;
}

// The y labels: a state's names at its levels, else the lowest and highest reading in units.
function yLabels(kind, lo, hi, values) {
  const k = kindInfo(kind);
  if (k.type === 'state' || k.type === 'flag') {
    const levels = [...new Set(values.concat(k.ok === undefined ? [] : [k.ok]))].sort((a, b) => a - b);
    return levels.map(v => [v, reading(kind, v)]);
  }
  return lo === hi ? [[lo, reading(kind, lo)]] : [[lo, reading(kind, lo)], [hi, reading(kind, hi)]];
}

function valueRange(kind, values) {
  const k = kindInfo(kind);
  let lo = Math.min(...values), hi = Math.max(...values);
  if (k.ok !== undefined) { lo = Math.min(lo, k.ok); hi = Math.max(hi, k.ok); }
  return hi === lo ? [lo - 1, hi + 1, lo, hi] : [lo, hi, lo, hi];
}

// One chart: title above, y labels left of the plot, the series, and a dashed hold from the
// last reading to `holdUntil`: the store keeps a reading once per change, so none stored
// since means the value held (workload step reports are not readings and are not held).
function drawChart(s, c) {
  const values = c.points.map(p => p[1]);
  const [lo, hi, vlo, vhi] = valueRange(c.kind, values);
  const y = v => c.y0 + CHART_H - 4 - ((v - lo) / (hi - lo)) * (CHART_H - 8);
  s.append(svgText({x: String(LEFT), y: String(c.y0 - 4), class: 'chart-title'}, c.title));
  for (const [v, label] of yLabels(c.kind, vlo, vhi, values)) {
    s.append(svgText({x: String(LEFT - 6), y: (y(v) + 4).toFixed(1), 'text-anchor': 'end', class: 'y-label'}, label));
    s.append(svg('line', {x1: String(LEFT), x2: String(c.right), y1: y(v).toFixed(1), y2: y(v).toFixed(1), class: 'grid'}));
  }
  const step = isStepKind(c.kind);
  s.append(svg('path', {d: seriesPath(c.points, c.x, y, step), fill: 'none', stroke: c.color, 'stroke-width': '1.8',
                        class: c.cls, 'data-signal': c.kind, 'data-shape': step ? 'step' : 'line'}));
  const last = c.points[c.points.length - 1];
  if (c.kind !== 'step_time' && c.holdUntil > Number(last[0])) {
    s.append(svg('path', {d: 'M' + c.x(last[0]).toFixed(1) + ' ' + y(last[1]).toFixed(1) + ' H' + c.x(c.holdUntil).toFixed(1),
                          fill: 'none', stroke: c.color, 'stroke-width': '1.8', class: 'hold'}));
  }
  for (const p of c.points.length <= 300 ? c.points : []) {
    s.append(svg('circle', {cx: c.x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: '2', fill: c.color, class: 'point'}));
  }
}

// ---- the diagnosis' signal ---------------------------------------------------------

function seriesSpread(list) {
  const v = list.map(o => o.value);
  return Math.max(...v) - Math.min(...v);
}

// The diagnosis' own reading on its component: the first of the API's signal kinds the
// window has, and of its series (ECC counter, location, ...) the one that moved most.
function signalSeries(rows, dx) {
  if (!dx || !dx.component || !dx.signal) return null;
  for (const kind of dx.signal.kinds || []) {
    if (kind === 'step_time') continue;  // already the top chart
    const groups = new Map();
    for (const o of rows) {
      if (o.kind !== kind || o.component.id !== dx.component.id || typeof o.value !== 'number') continue;
      if (!groups.has(seriesKey(o))) groups.set(seriesKey(o), []);
      groups.get(seriesKey(o)).push(o);
    }
    let best = null;
    for (const list of groups.values()) {
      if (!best || seriesSpread(list) > seriesSpread(best) ||
          (seriesSpread(list) === seriesSpread(best) && list.length > best.length)) best = list;
    }
    if (best) return {kind, rows: best};
  }
  return null;
}

function signalTitle(sig, component) {
  const a = sig.rows[0].attrs || {};
  const qual = SERIES_ATTRS.map(n => a[n]).filter(v => v && v !== kindInfo(sig.kind).unit);
  return kindInfo(sig.kind).label + ' on ' + component + (qual.length ? ' (' + qual.join(', ') + ')' : '');
}

// ---- lanes -----------------------------------------------------------------------

// One mark per pixel column at most per lane: a million readings draw as fast as a hundred.
function drawLane(s, layer, rows, dx, x, y, right) {
  s.append(svg('line', {x1: String(LEFT), x2: String(right), y1: String(y + LANE_H / 2), y2: String(y + LANE_H / 2), class: 'axis'}));
  s.append(svgText({x: '4', y: String(y + LANE_H / 2 + 4), class: 'lane-label'}, LAYER_NAMES[layer]));
  const seen = new Set();
  const mine = rows.filter(o => o.layer === layer);
  for (const o of mine) {
    const px = Math.round(x(o.time_ns));
    const hot = dx && dx.component && o.component.id === dx.component.id;
    const key = px + (hot ? 'h' : '');
    if (seen.has(key)) continue;
    seen.add(key);
    s.append(svg('rect', {x: String(px), y: String(y + 4), width: '2', height: String(LANE_H - 8),
                          fill: hot ? 'var(--fatal)' : 'var(--' + layer + ')', opacity: hot ? '1' : '0.45', class: 'tick'}));
  }
  return mine.length;
}

// The charts above the lanes: the workload's step time, then the diagnosis' signal.
function chartsFor(rows, dx) {
  const charts = [];
  const steps = rows.filter(o => o.kind === 'step_time' && typeof o.value === 'number');
  if (steps.length) charts.push({kind: 'step_time', rows: steps, title: 'workload step time', color: 'var(--workload)', cls: 'workload-series'});
  const sig = signalSeries(rows, dx);
  if (sig) charts.push({kind: sig.kind, rows: sig.rows, title: signalTitle(sig, dx.component.id), color: 'var(--fatal)', cls: 'signal'});
  return charts;
}

function drawEvidenceMarks(s, dx, x, yTop, yBottom) {
  for (const e of (dx && dx.evidence) || []) {
    if (!e.time_ns) continue;
    const px = x(e.time_ns).toFixed(1);
    s.append(svg('line', {x1: px, x2: px, y1: String(yTop), y2: String(yBottom), class: 'evidence-mark'}));
  }
}

function renderTimeline(rows, dx, since, until, nowNs) {
  const box = document.getElementById('timeline');
  box.replaceChildren();
  if (!rows.length) {
    box.append(el('div', {class: 'muted'}, 'No observations in this window.'));
    return;
  }
  since = Math.max(since, Number(rows[0].time_ns));  // no empty stretch before the run began
  const W = Math.max(600, box.clientWidth || 1200), right = W - RIGHT;
  const x = t => LEFT + ((Number(t) - since) / Math.max(1, until - since)) * (right - LEFT);
  const charts = chartsFor(rows, dx);
  const top = 8, chartStep = CHART_TITLE + CHART_H + CHART_GAP, lanesTop = top + charts.length * chartStep;
  const axisY = lanesTop + LAYERS.length * LANE_H, H = axisY + AXIS_H;
  const s = svg('svg', {width: String(W), height: String(H), viewBox: '0 0 ' + W + ' ' + H, 'data-points': String(rows.length)});
  const holdUntil = Math.min(until, Number(nowNs) || until);
  charts.forEach((c, i) => drawChart(s, {...c, points: c.rows.map(o => [Number(o.time_ns), o.value]), x, right, holdUntil,
                                         y0: top + CHART_TITLE + i * chartStep}));
  const counts = {};
  LAYERS.forEach((layer, i) => { counts[layer] = drawLane(s, layer, rows, dx, x, lanesTop + i * LANE_H, right); });
  drawEvidenceMarks(s, dx, x, top, axisY);
  s.dataset.ticks = String(drawAxis(s, x, since, until, top, axisY));
  box.append(s);
  box.dataset.counts = JSON.stringify(counts);
}
