// NATS JetStream transport for the fleet (docs/fleet.md "Transport (NATS JetStream)"): a
// small RAII layer over the C client libnats (Debian libnats-dev), so the rest of faultline
// sees Status/Result and owned C++ values, never natsStatus or raw pointers.
//
// What it offers:
//   - Connection::Connect: a list of server URLs, reconnecting forever (the server list is
//     tried in order, then again after reconnect_wait), optional credentials read from a
//     FILE (never from the command line, never logged) and TLS with a CA bundle
//     (verification always on);
//   - streams: EnsureStream creates the stream; an existing one keeps its settings except
//     those the operator explicitly asked to change (StreamOverrides), and every difference
//     is reported (StreamState::notes), so a default never weakens a stream (fewer
//     replicas, a shorter max age) that someone set up on purpose;
//   - publishing with a message id (JetStream's Nats-Msg-Id: a re-send inside the stream's
//     duplicate window is acknowledged as a duplicate and stored once), one at a time
//     (Publish) or many in flight at once (PublishBatch: every ack or failure reported per
//     message);
//   - durable pull consumers (PullConsumer): bound or created; several processes binding
//     the same durable share its messages; Fetch, then Ack / Nak / Term each message;
//   - a key-value bucket (KeyValue) for the fleet analyzer's state.
//
// Errors: kUnavailable when no server answers or the connection is down (retry later),
// kTimeout when an answer did not come in time, kPermissionDenied for refused credentials
// or an untrusted TLS certificate, kNotFound for a missing stream/consumer/key,
// kInvalidArgument for unusable arguments (a message over the server's max_payload).
//
// Threads: a Connection may be shared by threads (libnats serialises its socket); one
// PublishBatch runs at a time per Connection (others wait). A PullConsumer and the
// JsMessages it returns belong to one thread. The Connection must outlive every consumer,
// key-value handle and message made from it.
//
// Process-wide state: libnats keeps its own (timers, its delivery threads), initialised
// on first use; this layer keeps none and never calls nats_Close (which would pull the
// library out from under other connections in the process).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

// libnats' opaque types, so users of this header need not include nats.h.
typedef struct __natsConnection natsConnection;
typedef struct __natsSubscription natsSubscription;
typedef struct __natsMsg natsMsg;
typedef struct __jsCtx jsCtx;
typedef struct __kvStore kvStore;

namespace faultline::fleet::nats {

namespace detail {
struct AsyncBatch;
}

struct ConnectOptions {
  std::vector<std::string> urls;   // "nats://127.0.0.1:4222", "tls://nats-1.example:4222"
  std::string name = "faultline";  // client name the server shows (connz)
  // Credentials file (docs/fleet.md): a NATS .creds file (user JWT + nkey seed), or a
  // first line "user:password", or a first line holding a token. Must be a regular file
  // not readable by group or others (chmod 600). "" = no credentials.
  std::string credentials_file;
  // PEM bundle of the CAs to trust; set = TLS required, server certificate verified.
  std::string ca_file;
  int64_t connect_timeout_ns = 2'000'000'000;  // per server, per attempt
  int64_t reconnect_wait_ns = 1'000'000'000;   // between attempts at the same server
  // How long JetStream API calls and publish acks are waited for.
  int64_t request_timeout_ns = 5'000'000'000;
  // Bytes of publishes buffered while reconnecting (libnats' reconnect buffer).
  int reconnect_buffer_bytes = 8 << 20;
  // PublishBatch: publishes in flight (sent, ack not yet back) before a publish waits for
  // room. A batch no larger than this is sent without stopping for acks.
  int max_pending_publishes = 4096;
  // How often the client pings an idle server, and how many pings may go unanswered before
  // it takes the connection for dead and reconnects (libnats' defaults, 2 min x 2, leave a
  // half-open connection to a restarted server unnoticed for minutes).
  int64_t ping_interval_ns = 5'000'000'000;
  int max_pings_out = 2;
  // Prefix of this connection's reply subjects ("" = libnats' "_INBOX"). A NATS user whose
  // permissions let it subscribe only to its own prefix (deploy/nats) cannot read replies
  // meant for another client (docs/fleet.md "Permissions").
  std::string inbox_prefix;
};

// The credentials a file names (ParseCredentials): exactly one kind is set.
struct Credentials {
  std::string user;
  std::string password;
  std::string token;
  bool creds_file = false;  // a NATS .creds file: libnats reads it itself
};
// Reads and checks a credentials file: kNotFound when absent, kPermissionDenied when
// group/other may read it, kInvalidArgument when empty or not a regular file.
Result<Credentials> ReadCredentialsFile(const std::string& path);
// The parse alone (tests, fuzzing): kInvalidArgument for empty or unusable text.
Result<Credentials> ParseCredentials(std::string_view text);

// A URL with any user:password@ part replaced by "***@" (for logs and errors).
std::string RedactUrl(std::string_view url);
// Splits "a,b , c" into trimmed non-empty parts.
std::vector<std::string> SplitUrls(std::string_view csv);

struct StreamConfig {
  std::string name = "FAULTLINE";
  std::vector<std::string> subjects = {"faultline.>"};
  int64_t max_age_ns = int64_t{7} * 24 * 3600 * 1'000'000'000;  // 0 = unlimited
  int64_t max_bytes = int64_t{8} << 30;  // -1 = unlimited; reserved on the servers' disks at creation
  int32_t max_msg_size = 1 << 20;        // -1 = unlimited
  int64_t duplicate_window_ns = int64_t{10} * 60 * 1'000'000'000;
  int replicas = 1;  // 1..5; 3 on a 3-server cluster
  bool memory_storage = false;
};

// The settings of a StreamConfig the operator explicitly asked for (a command-line flag).
// EnsureStream changes an existing stream's setting only when its flag is set; every other
// setting stays as the server holds it, so a tool run with defaults never undoes what an
// operator configured (3 replicas reset to 1). Subjects are only ever added.
struct StreamOverrides {
  bool max_age = false;
  bool max_bytes = false;
  bool max_msg_size = false;
  bool duplicate_window = false;
  bool replicas = false;
};

struct StreamState {
  std::string name;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  StreamConfig config;  // as the server holds it
  std::string leader;   // the server that leads it in a cluster ("" when not clustered)
  // What EnsureStream found different and what it did about it, one line each ("replicas:
  // the stream has 3, 1 asked by default: kept 3"). Empty when nothing differed.
  std::vector<std::string> notes;
};

struct PubAck {
  std::string stream;
  uint64_t sequence = 0;
  bool duplicate = false;  // the server had this msg id within its duplicate window
};

struct OutMessage {
  std::string subject;
  std::string data;
  std::string msg_id;  // required for PublishBatch
};

// One message's outcome in a PublishBatch.
struct PublishResult {
  Status status;  // Ok = stored (or a duplicate of a stored one)
  PubAck ack;
};

struct ConsumerConfig {
  std::string stream = "FAULTLINE";
  std::string durable = "faultline-fleet";  // no '.', '*', '>' or whitespace
  std::string filter_subject = "faultline.>";
  int64_t ack_wait_ns = 60'000'000'000;  // unacked this long -> redelivered (to any member)
  // In flight (delivered, unacked) across all members; past it the server delivers
  // nothing more. A consumer that acks only after its snapshot holds this many between
  // two snapshots, so it bounds that consumer's throughput (docs/fleet.md "Transport").
  // BindPullConsumer reports the server's value for an existing durable.
  int64_t max_ack_pending = 1'000'000;
  int64_t max_deliver = -1;  // -1 = unlimited
};

class Connection;

// Ack subjects kept for later (a consumer that acks once its snapshot is saved): packed
// into one buffer, NUL-separated (subjects hold no NUL), so holding a million of them
// costs their bytes and no allocation each.
class DeferredAcks {
 public:
  void Add(std::string_view ack_subject);
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  size_t bytes() const { return packed_.size(); }
  void clear();
  // Calls f(const char* nul_terminated_subject) for each, in the order added.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t pos = 0; pos < packed_.size();) {
      const char* s = packed_.data() + pos;
      f(s);
      pos += std::char_traits<char>::length(s) + 1;
    }
  }

 private:
  std::string packed_;
  size_t count_ = 0;
};

// A message fetched from a pull consumer. Move-only; destroying it without Ack/Nak/Term
// leaves it to be redelivered after ack_wait. Cheap to make: the stream sequence and the
// delivery count are read from the ack subject without allocating, the msg id header
// only when asked for.
class JsMessage {
 public:
  JsMessage() = default;
  ~JsMessage();
  JsMessage(JsMessage&& other) noexcept;
  JsMessage& operator=(JsMessage&& other) noexcept;
  JsMessage(const JsMessage&) = delete;
  JsMessage& operator=(const JsMessage&) = delete;

  std::string_view data() const;
  std::string_view subject() const;
  std::string msg_id() const;  // "" when published without one
  uint64_t stream_sequence() const { return stream_seq_; }
  uint64_t delivery_count() const { return delivered_; }  // 1 on first delivery

  Status Ack();                      // processed
  Status AckSync();                  // processed, and the server confirmed the ack
  Status Nak(int64_t delay_ns = 0);  // redeliver (after delay)
  Status Term();                     // never redeliver (malformed: it cannot succeed)
  Status InProgress();               // still working: restart ack_wait
  // The subject an ack goes to: kept instead of the message when acking is deferred
  // (Connection::AckLater), so a consumer holds a few bytes per message, not its data.
  std::string_view ack_subject() const;

 private:
  friend class PullConsumer;
  explicit JsMessage(natsMsg* msg);
  natsMsg* msg_ = nullptr;
  uint64_t stream_seq_ = 0;
  uint64_t delivered_ = 0;
};

class PullConsumer {
 public:
  ~PullConsumer();
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;

  // Up to `batch` messages, waiting up to `timeout_ns` for the first; an empty vector
  // when none came (not an error). kUnavailable while disconnected.
  Result<std::vector<JsMessage>> Fetch(int batch, int64_t timeout_ns);
  // Messages not yet delivered to any member, and delivered but unacked (server view).
  struct Info {
    uint64_t pending = 0;  // in the stream, matching the filter, not yet delivered
    int64_t ack_pending = 0;
    int64_t redelivered = 0;
    uint64_t ack_floor_stream_seq = 0;  // every message up to it is acked
    uint64_t delivered_stream_seq = 0;  // the last one delivered (acked or not)
  };
  Result<Info> GetInfo();
  const ConsumerConfig& config() const { return config_; }

 private:
  friend class Connection;
  PullConsumer(natsSubscription* sub, jsCtx* js, ConsumerConfig config)
      : sub_(sub), js_(js), config_(std::move(config)) {}
  natsSubscription* sub_;
  jsCtx* js_;  // the Connection's: consumer info is asked by stream and durable name
  ConsumerConfig config_;
};

struct KvConfig {
  std::string bucket = "faultline-fleet";  // A-Z a-z 0-9 _ -
  int history = 1;
  int replicas = 1;
  int32_t max_value_size = 1 << 20;
};

struct KvEntry {
  std::string value;
  uint64_t revision = 0;
};

class KeyValue {
 public:
  ~KeyValue();
  KeyValue(const KeyValue&) = delete;
  KeyValue& operator=(const KeyValue&) = delete;

  // Keys: [-/_=.a-zA-Z0-9]+. Put returns the new revision.
  Result<uint64_t> Put(const std::string& key, std::string_view value);
  // Only when the key holds no value: kInvalidArgument "exists" otherwise.
  Result<uint64_t> Create(const std::string& key, std::string_view value);
  // nullopt when the key was never set or was deleted.
  Result<std::optional<KvEntry>> Get(const std::string& key);
  Status Delete(const std::string& key);
  // Every key that holds a value (deleted ones left out); empty when none.
  Result<std::vector<std::string>> Keys();
  // The replicas the bucket was made with (as the server holds it).
  Result<int> Replicas();

 private:
  friend class Connection;
  explicit KeyValue(kvStore* kv) : kv_(kv) {}
  kvStore* kv_;
};

class Connection {
 public:
  // kUnavailable when no listed server accepts a connection now (the caller retries).
  static Result<std::unique_ptr<Connection>> Connect(const ConnectOptions& options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool IsConnected() const;
  std::string ConnectedUrl() const;  // redacted; "" when not connected
  // Largest message the server takes (its max_payload).
  int64_t MaxPayload() const;
  // Waits until everything published so far reached the server.
  Status Flush(int64_t timeout_ns);

  // Creates the stream with `config`. An existing stream keeps its settings, except those
  // `overrides` names, which are changed to config's (and our subjects are added when it
  // lacks them); StreamState::notes says what differed and what was done. kInvalidArgument
  // when the server refuses the change (e.g. more replicas than servers).
  Result<StreamState> EnsureStream(const StreamConfig& config, const StreamOverrides& overrides = {});
  Result<StreamState> GetStream(const std::string& name);
  Status DeleteStream(const std::string& name);

  // Publishes one message and waits for the stream's ack. kPermissionDenied when the
  // server refused the subject to this user (a permissions violation).
  Result<PubAck> Publish(const std::string& subject, std::string_view data, const std::string& msg_id);
  // Publishes every message without waiting for acks in between (at most 4096 unacked;
  // past that a publish waits for room), then waits up to timeout_ns for all acks. One
  // result per message, in order; an unacked one is kTimeout (or kUnavailable). The
  // stream stores each at most once per msg id, so re-sending the failed ones is safe.
  std::vector<PublishResult> PublishBatch(const std::vector<OutMessage>& messages, int64_t timeout_ns);

  // Binds the durable consumer of config.stream, creating it first when absent (an
  // existing one keeps its config; a member that asks for a different filter subject gets
  // kInvalidArgument).
  Result<std::unique_ptr<PullConsumer>> BindPullConsumer(const ConsumerConfig& config);
  Status DeleteConsumer(const std::string& stream, const std::string& durable);
  // Reads the stream's messages with sequence first_seq..last_seq whose subject matches
  // `filter`, in order, through a short-lived ephemeral consumer that acks nothing (so no
  // durable's state changes), calling f(JsMessage&) for each; stops early when f returns
  // false. For a restarted consumer to see again, at once, what its durable delivered but
  // had not acked (instead of after the ack wait). Returns how many were read.
  Result<uint64_t> ReadRange(const std::string& stream, const std::string& filter, uint64_t first_seq,
                             uint64_t last_seq, const std::function<bool(JsMessage&)>& f);
  // Acks messages by their ack subjects (JsMessage::ack_subject), then flushes. For a
  // consumer that acks only once its state is saved.
  Status AckLater(const std::vector<std::string>& ack_subjects, int64_t timeout_ns);
  // The same for a DeferredAcks list: one buffer, no allocation per message.
  Status AckLater(const DeferredAcks& acks, int64_t timeout_ns);

  // Binds the bucket, creating it when absent.
  Result<std::unique_ptr<KeyValue>> EnsureKeyValue(const KvConfig& config);

 private:
  Connection() = default;
  // True when the server refused a publish to `subject` to this user.
  bool Refused(const std::string& subject) const;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;        // API calls, sync publish, consumers, KV
  jsCtx* js_async_ = nullptr;  // PublishBatch: its ack handler reports into batch_
  int64_t request_timeout_ns_ = 0;
  std::mutex batch_mu_;                        // one PublishBatch at a time
  std::unique_ptr<detail::AsyncBatch> batch_;  // what the async ack handler reports into
};

// The StatusCode a libnats status (and JetStream error code, 0 when none) stands for.
StatusCode MapNatsStatus(int nats_status, int js_error_code);

}  // namespace faultline::fleet::nats
