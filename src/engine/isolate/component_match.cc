#include "engine/isolate/component_match.h"

#include <array>
#include <string_view>
#include <utility>

#include "core/inventory.h"

namespace faultline::isolate {
namespace {

// A key name and the token prefix its value maps to. Several spellings map to one
// prefix because each source names the PCI address differently.
using KeyMap = std::array<std::pair<std::string_view, std::string_view>, 7>;

// Keys that say what a component is.
constexpr KeyMap kIdentityKeys{{
    {"index", "gpu"},
    {"uuid", "uuid"},
    {"serial", "serial"},
    {"bdf", "bdf"},
    {"pci_bus_id", "bdf"},
    {"pci", "bdf"},
    {"slot", "slot"},
}};

// Keys that say what a component is connected to (DESIGN.md "Identity": a GPU's
// upstream bridge, a link's GPU and switch).
constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kAttachKeys{{
    {"upstream_bdf", "bdf"},
    {"upstream_port", "bdf"},
    {"parent_bdf", "bdf"},
    {"root_port", "bdf"},
    {"downstream_bdf", "bdf"},
    {"device_bdf", "bdf"},
    {"gpu_bdf", "bdf"},
    {"source_bdf", "bdf"},
    {"gpu", "gpu"},
    {"gpu_uuid", "uuid"},
    {"gpu_serial", "serial"},
    {"nvswitch", "nvswitch"},
    {"switch", "nvswitch"},
    {"peer_nvswitch", "nvswitch"},
}};

constexpr std::array<std::string_view, 4> kScopeKeys{"coolant_loop", "cooling_loop", "loop", "power_domain"};

// "bdf:<normalized>" when the value is a PCI address, "uuid:" for a GPU UUID, else
// "<prefix>:<value>". Lets gpu/0000:3b:00.0 and a key bdf=0000:3B:00.0 meet.
std::string Token(std::string_view prefix, std::string_view value) {
  if (std::string bdf = NormalizeBdf(value); !bdf.empty()) return "bdf:" + bdf;
  if (value.starts_with("GPU-")) return "uuid:" + std::string(value);
  return std::string(prefix) + ":" + std::string(value);
}

template <typename Map>
void AddKeyTokens(const ComponentRef& ref, const Map& map, std::set<std::string>& out) {
  for (const auto& [key, prefix] : map) {
    auto it = ref.keys.find(std::string(key));
    if (it != ref.keys.end() && !it->second.empty()) out.insert(Token(prefix, it->second));
  }
}

// The GPU part of "nvlink/<gpu>/<link>".
std::string_view NvlinkGpu(std::string_view name) { return name.substr(0, name.find('/')); }

}  // namespace

std::set<std::string> IdentityTokens(const ComponentRef& ref) {
  std::set<std::string> out;
  out.insert(ref.Id());
  const std::string_view type = ToString(ref.type);
  if (!ref.name.empty()) {
    const bool typed_by_name = ref.type == ComponentType::kGpu || ref.type == ComponentType::kPcie;
    out.insert(typed_by_name ? Token(type, ref.name) : std::string(type) + ":" + ref.name);
  }
  AddKeyTokens(ref, kIdentityKeys, out);
  return out;
}

// The fabric detector's "upstream" key: the bridge chain from the root port down,
// "0000:00:01.0>0000:01:00.0" (',' also accepted).
void AddChainTokens(const ComponentRef& ref, std::set<std::string>& out) {
  auto it = ref.keys.find("upstream");
  if (it == ref.keys.end()) return;
  std::string_view chain = it->second;
  while (!chain.empty()) {
    const size_t end = chain.find_first_of(">,");
    const std::string_view hop = chain.substr(0, end);
    if (std::string bdf = NormalizeBdf(hop); !bdf.empty()) out.insert("bdf:" + bdf);
    if (end == std::string_view::npos) break;
    chain.remove_prefix(end + 1);
  }
}

std::set<std::string> AttachTokens(const ComponentRef& ref) {
  std::set<std::string> out = IdentityTokens(ref);
  AddKeyTokens(ref, kAttachKeys, out);
  AddChainTokens(ref, out);
  if (ref.type == ComponentType::kNvlink && !ref.name.empty()) out.insert(Token("gpu", NvlinkGpu(ref.name)));
  return out;
}

namespace {
bool Intersect(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& t : a) {
    if (b.contains(t)) return true;
  }
  return false;
}
}  // namespace

ComponentTokens TokensOf(const ComponentRef& ref) {
  return ComponentTokens{ref.type, IdentityTokens(ref), AttachTokens(ref)};
}

void MergeTokens(ComponentTokens& into, const ComponentTokens& from) {
  into.identity.insert(from.identity.begin(), from.identity.end());
  into.attach.insert(from.attach.begin(), from.attach.end());
}

bool SameComponent(const ComponentTokens& a, const ComponentTokens& b) {
  if (a.type == b.type) return Intersect(a.identity, b.identity);
  // An HCA's InfiniBand port and the HCA's PCIe function are one card: fabric findings
  // land on either (a port counter, or the device end of a link), joined by the bus
  // address. Two ports of one card are not the same part, so only ib <-> pcie.
  const bool ib_pcie = (a.type == ComponentType::kIb && b.type == ComponentType::kPcie) ||
                       (a.type == ComponentType::kPcie && b.type == ComponentType::kIb);
  return ib_pcie && Intersect(a.identity, b.identity);
}

bool SameComponent(const ComponentRef& a, const ComponentRef& b) { return SameComponent(TokensOf(a), TokensOf(b)); }

bool Attached(const ComponentTokens& a, const ComponentTokens& b) {
  // One side must *be* what the other is attached to: two GPUs behind the same switch
  // share an upstream port but are not attached to each other.
  return Intersect(a.identity, b.attach) || Intersect(a.attach, b.identity);
}

bool Attached(const ComponentRef& a, const ComponentRef& b) { return Attached(TokensOf(a), TokensOf(b)); }

namespace {
// The value of a scoping key; a coolant/<loop> component is scoped by its own name (a
// pump or leak detector names itself, not a loop: it is scoped only by its keys).
std::string_view ScopeValue(const ComponentRef& ref, std::string_view key) {
  if (auto it = ref.keys.find(std::string(key)); it != ref.keys.end()) return it->second;
  if (IsCoolantLoop(ref) && key == "coolant_loop") return ref.name;
  return {};
}
}  // namespace

bool IsCoolantLoop(const ComponentRef& ref) {
  return ref.type == ComponentType::kCoolant && ref.name.rfind("pump-", 0) != 0 && ref.name.rfind("leak-", 0) != 0;
}

bool SameScope(const ComponentRef& a, const ComponentRef& b) {
  for (std::string_view key : kScopeKeys) {
    std::string_view va = ScopeValue(a, key);
    std::string_view vb = ScopeValue(b, key);
    if (!va.empty() && !vb.empty() && va != vb) return false;
  }
  return true;
}

void MergeKeys(ComponentRef& into, const ComponentRef& from) {
  for (const auto& [key, value] : from.keys) into.keys.emplace(key, value);
}

}  // namespace faultline::isolate
