// Helpers shared by the store tests: a per-test temporary directory and realistic
// observations.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/time.h"
#include "core/types.h"
#include "store/store.h"

namespace faultline::testing {

// A fresh directory under the system temp dir, removed when the fixture ends.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("faultline-" + std::string(info->test_suite_name()) + "-" +
                                                      info->name() + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Opens a store or fails the test (returning null).
inline std::unique_ptr<Store> OpenStore(const std::string& path, const StoreOptions& options = {}) {
  auto s = Store::Open(path, options);
  if (!s.ok()) {
    ADD_FAILURE() << s.status().ToString();
    return nullptr;
  }
  return std::move(s).value();
}

inline constexpr int64_t kT0 = 1764410400LL * 1'000'000'000;  // 2025-11-29T10:00:00Z

// A kernel XID record as the kmsg source would emit it.
inline Observation XidRecord(uint64_t seq, int64_t time_ns = kT0, const std::string& node = "gpu-node-07") {
  Observation o;
  o.time_ns = time_ns;
  o.mono_us = 227996636 + static_cast<int64_t>(seq);
  o.seq = seq;
  o.node = node;
  o.layer = Layer::kOs;
  o.component = GpuComponent("3");
  o.component.keys["bdf"] = "0000:b5:00.0";
  o.kind = ObsKind::kXid;
  o.code = 79;
  o.text = "GPU has fallen off the bus";
  o.source = Source::kKmsg;
  o.raw = "NVRM: Xid (PCI:0000:b5:00): 79, pid=<unknown>, name=<unknown>, GPU has fallen off the bus.";
  return o;
}

// A PSU input voltage reading from the BMC.
inline Observation PsuVoltage(double volts, int64_t time_ns, const std::string& node = "gpu-node-07") {
  Observation o;
  o.time_ns = time_ns;
  o.node = node;
  o.layer = Layer::kOob;
  o.component = ComponentRef{ComponentType::kPsu, "1", {}};
  o.kind = ObsKind::kVoltage;
  o.value = volts;
  o.source = Source::kRedfish;
  o.raw = R"({"Name":"PSU1 Input Voltage","ReadingVolts":)" + std::to_string(volts) + "}";
  return o;
}

// The bytes of a file (empty when it cannot be read): to check a refused store is unchanged.
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Runs SQL on a database file behind the store's back (to damage or forge one).
inline void RawExec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

}  // namespace faultline::testing
