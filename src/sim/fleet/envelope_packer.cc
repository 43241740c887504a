#include "sim/fleet/envelope_packer.h"

#include <utility>

namespace faultline::sim {

using fleet::Envelope;
using fleet::RecordKind;

size_t HeaderBytesBound(const Envelope& e) {
  // {"kind":"obs","msg_id":"","n":,"node":"","rack":"","row_id":,"sent_ns":,"site":"","v":1}
  // is 88 bytes; four integers of at most 20 characters; a JSON escape is at most six
  // bytes for one; the newline.
  constexpr size_t kFixed = 88 + 4 * 20 + 1;
  return kFixed + 6 * (e.place.site.size() + e.place.rack.size() + e.place.node.size() + e.msg_id.size() + 48);
}

namespace {

size_t LinesBytes(const Envelope& e) {
  size_t n = 0;
  for (size_t i = 0; i < e.observations.size(); ++i) {
    n += fleet::EncodedSize(e.observations[i], i < e.observation_ids.size() ? e.observation_ids[i] : 0);
  }
  return n;
}

// Row ids carried, first and last; false when the envelope has none for some observation.
bool RowSpan(const Envelope& e, int64_t& first, int64_t& last) {
  if (e.observations.empty() || e.observation_ids.size() != e.observations.size()) return false;
  for (size_t i = 1; i < e.observation_ids.size(); ++i) {
    if (e.observation_ids[i] != e.observation_ids[i - 1] + 1) return false;
  }
  first = e.observation_ids.front();
  last = e.observation_ids.back();
  return first > 0;
}

}  // namespace

EnvelopePacker::EnvelopePacker(EnvelopePackOptions options) : options_(options) {}

void EnvelopePacker::Send(Held& h, std::vector<Envelope>& out) {
  held_observations_ -= h.envelope.observations.size();
  const std::vector<int64_t>& ids = h.envelope.observation_ids;
  h.envelope.msg_id = fleet::MakeMsgId(h.envelope.place.node, RecordKind::kObservations, ids.front(), ids.back());
  out.push_back(std::move(h.envelope));
}

void EnvelopePacker::Add(Envelope e, std::vector<Envelope>& out) {
  int64_t first = 0, last = 0;
  const bool packable = options_.max_bytes > 0 && e.kind == RecordKind::kObservations && RowSpan(e, first, last);
  auto it = held_.find(e.place.node);
  if (!packable) {
    // A record (or a batch without consecutive row ids) goes after the node's held rows.
    if (it != held_.end()) {
      Send(it->second, out);
      held_.erase(it);
    }
    out.push_back(std::move(e));
    return;
  }
  const size_t lines = LinesBytes(e);
  if (it != held_.end()) {
    Held& h = it->second;
    const bool joins = h.envelope.place == e.place && h.envelope.observation_ids.back() + 1 == first &&
                       h.bytes + lines <= options_.max_bytes &&
                       h.envelope.observations.size() + e.observations.size() <= options_.max_observations &&
                       e.sent_ns - h.first_sent_ns <= options_.max_hold_ns;
    if (joins) {
      h.bytes += lines;
      h.envelope.sent_ns = std::max(h.envelope.sent_ns, e.sent_ns);
      held_observations_ += e.observations.size();
      for (auto& o : e.observations) h.envelope.observations.push_back(std::move(o));
      h.envelope.observation_ids.insert(h.envelope.observation_ids.end(), e.observation_ids.begin(),
                                        e.observation_ids.end());
      return;
    }
    Send(h, out);
    held_.erase(it);
  }
  Held h;
  h.first_sent_ns = e.sent_ns;
  // The header's bound is taken with the longest msg id this node's packed envelope can get.
  h.bytes = HeaderBytesBound(e) + lines;
  held_observations_ += e.observations.size();
  h.envelope = std::move(e);
  if (h.bytes >= options_.max_bytes) {  // alone at (or over) the bound: nothing can join it
    Send(h, out);
    return;
  }
  held_.emplace(h.envelope.place.node, std::move(h));
}

void EnvelopePacker::FlushDue(int64_t now_ns, std::vector<Envelope>& out) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (now_ns - it->second.first_sent_ns >= options_.max_hold_ns) {
      Send(it->second, out);
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

void EnvelopePacker::Flush(std::vector<Envelope>& out) {
  for (auto& [node, h] : held_) Send(h, out);
  held_.clear();
}

}  // namespace faultline::sim
