// Fuzzes the workload report parser (JSON and key=value lines) and the HTTP body
// handler that splits a body into lines. Invariants: never crash; an accepted report
// has a job and at least one positive, finite metric; the handler answers 202 exactly
// when every non-empty line parses.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/clock.h"
#include "sources/workload/http.h"
#include "sources/workload/report.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckObservations(const faultline::WorkloadReport& r, std::string_view line) {
  auto obs = faultline::WorkloadObservations(r, line, "fuzz-node", 1764410400LL * 1'000'000'000);
  Check(!obs.empty());
  for (const auto& o : obs) {
    Check(o.value && std::isfinite(*o.value) && *o.value > 0);
    Check(!o.node.empty() && o.attrs.at("job") == r.job);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto report = faultline::ParseWorkloadReport(input);
  if (report.ok()) {
    Check(!report->job.empty());
    Check(report->step_time_s || report->samples_per_s);
    CheckObservations(*report, input);
  }
  faultline::FakeClock clock(1764410400LL * 1'000'000'000);
  faultline::WorkloadHttpOptions options;
  size_t delivered = 0;
  auto reply = faultline::HandleWorkloadPost(input, options, clock, [&](std::vector<faultline::Observation> obs) {
    delivered += obs.size();
    return faultline::Status::Ok();
  });
  Check(reply.status == 202 || reply.status == 400 || reply.status == 413);
  Check((reply.status == 202) == (delivered > 0));
  return 0;
}
