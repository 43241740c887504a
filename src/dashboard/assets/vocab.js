// The dashboard's words: what the API's names mean to someone on call. Actions, ledger
// states and observation kinds are closed sets in the C++ (actions/actuator.h,
// policy/ledger.h, core/types.h); tests/dashboard/dashboard_test.cc fails when a name
// there has no entry here, so a new one cannot reach the page as a raw identifier.
'use strict';

// actions::ActionClass names -> one line of what happens (c: the diagnosed component's id,
// when known).
const ACTION_WORDS = {
  cordon: () => 'cordon the node (no new work)',
  drain: () => 'drain the node',
  reset_gpu: c => 'reset the GPU' + (c ? ' (' + c + ')' : ''),
  reboot_node: () => 'reboot the node',
  rma_bundle: c => 'RMA bundle for the vendor' + (c ? ' (' + c + ')' : ''),
  facility_ticket: () => 'ticket to facilities',
  webhook: () => 'webhook to on-call',
  notify_user: () => 'tell the job\'s owner',
};

// core Action names (the isolator's recommendation, the store's `action` column).
const RECOMMENDED_WORDS = {
  none: 'nothing', monitor: 'watch it', notify_user: 'tell the job\'s owner', restart_job: 'restart the job',
  driver_upgrade: 'upgrade the driver', reseat_or_replace_link: 'reseat or replace the link',
  facility_ticket: 'ticket to facilities', reset_gpu: 'reset the GPU', reboot_node: 'reboot the node',
  cordon: 'cordon the node', drain: 'drain the node', rma: 'return the part (RMA)',
};

// policy::State names (attrs.state of an action row) -> where the step stands.
const STATE_WORDS = {
  decided: 'starting',
  done: 'done',
  failed: 'failed; retrying',
  held_by_breaker: 'held: the fleet breaker is tripped',
  held_by_cooldown: 'held: cool-down since the last one',
  dry_run: 'dry run: not carried out',
  refused: 'refused by a safety rule',
  no_actuator: 'nothing configured carries it out',
  resolved: 'resolved by an operator',
  held_for_fleet: 'waiting for the fleet\'s verdict',
  superseded_by_fleet: 'replaced by the fleet\'s action',
  held_until_settled: 'waiting for the diagnosis to settle',
  withdrawn: 'withdrawn: the diagnosis changed first',
};

const HEALTH = {0: 'OK', 1: 'Warning', 2: 'Critical', '-1': 'unknown'};

// core ObsKind names. type: event (a log line or entry, not a reading), state (a level with
// names; drawn as steps), flag (0/1; steps), counter (cumulative; steps), gauge (a measured
// quantity; lines), none (nothing to say). label: what the reading is; unit; ok: the
// healthy level of a state; quiet: a counter that counts traffic, not errors.
const KINDS = {
  xid: {type: 'event'}, sxid: {type: 'event'}, xid_recovery_action: {type: 'event'},
  gpu_fell_off_bus: {type: 'event'}, host_memory_error: {type: 'event'}, app_fault: {type: 'event'},
  kernel_hang: {type: 'event'}, driver_error: {type: 'event'}, nic_event: {type: 'event'},
  amdgpu_event: {type: 'event'}, sel_entry: {type: 'event'}, gpu_lost: {type: 'event'},
  pcie_aer: {type: 'counter', label: 'PCIe AER errors'},
  psu_state: {type: 'state', label: 'PSU health', states: HEALTH, ok: 0},
  temperature: {type: 'gauge', label: 'temperature', unit: '°C'},
  voltage: {type: 'gauge', label: 'voltage', unit: 'V'},
  power: {type: 'gauge', label: 'power', unit: 'W'},
  power_capacity: {type: 'gauge', label: 'power capacity', unit: 'W'},
  fan_speed: {type: 'gauge', label: 'fan speed', unit: 'RPM'},
  fan_state: {type: 'state', label: 'fan health', states: HEALTH, ok: 0},
  coolant_temp: {type: 'gauge', label: 'coolant temperature', unit: '°C'},
  coolant_flow: {type: 'gauge', label: 'coolant flow', unit: 'L/min'},
  pump_state: {type: 'state', label: 'pump health', states: HEALTH, ok: 0},
  leak: {type: 'state', label: 'leak detector', states: {0: 'dry', 1: 'warning', 2: 'leak'}, ok: 0},
  health: {type: 'state', label: 'BMC health', states: HEALTH, ok: 0},
  ecc_sbe: {type: 'counter', label: 'corrected ECC errors'},
  ecc_dbe: {type: 'counter', label: 'uncorrectable ECC errors'},
  row_remap_correctable: {type: 'counter', label: 'rows remapped for corrected errors'},
  row_remap_uncorrectable: {type: 'counter', label: 'rows remapped for uncorrectable errors'},
  row_remap_pending: {type: 'flag', label: 'row remap pending', states: {0: 'no', 1: 'pending'}, ok: 0},
  row_remap_failure: {type: 'flag', label: 'row remap failure', states: {0: 'no', 1: 'failed'}, ok: 0},
  retired_pages: {type: 'counter', label: 'retired pages'},
  retired_pages_pending: {type: 'flag', label: 'page retirement pending', states: {0: 'no', 1: 'pending'}, ok: 0},
  clock_throttle: {type: 'flag', label: 'clock throttling', ok: 0},
  clock: {type: 'gauge', label: 'clock', unit: 'MHz'},
  power_limit: {type: 'gauge', label: 'power limit', unit: 'W'},
  gpu_identity: {type: 'none'},
  pcie_replay: {type: 'counter', label: 'PCIe replays'},
  pcie_link_width: {type: 'gauge', label: 'PCIe link width', format: v => 'x' + v},
  pcie_link_speed: {type: 'gauge', label: 'PCIe link speed', unit: 'GT/s'},
  pcie_link_gen: {type: 'gauge', label: 'PCIe generation', format: v => 'Gen ' + v},
  nvlink_state: {type: 'state', label: 'NVLink', states: {0: 'down', 1: 'up'}, ok: 1},
  nvlink_crc_flit: {type: 'counter', label: 'NVLink CRC flit errors'},
  nvlink_crc_data: {type: 'counter', label: 'NVLink CRC data errors'},
  nvlink_replay: {type: 'counter', label: 'NVLink replays'},
  nvlink_recovery: {type: 'counter', label: 'NVLink recoveries'},
  ib_port_state: {type: 'state', label: 'IB port', states: {1: 'DOWN', 2: 'INIT', 3: 'ARMED', 4: 'ACTIVE', 5: 'ACTIVE_DEFER'}, ok: 4},
  ib_rate: {type: 'gauge', label: 'IB rate', unit: 'Gb/s'},
  ib_symbol_error: {type: 'counter', label: 'IB symbol errors'},
  ib_link_error_recovery: {type: 'counter', label: 'IB link error recoveries'},
  ib_link_downed: {type: 'counter', label: 'IB link-down events'},
  ib_rcv_error: {type: 'counter', label: 'IB receive errors'},
  ib_link_integrity: {type: 'counter', label: 'IB link integrity errors'},
  ib_xmit_discards: {type: 'counter', label: 'IB transmit discards'},
  roce_counter: {type: 'counter', label: 'RoCE counter', quiet: true},
  eth_counter: {type: 'counter', label: 'Ethernet counter', quiet: true},
  eth_link_state: {type: 'state', label: 'Ethernet link', states: {0: 'down', 1: 'up'}, ok: 1},
  eth_speed: {type: 'gauge', label: 'Ethernet speed', unit: 'Gb/s'},
  step_time: {type: 'gauge', label: 'step time', unit: 's'},
  throughput: {type: 'gauge', label: 'throughput'},
  other: {type: 'none'},
};

function kindInfo(kind) { return KINDS[kind] || {type: 'none'}; }

// States, flags and counters hold their value until the next reading (the store keeps a
// reading once per change): a line between two of them would invent values in between.
function isStepKind(kind) { return ['state', 'flag', 'counter'].includes(kindInfo(kind).type); }

function number(v) {
  const a = Math.abs(v);
  if (a >= 1e4 || Number.isInteger(v)) return Math.round(v).toLocaleString('en-US');
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : String(Number(v.toPrecision(3)));
}

// A reading in words: "76 °C", "x16", "Gen 5", "ACTIVE", "0x88".
function reading(kind, v, attrs) {
  const k = kindInfo(kind);
  if (k.states && k.states[v] !== undefined) return k.states[v];
  if (kind === 'clock_throttle') return v ? '0x' + Math.round(v).toString(16) : 'none';
  if (k.format) return k.format(number(v));
  const unit = kind === 'fan_speed' && attrs && attrs.units === '%' ? '%' : k.unit;
  return number(v) + (unit ? ' ' + unit : '');
}

// ---- Redfish JSON in evidence ---------------------------------------------------------

// "LastPowerOutputWatts" -> ["last power output", "W"].
const REDFISH_UNITS = [['Watts', 'W'], ['Voltage', 'V'], ['Volts', 'V'], ['Celsius', '°C'], ['LitersPerMinute', 'L/min'],
                       ['RPM', 'RPM'], ['Percent', '%']];
function redfishField(key) {
  for (const [suffix, unit] of REDFISH_UNITS) {
    if (key.endsWith(suffix) && key.length > suffix.length) {
      const name = key.slice(0, -suffix.length).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
      return [name, unit];
    }
  }
  return null;
}

function redfishReadings(o) {
  const out = [];
  for (const [key, v] of Object.entries(o)) {
    const f = typeof v === 'number' ? redfishField(key) : null;
    if (f) out.push(f[0] + ' ' + number(v) + ' ' + f[1]);
  }
  if (typeof o.Reading === 'number') out.push('reading ' + number(o.Reading) + (o.ReadingUnits ? ' ' + o.ReadingUnits : ''));
  return out;
}

function redfishStatus(o) {
  const s = o.Status || {};
  const parts = [];
  if (o.DetectorState) parts.push('detector ' + o.DetectorState);
  if (s.Health) parts.push('health ' + s.Health);
  if (s.State) parts.push('state ' + s.State);
  return parts;
}

// One line for a Redfish resource or log entry: its message, or its name, status and
// readings with units. Serials, links and @odata fields stay in the expandable JSON.
function redfishSummary(o) {
  const type = String(o['@odata.type'] || '').replace(/^#/, '').split('.')[0];
  if (o.Message) {
    const sev = [o.Severity, o.MessageId].filter(Boolean).join(', ');
    return (type === 'LogEntry' ? 'Log entry: ' : '') + o.Message + (sev ? ' (' + sev + ')' : '');
  }
  const head = o.Name || o.Id || type.replace(/([a-z])([A-Z])/g, '$1 $2');
  const rest = redfishStatus(o).concat(redfishReadings(o));
  return head.trim() + (rest.length ? ': ' + rest.join(', ') : '');
}

// The object when an evidence text is a JSON object (a Redfish payload), else null.
function jsonObject(text) {
  if (typeof text !== 'string' || !text.startsWith('{')) return null;
  try {
    const o = JSON.parse(text);
    return o && typeof o === 'object' && !Array.isArray(o) ? o : null;
  } catch (_) {
    return null;
  }
}

// ---- Ruled-out layers in sentences ------------------------------------------------------

// Attributes that tell two series of one component and kind apart (the store's own list is
// src/store/series.cc; "point" splits coolant supply from return for display).
const SERIES_ATTRS = ['counter', 'location', 'cause', 'sensor', 'clock', 'metric', 'scope', 'error', 'severity', 'role',
                      'data_source', 'units', 'redundancy', 'message_id', 'origin', 'point'];

function seriesKey(o) {
  const a = o.attrs || {};
  return [o.source, o.component.id, o.kind].concat(SERIES_ATTRS.map(n => a[n] || '')).join('|');
}

// The newest reading of each series in `rows` at or before `until`.
function latestReadings(rows, until) {
  const latest = new Map();
  for (const o of rows) {
    if (typeof o.value !== 'number' || Number(o.time_ns) > until) continue;
    const t = kindInfo(o.kind).type;
    if (t === 'event' || t === 'none' || kindInfo(o.kind).quiet) continue;
    latest.set(seriesKey(o), o);
  }
  return [...latest.values()];
}

// core ComponentType names -> a plural noun ("across 8 GPUs").
const PARTS = {gpu: 'GPUs', psu: 'PSUs', fan: 'fans', sensor: 'sensors', coolant: 'coolant parts', pcie: 'PCIe devices',
               nvlink: 'links', nvswitch: 'NVSwitches', ib: 'IB ports', chassis: 'chassis', host: 'hosts',
               roce: 'RoCE ports', eth: 'interfaces'};

// "8 GPUs", "34 parts" (mixed types); "" for one part.
function partsOf(list) {
  const ids = new Set(list.map(o => o.component.id));
  if (ids.size < 2) return '';
  const types = new Set(list.map(o => o.component.type));
  return ids.size + ' ' + (types.size === 1 && PARTS[[...types][0]] ? PARTS[[...types][0]] : 'parts');
}

function gaugePhrase(kind, list) {
  const vals = list.map(o => o.value);
  const lo = Math.min(...vals), hi = Math.max(...vals);
  const a = list[0].attrs;
  const range = lo === hi            ? reading(kind, lo, a)
                : kindInfo(kind).format ? reading(kind, lo, a) + ' to ' + reading(kind, hi, a)
                                        : number(lo) + '–' + reading(kind, hi, a);
  const parts = partsOf(list);
  return kindInfo(kind).label + ' ' + range + (parts ? ' across ' + parts : '');
}

function levelPhrase(kind, list) {
  const k = kindInfo(kind);
  const bad = list.filter(o => o.value !== k.ok);
  if (!bad.length) {
    const parts = partsOf(list);
    if (k.type === 'flag') return null;
    return k.label + ' ' + reading(kind, k.ok) + (parts ? ' on all ' + parts : '');
  }
  return k.label + ' ' + bad.map(o => reading(kind, o.value, o.attrs) + ' on ' + o.component.id).join(', ');
}

const MAX_LISTED = 3;  // parts named one by one; more are counted

function counterPhrase(kind, list) {
  const worst = new Map();
  for (const o of list) worst.set(o.component.id, Math.max(worst.get(o.component.id) || 0, o.value));
  const hit = [...worst].filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  const label = kindInfo(kind).label;
  if (!hit.length) return null;
  if (hit.length > MAX_LISTED) {
    return label + ' on ' + partsOf(list.filter(o => o.value > 0)) + ' (most: ' + number(hit[0][1]) + ' on ' + hit[0][0] + ')';
  }
  return label + ' ' + hit.map(([c, v]) => number(v) + ' on ' + c).join(', ');
}

// A phrase for one kind of reading on one type of part; null for a counter at zero or a
// flag down everywhere (those are listed together: "no PCIe replays, ... or IB symbol errors").
function kindPhrase(kind, list) {
  const t = kindInfo(kind).type;
  if (t === 'gauge') return gaugePhrase(kind, list);
  if (t === 'counter') return counterPhrase(kind, list);
  return levelPhrase(kind, list);
}

// The newest readings grouped by kind and type of part, in KINDS order: the chassis' power
// capacity and a PSU's are two statements.
function readingGroups(layer, rows, until) {
  const groups = new Map();
  for (const o of latestReadings(rows.filter(r => r.layer === layer), until)) {
    const key = o.kind + '|' + o.component.type;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(o);
  }
  const order = Object.keys(KINDS);
  return [...groups.values()].sort((a, b) => order.indexOf(a[0].kind) - order.indexOf(b[0].kind));
}

function orList(items) {
  return items.length < 2 ? items.join('') : items.slice(0, -1).join(', ') + ' or ' + items[items.length - 1];
}

const MAX_PHRASES = 8;

// "No fault: temperature 70–79 °C across 8 GPUs; power 700 W across 8 GPUs; no corrected
// ECC errors, ... or rows remapped for uncorrectable errors."
function ruledOutSentence(layer, rows, until) {
  const groups = readingGroups(layer, rows, until);
  if (!groups.length) return 'No fault found; its sources answered with nothing wrong.';
  const said = [], none = [];
  for (const list of groups) {
    const p = kindPhrase(list[0].kind, list);
    if (p !== null) said.push(p);
    else if (!none.includes(kindInfo(list[0].kind).label)) none.push(kindInfo(list[0].kind).label);
  }
  const parts = said.slice(0, MAX_PHRASES);
  if (said.length > MAX_PHRASES) parts.push('and ' + (said.length - MAX_PHRASES) + ' more readings in range');
  if (none.length) parts.push('no ' + orList(none));
  return 'No fault: ' + parts.join('; ') + '.';
}
