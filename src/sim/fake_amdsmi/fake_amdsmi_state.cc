#include "sim/fake_amdsmi/fake_amdsmi_state.h"

#include <nlohmann/json.hpp>

#include "sources/amdsmi/amdgpu_sysfs_parse.h"
#include "sources/amdsmi/amdsmi_api.h"

namespace faultline::fake_amdsmi {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kFunctions[] = {
    "amdsmi_init",
    "amdsmi_shut_down",
    "amdsmi_get_socket_handles",
    "amdsmi_get_processor_handles",
    "amdsmi_get_gpu_device_bdf",
    "amdsmi_get_gpu_device_uuid",
    "amdsmi_get_gpu_total_ecc_count",
    "amdsmi_get_gpu_ecc_enabled",
    "amdsmi_get_gpu_ecc_count",
    "amdsmi_get_gpu_bad_page_info",
    "amdsmi_get_temp_metric",
    "amdsmi_get_power_info",
    "amdsmi_get_violation_status",
    "amdsmi_gpu_xgmi_error_status",
    "amdsmi_get_gpu_pci_replay_counter",
};

Status Fail(const std::string& path, const std::string& why) {
  return Status(StatusCode::kCorrupt, "fake AMD SMI state " + path + ": " + why);
}

Status Keys(const Json& j, const std::string& path, std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) return Fail(path, "not an object");
  for (const auto& item : j.items()) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || item.key() == a;
    if (!ok) return Fail(path + "." + item.key(), "unknown key");
  }
  return Status::Ok();
}

template <typename T>
Status Uint(const Json& j, const std::string& path, T& out, uint64_t max) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0)) {
    return Fail(path, "not a non-negative integer");
  }
  const uint64_t v = j.get<uint64_t>();
  if (v > max) return Fail(path, "out of range (max " + std::to_string(max) + ")");
  out = static_cast<T>(v);
  return Status::Ok();
}

Status Int(const Json& j, const std::string& path, int64_t& out) {
  if (!j.is_number_integer()) return Fail(path, "not an integer");
  out = j.get<int64_t>();
  if (out < -1000000 || out > 1000000) return Fail(path, "out of range");
  return Status::Ok();
}

Status Str(const Json& j, const std::string& path, std::string& out) {
  if (!j.is_string()) return Fail(path, "not a string");
  out = j.get<std::string>();
  if (out.size() > kMaxStringBytes) return Fail(path, "longer than 256 bytes");
  return Status::Ok();
}

Status Errors(const Json& j, const std::string& path, std::map<std::string, uint32_t>& out) {
  if (!j.is_object()) return Fail(path, "not an object");
  for (const auto& item : j.items()) {
    const std::string p = path + "." + item.key();
    if (!IsFakeAmdsmiFunction(item.key())) return Fail(p, "not an AMD SMI function this fake exports");
    uint32_t code = 0;
    if (item.value().is_string()) {
      if (!amdsmi::ParseAmdsmiStatusName(item.value().get<std::string>(), &code)) return Fail(p, "unknown status name");
    } else if (Status s = Uint(item.value(), p, code, 0xFFFFFFFFu); !s.ok()) {
      return s;
    }
    out[item.key()] = code;
  }
  return Status::Ok();
}

#define TRY(expr)                                \
  do {                                           \
    if (Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

Status Gpu(const Json& j, const std::string& path, FakeGpu& g) {
  TRY(Keys(j, path,
           {"bdf", "uuid", "ecc", "bad_pages", "temperature", "power", "violation", "xgmi_status", "pcie_replay",
            "errors", "lost"}));
  if (j.contains("bdf")) TRY(Str(j["bdf"], path + ".bdf", g.bdf));
  if (j.contains("uuid")) TRY(Str(j["uuid"], path + ".uuid", g.uuid));
  if (j.contains("ecc")) {
    const Json& e = j["ecc"];
    if (!e.is_object()) return Fail(path + ".ecc", "not an object");
    g.has_ecc = true;
    for (const auto& item : e.items()) {
      const std::string p = path + ".ecc." + item.key();
      if (!amdsmi::IsKnownRasBlock(item.key())) return Fail(p, "not a RAS block");
      TRY(Keys(item.value(), p, {"ce", "ue", "de"}));
      FakeEcc c;
      for (auto [k, slot] : {std::pair{"ce", &c.ce}, std::pair{"ue", &c.ue}, std::pair{"de", &c.de}}) {
        if (item.value().contains(k)) TRY(Uint(item.value()[k], p + "." + k, *slot, UINT64_MAX));
      }
      g.ecc[item.key()] = c;
    }
  }
  if (j.contains("bad_pages")) {
    const Json& b = j["bad_pages"];
    TRY(Keys(b, path + ".bad_pages", {"reserved", "pending", "unreservable"}));
    uint64_t r = 0, p = 0, f = 0;
    if (b.contains("reserved")) TRY(Uint(b["reserved"], path + ".bad_pages.reserved", r, kMaxBadPages));
    if (b.contains("pending")) TRY(Uint(b["pending"], path + ".bad_pages.pending", p, kMaxBadPages));
    if (b.contains("unreservable")) TRY(Uint(b["unreservable"], path + ".bad_pages.unreservable", f, kMaxBadPages));
    if (r + p + f > kMaxBadPages) return Fail(path + ".bad_pages", "too many pages");
    g.bad_reserved = r, g.bad_pending = p, g.bad_unreservable = f;
  }
  if (j.contains("temperature")) {
    const Json& t = j["temperature"];
    TRY(Keys(t, path + ".temperature",
             {"hotspot", "hotspot_critical", "hotspot_emergency", "memory", "memory_critical", "memory_emergency",
              "edge", "edge_critical", "edge_emergency"}));
    for (const char* s : {"hotspot", "memory", "edge"}) {
      const std::string name(s);
      if (!t.contains(name)) continue;
      FakeTemp ft;
      TRY(Int(t[name], path + ".temperature." + name, ft.current));
      int64_t v = 0;
      if (t.contains(name + "_critical")) {
        TRY(Int(t[name + "_critical"], path + ".temperature." + name + "_critical", v));
        ft.critical = v;
      }
      if (t.contains(name + "_emergency")) {
        TRY(Int(t[name + "_emergency"], path + ".temperature." + name + "_emergency", v));
        ft.emergency = v;
      }
      g.temps[name] = ft;
    }
  }
  if (j.contains("power")) {
    const Json& p = j["power"];
    TRY(Keys(p, path + ".power", {"socket_w", "limit_w"}));
    uint32_t v = 0;
    if (p.contains("socket_w")) {
      TRY(Uint(p["socket_w"], path + ".power.socket_w", v, 100000));
      g.power_w = v;
    }
    if (p.contains("limit_w")) {
      TRY(Uint(p["limit_w"], path + ".power.limit_w", v, 100000));
      g.power_limit_w = v;
    }
  }
  if (j.contains("violation")) {
    const Json& v = j["violation"];
    TRY(Keys(v, path + ".violation", {"socket_thermal", "hbm_thermal", "vr_thermal", "prochot", "ppt"}));
    std::map<std::string, bool> flags;
    for (const auto& item : v.items()) {
      if (!item.value().is_boolean()) return Fail(path + ".violation." + item.key(), "not a boolean");
      flags[item.key()] = item.value().get<bool>();
    }
    g.violation = flags;
  }
  uint32_t x = 0;
  if (j.contains("xgmi_status")) {
    TRY(Uint(j["xgmi_status"], path + ".xgmi_status", x, 2));
    g.xgmi_status = x;
  }
  uint64_t r = 0;
  if (j.contains("pcie_replay")) {
    TRY(Uint(j["pcie_replay"], path + ".pcie_replay", r, UINT64_MAX));
    g.pcie_replay = r;
  }
  if (j.contains("errors")) TRY(Errors(j["errors"], path + ".errors", g.errors));
  if (j.contains("lost")) {
    if (!j["lost"].is_boolean()) return Fail(path + ".lost", "not a boolean");
    g.lost = j["lost"].get<bool>();
  }
  return Status::Ok();
}

}  // namespace

bool IsFakeAmdsmiFunction(std::string_view name) {
  for (std::string_view f : kFunctions) {
    if (f == name) return true;
  }
  return false;
}

Result<FakeState> ParseFakeAmdsmiState(std::string_view text) {
  if (text.size() > kMaxStateBytes) return Status(StatusCode::kCorrupt, "fake AMD SMI state larger than 4 MiB");
  Json j = Json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return Status(StatusCode::kCorrupt, "fake AMD SMI state: not valid JSON");
  FakeState st;
  TRY(Keys(j, "$", {"errors", "gpus"}));
  if (j.contains("errors")) TRY(Errors(j["errors"], "$.errors", st.errors));
  if (j.contains("gpus")) {
    const Json& g = j["gpus"];
    if (!g.is_array()) return Fail("$.gpus", "not an array");
    if (g.size() > kMaxGpus) return Fail("$.gpus", "more than 64 GPUs");
    for (size_t i = 0; i < g.size(); ++i) {
      FakeGpu gpu;
      TRY(Gpu(g[i], "$.gpus[" + std::to_string(i) + "]", gpu));
      st.gpus.push_back(std::move(gpu));
    }
  }
  return st;
}

}  // namespace faultline::fake_amdsmi
