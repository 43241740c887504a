// What the agent runs on a schedule: one telemetry source behind a narrow interface.
// Each concrete source (sources.cc) wraps a layer module and turns one poll into
// observations plus the cursors that cover them, so the pipeline saves both in one
// Store::Append and a restart neither repeats nor skips input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "store/records.h"

namespace faultline::daemon {

struct SourceBatch {
  std::vector<Observation> observations;
  std::vector<Cursor> cursors;        // saved in the same transaction as the observations
  std::vector<std::string> warnings;  // partial failures (one unreadable file, one bad line)
};

class AgentSource {
 public:
  virtual ~AgentSource() = default;
  // Short stable name used in logs and as the cursor source ("kmsg", "nvml", ...).
  virtual std::string name() const = 0;
  // The layer this source reports on (which layers had data in a window).
  virtual Layer layer() const = 0;
  // One poll. An error means the whole source is unavailable right now (no NVML
  // library, BMC unreachable): the agent logs it once and retries with back-off.
  // Must return by `deadline_mono_ns` (CLOCK_MONOTONIC) give or take one request timeout.
  virtual Result<SourceBatch> Poll(int64_t deadline_mono_ns) = 0;
  // Releases remote state (the Redfish session) at shutdown. Called once, after the
  // last Poll, from the thread that polled.
  virtual void Shutdown() {}
  // Unblocks a Poll or WaitForData in progress (shutdown); may be called from another
  // thread. After it, WaitForData returns at once.
  virtual void Cancel() {}
  // Sources that can be told when new input is there (the kernel log: poll(2) on
  // /dev/kmsg, inotify on a followed file; Redfish: its SSE event queue) say so; the
  // agent's thread then blocks in WaitForData between polls instead of sleeping its
  // interval, and polls as soon as it returns, so a line or an event reaches the pipeline
  // at once.
  virtual bool CanWaitForData() const { return false; }
  // Blocks until new input is probably there, `max_wait_ns` passed, or Cancel(); a
  // spurious return only costs one empty poll. Called from the polling thread only.
  virtual void WaitForData(int64_t /*max_wait_ns*/) {}
};

}  // namespace faultline::daemon
