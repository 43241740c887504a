// faultline dashboard: one node's state from the JSON API (docs/api.md), drawn with the DOM
// and inline SVG. Every text from the API (kernel lines, names) goes in through textContent:
// a kernel log line is attacker-controlled input and is never parsed as HTML.
'use strict';

const LAYERS = ['oob', 'gpu', 'os', 'fabric', 'workload'];
const LAYER_NAMES = {oob: 'Power & cooling (BMC)', gpu: 'GPU (NVML)', os: 'Kernel log', fabric: 'Fabric', workload: 'Workload'};
const MAX_TIMELINE_ROWS = 20000;  // observations fetched for the timeline, at most
const PAGE = 1000;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

// A server off loopback needs a bearer token (docs/api.md): the page asks for it once and
// keeps it for this tab only (sessionStorage), never in the URL.
const TOKEN_KEY = 'faultline-token';

function askToken(status) {
  const box = document.getElementById('status');
  const input = el('input', {type: 'password', placeholder: 'bearer token', 'aria-label': 'bearer token'});
  const use = el('button', {type: 'button'}, 'Use token');
  use.addEventListener('click', () => {
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    location.reload();
  });
  box.replaceChildren(el('p', {class: 'headline'}, status === 403 ? 'Wrong token' : 'This server needs a token'),
                      el('p', {}, input, ' ', use));
}

async function get(path) {
  const headers = {Accept: 'application/json'};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(path, {headers});
  if (r.status === 401 || r.status === 403) askToken(r.status);
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (_) { /* not JSON */ }
    throw new Error(path + ': ' + msg);
  }
  return r.json();
}

function iso(ns) {
  if (!ns) return '—';
  return new Date(Number(ns) / 1e6).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function duration(ns) {
  const s = Math.max(0, Number(ns) / 1e9);
  if (s < 90) return s.toFixed(0) + ' s';
  if (s < 5400) return (s / 60).toFixed(0) + ' min';
  if (s < 172800) return (s / 3600).toFixed(1) + ' h';
  return (s / 86400).toFixed(1) + ' days';
}

function words(s) { return String(s || '').replace(/_/g, ' '); }

function faultWords(cls) { return cls === 'none' ? 'no fault' : words(cls); }

// Evidence names its component by id; diagnoses carry the whole reference.
function componentId(c) { return typeof c === 'string' ? c : c && c.id ? c.id : ''; }

function showError(err) {
  const f = document.getElementById('error');
  f.hidden = false;
  f.textContent = 'Could not load: ' + (err && err.message ? err.message : err);
}

function renderHeader(node) {
  document.getElementById('node').textContent = node.node || '(unknown node)';
  document.getElementById('asof').textContent = 'as of ' + iso(node.now_ns) + ' · ' +
      (node.store ? node.store.observations + ' observations stored' : '');
  const box = document.getElementById('sources');
  box.replaceChildren();
  for (const s of node.sources || []) {
    const cls = s.up === false ? 'chip down' : s.up === true ? 'chip up' : 'chip';
    box.append(el('span', {class: cls, title: 'last success ' + iso(s.last_success_ns)}, s.source));
  }
}

// The agent sees nothing (every source failing, docs/agent.md "Blind"), or its state cannot be
// read: whatever diagnosis is shown, the node's health is unknown, and the page says so first.
function renderBlind(node) {
  const box = document.getElementById('blind');
  box.replaceChildren();
  box.hidden = node.blind === false || node.blind === undefined;
  if (box.hidden) return;
  if (node.blind === null) {
    box.append(el('p', {class: 'headline'}, 'Health unknown: the agent\'s state cannot be read'),
               el('p', {}, node.blind_error || ''));
    return;
  }
  box.append(el('p', {class: 'headline'}, 'Health unknown: every source failing'),
             el('p', {}, 'Since ' + iso(node.blind_since_ns) + ' (' +
                         duration(Number(node.now_ns) - Number(node.blind_since_ns)) + ' ago). ' +
                         'No diagnosis, "no fault" included, can be trusted until a source reads the node again.'));
  const list = el('ul', {'data-testid': 'failing-sources'});
  for (const s of node.failing_sources || []) {
    list.append(el('li', {}, el('b', {}, s.source), ': ' + s.error +
                             (s.last_success_ns ? ' (last success ' + iso(s.last_success_ns) + ')' : '')));
  }
  box.append(list);
}

function renderStatus(dx, actions, nowNs, blind) {
  const box = document.getElementById('status');
  box.replaceChildren();
  if ((!dx || dx.fault_class === 'none') && blind !== false && blind !== undefined) {
    box.className = 'card status sev-unknown';
    box.append(el('p', {class: 'headline', 'data-testid': 'diagnosis-class'}, 'Health unknown'),
               el('p', {class: 'summary'}, 'The agent cannot read the node (see above): no fault found is not health.'));
    return;
  }
  if (!dx || dx.fault_class === 'none') {
    box.className = 'card status';
    box.append(el('p', {class: 'headline', 'data-testid': 'diagnosis-class'}, 'No fault needs action'),
               el('p', {class: 'summary'}, dx && dx.summary ? dx.summary : 'Every layer read is healthy.'));
    return;
  }
  box.className = 'card status sev-' + dx.severity;
  box.append(el('p', {class: 'headline'},
                el('span', {'data-testid': 'diagnosis-class'}, words(dx.fault_class)),
                el('span', {class: 'component', 'data-testid': 'diagnosis-component'}, dx.component.id)));
  // The assistant's notes (kind assistant_transcript) are not actions; the note is shown below.
  const isNote = a => a.attrs && a.attrs.kind === 'assistant_transcript';
  const taken = (actions || []).filter(a => a.diagnosis_id === dx.id && !isNote(a));
  const next = taken.length ? taken.map(a => words(a.action) + ' (' + (a.dry_run ? 'dry run, ' : '') + a.outcome + ')').join(', ')
                            : words(dx.action) + ' (recommended)';
  const fact = (label, value, testid) => el('div', {class: 'fact'}, el('div', {class: 'label'}, label),
                                            el('div', {class: 'value', 'data-testid': testid}, value));
  box.append(el('div', {class: 'facts'},
                fact('Severity', el('span', {class: 'badge ' + dx.severity}, dx.severity), 'severity'),
                fact('Layer', LAYER_NAMES[dx.layer] || dx.layer, 'layer'),
                fact('Since', iso(dx.first_ns) + ' (' + duration(Math.max(Number(dx.last_ns), Number(nowNs) || 0) - dx.first_ns) + ' ago)', 'since'),
                fact('Confidence', Math.round(dx.confidence * 100) + '%', 'confidence'),
                fact('What happens next', next, 'next-action')),
             el('p', {class: 'summary', 'data-testid': 'summary'}, dx.summary));
  // The model's note when it answered (automated mode with [assistant] llm_url), else the deterministic one.
  const notes = (actions || []).filter(a => a.diagnosis_id === dx.id && isNote(a));
  const note = notes.find(a => a.attrs.mode === 'llm' && a.outcome === 'assistant: answered') ||
               notes.find(a => a.attrs.mode === 'offline');
  if (note) {
    box.append(el('details', {class: 'note', 'data-testid': 'assistant-note'},
                  el('summary', {}, note.attrs.mode === 'llm' ? 'Assistant\'s note (model ' + (note.attrs.model || '?') + ')'
                                                               : 'Assistant\'s note (deterministic)'),
                  el('pre', {}, note.reason || '')));
  }
}

function renderEvidence(dx) {
  const list = document.getElementById('evidence');
  list.replaceChildren();
  for (const e of (dx && dx.evidence) || []) {
    list.append(el('li', {'data-testid': 'evidence-line'},
                   el('div', {class: 'when'}, iso(e.time_ns) + ' · ' + e.source + ' · ' + componentId(e.component) +
                                                  (e.count > 1 ? ' · ×' + e.count : '')),
                   el('div', {class: 'text'}, e.text)));
  }
  if (!list.children.length) list.append(el('li', {class: 'muted'}, 'No evidence: nothing is wrong.'));
  const ruled = document.getElementById('ruled-out');
  ruled.replaceChildren();
  for (const r of (dx && dx.ruled_out) || []) {
    ruled.append(el('li', {}, el('b', {}, LAYER_NAMES[r.layer] || r.layer), ': ' + r.reason));
  }
  if (!ruled.children.length) ruled.append(el('li', {class: 'muted'}, 'Nothing ruled out yet.'));
}

function table(id, head, rows) {
  const t = document.getElementById(id);
  t.replaceChildren(el('tr', {}, ...head.map(h => el('th', {}, h))));
  for (const r of rows) t.append(r);
  if (!rows.length) t.append(el('tr', {}, el('td', {colspan: head.length, class: 'muted'}, 'none')));
}

function renderDiagnoses(list, activeId) {
  table('diagnoses', ['#', 'fault', 'component', 'action', 'severity', 'first', 'last'],
        list.map(d => {
          const tr = el('tr', {class: d.id === activeId ? 'active' : ''},
                        el('td', {}, el('a', {href: '#' + d.id}, String(d.id))), el('td', {}, faultWords(d.fault_class)),
                        el('td', {}, d.component.id), el('td', {}, words(d.action)),
                        el('td', {}, el('span', {class: 'badge ' + d.severity}, d.severity)), el('td', {}, iso(d.first_ns)),
                        el('td', {}, iso(d.last_ns)));
          return tr;
        }));
}

function renderActions(list) {
  table('actions', ['when', 'action', 'outcome', 'reason'],
        list.map(a => el('tr', {}, el('td', {}, iso(a.time_ns)), el('td', {}, words(a.action) + (a.dry_run ? ' (dry run)' : '')),
                         el('td', {}, a.outcome), el('td', {}, a.reason || ''))));
}

// Observations in [since, until], oldest first, paged, bounded.
async function observations(since, until) {
  const rows = [];
  let cursor = null;
  do {
    const q = new URLSearchParams({since: String(since), until: String(until), limit: String(PAGE)});
    if (cursor) q.set('cursor', cursor);
    const page = await get('/api/v1/observations?' + q.toString());
    rows.push(...page.observations);
    cursor = page.next_cursor;
  } while (cursor && rows.length < MAX_TIMELINE_ROWS);
  return rows;
}

// The numeric series most worth plotting under the workload: the diagnosis' component's
// own readings (the culprit signal), the kind with the most points.
function culpritSeries(rows, dx) {
  if (!dx || !dx.component) return null;
  const byKind = new Map();
  for (const o of rows) {
    if (o.component.id !== dx.component.id || typeof o.value !== 'number' || o.layer === 'workload') continue;
    if (!byKind.has(o.kind)) byKind.set(o.kind, []);
    byKind.get(o.kind).push([o.time_ns, o.value]);
  }
  let best = null;
  for (const [kind, pts] of byKind) if (!best || pts.length > best.points.length) best = {kind, points: pts};
  return best;
}

function drawLine(g, points, x, y0, h, color, label) {
  const vals = points.map(p => p[1]);
  let lo = Math.min(...vals), hi = Math.max(...vals);
  if (hi === lo) { hi += 1; lo -= 1; }
  const y = v => y0 + h - ((v - lo) / (hi - lo)) * h;
  const d = points.map((p, i) => (i ? 'L' : 'M') + x(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1)).join(' ');
  g.append(svg('path', {d, fill: 'none', stroke: color, 'stroke-width': '1.8'}));
  for (const p of points.length <= 400 ? points : []) {
    g.append(svg('circle', {cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: '2', fill: color, class: 'point'}));
  }
  const t = svg('text', {x: '4', y: String(y0 + 10)});
  t.textContent = label + ' (' + lo.toPrecision(3) + '–' + hi.toPrecision(3) + ')';
  g.append(t);
}

function renderTimeline(rows, dx, since, until) {
  const box = document.getElementById('timeline');
  box.replaceChildren();
  if (!rows.length) {
    box.append(el('div', {class: 'muted'}, 'No observations in this window.'));
    return;
  }
  const W = Math.max(600, box.clientWidth || 1200), left = 150, right = 16;
  const step = rows.filter(o => o.kind === 'step_time' && typeof o.value === 'number').map(o => [o.time_ns, o.value]);
  const culprit = culpritSeries(rows, dx);
  const charts = (step.length ? 1 : 0) + (culprit ? 1 : 0);
  const chartH = 70, laneH = 22, top = 8;
  const H = top + charts * (chartH + 12) + LAYERS.length * laneH + 24;
  const s = svg('svg', {width: String(W), height: String(H), viewBox: '0 0 ' + W + ' ' + H, 'data-points': String(rows.length)});
  const x = t => left + ((Number(t) - since) / Math.max(1, until - since)) * (W - left - right);
  let y = top;
  if (step.length) { drawLine(s, step, x, y, chartH, 'var(--workload)', 'step time (s)'); y += chartH + 12; }
  if (culprit) {
    drawLine(s, culprit.points, x, y, chartH, 'var(--fatal)', words(culprit.kind) + ' on ' + dx.component.id);
    y += chartH + 12;
  }
  const counts = {};
  for (const layer of LAYERS) {
    s.append(svg('line', {x1: String(left), x2: String(W - right), y1: String(y + laneH / 2), y2: String(y + laneH / 2), class: 'axis'}));
    const label = svg('text', {x: '4', y: String(y + laneH / 2 + 4), class: 'lane-label'});
    label.textContent = LAYER_NAMES[layer];
    s.append(label);
    const mine = rows.filter(o => o.layer === layer);
    counts[layer] = mine.length;
    // One tick per pixel column at most: a million readings draw as fast as a hundred.
    const seen = new Set();
    for (const o of mine) {
      const px = Math.round(x(o.time_ns));
      const hot = dx && dx.component && o.component.id === dx.component.id;
      const key = px + (hot ? 'h' : '');
      if (seen.has(key)) continue;
      seen.add(key);
      s.append(svg('rect', {x: String(px), y: String(y + 4), width: '2', height: String(laneH - 8),
                            fill: hot ? 'var(--fatal)' : 'var(--' + layer + ')', opacity: hot ? '1' : '0.45', class: 'tick'}));
    }
    y += laneH;
  }
  for (const e of (dx && dx.evidence) || []) {
    if (!e.time_ns) continue;
    s.append(svg('line', {x1: String(x(e.time_ns)), x2: String(x(e.time_ns)), y1: String(top), y2: String(y), class: 'evidence-mark'}));
  }
  for (const [t, anchor] of [[since, 'start'], [until, 'end']]) {
    const label = svg('text', {x: String(x(t)), y: String(H - 6), 'text-anchor': anchor});
    label.textContent = iso(t);
    s.append(label);
  }
  box.append(s);
  box.dataset.counts = JSON.stringify(counts);
}

async function load() {
  const node = await get('/api/v1/node');
  renderHeader(node);
  renderBlind(node);
  const [list, acts] = await Promise.all([get('/api/v1/diagnoses?limit=100'), get('/api/v1/actions?limit=100')]);
  const wanted = Number(location.hash.slice(1)) || (node.active_diagnosis ? node.active_diagnosis.id : 0);
  const dx = wanted ? await get('/api/v1/diagnoses/' + wanted) : node.active_diagnosis;
  renderStatus(dx, acts.actions, node.now_ns, node.blind);
  renderEvidence(dx);
  renderDiagnoses(list.diagnoses, dx ? dx.id : 0);
  renderActions(acts.actions);
  // The window: the diagnosis with margins, else the last hour of the run.
  const now = Number(node.now_ns) || Date.now() * 1e6;
  let since = now - 3600e9, until = now;
  if (dx && dx.first_ns) {
    const span = Math.max(60e9, Number(dx.last_ns) - Number(dx.first_ns));
    since = Number(dx.first_ns) - Math.max(300e9, span);
    until = Math.min(now, Number(dx.last_ns) + Math.max(120e9, span / 4));
    if (until <= since) until = since + span;
  }
  renderTimeline(await observations(Math.round(since), Math.round(until)), dx, since, until);
  document.body.dataset.loaded = 'true';
}

window.addEventListener('hashchange', () => load().catch(showError));
load().catch(showError);
