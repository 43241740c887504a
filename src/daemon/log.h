// The agent's log: one line per event to a stream (stderr in the daemon), with a level
// filter. Callers never pass secrets (credentials stay inside the Redfish client).
// Thread-safe: sources log from their own threads.
#pragma once

#include <mutex>
#include <ostream>
#include <string_view>

#include "core/clock.h"
#include "daemon/config.h"

namespace faultline::daemon {

class Logger {
 public:
  // `out` and `clock` must outlive the logger.
  Logger(std::ostream& out, LogLevel min_level, const Clock& clock) : out_(out), min_(min_level), clock_(clock) {}
  void Log(LogLevel level, std::string_view message);
  void Debug(std::string_view m) { Log(LogLevel::kDebug, m); }
  void Info(std::string_view m) { Log(LogLevel::kInfo, m); }
  void Warn(std::string_view m) { Log(LogLevel::kWarn, m); }
  void Error(std::string_view m) { Log(LogLevel::kError, m); }

 private:
  std::mutex mu_;
  std::ostream& out_;
  LogLevel min_;
  const Clock& clock_;
};

}  // namespace faultline::daemon
