#include "fleet/nats/consumer_loop.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace faultline::fleet::nats {

namespace {

constexpr size_t kChunkBytes = 512 << 10;  // under KV max_value_size and max_payload
constexpr const char* kManifestMagic = "faultline-fleet-snapshot";

// KV keys take [-/_=.a-zA-Z0-9]; '.' separates our own parts.
std::string KeyToken(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out.empty() ? "_" : out;
}

// h: the hash of what came before s (so bytes written in pieces hash as one).
uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

// Cuts bytes written in pieces into kChunkBytes values under prefix<i>, putting each as
// it fills; keeps the size and hash of the whole. After a failed put it only counts.
struct ChunkWriter {
  KeyValue* kv = nullptr;
  std::string prefix;
  std::string chunk;
  size_t chunks = 0;
  size_t size = 0;
  uint64_t hash = Fnv1a({});
  Status failed = Status::Ok();

  void Write(std::string_view piece) {
    size += piece.size();
    hash = Fnv1a(piece, hash);
    while (!piece.empty()) {
      const size_t take = std::min(kChunkBytes - chunk.size(), piece.size());
      chunk.append(piece.substr(0, take));
      piece.remove_prefix(take);
      if (chunk.size() == kChunkBytes) Flush();
    }
  }

  void Flush() {
    if (failed.ok()) {
      auto put = kv->Put(prefix + std::to_string(chunks), chunk);
      if (!put.ok()) failed = put.status();
    }
    ++chunks;
    chunk.clear();
  }
};

using Steady = std::chrono::steady_clock;

double Seconds(Steady::time_point from, Steady::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string FleetDiagnosisSubject(const std::string& site) {
  return Subject(NodePlace{site, "fleet", "fleet"}, RecordKind::kFleetDiagnosis);
}

std::string FleetDiagnosisMsgId(const FleetDiagnosis& d) {
  // The content too: a diagnosis that grows (a third node on the PDU) within the same span
  // is news and must not be dropped as a duplicate of its first form.
  Envelope e;
  e.kind = RecordKind::kFleetDiagnosis;
  e.fleet = d;
  return d.id + "@" + std::to_string(d.first_ns) + "-" + std::to_string(d.last_ns) + "#" +
         Hex(Fnv1a(Encode(e))).substr(0, 8);
}

FleetLoop::FleetLoop(Connection& conn, FleetAnalyzer& analyzer, FleetLoopOptions options, const Clock& clock)
    : conn_(conn), analyzer_(analyzer), options_(std::move(options)), clock_(clock) {}

std::string FleetLoop::snapshot_key() const {
  return "snap." + KeyToken(options_.consumer.durable) + "." + KeyToken(options_.instance);
}

Status FleetLoop::EnsureStream() {
  if (!options_.ensure_stream) return Status::Ok();
  auto st = conn_.EnsureStream(options_.stream, options_.stream_overrides);
  if (!st.ok()) return st.status();
  for (const std::string& n : st->notes) notes_.push_back("stream " + options_.stream.name + ": " + n);
  return Status::Ok();
}

Status FleetLoop::BindBucket() {
  KvConfig kc;
  kc.bucket = options_.kv_bucket;
  kc.replicas = options_.kv_replicas;
  auto kv = conn_.EnsureKeyValue(kc);
  if (!kv.ok()) return kv.status();
  kv_ = std::move(kv).value();
  // An existing bucket is never changed; say when it is not what was asked.
  if (auto replicas = kv_->Replicas(); replicas.ok() && *replicas != options_.kv_replicas) {
    notes_.push_back("kv bucket " + options_.kv_bucket + ": has " + std::to_string(*replicas) + " replicas, " +
                     std::to_string(options_.kv_replicas) + " asked: kept " + std::to_string(*replicas));
  }
  auto snap = LoadSnapshot();
  if (!snap.ok()) return snap.status();
  if (!snap->has_value()) return Status::Ok();
  if (analyzer_.Restore(**snap).ok()) {
    stats_.restored = true;
  } else {
    ++stats_.snapshot_errors;  // another version's, or damaged: start empty, rebuild from redeliveries
    stats_.newest_sent_ns = 0;
  }
  return Status::Ok();
}

Status FleetLoop::Start() {
  if (Status s = EnsureStream(); !s.ok()) return s;
  auto consumer = conn_.BindPullConsumer(options_.consumer);
  if (!consumer.ok()) return consumer.status();
  consumer_ = std::move(consumer).value();
  // Deferred acks count against the durable's max_ack_pending (as the server holds it, for
  // an existing durable perhaps made with another value): checkpoint before half of it is
  // used, so a fetched batch always finds room.
  max_deferred_acks_ = std::max<size_t>(1, options_.max_deferred_acks);
  if (const int64_t server_max = consumer_->config().max_ack_pending; server_max > 0) {
    max_deferred_acks_ = std::min(max_deferred_acks_, std::max<size_t>(1, static_cast<size_t>(server_max) / 2));
  }
  if (!options_.kv_bucket.empty()) {
    if (Status s = BindBucket(); !s.ok()) return s;
  }
  if (options_.warn) {
    for (const std::string& n : notes_) options_.warn(n);
  }
  // Best effort: what is not read again now still comes back after the ack wait.
  if (Status s = ReplayUnacked(); !s.ok() && options_.warn) {
    options_.warn("could not read the unacked messages again (" + s.ToString() +
                  "); they come back after the ack wait");
  }
  last_evaluate_mono_ = last_snapshot_mono_ = clock_.MonotonicNs();
  return Status::Ok();
}

Status FleetLoop::ReplayUnacked() {
  if (options_.max_replay == 0) return Status::Ok();
  auto info = consumer_->GetInfo();
  if (!info.ok()) return info.status();
  const uint64_t last = info->delivered_stream_seq;
  if (last <= info->ack_floor_stream_seq) return Status::Ok();
  const uint64_t first =
      std::max(info->ack_floor_stream_seq + 1, last >= options_.max_replay ? last - options_.max_replay + 1 : 1);
  auto read =
      conn_.ReadRange(options_.consumer.stream, options_.consumer.filter_subject, first, last, [this](JsMessage& m) {
        if (Take(m, false) == Taken::kIngested) ++stats_.replayed;
        return true;
      });
  return read.ok() ? Status::Ok() : read.status();
}

Result<std::vector<FleetDiagnosis>> FleetLoop::Step() {
  if (consumer_ == nullptr) return Status(StatusCode::kInvalidArgument, "fleet loop: Start() first");
  const auto f0 = Steady::now();
  auto batch = consumer_->Fetch(options_.fetch_batch, options_.fetch_timeout_ns);
  stats_.fetch_s += Seconds(f0, Steady::now());
  if (!batch.ok()) {
    ++stats_.fetch_errors;
    return batch.status();
  }
  for (JsMessage& m : *batch) Handle(m);
  std::vector<FleetDiagnosis> out;
  const int64_t now = clock_.MonotonicNs();
  if (now - last_evaluate_mono_ >= options_.evaluate_interval_ns) {
    auto d = EvaluateNow();
    if (!d.ok()) return d.status();
    out = std::move(d).value();
  }
  if (kv_ &&
      (now - last_snapshot_mono_ >= options_.snapshot_interval_ns || deferred_acks_.size() >= max_deferred_acks_)) {
    // A failed checkpoint keeps its acks for the next one: nothing is acked unsaved.
    if (Status s = Checkpoint(); !s.ok()) ++stats_.snapshot_errors;
  }
  return out;
}

bool FromItsSubject(std::string_view subject, const Envelope& e) {
  if (Subject(e.place, e.kind) != subject) return false;
  const auto same = [&](const std::string& node) { return node.empty() || node == e.place.node; };
  for (const Observation& o : e.observations) {
    if (!same(o.node)) return false;
  }
  return !e.action || same(e.action->node);
}

void FleetLoop::NoteForged(const JsMessage& m) {
  ++stats_.forged;
  // Warned about first, then every 1000th: a misconfigured agent must not flood the log.
  if (!options_.warn || (stats_.forged > 10 && stats_.forged % 1000 != 0)) return;
  options_.warn("refused a message on " + std::string(m.subject()) + " that speaks for " +
                Subject(scratch_.place, scratch_.kind) + " (msg id " + scratch_.msg_id + "; " +
                std::to_string(stats_.forged) + " refused so far)");
}

FleetLoop::Taken FleetLoop::Take(const JsMessage& m, bool count) {
  if (EndsWith(m.subject(), ".fleet")) return Taken::kFleet;
  const auto t0 = Steady::now();
  // Into the envelope the previous message was decoded into: its storage is reused.
  const Status decoded = DecodeInto(m.data(), scratch_, options_.limits);
  const auto t1 = Steady::now();
  stats_.decode_s += Seconds(t0, t1);
  if (!decoded.ok()) {
    // The analyzer counts it too (its refused); the decode fails again, as cheaply.
    if (count) (void)analyzer_.IngestMessage(m.data(), options_.limits);
    return decoded.code() == StatusCode::kInvalidArgument ? Taken::kOversized : Taken::kMalformed;
  }
  // The subject is what the server's permissions bind to a user (deploy/nats): the
  // envelope inside may not name someone else.
  if (!FromItsSubject(m.subject(), scratch_)) {
    if (count) NoteForged(m);
    return Taken::kForged;
  }
  analyzer_.Ingest(scratch_);
  stats_.ingest_s += Seconds(t1, Steady::now());
  stats_.newest_sent_ns = std::max(stats_.newest_sent_ns, scratch_.sent_ns);
  if (count) {
    ++stats_.ingested;
    stats_.observations += scratch_.observations.size();
  }
  return Taken::kIngested;
}

void FleetLoop::Handle(JsMessage& m) {
  ++stats_.messages;
  if (m.delivery_count() > 1) ++stats_.redelivered;
  const Taken taken = Take(m, true);
  switch (taken) {
    case Taken::kFleet:
      ++stats_.skipped_fleet;
      (void)m.Ack();
      return;
    case Taken::kForged:
      (void)m.Ack();  // dropped: redelivering it would only refuse it again
      return;
    case Taken::kMalformed:
    case Taken::kOversized:
      ++(taken == Taken::kOversized ? stats_.oversized : stats_.malformed);
      (void)m.Term();  // it can never succeed: no redelivery
      return;
    case Taken::kIngested:
      break;
  }
  if (kv_) {
    deferred_acks_.Add(m.ack_subject());
  } else {
    const auto t0 = Steady::now();
    (void)m.Ack();
    stats_.ack_s += Seconds(t0, Steady::now());
  }
}

int64_t FleetLoop::EvaluationTimeNs() const {
  const int64_t wall = clock_.NowNs();
  return stats_.newest_sent_ns > 0 ? std::min(stats_.newest_sent_ns, wall) : wall;
}

Result<bool> FleetLoop::Drained() {
  if (consumer_ == nullptr) return Status(StatusCode::kInvalidArgument, "fleet loop: Start() first");
  auto info = consumer_->GetInfo();
  if (!info.ok()) return info.status();
  return info->pending == 0;
}

Result<std::vector<FleetDiagnosis>> FleetLoop::EvaluateNow() {
  const auto t0 = Steady::now();
  last_evaluate_mono_ = clock_.MonotonicNs();
  ++stats_.evaluations;
  std::vector<FleetDiagnosis> fresh = analyzer_.Evaluate(EvaluationTimeNs());
  stats_.diagnoses += fresh.size();
  if (options_.publish_diagnoses) {
    outbox_.insert(outbox_.end(), fresh.begin(), fresh.end());
    (void)FlushOutbox();  // what fails stays in the outbox; Checkpoint waits for it
  }
  stats_.evaluate_s += Seconds(t0, Steady::now());
  return fresh;
}

Status FleetLoop::Publish(const FleetDiagnosis& d) {
  Envelope e;
  e.kind = RecordKind::kFleetDiagnosis;
  e.place = NodePlace{options_.site, "fleet", "fleet"};
  e.msg_id = FleetDiagnosisMsgId(d);
  e.sent_ns = clock_.NowNs();
  e.fleet = d;
  auto ack = conn_.Publish(Subject(e.place, e.kind), Encode(e), e.msg_id);
  if (!ack.ok()) return ack.status();
  ++stats_.published;
  if (ack->duplicate) ++stats_.published_duplicate;
  return Status::Ok();
}

Status FleetLoop::FlushOutbox() {
  size_t done = 0;
  Status failed;
  for (; done < outbox_.size(); ++done) {
    failed = Publish(outbox_[done]);
    if (!failed.ok()) break;
  }
  outbox_.erase(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(done));
  return failed;
}

Status FleetLoop::Checkpoint() {
  last_snapshot_mono_ = clock_.MonotonicNs();
  // A diagnosis is on the stream before the snapshot that says it was returned.
  if (Status s = FlushOutbox(); !s.ok()) return s;
  if (!kv_) return Status::Ok();
  const auto t0 = Steady::now();
  Status saved = SaveSnapshot();
  const auto t1 = Steady::now();
  stats_.snapshot_s += Seconds(t0, t1);
  if (!saved.ok()) return saved;
  ++stats_.snapshots;
  Status acked = conn_.AckLater(deferred_acks_, options_.fetch_timeout_ns + 1'000'000'000);
  stats_.ack_s += Seconds(t1, Steady::now());
  // Acks lost to a disconnect only mean redeliveries, which the snapshot's msg ids drop.
  deferred_acks_.clear();
  return acked;
}

// The analyzer's snapshot, written a chunk at a time as it is made: only one chunk of it
// is ever held (issue 25). Chunk i is bytes [i*kChunkBytes, (i+1)*kChunkBytes) of the
// whole, as before.
Status FleetLoop::SaveSnapshot() {
  const std::string key = snapshot_key();
  const uint64_t gen = generation_ + 1;
  ChunkWriter w{.kv = kv_.get(), .prefix = key + ".g" + std::to_string(gen) + "."};
  w.chunk.reserve(kChunkBytes);
  analyzer_.WriteSnapshot([&w](std::string_view piece) { w.Write(piece); });
  if (!w.chunk.empty() || w.chunks == 0) w.Flush();  // an empty snapshot is one empty chunk
  if (!w.failed.ok()) return w.failed;
  const size_t chunks = w.chunks;
  std::ostringstream manifest;
  // The data clock last: a reader of an older manifest without it starts from the wall clock.
  manifest << kManifestMagic << " 1 " << gen << " " << chunks << " " << w.size << " " << Hex(w.hash) << " "
           << stats_.newest_sent_ns;
  auto put = kv_->Put(key, manifest.str());
  if (!put.ok()) return put.status();
  // The previous generation is no longer named: drop it (best effort; a leftover only
  // costs space).
  if (generation_ > 0) {
    for (size_t i = 0; i < generation_chunks_; ++i) {
      (void)kv_->Delete(key + ".g" + std::to_string(generation_) + "." + std::to_string(i));
    }
  }
  generation_ = gen;
  generation_chunks_ = chunks;
  return Status::Ok();
}

Result<std::optional<std::string>> FleetLoop::LoadSnapshot() {
  const std::string key = snapshot_key();
  auto manifest = kv_->Get(key);
  if (!manifest.ok()) return manifest.status();
  if (!manifest->has_value()) return std::optional<std::string>();
  std::istringstream in((*manifest)->value);
  std::string magic, hash;
  int version = 0;
  uint64_t gen = 0;
  size_t chunks = 0, size = 0;
  in >> magic >> version >> gen >> chunks >> size >> hash;
  const bool header_read = static_cast<bool>(in);
  int64_t data_ns = 0;
  if (header_read && !(in >> data_ns)) data_ns = 0;  // a manifest written before the data clock was kept
  const bool sane = header_read && magic == kManifestMagic && version == 1 && chunks >= 1 &&
                    chunks <= (size / kChunkBytes) + 1 && size <= (size_t{1} << 34);
  if (!sane) {
    ++stats_.snapshot_errors;
    return std::optional<std::string>();
  }
  std::string bytes;
  bytes.reserve(size);
  for (size_t i = 0; i < chunks; ++i) {
    auto part = kv_->Get(key + ".g" + std::to_string(gen) + "." + std::to_string(i));
    if (!part.ok()) return part.status();
    if (!part->has_value()) {
      ++stats_.snapshot_errors;
      return std::optional<std::string>();
    }
    bytes += (*part)->value;
  }
  if (bytes.size() != size || Hex(Fnv1a(bytes)) != hash) {
    ++stats_.snapshot_errors;
    return std::optional<std::string>();
  }
  generation_ = gen;
  generation_chunks_ = chunks;
  stats_.newest_sent_ns = std::max<int64_t>(0, data_ns);
  return std::optional<std::string>(std::move(bytes));
}

}  // namespace faultline::fleet::nats
