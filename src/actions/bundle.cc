#include "actions/bundle.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/json.h"
#include "core/time.h"
#include "store/store.h"

namespace faultline::actions {
namespace {

using FC = FaultClass;

// ---- text hygiene -------------------------------------------------------------------

// One line: control characters (newlines included) become spaces.
std::string OneLine(std::string_view text, size_t limit = 4096) {
  std::string out;
  out.reserve(std::min(text.size(), limit));
  for (char c : text) {
    if (out.size() >= limit) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7f ? ' ' : c);
  }
  return out;
}

// Safe in a Markdown table cell or list item: one line, no HTML, no cell breaks.
std::string Md(std::string_view text) {
  std::string out;
  for (char c : OneLine(RedactSecrets(text), 1024)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '`') {
      out += "'";
    } else {
      out.push_back(c);
    }
  }
  return out.empty() ? "-" : out;
}

// RFC 4180 field.
std::string Csv(std::string_view text) {
  std::string v = OneLine(RedactSecrets(text), 1024);
  if (v.find_first_of(",\"") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out.push_back(c);
  }
  return out + "\"";
}

std::string Num(double v) {
  std::ostringstream ss;
  ss.precision(12);
  ss << v;
  return ss.str();
}

std::string Iso(int64_t ns) { return ns == 0 ? "unknown" : FormatIso8601(ns); }

bool IsSecretKey(std::string_view lower_text, size_t at, size_t& key_end) {
  static constexpr std::string_view kKeys[] = {"password", "passwd", "x-auth-token", "authorization", "api_key",
                                               "apikey",   "secret", "token",        "bearer"};
  for (std::string_view k : kKeys) {
    if (lower_text.substr(at, k.size()) == k) {
      key_end = at + k.size();
      return true;
    }
  }
  return false;
}

// ---- cause groups -------------------------------------------------------------------

std::string_view GroupAdvice(CauseGroup g) {
  switch (g) {
    case CauseGroup::kFacility:
      return "a physical cause (power, cooling or leak): use `faultline facility-ticket`, never a GPU RMA";
    case CauseGroup::kUserProgram:
      return "the user's program: notify the job's owner; no part is at fault";
    case CauseGroup::kNotHardware:
      return "not a failed part (driver/firmware software, workload or no fault): no RMA";
    case CauseGroup::kPart:
      return "a failed part: use `faultline rma-bundle`, not a facility ticket";
  }
  return "";
}

std::string_view KindName(BundleKind k) { return k == BundleKind::kRma ? "RMA bundle" : "facility ticket"; }

// ---- what to read from the store ----------------------------------------------------

bool IsPartCounter(ObsKind k) {
  switch (k) {
    case ObsKind::kEccSbe:
    case ObsKind::kEccDbe:
    case ObsKind::kRowRemapCorrectable:
    case ObsKind::kRowRemapUncorrectable:
    case ObsKind::kRowRemapPending:
    case ObsKind::kRowRemapFailure:
    case ObsKind::kRetiredPages:
    case ObsKind::kRetiredPagesPending:
    case ObsKind::kPcieReplay:
    case ObsKind::kPcieAer:
    case ObsKind::kPcieLinkWidth:
    case ObsKind::kPcieLinkSpeed:
    case ObsKind::kPcieLinkGen:
    case ObsKind::kNvlinkCrcFlit:
    case ObsKind::kNvlinkCrcData:
    case ObsKind::kNvlinkReplay:
    case ObsKind::kNvlinkRecovery:
    case ObsKind::kNvlinkState:
    case ObsKind::kIbSymbolError:
    case ObsKind::kIbLinkErrorRecovery:
    case ObsKind::kIbLinkDowned:
    case ObsKind::kIbRcvError:
    case ObsKind::kIbLinkIntegrity:
    case ObsKind::kIbXmitDiscards:
    case ObsKind::kXid:
    case ObsKind::kSxid:
    case ObsKind::kGpuFellOffBus:
    case ObsKind::kGpuLost:
      return true;
    default:
      return false;
  }
}

bool IsPhysicalReading(ObsKind k) {
  switch (k) {
    case ObsKind::kPsuState:
    case ObsKind::kTemperature:
    case ObsKind::kVoltage:
    case ObsKind::kPower:
    case ObsKind::kPowerCapacity:
    case ObsKind::kFanSpeed:
    case ObsKind::kFanState:
    case ObsKind::kCoolantTemp:
    case ObsKind::kCoolantFlow:
    case ObsKind::kPumpState:
    case ObsKind::kLeak:
    case ObsKind::kHealth:
      return true;
    default:
      return false;
  }
}

// The identity keys that tie an observation to the diagnosed part.
struct PartMatch {
  std::string id;         // "gpu/3"
  std::string gpu_index;  // "3" for gpu/3 and nvlink/3/11
  std::string bdf;        // PCI bus id when known
  std::string serial;
  std::string uuid;

  // The part's own rows and its device's: a GPU's NVLink links are its counters, not its identity.
  bool Matches(const ComponentRef& c) const {
    if (!gpu_index.empty() && c.Id().rfind("nvlink/" + gpu_index + "/", 0) == 0) return true;
    return Identifies(c);
  }

  // The same device: its serial, model and versions are the part's.
  bool Identifies(const ComponentRef& c) const {
    const std::string cid = c.Id();
    if (cid == id) return true;
    if (!gpu_index.empty() && cid == "gpu/" + gpu_index) return true;
    auto key = [&](const char* k) {
      auto it = c.keys.find(k);
      return it == c.keys.end() ? std::string() : it->second;
    };
    if (!bdf.empty() && (key("bdf") == bdf || cid == "pcie/" + bdf)) return true;
    if (!serial.empty() && key("serial") == serial) return true;
    if (!uuid.empty() && key("uuid") == uuid) return true;
    return false;
  }
};

PartMatch MatchFor(const ComponentRef& c) {
  PartMatch m;
  m.id = c.Id();
  if (c.type == ComponentType::kGpu) m.gpu_index = c.name;
  if (c.type == ComponentType::kNvlink) m.gpu_index = c.name.substr(0, c.name.find('/'));
  if (c.type == ComponentType::kPcie) m.bdf = c.name;
  auto key = [&](const char* k) {
    auto it = c.keys.find(k);
    return it == c.keys.end() ? std::string() : it->second;
  };
  if (m.bdf.empty()) m.bdf = key("bdf");
  m.serial = key("serial");
  m.uuid = key("uuid");
  return m;
}

// Facts about the whole node a source or an operator may record, by attribute name. A part's
// own versions (VBIOS, firmware, part number) are the part's (PartFields), never the node's:
// another GPU's VBIOS must not land in this GPU's bundle.
constexpr std::string_view kFactKeys[] = {"driver_version",       "cuda_driver_version", "bmc_firmware",
                                          "bmc_firmware_version", "kernel_version",      "os_version"};

// What names a part for its vendor, by canonical field: the attribute names a source may
// store it under on the part's observations (NVML's gpu_identity, an operator's import) and
// the property of the Redfish resource the BMC served for it (kept as the reading's raw JSON).
struct PartField {
  std::string_view field;
  std::string_view label;
  std::vector<std::string_view> attrs;
  std::string_view redfish;  // empty: not a Redfish property
};

const std::vector<PartField>& PartFields() {
  static const std::vector<PartField> kFields = {
      {"model", "Model", {"model"}, "Model"},
      {"manufacturer", "Manufacturer", {"manufacturer"}, "Manufacturer"},
      {"serial", "Serial number", {"serial"}, "SerialNumber"},
      {"board_part_number", "Board part number", {"board_part_number", "part_number"}, "PartNumber"},
      {"part_number", "Part number", {"part_number", "board_part_number"}, "PartNumber"},
      {"uuid", "UUID", {"uuid"}, ""},
      {"bdf", "PCI bus id", {"bdf"}, ""},
      {"pci_id", "PCI vendor:device", {"pci_id"}, ""},
      {"vbios_version", "VBIOS version", {"vbios_version", "vbios"}, ""},
      {"inforom_version", "InfoROM version", {"inforom_version"}, ""},
      {"firmware_version", "Firmware version", {"firmware_version", "gpu_firmware"}, "FirmwareVersion"},
      {"driver_version", "Driver version", {}, ""},  // the node's (kFactKeys)
  };
  return kFields;
}

// The fields an RMA names for each kind of part, in table order; each is written "not
// recorded" when the store lacks it. Optional ones (InfoROM) appear only when recorded.
std::vector<std::string_view> RequiredFields(ComponentType t) {
  switch (t) {
    case ComponentType::kGpu:
    case ComponentType::kNvlink:
      return {"model", "serial", "board_part_number", "uuid", "bdf", "pci_id", "vbios_version", "driver_version"};
    case ComponentType::kPsu:
    case ComponentType::kFan:
    case ComponentType::kCoolant:
    case ComponentType::kSensor:
    case ComponentType::kChassis:
      return {"model", "manufacturer", "serial", "part_number", "firmware_version"};
    default:
      return {"model", "serial", "part_number", "uuid", "bdf", "pci_id", "firmware_version", "driver_version"};
  }
}

// A BMC-side part (PSU, fan, ...) whose readings the RMA carries instead of GPU counters.
bool IsBmcPart(ComponentType t) {
  return t == ComponentType::kPsu || t == ComponentType::kFan || t == ComponentType::kCoolant;
}

// Location keys a topology file or the BMC may attach (facility ticket).
constexpr std::string_view kLocationKeys[] = {"site", "room",    "row",        "rack", "pdu",
                                              "feed", "circuit", "line_input", "loop", "cooling_loop",
                                              "cdu",  "chassis", "origin"};

bool IsLocationKey(std::string_view key) {
  return std::find(std::begin(kLocationKeys), std::end(kLocationKeys), key) != std::end(kLocationKeys);
}

struct StoreView {
  int64_t diagnosis_id = 0;
  std::string node;
  Diagnosis dx;
  int64_t since_ns = 0;
  int64_t until_ns = 0;
  std::vector<Observation> history;   // the node's newest observations, oldest first
  std::vector<Observation> identity;  // the part's identity rows, however old (history may not reach them)
  std::vector<Observation> kernel;    // kernel lines in the window
  std::vector<Observation> sel;       // SEL entries in the window
  std::vector<ActionRecord> notes;    // the assistant's notes for the diagnosis, oldest first
  bool kernel_truncated = false;
  bool sel_truncated = false;
  bool history_truncated = false;
  size_t bad_rows = 0;
};

Result<Row<Diagnosis>> PickDiagnosis(Store& store, BundleKind kind, const BundleOptions& options) {
  RecordQuery q;
  q.node = options.node;
  q.limit = 0;
  auto rows = store.ListDiagnoses(q);
  if (!rows.ok()) return rows.status();
  if (options.diagnosis_id) {
    for (auto& row : rows->rows) {
      if (row.id == *options.diagnosis_id) return std::move(row);
    }
    return Status(StatusCode::kNotFound, "no diagnosis #" + std::to_string(*options.diagnosis_id) + " in the store" +
                                             (options.node ? " for node " + *options.node : ""));
  }
  const CauseGroup want = kind == BundleKind::kRma ? CauseGroup::kPart : CauseGroup::kFacility;
  const Row<Diagnosis>* best = nullptr;
  for (const auto& row : rows->rows) {
    if (GroupOf(row.value.fault_class) == want && (best == nullptr || row.id > best->id)) best = &row;
  }
  if (best == nullptr) {
    return Status(StatusCode::kNotFound, std::string("no stored diagnosis calls for ") +
                                             (kind == BundleKind::kRma ? "an " : "a ") + std::string(KindName(kind)) +
                                             (options.node ? " on node " + *options.node : "") +
                                             "; name one with --diagnosis ID");
  }
  return *best;
}

// Newest `limit` matching rows, returned oldest first; `truncated` when the limit was hit.
Result<std::vector<Observation>> Newest(Store& store, ObservationQuery q, size_t limit, bool& truncated,
                                        size_t& bad_rows) {
  q.limit = limit + 1;
  q.newest_first = true;
  auto rows = store.QueryObservations(q);
  if (!rows.ok()) return rows.status();
  bad_rows += rows->bad_rows.size();
  truncated = rows->rows.size() > limit;
  if (truncated) rows->rows.resize(limit);
  std::vector<Observation> out;
  out.reserve(rows->rows.size());
  for (auto it = rows->rows.rbegin(); it != rows->rows.rend(); ++it) out.push_back(std::move(it->value));
  return out;
}

// What no plan and no operator makes right: an RMA for a user program or a fault that is no
// failed part, or returning anything but the failing PSU/fan itself for a power, cooling or
// leak cause (never a GPU); a facility ticket for a user program or a non-hardware fault.
bool BreaksTheFloor(BundleKind kind, const Diagnosis& d) {
  const CauseGroup group = GroupOf(d.fault_class);
  if (group == CauseGroup::kUserProgram || group == CauseGroup::kNotHardware) return true;
  if (kind == BundleKind::kRma && group == CauseGroup::kFacility) {
    return d.component.type != ComponentType::kPsu && d.component.type != ComponentType::kFan;
  }
  return false;
}

// The rows that name the diagnosed part, read on their own: a series is stored once per
// change, so a GPU's identity may be older than the newest history rows. NVML's gpu_identity
// rows for a GPU-side part; the part's own rows for anything else (a PSU's Redfish resource).
Result<std::vector<Observation>> IdentityRows(Store& store, const StoreView& v) {
  constexpr size_t kMaxIdentityRows = 200;
  ObservationQuery q;
  q.node = v.node;
  q.include_seen = false;
  bool truncated = false;
  size_t bad_rows = 0;
  switch (v.dx.component.type) {
    case ComponentType::kGpu:
    case ComponentType::kNvlink:
    case ComponentType::kPcie:
      q.kind = ObsKind::kGpuIdentity;
      break;
    default:
      q.component = v.dx.component.Id();
      break;
  }
  return Newest(store, q, kMaxIdentityRows, truncated, bad_rows);
}

Result<StoreView> ReadStore(Store& store, BundleKind kind, const BundleOptions& options) {
  if (options.warrant != Warrant::kFaultClass && !options.diagnosis_id) {
    return Status(StatusCode::kInvalidArgument, "a bundle warranted by the action plan names its diagnosis id");
  }
  auto row = PickDiagnosis(store, kind, options);
  if (!row.ok()) return row.status();
  StoreView v;
  v.diagnosis_id = row->id;
  v.node = row->node;
  v.dx = row->value;
  const CauseGroup group = GroupOf(v.dx.fault_class);
  const CauseGroup want = kind == BundleKind::kRma ? CauseGroup::kPart : CauseGroup::kFacility;
  // A caller that checked the action plan (or an operator's --force) has judged already: the
  // plan may return a PSU or send a cable fault to facilities, which the fault class alone would
  // not. Only the hard floor holds then (BreaksTheFloor).
  const bool refuse = options.warrant == Warrant::kFaultClass ? group != want : BreaksTheFloor(kind, v.dx);
  if (refuse) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(kind == BundleKind::kRma ? "refusing an " : "refusing a ") + std::string(KindName(kind)) +
                      " for diagnosis #" + std::to_string(v.diagnosis_id) + " (" +
                      std::string(ToString(v.dx.fault_class)) + " on " + v.dx.component.Id() + "): the cause is " +
                      std::string(GroupAdvice(group)));
  }
  const int64_t first = v.dx.first_ns != 0 ? v.dx.first_ns : v.dx.last_ns;
  const int64_t last = v.dx.last_ns != 0 ? v.dx.last_ns : first;
  v.since_ns = first != 0 ? first - options.window_pad_ns : std::numeric_limits<int64_t>::min();
  v.until_ns = last != 0 ? last + options.window_pad_ns : std::numeric_limits<int64_t>::max();

  ObservationQuery all;
  all.node = v.node;
  auto history = Newest(store, all, options.max_counter_rows, v.history_truncated, v.bad_rows);
  if (!history.ok()) return history.status();
  v.history = std::move(history).value();
  auto identity = IdentityRows(store, v);
  if (!identity.ok()) return identity.status();
  v.identity = std::move(identity).value();

  ObservationQuery kq;
  kq.node = v.node;
  kq.source = Source::kKmsg;
  kq.since_ns = v.since_ns;
  kq.until_ns = v.until_ns;
  if (kind == BundleKind::kRma) {
    auto kernel = Newest(store, kq, options.max_lines, v.kernel_truncated, v.bad_rows);
    if (!kernel.ok()) return kernel.status();
    v.kernel = std::move(kernel).value();
  }
  ObservationQuery sq = kq;
  sq.source.reset();
  sq.kind = ObsKind::kSelEntry;
  auto sel = Newest(store, sq, options.max_lines, v.sel_truncated, v.bad_rows);
  if (!sel.ok()) return sel.status();
  v.sel = std::move(sel).value();
  // The assistant's notes (docs/assistant.md "In the agent"): action rows of kind
  // assistant_transcript linked to this diagnosis, the deterministic one and a model's.
  RecordQuery nq;
  nq.node = v.node;
  nq.limit = 0;
  auto actions = store.ListActions(nq);
  if (!actions.ok()) return actions.status();
  for (auto& row : actions->rows) {
    auto kind = row.value.attrs.find("kind");
    if (row.value.diagnosis_id != v.diagnosis_id || kind == row.value.attrs.end() ||
        kind->second != "assistant_transcript") {
      continue;
    }
    v.notes.push_back(std::move(row.value));
  }
  return v;
}

// ---- the files ----------------------------------------------------------------------

std::string RawLine(const Observation& o) {
  std::string when = Iso(o.time_ns);
  if (o.mono_us) when += " [" + Num(static_cast<double>(*o.mono_us) / 1e6) + "]";
  const std::string& text = o.raw.empty() ? o.text : o.raw;
  std::string line = when + " " + OneLine(RedactSecrets(text));
  if (o.count > 1) line += " (x" + std::to_string(o.count) + ")";
  return line + "\n";
}

std::string RawFile(const std::vector<Observation>& rows, bool truncated, const std::string& what, const StoreView& v) {
  std::string out = "# " + what + " of node " + OneLine(v.node) + " from " + Iso(v.since_ns) + " to " +
                    Iso(v.until_ns) + " (UTC; [seconds since boot] where the source gave it)\n";
  if (truncated) out += "# only the newest " + std::to_string(rows.size()) + " lines of the window are included\n";
  if (rows.empty()) out += "# none stored for this window\n";
  for (const Observation& o : rows) out += RawLine(o);
  return out;
}

std::string CounterName(const Observation& o) {
  std::string name(ToString(o.kind));
  for (const char* k : {"counter", "location", "link", "port"}) {
    auto it = o.attrs.find(k);
    if (it != o.attrs.end() && !it->second.empty()) name += ":" + it->second;
  }
  if (o.code) name += ":" + std::to_string(*o.code);
  return name;
}

std::string CsvRows(const std::vector<const Observation*>& rows) {
  std::string out = "time_utc,component,kind,name,value,text,source\n";
  for (const Observation* o : rows) {
    out += Iso(o->time_ns) + "," + Csv(o->component.Id()) + "," + std::string(ToString(o->kind)) + "," +
           Csv(CounterName(*o)) + "," + (o->value ? Num(*o->value) : std::string()) + "," + Csv(o->text) + "," +
           std::string(ToString(o->source)) + "\n";
  }
  return out;
}

struct Latest {
  const Observation* first = nullptr;
  const Observation* last = nullptr;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  uint64_t events = 0;  // samples without a value (log events): counted, not tabled
};

std::map<std::pair<std::string, std::string>, Latest> LatestBySeries(const std::vector<const Observation*>& rows) {
  std::map<std::pair<std::string, std::string>, Latest> out;
  for (const Observation* o : rows) {
    Latest& l = out[{o->component.Id(), CounterName(*o)}];
    if (l.first == nullptr) l.first = o;
    l.last = o;
    if (o->value) {
      l.min = std::min(l.min, *o->value);
      l.max = std::max(l.max, *o->value);
    } else {
      l.events += o->count;
    }
  }
  return out;
}

std::string Fact(std::string_view value) { return OneLine(RedactSecrets(value), 256); }

std::string Str(const Json& j, std::string_view key) {
  auto it = j.find(std::string(key));
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The part's identity and versions by canonical field (PartFields), newest value wins: the
// keys and attributes of the same device's rows (NVML's gpu_identity names the model "name"),
// and for a Redfish reading the resource the BMC served, kept as its raw JSON. Then the
// diagnosis' own component keys, and the node's driver version.
std::map<std::string, std::string> PartIdentity(const StoreView& v, const PartMatch& part,
                                                const std::map<std::string, std::string>& node_facts) {
  std::vector<const Observation*> rows;
  for (const auto* list : {&v.identity, &v.history}) {
    for (const Observation& o : *list) {
      if (part.Identifies(o.component)) rows.push_back(&o);
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Observation* a, const Observation* b) { return a->time_ns > b->time_ns; });
  std::map<std::string, std::string> out;
  auto take = [&](std::string_view field, const std::string& value) {
    if (!value.empty() && !out.count(std::string(field))) out[std::string(field)] = Fact(value);
  };
  for (const Observation* o : rows) {
    bool redfish_missing = false;
    for (const PartField& f : PartFields()) {
      for (std::string_view a : f.attrs) {
        const std::string key(a);
        if (auto it = o->attrs.find(key); it != o->attrs.end()) take(f.field, it->second);
        if (auto it = o->component.keys.find(key); it != o->component.keys.end()) take(f.field, it->second);
      }
      redfish_missing |= !f.redfish.empty() && !out.count(std::string(f.field));
    }
    if (o->kind == ObsKind::kGpuIdentity) {
      if (auto it = o->attrs.find("name"); it != o->attrs.end()) take("model", it->second);
      for (const char* k : {"index", "slot"}) {
        if (auto it = o->attrs.find(k); it != o->attrs.end()) take(k, it->second);
      }
    }
    if (redfish_missing && o->source == Source::kRedfish && !o->raw.empty() && o->raw.front() == '{') {
      const Json j = Json::parse(o->raw, nullptr, false);
      if (!j.is_object()) continue;
      for (const PartField& f : PartFields()) {
        if (!f.redfish.empty()) take(f.field, Str(j, f.redfish));
      }
    }
  }
  // Every key the diagnosis carries (serial, rack, slot, ...): what the detector tied to it.
  for (const auto& [k, val] : v.dx.component.keys) take(k, val);
  const auto required = RequiredFields(v.dx.component.type);
  if (std::find(required.begin(), required.end(), "driver_version") != required.end()) {
    if (auto it = node_facts.find("driver_version"); it != node_facts.end()) take("driver_version", it->second);
  }
  return out;
}

// Facts about the node (driver, BMC firmware, ...), newest value wins, and the part's
// identity (PartIdentity); `not_recorded` / `part_not_recorded` name what the store lacks.
Json NodeFacts(const StoreView& v, const PartMatch& part, std::map<std::string, std::string>& identity) {
  std::map<std::string, std::string> facts;
  // The identity rows first: they are the older ones, and the newest value wins.
  for (const auto* list : {&v.identity, &v.history}) {
    for (const Observation& o : *list) {
      for (const auto& [k, val] : o.attrs) {
        if (std::find(std::begin(kFactKeys), std::end(kFactKeys), k) != std::end(kFactKeys) && !val.empty()) {
          facts[k] = Fact(val);
        }
      }
    }
  }
  identity = PartIdentity(v, part, facts);
  Json unknown = Json::array();
  for (const char* k : {"driver_version", "bmc_firmware_version"}) {
    if (!facts.count(k)) unknown.push_back(k);
  }
  Json part_unknown = Json::array();
  for (std::string_view k : RequiredFields(v.dx.component.type)) {
    if (!identity.count(std::string(k))) part_unknown.push_back(k);
  }
  return Json{{"node", OneLine(v.node)},
              {"facts", facts},
              {"not_recorded", unknown},
              {"part", identity},
              {"part_not_recorded", part_unknown}};
}

std::string WarrantName(Warrant w) {
  switch (w) {
    case Warrant::kActionPlan:
      return "action_plan";
    case Warrant::kForced:
      return "forced";
    case Warrant::kFaultClass:
      break;
  }
  return "fault_class";
}

Json DiagnosisJson(const StoreView& v, BundleKind kind, const BundleOptions& options) {
  Json dx = v.dx;
  // Evidence text came from logs: the same redaction as every other file.
  std::function<void(Json&)> scrub = [&](Json& j) {
    if (j.is_string()) {
      j = RedactSecrets(j.get<std::string>());
    } else if (j.is_structured()) {
      for (auto& child : j) scrub(child);
    }
  };
  scrub(dx);
  return Json{{"kind", kind == BundleKind::kRma ? "rma_bundle" : "facility_ticket"},
              {"prepared_at", Iso(options.now_ns)},
              {"diagnosis_id", v.diagnosis_id},
              {"node", v.node},
              {"warrant", {{"by", WarrantName(options.warrant)}, {"note", RedactSecrets(options.warrant_note)}}},
              {"window", {{"since", Iso(v.since_ns)}, {"until", Iso(v.until_ns)}}},
              {"diagnosis", dx}};
}

std::string Attr(const ActionRecord& a, const char* key) {
  auto it = a.attrs.find(key);
  return it == a.attrs.end() ? std::string() : it->second;
}

// The assistant's notes in summary.md: written by the assistant (a model's included), so
// marked as not evidence; quoted line by line like every other stored text.
void AssistantNotes(std::string& md, const StoreView& v) {
  if (v.notes.empty()) return;
  md += "## Assistant's notes (not evidence: the evidence is listed above and in the files)\n\n";
  for (const ActionRecord& n : v.notes) {
    const bool llm = Attr(n, "mode") == "llm";
    md += "### " + Iso(n.time_ns) + ": " + (llm ? "model " + Md(Attr(n, "model")) : std::string("deterministic")) +
          " (" + Md(n.outcome) + ")\n\n";
    std::istringstream lines(n.reason);
    size_t count = 0;
    for (std::string line; std::getline(lines, line);) {
      if (++count > 80) {
        md += "> ...\n";
        break;
      }
      md += line.find_first_not_of(" \t\r") == std::string::npos ? ">\n" : "> " + Md(line) + "\n";
    }
    md += "\n";
  }
}

// assistant_notes.json: each note with its answer, proposals (and their verdicts) and the
// model's full transcript, redacted like the other files.
Json NotesJson(const StoreView& v) {
  std::function<void(Json&)> scrub = [&](Json& j) {
    if (j.is_string()) {
      j = RedactSecrets(j.get<std::string>());
    } else if (j.is_structured()) {
      for (auto& child : j) scrub(child);
    }
  };
  Json list = Json::array();
  for (const ActionRecord& n : v.notes) {
    Json j{{"time", Iso(n.time_ns)},          {"mode", Attr(n, "mode")},
           {"model", Attr(n, "model")},       {"outcome", n.outcome},
           {"question", Attr(n, "question")}, {"steps", Attr(n, "steps")},
           {"tokens", Attr(n, "tokens")},     {"text", n.reason}};
    for (const char* k : {"answer", "proposals", "transcript"}) {
      Json parsed = Json::parse(Attr(n, k), nullptr, false);
      j[k] = parsed.is_discarded() ? Json(nullptr) : std::move(parsed);
    }
    list.push_back(std::move(j));
  }
  scrub(list);
  return Json{{"diagnosis_id", v.diagnosis_id}, {"notes", list}};
}

// Adds assistant_notes.json (only when the diagnosis has notes: older bundles keep their files).
void AddNotesFile(Bundle& b, std::string& summary, const StoreView& v) {
  if (v.notes.empty()) return;
  summary += "- `assistant_notes.json`: the assistant's notes (" + std::to_string(v.notes.size()) +
             "), with a model's proposals, their verdicts and its transcript\n";
  b.files.push_back({"assistant_notes.json", NotesJson(v).dump(2, ' ', false, Json::error_handler_t::replace) + "\n"});
}

std::string PartLabel(ComponentType t) {
  switch (t) {
    case ComponentType::kGpu:
      return "GPU";
    case ComponentType::kNvswitch:
      return "NVSwitch";
    case ComponentType::kNvlink:
      return "NVLink link";
    case ComponentType::kPcie:
      return "PCIe device/link";
    case ComponentType::kIb:
      return "InfiniBand adapter port";
    case ComponentType::kPsu:
      return "Power supply";
    case ComponentType::kFan:
      return "Fan";
    default:
      return std::string(ToString(t));
  }
}

void WhatFailed(std::string& md, const StoreView& v) {
  const Diagnosis& d = v.dx;
  md += "## What failed\n\n" + Md(d.summary) + "\n\n";
  md += "- Fault class: `" + std::string(ToString(d.fault_class)) + "` (layer " + std::string(ToString(d.layer)) +
        ", severity " + std::string(ToString(d.severity)) + ", confidence " + Num(d.confidence) + ")\n";
  md += "- Recommended action: `" + std::string(ToString(d.action)) + "`\n";
  md += "- Since: " + Iso(d.first_ns) + " (first evidence); last seen " + Iso(d.last_ns) + " (UTC)\n\n";
  md += "## Evidence (oldest first)\n\n";
  if (d.evidence.empty()) md += "- none recorded with the diagnosis\n";
  for (const Evidence& e : d.evidence) {
    md += "- " + Iso(e.time_ns) + " [" + std::string(ToString(e.source)) + "] " + Md(e.component) + ": " + Md(e.text) +
          (e.count > 1 ? " (x" + std::to_string(e.count) + ")" : "") + "\n";
  }
  if (!d.ruled_out.empty()) {
    md += "\n## Ruled out\n\n";
    for (const RuledOut& r : d.ruled_out) md += "- " + std::string(ToString(r.layer)) + ": " + Md(r.reason) + "\n";
  }
  md += "\n";
}

// The diagnosed component's series first: that is what the reader came for.
void SeriesTable(std::string& md, const std::map<std::pair<std::string, std::string>, Latest>& series,
                 const std::string& file, const std::string& diagnosed) {
  if (series.empty()) {
    md += "None stored.\n\n";
    return;
  }
  std::vector<const std::pair<const std::pair<std::string, std::string>, Latest>*> order;
  for (const auto& entry : series) order.push_back(&entry);
  std::stable_partition(order.begin(), order.end(), [&](const auto* e) { return e->first.first == diagnosed; });
  md += "| component | series | first | latest | min | max | latest at |\n|---|---|---|---|---|---|---|\n";
  for (const auto* entry : order) {
    const auto& [key, l] = *entry;
    // A log event has no value worth a column: its count is (the lines are in the raw files).
    auto val = [](const Observation* o) { return o->value ? Num(*o->value) : std::string("-"); };
    const std::string latest = l.last->value ? val(l.last) : std::to_string(l.events) + " event(s)";
    md += "| " + Md(key.first) + " | " + Md(key.second) + " | " + val(l.first) + " | " + latest + " | " +
          (l.min <= l.max ? Num(l.min) : "-") + " | " + (l.min <= l.max ? Num(l.max) : "-") + " | " +
          Iso(l.last->time_ns) + " |\n";
  }
  md += "\nEvery sample is in `" + file + "`.\n\n";
}

std::string FactsTable(const Json& facts) {
  std::string md = "| fact | value |\n|---|---|\n";
  for (const auto& [k, val] : facts["facts"].items()) md += "| " + Md(k) + " | " + Md(val.get<std::string>()) + " |\n";
  for (const auto& k : facts["not_recorded"]) {
    md += "| " + Md(k.get<std::string>()) + " | not recorded in the store |\n";
  }
  return md + "\n";
}

// Why this document exists, for its reader: the plan asked for it, or an operator overrode it.
std::string WhyLine(BundleKind kind, const BundleOptions& options) {
  const std::string note = options.warrant_note.empty() ? "" : " (" + Md(options.warrant_note) + ")";
  switch (options.warrant) {
    case Warrant::kActionPlan:
      return "Called for by faultline's action plan for this diagnosis" + note + ".\n\n";
    case Warrant::kForced:
      return std::string(
                 "**Prepared on an operator's request (--force): faultline's action plan for this diagnosis "
                 "does not call for ") +
             (kind == BundleKind::kRma ? "an RMA" : "a facility ticket") + note + ".**\n\n";
    case Warrant::kFaultClass:
      break;
  }
  return "";
}

// The part table of an RMA: the fields its kind of part is named by, in order; what the
// store lacks is said so, never guessed.
std::string PartTable(const StoreView& v, const std::map<std::string, std::string>& identity) {
  std::string md = "## Part\n\n| field | value |\n|---|---|\n";
  md += "| Part | " + PartLabel(v.dx.component.type) + " `" + Md(v.dx.component.Id()) + "` |\n";
  auto row = [&](std::string_view field) {
    for (const PartField& f : PartFields()) {
      if (f.field != field) continue;
      auto it = identity.find(std::string(field));
      md += "| " + std::string(f.label) + " | " +
            (it == identity.end() ? std::string("not recorded") : Md(it->second)) + " |\n";
    }
  };
  for (std::string_view field : RequiredFields(v.dx.component.type)) row(field);
  if (identity.count("inforom_version")) row("inforom_version");
  if (identity.count("slot")) md += "| Slot | " + Md(identity.at("slot")) + " |\n";
  return md + "| Node | " + Md(v.node) + " |\n\n";
}

Bundle RmaBundle(const StoreView& v, const BundleOptions& options) {
  const PartMatch part = MatchFor(v.dx.component);
  std::map<std::string, std::string> identity;
  const Json facts = NodeFacts(v, part, identity);
  // A PSU or fan has no error counters: its readings (power, voltage, state) are its history.
  const bool bmc_part = IsBmcPart(v.dx.component.type);
  std::vector<const Observation*> counters;
  for (const Observation& o : v.history) {
    const bool series = IsPartCounter(o.kind) || (bmc_part && IsPhysicalReading(o.kind));
    if (series && part.Matches(o.component)) counters.push_back(&o);
  }
  std::string md = "# RMA evidence: " + PartLabel(v.dx.component.type) + " " + Md(v.dx.component.Id()) + " on node " +
                   Md(v.node) + "\n\n";
  md += "Prepared by faultline on " + Iso(options.now_ns) + " from diagnosis #" + std::to_string(v.diagnosis_id) +
        ", for the vendor's support engineer: the part, what failed and since when, and the raw evidence.\n\n";
  md += WhyLine(BundleKind::kRma, options);
  md += PartTable(v, identity);
  WhatFailed(md, v);
  md += std::string(bmc_part ? "## Readings of the part" : "## Counters of the part") +
        " (first and latest value of each series)\n\n";
  SeriesTable(md, LatestBySeries(counters), "counters.csv", v.dx.component.Id());
  md += "## Node facts\n\n" + FactsTable(facts);
  AssistantNotes(md, v);
  md +=
      "## Files\n\n"
      "- `summary.md`: this page\n"
      "- `diagnosis.json`: the diagnosis as faultline stored it (evidence chain, ruled-out layers)\n"
      "- `counters.csv`: the part's " +
      std::string(bmc_part ? "readings (power, voltage, state, temperature, fan) as the BMC reported them"
                           : "counter history (ECC, row remapping, retired pages, PCIe replay/AER, NVLink "
                             "CRC/replay/recovery, InfiniBand, XID/SXid)") +
      std::string(v.history_truncated ? " from the newest stored observations" : "") +
      "\n"
      "- `kernel.log`: the node's kernel lines in the window (" +
      std::to_string(v.kernel.size()) +
      ")\n"
      "- `bmc_sel.log`: the BMC's system event log entries in the window (" +
      std::to_string(v.sel.size()) +
      ")\n"
      "- `node_facts.json`: the node's driver and firmware facts and the part's identity and versions, with "
      "what the store did not record\n";
  Bundle b;
  b.files = {{"summary.md", md},
             {"diagnosis.json", DiagnosisJson(v, BundleKind::kRma, options).dump(2) + "\n"},
             {"counters.csv", CsvRows(counters)},
             {"kernel.log", RawFile(v.kernel, v.kernel_truncated, "Kernel log lines", v)},
             {"bmc_sel.log", RawFile(v.sel, v.sel_truncated, "BMC SEL entries", v)},
             {"node_facts.json", facts.dump(2) + "\n"}};
  AddNotesFile(b, b.files.front().data, v);
  return b;
}

Bundle FacilityTicket(const StoreView& v, const BundleOptions& options) {
  std::map<std::string, std::string> identity;
  const Json facts = NodeFacts(v, MatchFor(v.dx.component), identity);
  std::vector<const Observation*> readings;
  std::map<std::string, std::string> location;
  for (const auto& [k, val] : v.dx.component.keys) {
    if (IsLocationKey(k)) location[k] = val;
  }
  for (const Observation& o : v.history) {
    const bool physical = IsPhysicalReading(o.kind) && (o.layer == Layer::kOob || o.kind == ObsKind::kLeak);
    if (!physical || o.time_ns < v.since_ns || o.time_ns > v.until_ns) continue;
    readings.push_back(&o);
    if (o.component.Id() != v.dx.component.Id()) continue;
    for (const auto& [k, val] : o.attrs) {
      if (IsLocationKey(k)) location[k] = val;
    }
  }
  std::string md =
      "# Facility ticket: " + Md(std::string(ToString(v.dx.fault_class))) + " at node " + Md(v.node) + "\n\n";
  md += "To: data-center facilities (power and cooling). Prepared by faultline on " + Iso(options.now_ns) +
        " from diagnosis #" + std::to_string(v.diagnosis_id) + ". " +
        (GroupOf(v.dx.fault_class) == CauseGroup::kFacility
             ? std::string("This is a power, cooling or leak problem around the node, not a failed GPU")
             : "faultline's action plan hands this " + Md(std::string(ToString(v.dx.fault_class))) +
                   " fault to facilities (cabling, power or cooling work around the node)") +
        ": no GPU is to be returned for it.\n\n";
  md += WhyLine(BundleKind::kFacility, options);
  md += "## Where\n\n| field | value |\n|---|---|\n| Node | " + Md(v.node) + " |\n| Component | `" +
        Md(v.dx.component.Id()) + "` |\n";
  for (const auto& [k, val] : location) md += "| " + Md(k) + " | " + Md(val) + " |\n";
  if (location.empty()) md += "| Rack / PDU / feed / loop | not in the store (add them to the topology file) |\n";
  md += "\n";
  WhatFailed(md, v);
  md += "## Readings in the window (" + Iso(v.since_ns) + " to " + Iso(v.until_ns) + ")\n\n";
  SeriesTable(md, LatestBySeries(readings), "readings.csv", v.dx.component.Id());
  AssistantNotes(md, v);
  md +=
      "## Files\n\n"
      "- `summary.md`: this page\n"
      "- `diagnosis.json`: the diagnosis as faultline stored it\n"
      "- `readings.csv`: power, voltage, PSU, temperature, fan, coolant and leak readings in the window\n"
      "- `bmc_sel.log`: the BMC's system event log entries in the window (" +
      std::to_string(v.sel.size()) +
      ")\n"
      "- `node_facts.json`: what is known of the node\n";
  Bundle b;
  b.files = {{"summary.md", md},
             {"diagnosis.json", DiagnosisJson(v, BundleKind::kFacility, options).dump(2) + "\n"},
             {"readings.csv", CsvRows(readings)},
             {"bmc_sel.log", RawFile(v.sel, v.sel_truncated, "BMC SEL entries", v)},
             {"node_facts.json", facts.dump(2) + "\n"}};
  AddNotesFile(b, b.files.front().data, v);
  return b;
}

}  // namespace

CauseGroup GroupOf(FaultClass fc) {
  switch (fc) {
    case FC::kPowerSupply:
    case FC::kPowerInsufficient:
    case FC::kVoltageOutOfRange:
    case FC::kThermalInlet:
    case FC::kCoolingDegraded:
    case FC::kCoolantLeak:
      return CauseGroup::kFacility;
    case FC::kUserApplication:
      return CauseGroup::kUserProgram;
    case FC::kDriverFault:
    case FC::kWorkloadImbalance:
    case FC::kNone:
      return CauseGroup::kNotHardware;
    default:
      return CauseGroup::kPart;
  }
}

std::string RedactSecrets(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t key_end = 0;
    if (!IsSecretKey(lower, i, key_end)) {
      out.push_back(text[i++]);
      continue;
    }
    // key, then optional quote/space, a separator (= or :), then the value up to a delimiter.
    out.append(text.substr(i, key_end - i));
    size_t j = key_end;
    while (j < text.size() && (lower[j] == '"' || lower[j] == '\'' || lower[j] == ' ')) ++j;
    if (j >= text.size() || (text[j] != '=' && text[j] != ':')) {
      i = key_end;
      continue;
    }
    ++j;
    while (j < text.size() && (text[j] == ' ' || text[j] == '"' || text[j] == '\'')) ++j;
    auto value_end = [&](size_t from) {
      size_t k = from;
      while (k < text.size() && !std::isspace(static_cast<unsigned char>(text[k])) &&
             std::string_view("\"',;&}").find(text[k]) == std::string_view::npos) {
        ++k;
      }
      return k;
    };
    size_t end = value_end(j);
    // "Authorization: Bearer xyz": the scheme word is followed by the secret itself.
    const std::string_view word = std::string_view(lower).substr(j, end - j);
    if ((word == "bearer" || word == "basic") && end < text.size() && text[end] == ' ') end = value_end(end + 1);
    out.append(text.substr(key_end, j - key_end));
    if (end > j) out += "[redacted]";
    i = end;
  }
  return out;
}

Result<Bundle> BuildBundle(Store& store, BundleKind kind, const BundleOptions& options) {
  if (options.window_pad_ns < 0) return Status(StatusCode::kInvalidArgument, "the window padding must not be negative");
  auto view = ReadStore(store, kind, options);
  if (!view.ok()) return view.status();
  Bundle b = kind == BundleKind::kRma ? RmaBundle(*view, options) : FacilityTicket(*view, options);
  b.kind = kind;
  b.diagnosis_id = view->diagnosis_id;
  b.node = view->node;
  b.diagnosis = view->dx;
  return b;
}

Status WriteBundle(const Bundle& bundle, const std::string& path, int64_t mtime_ns) {
  auto tar = MakeTar(bundle.files, mtime_ns / kNsPerSec);
  if (!tar.ok()) return tar.status();
  auto gz = Gzip(*tar);
  if (!gz.ok()) return gz.status();
  return WriteFileAtomically(path, *gz, 0600);
}

}  // namespace faultline::actions
