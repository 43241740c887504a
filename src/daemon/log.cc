#include "daemon/log.h"

#include "core/time.h"

namespace faultline::daemon {

void Logger::Log(LogLevel level, std::string_view message) {
  if (level < min_) return;
  std::lock_guard<std::mutex> lock(mu_);
  out_ << FormatIso8601(clock_.NowNs()) << " " << LogLevelName(level) << " " << message << "\n";
  out_.flush();
}

}  // namespace faultline::daemon
