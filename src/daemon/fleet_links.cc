#include "daemon/fleet_links.h"

#include <charconv>

#include "core/json.h"
#include "daemon/log.h"
#include "fleet/correlate.h"
#include "policy/identity.h"
#include "store/store.h"

namespace faultline::daemon {
namespace {

constexpr const char* kSource = "fleet_link";

// "<node>#<row id>" -> the row id when the node is `node`; 0 otherwise. The last '#' splits,
// so a node name holding '#' still reads.
int64_t LinkedRow(const std::string& link, const std::string& node) {
  const size_t hash = link.rfind('#');
  if (hash == std::string::npos || link.compare(0, hash, node) != 0 || hash != node.size()) return 0;
  int64_t row = 0;
  const char* end = link.data() + link.size();
  auto [p, ec] = std::from_chars(link.data() + hash + 1, end, row);
  return ec == std::errc() && p == end && row > 0 ? row : 0;
}

std::string Subject(const std::string& site) {
  return fleet::Subject(fleet::NodePlace{site, "fleet", "fleet"}, fleet::RecordKind::kFleetDiagnosis);
}

}  // namespace

FleetLinks::FleetLinks(Store& store, FleetLinksOptions options, const Clock& clock, Logger* logger)
    : store_(store), options_(std::move(options)), clock_(clock), logger_(logger) {}

FleetLinks::~FleetLinks() = default;

std::string FleetLinks::DurableFor(const std::string& node) {
  std::string out = "faultline-agent-";
  for (unsigned char c : node) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    out += ok ? static_cast<char>(c) : '_';
  }
  return out;
}

Result<std::optional<Diagnosis>> FleetLinks::LoadDiagnosis(int64_t row_id) const {
  auto rows = store_.DiagnosesAfter(row_id - 1, 1);
  if (!rows.ok()) return rows.status();
  if (rows->rows.empty() || rows->rows.front().id != row_id) return std::optional<Diagnosis>();
  return std::optional<Diagnosis>(rows->rows.front().value);
}

Result<size_t> FleetLinks::Record(const fleet::FleetDiagnosis& f) {
  if (f.cause == "straggler") return size_t{0};  // the node's own diagnosis, not a shared cause
  std::vector<Cursor> cursors;
  for (const std::string& link : f.linked) {
    const int64_t row = LinkedRow(link, options_.node);
    if (row == 0) continue;
    auto d = LoadDiagnosis(row);
    if (!d.ok()) return d.status();
    if (!d->has_value()) continue;  // aged out of this store (or another store's row): nothing to stand down for
    const Json value = {
        {"fleet_id", f.id}, {"cause", f.cause}, {"component", f.component}, {"recorded_ns", clock_.NowNs()}};
    cursors.push_back({options_.node, kSource, policy::FaultKey(**d), value.dump()});
  }
  if (cursors.empty()) return size_t{0};
  if (Status s = store_.PutCursors(cursors); !s.ok()) return s;
  if (logger_) {
    logger_->Info("fleet: " + std::to_string(cursors.size()) + " diagnosis(es) of this node linked to " + f.cause +
                  " " + f.component + " (fleet diagnosis " + f.id + ")");
  }
  return cursors.size();
}

Result<size_t> FleetLinks::Poll(fleet::nats::Connection& conn, int64_t timeout_ns) {
  if (consumer_ == nullptr) {
    fleet::nats::ConsumerConfig c;
    c.stream = options_.stream;
    c.durable = DurableFor(options_.node);
    c.filter_subject = Subject(options_.site);
    auto bound = conn.BindPullConsumer(c);
    if (!bound.ok()) return bound.status();
    consumer_ = std::move(bound).value();
  }
  size_t stored = 0;
  for (int round = 0; round < 4; ++round) {  // bounded: the publisher's thread has its own work
    auto msgs = consumer_->Fetch(options_.fetch_batch, round == 0 ? timeout_ns : 0);
    if (!msgs.ok()) {
      consumer_.reset();
      return msgs.status();
    }
    if (msgs->empty()) break;
    for (fleet::nats::JsMessage& m : *msgs) {
      auto env = fleet::Decode(m.data());
      if (!env.ok() || !env->fleet) {
        (void)m.Term();  // not a fleet diagnosis this reader understands; never redelivered
        continue;
      }
      auto n = Record(*env->fleet);
      if (!n.ok()) return n.status();  // unacked: redelivered after the ack wait
      stored += *n;
      (void)m.Ack();
    }
  }
  return stored;
}

bool FleetLinks::MayBeShared(const Diagnosis& d) const { return !fleet::CorrelationFamily(d.fault_class).empty(); }

Result<std::optional<policy::FleetLink>> FleetLinks::LinkFor(const Diagnosis& d) const {
  auto raw = store_.GetCursor(options_.node, kSource, policy::FaultKey(d));
  if (!raw.ok()) return raw.status();
  if (!raw->has_value()) return std::optional<policy::FleetLink>();
  const Json j = Json::parse(**raw, nullptr, false);
  if (!j.is_object()) return Status(StatusCode::kCorrupt, "fleet link for " + policy::FaultKey(d) + " is not JSON");
  policy::FleetLink link;
  try {
    link.fleet_id = j.value("fleet_id", "");
    link.cause = j.value("cause", "");
    link.component = j.value("component", "");
    if (auto it = j.find("recorded_ns"); it != j.end()) link.recorded_ns = JsonInt<int64_t>(*it);
  } catch (const Json::exception&) {
    return Status(StatusCode::kCorrupt, "fleet link for " + policy::FaultKey(d) + " has ill-typed fields");
  }
  if (clock_.NowNs() - link.recorded_ns > options_.link_ttl_ns) return std::optional<policy::FleetLink>();
  return std::optional<policy::FleetLink>(std::move(link));
}

}  // namespace faultline::daemon
