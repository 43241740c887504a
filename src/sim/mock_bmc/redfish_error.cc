#include "sim/mock_bmc/redfish_error.h"

#include <nlohmann/json.hpp>

#include "sim/mock_bmc/resource_tree.h"

namespace faultline::sim {

std::string RedfishErrorBody(const std::string& key, const std::string& message) {
  const std::string id = "Base.1.8." + key;
  nlohmann::json info = {{"@odata.type", "#Message.v1_1_1.Message"},
                         {"MessageId", id},
                         {"Message", message},
                         {"Severity", "Critical"},
                         {"MessageSeverity", "Critical"},
                         {"Resolution", "None."}};
  nlohmann::json body = {{"error", {{"code", id}, {"message", message}, {"@Message.ExtendedInfo", {info}}}}};
  return DumpJson(body);
}

}  // namespace faultline::sim
