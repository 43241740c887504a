// Open/cleared findings keyed by (fault class, component), shared by the OOB detectors.
// Not thread-safe (owned by one detector).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace faultline {

// attrs[key] or "" / its numeric value.
std::string OobAttr(const Observation& obs, const std::string& key);
std::optional<double> OobAttrNum(const Observation& obs, const std::string& key);
// Identity of a part for detector state: the component id plus its chassis, so PSU1 of
// two chassis (or two same-named sensors) are two parts.
std::string OobPartKey(const ComponentRef& component);

class OobFindingBook {
 public:
  explicit OobFindingBook(size_t max_evidence) : max_evidence_(max_evidence) {}

  // Opens (or extends) the finding for `key`, raising severity/action if worse.
  void Raise(const std::string& key, const Observation& obs, const ComponentRef& component, FaultClass fault_class,
             Severity severity, Action action, double confidence, const std::string& summary);
  // Marks the open finding for `key` cleared at `obs` (no-op when none is open).
  void Clear(const std::string& key, const Observation& obs);
  bool IsOpen(const std::string& key) const;
  std::vector<Finding> All() const;

 private:
  size_t max_evidence_;
  std::map<std::string, Finding> findings_;
};

}  // namespace faultline
