// The workload signal (DESIGN.md "Sources: workload"): training/inference jobs report
// how long a step took or how many samples per second they process, so "the node is
// slow" is measured, not guessed.
//
// One report is one line, in either form:
//   JSON:      {"node":"gpu-node-07","job":"llama-70b","rank":3,"local_rank":3,"step":1200,
//               "step_time_s":1.25,"time":"2025-11-29T10:00:00Z"}
//   key=value: node=gpu-node-07 job=llama-70b rank=3 step=1200 samples_per_s=812.5 time=1764410400.0
// Required: job, and step_time_s and/or samples_per_s. Optional: node (defaults to the
// agent's node), rank, local_rank (the GPU index on this node: the observation then
// names gpu/<local_rank>, else host), step, time (ISO 8601 or Unix seconds; defaults to
// when the agent received the report). Unknown keys are ignored so jobs can send extra
// fields; key=value values cannot contain spaces.
//
// Reports come from user jobs: untrusted. Parsing never throws and bounds everything
// (line length, field length, nesting, number ranges); bad input is a kCorrupt Status
// naming the problem.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"

namespace faultline {

struct WorkloadParseOptions {
  size_t max_line_bytes = 64 * 1024;
  size_t max_field_bytes = 256;  // node, job
  double max_step_time_s = 7 * 24 * 3600.0;
  double max_samples_per_s = 1e12;
  int64_t max_rank = 1 << 20;
  int64_t max_local_rank = 255;
};

struct WorkloadReport {
  std::string node;
  std::string job;
  std::optional<int64_t> rank;
  std::optional<int64_t> local_rank;
  std::optional<int64_t> step;
  std::optional<double> step_time_s;
  std::optional<double> samples_per_s;
  std::optional<int64_t> time_ns;
  bool operator==(const WorkloadReport&) const = default;
};

// Parses one line; JSON when it starts with { or [ (arrays are rejected), key=value otherwise.
Result<WorkloadReport> ParseWorkloadReport(std::string_view line, const WorkloadParseOptions& options = {});

// One observation per metric present (kStepTime in seconds, kThroughput in samples/s),
// layer and source kWorkload, seq = step, attrs job/rank/local_rank/step/time_source.
// `default_node` fills a report without node; `received_ns` a report without time.
std::vector<Observation> WorkloadObservations(const WorkloadReport& report, std::string_view raw,
                                              const std::string& default_node, int64_t received_ns);

}  // namespace faultline
