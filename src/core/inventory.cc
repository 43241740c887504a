#include "core/inventory.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/json.h"

namespace faultline {
namespace {

bool IsHex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool SameGpu(const GpuIdentity& a, const GpuIdentity& b) {
  return (!a.bdf.empty() && a.bdf == b.bdf) || (!a.uuid.empty() && a.uuid == b.uuid) ||
         (!a.serial.empty() && a.serial == b.serial) || (a.index && b.index && *a.index == *b.index);
}

void Merge(GpuIdentity& into, const GpuIdentity& from) {
  if (from.index) into.index = from.index;
  if (!from.uuid.empty()) into.uuid = from.uuid;
  if (!from.serial.empty()) into.serial = from.serial;
  if (!from.bdf.empty()) into.bdf = from.bdf;
  if (!from.name.empty()) into.name = from.name;
}

}  // namespace

std::string NormalizeBdf(std::string_view text) {
  // Split "[domain:]bus:dev[.fn]".
  std::string_view rest = text;
  std::string_view fn = "0";
  if (auto dot = rest.rfind('.'); dot != std::string_view::npos) {
    fn = rest.substr(dot + 1);
    rest = rest.substr(0, dot);
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= rest.size(); ++i) {
    if (i == rest.size() || rest[i] == ':') {
      parts.push_back(rest.substr(start, i - start));
      start = i + 1;
    }
  }
  if (parts.size() == 2) parts.insert(parts.begin(), "0000");
  if (parts.size() != 3 || fn.size() != 1 || !IsHex(fn)) return "";
  std::string_view dom = parts[0], bus = parts[1], dev = parts[2];
  if (!IsHex(dom) || dom.size() > 8 || !IsHex(bus) || bus.size() != 2 || !IsHex(dev) || dev.size() != 2) return "";
  // NVML prints an 8-digit domain; the kernel prints 4. Keep the low 4 digits.
  if (dom.size() > 4) {
    if (dom.substr(0, dom.size() - 4).find_first_not_of('0') != std::string_view::npos) return "";
    dom = dom.substr(dom.size() - 4);
  }
  std::string out = std::string(4 - dom.size(), '0') + std::string(dom) + ":" + std::string(bus) + ":" +
                    std::string(dev) + "." + std::string(fn);
  return Lower(out);
}

void Inventory::AddGpu(const GpuIdentity& gpu) {
  GpuIdentity g = gpu;
  if (!g.bdf.empty()) g.bdf = NormalizeBdf(g.bdf);
  for (auto& existing : gpus_) {
    if (SameGpu(existing, g)) {
      Merge(existing, g);
      return;
    }
  }
  gpus_.push_back(std::move(g));
}

std::optional<GpuIdentity> Inventory::FindByBdf(std::string_view bdf) const {
  const std::string key = NormalizeBdf(bdf);
  for (const auto& g : gpus_) {
    if (!key.empty() && g.bdf == key) return g;
  }
  return std::nullopt;
}

std::optional<GpuIdentity> Inventory::FindByUuid(std::string_view uuid) const {
  for (const auto& g : gpus_) {
    if (!uuid.empty() && g.uuid == uuid) return g;
  }
  return std::nullopt;
}

std::optional<GpuIdentity> Inventory::FindByIndex(int index) const {
  for (const auto& g : gpus_) {
    if (g.index && *g.index == index) return g;
  }
  return std::nullopt;
}

void AttachGpuKeys(const GpuIdentity& gpu, ComponentRef& ref) {
  if (gpu.index) ref.keys["index"] = std::to_string(*gpu.index);
  if (!gpu.uuid.empty()) ref.keys["uuid"] = gpu.uuid;
  if (!gpu.serial.empty()) ref.keys["serial"] = gpu.serial;
  if (!gpu.bdf.empty()) ref.keys["bdf"] = gpu.bdf;
}

ComponentRef Inventory::GpuAt(std::string_view bdf) const {
  ComponentRef ref{ComponentType::kGpu, NormalizeBdf(bdf), {}};
  if (ref.name.empty()) ref.name = std::string(bdf);
  ref.keys["bdf"] = ref.name;
  if (auto g = FindByBdf(bdf)) {
    if (g->index) {
      ref.name = std::to_string(*g->index);
    } else if (!g->uuid.empty()) {
      ref.name = g->uuid;
    }
    AttachGpuKeys(*g, ref);
  }
  return ref;
}

Result<Inventory> Inventory::LoadGpuMap(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, "cannot open GPU map " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  Json doc = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status(StatusCode::kCorrupt, "GPU map " + path + " is not valid JSON");
  const Json* list = doc.is_array() ? &doc : (doc.contains("gpus") ? &doc["gpus"] : nullptr);
  if (!list || !list->is_array()) return Status(StatusCode::kCorrupt, "GPU map " + path + " has no \"gpus\" array");
  Inventory inv;
  for (const Json& e : *list) {
    if (!e.is_object()) return Status(StatusCode::kCorrupt, "GPU map " + path + ": entries must be objects");
    GpuIdentity g;
    if (e.contains("index") && e["index"].is_number_integer()) g.index = e["index"].get<int>();
    for (const char* key : {"pci_bus_id", "bdf", "pci"}) {
      if (e.contains(key) && e[key].is_string()) g.bdf = NormalizeBdf(e[key].get<std::string>());
    }
    if (e.contains("uuid") && e["uuid"].is_string()) g.uuid = e["uuid"].get<std::string>();
    if (e.contains("serial") && e["serial"].is_string()) g.serial = e["serial"].get<std::string>();
    if (e.contains("name") && e["name"].is_string()) g.name = e["name"].get<std::string>();
    if (g.bdf.empty() && g.uuid.empty() && !g.index) {
      return Status(StatusCode::kCorrupt, "GPU map " + path + ": an entry has no index, uuid or pci_bus_id");
    }
    inv.AddGpu(g);
  }
  return inv;
}

}  // namespace faultline
