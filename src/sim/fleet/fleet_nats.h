// The fleet simulator over NATS JetStream (built when faultline_fleet_nats is): publish
// what every simulated agent publishes (`faultline sim fleet --nats URL`), consume a
// stream into a fleet analyzer the way `faultline fleet` does, for `bench fleet --nats`.
// (The bench's throwaway local nats-server is sim/fleet/nats_server.h.)
//
// Publishing: one message per envelope, subject fleet::Subject, JetStream message id the
// envelope's msg_id (a re-run inside the stream's duplicate window is stored once), in
// batches of async publishes (Connection::PublishBatch), optionally paced to the scenario
// clock (`speed` scenario seconds per wall second; 0 = as fast as acks come back).
//
// Consuming: a durable pull consumer; each fetched message is decoded, ingested and acked;
// the analyzer is evaluated on the scenario clock (each time a message's sent time passes
// the next evaluation tick), so the answers match the in-process run's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "fleet/analyzer.h"
#include "sim/fleet/fleet_scenario.h"

namespace faultline::sim {

struct FleetNatsPublishOptions {
  std::string urls;              // comma-separated
  std::string credentials_file;  // "" = none
  std::string stream = "FAULTLINE";
  std::vector<std::string> subjects = {"faultline.>"};
  bool ensure_stream = true;
  bool memory_storage = false;
  double speed = 0;
  std::optional<double> duration_s;
  size_t batch = 1024;  // messages in flight per PublishBatch
};

struct FleetNatsPublishStats {
  uint64_t messages = 0;
  uint64_t observations = 0;
  uint64_t bytes = 0;
  uint64_t duplicates = 0;
  uint64_t failed = 0;
  double publish_s = 0;  // wall time inside PublishBatch
  std::string first_error;
};

Result<FleetNatsPublishStats> PublishFleetScenario(const FleetScenario& scenario,
                                                   const FleetNatsPublishOptions& options);

struct FleetNatsConsumeOptions {
  std::string urls;
  std::string credentials_file;
  std::string stream = "FAULTLINE";
  std::string durable = "faultline-sim-bench";
  std::string filter_subject = "faultline.>";
  int fetch_batch = 1024;
  uint64_t expect_messages = 0;              // stop after this many
  int64_t idle_timeout_ns = 10'000'000'000;  // stop when nothing comes for this long
  fleet::AnalyzerOptions analyzer;
};

struct FleetNatsConsumeStats {
  uint64_t messages = 0;
  uint64_t observations = 0;
  uint64_t bytes = 0;
  uint64_t malformed = 0;
  double wall_s = 0;  // first fetch to last ack
  double cpu_s = 0;   // this thread's CPU over the same span
  double fetch_s = 0, decode_s = 0, ingest_s = 0, ack_s = 0, evaluate_s = 0;
  size_t evaluations = 0;
  size_t open_diagnoses = 0;
};

Result<FleetNatsConsumeStats> ConsumeFleetScenario(const FleetScenario& scenario,
                                                   const FleetNatsConsumeOptions& options);

}  // namespace faultline::sim
