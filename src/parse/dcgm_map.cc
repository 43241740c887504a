#include "parse/dcgm_map.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "core/inventory.h"
#include "core/time.h"
#include "parse/dcgm_fields.h"
#include "parse/text.h"

namespace faultline {
namespace {

constexpr double kInt64Blank = 9223372036854775792.0;  // DCGM_INT64_BLANK (0x7ffffffffffffff0)
constexpr double kInt32Blank = 2147483632.0;           // DCGM_INT32_BLANK (0x7ffffff0)
constexpr double kInt32Max = 2147483647.0;             // blanks run up to INT32_MAX
constexpr double kFp64Blank = 140737488355328.0;       // DCGM_FP64_BLANK (2^47)

// Facts about a GPU that other series carry (limits), attached to its observations.
struct GpuLimits {
  std::optional<double> max_pcie_gen;
  std::optional<double> max_pcie_width;
  std::optional<double> gpu_max_op_temp;
  std::optional<double> mem_slowdown_temp;
};

struct Pending {
  const PromSample* sample;
  const DcgmField* field;
  std::string gpu;  // component name
};

std::string FormatNumber(double v) {
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%g", v);
  }
  return buf;
}

std::string FormatHex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

const std::string* AnyLabel(const PromSample& s, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys) {
    if (const std::string* v = s.Label(k); v != nullptr && !v->empty()) return v;
  }
  return nullptr;
}

// The GPU a series belongs to, from its gpu / UUID / pci_bus_id / device labels.
std::optional<GpuIdentity> IdentityOf(const PromSample& s) {
  GpuIdentity id;
  if (const std::string* g = s.Label("gpu")) {
    if (auto v = ParseInt(*g); v && *v >= 0 && *v < 4096) id.index = static_cast<int>(*v);
  }
  if (!id.index) {
    if (const std::string* d = s.Label("device"); d && StartsWith(*d, "nvidia")) {
      if (auto v = ParseInt(std::string_view(*d).substr(6)); v && *v >= 0 && *v < 4096) id.index = static_cast<int>(*v);
    }
  }
  if (const std::string* u = AnyLabel(s, {"UUID", "uuid"})) id.uuid = *u;
  if (const std::string* b = s.Label("pci_bus_id")) id.bdf = NormalizeBdf(*b);
  if (const std::string* m = s.Label("modelName")) id.name = *m;
  if (!id.index && id.uuid.empty() && id.bdf.empty()) return std::nullopt;
  return id;
}

std::string ComponentName(const GpuIdentity& id) {
  if (id.index) return std::to_string(*id.index);
  return id.uuid.empty() ? id.bdf : id.uuid;
}

void RecordLimit(const DcgmField& f, double v, GpuLimits& limits) {
  switch (f.role) {
    case DcgmFieldRole::kMaxPcieGen:
      limits.max_pcie_gen = v;
      break;
    case DcgmFieldRole::kMaxPcieWidth:
      limits.max_pcie_width = v;
      break;
    case DcgmFieldRole::kGpuMaxOpTemp:
      limits.gpu_max_op_temp = v;
      break;
    case DcgmFieldRole::kMemMaxOpTemp:
      limits.mem_slowdown_temp = v;
      break;
    case DcgmFieldRole::kObservation:
      break;
  }
}

void AttachLimits(const GpuLimits& limits, Observation& obs) {
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) obs.attrs[key] = FormatNumber(*v);
  };
  if (obs.kind == ObsKind::kPcieLinkGen) put("max", limits.max_pcie_gen);
  if (obs.kind == ObsKind::kPcieLinkWidth) put("max", limits.max_pcie_width);
  if (obs.kind != ObsKind::kTemperature) return;
  // DCGM documents MEM_MAX_OP_TEMP as the memory slowdown point; GPU_MAX_OP_TEMP is the
  // GPU's maximum operating temperature, which is not its slowdown threshold.
  if (obs.attrs["sensor"] == "memory") put("slowdown", limits.mem_slowdown_temp);
  if (obs.attrs["sensor"] == "gpu") put("max_op", limits.gpu_max_op_temp);
}

// Field-specific shaping; false when the value is unusable for this field.
bool ShapeValue(const DcgmField& f, double v, Observation& obs) {
  if (f.kind == ObsKind::kClockThrottle) {
    if (v < 0 || v != std::floor(v) || v > 9007199254740992.0) return false;
    obs.attrs["mask"] = FormatHex(static_cast<uint64_t>(v));
  }
  if (f.kind == ObsKind::kXid) {
    if (v <= 0 || v != std::floor(v) || v > 1e9) return false;  // 0 = no XID since start
    obs.code = static_cast<int64_t>(v);
    obs.text = "XID " + FormatNumber(v) + " (last XID reported by DCGM)";
  }
  obs.value = v;
  return true;
}

Observation BaseObservation(const ComponentRef& comp, std::string node, int64_t time_ns) {
  Observation obs;
  obs.time_ns = time_ns;
  obs.node = std::move(node);
  obs.layer = Layer::kGpu;
  obs.component = comp;
  obs.source = Source::kDcgmExporter;
  return obs;
}

// A sample's own timestamp when it has a plausible one (1970..2255), else the scrape
// time; the bound keeps the ms->ns conversion from overflowing on hostile input.
int64_t SampleTimeNs(const PromSample& s, int64_t scrape_time_ns) {
  constexpr int64_t kMaxMs = 9'000'000'000'000;
  if (!s.timestamp_ms || *s.timestamp_ms <= 0 || *s.timestamp_ms > kMaxMs) return scrape_time_ns;
  return *s.timestamp_ms * kNsPerMs;
}

std::string NodeOf(const PromSample& s, const DcgmMapOptions& options) {
  if (!options.node.empty()) return options.node;
  const std::string* h = AnyLabel(s, {"Hostname", "hostname"});
  return h ? *h : std::string();
}

// The GPUs seen in one scrape: identity, node and limits, by component name.
struct ScrapeGpus {
  std::map<std::string, GpuIdentity> ids;
  std::map<std::string, std::string> nodes;
  std::map<std::string, GpuLimits> limits;
  std::map<std::string, ComponentRef> comps;

  // The component name of the sample's GPU, or nullopt when its labels name none.
  std::optional<std::string> Add(const PromSample& s, const DcgmMapOptions& options) {
    std::optional<GpuIdentity> id = IdentityOf(s);
    if (!id) return std::nullopt;
    std::string name = ComponentName(*id);
    if (ids.try_emplace(name, *id).second) {
      ComponentRef ref = GpuComponent(name);
      AttachGpuKeys(*id, ref);
      comps[name] = std::move(ref);
      nodes[name] = NodeOf(s, options);
    }
    return name;
  }

  // One gpu_identity observation per GPU.
  void EmitIdentities(int64_t time_ns, std::vector<Observation>& out) const {
    for (const auto& [name, id] : ids) {
      Observation obs = BaseObservation(comps.at(name), nodes.at(name), time_ns);
      obs.kind = ObsKind::kGpuIdentity;
      obs.text = id.name;
      if (!id.name.empty()) obs.attrs["name"] = id.name;
      if (!id.uuid.empty()) obs.attrs["uuid"] = id.uuid;
      if (!id.bdf.empty()) obs.attrs["bdf"] = id.bdf;
      if (id.index) obs.attrs["index"] = std::to_string(*id.index);
      out.push_back(std::move(obs));
    }
  }
};

}  // namespace

bool IsDcgmBlank(double v) {
  if (std::isnan(v)) return true;
  if (v >= kFp64Blank) return true;  // covers the int64 blanks (>= kInt64Blank) too
  return v >= kInt32Blank && v <= kInt32Max && v == std::floor(v);
}

DcgmMapResult MapDcgmScrape(const PromScrape& scrape, int64_t scrape_time_ns, const DcgmMapOptions& options) {
  static_assert(kInt64Blank > kFp64Blank);
  DcgmMapResult out;
  ScrapeGpus gpus;
  std::vector<Pending> pending;
  for (const PromSample& s : scrape.samples) {
    const DcgmField* field = FindDcgmField(s.name);
    if (field == nullptr) {
      ++out.unmapped_series;
    } else if (IsDcgmBlank(s.value)) {
      ++out.blank_values;
    } else if (std::optional<std::string> gpu = gpus.Add(s, options)) {
      if (field->role == DcgmFieldRole::kObservation) {
        pending.push_back({&s, field, *gpu});
      } else {
        RecordLimit(*field, s.value, gpus.limits[*gpu]);
      }
    } else {
      out.warnings.push_back("line " + std::to_string(s.line) + ": " + s.name +
                             " has no gpu, UUID or pci_bus_id label");
    }
  }
  gpus.EmitIdentities(scrape_time_ns, out.observations);
  for (const Pending& p : pending) {
    const PromSample& s = *p.sample;
    Observation obs = BaseObservation(gpus.comps[p.gpu], gpus.nodes[p.gpu], SampleTimeNs(s, scrape_time_ns));
    obs.kind = p.field->kind;
    obs.layer = p.field->layer;
    obs.text = s.name;
    obs.raw = s.raw;
    if (!p.field->attr_key.empty()) obs.attrs[std::string(p.field->attr_key)] = std::string(p.field->attr_value);
    if (!ShapeValue(*p.field, s.value, obs)) continue;
    AttachLimits(gpus.limits[p.gpu], obs);
    out.observations.push_back(std::move(obs));
  }
  return out;
}

}  // namespace faultline
