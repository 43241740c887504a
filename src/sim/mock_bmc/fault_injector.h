// Decides, per request, which injected faults fire (see Fault in mock_bmc.h). Latency
// from the global setting and from every matching kLatency fault adds up; the first
// other matching fault that fires is the request's action. Not thread-safe: the MockBmc
// serialises access.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/mock_bmc/mock_bmc.h"

namespace faultline::sim {

struct FaultPlan {
  std::chrono::milliseconds latency{0};
  std::optional<Fault> action;
};

class FaultInjector {
 public:
  void Add(const Fault& fault) { rules_.push_back({fault, 0, 0}); }
  void Clear() { rules_.clear(); }
  void SetLatency(std::chrono::milliseconds latency) { latency_ = latency; }
  FaultPlan Decide(std::string_view method, std::string_view path);

 private:
  struct Rule {
    Fault fault;
    uint64_t matches;
    uint64_t fired;
  };
  std::vector<Rule> rules_;
  std::chrono::milliseconds latency_{0};
};

// '*' matches any run of characters (including '/'); everything else matches itself.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace faultline::sim
