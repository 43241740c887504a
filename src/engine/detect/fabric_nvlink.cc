#include "engine/detect/fabric_nvlink.h"

#include <cctype>
#include <cmath>

#include "parse/text.h"
#include "parse/xid_catalog.h"

namespace faultline {
namespace {

using fabric::EndIssue;
using fabric::FormatRate;

std::string Attr(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

// "3/11" -> {3, 11}
bool SplitPair(std::string_view s, int& a, int& b) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return false;
  auto x = ParseInt(s.substr(0, slash)), y = ParseInt(s.substr(slash + 1));
  if (!x || !y || *x < 0 || *y < 0 || *x > 1 << 20 || *y > 1 << 20) return false;
  a = static_cast<int>(*x);
  b = static_cast<int>(*y);
  return true;
}

const char* KindName(ObsKind k) {
  switch (k) {
    case ObsKind::kNvlinkCrcFlit:
      return "CRC flit errors";
    case ObsKind::kNvlinkCrcData:
      return "CRC data errors";
    case ObsKind::kNvlinkReplay:
      return "replays";
    default:
      return "recoveries";
  }
}

// Non-fatal SXids on one switch port, with nothing else wrong there, before that port
// alone is worth touching (as the kernel detector's sxid_link_repeat).
constexpr uint64_t kNonFatalSxidsToReseat = 10;

bool LoneNonFatalSxids(const EndIssue& issue) {
  if (issue.severity >= Severity::kCritical || issue.count >= kNonFatalSxidsToReseat) return false;
  for (const std::string& r : issue.reasons) {
    if (r.rfind("SXid ", 0) != 0) return false;
  }
  return true;
}

}  // namespace

NvlinkFabricDetector::NvlinkFabricDetector(const FabricOptions& options, const Topology* topology)
    : opt_(options), topology_(topology) {}

std::string NvlinkFabricDetector::EndId(const Observation& obs) const {
  const ComponentRef& c = obs.component;
  if (c.type == ComponentType::kNvlink) return c.Id();
  if (c.type == ComponentType::kGpu && Attr(obs.attrs, "scope") == "total") return c.Id();
  // SXid lines may come keyed by the switch's PCI address (pcie/<bdf>) rather than nvswitch/<n>.
  const bool sxid_on_pcie = obs.kind == ObsKind::kSxid && c.type == ComponentType::kPcie;
  if (c.type != ComponentType::kNvswitch && !sxid_on_pcie) return "";
  // NVSwitch ports: "nvswitch/<sw>/<port>", or "nvswitch/<sw>" with a port/link attribute
  // (SXid lines name the link); the switch name is resolved through the topology (by
  // name or BDF) so both sides of a link agree.
  std::string sw = c.name, port = Attr(obs.attrs, "port");
  if (port.empty()) port = Attr(obs.attrs, "link");
  if (const size_t slash = sw.find('/'); slash != std::string::npos && !sxid_on_pcie) {
    port = sw.substr(slash + 1);
    sw = sw.substr(0, slash);
  }
  auto n = ParseInt(Trim(port));
  if (!n || *n < 0) return "";
  if (topology_ != nullptr) {
    std::string name = topology_->NvswitchName(sw);
    if (name.empty()) name = topology_->NvswitchName(Attr(c.keys, "bdf"));
    if (!name.empty()) sw = name;
  }
  return "nvswitch/" + sw + "/" + std::to_string(*n);
}

void NvlinkFabricDetector::Observe(const Observation& obs) {
  switch (obs.kind) {
    case ObsKind::kNvlinkCrcFlit:
    case ObsKind::kNvlinkCrcData:
    case ObsKind::kNvlinkReplay:
    case ObsKind::kNvlinkRecovery:
    case ObsKind::kNvlinkState:
    case ObsKind::kSxid:
      break;
    default:
      return;
  }
  ++revision_;
  const std::string end = EndId(obs);
  if (end.empty()) return;
  observed_.insert(end);
  if (obs.kind == ObsKind::kNvlinkState) {
    ObserveState(end, obs);
  } else if (obs.kind == ObsKind::kSxid) {
    // An SXid naming a port: that NVSwitch port saw link errors (the kernel-log layer
    // judges the SXid itself; here it only says which end of a link is noisy).
    std::string sev = Attr(obs.attrs, "severity");
    for (char& ch : sev) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    // NVIDIA's per-code knowledge (xid_catalog.h): corrected / safe-to-ignore codes say
    // nothing about the link; fatal ones are marked critical (see Findings()).
    const XidRule rule = RuleForSxid(obs.code ? static_cast<int>(*obs.code) : -1, Attr(obs.attrs, "severity"));
    if (rule.fault_class == FaultClass::kNone) return;
    const bool fatal = sev == "fatal" || rule.fault_class == FaultClass::kNvswitchFault;
    issues_[end].Mark(obs, FaultClass::kNvlinkErrors, fatal ? Severity::kCritical : Severity::kWarning,
                      "SXid " + (obs.code ? std::to_string(*obs.code) : std::string("?")), opt_);
  } else {
    ObserveCounter(end, obs);
  }
}

void NvlinkFabricDetector::ObserveCounter(const std::string& end, const Observation& obs) {
  if (!obs.value || !std::isfinite(*obs.value)) return;
  const std::string key = end + "#" + std::string(ToString(obs.kind));
  auto d = counters_.Update(key, *obs.value, obs.time_ns);
  if (!d) return;
  const bool crc = obs.kind == ObsKind::kNvlinkCrcFlit || obs.kind == ObsKind::kNvlinkCrcData;
  if (!crc) {
    if (d->delta > 0) {
      issues_[end].Mark(obs, FaultClass::kNvlinkErrors, Severity::kCritical,
                        "+" + FormatRate(d->delta) + " NVLink " + KindName(obs.kind), opt_);
    }
    return;
  }
  int& streak = crc_streak_[key];
  streak = d->delta > 0 ? streak + 1 : 0;
  if (d->seconds <= 0 || d->delta <= 0) return;
  const double rate = d->PerSecond();
  if (rate >= opt_.nvlink_crc_fail_per_s) {
    issues_[end].Mark(obs, FaultClass::kNvlinkErrors, Severity::kCritical,
                      "NVLink " + std::string(KindName(obs.kind)) + " " + FormatRate(rate) + "/s", opt_);
  } else if (streak >= opt_.nvlink_crc_warn_intervals) {
    issues_[end].Mark(
        obs, FaultClass::kNvlinkErrors, Severity::kWarning,
        "NVLink " + std::string(KindName(obs.kind)) + " sustained over " + std::to_string(streak) + " intervals", opt_);
  }
}

void NvlinkFabricDetector::ObserveState(const std::string& end, const Observation& obs) {
  if (!obs.value) return;
  if (*obs.value >= 1) {
    was_active_[end] = true;
    return;
  }
  // Inactive matters only for a link that should be up: seen up before, or listed in the topology.
  bool expected = was_active_[end];
  int gpu = 0, link = 0;
  if (!expected && topology_ != nullptr && SplitPair(obs.component.name, gpu, link)) {
    expected = topology_->FindNvlink(gpu, link) != nullptr;
  }
  if (expected) issues_[end].Mark(obs, FaultClass::kNvlinkDown, Severity::kCritical, "NVLink inactive", opt_);
}

fabric::LinkEnd NvlinkFabricDetector::Describe(const std::string& id, const EndIssue& issue) const {
  fabric::LinkEnd e;
  e.id = id;
  e.issue = &issue;
  e.switch_type = ComponentType::kNvswitch;
  int a = 0, b = 0;
  if (id.rfind("nvlink/", 0) == 0 && SplitPair(std::string_view(id).substr(7), a, b)) {
    e.device_end = true;
    const std::string serial = Attr(issue.component.keys, "serial");
    e.port_part = "GPU " + std::to_string(a) + (serial.empty() ? "" : " (serial " + serial + ")") + " NVLink " +
                  std::to_string(b);
    if (const TopoNvlink* l = topology_ != nullptr ? topology_->FindNvlink(a, b) : nullptr) {
      e.cable = l->cable;
      if (!l->nvswitch.empty() && l->port >= 0) {
        e.peer = "nvswitch/" + l->nvswitch + "/" + std::to_string(l->port);
        e.switch_name = l->nvswitch;
        e.switch_port = std::to_string(l->port);
      } else if (l->peer_gpu && l->peer_link) {
        e.peer = "nvlink/" + std::to_string(*l->peer_gpu) + "/" + std::to_string(*l->peer_link);
      }
    }
  } else if (id.rfind("nvswitch/", 0) == 0 && id.rfind('/') > 9) {
    e.switch_name = id.substr(9, id.rfind('/') - 9);
    e.switch_port = id.substr(id.rfind('/') + 1);
    b = static_cast<int>(ParseInt(e.switch_port).value_or(-1));
    e.port_part = "NVSwitch " + e.switch_name + " port " + e.switch_port;
    if (topology_ != nullptr) {
      auto links = topology_->GpuLinksOnSwitchPort(e.switch_name, b);
      if (!links.empty()) {
        e.peer = "nvlink/" + std::to_string(links.front().first) + "/" + std::to_string(links.front().second);
        e.cable = topology_->FindNvlink(links.front().first, links.front().second)->cable;
      }
    }
  } else {
    e.port_part = id + " (NVLink totals; per-link counters needed to name the link)";
    e.device_end = true;
  }
  return e;
}

std::vector<Finding> NvlinkFabricDetector::Findings() const {
  std::vector<fabric::LinkEnd> ends;
  for (const auto& [id, issue] : issues_) ends.push_back(Describe(id, issue));
  std::vector<Finding> out = fabric::PlaceLinkFaults(ends, observed_, FaultClass::kNvswitchFault, Action::kRma, opt_);
  for (Finding& f : out) {
    // A port blamed on a few non-fatal SXids alone is watched, not reseated: one non-fatal
    // SXid is not a cable replacement (it still counts as the other end of a bad link).
    if (f.attrs["placement"] != "port") continue;
    auto it = issues_.find(f.summary.substr(0, f.summary.find(": ")));
    if (it != issues_.end() && LoneNonFatalSxids(it->second)) {
      f.action = Action::kMonitor;
      f.summary += " if it keeps reporting (non-fatal SXids only so far: watch it)";
    }
  }
  for (Finding& f : out) {
    if (f.component.type == ComponentType::kNvswitch && f.attrs["placement"] == "switch") {
      f.component.keys["nvswitch"] = f.component.name;
    }
  }
  return out;
}

}  // namespace faultline
