#include "daemon/warning_log.h"

namespace faultline::daemon {

std::string WarningShape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_digits = false;
  for (char c : text) {
    const bool digit = c >= '0' && c <= '9';
    if (digit && !in_digits) out.push_back('#');
    if (!digit) out.push_back(c);
    in_digits = digit;
  }
  return out;
}

void WarningLog::Report(std::string_view source, const std::vector<std::string>& warnings, int64_t now_mono_ns) {
  if (warnings.empty()) return;
  RollWindow(now_mono_ns);
  for (const std::string& w : warnings) {
    const std::string line = "source " + std::string(source) + ": " + w;
    std::string key = std::string(source) + '\0' + WarningShape(w);
    auto it = seen_.find(key);
    if (it != seen_.end()) {
      ++it->second.repeats;
      logger_.Debug(line);
      continue;
    }
    if (seen_.size() >= options_.max_shapes) {
      ++overflow_;
      logger_.Debug(line);
      continue;
    }
    seen_.emplace(std::move(key), Seen{line, 0});
    logger_.Warn(line);
  }
}

void WarningLog::RollWindow(int64_t now_mono_ns) {
  if (!started_) {
    started_ = true;
    window_start_ns_ = now_mono_ns;
    return;
  }
  if (now_mono_ns - window_start_ns_ < options_.window_ns) return;
  Flush();
  window_start_ns_ = now_mono_ns;
}

void WarningLog::Flush() {
  for (const auto& [key, seen] : seen_) {
    if (seen.repeats == 0) continue;
    logger_.Warn(std::to_string(seen.repeats) + " more warning(s) like this one since it was logged: " +
                 seen.example);
  }
  if (overflow_ > 0) {
    logger_.Warn(std::to_string(overflow_) + " other source warning(s) of further kinds (shown at debug level)");
  }
  seen_.clear();
  overflow_ = 0;
}

}  // namespace faultline::daemon
