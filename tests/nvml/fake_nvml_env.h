// Test helper: a temporary fake-NVML state file, $FAKE_NVML_STATE pointing at it, and a
// realistic HGX H100 GPU description to start from.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sources/nvml/nvml_collector.h"

namespace faultline::nvml::testing {

using Json = nlohmann::json;

// One H100 SXM as an HGX board reports it; `i` varies the identity and bus id.
inline Json H100(int i) {
  static const char* kBus[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  Json links = Json::array();
  for (int l = 0; l < 18; ++l) {
    links.push_back({{"active", true}, {"crc_flit", l}, {"crc_data", 0}, {"replay", 0}, {"recovery", 0}});
  }
  return Json{
      {"name", "NVIDIA H100 80GB HBM3"},
      {"uuid", "GPU-6b4c1d2e-90ab-4c1d-8e2f-00000000000" + std::to_string(i)},
      {"serial", "165422300" + std::to_string(1000 + i)},
      {"pci_bus_id", std::string("00000000:") + kBus[i % 8] + ":00.0"},
      {"ecc",
       {{"volatile", {{"corrected", 3}, {"uncorrected", 0}}}, {"aggregate", {{"corrected", 120}, {"uncorrected", 1}}}}},
      {"ecc_locations",
       {{"volatile", {{"corrected", {{"dram", 3}, {"sram", 0}}}, {"uncorrected", {{"dram", 0}, {"sram", 0}}}}}}},
      {"retired_pages", {{"sbe", 0}, {"dbe", 0}, {"pending", false}}},
      {"remapped_rows", {{"correctable", 2}, {"uncorrectable", 0}, {"pending", false}, {"failure", false}}},
      {"temperature", {{"gpu", 41}, {"memory", 38}, {"slowdown", 87}, {"shutdown", 92}}},
      {"power", {{"usage_mw", 312456}, {"limit_mw", 700000}}},
      {"clocks", {{"sm", 1980}, {"mem", 2619}}},
      {"clock_event_reasons", 0},
      {"pcie", {{"replay", 0}, {"gen", 5}, {"max_gen", 5}, {"width", 16}, {"max_width", 16}}},
      {"nvlink", links},
  };
}

inline Json Node(int gpus) {
  Json list = Json::array();
  for (int i = 0; i < gpus; ++i) list.push_back(H100(i));
  return Json{{"gpus", list}};
}

// Owns a temp dir with state.json; sets FAKE_NVML_STATE for the fake library.
class FakeNvmlEnv {
 public:
  FakeNvmlEnv() {
    char tmpl[] = "/tmp/fake_nvml_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/state.json";
    setenv("FAKE_NVML_STATE", path_.c_str(), 1);
  }
  ~FakeNvmlEnv() {
    unsetenv("FAKE_NVML_STATE");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FakeNvmlEnv(const FakeNvmlEnv&) = delete;
  FakeNvmlEnv& operator=(const FakeNvmlEnv&) = delete;

  // Replaces the state atomically (write + rename), as the simulator does.
  void Write(const std::string& text) {
    const std::string tmp = path_ + ".tmp";
    std::ofstream(tmp, std::ios::trunc) << text;
    std::rename(tmp.c_str(), path_.c_str());
  }
  void Write(const Json& state) { Write(state.dump()); }
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string path_;
};

inline NvmlOptions FakeOptions(const Clock* clock, const char* lib = FAKE_NVML_LIB) {
  NvmlOptions o;
  o.library_path = lib;
  o.node = "node-a07";
  o.clock = clock;
  o.slow_every = 1;  // tests of what is read take every field each time; the cadence has its own
  return o;
}

}  // namespace faultline::nvml::testing
