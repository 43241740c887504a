#include "engine/detect/gpu_identity.h"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace faultline {
namespace {

std::string_view Find(const std::map<std::string, std::string>& map, const char* key) {
  auto it = map.find(key);
  return it == map.end() ? std::string_view() : std::string_view(it->second);
}

std::optional<int> ParseIndex(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || std::from_chars(text.data(), end, value).ptr != end || value < 0) return std::nullopt;
  return value;
}

bool IsUuid(std::string_view s) { return s.starts_with("GPU-"); }

// Keys found on the component, then (gpu_identity observations) in the attrs; the
// component's name counts when it is itself a bus id or a UUID (the kernel's gpu/<bdf>).
GpuIdentity IdentityOf(const Observation& obs) {
  const ComponentRef& c = obs.component;
  const bool identity = obs.kind == ObsKind::kGpuIdentity;
  auto key = [&](const char* name) {
    std::string_view v = Find(c.keys, name);
    if (v.empty() && identity) v = Find(obs.attrs, name);
    return std::string(v);
  };
  GpuIdentity g;
  g.bdf = NormalizeBdf(key("bdf"));
  if (g.bdf.empty()) g.bdf = NormalizeBdf(c.name);
  g.uuid = key("uuid");
  if (g.uuid.empty() && IsUuid(c.name)) g.uuid = c.name;
  g.serial = key("serial");
  g.index = ParseIndex(key("index"));
  if (identity) g.name = std::string(Find(obs.attrs, "name"));
  return g;
}

int KeyCount(const GpuIdentity& g) {
  return (g.index ? 1 : 0) + (g.uuid.empty() ? 0 : 1) + (g.serial.empty() ? 0 : 1) + (g.bdf.empty() ? 0 : 1);
}

// Every key of `g` already on one known entry: nothing to learn (the common case, as
// each NVML reading repeats its GPU's keys).
bool AlreadyKnown(const Inventory& inventory, const GpuIdentity& g) {
  for (const GpuIdentity& known : inventory.gpus()) {
    const bool bdf = g.bdf.empty() || g.bdf == known.bdf;
    const bool uuid = g.uuid.empty() || g.uuid == known.uuid;
    const bool serial = g.serial.empty() || g.serial == known.serial;
    const bool index = !g.index || g.index == known.index;
    const bool name = g.name.empty() || g.name == known.name;
    if (bdf && uuid && serial && index && name) return true;
  }
  return false;
}

// Would AddGpu merge `g` into a known entry rather than add one?
bool SharesAKey(const Inventory& inventory, const GpuIdentity& g) {
  for (const GpuIdentity& known : inventory.gpus()) {
    if ((!g.bdf.empty() && g.bdf == known.bdf) || (!g.uuid.empty() && g.uuid == known.uuid) ||
        (!g.serial.empty() && g.serial == known.serial) || (g.index && g.index == known.index)) {
      return true;
    }
  }
  return false;
}

std::optional<GpuIdentity> Lookup(const Inventory& inventory, const ComponentRef& ref) {
  std::string bdf = NormalizeBdf(Find(ref.keys, "bdf"));
  if (bdf.empty()) bdf = NormalizeBdf(ref.name);
  if (!bdf.empty()) {
    if (auto g = inventory.FindByBdf(bdf)) return g;
  }
  std::string_view uuid = Find(ref.keys, "uuid");
  if (uuid.empty() && IsUuid(ref.name)) uuid = ref.name;
  if (!uuid.empty()) {
    if (auto g = inventory.FindByUuid(uuid)) return g;
  }
  if (std::string_view serial = Find(ref.keys, "serial"); !serial.empty()) {
    for (const GpuIdentity& g : inventory.gpus()) {
      if (g.serial == serial) return g;
    }
  }
  std::optional<int> index = ParseIndex(Find(ref.keys, "index"));
  if (!index) index = ParseIndex(ref.name);
  if (index) return inventory.FindByIndex(*index);
  return std::nullopt;
}

}  // namespace

bool LearnGpuIdentity(const Observation& obs, Inventory& inventory) {
  if (obs.component.type != ComponentType::kGpu) return false;
  const GpuIdentity g = IdentityOf(obs);
  if (KeyCount(g) < 2 || AlreadyKnown(inventory, g)) return false;
  if (!SharesAKey(inventory, g) && inventory.gpus().size() >= kMaxInventoryGpus) return false;
  inventory.AddGpu(g);
  return true;
}

ComponentRef CanonicalGpu(const Inventory& inventory, const ComponentRef& ref) {
  if (ref.type != ComponentType::kGpu) return ref;
  const std::optional<GpuIdentity> g = Lookup(inventory, ref);
  if (!g) return ref;
  ComponentRef out = g->bdf.empty() ? GpuComponent(ref.name) : inventory.GpuAt(g->bdf);
  if (g->bdf.empty()) {
    if (g->index) {
      out.name = std::to_string(*g->index);
    } else if (!g->uuid.empty()) {
      out.name = g->uuid;
    }
    AttachGpuKeys(*g, out);
  }
  for (const auto& [key, value] : ref.keys) out.keys.try_emplace(key, value);
  return out;
}

}  // namespace faultline
