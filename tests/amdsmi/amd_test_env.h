// Test helpers: a temporary directory holding a fake AMD SMI state file (named through
// $FAKE_AMDSMI_STATE) and a fake amdgpu sysfs tree.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace faultline::amdsmi::testing {

using Json = nlohmann::json;

// One MI300X-like GPU as the fake library's state file describes it.
inline Json Gpu(int i) {
  char bdf[16];
  std::snprintf(bdf, sizeof bdf, "0000:%02x:00.0", 0x0c + 0x10 * i);
  return Json{{"bdf", bdf},
              {"uuid", "5f1c74a1-0000-1000-80e9-00000000000" + std::to_string(i)},
              {"ecc", {{"umc", {{"ce", 2}}}, {"gfx", Json::object()}, {"xgmi_wafl", Json::object()}}},
              {"bad_pages", {{"reserved", 0}}},
              {"temperature",
               {{"hotspot", 70}, {"hotspot_critical", 105}, {"memory", 60}, {"memory_critical", 95}, {"edge", 50}}},
              {"power", {{"socket_w", 600}, {"limit_w", 750}}},
              {"violation", {{"socket_thermal", false}}},
              {"xgmi_status", 0},
              {"pcie_replay", 0}};
}

inline Json Node(int gpus) {
  Json a = Json::array();
  for (int i = 0; i < gpus; ++i) a.push_back(Gpu(i));
  return Json{{"gpus", a}};
}

class AmdTestEnv {
 public:
  AmdTestEnv() {
    char tmpl[] = "/tmp/faultline-amd-XXXXXX";
    dir_ = mkdtemp(tmpl);
    state_ = dir_ + "/state.json";
    setenv("FAKE_AMDSMI_STATE", state_.c_str(), 1);
  }
  ~AmdTestEnv() {
    unsetenv("FAKE_AMDSMI_STATE");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Write(const Json& state) { WriteText(state.dump()); }
  // Atomic (temp + rename), as the simulator writes it; a new inode is a new file.
  void WriteText(const std::string& text) {
    const std::string tmp = state_ + ".tmp";
    std::ofstream(tmp, std::ios::binary | std::ios::trunc) << text;
    std::filesystem::rename(tmp, state_);
  }
  void WriteFile(const std::string& rel, const std::string& text) {
    const std::filesystem::path p = std::filesystem::path(root()) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  }
  const std::string& dir() const { return dir_; }
  std::string root() const { return dir_ + "/root"; }

 private:
  std::string dir_, state_;
};

}  // namespace faultline::amdsmi::testing
