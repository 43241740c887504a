#include "sim/fake_nvml/fake_nvml_state.h"

#include <charconv>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>

#include "sources/nvml/nvml_api.h"

namespace faultline::fake_nvml {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kFunctions[] = {
    "nvmlInit_v2",
    "nvmlEventSetCreate",
    "nvmlEventSetWait_v2",
    "nvmlDeviceGetSupportedEventTypes",
    "nvmlDeviceRegisterEvents",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetMemoryErrorCounter",
    "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetTemperatureThreshold",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkErrorCounter",
};

struct LocationKey {
  std::string_view name;
  int location;  // nvmlMemoryLocation_t
};
constexpr LocationKey kLocationKeys[] = {
    {"l1", 0},          {"l2", 1},  {"dram", 2}, {"device_memory", 2}, {"register_file", 3}, {"texture_memory", 4},
    {"texture_shm", 5}, {"cbu", 6}, {"sram", 7},
};

// Walks the document and keeps the first error with the JSON path where it happened.
class StateParser {
 public:
  Result<FakeNvmlState> Parse(std::string_view text) {
    if (text.size() > kMaxStateBytes) return Status(StatusCode::kCorrupt, "state file larger than 4 MiB");
    Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return Status(StatusCode::kCorrupt, "state file is not valid JSON");
    FakeNvmlState state;
    if (!ParseRoot(doc, state)) return Status(StatusCode::kCorrupt, error_);
    return state;
  }

 private:
  bool Fail(const std::string& path, const std::string& why) {
    if (error_.empty()) error_ = path + ": " + why;
    return false;
  }

  bool CheckObject(const Json& j, const std::string& path, std::initializer_list<std::string_view> allowed) {
    if (!j.is_object()) return Fail(path, "must be an object");
    for (const auto& item : j.items()) {
      bool known = false;
      for (auto a : allowed) known = known || item.key() == a;
      if (!known) return Fail(path, "unknown key \"" + item.key() + "\"");
    }
    return true;
  }

  template <typename T>
  bool ReadUint(const Json& obj, const std::string& path, const char* key, std::optional<T>& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return true;
    if (!it->is_number_unsigned()) return Fail(path + "." + key, "must be a non-negative integer");
    const uint64_t v = it->get<uint64_t>();
    if (v > std::numeric_limits<T>::max()) return Fail(path + "." + key, "out of range");
    out = static_cast<T>(v);
    return true;
  }

  bool ReadBool(const Json& obj, const std::string& path, const char* key, std::optional<bool>& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return true;
    if (!it->is_boolean()) return Fail(path + "." + key, "must be true or false");
    out = it->get<bool>();
    return true;
  }

  bool ReadString(const Json& obj, const std::string& path, const char* key, std::optional<std::string>& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return true;
    if (!it->is_string()) return Fail(path + "." + key, "must be a string");
    out = it->get<std::string>();
    if (out->size() > kMaxStringBytes) return Fail(path + "." + key, "longer than 256 bytes");
    return true;
  }

  bool ReadCode(const Json& j, const std::string& path, int& out) {
    if (j.is_number_integer()) {
      const int64_t v = j.get<int64_t>();
      if (v < 0 || v > 100000) return Fail(path, "error code out of range");
      out = static_cast<int>(v);
      return true;
    }
    if (j.is_string() && nvml::ParseNvmlErrorName(j.get<std::string>(), &out)) return true;
    return Fail(path, "must be an NVML error name (\"GPU_IS_LOST\") or code");
  }

  bool ReadErrors(const Json& obj, const std::string& path, std::map<std::string, int>& out) {
    auto it = obj.find("errors");
    if (it == obj.end()) return true;
    const std::string p = path + ".errors";
    if (!it->is_object()) return Fail(p, "must be an object");
    for (const auto& item : it->items()) {
      if (!IsFakeNvmlFunction(item.key())) return Fail(p, "unknown NVML function \"" + item.key() + "\"");
      if (!ReadCode(item.value(), p + "." + item.key(), out[item.key()])) return false;
    }
    return true;
  }

  bool ParseRoot(const Json& doc, FakeNvmlState& state) {
    if (!CheckObject(doc, "$", {"gpus", "errors"}) || !ReadErrors(doc, "$", state.errors)) return false;
    auto it = doc.find("gpus");
    if (it == doc.end()) return true;
    if (!it->is_array()) return Fail("$.gpus", "must be an array");
    if (it->size() > kMaxGpus) return Fail("$.gpus", "more than 64 GPUs");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!ParseGpu((*it)[i], "$.gpus[" + std::to_string(i) + "]", state.gpus.emplace_back())) return false;
    }
    return true;
  }

  bool ParseGpu(const Json& g, const std::string& path, FakeGpu& gpu) {
    return CheckObject(g, path,
                       {"name", "uuid", "serial", "pci_bus_id", "ecc", "ecc_locations", "retired_pages",
                        "remapped_rows", "temperature", "power", "clocks", "clock_event_reasons", "pcie", "nvlink",
                        "errors", "lost", "lost_after_s", "event_types", "xid_events"}) &&
           ReadString(g, path, "name", gpu.name) && ReadString(g, path, "uuid", gpu.uuid) &&
           ReadString(g, path, "serial", gpu.serial) && ReadString(g, path, "pci_bus_id", gpu.pci_bus_id) &&
           ParseEcc(g, path, gpu) && ParseEccLocations(g, path, gpu) && ParseRetiredAndRemap(g, path, gpu) &&
           ParseThermalPowerClocks(g, path, gpu) && ParseClockReasons(g, path, gpu) && ParsePcie(g, path, gpu) &&
           ParseNvlinks(g, path, gpu) && ReadErrors(g, path, gpu.errors) && ParseLost(g, path, gpu) &&
           ParseEvents(g, path, gpu);
  }

  // Calls fn(sub-object, its path, error-type index, counter index) for each present
  // {"volatile"|"aggregate": {"corrected"|"uncorrected": ...}} entry.
  template <typename Fn>
  bool ForEachEccCell(const Json& g, const std::string& path, const char* key, Fn fn) {
    auto it = g.find(key);
    if (it == g.end()) return true;
    const std::string p = path + "." + key;
    if (!CheckObject(*it, p, {"volatile", "aggregate"})) return false;
    for (int counter = 0; counter < 2; ++counter) {
      const char* cname = counter == 0 ? "volatile" : "aggregate";
      auto c = it->find(cname);
      if (c == it->end()) continue;
      if (!CheckObject(*c, p + "." + cname, {"corrected", "uncorrected"})) return false;
      for (int type = 0; type < 2; ++type) {
        const char* tname = type == 0 ? "corrected" : "uncorrected";
        if (c->contains(tname) && !fn(*c, p + "." + cname, tname, type, counter)) return false;
      }
    }
    return true;
  }

  bool ParseEcc(const Json& g, const std::string& path, FakeGpu& gpu) {
    return ForEachEccCell(g, path, "ecc",
                          [&](const Json& c, const std::string& p, const char* t, int type, int counter) {
                            return ReadUint(c, p, t, gpu.ecc[type][counter]);
                          });
  }

  bool ParseEccLocations(const Json& g, const std::string& path, FakeGpu& gpu) {
    return ForEachEccCell(g, path, "ecc_locations",
                          [&](const Json& c, const std::string& p, const char* t, int type, int counter) {
                            return ParseLocationMap(c.at(t), p + "." + t, gpu.ecc_locations[type][counter]);
                          });
  }

  bool ParseLocationMap(const Json& j, const std::string& path, std::map<int, uint64_t>& out) {
    if (!j.is_object()) return Fail(path, "must be an object");
    for (const auto& item : j.items()) {
      const LocationKey* key = nullptr;
      for (const auto& k : kLocationKeys) key = item.key() == k.name ? &k : key;
      if (key == nullptr) return Fail(path, "unknown memory location \"" + item.key() + "\"");
      if (!item.value().is_number_unsigned()) return Fail(path + "." + item.key(), "must be a non-negative integer");
      out[key->location] = item.value().get<uint64_t>();
    }
    return true;
  }

  bool ParseRetiredAndRemap(const Json& g, const std::string& path, FakeGpu& gpu) {
    if (auto it = g.find("retired_pages"); it != g.end()) {
      const std::string p = path + ".retired_pages";
      if (!CheckObject(*it, p, {"sbe", "dbe", "pending"}) || !ReadUint(*it, p, "sbe", gpu.retired_sbe) ||
          !ReadUint(*it, p, "dbe", gpu.retired_dbe) || !ReadBool(*it, p, "pending", gpu.retired_pending)) {
        return false;
      }
    }
    auto it = g.find("remapped_rows");
    if (it == g.end()) return true;
    const std::string p = path + ".remapped_rows";
    std::optional<uint32_t> corr, unc;
    std::optional<bool> pending, failure;
    if (!CheckObject(*it, p, {"correctable", "uncorrectable", "pending", "failure"}) ||
        !ReadUint(*it, p, "correctable", corr) || !ReadUint(*it, p, "uncorrectable", unc) ||
        !ReadBool(*it, p, "pending", pending) || !ReadBool(*it, p, "failure", failure)) {
      return false;
    }
    gpu.remapped_rows =
        FakeRemappedRows{corr.value_or(0), unc.value_or(0), pending.value_or(false), failure.value_or(false)};
    return true;
  }

  bool ParseThermalPowerClocks(const Json& g, const std::string& path, FakeGpu& gpu) {
    if (auto it = g.find("temperature"); it != g.end()) {
      const std::string p = path + ".temperature";
      if (!CheckObject(*it, p, {"gpu", "memory", "slowdown", "shutdown"}) || !ReadUint(*it, p, "gpu", gpu.temp_gpu) ||
          !ReadUint(*it, p, "memory", gpu.temp_memory) || !ReadUint(*it, p, "slowdown", gpu.temp_slowdown) ||
          !ReadUint(*it, p, "shutdown", gpu.temp_shutdown)) {
        return false;
      }
    }
    if (auto it = g.find("power"); it != g.end()) {
      const std::string p = path + ".power";
      if (!CheckObject(*it, p, {"usage_mw", "limit_mw"}) || !ReadUint(*it, p, "usage_mw", gpu.power_mw) ||
          !ReadUint(*it, p, "limit_mw", gpu.power_limit_mw)) {
        return false;
      }
    }
    auto it = g.find("clocks");
    if (it == g.end()) return true;
    const std::string p = path + ".clocks";
    return CheckObject(*it, p, {"sm", "mem"}) && ReadUint(*it, p, "sm", gpu.clock_sm) &&
           ReadUint(*it, p, "mem", gpu.clock_mem);
  }

  // A number or a "0x.." string, since the reasons are a bitmask.
  bool ParseClockReasons(const Json& g, const std::string& path, FakeGpu& gpu) {
    auto it = g.find("clock_event_reasons");
    if (it == g.end() || it->is_number_unsigned())
      return ReadUint(g, path, "clock_event_reasons", gpu.clock_event_reasons);
    const std::string p = path + ".clock_event_reasons";
    if (!it->is_string()) return Fail(p, "must be a number or a \"0x\" hex string");
    const std::string s = it->get<std::string>();
    uint64_t v = 0;
    if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return Fail(p, "hex string must start with 0x");
    auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
    if (ec != std::errc() || end != s.data() + s.size()) return Fail(p, "not a hex number");
    gpu.clock_event_reasons = v;
    return true;
  }

  bool ParsePcie(const Json& g, const std::string& path, FakeGpu& gpu) {
    auto it = g.find("pcie");
    if (it == g.end()) return true;
    const std::string p = path + ".pcie";
    return CheckObject(*it, p, {"replay", "gen", "max_gen", "width", "max_width"}) &&
           ReadUint(*it, p, "replay", gpu.pcie_replay) && ReadUint(*it, p, "gen", gpu.pcie_gen) &&
           ReadUint(*it, p, "max_gen", gpu.pcie_max_gen) && ReadUint(*it, p, "width", gpu.pcie_width) &&
           ReadUint(*it, p, "max_width", gpu.pcie_max_width);
  }

  bool ParseNvlinks(const Json& g, const std::string& path, FakeGpu& gpu) {
    auto it = g.find("nvlink");
    if (it == g.end()) return true;
    const std::string p = path + ".nvlink";
    if (!it->is_array()) return Fail(p, "must be an array");
    if (it->size() > kMaxLinks) return Fail(p, "more than 18 links");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string lp = p + "[" + std::to_string(i) + "]";
      const Json& l = (*it)[i];
      std::optional<bool> active;
      std::optional<uint64_t> flit, data, replay, recovery;
      if (!CheckObject(l, lp, {"active", "crc_flit", "crc_data", "replay", "recovery"}) ||
          !ReadBool(l, lp, "active", active) || !ReadUint(l, lp, "crc_flit", flit) ||
          !ReadUint(l, lp, "crc_data", data) || !ReadUint(l, lp, "replay", replay) ||
          !ReadUint(l, lp, "recovery", recovery)) {
        return false;
      }
      gpu.nvlinks.push_back(FakeLink{active.value_or(true), flit.value_or(0), data.value_or(0), replay.value_or(0),
                                     recovery.value_or(0)});
    }
    return true;
  }

  bool ParseEvents(const Json& g, const std::string& path, FakeGpu& gpu) {
    if (auto t = g.find("event_types"); t != g.end()) {
      if (!t->is_number_unsigned()) return Fail(path + ".event_types", "must be an unsigned integer mask");
      gpu.event_types = t->get<uint64_t>();
    }
    auto list = g.find("xid_events");
    if (list == g.end()) return true;
    if (!list->is_array()) return Fail(path + ".xid_events", "must be an array");
    if (list->size() > kMaxXidEvents) return Fail(path + ".xid_events", "more than 1000 events");
    for (size_t i = 0; i < list->size(); ++i) {
      const Json& e = (*list)[i];
      const std::string at = path + ".xid_events[" + std::to_string(i) + "]";
      if (!CheckObject(e, at, {"at_s", "xid"})) return false;
      auto when = e.find("at_s");
      auto xid = e.find("xid");
      if (when == e.end() || !when->is_number() || when->get<double>() < 0 || !(when->get<double>() < 1e9)) {
        return Fail(at + ".at_s", "must be a number of seconds >= 0");
      }
      if (xid == e.end() || !xid->is_number_unsigned() || xid->get<uint64_t>() > 1'000'000) {
        return Fail(at + ".xid", "must be an XID number (0..1000000)");
      }
      gpu.xid_events.push_back({when->get<double>(), xid->get<uint64_t>()});
    }
    return true;
  }

  bool ParseLost(const Json& g, const std::string& path, FakeGpu& gpu) {
    auto lost = g.find("lost");
    if (lost != g.end() && lost->is_boolean()) {
      if (lost->get<bool>()) gpu.lost_after_s = 0;  // true = GPU_IS_LOST at once
    } else if (lost != g.end()) {
      if (!ReadCode(*lost, path + ".lost", gpu.lost_code)) return false;
      gpu.lost_after_s = 0;
    }
    auto after = g.find("lost_after_s");
    if (after == g.end()) return true;
    if (!after->is_number() || after->get<double>() < 0 || !(after->get<double>() < 1e9)) {
      return Fail(path + ".lost_after_s", "must be a number of seconds >= 0");
    }
    gpu.lost_after_s = after->get<double>();
    return true;
  }

  std::string error_;
};

}  // namespace

bool IsFakeNvmlFunction(std::string_view name) {
  for (auto f : kFunctions) {
    if (f == name) return true;
  }
  return false;
}

Result<FakeNvmlState> ParseFakeNvmlState(std::string_view text) { return StateParser().Parse(text); }

}  // namespace faultline::fake_nvml
