// The agent's side of the fleet (docs/agent.md "[fleet]", docs/fleet.md): follows the
// store and publishes what it holds to NATS JetStream for `faultline fleet`.
//
// Each round reads the rows stored after the publisher's cursors (store cursors of node
// <node>, source "fleet": obs_after_id, finding_after_id, diagnosis_after_id,
// action_after_id), in id order: observations batched into envelopes (fleet/wire.h,
// within WireLimits and the server's max_payload), then each finding, diagnosis and
// action in its own envelope, published to faultline.<site>.<rack>.<node>.<kind> with a
// msg id naming the rows. A cursor moves only past envelopes the stream acknowledged, in
// order: the first failure stops the round, and the envelopes from there are kept and
// sent again first next round exactly as they were (same msg ids, so the stream stores
// each once even when its first ack was lost in a fail-over); only then are newer rows
// read. A restart cuts them afresh from the cursor (the analyzer drops re-sent rows by
// row id). So while NATS is unreachable the store buffers, and the
// publisher catches up in order afterwards; a restart resumes at the stored cursors.
//
// A cursor above its table's highest row id means retention emptied the table and SQLite
// began its ids again at 1: the publisher starts that table over (logged) instead of
// skipping every new row up to the old cursor.
//
// Node-local diagnosis never waits for it: it runs on its own thread (Start/Stop), and
// backs off (doubling from `interval` to `max_backoff`) while NATS is down. Rows the
// wire cannot carry (a string over max_field_bytes is cut to it; a record still over the
// message limit, an undecodable row) are skipped and counted, never retried forever.
//
// Thread-safety: PublishOnce and the thread must not run at once (Start's thread calls
// PublishOnce itself); stats() may be read from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "daemon/config.h"
#include "fleet/nats/client.h"
#include "fleet/wire.h"
#include "store/records.h"

namespace faultline {
class Store;
}

namespace faultline::daemon {

class FleetLinks;
class Logger;

struct FleetPublisherOptions {
  fleet::nats::ConnectOptions connect;
  std::string site = "default";
  std::string rack = "default";
  std::string node;  // the cursors' node (the agent's)
  int64_t interval_ns = 1'000'000'000;
  int64_t max_backoff_ns = 60'000'000'000;
  size_t max_observations_per_envelope = 5000;
  size_t max_rows_per_round = 100'000;     // per kind; a round with more left runs again at once
  int64_t ack_timeout_ns = 5'000'000'000;  // bounds Stop() while a batch waits
  fleet::WireLimits limits;
};

struct FleetPublisherStats {
  uint64_t rounds = 0;
  uint64_t failed_rounds = 0;
  uint64_t envelopes = 0;     // acked by the stream
  uint64_t observations = 0;  // carried by acked envelopes
  uint64_t records = 0;       // findings + diagnoses + actions acked
  uint64_t duplicates = 0;    // acked as already stored (a re-send)
  uint64_t skipped = 0;       // rows the wire could not carry (counted, stepped past)
  bool connected = false;
};

class FleetPublisher {
 public:
  // `store`, `clock` and `logger` (may be null) must outlive the publisher.
  FleetPublisher(Store& store, FleetPublisherOptions options, const Clock& clock, Logger* logger);
  ~FleetPublisher();  // Stop()s
  FleetPublisher(const FleetPublisher&) = delete;
  FleetPublisher& operator=(const FleetPublisher&) = delete;

  // One round: connects when not connected, publishes rows after the cursors (up to
  // max_rows_per_round of each kind) and saves the cursors past what was acked. Returns
  // the envelopes acked; kUnavailable/kTimeout when NATS could not take them (the
  // cursors then stand where the acks stopped).
  Result<size_t> PublishOnce();
  // True when the last round left rows behind (max_rows_per_round reached).
  bool behind() const { return behind_; }

  // After each round that reached NATS, the thread also reads the fleet's verdicts into
  // `links` (borrowed, must outlive the publisher; null = none). Call before Start().
  void UseFleetLinks(FleetLinks* links) { links_ = links; }

  void Start();
  void Stop();
  FleetPublisherStats stats() const;

 private:
  struct Pending;  // one envelope on its way: its message and the cursor it moves
  Status EnsureConnected();
  Result<size_t> PublishObservations();
  template <typename T>
  Result<size_t> PublishRecords(fleet::RecordKind kind, const char* cursor_key);
  // Publishes `pending` in order; saves the cursor of the last acked prefix and keeps the
  // rest (KeepUnacked) for SendUnacked to publish again, unchanged, next round.
  Result<size_t> Send(std::vector<Pending>& pending, const char* cursor_key);
  void KeepUnacked(std::vector<Pending>& pending, std::vector<fleet::nats::OutMessage>& messages, size_t first_unacked,
                   const char* cursor_key);
  Result<size_t> SendUnacked(const char* cursor_key);
  Result<int64_t> Cursor(const char* key);
  // The cursor, reset to 0 when the table's ids restarted below it.
  Result<int64_t> StartAt(const char* key, int64_t max_id);
  // The store's epoch (cursor "epoch"): loaded, or made and saved on first use. Message ids
  // are "<node>/<kind>/<rows>@<epoch>".
  Status LoadEpoch();
  std::string MsgId(fleet::RecordKind kind, int64_t first, int64_t last) const;
  std::string EncodeWithin(fleet::Envelope& e);
  void Loop();
  void ReadVerdicts();  // links_ from the fleet diagnoses on the stream (never fatal)
  void Note(bool ok, const Status& s);

  Store& store_;
  FleetPublisherOptions options_;
  const Clock& clock_;
  Logger* logger_;
  FleetLinks* links_ = nullptr;
  std::string verdicts_error_;  // the last one logged
  std::unique_ptr<fleet::nats::Connection> conn_;
  MaxRowIds max_ids_;  // of this round
  std::string epoch_;
  std::map<std::string, std::vector<Pending>> unsent_;  // by cursor key: not acked last round
  bool behind_ = false;
  bool failing_ = false;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  FleetPublisherStats stats_;
  std::thread thread_;
};

// The publisher options an agent's [fleet] section asks for.
FleetPublisherOptions FleetPublisherOptionsFor(const FleetSection& section, const std::string& node);

}  // namespace faultline::daemon
