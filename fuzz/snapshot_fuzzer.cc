// libFuzzer target for the saved-snapshot reader of `faultline diagnose`
// (engine/offline/snapshot.h): any bytes are sniffed and parsed as JSON and as Prometheus
// text, and must parse or fail with kCorrupt, never crash or throw. What parses is then
// run through the offline analysis (every detector, then the isolator), as diagnose does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/isolate/isolator.h"
#include "engine/offline/offline.h"
#include "engine/offline/snapshot.h"

namespace {

void Check(const faultline::Result<faultline::Snapshot>& s, const faultline::SnapshotOptions& options) {
  if (!s.ok()) {
    if (s.status().code() != faultline::StatusCode::kCorrupt) std::abort();
    return;
  }
  // Warnings are bounded (max verbatim plus one summary line) and never carry control bytes.
  if (s->warnings.size() > options.max_warnings + 1) std::abort();
  for (const std::string& w : s->warnings) {
    for (char c : w) {
      if (static_cast<unsigned char>(c) < 0x20) std::abort();
    }
  }
  if (s->observations.size() > 256) return;  // keeps each input fast; the parser was the target
  const faultline::IsolateInput in = faultline::BuildOfflineInput(s->observations, {});
  if (faultline::Isolate(in).empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  faultline::SnapshotOptions options;
  options.scrape_time_ns = 1741946400000000000;
  const faultline::SnapshotFormat sniffed = faultline::SniffSnapshot(text);
  (void)faultline::ToString(sniffed);
  Check(faultline::ParseSnapshot(text, faultline::SnapshotFormat::kJson, options), options);
  Check(faultline::ParseSnapshot(text, faultline::SnapshotFormat::kPrometheus, options), options);
  return 0;
}
