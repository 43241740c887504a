#include "engine/detect/oob_sensor_class.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace faultline {
namespace {

// PhysicalContext values (DMTF PhysicalContext enum) that name a part, not the air the
// chassis takes in. LiquidInlet is the coolant inlet, Exhaust the air leaving.
constexpr std::array<std::string_view, 24> kPartContexts = {"PowerSupply",
                                                            "PowerSubsystem",
                                                            "PowerSupplyBay",
                                                            "CPU",
                                                            "CPUSubsystem",
                                                            "GPU",
                                                            "GPUSubsystem",
                                                            "Memory",
                                                            "MemorySubsystem",
                                                            "VoltageRegulator",
                                                            "Accelerator",
                                                            "ASIC",
                                                            "FPGA",
                                                            "StorageDevice",
                                                            "NetworkingDevice",
                                                            "Transceiver",
                                                            "Battery",
                                                            "Rectifier",
                                                            "Exhaust",
                                                            "LiquidInlet",
                                                            "LiquidOutlet",
                                                            "Pump",
                                                            "Fan",
                                                            "Transformer"};

// Name tokens (lower case, whole tokens) that name a part.
constexpr std::array<std::string_view, 26> kPartTokens = {
    "psu", "ps",     "pws", "cpu", "proc", "processor", "dts", "die", "core", "cores",   "gpu",    "dimm", "dimms",
    "mem", "memory", "vr",  "vrm", "nvme", "pch",       "hba", "nic", "ssd",  "exhaust", "outlet", "soc",  "asic"};

// Substrings safe to look for inside unseparated names ("PSU1InletTemp", "CPU0DTS").
constexpr std::array<std::string_view, 8> kPartSubstrings = {"psu",     "cpu",          "gpu",         "dimm",
                                                             "exhaust", "power supply", "powersupply", "power_supply"};
constexpr std::array<std::string_view, 3> kInletWords = {"inlet", "intake", "ambient"};

// "PSU1_Inlet Temp" -> psu, 1, inlet, temp: splits on separators, letter/digit changes and
// lower-to-upper changes ("SystemBoardInlet").
std::vector<std::string> Tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  char prev = 0;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!std::isalnum(u)) {
      flush();
      prev = 0;
      continue;
    }
    const bool boundary =
        prev != 0 && ((std::isdigit(u) != 0) != (std::isdigit(static_cast<unsigned char>(prev)) != 0) ||
                      (std::isupper(u) && std::islower(static_cast<unsigned char>(prev))));
    if (boundary) flush();
    cur += static_cast<char>(std::tolower(u));
    prev = c;
  }
  flush();
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool NamesPart(std::string_view text) {
  for (const std::string& t : Tokens(text)) {
    if (std::find(kPartTokens.begin(), kPartTokens.end(), t) != kPartTokens.end()) return true;
  }
  const std::string lower = Lower(text);
  for (std::string_view s : kPartSubstrings) {
    if (lower.find(s) != std::string::npos) return true;
  }
  return false;
}

bool NamesInlet(std::string_view text) {
  const std::string lower = Lower(text);
  for (std::string_view w : kInletWords) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

std::string Attr(const Observation& obs, const std::string& key) {
  auto it = obs.attrs.find(key);
  return it == obs.attrs.end() ? std::string() : it->second;
}

}  // namespace

TempSite ClassifySensorText(std::string_view text) {
  if (NamesPart(text)) return TempSite::kPart;
  return NamesInlet(text) ? TempSite::kInlet : TempSite::kOther;
}

TempSite ClassifyTemperature(const Observation& obs) {
  if (Attr(obs, "summary") == "true") return TempSite::kInlet;  // ThermalMetrics' own Intake summary
  const std::string context = Attr(obs, "physical_context");
  if (std::find(kPartContexts.begin(), kPartContexts.end(), context) != kPartContexts.end()) return TempSite::kPart;
  const std::string name = obs.component.name + " " + Attr(obs, "device_name");
  if (NamesPart(name)) return TempSite::kPart;
  if (context == "Intake" || NamesInlet(name)) return TempSite::kInlet;
  return TempSite::kOther;
}

}  // namespace faultline
