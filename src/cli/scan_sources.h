// `faultline scan`'s reading half: the agent's own sources (daemon/sources.h), built from an
// AgentConfig, each polled once, all at the same time, under one deadline. Every source the
// scan knows is reported, whether it was read, could not be read (and why), timed out, or
// was not configured: nothing is skipped silently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/types.h"
#include "daemon/config.h"
#include "daemon/source.h"

namespace faultline::cli {

enum class ScanState {
  kRead,           // polled, at least one observation
  kEmpty,          // polled without error, nothing there (a clean kernel log, no interface)
  kFailed,         // the poll failed: `detail` is the error
  kTimedOut,       // no answer by the deadline
  kNotConfigured,  // not enabled: `detail` says how to turn it on
};
std::string_view ToString(ScanState s);

struct ScanSourceReport {
  std::string name;  // the agent's source name: "kmsg", "nvml", "sysfs", ...
  Layer layer = Layer::kOs;
  ScanState state = ScanState::kNotConfigured;
  size_t observations = 0;
  std::string detail;                 // the error, or the flag that enables it
  std::vector<std::string> warnings;  // partial failures of a poll that succeeded
};

struct ScanRead {
  std::vector<Observation> observations;
  std::vector<ScanSourceReport> sources;  // every source the scan knows, in the table's order
  // A poll still running at the deadline: its thread is left behind (a hung driver call
  // cannot be interrupted), so the caller must end the process with _Exit, not return.
  bool stuck = false;
};

// The sources the scan knows (name, layer, how to enable it), in report order. Those
// `config` does not enable are reported as kNotConfigured.
std::vector<ScanSourceReport> UnconfiguredSources(const daemon::AgentConfig& config);

// Polls every source once, each on its own thread, and waits for them until
// `deadline_mono_ns` (CLOCK_MONOTONIC, as AgentSource::Poll) plus a second of grace. A
// kernel log is polled again until its position stops moving, so a long log is read to its
// end. Each source is shut down (Redfish session deleted) after its poll. `reports` are the
// unconfigured sources from UnconfiguredSources; the polled ones take their places.
// `clock` must outlive the process when ScanRead::stuck is set.
ScanRead PollSourcesOnce(std::vector<std::unique_ptr<daemon::AgentSource>> sources,
                         std::vector<ScanSourceReport> reports, const Clock& clock, int64_t deadline_mono_ns);

}  // namespace faultline::cli
