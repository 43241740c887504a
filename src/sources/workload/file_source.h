// The file form of the workload signal: jobs append report lines (report.h) to a file
// the agent tails (tailer.h). Each Poll returns the observations from new lines plus
// the cursor to save with them in the same Store::Append, so a restart neither
// repeats nor skips lines.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "sources/workload/report.h"
#include "sources/workload/tailer.h"

namespace faultline {

struct WorkloadFileOptions {
  std::string path;  // required
  std::string node;  // this agent's node: default for reports without one
  size_t max_lines_per_poll = 10000;
  WorkloadParseOptions parse;
};

struct WorkloadFilePoll {
  std::vector<Observation> observations;
  std::vector<std::string> errors;  // one per rejected line: "line at offset N: reason"
  size_t oversized_lines = 0;
  bool rotated = false;
  bool truncated = false;
  std::string cursor_source;  // "workload"
  std::string cursor_key;     // "file:<path>"
  std::string cursor_value;   // FormatTailPosition
};

class WorkloadFileSource {
 public:
  // `cursor_value` is what a previous run saved (nullopt or unparsable: start at 0).
  WorkloadFileSource(WorkloadFileOptions options, const Clock& clock,
                     const std::optional<std::string>& cursor_value = std::nullopt);

  // kNotFound while the file does not exist; other errors as FileTailer::Poll.
  Result<WorkloadFilePoll> Poll();

  static constexpr std::string_view kCursorSource = "workload";
  std::string CursorKey() const { return "file:" + options_.path; }

 private:
  WorkloadFileOptions options_;
  const Clock& clock_;
  FileTailer tailer_;
};

}  // namespace faultline
