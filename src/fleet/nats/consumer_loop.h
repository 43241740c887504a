// The fleet analyzer's consumer loop (`faultline fleet`, docs/fleet.md "Transport (NATS
// JetStream)"): JetStream in, FleetAnalyzer in the middle, fleet diagnoses out.
//
// Start() ensures the stream (an existing one keeps its settings unless the operator asked
// for others: StreamOverrides; notes() says what differed), binds the durable pull consumer
// (every process that binds the same durable shares its messages), binds the KV bucket,
// restores this instance's last snapshot, then reads again at once what the durable had
// delivered but not acked when the last process stopped (Connection::ReadRange), so a
// restarted analyzer knows the causes it knew within moments, not after the ack wait.
// Each Step() fetches a batch and feeds the analyzer (each message decoded into one reused
// Envelope, fleet::DecodeInto, so it seldom allocates); a message that does not decode
// (malformed, over WireLimits) is Term'ed and counted, never fatal; a message whose
// envelope names another place than its subject (faultline.<site>.<rack>.<node>.<kind>:
// an agent speaking for another node) or whose observations name another node is counted
// as forged, warned about and acked unread; fleet diagnoses already on the stream
// (subjects ending ".fleet") are acked and skipped. On its tick, Evaluate runs and each new
// or changed fleet diagnosis is published to faultline.<site>.fleet.fleet.fleet with msg id
// "<id>@<first_ns>-<last_ns>#<hash of its content>" (the stream drops a re-publish of the
// same diagnosis, e.g. after a restart, yet passes one that changed), then returned to the
// caller to print.
//
// Judged on the data's own clock: Evaluate's "now" is the newest sent time of the
// envelopes taken (never past the wall clock, so one agent's clock running ahead moves
// nothing), saved with the snapshot. A consumer started late, or replaying a stream
// recorded earlier, reaches the answer a live one reached; the wall clock is used only
// before any data was seen.
//
// Nothing lost, nothing counted twice, across restarts: a message is acked only once a
// snapshot holding its effect is in the KV bucket (Checkpoint, every snapshot_interval),
// and a diagnosis is published before the snapshot that says it was. A crash loses
// nothing (unacked messages are read again at Start, come back again after ack_wait, and
// the msg-id memory drops the repeats). Without a KV bucket, messages are acked as soon as
// they are ingested (a restart then starts from an empty state).
//
// Snapshots larger than one KV value are written in chunks under a new generation, then
// a manifest names it (atomic switch); a manifest whose chunks do not match its size and
// hash is ignored (the analyzer starts empty, counted in snapshot_errors).
//
// Thread-compatible: one loop per thread; the Connection may be shared.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "fleet/analyzer.h"
#include "fleet/nats/client.h"
#include "fleet/wire.h"

namespace faultline::fleet::nats {

struct FleetLoopOptions {
  StreamConfig stream;
  StreamOverrides stream_overrides;  // the stream settings the operator asked for; others are kept
  bool ensure_stream = true;         // false: the stream must exist (a consumer without rights to create it)
  ConsumerConfig consumer;
  std::string kv_bucket = "faultline-fleet";  // "" = no snapshots (ack at once)
  int kv_replicas = 1;
  std::string instance = "default";  // snapshot key: snap.<durable>.<instance>
  std::string site = "default";      // published to faultline.<site>.fleet.fleet.fleet
  bool publish_diagnoses = true;
  // Messages per pull request: one request's round trip and the server's wake-up are spread
  // over this many messages (agents' envelopes hold a few observations each).
  int fetch_batch = 1024;
  int64_t fetch_timeout_ns = 500'000'000;
  int64_t evaluate_interval_ns = 1'000'000'000;
  int64_t snapshot_interval_ns = 10'000'000'000;  // keep well under consumer.ack_wait_ns
  // A checkpoint runs early once this many acks wait for it; never more than half the
  // durable's max_ack_pending as the server holds it (past that the server would stop
  // delivering until the next checkpoint). Each waiting ack costs its subject's bytes
  // (about 70), and a crash redelivers them all (dropped by the restored msg ids).
  size_t max_deferred_acks = 500'000;
  // Start() reads again what the durable delivered but had not acked, up to this many.
  size_t max_replay = 1'000'000;
  WireLimits limits;
  // Told about what an operator should see (forged messages, stream or bucket settings
  // that differ from what was asked); the loop itself never prints. Null = not told.
  std::function<void(const std::string&)> warn;
};

struct FleetLoopStats {
  uint64_t messages = 0;       // fetched
  uint64_t ingested = 0;       // decoded and handed to the analyzer
  uint64_t malformed = 0;      // did not decode: Term'ed
  uint64_t oversized = 0;      // over WireLimits: Term'ed
  uint64_t skipped_fleet = 0;  // fleet diagnoses on the stream (ours or another partition's)
  uint64_t forged = 0;         // envelope names another place than its subject: acked, dropped
  uint64_t replayed = 0;       // read again at Start (delivered to an earlier process, unacked)
  uint64_t redelivered = 0;    // delivery count > 1
  uint64_t evaluations = 0;
  uint64_t diagnoses = 0;            // new or changed fleet diagnoses
  uint64_t published = 0;            // of them, acked by the stream
  uint64_t published_duplicate = 0;  // acked as already there (a replay after restart)
  uint64_t snapshots = 0;
  uint64_t snapshot_errors = 0;
  uint64_t fetch_errors = 0;
  uint64_t observations = 0;   // in the ingested envelopes
  int64_t newest_sent_ns = 0;  // latest sent_ns of an ingested envelope (the agents' clock; kept in the snapshot)
  bool restored = false;       // Start() found and restored a snapshot
  // Where the time went (wall seconds, steady clock): waiting in Fetch (the server's
  // delivery and libnats' reading included), Decode, Ingest, acks (per message, or
  // deferred ones at a checkpoint), Evaluate (and publishing what it found), Snapshot
  // and its KV writes.
  double fetch_s = 0, decode_s = 0, ingest_s = 0, ack_s = 0, evaluate_s = 0, snapshot_s = 0;
};

class FleetLoop {
 public:
  // `conn`, `analyzer` and `clock` must outlive the loop.
  FleetLoop(Connection& conn, FleetAnalyzer& analyzer, FleetLoopOptions options, const Clock& clock);

  Status Start();
  // One fetch (waiting up to fetch_timeout), then evaluate / checkpoint when due. Returns
  // the fleet diagnoses that are new or changed in this step. kUnavailable when NATS is
  // down (the caller waits and calls again; libnats reconnects).
  Result<std::vector<FleetDiagnosis>> Step();
  // Evaluates now (whatever the tick), publishing what is new.
  Result<std::vector<FleetDiagnosis>> EvaluateNow();
  // Publishes anything still unpublished, saves a snapshot, then acks every message it
  // covers. Call before exiting.
  Status Checkpoint();
  // True when the durable holds no message not yet delivered (the server's num_pending):
  // what `faultline fleet --once` waits for, since a fetch that times out on large
  // messages says nothing about what is left.
  Result<bool> Drained();
  // The "now" Evaluate is given: the data's clock (see above).
  int64_t EvaluationTimeNs() const;

  const FleetLoopStats& stats() const { return stats_; }
  // What Start() found different from what was asked (stream and bucket settings kept or
  // changed), one line each.
  const std::vector<std::string>& notes() const { return notes_; }
  std::string snapshot_key() const;

 private:
  enum class Taken { kIngested, kFleet, kForged, kMalformed, kOversized };
  void Handle(JsMessage& m);
  // Decodes, checks and ingests one message; `count` false for a replay (the message is
  // counted when its durable redelivers it).
  Taken Take(const JsMessage& m, bool count);
  void NoteForged(const JsMessage& m);
  Status EnsureStream();
  Status BindBucket();
  Status ReplayUnacked();
  Status Publish(const FleetDiagnosis& d);
  Status FlushOutbox();
  Status SaveSnapshot();  // the analyzer's, streamed chunk by chunk
  Result<std::optional<std::string>> LoadSnapshot();

  Connection& conn_;
  FleetAnalyzer& analyzer_;
  FleetLoopOptions options_;
  const Clock& clock_;
  std::unique_ptr<PullConsumer> consumer_;
  std::unique_ptr<KeyValue> kv_;
  DeferredAcks deferred_acks_;
  size_t max_deferred_acks_ = 0;        // options_.max_deferred_acks within the durable's limit
  std::vector<FleetDiagnosis> outbox_;  // evaluated, not yet acked by the stream
  Envelope scratch_;                    // every message is decoded into it (DecodeInto)
  uint64_t generation_ = 0;
  size_t generation_chunks_ = 0;
  int64_t last_evaluate_mono_ = 0;
  int64_t last_snapshot_mono_ = 0;
  FleetLoopStats stats_;
  std::vector<std::string> notes_;
};

// True when the envelope speaks for the place its subject names: Subject(place, kind) is
// the subject, and every observation (and action) that names a node names that one.
bool FromItsSubject(std::string_view subject, const Envelope& e);

// The subject fleet diagnoses go to, and the msg id of one (id, span, content hash).
std::string FleetDiagnosisSubject(const std::string& site);
std::string FleetDiagnosisMsgId(const FleetDiagnosis& d);

}  // namespace faultline::fleet::nats
