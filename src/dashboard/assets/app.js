// faultline dashboard: one node's state from the JSON API (docs/api.md), drawn with the DOM
// and inline SVG. Every text from the API (kernel lines, names) goes in through textContent:
// a kernel log line is attacker-controlled input and is never parsed as HTML.
'use strict';

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

function capital(s) { return s ? s[0].toUpperCase() + s.slice(1) : s; }

// "Drain the node", "Webhook to on-call", ... in the words of someone on call.
function actionWords(cls, component) {
  const w = ACTION_WORDS[cls];
  return capital(w ? w(component) : words(cls));
}

// Where a plan step stands: the newest row the policy recorded for it, else "planned".
function stepStatus(step) {
  if (step.refused) return 'not done: ' + (step.why || 'refused');
  if (!step.state) return 'planned; no decision recorded yet';
  let text = STATE_WORDS[step.state] || words(step.state);
  if (step.state === 'failed' && step.outcome) text += ' (' + step.outcome.replace(/^failed: /, '').slice(0, 160) + ')';
  if (step.planned === false) text += ' (no longer in the plan)';
  return text + ' · ' + iso(step.time_ns);
}

// One line per step of the policy's plan (API "plan"), in the order they are carried out.
function planList(dx) {
  const list = el('ol', {class: 'plan', 'data-testid': 'plan'});
  for (const step of dx.plan || []) {
    const state = step.refused ? 'refused' : step.state || 'planned';
    list.append(el('li', {class: 'step state-' + state, 'data-testid': 'plan-step', 'data-action': step.action},
                   el('span', {class: 'what'}, actionWords(step.action, dx.component.id)), ' ',
                   el('span', {class: 'where'}, '— ' + stepStatus(step))));
  }
  if (!list.children.length) {
    list.append(el('li', {class: 'muted', 'data-testid': 'plan-step'},
                   'Nothing planned: ' + (RECOMMENDED_WORDS[dx.action] || words(dx.action))));
  }
  return list;
}

function assistantNote(dx) {
  // The model's note when it answered (automated mode with [assistant] llm_url), else the deterministic one.
  const notes = (dx.actions || []).filter(isNote);
  const note = notes.find(a => a.attrs.mode === 'llm' && a.outcome === 'assistant: answered') ||
               notes.find(a => a.attrs.mode === 'offline');
  if (!note) return null;
  return el('details', {class: 'note', 'data-testid': 'assistant-note'},
            el('summary', {}, note.attrs.mode === 'llm' ? 'Assistant\'s note (model ' + (note.attrs.model || '?') + ')'
                                                         : 'Assistant\'s note (deterministic)'),
            el('pre', {}, note.reason || ''));
}

// The assistant's notes (kind assistant_transcript) are not actions; the note is shown apart.
function isNote(a) { return a.attrs && a.attrs.kind === 'assistant_transcript'; }

function renderHealthy(box, dx, blind) {
  if (blind !== false && blind !== undefined) {
    box.className = 'card status sev-unknown';
    box.append(el('p', {class: 'headline', 'data-testid': 'diagnosis-class'}, 'Health unknown'),
               el('p', {class: 'summary'}, 'The agent cannot read the node (see above): no fault found is not health.'));
    return;
  }
  box.className = 'card status';
  box.append(el('p', {class: 'headline', 'data-testid': 'diagnosis-class'}, 'No fault needs action'),
             el('p', {class: 'summary'}, dx && dx.summary ? dx.summary : 'Every layer read is healthy.'));
}

function renderStatus(dx, nowNs, blind) {
  const box = document.getElementById('status');
  box.replaceChildren();
  if (!dx || dx.fault_class === 'none') return renderHealthy(box, dx, blind);
  box.className = 'card status sev-' + dx.severity;
  box.append(el('p', {class: 'headline'},
                el('span', {'data-testid': 'diagnosis-class'}, words(dx.fault_class)),
                el('span', {class: 'component', 'data-testid': 'diagnosis-component'}, dx.component.id)));
  const fact = (label, value, testid) => el('div', {class: 'fact'}, el('div', {class: 'label'}, label),
                                            el('div', {class: 'value', 'data-testid': testid}, value));
  const ago = duration(Math.max(Number(dx.last_ns), Number(nowNs) || 0) - dx.first_ns);
  box.append(el('div', {class: 'facts'},
                fact('Severity', el('span', {class: 'badge ' + dx.severity}, dx.severity), 'severity'),
                fact('Layer', LAYER_NAMES[dx.layer] || dx.layer, 'layer'),
                fact('Since', iso(dx.first_ns) + ' (' + ago + ' ago)', 'since'),
                fact('Confidence', Math.round(dx.confidence * 100) + '%', 'confidence')),
             el('p', {class: 'summary', 'data-testid': 'summary'}, dx.summary),
             el('div', {class: 'next', 'data-testid': 'next-action'}, el('div', {class: 'label'}, 'What happens next'),
                planList(dx)),
             assistantNote(dx));
}

// A Redfish payload is summarised in a line and expands to the whole JSON; any other line
// (kernel, NVML, sysfs) is shown as it was read.
function evidenceText(text) {
  const o = jsonObject(text);
  if (!o) return el('div', {class: 'text'}, text);
  return el('details', {class: 'raw', 'data-testid': 'evidence-json'}, el('summary', {}, redfishSummary(o)),
            el('pre', {}, JSON.stringify(o, null, 2)));
}

function renderEvidence(dx) {
  const list = document.getElementById('evidence');
  list.replaceChildren();
  for (const e of (dx && dx.evidence) || []) {
    list.append(el('li', {'data-testid': 'evidence-line'},
                   el('div', {class: 'when'}, iso(e.time_ns) + ' · ' + e.source + ' · ' + componentId(e.component) +
                                                  (e.count > 1 ? ' · ×' + e.count : '')),
                   evidenceText(e.text)));
  }
  if (!list.children.length) list.append(el('li', {class: 'muted'}, 'No evidence: nothing is wrong.'));
}

// Each ruled-out layer in a sentence made from its readings in the window (vocab.js); what
// the isolator quoted stays one click away.
function renderRuledOut(dx, rows) {
  const ruled = document.getElementById('ruled-out');
  ruled.replaceChildren();
  const until = dx && dx.last_ns ? Number(dx.last_ns) : Infinity;
  for (const r of (dx && dx.ruled_out) || []) {
    ruled.append(el('li', {'data-testid': 'ruled-out-line'}, el('b', {}, LAYER_NAMES[r.layer] || r.layer), ': ',
                    el('span', {class: 'sentence'}, ruledOutSentence(r.layer, rows, until)),
                    el('details', {class: 'quoted'}, el('summary', {}, 'as quoted'), el('div', {class: 'text'}, r.reason))));
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
  table('diagnoses', ['#', 'fault', 'component', 'recommended', 'severity', 'first', 'last'],
        list.map(d => el('tr', {class: d.id === activeId ? 'active' : ''},
                         el('td', {}, el('a', {href: '#' + d.id}, String(d.id))), el('td', {}, faultWords(d.fault_class)),
                         el('td', {}, d.component.id), el('td', {}, RECOMMENDED_WORDS[d.action] || words(d.action)),
                         el('td', {}, el('span', {class: 'badge ' + d.severity}, d.severity)), el('td', {}, iso(d.first_ns)),
                         el('td', {}, iso(d.last_ns)))));
}

const MAX_REASON = 200;  // longer reasons (ticket texts) expand on click

function reasonCell(text) {
  if (!text || text.length <= MAX_REASON) return el('td', {class: 'reason'}, text || '');
  return el('td', {class: 'reason'}, el('details', {}, el('summary', {}, text.slice(0, MAX_REASON) + '…'), text));
}

function actionRow(a) {
  const cls = a.attrs && a.attrs.class;
  const what = cls ? actionWords(cls) : a.attrs && a.attrs.kind === 'ack' ? 'Acknowledged' : capital(words(a.action));
  const state = a.attrs && STATE_WORDS[a.attrs.state] ? STATE_WORDS[a.attrs.state] : a.outcome;
  return el('tr', {}, el('td', {class: 'nowrap'}, iso(a.time_ns)), el('td', {}, what), el('td', {}, state),
            reasonCell(a.reason));
}

function renderActions(list) {
  table('actions', ['when', 'action', 'state', 'reason'], list.filter(a => !isNote(a)).map(actionRow));
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

// The window: the diagnosis with margins (5 min before, a quarter of its span after), else
// the last hour of the run.
function timelineWindow(dx, nowNs) {
  const now = Number(nowNs) || Date.now() * 1e6;
  if (!dx || !dx.first_ns) return [now - 3600e9, now];
  const span = Math.max(60e9, Number(dx.last_ns) - Number(dx.first_ns));
  const since = Number(dx.first_ns) - Math.max(300e9, span);
  let until = Math.min(now, Number(dx.last_ns) + Math.max(120e9, span / 4));
  if (until <= since) until = since + span;
  return [since, until];
}

async function load() {
  const node = await get('/api/v1/node');
  renderHeader(node);
  renderBlind(node);
  const [list, acts] = await Promise.all([get('/api/v1/diagnoses?limit=100'), get('/api/v1/actions?limit=100')]);
  const wanted = Number(location.hash.slice(1)) || (node.active_diagnosis ? node.active_diagnosis.id : 0);
  // By id: the diagnosis with its plan, its actions and the kinds of reading that show it.
  const dx = wanted ? await get('/api/v1/diagnoses/' + wanted) : null;
  renderStatus(dx, node.now_ns, node.blind);
  renderEvidence(dx);
  renderDiagnoses(list.diagnoses, dx ? dx.id : 0);
  renderActions(acts.actions);
  const [since, until] = timelineWindow(dx, node.now_ns);
  const rows = await observations(Math.round(since), Math.round(until));
  renderTimeline(rows, dx, since, until, node.now_ns);
  renderRuledOut(dx, rows);
  document.body.dataset.loaded = 'true';
}

window.addEventListener('hashchange', () => load().catch(showError));
load().catch(showError);
