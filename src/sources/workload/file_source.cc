#include "sources/workload/file_source.h"

namespace faultline {
namespace {

TailOptions TailFor(const WorkloadFileOptions& o) {
  TailOptions t;
  t.path = o.path;
  t.max_line_bytes = o.parse.max_line_bytes;
  t.max_lines_per_poll = o.max_lines_per_poll;
  return t;
}

}  // namespace

WorkloadFileSource::WorkloadFileSource(WorkloadFileOptions options, const Clock& clock,
                                       const std::optional<std::string>& cursor_value)
    : options_(std::move(options)),
      clock_(clock),
      tailer_(TailFor(options_),
              cursor_value ? ParseTailPosition(*cursor_value).value_or(TailPosition{}) : TailPosition{}) {}

Result<WorkloadFilePoll> WorkloadFileSource::Poll() {
  auto batch = tailer_.Poll();
  if (!batch.ok()) return batch.status();
  WorkloadFilePoll out;
  out.oversized_lines = batch->oversized_lines;
  out.rotated = batch->rotated;
  out.truncated = batch->truncated;
  const int64_t now = clock_.NowNs();
  for (size_t i = 0; i < batch->lines.size(); ++i) {
    const std::string& line = batch->lines[i];
    auto report = ParseWorkloadReport(line, options_.parse);
    if (!report.ok()) {
      out.errors.push_back(options_.path + ": " + report.status().message());
      continue;
    }
    for (auto& o : WorkloadObservations(*report, line, options_.node, now)) out.observations.push_back(std::move(o));
  }
  out.cursor_source = std::string(kCursorSource);
  out.cursor_key = CursorKey();
  out.cursor_value = FormatTailPosition(batch->position);
  return out;
}

}  // namespace faultline
