// Building blocks shared by the GPU-layer (layer 2) detectors: counter tracking with
// reset handling, and a book of findings keyed by component and rule.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"

namespace faultline {

// One cumulative counter (ECC, retired pages, remapped rows). A value below the
// previous one means the counter was reset (driver reload, GPU reset, reboot): it
// becomes the new baseline and the step's delta is 0, never negative.
class GpuCounterSeries {
 public:
  struct Step {
    double delta = 0;    // increase since the previous sample (0 on first or reset)
    bool first = false;  // no previous sample
    bool reset = false;  // went backwards
  };
  Step Update(double value);
  bool seen() const { return last_.has_value(); }
  double last() const { return last_.value_or(0); }

 private:
  std::optional<double> last_;
};

// True for observations a GPU-layer detector should read: layer gpu, a GPU component
// and a value.
bool IsGpuSample(const Observation& obs);

// Findings keyed by (component id, rule). Upsert opens or extends one, appending the
// observation as evidence (at most max_evidence: the first ones are kept and the last
// slot always holds the most recent); Touch only moves last_ns.
class GpuFindingBook {
 public:
  explicit GpuFindingBook(size_t max_evidence) : max_evidence_(max_evidence < 2 ? 2 : max_evidence) {}

  // Returns the finding so the caller can set class, action, summary and attrs. A new
  // finding has count 1; each further Upsert adds 1 (one supporting event).
  Finding& Upsert(std::string_view rule, const Observation& obs);
  void Touch(std::string_view rule, const Observation& obs);
  Finding* Find(const std::string& component_id, std::string_view rule);
  bool Has(const std::string& component_id, std::string_view rule) const;
  std::vector<Finding> All() const;

 private:
  using Key = std::pair<std::string, std::string>;
  size_t max_evidence_;
  std::map<Key, Finding> findings_;
};

// "12.5" / "3" for attrs and summaries.
std::string GpuFormatValue(double v);
// Attribute lookup with a default.
std::string_view GpuAttrOr(const Observation& obs, const std::string& key, std::string_view fallback);

}  // namespace faultline
