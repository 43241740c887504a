#include "actions/slurm.h"

#include <cstdio>
#include <ctime>
#include <set>

namespace faultline::actions {
namespace {

bool SafeReasonByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' || c == '_' ||
         c == '.' || c == '/' || c == ':' || c == '#' || c == '=' || c == '+' || c == '-';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// The value of `Key=` in a `scontrol -o` line: up to the next blank.
std::string_view Field(std::string_view line, std::string_view key) {
  size_t pos = 0;
  while ((pos = line.find(key, pos)) != std::string_view::npos) {
    if (pos == 0 || line[pos - 1] == ' ') {
      std::string_view rest = line.substr(pos + key.size());
      return rest.substr(0, rest.find(' '));
    }
    pos += key.size();
  }
  return {};
}

// The reason's last word: the diagnosis tag of every reason faultline writes.
std::string_view LastWord(std::string_view reason) {
  const size_t blank = reason.rfind(' ');
  return blank == std::string_view::npos ? std::string_view() : reason.substr(blank + 1);
}

// OK when `node`'s drain is faultline's for `tag`; else kPermissionDenied saying whose it is.
Status CheckOurDrain(const SlurmNode& node, std::string_view tag) {
  const std::string quoted = " (reason \"" + node.reason + "\")";
  if (!IsFaultlineReason(node.reason)) {
    return Status(StatusCode::kPermissionDenied, node.name + " is drained by someone else" + quoted + ": left drained");
  }
  const std::string_view word = LastWord(node.reason);
  if (word == tag) return Status::Ok();
  // A reason written before tags named the node: "d42" may be any node's diagnosis 42.
  const std::string_view bare_id = tag.substr(tag.rfind('/') + 1);
  if (word == bare_id) {
    return Status(StatusCode::kPermissionDenied,
                  node.name + " is drained by an older faultline whose reason names no node" + quoted +
                      ", so faultline cannot tell whether " + std::string(bare_id) +
                      " is this diagnosis or another node's: left drained. If it is this incident, resume it by "
                      "hand: scontrol update nodename=" +
                      node.name + " state=resume");
  }
  return Status(StatusCode::kPermissionDenied,
                node.name + " is drained by faultline for another diagnosis" + quoted + ": left drained");
}

}  // namespace

// The longest tag (" " + node part + "/d" + an int64) still leaves the prefix whole.
static_assert(kSlurmReasonPrefix.size() + 1 + kDiagnosisTagNodeMaxBytes + 2 + 20 <= kSlurmReasonMaxBytes);

std::string SlurmDrainReason(const Decision& d) {
  std::string text = std::string(kSlurmReasonPrefix) + std::string(ToString(d.diagnosis.fault_class)) + " " +
                     d.diagnosis.component.Id();
  for (char& c : text) {
    if (!SafeReasonByte(c)) c = '_';
  }
  // Cut the text, never the tag: resolve and recovery match on it.
  const std::string tag = " " + DiagnosisTag(d.node, d.diagnosis_id);
  if (text.size() + tag.size() > kSlurmReasonMaxBytes) text.resize(kSlurmReasonMaxBytes - tag.size());
  return text + tag;
}

bool IsFaultlineReason(std::string_view reason) {
  return reason.substr(0, kSlurmReasonPrefix.size()) == kSlurmReasonPrefix;
}

bool SlurmNode::Drained() const {
  std::string upper;
  for (char c : state) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return upper.find("DRAIN") != std::string::npos;
}

int64_t ParseSlurmTime(std::string_view text) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const std::string t(Trim(text));
  char tail = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail) != 6) return 0;
  // Years outside 1970..2200 are no time a node was drained (and would overflow in ns).
  if (y < 1970 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      s < 0 || s > 60) {
    return 0;
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = -1;
  const std::time_t secs = std::mktime(&tm);
  if (secs == static_cast<std::time_t>(-1)) return 0;
  return static_cast<int64_t>(secs) * 1'000'000'000;
}

Result<SlurmNode> ParseScontrolNode(std::string_view line) {
  line = Trim(line);
  SlurmNode n;
  n.name = std::string(Field(line, "NodeName="));
  n.state = std::string(Field(line, "State="));
  if (n.name.empty() || n.state.empty()) {
    return Status(StatusCode::kCorrupt, "scontrol output without NodeName=/State=");
  }
  // Reason is the last field and may hold blanks: "Reason=text [user@2026-12-01T18:50:50]".
  const size_t at = line.find(" Reason=");
  if (at != std::string_view::npos) {
    std::string_view reason = line.substr(at + 8);
    if (!reason.empty() && reason.back() == ']') {
      const size_t open = reason.rfind(" [");
      if (open != std::string_view::npos) {
        std::string_view stamp = reason.substr(open + 2, reason.size() - open - 3);
        if (const size_t user_end = stamp.find('@'); user_end != std::string_view::npos) {
          n.reason_time_ns = ParseSlurmTime(stamp.substr(user_end + 1));
        }
        reason = reason.substr(0, open);
      }
    }
    n.reason = std::string(Trim(reason));
  }
  return n;
}

Result<std::vector<SlurmNode>> ParseSinfoNodes(std::string_view text) {
  std::vector<SlurmNode> out;
  std::set<std::string> seen;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = Trim(text.substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    // %N|%T|%H|%E: the reason comes last so a '|' inside it cannot shift the fields.
    const size_t a = line.find('|');
    const size_t b = a == std::string_view::npos ? a : line.find('|', a + 1);
    const size_t c = b == std::string_view::npos ? b : line.find('|', b + 1);
    if (c == std::string_view::npos) return Status(StatusCode::kCorrupt, "sinfo line without 4 fields");
    SlurmNode n;
    n.name = std::string(line.substr(0, a));
    n.state = std::string(line.substr(a + 1, b - a - 1));
    while (!n.state.empty() && std::string_view("*~#!%$@^-").find(n.state.back()) != std::string_view::npos) {
      n.state.pop_back();
    }
    n.reason_time_ns = ParseSlurmTime(line.substr(b + 1, c - b - 1));
    n.reason = std::string(line.substr(c + 1));
    if (n.reason == "none") n.reason.clear();
    if (n.name.empty()) return Status(StatusCode::kCorrupt, "sinfo line without a node name");
    if (seen.insert(n.name).second) out.push_back(std::move(n));
  }
  return out;
}

SlurmActuator::SlurmActuator(ipmi::CommandRunner& runner, SlurmOptions options)
    : runner_(runner), options_(std::move(options)) {}

bool SlurmActuator::Handles(ActionClass c) const { return c == ActionClass::kCordon || c == ActionClass::kDrain; }

Result<std::string> SlurmActuator::Run(std::vector<std::string> argv) {
  ipmi::CommandOptions o;
  o.timeout_ms = options_.timeout_ms;
  o.max_output_bytes = 16 << 20;
  return runner_.Run(argv, o);
}

Result<SlurmNode> SlurmActuator::ShowNode(const std::string& name) {
  if (name.empty()) return Status(StatusCode::kInvalidArgument, "no Slurm node name");
  auto out = Run({options_.scontrol, "show", "node", "-o", name});
  if (!out.ok()) return out.status();
  return ParseScontrolNode(*out);
}

Result<Observed> SlurmActuator::Observe(const Decision& d) {
  auto node = ShowNode(d.target_node);
  if (!node.ok()) return node.status();
  if (!node->Drained()) return Observed::kNotInEffect;
  return IsFaultlineReason(node->reason) ? Observed::kInEffect : Observed::kOtherOwner;
}

Status SlurmActuator::Apply(const Decision& d) {
  if (!Handles(d.action_class)) {
    return Status(StatusCode::kUnsupported, "slurm cannot " + std::string(ToString(d.action_class)));
  }
  auto before = Observe(d);
  if (!before.ok()) return before.status();
  // Already drained: by us (a repeat) or by an operator (whose reason we must not overwrite).
  if (*before != Observed::kNotInEffect) return Status::Ok();
  auto updated =
      Run({options_.scontrol, "update", "nodename=" + d.target_node, "state=drain", "reason=" + SlurmDrainReason(d)});
  if (!updated.ok()) return updated.status();
  auto after = Observe(d);
  if (!after.ok()) return after.status();
  if (*after == Observed::kNotInEffect) {
    return Status(StatusCode::kUnavailable, "scontrol accepted the drain but " + d.target_node + " is not drained");
  }
  return Status::Ok();
}

Result<FleetState> SlurmActuator::Read() {
  auto out = Run({options_.sinfo, "-h", "-N", "-o", "%N|%T|%H|%E"});
  if (!out.ok()) return out.status();
  auto nodes = ParseSinfoNodes(*out);
  if (!nodes.ok()) return nodes.status();
  FleetState fleet;
  fleet.known_nodes = nodes->size();
  for (const SlurmNode& n : *nodes) {
    if (n.Drained() && IsFaultlineReason(n.reason)) fleet.faultline_drains.push_back({n.name, n.reason_time_ns});
  }
  return fleet;
}

Status SlurmActuator::ResumeIfOurs(const std::string& name, const std::string& diagnosis_tag) {
  auto node = ShowNode(name);
  if (!node.ok()) return node.status();
  if (!node->Drained()) return Status::Ok();
  if (Status ours = CheckOurDrain(*node, diagnosis_tag); !ours.ok()) return ours;
  auto out = Run({options_.scontrol, "update", "nodename=" + name, "state=resume"});
  if (!out.ok()) {
    // slurmctld may clear the drain and still answer an error (22.05, a node in UNKNOWN
    // state: "Invalid node state specified"): what counts is whether the node is still drained.
    auto after = ShowNode(name);
    if (after.ok() && !after->Drained()) return Status::Ok();
    return out.status();
  }
  return Status::Ok();
}

Status SlurmActuator::Revert(const Decision& decision) {
  return ResumeIfOurs(decision.target_node.empty() ? decision.node : decision.target_node,
                      DiagnosisTag(decision.node, decision.diagnosis_id));
}

}  // namespace faultline::actions
