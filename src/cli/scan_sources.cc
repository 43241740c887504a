#include "cli/scan_sources.h"

#include <chrono>
#include <future>
#include <iterator>
#include <thread>
#include <utility>

namespace faultline::cli {
namespace {

using daemon::SourceBatch;

// A kernel log file is read at most 10000 lines a poll (the tailer's bound); this many
// polls read a log of 10 million lines, far more than any ring buffer holds.
constexpr int kMaxKernelLogPolls = 1000;
// Past the deadline a source gets this long to return, before it is called hung.
constexpr auto kGrace = std::chrono::seconds(1);

struct KnownSource {
  const char* name;
  Layer layer;
  const char* off;  // why it was not read, and how to read it
};

// In the order daemon::MakeConfiguredSources builds them.
constexpr KnownSource kKnown[] = {
    {"kmsg", Layer::kOs, "off: --skip kmsg, or [kmsg] enabled = false in --config"},
    {"nvml", Layer::kGpu, "off: --skip nvml, or [nvml] enabled = false in --config"},
    {"dcgm_exporter", Layer::kGpu, "read it with --dcgm-url URL"},
    {"redfish", Layer::kOob, "read the BMC with --redfish URL"},
    {"sysfs", Layer::kFabric, "off: --skip sysfs, or [sysfs] enabled = false in --config"},
    {"amd", Layer::kGpu, "off: --skip amd, or [amd] enabled = false in --config"},
    {"ethernet", Layer::kFabric, "off: --skip ethernet, or [ethernet] enabled = false in --config"},
    {"workload", Layer::kWorkload, "read job reports with [workload] file in --config"},
};

bool Enabled(const daemon::AgentConfig& c, std::string_view name) {
  if (name == "kmsg") return c.kmsg.enabled;
  if (name == "nvml") return c.nvml.enabled;
  if (name == "dcgm_exporter") return !c.dcgm_exporter.url.empty();
  if (name == "redfish") return !c.redfish.url.empty();
  if (name == "sysfs") return c.sysfs.enabled;
  if (name == "amd") return c.amd.enabled;
  if (name == "ethernet") return c.ethernet.enabled;
  return !c.workload.file.empty();
}

void Append(SourceBatch& into, SourceBatch&& more) {
  into.observations.insert(into.observations.end(), std::make_move_iterator(more.observations.begin()),
                           std::make_move_iterator(more.observations.end()));
  into.warnings.insert(into.warnings.end(), std::make_move_iterator(more.warnings.begin()),
                       std::make_move_iterator(more.warnings.end()));
  into.cursors = std::move(more.cursors);
}

// One poll; a kernel log again while its cursor moves (a poll that read nothing new
// returns no cursor), so a long log file is read to its end, not its first 10000 lines.
Result<SourceBatch> PollDrained(daemon::AgentSource& source, const Clock& clock, int64_t deadline_mono_ns) {
  auto batch = source.Poll(deadline_mono_ns);
  if (!batch.ok() || source.name() != "kmsg") return batch;
  for (int i = 1; i < kMaxKernelLogPolls && !batch->cursors.empty() && clock.MonotonicNs() < deadline_mono_ns; ++i) {
    auto more = source.Poll(deadline_mono_ns);
    if (!more.ok()) break;  // keep what the earlier polls read
    Append(*batch, std::move(more).value());
  }
  return batch;
}

struct Running {
  std::string name;
  std::future<Result<SourceBatch>> result;
  std::thread thread;
};

Running Start(std::unique_ptr<daemon::AgentSource> source, const Clock& clock, int64_t deadline_mono_ns) {
  Running r;
  r.name = source->name();
  // The thread owns the source: one left hung at the deadline keeps it alive.
  std::packaged_task<Result<SourceBatch>()> task(
      [source = std::shared_ptr<daemon::AgentSource>(std::move(source)), &clock, deadline_mono_ns] {
        auto batch = PollDrained(*source, clock, deadline_mono_ns);
        source->Shutdown();  // from the thread that polled, as the interface asks
        return batch;
      });
  r.result = task.get_future();
  r.thread = std::thread(std::move(task));
  return r;
}

ScanSourceReport* Find(std::vector<ScanSourceReport>& reports, const std::string& name) {
  for (ScanSourceReport& r : reports) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

void Record(Result<SourceBatch> batch, ScanSourceReport& report, ScanRead& out) {
  if (!batch.ok()) {
    report.state = ScanState::kFailed;
    report.detail = batch.status().ToString();
    return;
  }
  report.observations = batch->observations.size();
  report.state = report.observations > 0 ? ScanState::kRead : ScanState::kEmpty;
  report.detail.clear();
  report.warnings = std::move(batch->warnings);
  out.observations.insert(out.observations.end(), std::make_move_iterator(batch->observations.begin()),
                          std::make_move_iterator(batch->observations.end()));
}

}  // namespace

std::string_view ToString(ScanState s) {
  switch (s) {
    case ScanState::kRead:
      return "read";
    case ScanState::kEmpty:
      return "empty";
    case ScanState::kFailed:
      return "failed";
    case ScanState::kTimedOut:
      return "timed_out";
    case ScanState::kNotConfigured:
      return "not_configured";
  }
  return "unknown";
}

std::vector<ScanSourceReport> UnconfiguredSources(const daemon::AgentConfig& config) {
  std::vector<ScanSourceReport> out;
  for (const KnownSource& k : kKnown) {
    ScanSourceReport r{.name = k.name, .layer = k.layer};
    if (!Enabled(config, k.name)) r.detail = k.off;
    out.push_back(std::move(r));
  }
  return out;
}

ScanRead PollSourcesOnce(std::vector<std::unique_ptr<daemon::AgentSource>> sources,
                         std::vector<ScanSourceReport> reports, const Clock& clock, int64_t deadline_mono_ns) {
  ScanRead out;
  out.sources = std::move(reports);
  std::vector<Running> running;
  for (auto& s : sources) running.push_back(Start(std::move(s), clock, deadline_mono_ns));
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::nanoseconds(std::max<int64_t>(0, deadline_mono_ns - clock.MonotonicNs())) + kGrace;
  for (Running& r : running) {
    ScanSourceReport* report = Find(out.sources, r.name);
    if (report == nullptr) {  // a source the table does not know yet: reported all the same
      out.sources.push_back({.name = r.name});
      report = &out.sources.back();
    }
    if (r.result.wait_until(until) != std::future_status::ready) {
      report->state = ScanState::kTimedOut;
      report->detail = "no answer by the deadline (--timeout)";
      r.thread.detach();
      out.stuck = true;
      continue;
    }
    r.thread.join();
    Record(r.result.get(), *report, out);
  }
  return out;
}

}  // namespace faultline::cli
