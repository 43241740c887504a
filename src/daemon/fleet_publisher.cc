#include "daemon/fleet_publisher.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>

#include "daemon/fleet_links.h"
#include "daemon/log.h"
#include "store/store.h"

namespace faultline::daemon {

namespace {

constexpr const char* kCursorSource = "fleet";
constexpr const char* kObsCursor = "obs_after_id";
constexpr const char* kFindingCursor = "finding_after_id";
constexpr const char* kDiagnosisCursor = "diagnosis_after_id";
constexpr const char* kActionCursor = "action_after_id";
// Room left in a message for its headers (Nats-Msg-Id) and protocol overhead.
constexpr size_t kHeaderRoom = 1024;

void Cut(std::string& s, size_t max) {
  if (s.size() > max) s.resize(max);
}

// The wire refuses any string over max_field_bytes: cut them (the store keeps the whole
// row; the fleet needs the facts, not a 1 MiB raw blob).
void CutFields(Observation& o, size_t max) {
  Cut(o.text, max);
  Cut(o.raw, max);
  for (auto& [k, v] : o.attrs) Cut(v, max);
}
void CutEvidence(std::vector<Evidence>& ev, size_t max) {
  for (auto& e : ev) Cut(e.text, max);
}
void CutFields(Finding& f, size_t max) {
  Cut(f.summary, max);
  CutEvidence(f.evidence, max);
  for (auto& [k, v] : f.attrs) Cut(v, max);
}
void CutFields(Diagnosis& d, size_t max) {
  Cut(d.summary, max);
  CutEvidence(d.evidence, max);
  for (auto& r : d.ruled_out) Cut(r.reason, max);
}
void CutFields(ActionRecord& a, size_t max) {
  Cut(a.outcome, max);
  Cut(a.reason, max);
  for (auto& [k, v] : a.attrs) Cut(v, max);
}

constexpr const char* kEpochCursor = "epoch";

// A fresh store epoch: 16 hex digits, random so a store recreated from nothing (whose row
// ids start again at 1) never repeats an earlier store's message ids.
std::string NewEpoch() {
  std::random_device rd;
  const uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

struct FleetPublisher::Pending {
  std::optional<fleet::nats::OutMessage> message;  // nullopt: a row stepped past
  int64_t cursor = 0;                              // the cursor once this one is acked
  size_t observations = 0;
};

FleetPublisherOptions FleetPublisherOptionsFor(const FleetSection& s, const std::string& node) {
  FleetPublisherOptions o;
  o.connect.urls = fleet::nats::SplitUrls(s.urls);
  o.connect.name = "faultline-agent " + node;
  o.connect.credentials_file = s.credentials_file;
  o.connect.ca_file = s.ca_file;
  // Replies under a prefix of this node's own: a server that lets each agent subscribe only
  // to its own (deploy/nats) keeps one agent from reading another's acks and deliveries.
  o.connect.inbox_prefix = "_INBOX." + fleet::SubjectToken(node);
  o.site = s.site;
  o.rack = s.rack;
  o.node = node;
  o.interval_ns = s.interval_ns;
  o.max_backoff_ns = std::max(s.max_backoff_ns, s.interval_ns);
  return o;
}

FleetPublisher::FleetPublisher(Store& store, FleetPublisherOptions options, const Clock& clock, Logger* logger)
    : store_(store), options_(std::move(options)), clock_(clock), logger_(logger) {
  options_.max_observations_per_envelope =
      std::clamp<size_t>(options_.max_observations_per_envelope, 1, options_.limits.max_observations);
  options_.max_rows_per_round = std::max<size_t>(options_.max_rows_per_round, 1);
}

FleetPublisher::~FleetPublisher() { Stop(); }

Status FleetPublisher::EnsureConnected() {
  if (conn_ == nullptr) {
    auto c = fleet::nats::Connection::Connect(options_.connect);
    if (!c.ok()) return c.status();
    conn_ = std::move(c).value();
    if (logger_) logger_->Info("fleet: connected to " + conn_->ConnectedUrl());
  }
  // libnats reconnects by itself; publishing meanwhile would only fill its buffer.
  if (!conn_->IsConnected()) return Status(StatusCode::kUnavailable, "fleet: NATS connection is reconnecting");
  return Status::Ok();
}

Result<int64_t> FleetPublisher::StartAt(const char* key, int64_t max_id) {
  auto cursor = Cursor(key);
  if (!cursor.ok() || *cursor <= max_id) return cursor;
  // Above the table's highest id: retention emptied the table and its ids started again
  // from 1. Start over, or every new row up to the old cursor would be skipped.
  if (logger_) {
    logger_->Warn(std::string("fleet: store ids restarted below cursor ") + key + "=" + std::to_string(*cursor) +
                  " (table emptied by retention); publishing from its first row");
  }
  // Reused row ids need new message ids, or the server's duplicate window and the
  // analyzer's memory would drop the new rows as repeats.
  unsent_.clear();  // of the old epoch: what was not acked is read again under the new one
  const std::string epoch = NewEpoch();
  if (Status s = store_.PutCursors(
          {{options_.node, kCursorSource, key, "0"}, {options_.node, kCursorSource, kEpochCursor, epoch}});
      !s.ok()) {
    return s;
  }
  epoch_ = epoch;
  return int64_t{0};
}

Status FleetPublisher::LoadEpoch() {
  if (!epoch_.empty()) return Status::Ok();
  auto v = store_.GetCursor(options_.node, kCursorSource, kEpochCursor);
  if (!v.ok()) return v.status();
  if (v->has_value() && !(*v)->empty()) {
    epoch_ = **v;
    return Status::Ok();
  }
  const std::string epoch = NewEpoch();
  if (Status s = store_.PutCursors({{options_.node, kCursorSource, kEpochCursor, epoch}}); !s.ok()) return s;
  epoch_ = epoch;
  return Status::Ok();
}

std::string FleetPublisher::MsgId(fleet::RecordKind kind, int64_t first, int64_t last) const {
  return fleet::MakeMsgId(options_.node, kind, first, last) + "@" + epoch_;
}

Result<int64_t> FleetPublisher::Cursor(const char* key) {
  auto v = store_.GetCursor(options_.node, kCursorSource, key);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return int64_t{0};
  try {
    return static_cast<int64_t>(std::stoll(**v));
  } catch (const std::exception&) {
    return Status(StatusCode::kCorrupt, std::string("fleet: cursor ") + key + " is not a row id: " + **v);
  }
}

// "" when it cannot fit in one message even after cutting its fields.
std::string FleetPublisher::EncodeWithin(fleet::Envelope& e) {
  const size_t max_payload = conn_ ? static_cast<size_t>(std::max<int64_t>(conn_->MaxPayload(), 0)) : 0;
  size_t limit = options_.limits.max_message_bytes;
  if (max_payload > 0) limit = std::min(limit, max_payload);
  limit = limit > kHeaderRoom ? limit - kHeaderRoom : limit;
  std::string bytes = fleet::Encode(e);
  return bytes.size() <= limit ? bytes : std::string();
}

Result<size_t> FleetPublisher::Send(std::vector<Pending>& pending, const char* cursor_key) {
  if (pending.empty()) return size_t{0};
  std::vector<fleet::nats::OutMessage> messages;
  for (auto& p : pending) {
    if (p.message) messages.push_back(std::move(*p.message));
  }
  auto results = conn_->PublishBatch(messages, options_.ack_timeout_ns);
  int64_t cursor = -1;
  size_t acked = 0;
  size_t next = 0;
  size_t first_unacked = pending.size();
  Status failed;
  FleetPublisherStats delta;
  for (size_t i = 0; i < pending.size(); ++i) {
    const Pending& p = pending[i];
    if (!p.message) {
      ++delta.skipped;
      cursor = p.cursor;
      continue;
    }
    const auto& r = results[next++];
    if (!r.status.ok()) {
      failed = r.status;
      first_unacked = i;
      break;
    }
    cursor = p.cursor;
    ++acked;
    ++delta.envelopes;
    delta.observations += p.observations;
    if (p.observations == 0) ++delta.records;
    if (r.ack.duplicate) ++delta.duplicates;
  }
  KeepUnacked(pending, messages, first_unacked, cursor_key);
  if (cursor >= 0) {
    Status saved = store_.PutCursors({{options_.node, kCursorSource, cursor_key, std::to_string(cursor)}});
    if (!saved.ok() && failed.ok()) failed = saved;  // acked but not remembered: sent again, deduplicated
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.envelopes += delta.envelopes;
    stats_.observations += delta.observations;
    stats_.records += delta.records;
    stats_.duplicates += delta.duplicates;
    stats_.skipped += delta.skipped;
  }
  if (!failed.ok()) return failed;
  return acked;
}

void FleetPublisher::KeepUnacked(std::vector<Pending>& pending, std::vector<fleet::nats::OutMessage>& messages,
                                 size_t first_unacked, const char* cursor_key) {
  if (first_unacked >= pending.size()) {
    unsent_.erase(cursor_key);
    return;
  }
  // The messages go back to their envelopes, to be sent again as they are (same bytes,
  // same msg id) before any newer row: the stream then drops whatever of them it already
  // stored, where envelopes cut afresh from the store would carry other ids.
  size_t next = 0;
  for (auto& p : pending) {
    if (p.message) p.message = std::move(messages[next++]);
  }
  unsent_[cursor_key].assign(std::make_move_iterator(pending.begin() + static_cast<std::ptrdiff_t>(first_unacked)),
                             std::make_move_iterator(pending.end()));
}

Result<size_t> FleetPublisher::SendUnacked(const char* cursor_key) {
  auto it = unsent_.find(cursor_key);
  if (it == unsent_.end()) return size_t{0};
  std::vector<Pending> again = std::move(it->second);
  unsent_.erase(it);
  return Send(again, cursor_key);
}

Result<size_t> FleetPublisher::PublishObservations() {
  auto resent = SendUnacked(kObsCursor);
  if (!resent.ok()) return resent.status();
  auto after = StartAt(kObsCursor, max_ids_.observations);
  if (!after.ok()) return after.status();
  auto rows = store_.ObservationsAfter(*after, options_.max_rows_per_round);
  if (!rows.ok()) return rows.status();
  if (rows->rows.size() + rows->bad_rows.size() >= options_.max_rows_per_round) behind_ = true;
  // Everything in id order: decodable rows, and the undecodable ones to step past.
  struct Item {
    int64_t id;
    const Row<Observation>* row;  // null: a bad row
  };
  std::vector<Item> items;
  for (const auto& r : rows->rows) items.push_back({r.id, &r});
  for (const auto& b : rows->bad_rows) items.push_back({b.id, nullptr});
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.id < b.id; });

  std::vector<Pending> pending;
  const int64_t now = clock_.NowNs();
  // Envelopes of consecutive rows of one node; an oversized one is halved until it fits.
  auto emit = [&](auto&& self, size_t begin, size_t end) -> void {
    if (begin >= end) return;
    fleet::Envelope e;
    e.kind = fleet::RecordKind::kObservations;
    e.place = {options_.site, options_.rack, items[begin].row->node};
    e.sent_ns = now;
    for (size_t i = begin; i < end; ++i) {
      e.observations.push_back(items[i].row->value);
      CutFields(e.observations.back(), options_.limits.max_field_bytes);
      e.observation_ids.push_back(items[i].id);
    }
    e.msg_id = MsgId(e.kind, items[begin].id, items[end - 1].id);
    std::string bytes = EncodeWithin(e);
    if (bytes.empty() && end - begin > 1) {
      const size_t mid = begin + (end - begin) / 2;
      self(self, begin, mid);
      self(self, mid, end);
      return;
    }
    Pending p;
    p.cursor = items[end - 1].id;
    if (!bytes.empty()) {
      p.message = fleet::nats::OutMessage{fleet::Subject(e.place, e.kind), std::move(bytes), e.msg_id};
      p.observations = end - begin;
    } else if (logger_) {
      logger_->Warn("fleet: observation row " + std::to_string(items[begin].id) + " does not fit a message; skipped");
    }
    pending.push_back(std::move(p));
  };
  size_t start = 0;
  for (size_t i = 0; i <= items.size(); ++i) {
    const bool boundary = i == items.size() || items[i].row == nullptr ||
                          (i > start && items[i].row->node != items[start].row->node) ||
                          i - start == options_.max_observations_per_envelope;
    if (!boundary) continue;
    emit(emit, start, i);
    if (i < items.size() && items[i].row == nullptr) {
      pending.push_back(Pending{std::nullopt, items[i].id, 0});  // undecodable: step past
      start = i + 1;
    } else {
      start = i;
    }
  }
  auto sent = Send(pending, kObsCursor);
  if (!sent.ok()) return sent.status();
  return *resent + *sent;
}

template <typename T>
Result<size_t> FleetPublisher::PublishRecords(fleet::RecordKind kind, const char* cursor_key) {
  const int64_t max_id = std::is_same_v<T, Finding>     ? max_ids_.findings
                         : std::is_same_v<T, Diagnosis> ? max_ids_.diagnoses
                                                        : max_ids_.actions;
  auto resent = SendUnacked(cursor_key);
  if (!resent.ok()) return resent.status();
  auto after = StartAt(cursor_key, max_id);
  if (!after.ok()) return after.status();
  Result<QueryResult<T>> rows = Status(StatusCode::kInternal, "");
  if constexpr (std::is_same_v<T, Finding>) {
    rows = store_.FindingsAfter(*after, options_.max_rows_per_round);
  } else if constexpr (std::is_same_v<T, Diagnosis>) {
    rows = store_.DiagnosesAfter(*after, options_.max_rows_per_round);
  } else {
    rows = store_.ActionsAfter(*after, options_.max_rows_per_round);
  }
  if (!rows.ok()) return rows.status();
  if (rows->rows.size() + rows->bad_rows.size() >= options_.max_rows_per_round) behind_ = true;
  std::vector<Pending> pending;
  for (const auto& b : rows->bad_rows) pending.push_back(Pending{std::nullopt, b.id, 0});
  const int64_t now = clock_.NowNs();
  for (const auto& r : rows->rows) {
    fleet::Envelope e;
    e.kind = kind;
    e.place = {options_.site, options_.rack, r.node};
    e.sent_ns = now;
    e.row_id = r.id;
    e.msg_id = MsgId(kind, r.id, r.id);
    T value = r.value;
    CutFields(value, options_.limits.max_field_bytes);
    if constexpr (std::is_same_v<T, Finding>) {
      e.finding = std::move(value);
    } else if constexpr (std::is_same_v<T, Diagnosis>) {
      e.diagnosis = std::move(value);
    } else {
      e.action = std::move(value);
    }
    Pending p;
    p.cursor = r.id;
    std::string bytes = EncodeWithin(e);
    if (!bytes.empty()) {
      p.message = fleet::nats::OutMessage{fleet::Subject(e.place, kind), std::move(bytes), e.msg_id};
    } else if (logger_) {
      logger_->Warn("fleet: " + std::string(fleet::ToString(kind)) + " row " + std::to_string(r.id) +
                    " does not fit a message; skipped");
    }
    pending.push_back(std::move(p));
  }
  std::sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.cursor < b.cursor; });
  auto sent = Send(pending, cursor_key);
  if (!sent.ok()) return sent.status();
  return *resent + *sent;
}

Result<size_t> FleetPublisher::PublishOnce() {
  behind_ = false;
  Status s = EnsureConnected();
  size_t total = 0;
  if (s.ok()) s = LoadEpoch();
  if (s.ok()) {
    auto ids = store_.GetMaxRowIds();
    if (ids.ok()) {
      max_ids_ = *ids;
    } else {
      s = ids.status();
    }
  }
  if (s.ok()) {
    // Observations first: a finding or diagnosis refers to them.
    for (auto step :
         {+[](FleetPublisher* p) { return p->PublishObservations(); },
          +[](FleetPublisher* p) { return p->PublishRecords<Finding>(fleet::RecordKind::kFinding, kFindingCursor); },
          +[](FleetPublisher* p) {
            return p->PublishRecords<Diagnosis>(fleet::RecordKind::kDiagnosis, kDiagnosisCursor);
          },
          +[](FleetPublisher* p) {
            return p->PublishRecords<ActionRecord>(fleet::RecordKind::kAction, kActionCursor);
          }}) {
      auto n = step(this);
      if (!n.ok()) {
        s = n.status();
        break;
      }
      total += *n;
    }
  }
  Note(s.ok(), s);
  if (!s.ok()) return s;
  return total;
}

void FleetPublisher::Note(bool ok, const Status& s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.rounds;
    if (!ok) ++stats_.failed_rounds;
    stats_.connected = conn_ != nullptr && conn_->IsConnected();
  }
  if (logger_ == nullptr) return;
  if (!ok && !failing_) logger_->Warn("fleet: " + s.ToString() + " (the store buffers; retrying)");
  if (ok && failing_) logger_->Info("fleet: publishing again; catching up from the store");
  failing_ = !ok;
}

void FleetPublisher::ReadVerdicts() {
  if (links_ == nullptr || conn_ == nullptr || !conn_->IsConnected()) return;
  auto n = links_->Poll(*conn_, 100'000'000);
  // Said when the story changes, not every round (no stream before `faultline fleet` first
  // runs is normal and lasts).
  const std::string error = n.ok() ? "" : n.status().ToString();
  if (error != verdicts_error_ && !error.empty() && logger_) {
    logger_->Warn("fleet: cannot read the fleet's verdicts yet: " + error);
  }
  verdicts_error_ = error;
}

void FleetPublisher::Loop() {
  int64_t backoff = 0;
  for (;;) {
    auto r = PublishOnce();
    if (r.ok()) ReadVerdicts();
    int64_t wait = options_.interval_ns;
    if (!r.ok()) {
      backoff = backoff == 0 ? options_.interval_ns : std::min(backoff * 2, options_.max_backoff_ns);
      wait = backoff;
    } else {
      backoff = 0;
      if (behind_) wait = 0;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, std::chrono::nanoseconds(wait), [this] { return stop_; })) return;
  }
}

void FleetPublisher::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void FleetPublisher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

FleetPublisherStats FleetPublisher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace faultline::daemon
