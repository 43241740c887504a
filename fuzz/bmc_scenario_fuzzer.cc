// libFuzzer target for the mock BMC's scenario parser (JSON and YAML) and player: any input
// must yield a Scenario or a clear error, and playing a parsed scenario must not crash.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "sim/mock_bmc/scenario.h"

namespace {

using nlohmann::json;

// Accepts every step over in-memory documents, so the player's own paths run.
class MemoryTarget : public faultline::sim::ScenarioTarget {
 public:
  faultline::Status Set(const std::string& resource, const std::string& pointer, const json& value) override {
    try {
      docs_[resource][json::json_pointer(pointer)] = value;
    } catch (const std::exception&) {
      return faultline::Status(faultline::StatusCode::kInvalidArgument, "pointer");
    }
    return faultline::Status::Ok();
  }
  faultline::Result<json> Get(const std::string& resource, const std::string& pointer) const override {
    auto it = docs_.find(resource);
    if (it == docs_.end()) return faultline::Status(faultline::StatusCode::kNotFound, "absent");
    try {
      return it->second.at(json::json_pointer(pointer));
    } catch (const std::exception&) {
      return faultline::Status(faultline::StatusCode::kNotFound, "absent");
    }
  }
  faultline::Status Append(const std::string&, const json& member) override {
    return member.is_object() ? faultline::Status::Ok()
                              : faultline::Status(faultline::StatusCode::kInvalidArgument, "member");
  }
  void Emit(const faultline::sim::BmcEvent&) override {}

 private:
  std::map<std::string, json> docs_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  faultline::sim::ScenarioLimits limits;
  limits.max_text_bytes = 1 << 16;
  limits.max_nodes = 1 << 14;
  auto scenario = faultline::sim::ParseScenario(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (!scenario.ok()) return 0;
  faultline::sim::ScenarioPlayer player(std::move(*scenario));
  MemoryTarget target;
  for (double t : {0.0, 1.0, 5.5, 30.0, 1e6}) (void)player.AdvanceTo(t, target);
  return 0;
}
