#include "actions/actuator.h"

#include <algorithm>
#include <array>
#include <utility>

namespace faultline::actions {
namespace {

constexpr std::array<std::pair<ActionClass, std::string_view>, 8> kNames = {{
    {ActionClass::kCordon, "cordon"},
    {ActionClass::kDrain, "drain"},
    {ActionClass::kResetGpu, "reset_gpu"},
    {ActionClass::kRebootNode, "reboot_node"},
    {ActionClass::kRmaBundle, "rma_bundle"},
    {ActionClass::kFacilityTicket, "facility_ticket"},
    {ActionClass::kWebhook, "webhook"},
    {ActionClass::kNotifyUser, "notify_user"},
}};

constexpr size_t kMaxFileNameKeyBytes = 160;

bool SafeNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// The low 32 bits of h as 8 hex digits.
std::string Hex8(uint64_t h) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(8, '0');
  for (int i = 7; i >= 0; --i, h >>= 4) hex[static_cast<size_t>(i)] = kDigits[h & 0xf];
  return hex;
}

}  // namespace

std::string DiagnosisTag(std::string_view node, int64_t diagnosis_id) {
  std::string name;
  bool changed = false;
  for (char c : node) {
    changed |= !SafeNameByte(c);
    name.push_back(SafeNameByte(c) ? c : '_');
  }
  if (name.empty()) name = "_";
  if (changed || name.size() > kDiagnosisTagNodeMaxBytes) {
    // Room for "-" and the hash inside the bound; the hash keeps the cut or mended name unique.
    name.resize(std::min(name.size(), kDiagnosisTagNodeMaxBytes - 9));
    name += "-" + Hex8(Fnv1a64(node));
  }
  return name + "/d" + std::to_string(diagnosis_id);
}

std::string DecisionFileName(std::string_view key, std::string_view suffix) {
  std::string name;
  for (char c : key) {
    if (name.size() >= kMaxFileNameKeyBytes) break;
    name.push_back(SafeNameByte(c) ? c : '_');
  }
  if (name.empty() || name.front() == '.') name.insert(name.begin(), '_');
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hash(16, '0');
  uint64_t h = Fnv1a64(key);
  for (int i = 15; i >= 0; --i, h >>= 4) hash[static_cast<size_t>(i)] = kDigits[h & 0xf];
  return name + "-" + hash + std::string(suffix);
}

std::string_view ToString(ActionClass c) {
  for (const auto& [v, name] : kNames) {
    if (v == c) return name;
  }
  return "webhook";
}

std::optional<ActionClass> ParseActionClass(std::string_view name) {
  for (const auto& [v, n] : kNames) {
    if (n == name) return v;
  }
  return std::nullopt;
}

const std::vector<ActionClass>& AllActionClasses() {
  static const std::vector<ActionClass> all = [] {
    std::vector<ActionClass> v;
    for (const auto& [c, name] : kNames) v.push_back(c);
    return v;
  }();
  return all;
}

bool IsDisruptive(ActionClass c) {
  return c == ActionClass::kCordon || c == ActionClass::kDrain || c == ActionClass::kResetGpu ||
         c == ActionClass::kRebootNode;
}

Action CoreAction(ActionClass c) {
  switch (c) {
    case ActionClass::kCordon:
      return Action::kCordon;
    case ActionClass::kDrain:
      return Action::kDrain;
    case ActionClass::kResetGpu:
      return Action::kResetGpu;
    case ActionClass::kRebootNode:
      return Action::kRebootNode;
    case ActionClass::kRmaBundle:
      return Action::kRma;
    case ActionClass::kFacilityTicket:
      return Action::kFacilityTicket;
    case ActionClass::kWebhook:
    case ActionClass::kNotifyUser:
      return Action::kNotifyUser;
  }
  return Action::kNone;
}

}  // namespace faultline::actions
