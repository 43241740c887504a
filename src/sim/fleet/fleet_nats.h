// The fleet simulator over NATS JetStream (built when faultline_fleet_nats is): publish
// what every simulated agent publishes (`faultline sim fleet --nats URL`), consume a
// stream into a fleet analyzer the way `faultline fleet` does, for `bench fleet --nats`.
// (The bench's throwaway local nats-server is sim/fleet/nats_server.h.)
//
// Publishing: a node's consecutive observation envelopes packed into one message up to
// `pack` (sim/fleet/envelope_packer.h: a size bound and a hold time on the agents' clock;
// the default hold, 1 s, joins nothing at the agents' real 5 s batches), one message per
// envelope, subject fleet::Subject, JetStream message id the envelope's msg_id (packing
// is deterministic, so a re-run inside the stream's duplicate window is stored once), in
// batches of async publishes (Connection::PublishBatch; what fails is sent again under the
// same msg id, so a fail-over loses nothing and stores nothing twice), optionally paced to
// the scenario clock (`speed` scenario seconds per wall second; 0 = as fast as acks come
// back). An existing stream keeps its settings (notes say what differs).
//
// Consuming: the loop `faultline fleet` runs (fleet/nats/consumer_loop.h, FleetLoop), with
// its mechanics: a durable pull consumer fetched in batches, each message decoded and
// ingested, Evaluate every evaluate_interval of wall time (not per scenario tick: the
// stream is replayed far faster than real time), and, with a KV bucket, acks only after
// the snapshot holding their effect. The analyzer's "now" is the newest envelope's sent
// time (the scenario clock). Detection quality is scored by the in-process run; this one
// measures the transport.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "fleet/analyzer.h"
#include "sim/fleet/envelope_packer.h"
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
  // Messages per PublishBatch; all of them in flight at once (the connection's async
  // publish window is sized to it), acks awaited at the end of each.
  size_t batch = 8192;
  // A message whose publish failed (no ack: a server lost, a leader being elected) is sent
  // again, same msg id, until acked or this much wall time has passed since its batch began.
  double retry_for_s = 120;
  EnvelopePackOptions pack;
};

struct FleetNatsPublishStats {
  uint64_t messages = 0;
  uint64_t observations = 0;
  uint64_t bytes = 0;
  uint64_t duplicates = 0;
  uint64_t failed = 0;           // never acked, even after retries
  uint64_t retried = 0;          // publishes sent again (same msg id) after a failure
  uint64_t agent_envelopes = 0;  // what the simulated agents sent before packing
  double publish_s = 0;          // wall time inside PublishBatch
  std::string first_error;
  std::vector<std::string> notes;  // an existing stream's settings that differ (kept)
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
  // KV bucket for the loop's snapshots (acks wait for them, as in `faultline fleet`); ""
  // = ack each message once ingested. The bench's bucket is emptied before and after.
  std::string kv_bucket = "faultline-sim-bench";
  double evaluate_interval_s = 1;
  double snapshot_interval_s = 10;
  uint64_t expect_messages = 0;              // stop after this many (ingested or refused)
  int64_t idle_timeout_ns = 10'000'000'000;  // stop when nothing comes for this long
  fleet::AnalyzerOptions analyzer;
};

struct FleetNatsConsumeStats {
  uint64_t messages = 0;  // agents' messages taken (ingested or refused)
  uint64_t observations = 0;
  uint64_t malformed = 0;
  fleet::IngestStats analyzer;  // what the analyzer took (observations), dropped (duplicates), refused
  double wall_s = 0;            // first fetch to the last ack (the final checkpoint's included)
  double cpu_s = 0;             // this thread's CPU over the same span
  // The loop's stage timers (FleetLoopStats); snapshot_s = Snapshot + KV writes.
  double fetch_s = 0, decode_s = 0, ingest_s = 0, ack_s = 0, evaluate_s = 0, snapshot_s = 0;
  size_t evaluations = 0;
  size_t snapshots = 0;
  size_t open_diagnoses = 0;
};

Result<FleetNatsConsumeStats> ConsumeFleetScenario(const FleetScenario& scenario,
                                                   const FleetNatsConsumeOptions& options);

}  // namespace faultline::sim
