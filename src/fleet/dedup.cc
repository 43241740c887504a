#include "fleet/dedup.h"

#include <algorithm>
#include <functional>
#include <string>

namespace faultline::fleet {

namespace {

// FNV-1a: stable across runs and builds (std::hash is not promised to be), so a restored
// snapshot recognises the same ids.
uint64_t HashId(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

bool MsgIdWindow::Insert(std::string_view id) {
  if (id.empty() || capacity_ == 0) return true;
  const uint64_t h = HashId(id);
  if (set_.count(h) != 0) return false;
  if (ring_.size() < capacity_) {
    ring_.push_back(h);
  } else {
    set_.erase(ring_[next_]);
    ring_[next_] = h;
    next_ = (next_ + 1) % capacity_;
  }
  set_.insert(h);
  return true;
}

Json MsgIdWindow::ToJson() const {
  // Oldest first, so a restore keeps the same eviction order.
  Json ids = Json::array();
  for (size_t i = 0; i < ring_.size(); ++i) ids.push_back(ring_[(next_ + i) % ring_.size()]);
  return ids;
}

bool MsgIdWindow::FromJson(const Json& j) {
  if (!j.is_array()) return false;
  ring_.clear();
  set_.clear();
  next_ = 0;
  for (const Json& v : j) {
    if (!v.is_number_unsigned()) return false;
    const uint64_t h = v.get<uint64_t>();
    if (set_.count(h) != 0) continue;
    if (ring_.size() < capacity_) {
      ring_.push_back(h);
    } else {
      set_.erase(ring_[next_]);
      ring_[next_] = h;
      next_ = (next_ + 1) % capacity_;
    }
    set_.insert(h);
  }
  return true;
}

bool RowRanges::Contains(int64_t id) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(id, INT64_MAX));
  if (it == ranges_.begin()) return false;
  --it;
  return id >= it->first && id <= it->second;
}

void RowRanges::Add(int64_t first, int64_t last) {
  if (last < first) std::swap(first, last);
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), std::make_pair(first, INT64_MIN));
  it = ranges_.insert(it, {first, last});
  // Merge with neighbours that overlap or touch.
  std::vector<std::pair<int64_t, int64_t>> merged;
  merged.reserve(ranges_.size());
  for (const auto& r : ranges_) {
    if (!merged.empty() && (merged.back().second == INT64_MAX || r.first <= merged.back().second + 1)) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  while (merged.size() > kMaxRanges) {
    merged[1].first = merged[0].first;
    merged.erase(merged.begin());
  }
  ranges_ = std::move(merged);
}

Json RowRanges::ToJson() const {
  Json out = Json::array();
  for (const auto& [a, b] : ranges_) out.push_back(Json::array({a, b}));
  return out;
}

bool RowRanges::FromJson(const Json& j) {
  if (!j.is_array()) return false;
  ranges_.clear();
  for (const Json& r : j) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer()) return false;
    Add(r[0].get<int64_t>(), r[1].get<int64_t>());
  }
  return true;
}

}  // namespace faultline::fleet
