// Shared helpers for the daemon tests: scratch directories, a scripted source, configs.
#pragma once

#include <unistd.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "core/types.h"
#include "daemon/config.h"
#include "daemon/source.h"

namespace faultline::daemon::testing {

constexpr int64_t kSec = 1'000'000'000;
// 2026-03-01T10:00:00Z, booted one hour earlier.
constexpr int64_t kT0 = 1'772'359'200LL * kSec;
constexpr int64_t kBoot = 3600 * kSec;

// A fresh directory removed at scope exit.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() /
            ("faultline_daemon_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline std::atomic<int> counter_{0};
  std::filesystem::path path_;
};

inline void AppendText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text;
}

// Every source off; the store in `dir`.
inline AgentConfig QuietConfig(const ScratchDir& dir) {
  AgentConfig c;
  c.agent.node = "node7";
  c.agent.store_path = dir.File("store.db");
  c.agent.evaluate_interval_ns = 20'000'000;
  c.agent.max_backoff_ns = 40'000'000;
  c.kmsg.enabled = false;
  c.nvml.enabled = false;
  c.sysfs.enabled = false;
  c.workload.interval_ns = 10'000'000;
  return c;
}

// A source that plays a script: each Poll takes the next step (a batch or an error);
// past the end it returns empty batches. Counts polls and shutdowns.
class ScriptedSource final : public AgentSource {
 public:
  explicit ScriptedSource(std::string name = "workload", Layer layer = Layer::kWorkload)
      : name_(std::move(name)), layer_(layer) {}
  void Add(Result<SourceBatch> step) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back(std::move(step));
  }
  std::string name() const override { return name_; }
  Layer layer() const override { return layer_; }
  Result<SourceBatch> Poll(int64_t) override {
    ++polls;
    std::lock_guard<std::mutex> lock(mu_);
    if (script_.empty()) return SourceBatch{};
    Result<SourceBatch> next = std::move(script_.front());
    script_.pop_front();
    return next;
  }
  void Shutdown() override { ++shutdowns; }
  void Cancel() override { ++cancels; }

  std::atomic<int> polls{0};
  std::atomic<int> shutdowns{0};
  std::atomic<int> cancels{0};

 private:
  std::string name_;
  Layer layer_;
  std::mutex mu_;
  std::deque<Result<SourceBatch>> script_;
};

// One step-time report of job train-1 on node7 at time t (a workload observation).
inline Observation Step(int64_t t, double seconds) {
  Observation o;
  o.time_ns = t;
  o.node = "node7";
  o.layer = Layer::kWorkload;
  o.component = ComponentRef{ComponentType::kHost, "job/train-1", {}};
  o.kind = ObsKind::kStepTime;
  o.value = seconds;
  o.source = Source::kWorkload;
  o.text = "step time";
  o.attrs["job"] = "train-1";
  o.attrs["step"] = std::to_string(t);
  return o;
}

}  // namespace faultline::daemon::testing
