#include "fleet/nats/consumer_loop.h"

#include <algorithm>
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

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
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

Status FleetLoop::Start() {
  if (options_.ensure_stream) {
    auto st = conn_.EnsureStream(options_.stream);
    if (!st.ok()) return st.status();
  }
  auto consumer = conn_.BindPullConsumer(options_.consumer);
  if (!consumer.ok()) return consumer.status();
  consumer_ = std::move(consumer).value();
  if (!options_.kv_bucket.empty()) {
    KvConfig kc;
    kc.bucket = options_.kv_bucket;
    kc.replicas = options_.kv_replicas;
    auto kv = conn_.EnsureKeyValue(kc);
    if (!kv.ok()) return kv.status();
    kv_ = std::move(kv).value();
    auto snap = LoadSnapshot();
    if (!snap.ok()) return snap.status();
    if (snap->has_value()) {
      Status restored = analyzer_.Restore(**snap);
      if (restored.ok()) {
        stats_.restored = true;
      } else {
        ++stats_.snapshot_errors;  // another version's, or damaged: start empty, rebuild from redeliveries
      }
    }
  }
  last_evaluate_mono_ = last_snapshot_mono_ = clock_.MonotonicNs();
  return Status::Ok();
}

Result<std::vector<FleetDiagnosis>> FleetLoop::Step() {
  if (consumer_ == nullptr) return Status(StatusCode::kInvalidArgument, "fleet loop: Start() first");
  auto batch = consumer_->Fetch(options_.fetch_batch, options_.fetch_timeout_ns);
  if (!batch.ok()) {
    ++stats_.fetch_errors;
    return batch.status();
  }
  for (JsMessage& m : *batch) {
    ++stats_.messages;
    if (m.delivery_count() > 1) ++stats_.redelivered;
    if (EndsWith(m.subject(), ".fleet")) {
      ++stats_.skipped_fleet;
      (void)m.Ack();
      continue;
    }
    Status s = analyzer_.IngestMessage(m.data(), options_.limits);
    if (!s.ok()) {
      // It can never succeed: no redelivery, count it and go on.
      ++(s.code() == StatusCode::kInvalidArgument ? stats_.oversized : stats_.malformed);
      (void)m.Term();
      continue;
    }
    ++stats_.ingested;
    if (kv_) {
      deferred_acks_.push_back(m.ack_subject());
    } else {
      (void)m.Ack();
    }
  }
  std::vector<FleetDiagnosis> out;
  const int64_t now = clock_.MonotonicNs();
  if (now - last_evaluate_mono_ >= options_.evaluate_interval_ns) {
    auto d = EvaluateNow();
    if (!d.ok()) return d.status();
    out = std::move(d).value();
  }
  if (kv_ && (now - last_snapshot_mono_ >= options_.snapshot_interval_ns ||
              deferred_acks_.size() >= options_.max_deferred_acks)) {
    // A failed checkpoint keeps its acks for the next one: nothing is acked unsaved.
    if (Status s = Checkpoint(); !s.ok()) ++stats_.snapshot_errors;
  }
  return out;
}

Result<std::vector<FleetDiagnosis>> FleetLoop::EvaluateNow() {
  last_evaluate_mono_ = clock_.MonotonicNs();
  ++stats_.evaluations;
  std::vector<FleetDiagnosis> fresh = analyzer_.Evaluate(clock_.NowNs());
  stats_.diagnoses += fresh.size();
  if (options_.publish_diagnoses) {
    outbox_.insert(outbox_.end(), fresh.begin(), fresh.end());
    (void)FlushOutbox();  // what fails stays in the outbox; Checkpoint waits for it
  }
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
  if (Status s = SaveSnapshot(analyzer_.Snapshot()); !s.ok()) return s;
  ++stats_.snapshots;
  Status acked = conn_.AckLater(deferred_acks_, options_.fetch_timeout_ns + 1'000'000'000);
  // Acks lost to a disconnect only mean redeliveries, which the snapshot's msg ids drop.
  deferred_acks_.clear();
  return acked;
}

Status FleetLoop::SaveSnapshot(const std::string& bytes) {
  const std::string key = snapshot_key();
  const uint64_t gen = generation_ + 1;
  const size_t chunks = std::max<size_t>(1, (bytes.size() + kChunkBytes - 1) / kChunkBytes);
  for (size_t i = 0; i < chunks; ++i) {
    const size_t off = i * kChunkBytes;
    const std::string_view part = std::string_view(bytes).substr(std::min(off, bytes.size()), kChunkBytes);
    auto put = kv_->Put(key + ".g" + std::to_string(gen) + "." + std::to_string(i), part);
    if (!put.ok()) return put.status();
  }
  std::ostringstream manifest;
  manifest << kManifestMagic << " 1 " << gen << " " << chunks << " " << bytes.size() << " " << Hex(Fnv1a(bytes));
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
  const bool sane = in && magic == kManifestMagic && version == 1 && chunks >= 1 &&
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
  return std::optional<std::string>(std::move(bytes));
}

}  // namespace faultline::fleet::nats
