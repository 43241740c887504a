// One sweep of a BMC: service root -> Managers (clock offset) -> Chassis (Power, Thermal,
// PowerSubsystem, ThermalSubsystem, Sensors, EnvironmentMetrics, LeakDetectors),
// Systems, and every hardware LogService's entries since the last sweep.
//
// Contract:
//  - Sweep() never blocks past its deadline by more than one request timeout (each
//    request is bounded by min(request timeout, time left)); resources not reached in
//    time are counted in `skipped` with one kTimeout error.
//  - Failures are per resource: a 500, a timeout or malformed JSON on one resource is
//    an error entry and the walk continues. Links to absent resources (404), null
//    Members and other quirks are warnings.
//  - Log entries are incremental across sweeps: an entry is emitted once, tracked by
//    its numeric Id (or Id set for non-numeric ids); a log whose ids restart lower was
//    cleared and is re-read. The BMC's own journal/audit logs are skipped.
//  - Readings no running part can produce (PlausibleRanges in parse/redfish_map.h) are
//    marked attrs["quirk"] with a warning; the detectors ignore them.
//  - Links are fetched through the client, which refuses any other host than the BMC's.
//  - Not thread-safe: one collector per BMC, one Sweep at a time (the collector itself
//    runs up to max_in_flight requests in parallel inside a sweep).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/types.h"
#include "sources/redfish/redfish_client.h"

namespace faultline::redfish {

struct CollectorOptions {
  std::string node;  // Observation::node
  int workers = 0;   // parallel requests in a sweep; 0 = the client's max_in_flight
  bool read_logs = true;
  bool read_sensors = true;  // Sensors/{id} (one request each)
  // Caps against a BMC (or something posing as one) that never stops listing. Each is a
  // total across every page, not a per-page limit; reaching one is reported naming it
  // (collections: an error, logs: a warning, since old history is what is dropped).
  size_t max_members = 10'000;        // members taken from one collection, all pages
  size_t max_collection_pages = 100;  // pages followed per collection
  size_t max_log_pages = 100;         // @odata.nextLink pages followed per log and sweep
  size_t max_log_entries = 20'000;    // entries listed per log and sweep, all pages
  size_t max_resources = 20'000;      // requests per sweep, everything together
  size_t max_seen_ids = 100'000;      // non-numeric log ids remembered per log
};

struct SweepResult {
  std::vector<Observation> observations;
  std::vector<std::string> errors;    // "path: reason"
  std::vector<std::string> warnings;  // tolerated quirks
  uint64_t requests = 0;              // HTTP requests issued by this sweep (retries included)
  uint64_t resources = 0;             // resources read
  uint64_t skipped = 0;               // resources not read because the deadline passed
  int64_t duration_ns = 0;
  std::optional<int64_t> bmc_offset_ns;  // BMC clock minus host clock
  std::string sse_uri;                   // EventService.ServerSentEventUri, if offered
  std::vector<std::string> sse_filter_properties;
};

// Where a log's reading stopped, kept across sweeps (the agent may persist it).
struct LogCursor {
  std::optional<uint64_t> last_numeric_id;
  std::set<std::string> seen_ids;
};

class RedfishCollector {
 public:
  RedfishCollector(RedfishClient& client, CollectorOptions options);
  SweepResult Sweep(int64_t deadline_mono_ns);

  const std::string& node() const { return options_.node; }
  const std::map<std::string, LogCursor>& cursors() const { return cursors_; }
  void set_cursors(std::map<std::string, LogCursor> cursors) { cursors_ = std::move(cursors); }

 private:
  RedfishClient& client_;
  CollectorOptions options_;
  std::map<std::string, LogCursor> cursors_;
};

}  // namespace faultline::redfish
