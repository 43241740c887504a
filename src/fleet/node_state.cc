#include "fleet/node_state.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "engine/detect/slowdown.h"
#include "fleet/names.h"

namespace faultline::fleet {

std::string NodeState::Rack() const {
  if (topo != nullptr && !topo->rack.empty()) return topo->rack;
  return place.rack;
}

namespace {

std::string AttrOr(const Observation& obs, const char* key) {
  auto it = obs.attrs.find(key);
  return it == obs.attrs.end() ? std::string() : it->second;
}

WorkSeries* SeriesFor(NodeState& node, std::string_view job, ObsKind kind, const NodeLimits& limits) {
  for (WorkSeries& s : node.series) {
    if (s.kind == kind && s.job == job) return &s;
  }
  if (node.series.size() >= limits.max_series) return nullptr;
  node.series.push_back({.job = std::string(job), .kind = kind, .samples = {}, .last_step = std::nullopt});
  return &node.series.back();
}

// A name as the state keeps it: itself when short (no copy), else its cut form in `buf`.
std::string_view Kept(std::string_view name, std::string& buf) {
  if (!NameTooLong(name)) return name;
  buf = BoundName(name);
  return buf;
}

// Several ranks of one node report the same step: the node's step is its slowest rank's.
void AddSample(WorkSeries& s, const Observation& obs, const StepSample& sample, const NodeLimits& limits) {
  if (obs.seq && s.last_step == obs.seq && !s.samples.empty()) {
    PeerSample& last = s.samples.back();
    last.seconds = std::max(last.seconds, sample.seconds);
    last.time_ns = std::max(last.time_ns, sample.time_ns);
    return;
  }
  s.last_step = obs.seq;
  // The step lets peers be compared in the same steps (peers.h); steps past int64 are none.
  const int64_t step = obs.seq && *obs.seq <= uint64_t{INT64_MAX} ? static_cast<int64_t>(*obs.seq) : -1;
  const PeerSample p{sample.time_ns, sample.seconds, step};
  // Sources deliver in time order; an out-of-order sample is placed where it belongs.
  auto at = s.samples.end();
  while (at != s.samples.begin() && std::prev(at)->time_ns > p.time_ns) --at;
  s.samples.insert(at, p);
  while (s.samples.size() > limits.max_samples) s.samples.pop_front();
}

std::string_view AttrView(const Observation& obs, const std::string& key) {
  auto it = obs.attrs.find(key);
  return it == obs.attrs.end() ? std::string_view() : std::string_view(it->second);
}

void HoldReading(NodeState& node, const Observation& obs, const NodeLimits& limits) {
  static const std::string kClockKey = "clock", kMetricKey = "metric";  // immutable: no per-call allocation
  std::string sub_buf, name_buf;
  const std::string_view sub = Kept(AttrView(obs, obs.kind == ObsKind::kClock ? kClockKey : kMetricKey), sub_buf);
  const std::string_view name = Kept(obs.component.name, name_buf);
  for (Reading& r : node.readings) {
    if (r.kind == obs.kind && r.type == obs.component.type && r.name == name && r.sub == sub) {
      if (obs.time_ns >= r.time_ns) {
        r.time_ns = obs.time_ns;
        r.value = *obs.value;
      }
      return;
    }
  }
  if (node.readings.size() >= limits.max_readings) return;
  node.readings.push_back({.time_ns = obs.time_ns,
                           .value = *obs.value,
                           .kind = obs.kind,
                           .layer = obs.layer,
                           .source = obs.source,
                           .type = obs.component.type,
                           .name = std::string(name),
                           .sub = std::string(sub)});
}

constexpr size_t kMaxKeysPerMap = 16;
constexpr size_t kMaxRuledOut = 8;
constexpr size_t kMaxExplains = 16;

void BoundMap(std::map<std::string, std::string>& m) {
  while (m.size() > kMaxKeysPerMap) m.erase(std::prev(m.end()));
  std::map<std::string, std::string> cut;
  for (auto it = m.begin(); it != m.end();) {
    if (!NameTooLong(it->first)) {
      BoundNameInPlace(it->second);
      ++it;
      continue;
    }
    auto node = m.extract(it++);
    cut.emplace(BoundName(node.key()), BoundName(node.mapped()));
  }
  m.merge(cut);
}

void BoundComponent(ComponentRef& c) {
  BoundNameInPlace(c.name);
  BoundMap(c.keys);
}

template <typename T>
void CutEvidence(T& record, size_t max_evidence) {
  if (record.evidence.size() > max_evidence) record.evidence.resize(max_evidence);
  for (Evidence& e : record.evidence) {
    BoundNameInPlace(e.component);
    CutText(e.text, kMaxEvidenceBytes);
  }
}

// Every string and list of a record held, bounded: an agent is not trusted to keep them short.
void BoundRecord(Finding& f, size_t max_evidence) {
  BoundComponent(f.component);
  CutText(f.summary, kMaxTextBytes);
  BoundNameInPlace(f.key);  // an identity: cut with its hash, so two keys stay two
  BoundMap(f.attrs);
  CutEvidence(f, max_evidence);
}

void BoundRecord(Diagnosis& d, size_t max_evidence) {
  BoundComponent(d.component);
  CutText(d.summary, kMaxTextBytes);
  CutEvidence(d, max_evidence);
  if (d.ruled_out.size() > kMaxRuledOut) d.ruled_out.resize(kMaxRuledOut);
  for (RuledOut& r : d.ruled_out) {
    CutText(r.reason, kMaxEvidenceBytes);
    CutEvidence(r, max_evidence);
  }
  if (d.explains.size() > kMaxExplains) d.explains.resize(kMaxExplains);
  for (std::string& e : d.explains) BoundNameInPlace(e, 64);
}

// What makes two findings the same event as it grows (the agent re-stores a finding when it changes).
bool SameFinding(const Finding& a, const Finding& b) {
  if (!a.key.empty() || !b.key.empty()) return a.key == b.key && a.layer == b.layer;
  return a.layer == b.layer && a.fault_class == b.fault_class && a.component.Id() == b.component.Id();
}

}  // namespace

bool IsUtilization(const Observation& obs) {
  if (obs.kind != ObsKind::kOther) return false;
  const std::string metric = AttrOr(obs, "metric");
  return metric == "utilization" || metric == "gpu_util";
}

void HoldObservation(NodeState& node, const Observation& obs, const NodeLimits& limits) {
  if (obs.kind == ObsKind::kStepTime || obs.kind == ObsKind::kThroughput) {
    auto sample = StepSampleOf(obs);
    if (!sample) return;
    static const std::string kJobKey = "job";
    std::string job_buf;
    WorkSeries* s = SeriesFor(node, Kept(AttrView(obs, kJobKey), job_buf), obs.kind, limits);
    if (s != nullptr) AddSample(*s, obs, *sample, limits);
    return;
  }
  if (!obs.value || !std::isfinite(*obs.value) || IsKernelEventKind(obs.kind)) return;
  if (obs.kind == ObsKind::kOther && !IsUtilization(obs)) return;
  HoldReading(node, obs, limits);
}

void HoldFinding(NodeState& node, Finding finding, const NodeLimits& limits) {
  BoundRecord(finding, limits.max_evidence);
  for (Finding& f : node.findings) {
    if (SameFinding(f, finding)) {
      if (finding.last_ns >= f.last_ns) f = std::move(finding);
      return;
    }
  }
  node.findings.push_back(std::move(finding));
  if (node.findings.size() > limits.max_findings) node.findings.erase(node.findings.begin());
}

void HoldDiagnosis(NodeState& node, int64_t row_id, Diagnosis diagnosis, const NodeLimits& limits) {
  BoundRecord(diagnosis, limits.max_evidence);
  node.diagnoses.push_back({row_id, std::move(diagnosis)});
  // Oldest (by end) first, so the bound drops the stalest.
  std::stable_sort(node.diagnoses.begin(), node.diagnoses.end(), [](const HeldDiagnosis& a, const HeldDiagnosis& b) {
    return a.diagnosis.last_ns < b.diagnosis.last_ns;
  });
  if (node.diagnoses.size() > limits.max_diagnoses) node.diagnoses.erase(node.diagnoses.begin());
}

void Forget(NodeState& node, int64_t before_ns) {
  for (WorkSeries& s : node.series) {
    while (!s.samples.empty() && s.samples.front().time_ns < before_ns) s.samples.pop_front();
  }
  std::erase_if(node.series, [](const WorkSeries& s) { return s.samples.empty(); });
  // A node's set of reading series settles after its first batches: give back what the
  // vector's doubling left unused (10,000 nodes x 20 spare slots is 20 MB).
  if (node.readings.capacity() > node.readings.size() + 4) node.readings.shrink_to_fit();
  std::erase_if(node.findings, [&](const Finding& f) { return f.last_ns != 0 && f.last_ns < before_ns; });
  std::erase_if(node.diagnoses,
                [&](const HeldDiagnosis& d) { return d.diagnosis.last_ns != 0 && d.diagnosis.last_ns < before_ns; });
}

std::vector<GpuReading> GpuReadingsOf(const NodeState& node) {
  std::vector<GpuReading> gpus;
  auto slot = [&](const std::string& name) -> GpuReading& {
    for (GpuReading& g : gpus) {
      if (g.gpu == name) return g;
    }
    gpus.push_back({.gpu = name, .clock = 0, .power = 0, .util = -1});
    return gpus.back();
  };
  for (const Reading& r : node.readings) {
    if (r.type != ComponentType::kGpu) continue;
    if (r.kind == ObsKind::kClock && (r.sub.empty() || r.sub == "sm")) {
      slot(r.name).clock = r.value;
    } else if (r.kind == ObsKind::kPower) {
      slot(r.name).power = r.value;
    } else if (r.kind == ObsKind::kOther) {
      slot(r.name).util = r.value;
    }
  }
  return gpus;
}

namespace {

size_t StringBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

size_t MapBytes(const std::map<std::string, std::string>& m) {
  size_t n = m.size() * 96;  // a tree node holding two strings
  for (const auto& [k, v] : m) n += StringBytes(k) + StringBytes(v);
  return n;
}

size_t EvidenceBytes(const std::vector<Evidence>& evidence) {
  size_t n = evidence.capacity() * sizeof(Evidence);
  for (const Evidence& e : evidence) n += StringBytes(e.text) + StringBytes(e.component);
  return n;
}

size_t ComponentBytes(const ComponentRef& c) { return StringBytes(c.name) + MapBytes(c.keys); }

size_t RecordBytes(const Finding& f) {
  return sizeof(Finding) + ComponentBytes(f.component) + StringBytes(f.summary) + StringBytes(f.key) +
         EvidenceBytes(f.evidence) + MapBytes(f.attrs);
}

size_t RecordBytes(const Diagnosis& d) {
  size_t n = sizeof(HeldDiagnosis) + ComponentBytes(d.component) + StringBytes(d.summary) + EvidenceBytes(d.evidence);
  n += d.ruled_out.capacity() * sizeof(RuledOut) + d.explains.capacity() * sizeof(std::string);
  for (const RuledOut& r : d.ruled_out) n += StringBytes(r.reason) + EvidenceBytes(r.evidence);
  for (const std::string& e : d.explains) n += StringBytes(e);
  return n;
}

}  // namespace

size_t ApproxBytes(const NodeState& node) {
  size_t n = sizeof(NodeState) + StringBytes(node.name) + StringBytes(node.place.site) + StringBytes(node.place.rack) +
             StringBytes(node.place.node);
  n += node.series.capacity() * sizeof(WorkSeries);
  for (const WorkSeries& s : node.series) n += StringBytes(s.job) + s.samples.size() * sizeof(PeerSample);
  n += node.readings.capacity() * sizeof(Reading);
  for (const Reading& r : node.readings) n += StringBytes(r.name) + StringBytes(r.sub);
  for (const Finding& f : node.findings) n += RecordBytes(f);
  for (const HeldDiagnosis& d : node.diagnoses) n += RecordBytes(d.diagnosis);
  return n + 4 * RowRanges::kMaxRanges * 16 / 4;
}

Json ToJson(const NodeState& node) {
  Json series = Json::array();
  for (const WorkSeries& s : node.series) {
    Json samples = Json::array();
    for (const PeerSample& p : s.samples) {
      samples.push_back(p.step >= 0 ? Json::array({p.time_ns, p.seconds, p.step})
                                    : Json::array({p.time_ns, p.seconds}));
    }
    Json js{{"job", s.job}, {"kind", ToString(s.kind)}, {"samples", samples}};
    if (s.last_step) js["last_step"] = *s.last_step;
    series.push_back(std::move(js));
  }
  Json readings = Json::array();
  for (const Reading& r : node.readings) {
    readings.push_back(Json::array({r.time_ns, r.value, ToString(r.kind), ToString(r.layer), ToString(r.source),
                                    ToString(r.type), r.name, r.sub}));
  }
  Json diagnoses = Json::array();
  for (const HeldDiagnosis& d : node.diagnoses) diagnoses.push_back({{"row_id", d.row_id}, {"diagnosis", d.diagnosis}});
  return Json{{"name", node.name},
              {"site", node.place.site},
              {"rack", node.place.rack},
              {"series", std::move(series)},
              {"readings", std::move(readings)},
              {"findings", node.findings},
              {"diagnoses", std::move(diagnoses)},
              {"observation_rows", node.observation_rows.ToJson()},
              {"finding_rows", node.finding_rows.ToJson()},
              {"diagnosis_rows", node.diagnosis_rows.ToJson()},
              {"action_rows", node.action_rows.ToJson()},
              {"newest_ns", node.newest_ns}};
}

namespace {

template <typename E>
E EnumOf(const Json& j, std::optional<E> (*parse)(std::string_view)) {
  auto v = parse(j.get<std::string>());
  if (!v) throw std::invalid_argument("unknown enum name");
  return *v;
}

}  // namespace

bool FromJson(const Json& j, NodeState& node) {
  try {
    node.name = j.at("name").get<std::string>();
    node.place = {.site = j.at("site").get<std::string>(), .rack = j.at("rack").get<std::string>(), .node = node.name};
    for (const Json& js : j.at("series")) {
      WorkSeries s{.job = js.at("job").get<std::string>(),
                   .kind = EnumOf(js.at("kind"), &ParseObsKind),
                   .samples = {},
                   .last_step = std::nullopt};
      for (const Json& p : js.at("samples")) {
        s.samples.push_back(
            {JsonInt<int64_t>(p.at(0)), p.at(1).get<double>(), p.size() > 2 ? JsonInt<int64_t>(p.at(2)) : -1});
      }
      if (js.contains("last_step")) s.last_step = JsonInt<uint64_t>(js.at("last_step"));
      node.series.push_back(std::move(s));
    }
    for (const Json& r : j.at("readings")) {
      node.readings.push_back({.time_ns = JsonInt<int64_t>(r.at(0)),
                               .value = r.at(1).get<double>(),
                               .kind = EnumOf(r.at(2), &ParseObsKind),
                               .layer = EnumOf(r.at(3), &ParseLayer),
                               .source = EnumOf(r.at(4), &ParseSource),
                               .type = EnumOf(r.at(5), &ParseComponentType),
                               .name = r.at(6).get<std::string>(),
                               .sub = r.at(7).get<std::string>()});
    }
    node.findings = j.at("findings").get<std::vector<Finding>>();
    for (const Json& d : j.at("diagnoses")) {
      node.diagnoses.push_back({JsonInt<int64_t>(d.at("row_id")), d.at("diagnosis").get<Diagnosis>()});
    }
    node.newest_ns = JsonInt<int64_t>(j.at("newest_ns"));
    return node.observation_rows.FromJson(j.at("observation_rows")) &&
           node.finding_rows.FromJson(j.at("finding_rows")) && node.diagnosis_rows.FromJson(j.at("diagnosis_rows")) &&
           node.action_rows.FromJson(j.at("action_rows"));
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace faultline::fleet
