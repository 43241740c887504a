#include "sim/harness/sim_platform.h"

#include <cstdio>
#include <utility>

namespace faultline::sim {

using actions::ActionClass;
using actions::Observed;

SimPlatform::SimPlatform(std::vector<std::string> nodes) {
  for (std::string& n : nodes) {
    if (!n.empty()) nodes_.emplace(std::move(n), SimNodeState{});
  }
}

std::vector<std::string> SimPlatform::FleetNames(size_t count, const std::string& first) {
  std::vector<std::string> out;
  if (count == 0) return out;
  if (!first.empty()) out.push_back(first);
  for (size_t i = 1; out.size() < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%04zu", i);
    if (name != first) out.emplace_back(name);
  }
  return out;
}

bool SimPlatform::Handles(ActionClass) const { return true; }

Status SimPlatform::Carry(SimNodeState& n, const actions::Decision& d, PlatformApply& rec) {
  switch (d.action_class) {
    case ActionClass::kCordon:
    case ActionClass::kDrain: {
      const bool drain = d.action_class == ActionClass::kDrain;
      // Someone else's state is left as it is; ours is upgraded from cordon to drain only.
      if (n.out != SimNodeState::Out::kIn && n.owner != "faultline") return Status::Ok();
      if (n.out == SimNodeState::Out::kDrained || (!drain && n.out == SimNodeState::Out::kCordoned)) {
        return Status::Ok();
      }
      if (n.out == SimNodeState::Out::kIn) {
        n.since_ns = d.time_ns;
        n.decision_key = d.key;
      }
      n.out = drain ? SimNodeState::Out::kDrained : SimNodeState::Out::kCordoned;
      n.owner = "faultline";
      rec.changed = true;
      return Status::Ok();
    }
    case ActionClass::kResetGpu:
      ++n.gpu_resets;
      rec.changed = true;
      return Status::Ok();
    case ActionClass::kRebootNode:
      rec.changed = n.reboots.insert(d.key).second;
      return Status::Ok();
    case ActionClass::kRmaBundle:
    case ActionClass::kFacilityTicket:
      rec.changed = n.bundles.insert(d.key).second;
      return Status::Ok();
    case ActionClass::kWebhook:
    case ActionClass::kNotifyUser:
      ++n.posts;
      rec.changed = true;
      return Status::Ok();
  }
  return Status(StatusCode::kInvalidArgument, "sim platform: unknown action class");
}

Status SimPlatform::Apply(const actions::Decision& d) {
  std::lock_guard<std::mutex> lock(mu_);
  PlatformApply rec{.time_ns = d.time_ns,
                    .node = d.target_node,
                    .action_class = d.action_class,
                    .component = d.diagnosis.component,
                    .fault_class = d.diagnosis.fault_class,
                    .recommended = d.diagnosis.action,
                    .diagnosis_id = d.diagnosis_id,
                    .decision_key = d.key};
  Status s;
  auto fail = fail_next_.find(d.action_class);
  auto it = nodes_.find(d.target_node);
  if (fail != fail_next_.end() && fail->second.first > 0) {
    --fail->second.first;
    s = Status(StatusCode::kUnavailable, fail->second.second);
  } else if (it == nodes_.end()) {
    s = Status(StatusCode::kNotFound, "sim platform: no node '" + d.target_node + "' in the cluster");
  } else {
    s = Carry(it->second, d, rec);
  }
  if (!s.ok()) rec.error = s.message();
  applies_.push_back(std::move(rec));
  return s;
}

Result<Observed> SimPlatform::Observe(const actions::Decision& d) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(d.target_node);
  if (it == nodes_.end()) {
    return Status(StatusCode::kNotFound, "sim platform: no node '" + d.target_node + "' in the cluster");
  }
  const SimNodeState& n = it->second;
  switch (d.action_class) {
    case ActionClass::kCordon:
    case ActionClass::kDrain:
      if (n.out == SimNodeState::Out::kIn) return Observed::kNotInEffect;
      if (n.owner != "faultline") return Observed::kOtherOwner;
      if (d.action_class == ActionClass::kDrain && n.out != SimNodeState::Out::kDrained) return Observed::kNotInEffect;
      return Observed::kInEffect;
    case ActionClass::kRebootNode:
      return n.reboots.count(d.key) ? Observed::kInEffect : Observed::kNotInEffect;
    case ActionClass::kRmaBundle:
    case ActionClass::kFacilityTicket:
      return n.bundles.count(d.key) ? Observed::kInEffect : Observed::kNotInEffect;
    case ActionClass::kResetGpu:
    case ActionClass::kWebhook:
    case ActionClass::kNotifyUser:
      return Observed::kUnknown;
  }
  return Observed::kUnknown;
}

Result<actions::FleetState> SimPlatform::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  ++fleet_reads_;
  actions::FleetState state;
  state.known_nodes = nodes_.size();
  for (const auto& [name, n] : nodes_) {
    if (n.out != SimNodeState::Out::kIn && n.owner == "faultline") state.faultline_drains.push_back({name, n.since_ns});
  }
  return state;
}

Status SimPlatform::OperatorDrain(const std::string& node, const std::string& who, int64_t time_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return Status(StatusCode::kNotFound, "sim platform: no node '" + node + "'");
  if (who.empty() || who == "faultline") {
    return Status(StatusCode::kInvalidArgument, "sim platform: an operator drain needs the operator's name");
  }
  it->second.out = SimNodeState::Out::kDrained;
  it->second.owner = who;
  it->second.since_ns = time_ns;
  it->second.decision_key.clear();
  return Status::Ok();
}

void SimPlatform::FailNext(ActionClass c, int count, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_[c] = {count, std::move(error)};
}

std::vector<PlatformApply> SimPlatform::applies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applies_;
}

std::optional<SimNodeState> SimPlatform::node(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

size_t SimPlatform::known_nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

int SimPlatform::fleet_reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fleet_reads_;
}

}  // namespace faultline::sim
