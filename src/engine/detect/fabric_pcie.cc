#include "engine/detect/fabric_pcie.h"

#include <algorithm>
#include <cmath>

#include "parse/text.h"

namespace faultline {
namespace {

using fabric::EndIssue;
using fabric::FormatRate;

int GenOfSpeed(double gts) {
  constexpr double kRates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0};
  for (int i = 0; i < 7; ++i) {
    if (std::fabs(gts - kRates[i]) < 0.01 * kRates[i]) return i + 1;
  }
  return 0;
}

std::optional<double> AttrNum(const Observation& obs, const char* key) {
  auto it = obs.attrs.find(key);
  if (it == obs.attrs.end()) return std::nullopt;
  auto v = ParseDouble(it->second);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::string Attr(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

std::vector<std::string> SplitChain(const std::string& chain) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < chain.size()) {
    size_t end = chain.find('>', start);
    if (end == std::string::npos) end = chain.size();
    out.push_back(chain.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string JoinReasons(const fabric::EndIssue& issue) {
  std::string out;
  for (const std::string& r : issue.reasons) out += (out.empty() ? "" : ", ") + r;
  return out;
}

bool IsGpu(const ComponentRef& ref) { return ref.type == ComponentType::kGpu || Attr(ref.keys, "device") == "gpu"; }

}  // namespace

// Riser and slot names from the topology reach this detector as component keys (the
// collector attaches them), so the topology itself is not needed here.
PcieFabricDetector::PcieFabricDetector(const FabricOptions& options, const Topology* /*topology*/) : opt_(options) {}

double PcieFabricDetector::ExpectedReplaysPerMinute(int gen, int width) const {
  const double per_lane = gen >= 5   ? opt_.pcie_replay_gen5_per_lane_min
                          : gen == 4 ? opt_.pcie_replay_gen4_per_lane_min
                                     : opt_.pcie_replay_gen3_per_lane_min;
  return per_lane * std::max(1, width);
}

void PcieFabricDetector::Observe(const Observation& obs) {
  if (obs.component.type == ComponentType::kPcie && !obs.component.name.empty()) {
    ++revision_;
    pcie_by_bdf_[obs.component.name] = obs.component;
  }
  switch (obs.kind) {
    case ObsKind::kPcieLinkSpeed:
    case ObsKind::kPcieLinkGen:
    case ObsKind::kPcieLinkWidth:
    case ObsKind::kPcieReplay:
    case ObsKind::kPcieAer:
      ++revision_;
      break;
    default:
      break;
  }
  switch (obs.kind) {
    case ObsKind::kPcieLinkSpeed:
    case ObsKind::kPcieLinkGen:
    case ObsKind::kPcieLinkWidth:
      ObserveLink(obs);
      break;
    case ObsKind::kPcieReplay:
      ObserveReplay(obs);
      break;
    case ObsKind::kPcieAer:
      // Kernel-log AER lines are the kernel-log layer's; here only sysfs counters.
      if (obs.source != Source::kKmsg) ObserveAer(obs);
      break;
    default:
      break;
  }
}

void PcieFabricDetector::ObserveLink(const Observation& obs) {
  if (!obs.value || !std::isfinite(*obs.value)) return;
  const double cur = *obs.value;
  const std::optional<double> max = AttrNum(obs, "max");
  LinkState& st = links_[obs.component.Id()];
  std::string reason;
  Severity sev = Severity::kWarning;
  if (obs.kind == ObsKind::kPcieLinkWidth) {
    st.width = static_cast<int>(cur);
    if (max) st.max_width = static_cast<int>(*max);
    if (max && cur < *max) {
      reason = cur <= 0 ? "link down (width x0 of x" + FormatRate(*max) + ")"
                        : "trained at x" + FormatRate(cur) + " of x" + FormatRate(*max);
      if (cur <= 0) sev = Severity::kCritical;
    }
  } else {
    const bool sysfs = obs.kind == ObsKind::kPcieLinkSpeed;
    const int gen = sysfs ? GenOfSpeed(cur) : static_cast<int>(cur);
    const int max_gen = max ? (sysfs ? GenOfSpeed(*max) : static_cast<int>(*max)) : 0;
    st.gen = gen;
    if (max_gen > 0) st.max_gen = max_gen;
    // An idle GPU parks its link at Gen1 (2.5 GT/s) to save power.
    const bool idle = opt_.ignore_gpu_idle_speed && IsGpu(obs.component) && gen == 1;
    if (max && cur < *max * 0.99 && !idle) {
      reason = sysfs ? "trained at " + FormatRate(cur) + " GT/s (Gen" + std::to_string(gen) + ") of " +
                           FormatRate(*max) + " GT/s (Gen" + std::to_string(max_gen) + ")"
                     : "trained at Gen" + std::to_string(gen) + " of Gen" + std::to_string(max_gen);
    }
  }
  RememberReading(obs, !reason.empty());
  if (reason.empty()) return;
  EndIssue& issue = downtrained_[obs.component.Id()];
  issue.Mark(obs, FaultClass::kPcieLinkDegraded, sev, reason, opt_);
}

void PcieFabricDetector::RememberReading(const Observation& obs, bool below_max) {
  // Only sysfs readings carry the PCI id that makes functions siblings.
  if (obs.component.type != ComponentType::kPcie || Attr(obs.component.keys, "pci_id").empty()) return;
  if (obs.kind != ObsKind::kPcieLinkWidth && obs.kind != ObsKind::kPcieLinkSpeed) return;
  LinkReading& r = readings_[obs.component.Id() + "#" + std::string(ToString(obs.kind))];
  if (r.since_ns == 0 || r.obs.value != obs.value) r.since_ns = obs.time_ns;
  r.obs = obs;
  r.below_max = below_max;
}

// Functions with the same PCI id (and role) should train alike: one slower than a strict
// majority of at least pcie_sibling_min_agree siblings is degraded, even when its max_link_*
// files cannot say so (a bifurcated or misreported slot). Readings the below-max rule
// already judged are left to it; idle GPUs parked at Gen1 are neither judged nor counted.
void PcieFabricDetector::AddSiblingDowntrained(std::map<std::string, EndIssue>& issues) const {
  std::map<std::string, std::vector<const LinkReading*>> groups;
  for (const auto& [key, r] : readings_) {
    const bool idle_gpu = opt_.ignore_gpu_idle_speed && r.obs.kind == ObsKind::kPcieLinkSpeed &&
                          IsGpu(r.obs.component) && GenOfSpeed(*r.obs.value) == 1;
    if (idle_gpu) continue;
    groups[Attr(r.obs.component.keys, "pci_id") + "|" + Attr(r.obs.component.keys, "device") + "|" +
           std::string(ToString(r.obs.kind))]
        .push_back(&r);
  }
  for (const auto& [group, members] : groups) {
    std::map<double, int> by_value;
    for (const LinkReading* r : members) ++by_value[*r->obs.value];
    double mode = 0;
    int agree = 0;
    for (const auto& [v, n] : by_value) {
      if (n >= agree) mode = v, agree = n;  // ascending: ties go to the faster value
    }
    const int total = static_cast<int>(members.size());
    if (agree < opt_.pcie_sibling_min_agree || agree * 2 <= total) continue;
    for (const LinkReading* r : members) {
      const double v = *r->obs.value;
      // x0 / 0 GT/s is a link that is down or a function that is gone (fell off the bus), not a
      // link that trained slower than its siblings: the kernel log and NVML say which.
      if (r->below_max || v <= 0 || v >= mode * 0.99) continue;
      const bool width = r->obs.kind == ObsKind::kPcieLinkWidth;
      const std::string what = width ? "x" + FormatRate(v) : FormatRate(v) + " GT/s";
      const std::string theirs = width ? "x" + FormatRate(mode) : FormatRate(mode) + " GT/s";
      EndIssue& issue = issues[r->obs.component.Id()];
      const bool fresh = issue.count == 0;
      issue.Mark(r->obs, FaultClass::kPcieLinkDegraded, Severity::kWarning,
                 "trained at " + what + " while " + std::to_string(agree) + " of " + std::to_string(total) +
                     " functions with PCI id " + Attr(r->obs.component.keys, "pci_id") + " run " + theirs,
                 opt_);
      if (fresh) issue.first_ns = std::min(issue.first_ns, r->since_ns);
      issue.attrs["expected_from"] = "siblings";
    }
  }
}

void PcieFabricDetector::ObserveReplay(const Observation& obs) {
  if (!obs.value) return;
  const std::string id = obs.component.Id();
  auto d = counters_.Update(id + "#replay", *obs.value, obs.time_ns);
  if (!d || d->seconds < 1 || d->delta <= 0) return;
  LinkState st = links_[id];
  // NVML reports on gpu/<idx>; sysfs on pcie/<bdf>: fall back to the other's link facts.
  if (auto bdf = obs.component.keys.find("bdf"); bdf != obs.component.keys.end() && (!st.gen || !st.width)) {
    const LinkState& other = links_["pcie/" + bdf->second];
    if (!st.gen) st.gen = other.gen, st.max_gen = other.max_gen;
    if (!st.width) st.width = other.width, st.max_width = other.max_width;
  }
  // Judge against what the link is built for: an idle GPU at Gen1 still replays at its trained rate.
  const int gen = st.max_gen.value_or(st.gen.value_or(opt_.pcie_default_gen));
  const int width = st.max_width.value_or(st.width.value_or(opt_.pcie_default_width));
  const double expected = ExpectedReplaysPerMinute(gen, width);
  const double rate = d->PerMinute();
  if (rate <= expected) return;
  const Severity sev = rate >= expected * opt_.pcie_replay_critical_factor ? Severity::kCritical : Severity::kWarning;
  EndIssue& issue = replays_[id];
  issue.Mark(obs, FaultClass::kPcieLinkDegraded, sev,
             "PCIe replays " + FormatRate(rate) + "/min, expected at most " + FormatRate(expected) + "/min for Gen" +
                 std::to_string(gen) + " x" + std::to_string(width),
             opt_);
  issue.attrs["replays_per_min"] = FormatRate(rate);
  issue.attrs["expected_per_min"] = FormatRate(expected);
  issue.attrs["gen"] = std::to_string(gen);
  issue.attrs["width"] = std::to_string(width);
}

void PcieFabricDetector::ObserveAer(const Observation& obs) {
  if (!obs.value || obs.component.type != ComponentType::kPcie) return;
  const std::string& bdf = obs.component.name;
  const std::string error = Attr(obs.attrs, "error");
  const std::string severity = Attr(obs.attrs, "severity");
  // Root-port totals add up every error reported below the port: they cannot place an
  // error, so the per-device counters do that.
  if (StartsWith(error, "ROOTPORT_")) return;
  if (!StartsWith(error, "TOTAL_")) {
    // A per-type counter ("RxErr", "BadTLP", "CmpltTO"): kept as detail on the device's
    // entry; the TOTAL_* line of the same file decides.
    if (*obs.value <= 0) return;
    EndIssue* issue = severity == "correctable"                         ? &storms_[bdf]
                      : (severity == "nonfatal" || severity == "fatal") ? &uncorrected_[bdf + "#" + severity]
                                                                        : nullptr;
    if (issue != nullptr) issue->attrs["aer_" + error] = FormatRate(*obs.value);
    return;
  }
  auto d = counters_.Update(bdf + "#" + severity + "#" + error, *obs.value, obs.time_ns);
  if (!d || d->delta <= 0) return;
  if (error == "TOTAL_ERR_COR") {
    if (d->delta < static_cast<double>(opt_.aer_storm_min_count) || d->seconds <= 0 ||
        d->PerMinute() < opt_.aer_storm_per_min) {
      return;
    }
    EndIssue& issue = storms_[bdf];
    issue.Mark(obs, FaultClass::kPcieLinkDegraded, Severity::kWarning,
               FormatRate(d->delta) + " corrected AER errors in " + FormatRate(d->seconds) + " s (" +
                   FormatRate(d->PerMinute()) + "/min)",
               opt_);
    return;
  }
  if (error == "TOTAL_ERR_NONFATAL" || error == "TOTAL_ERR_FATAL") {
    const bool fatal = error == "TOTAL_ERR_FATAL";
    EndIssue& issue = uncorrected_[bdf + "#" + (fatal ? "fatal" : "nonfatal")];
    issue.Mark(obs, FaultClass::kPcieLinkDegraded, fatal ? Severity::kFatal : Severity::kCritical,
               "+" + FormatRate(d->delta) + (fatal ? " uncorrected fatal" : " uncorrected non-fatal") + " AER errors",
               opt_);
    return;
  }
}

std::string PcieFabricDetector::PartFor(const ComponentRef& ref) const {
  ComponentRef r = ref;
  if (auto bdf = ref.keys.find("bdf"); bdf != ref.keys.end()) {
    if (auto it = pcie_by_bdf_.find(bdf->second); it != pcie_by_bdf_.end()) r = it->second;
  }
  const std::string riser = Attr(r.keys, "riser"), slot = Attr(r.keys, "slot");
  std::string bdf = Attr(r.keys, "bdf");
  if (bdf.empty()) bdf = r.name;
  if (!riser.empty()) return "riser " + riser + (slot.empty() ? "" : " (slot " + slot + ")");
  if (!slot.empty()) return "slot " + slot + " (" + bdf + ")";
  const std::vector<std::string> chain = SplitChain(Attr(r.keys, "upstream"));
  if (!chain.empty()) return "PCIe link " + chain.back() + " -> " + bdf;
  return "PCIe link of " + (ref.type == ComponentType::kGpu ? "GPU " + ref.name : bdf);
}

std::vector<Finding> PcieFabricDetector::PlaceAerStorms() const {
  std::vector<Finding> out;
  // Only issues with the storm itself (Mark was called), not detail-only entries.
  std::vector<std::pair<size_t, std::string>> order;
  auto chain_of = [&](const std::string& bdf) {
    auto it = pcie_by_bdf_.find(bdf);
    return it == pcie_by_bdf_.end() ? std::vector<std::string>{} : SplitChain(Attr(it->second.keys, "upstream"));
  };
  for (const auto& [bdf, issue] : storms_) {
    if (issue.count > 0) order.emplace_back(chain_of(bdf).size(), bdf);
  }
  // Deepest first: an endpoint pairs with its parent port before that port is judged alone.
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  std::set<std::string> used;
  for (const auto& [depth, bdf] : order) {
    if (used.count(bdf)) continue;
    const EndIssue& issue = storms_.at(bdf);
    const std::vector<std::string> chain = chain_of(bdf);
    Finding f = fabric::FindingFrom(issue);
    if (auto it = pcie_by_bdf_.find(bdf); it != pcie_by_bdf_.end()) f.component = it->second;
    const std::string role = Attr(f.component.keys, "device");
    const std::string part = PartFor(f.component);
    f.action = Action::kReseatOrReplaceLink;
    const std::string what = *issue.reasons.begin();
    auto parent = chain.empty() ? storms_.end() : storms_.find(chain.back());
    if (parent != storms_.end() && parent->second.count > 0 && !used.count(chain.back()) &&
        parent->second.last_ns + opt_.correlation_window_ns >= issue.first_ns &&
        issue.last_ns + opt_.correlation_window_ns >= parent->second.first_ns) {
      for (const Evidence& e : parent->second.evidence) fabric::AddEvidence(f.evidence, e, opt_.max_evidence);
      f.count += parent->second.count;
      f.first_ns = std::min(f.first_ns, parent->second.first_ns);
      f.last_ns = std::max(f.last_ns, parent->second.last_ns);
      f.attrs["placement"] = "link";
      f.attrs["upstream_port"] = chain.back();
      f.confidence = 0.85;
      f.summary = "corrected AER storm on both ends of the PCIe link " + chain.back() + " -> " + bdf + " (" + role +
                  ", " + what + "): reseat or replace " + part;
      used.insert(chain.back());
    } else if (role == "root_port" || role == "bridge") {
      f.attrs["placement"] = role == "root_port" ? "root_port" : "switch_port";
      const std::string port = (role == "root_port" ? "root port " : "PCIe switch port ") + bdf;
      f.confidence = 0.7;
      f.summary =
          "corrected AER storm reported only by " + port + " (" + what + "), devices below it are clean: " + port;
      f.attrs["part"] = port;
    } else {
      const bool rma = issue.episodes >= opt_.rma_after_episodes;
      f.action = rma ? Action::kRma : Action::kReseatOrReplaceLink;
      f.attrs["placement"] = "device";
      f.confidence = 0.7;
      f.summary = "corrected AER storm on " + role + " " + bdf + " only (" + what + "), its switch port is clean: " +
                  (rma ? "repeated in " + std::to_string(issue.episodes) + " episodes, RMA the " + role
                       : "reseat the " + role + " in " + part);
    }
    if (!f.attrs.count("part")) f.attrs["part"] = part;
    used.insert(bdf);
    out.push_back(std::move(f));
  }
  return out;
}

Finding PcieFabricDetector::DowntrainedFinding(const std::string& id, const EndIssue& issue) const {
  Finding f = fabric::FindingFrom(issue);
  const std::string part = PartFor(f.component);
  f.action = Action::kReseatOrReplaceLink;
  f.confidence = Attr(issue.attrs, "expected_from") == "siblings" ? 0.65 : 0.75;
  f.attrs["placement"] = "link";
  f.attrs["part"] = part;
  f.summary = id + " PCIe link " + JoinReasons(issue) + " (silent slowdown): reseat or replace " + part;
  return f;
}

std::vector<Finding> PcieFabricDetector::Findings() const {
  std::vector<Finding> out;
  std::map<std::string, EndIssue> downtrained = downtrained_;
  AddSiblingDowntrained(downtrained);
  for (const auto& [id, issue] : downtrained) out.push_back(DowntrainedFinding(id, issue));
  for (const auto& [id, issue] : replays_) {
    Finding f = fabric::FindingFrom(issue);
    const std::string part = PartFor(f.component);
    f.action = Action::kReseatOrReplaceLink;
    f.confidence = 0.7;
    f.attrs["placement"] = "link";
    f.attrs["part"] = part;
    f.summary = id + ": PCIe replays " + Attr(issue.attrs, "replays_per_min") + "/min (latest), expected at most " +
                Attr(issue.attrs, "expected_per_min") + "/min for Gen" + Attr(issue.attrs, "gen") + " x" +
                Attr(issue.attrs, "width") + ": reseat or replace " + part;
    out.push_back(std::move(f));
  }
  for (Finding& f : PlaceAerStorms()) out.push_back(std::move(f));
  for (const auto& [key, issue] : uncorrected_) {
    if (issue.count == 0) continue;
    Finding f = fabric::FindingFrom(issue);
    const std::string bdf = key.substr(0, key.find('#'));
    if (auto it = pcie_by_bdf_.find(bdf); it != pcie_by_bdf_.end()) f.component = it->second;
    const std::vector<std::string> chain = SplitChain(Attr(f.component.keys, "upstream"));
    const std::string reporting = chain.empty() ? bdf : chain.front();
    f.attrs["reporting_port"] = reporting;
    f.attrs["part"] = PartFor(f.component);
    f.attrs["placement"] = "device";
    const bool fatal = issue.severity == Severity::kFatal;
    f.action = fatal ? Action::kDrain : Action::kReseatOrReplaceLink;
    f.confidence = 0.8;
    f.summary = *issue.reasons.begin() + " on " + bdf + " (reported to root port " + reporting + ")" +
                (fatal ? ": the link is unreliable, drain the node" : ": reseat or replace " + f.attrs["part"]);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace faultline
